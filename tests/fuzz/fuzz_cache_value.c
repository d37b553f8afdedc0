/* SPDX-License-Identifier: MIT */
/* Fuzz target for decoding range cache values (the entry layout in
 * lib/range/range_cache.h: validators, times, then a range set as in
 * lib/range/range.h): br_rc_entry_parse, and the cache's own readers of a
 * stored value, br_range_cache_lookup and br_range_cache_touch, fed through
 * the pending table of a real cache (opened once in a private directory
 * under $TMPDIR, never flushed) so that no input touches the disk.
 *
 * Input: byte 0 (bit 0: the kind, password-sha1 or url-sha256; bit 1: the
 * value is built here), now (8 bytes), max_stale (4 bytes), then either the
 * raw value, or (bit 1) the ETag and Last-Modified lengths (1 byte each),
 * fetched_at and expires_at (8 bytes each), those validators, and a range
 * response body, parsed by br_range_parse and made into an entry by
 * br_rc_entry_build_decoys, so that the lookups get deep.
 *
 * Checked: no crash, leak or sanitizer report; the parse accepts exactly
 * the values of the documented layout, its views lie inside the value, and
 * an accepted value rebuilt from its view is the same bytes (flags aside);
 * a lookup of a corrupt value is -EINVAL and a miss; otherwise its state is
 * FRESH, STALE or EXPIRED by the documented rule, the validators and times
 * are those stored, and hit, count and category are br_range_lookup's on
 * the range set (none when expired), for a random hash and for every entry
 * of a valid set; a touch rewrites a value with a valid range set keeping
 * its set and is -EINVAL for any other. */
#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "range/range.h"
#include "range/range_cache.h"
#include "range/range_cache_int.h"

#define FUZZ_NAME "fuzz_cache_value"
#include "fuzz_check.h"
#include "fuzz_bytes.h"

#define MAX_ENTRY_PROBES 64

