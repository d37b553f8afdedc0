/* SPDX-License-Identifier: MIT */
/* Fuzz target for loading filter files (docs/filter-format.md): the
 * container (br_filter_header_decode, br_filter_file_open), the sharded
 * binary fuse filter (br_pwfilter_open: params, shard table, fuse payload;
 * offline files with their codes and check filters)
 * and the URL blocked-Bloom filter (br_urlfilter_open: params, prefix
 * bitmap, Bloom payload). The file goes to a memfd and is opened by path.
 *
 * Byte 0 picks how the file is made from the rest of the input:
 *   0: raw, the input is the file; both checksums are recomputed, so the
 *      fuzzer gets past them;
 *   1: a valid password filter written here (fuzz_filter_build.h) from a
 *      few parameters, keys drawn from a seed, and a list of byte edits
 *      (offset, XOR) applied before the checksums are recomputed;
 *   2: the same for a URL filter (a 128 KiB bitmap: out of reach of raw
 *      inputs);
 *   3: raw, checksums left as they are.
 *
 * Checked: no crash, leak or sanitizer report; a refusal is a negative
 * errno with a reason; the container accepts exactly the files whose header
 * decodes and whose size and body checksum match; a filter written here
 * without edits is accepted and finds every key it holds; for an accepted
 * filter, every probe agrees with the same probe made on copies of its
 * arrays in exactly sized heap blocks (so a geometry the loader let through
 * that reads outside an array is caught by the address sanitizer), and the
 * batch probes agree with the single ones. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "filter/bfuse.h"
#include "filter/bloom.h"
#include "filter/filter_file.h"
#include "core/hash.h"
#include "filter/pwfilter.h"
#include "filter/pwfilter_int.h" /* br_pwo_check_key: an offline URL file's check filters */
#include "filter/urlfilter.h"

#define FUZZ_NAME "fuzz_filter"
#include "fuzz_check.h"
#include "fuzz_bytes.h"
#include "fuzz_filter_build.h"

#define PROBES 64

/* ---- the password filter against copies of its shards ---- */

/* What a member answers for k from its copied shard: the fingerprint match
 * (binary-fuse), or a code in the member's table (binary-fuse-offline) that
 * its copied check filter, if any, agrees with. */
static bool shard_says(const br_pwfilter *pf, const br_bfuse *f, const br_bfuse *check, uint64_t k)
{
    const br_pwo *off = br_pwfilter_offline_info(pf);
    if (!off)
        return br_bfuse_contains(f, k);
    uint8_t code = br_bfuse_code(f, k);
    bool hit = code && (off->code_kind != BR_CODES_CATEGORIES || code <= off->cats.count);
    return hit && (!check || br_bfuse_contains(check, br_pwo_check_key(k)));
}

/* The filter of table entry e (fp_bits wide), its array copied alone into a
 * heap block of exactly its size (returned; f points at it). */
static uint8_t *shard_copy(const uint8_t *file, const uint8_t *e, unsigned arity, unsigned fp_bits,
                           uint64_t payload, uint64_t table, br_bfuse *f, uint64_t *fp_bytes)
{
    memset(f, 0, sizeof(*f));
    CHECK(br_bfuse_layout(f, arity, fp_bits, br_load_le32(e + 16)) == 0);
    CHECK(f->array_length == br_load_le32(e + 28));
    f->seed = br_load_le64(e);
    f->segment_length = br_load_le32(e + 20);
    f->segment_count_length = br_load_le32(e + 24);
    CHECK(br_bfuse_check(f) == 0);
    size_t bytes = br_bfuse_bytes(f);
    uint64_t off = br_load_le64(e + 8);
    CHECK(off >= payload && off <= table && bytes <= table - off);
    *fp_bytes += bytes;
    uint8_t *copy = malloc(bytes ? bytes : 1);
    CHECK(copy);
    memcpy(copy, file + off, bytes);
    f->fingerprints = bytes ? copy : NULL;
    return copy;
}

