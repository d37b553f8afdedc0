/* SPDX-License-Identifier: MIT */
/* Similar passwords: the context, deduplication, hashing and wiping of the
 * variants that similar_rules.c makes (similar.h, docs/similar.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "br_assert.h"
#include "similar_int.h"

#define ARENA_SIZE ((size_t)(BR_SIMILAR_MAX + 1) * BR_SIMILAR_MAX_LEN)

br_similar *br_similar_new(unsigned flags, br_error *err)
{
    if (!(flags & (BR_SIMILAR_SHA1 | BR_SIMILAR_NT)) ||
        (flags & ~(BR_SIMILAR_SHA1 | BR_SIMILAR_NT))) {
        br_error_set(err, -EINVAL, "similar passwords: flags %#x ask for no known hash", flags);
        return NULL;
    }
    br_similar *s = calloc(1, sizeof(*s));
    if (!s) {
        br_error_set(err, -ENOMEM, "similar passwords: out of memory");
        return NULL;
    }
    s->flags = flags;
    if (flags & BR_SIMILAR_NT) {
        s->nt_hasher = br_nt_hasher_new(err);
        if (!s->nt_hasher) {
            br_similar_free(s);
            return NULL;
        }
    }
    /* Zero from the start, and wiped back to zero after every call. */
    s->arena = calloc(1, ARENA_SIZE);
    s->slots = calloc(SIM_SLOTS, sizeof(*s->slots));
    if (!s->arena || !s->slots) {
        br_similar_free(s);
        br_error_set(err, -ENOMEM, "similar passwords: out of memory");
        return NULL;
    }
    return s;
}

void br_similar_free(br_similar *s)
{
    if (!s)
        return;
    br_nt_hasher_free(s->nt_hasher);
    free(s->arena); /* wiped at the end of every call */
    free(s->slots);
    OPENSSL_cleanse(s, sizeof(*s));
    free(s);
}

/* FNV-1a: the table only needs the variants of one password spread. */
static uint32_t fnv1a(const uint8_t *v, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ v[i]) * 16777619u;
    return h;
}

/* Insert v; false if it was there already (or the table is full, which the
 * bound keeps from happening: SIM_SLOTS > 2 * (BR_SIMILAR_MAX + 1)). */
static bool table_insert(br_similar *s, const uint8_t *v, size_t len)
{
    uint32_t h = fnv1a(v, len);
    for (size_t i = 0, at = h; i < SIM_SLOTS; i++, at++) {
        struct sim_slot *sl = &s->slots[at & (SIM_SLOTS - 1)];
        if (sl->off == 0) {
            if (br_fails_assert(s->arena_used + len + 1 <= ARENA_SIZE))
                return false;
            /* Stored with its length first, so that equal bytes of another
             * length never compare equal. */
            uint8_t *dst = s->arena + s->arena_used;
            dst[0] = (uint8_t)len;
            memcpy(dst + 1, v, len);
            sl->off = (uint32_t)s->arena_used + 1;
            sl->hash = h;
            s->arena_used += len + 1;
            return true;
        }
        const uint8_t *old = s->arena + sl->off - 1;
        if (sl->hash == h && old[0] == len && memcmp(old + 1, v, len) == 0)
            return false;
    }
    return false;
}

static void hash_one(br_similar *s, const uint8_t *v, size_t len)
{
    uint8_t nt[BR_NT_LEN];
    if (s->flags & BR_SIMILAR_NT) {
        int rc = br_nt_hasher_digest(s->nt_hasher, v, len, nt);
        if (rc < 0) {
            s->rc = rc;
            s->done = true;
            return;
        }
        bool same = memcmp(nt, s->exact_nt, BR_NT_LEN) == 0;
        memcpy(s->nt[s->n], nt, BR_NT_LEN);
        OPENSSL_cleanse(nt, sizeof(nt));
        if (same)
            return; /* the password itself, as Windows reads it */
    }
    if ((s->flags & BR_SIMILAR_SHA1) && br_sha1(v, len, s->sha1[s->n]) < 0) {
        s->rc = -EIO;
        s->done = true;
        return;
    }
    s->n++;
}

void sim_emit(br_similar *s, const uint8_t *v, size_t len)
{
    if (s->done || len < BR_SIMILAR_MIN_LEN || len > BR_SIMILAR_MAX_LEN)
        return;
    if (!table_insert(s, v, len))
        return;
    if (s->fn) {
        if (s->fn(v, len, s->fn_ctx) != 0)
            s->done = true;
        s->n++;
    } else {
        hash_one(s, v, len);
    }
    if (s->n >= s->cap)
        s->done = true;
}

/* One password through the rules, then everything it left wiped. */
static int run(br_similar *s, const void *password, size_t len)
{
    const uint8_t *p = password;
    s->n = 0;
    s->rc = 0;
    s->done = s->cap == 0;
    s->arena_used = 0;
    if ((s->flags & BR_SIMILAR_NT) && !s->fn) {
        s->rc = br_nt_hasher_digest(s->nt_hasher, p, len, s->exact_nt);
        s->done |= s->rc < 0;
    }
    /* The password itself goes in first: no variant equals it. */
    if (len <= BR_SIMILAR_MAX_LEN)
        table_insert(s, p, len);
    if (!s->done)
        sim_generate(s, p, len);
    OPENSSL_cleanse(s->arena, s->arena_used);
    OPENSSL_cleanse(s->slots, SIM_SLOTS * sizeof(*s->slots));
    OPENSSL_cleanse(s->exact_nt, sizeof(s->exact_nt));
    s->arena_used = 0;
    return s->rc < 0 ? s->rc : (int)s->n;
}

int br_similar_hashes(br_similar *s, const void *password, size_t len, uint8_t (*sha1)[BR_SHA1_LEN],
                      uint8_t (*nt)[BR_NT_LEN], size_t cap)
{
    if (((s->flags & BR_SIMILAR_SHA1) && !sha1) || ((s->flags & BR_SIMILAR_NT) && !nt))
        return -EINVAL;
    s->sha1 = sha1;
    s->nt = nt;
    s->fn = NULL;
    s->cap = BR_MIN(cap, (size_t)BR_SIMILAR_MAX);
    int rc = run(s, password, len);
    if (rc < 0) {
        if (sha1)
            OPENSSL_cleanse(sha1, s->cap * BR_SHA1_LEN);
        if (nt)
            OPENSSL_cleanse(nt, s->cap * BR_NT_LEN);
    }
    s->sha1 = NULL;
    s->nt = NULL;
    return rc;
}

int br_similar_each(br_similar *s, const void *password, size_t len, br_similar_fn fn, void *ctx)
{
    s->fn = fn;
    s->fn_ctx = ctx;
    s->cap = BR_SIMILAR_MAX;
    int rc = run(s, password, len);
    s->fn = NULL;
    s->fn_ctx = NULL;
    return rc;
}
