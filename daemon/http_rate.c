/* SPDX-License-Identifier: MIT */
/* [http] rate: a token bucket per client address (http_int.h), in an
 * open-addressing table keyed with a per-process random seed. Idle buckets
 * (refilled to full) carry no information and are dropped when the table
 * fills up; the table grows up to MAX_SLOTS. */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "http_int.h"

#define MIN_SLOTS 1024
#define MAX_SLOTS (1u << 17)

typedef struct bucket {
    uint8_t addr[16]; /* IPv6, or IPv4-mapped */
    bool used;
    double tokens;
    uint64_t last_ms;
} bucket;

struct bd_rate_table {
    bucket *slots;
    size_t n_slots, n_used;
    uint64_t seed;
};

bd_rate_table *bd_rate_new(void)
{
    bd_rate_table *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->slots = calloc(MIN_SLOTS, sizeof(*t->slots));
    if (!t->slots || getrandom(&t->seed, sizeof(t->seed), 0) != (ssize_t)sizeof(t->seed)) {
        free(t->slots);
        free(t);
        return NULL;
    }
    t->n_slots = MIN_SLOTS;
    return t;
}

void bd_rate_free(bd_rate_table *t)
{
    if (!t)
        return;
    free(t->slots);
    free(t);
}

size_t bd_rate_size(const bd_rate_table *t)
{
    return t->n_used;
}

/* The address as 16 bytes (IPv4 mapped); false for other families. */
static bool addr_key(const struct sockaddr *sa, uint8_t key[16])
{
    if (sa->sa_family == AF_INET6) {
        memcpy(key, ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr, 16);
        return true;
    }
    if (sa->sa_family == AF_INET) {
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
        memcpy(key, mapped, 12);
        memcpy(key + 12, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return true;
    }
    return false;
}

/* Every bit of x moves every bit of the result (splitmix64's finalizer). */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    x ^= x >> 27;
    x *= UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

static size_t slot_of(const bd_rate_table *t, const uint8_t key[16])
{
    uint64_t a, b;
    memcpy(&a, key, 8);
    memcpy(&b, key + 8, 8);
    return (size_t)mix64(mix64(a ^ t->seed) ^ b) & (t->n_slots - 1);
}

/* The bucket's tokens at now_ms. */
static double refilled(const bucket *b, uint32_t rate, uint64_t now_ms)
{
    double t = b->tokens + (double)(now_ms - b->last_ms) * rate / 1000.0;
    return t > rate ? rate : t;
}

/* Rebuild into n_slots slots, keeping the buckets not yet full again. */
static int rebuild(bd_rate_table *t, size_t n_slots, uint32_t rate, uint64_t now_ms)
{
    bucket *old = t->slots;
    size_t old_n = t->n_slots;
    t->slots = calloc(n_slots, sizeof(*t->slots));
    if (!t->slots) {
        t->slots = old;
        return -ENOMEM;
    }
    t->n_slots = n_slots;
    t->n_used = 0;
    for (size_t i = 0; i < old_n; i++) {
        if (!old[i].used || refilled(&old[i], rate, now_ms) >= rate)
            continue;
        size_t s = slot_of(t, old[i].addr);
        while (t->slots[s].used)
            s = (s + 1) & (t->n_slots - 1);
        t->slots[s] = old[i];
        t->n_used++;
    }
    free(old);
    return 0;
}

/* Room for one more bucket: drop idle ones, grow when that is not enough.
 * false when the table is at its largest and full of busy addresses. */
static bool make_room(bd_rate_table *t, uint32_t rate, uint64_t now_ms)
{
    if (t->n_used + 1 <= t->n_slots / 4 * 3)
        return true;
    if (rebuild(t, t->n_slots, rate, now_ms) < 0)
        return false;
    if (t->n_used + 1 <= t->n_slots / 2)
        return true;
    if (t->n_slots < MAX_SLOTS && rebuild(t, t->n_slots * 2, rate, now_ms) == 0)
        return true;
    return t->n_used + 1 <= t->n_slots / 4 * 3;
}

uint32_t bd_rate_take(bd_rate_table *t, const struct sockaddr *sa, uint32_t rate, uint64_t now_ms)
{
    uint8_t key[16];
    if (!t || !sa || rate == 0 || !addr_key(sa, key))
        return 0;
    size_t s = slot_of(t, key);
    while (t->slots[s].used && memcmp(t->slots[s].addr, key, 16) != 0)
        s = (s + 1) & (t->n_slots - 1);
    bucket *b = &t->slots[s];
    if (!b->used) {
        if (!make_room(t, rate, now_ms))
            return 0; /* untracked: see http_int.h */
        s = slot_of(t, key);
        while (t->slots[s].used)
            s = (s + 1) & (t->n_slots - 1);
        b = &t->slots[s];
        memcpy(b->addr, key, 16);
        b->used = true;
        b->tokens = rate;
        b->last_ms = now_ms;
        t->n_used++;
    }
    double tokens = refilled(b, rate, now_ms);
    b->last_ms = now_ms;
    if (tokens >= 1.0) {
        b->tokens = tokens - 1.0;
        return 0;
    }
    b->tokens = tokens;
    uint32_t wait = (uint32_t)((1.0 - tokens) * 1000.0 / rate) + 1;
    return wait;
}