static void check_pwfilter(const br_pwfilter *pf, const uint8_t *file, size_t len, uint64_t seed)
{
    const br_filter_header *h = br_pwfilter_header(pf);
    const uint8_t *p = h->params;
    unsigned shard_bits = p[2];
    uint32_t shards = br_pwfilter_shard_count(pf);
    CHECK(shards == UINT32_C(1) << shard_bits);
    CHECK(br_pwfilter_arity(pf) == p[0] && br_pwfilter_fp_bits(pf) == p[1]);
    const br_pwo *offline = br_pwfilter_offline_info(pf);
    bool checked = offline && offline->check_bits; /* check filters: a second table */
    uint64_t table = br_load_le64(p + 8);
    CHECK(table <= len && len - table == (uint64_t)shards * 32 * (checked ? 2 : 1));
    uint64_t fp_bytes = 0, keys = 0;
    for (uint32_t s = 0; s < shards; s++) {
        const uint8_t *e = file + table + (size_t)s * 32;
        br_bfuse f, c;
        uint8_t *copy = shard_copy(file, e, p[0], p[1], h->payload_offset, table, &f, &fp_bytes);
        uint8_t *ccopy = NULL;
        if (checked) {
            const uint8_t *ce = file + table + ((size_t)shards + s) * 32;
            CHECK(br_load_le32(ce + 16) == br_load_le32(e + 16));
            ccopy = shard_copy(file, ce, p[0], 16, h->payload_offset, table, &c, &fp_bytes);
        }
        keys += br_load_le32(e + 16);
        uint64_t keys_in[PROBES];
        bool batch[PROBES];
        for (int i = 0; i < PROBES; i++) {
            uint64_t k = br_splitmix64(&seed);
            if (shard_bits)
                k = ((uint64_t)s << (64 - shard_bits)) | (k >> shard_bits);
            keys_in[i] = k;
            CHECK(br_pwfilter_contains_key(pf, k) == shard_says(pf, &f, ccopy ? &c : NULL, k));
        }
        br_pwfilter_contains_batch(pf, keys_in, PROBES, batch);
        for (int i = 0; i < PROBES; i++)
            CHECK(batch[i] == shard_says(pf, &f, ccopy ? &c : NULL, keys_in[i]));
        free(copy);
        free(ccopy);
    }
    CHECK(keys == h->key_count);
    CHECK(br_pwfilter_fingerprint_bytes(pf) == fp_bytes);
    CHECK(!br_pwfilter_damaged(pf));
}

/* ---- the URL filter against copies of its bitmap and blocks ---- */

static void check_urlfilter(const br_urlfilter *uf, const uint8_t *file, size_t len, uint64_t seed)
{
    const br_filter_header *h = br_urlfilter_header(uf);
    const uint8_t *p = h->params;
    uint64_t bitmap_off = br_load_le64(p + 32), blocks_off = br_load_le64(p + 40);
    uint64_t blocks = br_load_le64(p + 8);
    CHECK(bitmap_off == h->payload_offset && blocks_off == bitmap_off + BR_URLFILTER_BITMAP_BYTES);
    CHECK(blocks >= 1 && blocks_off <= len && (len - blocks_off) == blocks * BR_BLOOM_BLOCK_BYTES);
    uint8_t *bitmap = malloc(BR_URLFILTER_BITMAP_BYTES);
    uint8_t *bl = malloc(blocks * BR_BLOOM_BLOCK_BYTES);
    CHECK(bitmap && bl);
    memcpy(bitmap, file + bitmap_off, BR_URLFILTER_BITMAP_BYTES);
    memcpy(bl, file + blocks_off, blocks * BR_BLOOM_BLOCK_BYTES);
    br_bloom b = {.blocks = bl, .block_count = blocks, .k = p[0]};
    CHECK(b.k >= BR_BLOOM_MIN_K && b.k <= BR_BLOOM_MAX_K);
    uint8_t keys[PROBES][BR_SHA256_LEN];
    bool batch[PROBES];
    for (int i = 0; i < PROBES; i++) {
        for (int j = 0; j < BR_SHA256_LEN; j += 8)
            br_store_le64(keys[i] + j, br_splitmix64(&seed));
        bool want = br_prefix_bitmap_test(bitmap, br_urlfilter_prefix_of(keys[i])) &&
                    br_bloom_contains(&b, keys[i]);
        CHECK(br_urlfilter_maybe(uf, keys[i]) == want);
        CHECK(br_prefix_bitmap_test(br_urlfilter_prefix_bitmap(uf),
                                    br_urlfilter_prefix_of(keys[i])) ==
              br_prefix_bitmap_test(bitmap, br_urlfilter_prefix_of(keys[i])));
    }
    br_urlfilter_maybe_batch(uf, (const uint8_t(*)[BR_SHA256_LEN])keys, PROBES, batch);
    for (int i = 0; i < PROBES; i++)
        CHECK(batch[i] == br_urlfilter_maybe(uf, keys[i]));
    br_urlfilter_info info;
    br_urlfilter_get_info(uf, &info);
    CHECK(info.k == b.k && info.block_count == blocks && info.key_count == h->key_count);
    CHECK(info.prefixes_with_entries <= h->key_count);
    CHECK(info.file_size == len);
    CHECK(br_urlfilter_lookup_labels(uf) >= br_urlfilter_max_domain_labels(uf));
    free(bitmap);
    free(bl);
}

