/* SPDX-License-Identifier: MIT */
/* [http] rate: a token bucket per client (http_rate.h: an IPv4 address or
 * an IPv6 network of [http] ipv6_prefix bits), in an open-addressing table
 * keyed with a per-process random seed. Idle buckets (refilled to full)
 * carry no information and are dropped when the table fills up; the table
 * grows up to MAX_SLOTS. When it is full of busy clients, the clients it
 * cannot track share one overflow bucket: a flood of new addresses is
 * limited together, never let through. */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "http_rate.h"
#include "core/random.h"

#define MIN_SLOTS 1024
#define MAX_SLOTS (1u << 17)
/* After a full table failed to make room, new clients go to the overflow
 * bucket for this long before the table is swept again (a sweep walks every
 * slot: not once per request of a flood). */
#define FULL_RETRY_MS 100

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
    unsigned v6_bits;    /* [http] ipv6_prefix */
    bucket overflow;     /* the clients a full table cannot track */
    uint64_t full_until; /* no sweep before this (ms), after a failed one */
};

bd_rate_table *bd_rate_new(void)
{
    bd_rate_table *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->slots = calloc(MIN_SLOTS, sizeof(*t->slots));
    if (!t->slots || br_random_bytes(&t->seed, sizeof(t->seed)) < 0) {
        free(t->slots);
        free(t);
        return NULL;
    }
    t->n_slots = MIN_SLOTS;
    t->v6_bits = BD_HTTP_DEFAULT_IPV6_PREFIX;
    return t;
}

void bd_rate_set_ipv6_prefix(bd_rate_table *t, unsigned bits)
{
    if (t && bits <= 128 && bits != t->v6_bits) {
        /* the keys change: start afresh (a reload, rarely) */
        memset(t->slots, 0, t->n_slots * sizeof(*t->slots));
        t->n_used = 0;
        t->v6_bits = bits;
    }
}

void bd_rate_free(bd_rate_table *t)
{
    if (!t)
        return;
    free(t->slots);
    free(t);
}

bool bd_http_client_key(const struct sockaddr *sa, unsigned v6_bits, uint8_t key[16])
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    if (sa->sa_family == AF_INET6) {
        const uint8_t *a = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
        memcpy(key, a, 16);
        if (!memcmp(a, mapped, 12))
            return true; /* an IPv4 client: its address */
        for (unsigned b = v6_bits < 128 ? v6_bits : 128; b < 128; b++)
            key[b / 8] &= (uint8_t) ~(0x80 >> (b % 8));
        return true;
    }
    if (sa->sa_family == AF_INET) {
        memcpy(key, mapped, 12);
        memcpy(key + 12, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return true;
    }
    return false;
}

/* 127.0.0.0/8 IPv4-mapped, or ::1, as a client key. */
static bool is_loopback_key(const uint8_t key[16])
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    static const uint8_t one[16] = {[15] = 1};
    return (!memcmp(key, mapped, 12) && key[12] == 127) || !memcmp(key, one, 16);
}

bool bd_http_limit_key(const struct sockaddr *sa, unsigned v6_bits, uint8_t key[16])
{
    /* ::1 as itself, not as its /v6_bits network (the unspecified one) */
    if (!bd_http_client_key(sa, sa->sa_family == AF_INET6 ? 128 : v6_bits, key))
        return false;
    if (is_loopback_key(key)) {
        static const uint8_t loopback[16] = {[10] = 0xFF, [11] = 0xFF, [12] = 127, [15] = 1};
        memcpy(key, loopback, 16);
        return true;
    }
    return bd_http_client_key(sa, v6_bits, key);
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
    if (now_ms < t->full_until)
        return false;
    bool ok = false;
    if (rebuild(t, t->n_slots, rate, now_ms) == 0) {
        ok = t->n_used + 1 <= t->n_slots / 2 ||
             (t->n_slots < MAX_SLOTS && rebuild(t, t->n_slots * 2, rate, now_ms) == 0) ||
             t->n_used + 1 <= t->n_slots / 4 * 3;
    }
    if (!ok)
        t->full_until = now_ms + FULL_RETRY_MS;
    return ok;
}

/* Take a token from b at now_ms: 0, or the milliseconds until one. */
static uint32_t take_from(bucket *b, uint32_t rate, uint64_t now_ms)
{
    double tokens = refilled(b, rate, now_ms);
    b->last_ms = now_ms;
    if (tokens >= 1.0) {
        b->tokens = tokens - 1.0;
        return 0;
    }
    b->tokens = tokens;
    return (uint32_t)((1.0 - tokens) * 1000.0 / rate) + 1;
}

uint32_t bd_rate_take(bd_rate_table *t, const struct sockaddr *sa, uint32_t rate, uint64_t now_ms)
{
    uint8_t key[16];
    if (!t || !sa || rate == 0 || !bd_http_limit_key(sa, t->v6_bits, key))
        return 0;
    size_t s = slot_of(t, key);
    while (t->slots[s].used && memcmp(t->slots[s].addr, key, 16) != 0)
        s = (s + 1) & (t->n_slots - 1);
    bucket *b = &t->slots[s];
    if (!b->used) {
        if (!make_room(t, rate, now_ms)) {
            /* untracked: the overflow bucket (see http_rate.h) */
            if (!t->overflow.used) {
                t->overflow.used = true;
                t->overflow.tokens = rate;
                t->overflow.last_ms = now_ms;
            }
            return take_from(&t->overflow, rate, now_ms);
        }
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
    return take_from(b, rate, now_ms);
}