static br_range_cache *cache;
static char cache_dir[256];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void cache_close(void)
{
    br_range_cache_free(cache);
    cache = NULL;
    nftw(cache_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static br_range_cache *cache_get(void)
{
    if (cache)
        return cache;
    const char *tmp = getenv("TMPDIR");
    snprintf(cache_dir, sizeof(cache_dir), "%s/fuzz-cache-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(cache_dir));
    char path[300];
    snprintf(path, sizeof(path), "%s/cache", cache_dir);
    br_error err = {{0}};
    CHECK(br_range_cache_open(path, 64u << 20, &cache, &err) == 0);
    atexit(cache_close);
    return cache;
}

static void check_parse(const uint8_t *v, size_t len)
{
    entry_view ev;
    int r = br_rc_entry_parse(v, len, &ev);
    bool want = len >= 24 && memcmp(v, "BRC\x01", 4) == 0 && (size_t)v[4] + v[5] <= len - 24;
    size_t list = 0; /* flag bit 0: a decoy list after Last-Modified */
    if (want && (br_load_le16(v + 6) & 1)) {
        size_t off = 24 + (size_t)v[4] + v[5];
        want =
            off < len && v[off] <= BR_RANGE_CACHE_MAX_DECOYS && off + 1 + 3 * (size_t)v[off] <= len;
        list = want ? 1 + 3 * (size_t)v[off] : 0;
    }
    CHECK((r == 0) == want);
    if (r < 0) {
        CHECK(r == -EINVAL);
        return;
    }
    CHECK(ev.etag == v + 24 && ev.etag_len == v[4]);
    CHECK(ev.lm == ev.etag + ev.etag_len && ev.lm_len == v[5]);
    CHECK(ev.rs == ev.lm + ev.lm_len + list && ev.rs + ev.rs_len == v + len);
    CHECK(list ? ev.decoys == ev.lm + ev.lm_len + 1 && ev.n_decoys == (list - 1) / 3
               : !ev.decoys && ev.n_decoys == 0);
    CHECK(ev.fetched_at == (int64_t)br_load_le64(v + 8));
    CHECK(ev.expires_at == (int64_t)br_load_le64(v + 16));
    uint8_t *again;
    size_t again_len;
    CHECK(br_rc_entry_build_decoys(ev.rs, ev.rs_len, ev.fetched_at, ev.expires_at, ev.etag,
                                   ev.etag_len, ev.lm, ev.lm_len, ev.decoys, ev.n_decoys, &again,
                                   &again_len) == 0);
    CHECK(again_len == len && memcmp(again, v, 6) == 0 && memcmp(again + 8, v + 8, len - 8) == 0);
    free(again);
}

/* What a lookup of hash must give for the value v (a copy of what the
 * cache holds). */
static void check_lookup(br_range_cache *c, br_range_kind kind, const uint8_t *v, size_t len,
                         const uint8_t *hash, int64_t now, int64_t max_stale)
{
    br_range_cache_result res;
    int r = br_range_cache_lookup(c, 0, kind, hash, now, max_stale, &res);
    entry_view ev;
    if (br_rc_entry_parse(v, len, &ev) < 0) {
        CHECK(r == -EINVAL && res.state == BR_RANGE_CACHE_MISS);
        return;
    }
    uint32_t count = 0;
    char category[BR_RANGE_CATEGORY_MAX + 1] = "";
    int found = br_range_lookup(kind, ev.rs, ev.rs_len, hash, &count, category);
    if (found < 0) {
        CHECK(r == found && res.state == BR_RANGE_CACHE_MISS);
        return;
    }
    CHECK(r == 0);
    br_range_cache_state want;
    if (now < ev.expires_at)
        want = BR_RANGE_CACHE_FRESH;
    else if ((__int128)now - ev.expires_at <= (max_stale > 0 ? max_stale : 0))
        want = BR_RANGE_CACHE_STALE;
    else
        want = BR_RANGE_CACHE_EXPIRED;
    CHECK(res.state == want);
    CHECK(res.fetched_at == ev.fetched_at && res.expires_at == ev.expires_at);
    CHECK(strnlen(res.etag, sizeof(res.etag)) < sizeof(res.etag));
    CHECK(strlen(res.etag) == strnlen((const char *)ev.etag, ev.etag_len));
    CHECK(memcmp(res.etag, ev.etag, strlen(res.etag)) == 0);
    CHECK(strlen(res.last_modified) == strnlen((const char *)ev.lm, ev.lm_len));
    CHECK(memcmp(res.last_modified, ev.lm, strlen(res.last_modified)) == 0);
    if (want == BR_RANGE_CACHE_EXPIRED) {
        CHECK(!res.found && res.count == 0 && res.category[0] == '\0');
        return;
    }
    CHECK(res.found == (found == 1));
    if (found == 1) {
        CHECK(res.count == count && strcmp(res.category, category) == 0);
        CHECK(kind == BR_RANGE_URL_SHA256 ? count == 1 : count > 0);
    }
}

/* Every entry of a valid range set is found under its prefix. */
static void check_entries(br_range_cache *c, br_range_kind kind, const uint8_t *v, size_t len,
                          const uint8_t *rs, size_t rs_len, uint32_t prefix20, int64_t now,
                          int64_t max_stale)
{
    uint32_t n;
    if (br_range_validate(kind, rs, rs_len, &n) < 0)
        return;
    size_t hl = br_range_hash_len(kind), w = hl - 2, vw = kind == BR_RANGE_URL_SHA256 ? 1 : 4;
    for (uint32_t i = 0; i < n && i < MAX_ENTRY_PROBES; i++) {
        uint8_t hash[32];
        hash[0] = (uint8_t)(prefix20 >> 12);
        hash[1] = (uint8_t)(prefix20 >> 4);
        memcpy(hash + 2, rs + BR_RANGE_HEADER_SIZE + (size_t)i * (w + vw), w);
        hash[2] = (uint8_t)(hash[2] | (prefix20 & 0xF) << 4);
        CHECK(br_range_lookup(kind, rs, rs_len, hash, NULL, NULL) == 1);
        check_lookup(c, kind, v, len, hash, now, max_stale);
    }
}

static void check_touch(br_range_cache *c, br_range_kind kind, const uint8_t *v, size_t len,
                        uint32_t prefix20)
{
    entry_view ev;
    bool ok =
        br_rc_entry_parse(v, len, &ev) == 0 && br_range_validate(kind, ev.rs, ev.rs_len, NULL) == 0;
    int r = br_range_cache_touch(c, 0, kind, prefix20, 5, 6, NULL, "");
    CHECK(r == (ok ? 0 : -EINVAL));
    if (!ok)
        return;
    pend *p = br_rc_pend_find(c, rkey_of(0, kind, prefix20));
    CHECK(p && p->val);
    entry_view nv;
    CHECK(br_rc_entry_parse(p->val, p->len, &nv) == 0);
    CHECK(nv.fetched_at == 5 && nv.expires_at == 6 && nv.lm_len == 0);
    CHECK(nv.etag_len == ev.etag_len && memcmp(nv.etag, ev.etag, ev.etag_len) == 0);
    CHECK(nv.rs_len == ev.rs_len && memcmp(nv.rs, ev.rs, ev.rs_len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_bytes in = {data, size};
    uint8_t flags = fz_u8(&in);
    br_range_kind kind = flags & 1 ? BR_RANGE_URL_SHA256 : BR_RANGE_PASSWORD_SHA1;
    int64_t now = (int64_t)fz_u64(&in);
    int64_t max_stale = (int32_t)fz_u32(&in);
    uint8_t *v = NULL;
    size_t len = 0;
    if (flags & 2) {
        size_t el = fz_u8(&in), ll = fz_u8(&in), got_e, got_l;
        int64_t fetched = (int64_t)fz_u64(&in), expires = (int64_t)fz_u64(&in);
        const uint8_t *etag = fz_take(&in, el, &got_e), *lm = fz_take(&in, ll, &got_l);
        uint8_t *rs;
        size_t rs_len;
        br_error err;
        if (br_range_parse(kind, (const char *)in.p, in.n, 0, &rs, &rs_len, &err) < 0)
            return 0;
        CHECK(br_rc_entry_build_decoys(rs, rs_len, fetched, expires, etag, got_e, lm, got_l, NULL,
                                       0, &v, &len) == 0);
        free(rs);
    } else {
        len = in.n;
        v = malloc(len ? len : 1);
        CHECK(v);
        memcpy(v, in.p, len);
    }
    check_parse(v, len);

    /* The same bytes as the cache's stored value for one prefix. */
    br_range_cache *c = cache_get();
    uint8_t hash[32] = {0};
    size_t hl = br_range_hash_len(kind);
    uint64_t seed = (uint64_t)now ^ len;
    for (size_t i = 0; i < hl; i += 8)
        br_store_le64(hash + i, br_splitmix64(&seed));
    uint32_t prefix20 = br_range_prefix20(hash);
    uint8_t *stored = malloc(len ? len : 1);
    CHECK(stored);
    memcpy(stored, v, len);
    CHECK(br_rc_pend_put(c, rkey_of(0, kind, prefix20), stored, len) == 0);
    check_lookup(c, kind, v, len, hash, now, max_stale);
    entry_view ev;
    if (br_rc_entry_parse(v, len, &ev) == 0)
        check_entries(c, kind, v, len, ev.rs, ev.rs_len, prefix20, now, max_stale);
    check_touch(c, kind, v, len, prefix20);
    br_rc_pend_clear(c);
    free(v);
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