/* ---- one file through every loader ---- */

static void load(const uint8_t *file, size_t len, const fz_built *built)
{
    char path[64];
    int fd = fz_memfd(file, len, path);
    br_error err = {{0}};

    br_filter_header hraw;
    bool header_ok = br_filter_header_decode(file, len, &hraw, &err) == 0;

    br_filter_file *ff = NULL;
    err.text[0] = '\0';
    int r = br_filter_file_open(path, &ff, &err);
    if (r < 0) {
        CHECK(ff == NULL && err.text[0] != '\0');
        CHECK(r == -EINVAL);
    } else {
        const br_filter_header *h = br_filter_file_header(ff);
        CHECK(header_ok && memcmp(h, &hraw, sizeof(hraw)) == 0);
        CHECK(br_filter_file_size(ff) == len && h->payload_offset + h->payload_size == len);
        uint8_t sum[32];
        CHECK(br_sha256(file + BR_FILTER_HEADER_SIZE, len - BR_FILTER_HEADER_SIZE, sum) == 0);
        CHECK(memcmp(sum, h->body_sha256, 32) == 0);
        CHECK(memcmp(br_filter_file_data(ff), file, len) == 0);
        br_filter_file_free(ff);
    }
    bool container_ok = r == 0;
    /* The container accepts a file whose header decodes, whose size matches
     * and whose body checksum matches: exactly those. */
    if (header_ok) {
        uint8_t sum[32];
        CHECK(br_sha256(file + BR_FILTER_HEADER_SIZE, len - BR_FILTER_HEADER_SIZE, sum) == 0);
        bool size_ok = hraw.payload_offset + hraw.payload_size == len;
        CHECK(container_ok == (size_ok && memcmp(sum, hraw.body_sha256, 32) == 0));
    } else {
        CHECK(!container_ok);
    }

    br_pwfilter *pf = NULL;
    err.text[0] = '\0';
    r = br_pwfilter_open(path, &pf, &err);
    if (r < 0) {
        CHECK(pf == NULL && err.text[0] != '\0' && r == -EINVAL);
        CHECK(!built || built->kind != FZ_BUILT_PASSWORD || built->edited);
    } else {
        CHECK(container_ok &&
              (hraw.algorithm == BR_ALGO_BINARY_FUSE || hraw.algorithm == BR_ALGO_FUSE_OFFLINE));
        check_pwfilter(pf, file, len, hraw.generation ^ len);
        if (built && built->kind == FZ_BUILT_PASSWORD && !built->edited)
            for (size_t i = 0; i < built->n_keys; i++)
                CHECK(br_pwfilter_contains_key(pf, built->keys64[i]));
        br_pwfilter_free(pf);
    }

    br_urlfilter *uf = NULL;
    err.text[0] = '\0';
    r = br_urlfilter_open(path, &uf, &err);
    if (r < 0) {
        CHECK(uf == NULL && err.text[0] != '\0' && r == -EINVAL);
        CHECK(!built || built->kind != FZ_BUILT_URL || built->edited);
    } else {
        CHECK(container_ok && hraw.algorithm == BR_ALGO_BLOCKED_BLOOM);
        check_urlfilter(uf, file, len, hraw.generation ^ len);
        if (built && built->kind == FZ_BUILT_URL && !built->edited)
            for (size_t i = 0; i < built->n_keys; i++)
                CHECK(br_urlfilter_maybe(uf, built->keys256[i]));
        br_urlfilter_free(uf);
    }
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mode = data[0] & 3;
    if (mode == 0 || mode == 3) {
        uint8_t *file = malloc(size);
        CHECK(file);
        memcpy(file, data + 1, size - 1);
        if (mode == 0)
            fz_fix_checksums(file, size - 1);
        load(file, size - 1, NULL);
        free(file);
        return 0;
    }
    fz_bytes in = {data + 1, size - 1};
    fz_built b;
    if (mode == 1)
        fz_build_password(&in, &b);
    else
        fz_build_url(&in, &b);
    fz_apply_edits(&in, &b);
    fz_fix_checksums(b.file, b.len);
    load(b.file, b.len, &b);
    fz_built_free(&b);
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
