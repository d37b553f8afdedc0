/* SPDX-License-Identifier: MIT */
/* The filter-file container (filter_file.h, docs/filter-format.md): the
 * 512-byte header read, mapped read-only and verified before use. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "filter_file.h"
#include "filter_record.h"
#include "core/map_guard.h"
#include "core/hash.h"
#include "core/util.h"

/* Byte offsets of the v1 header fields (docs/filter-format.md). */
enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 8,
    OFF_HEADER_SIZE = 12,
    OFF_KIND = 16,
    OFF_ALGORITHM = 20,
    OFF_KEYENC = 24,
    OFF_KEYENC_VERSION = 28,
    OFF_GENERATION = 32,
    OFF_BUILD_TIME = 40,
    OFF_KEY_COUNT = 48,
    OFF_PAYLOAD_OFFSET = 56,
    OFF_PAYLOAD_SIZE = 64,
    OFF_PARAMS = 72,
    OFF_SOURCE = 136,
    OFF_RESERVED = 392, /* v1: reserved up to the body sum */
    OFF_ROLE = 392,     /* v2 */
    OFF_RESERVED2 = 396,
    OFF_BASE_SHA256 = 400,
    OFF_RESERVED3 = 432,
    OFF_BODY_SHA256 = 448,
    OFF_HEADER_SHA256 = 480,
};
_Static_assert(OFF_PARAMS + BR_FILTER_PARAMS_SIZE == OFF_SOURCE, "params size");
_Static_assert(OFF_SOURCE + BR_FILTER_SOURCE_SIZE == OFF_RESERVED, "source size");
_Static_assert(OFF_HEADER_SHA256 + 32 == BR_FILTER_HEADER_SIZE, "header size");
_Static_assert(OFF_BASE_SHA256 + 32 == OFF_RESERVED3, "v2 fields");

/* Newest key-encoding version this build understands, per encoding
 * (docs/filter-format.md, "Key encodings"). */
static uint32_t keyenc_max_version(uint32_t encoding)
{
    return encoding == BR_KEYENC_URL_EXPR_SHA256 ? 6 : 1;
}
#define PAYLOAD_OFFSET_MAX (UINT64_C(1) << 20)

const char *br_filter_kind_name(uint32_t kind)
{
    switch (kind) {
    case BR_KIND_PASSWORD_SHA1:
        return "password-sha1";
    case BR_KIND_URL_SHA256:
        return "url-sha256";
    case BR_KIND_PASSWORD_NTLM:
        return "password-ntlm";
    }
    return NULL;
}

int br_filter_kind_from_name(const char *name, br_filter_kind *kind)
{
    for (uint32_t k = BR_KIND_PASSWORD_SHA1; k <= BR_KIND_PASSWORD_NTLM; k++) {
        if (strcmp(name, br_filter_kind_name(k)) == 0) {
            *kind = (br_filter_kind)k;
            return 0;
        }
    }
    return -EINVAL;
}

const char *br_filter_algorithm_name(uint32_t algorithm)
{
    switch (algorithm) {
    case BR_ALGO_BINARY_FUSE:
        return "binary-fuse";
    case BR_ALGO_BLOCKED_BLOOM:
        return "blocked-bloom";
    case BR_ALGO_LAYERS:
        return "layers";
    case BR_ALGO_FUSE_OFFLINE:
        return "binary-fuse-offline";
    }
    return NULL;
}

const char *br_key_encoding_name(uint32_t encoding)
{
    switch (encoding) {
    case BR_KEYENC_HASH_PREFIX64:
        return "hash-prefix64";
    case BR_KEYENC_URL_EXPR_SHA256:
        return "url-expression-sha256";
    }
    return NULL;
}

static void header_encode(const br_filter_header *h, uint8_t raw[BR_FILTER_HEADER_SIZE])
{
    memset(raw, 0, BR_FILTER_HEADER_SIZE);
    memcpy(raw + OFF_MAGIC, BR_FILTER_MAGIC, 8);
    br_store_le32(raw + OFF_VERSION, h->version);
    br_store_le32(raw + OFF_HEADER_SIZE, h->header_size);
    br_store_le32(raw + OFF_KIND, h->kind);
    br_store_le32(raw + OFF_ALGORITHM, h->algorithm);
    br_store_le32(raw + OFF_KEYENC, h->key_encoding);
    br_store_le32(raw + OFF_KEYENC_VERSION, h->key_encoding_version);
    br_store_le64(raw + OFF_GENERATION, h->generation);
    br_store_le64(raw + OFF_BUILD_TIME, (uint64_t)h->build_time);
    br_store_le64(raw + OFF_KEY_COUNT, h->key_count);
    br_store_le64(raw + OFF_PAYLOAD_OFFSET, h->payload_offset);
    br_store_le64(raw + OFF_PAYLOAD_SIZE, h->payload_size);
    memcpy(raw + OFF_PARAMS, h->params, BR_FILTER_PARAMS_SIZE);
    memcpy(raw + OFF_SOURCE, h->source, strnlen(h->source, BR_FILTER_SOURCE_SIZE - 1));
    if (h->version >= 2) {
        br_store_le32(raw + OFF_ROLE, h->role);
        memcpy(raw + OFF_BASE_SHA256, h->base_body_sha256, 32);
    }
    memcpy(raw + OFF_BODY_SHA256, h->body_sha256, 32);
    memcpy(raw + OFF_HEADER_SHA256, h->header_sha256, 32);
}

int br_filter_header_encode(br_filter_header *h, uint8_t raw[BR_FILTER_HEADER_SIZE])
{
    memset(h->header_sha256, 0, 32);
    header_encode(h, raw);
    if (br_sha256(raw, OFF_HEADER_SHA256, h->header_sha256) < 0)
        return -EIO;
    memcpy(raw + OFF_HEADER_SHA256, h->header_sha256, 32);
    return 0;
}

static bool all_zero(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i])
            return false;
    return true;
}

/* Version 1: the bytes after the source are reserved; a v1 file is a full
 * filter of a single algorithm. */
static int decode_v1_tail(const uint8_t *raw, br_filter_header *h, br_error *err)
{
    if (!all_zero(raw + OFF_RESERVED, OFF_BODY_SHA256 - OFF_RESERVED))
        return br_error_set(err, -EINVAL, "reserved header bytes %d..%d are not zero", OFF_RESERVED,
                            OFF_BODY_SHA256 - 1);
    if (h->algorithm == BR_ALGO_LAYERS || h->algorithm == BR_ALGO_FUSE_OFFLINE)
        return br_error_set(err, -EINVAL, "field algorithm: %s needs format version 2",
                            br_filter_algorithm_name(h->algorithm));
    h->role = BR_ROLE_FULL;
    return 0;
}

/* Version 2: role and base_body_sha256 (docs/filter-format.md). */
static int decode_v2_tail(const uint8_t *raw, br_filter_header *h, br_error *err)
{
    if (!all_zero(raw + OFF_RESERVED2, OFF_BASE_SHA256 - OFF_RESERVED2) ||
        !all_zero(raw + OFF_RESERVED3, OFF_BODY_SHA256 - OFF_RESERVED3))
        return br_error_set(err, -EINVAL, "reserved header bytes %d..%d or %d..%d are not zero",
                            OFF_RESERVED2, OFF_BASE_SHA256 - 1, OFF_RESERVED3, OFF_BODY_SHA256 - 1);
    bool no_base = all_zero(h->base_body_sha256, 32);
    if (h->role == BR_ROLE_FULL && !no_base)
        return br_error_set(err, -EINVAL, "field base_body_sha256: set in a full filter");
    if (h->role == BR_ROLE_DELTA && no_base)
        return br_error_set(err, -EINVAL, "field base_body_sha256: a delta names no base");
    if (h->role != BR_ROLE_FULL && h->role != BR_ROLE_DELTA)
        return br_error_set(err, -EINVAL, "field role: unknown role %u", h->role);
    if (h->role == BR_ROLE_DELTA && h->algorithm == BR_ALGO_LAYERS)
        return br_error_set(err, -EINVAL, "field role: a layered file cannot be a delta");
    return 0;
}

/* Every field as stored, no check. */
static void header_load(const uint8_t raw[BR_FILTER_HEADER_SIZE], br_filter_header *h)
{
    memset(h, 0, sizeof(*h));
    h->version = br_load_le32(raw + OFF_VERSION);
    h->header_size = br_load_le32(raw + OFF_HEADER_SIZE);
    h->kind = br_load_le32(raw + OFF_KIND);
    h->algorithm = br_load_le32(raw + OFF_ALGORITHM);
    h->key_encoding = br_load_le32(raw + OFF_KEYENC);
    h->key_encoding_version = br_load_le32(raw + OFF_KEYENC_VERSION);
    h->generation = br_load_le64(raw + OFF_GENERATION);
    h->build_time = (int64_t)br_load_le64(raw + OFF_BUILD_TIME);
    h->key_count = br_load_le64(raw + OFF_KEY_COUNT);
    h->payload_offset = br_load_le64(raw + OFF_PAYLOAD_OFFSET);
    h->payload_size = br_load_le64(raw + OFF_PAYLOAD_SIZE);
    memcpy(h->params, raw + OFF_PARAMS, BR_FILTER_PARAMS_SIZE);
    memcpy(h->source, raw + OFF_SOURCE, BR_FILTER_SOURCE_SIZE);
    h->role = br_load_le32(raw + OFF_ROLE); /* v2 fields: reserved (zero) in v1 */
    memcpy(h->base_body_sha256, raw + OFF_BASE_SHA256, 32);
    memcpy(h->body_sha256, raw + OFF_BODY_SHA256, 32);
    memcpy(h->header_sha256, raw + OFF_HEADER_SHA256, 32);
}

int br_filter_header_decode(const uint8_t *raw, size_t len, br_filter_header *h, br_error *err)
{
    if (len < BR_FILTER_HEADER_SIZE)
        return br_error_set(err, -EINVAL,
                            "not a breachd filter file (%zu bytes, shorter than the %d-byte "
                            "header)",
                            len, BR_FILTER_HEADER_SIZE);
    if (memcmp(raw + OFF_MAGIC, BR_FILTER_MAGIC, 8) != 0)
        return br_error_set(err, -EINVAL, "not a breachd filter file (bad magic at byte 0)");
    header_load(raw, h);
    if (h->version < 1 || h->version > BR_FILTER_VERSION)
        return br_error_set(err, -EINVAL,
                            "unsupported format version %u (this build reads versions 1..%d)",
                            h->version, BR_FILTER_VERSION);
    /* The header checksum comes first: a damaged header is reported as such,
     * not as whatever field the damage happened to hit. */
    uint8_t sum[32];
    if (br_sha256(raw, OFF_HEADER_SHA256, sum) < 0)
        return br_error_set(err, -EIO, "SHA-256 failed");
    if (memcmp(sum, raw + OFF_HEADER_SHA256, 32) != 0)
        return br_error_set(err, -EINVAL, "header checksum mismatch (header corrupted)");

    if (h->header_size != BR_FILTER_HEADER_SIZE)
        return br_error_set(err, -EINVAL, "field header_size: %u, expected %d", h->header_size,
                            BR_FILTER_HEADER_SIZE);
    if (!br_filter_kind_name(h->kind))
        return br_error_set(err, -EINVAL, "field kind: unknown kind %u", h->kind);
    if (!br_filter_algorithm_name(h->algorithm))
        return br_error_set(err, -EINVAL, "field algorithm: unknown algorithm %u", h->algorithm);
    if (!br_key_encoding_name(h->key_encoding))
        return br_error_set(err, -EINVAL, "field key_encoding: unknown encoding %u",
                            h->key_encoding);
    if (h->key_encoding_version < 1 ||
        h->key_encoding_version > keyenc_max_version(h->key_encoding))
        return br_error_set(err, -EINVAL,
                            "field key_encoding_version: %u not supported (this build reads 1..%u)",
                            h->key_encoding_version, keyenc_max_version(h->key_encoding));
    if (h->build_time < 0)
        return br_error_set(err, -EINVAL, "field build_time: negative (%lld)",
                            (long long)h->build_time);
    if (h->payload_offset < BR_FILTER_HEADER_SIZE || h->payload_offset > PAYLOAD_OFFSET_MAX ||
        h->payload_offset % 64 != 0)
        return br_error_set(err, -EINVAL, "field payload_offset: %llu out of range",
                            (unsigned long long)h->payload_offset);
    if (h->payload_size > UINT64_MAX - h->payload_offset)
        return br_error_set(err, -EINVAL, "field payload_size: %llu out of range",
                            (unsigned long long)h->payload_size);
    size_t slen = strnlen(h->source, BR_FILTER_SOURCE_SIZE);
    if (slen == BR_FILTER_SOURCE_SIZE ||
        !all_zero((const uint8_t *)h->source + slen, BR_FILTER_SOURCE_SIZE - slen))
        return br_error_set(err, -EINVAL, "field source: not a NUL-padded string");
    return h->version == 1 ? decode_v1_tail(raw, h, err) : decode_v2_tail(raw, h, err);
}

void br_filter_header_peek(const uint8_t *raw, size_t len, br_filter_peek *p)
{
    static const unsigned ends[BR_FILTER_FIELDS] = {
        [BR_FIELD_MAGIC] = OFF_VERSION,
        [BR_FIELD_VERSION] = OFF_HEADER_SIZE,
        [BR_FIELD_HEADER_SIZE] = OFF_KIND,
        [BR_FIELD_KIND] = OFF_ALGORITHM,
        [BR_FIELD_ALGORITHM] = OFF_KEYENC,
        [BR_FIELD_KEY_ENCODING] = OFF_KEYENC_VERSION,
        [BR_FIELD_KEY_ENCODING_VERSION] = OFF_GENERATION,
        [BR_FIELD_GENERATION] = OFF_BUILD_TIME,
        [BR_FIELD_BUILD_TIME] = OFF_KEY_COUNT,
        [BR_FIELD_KEY_COUNT] = OFF_PAYLOAD_OFFSET,
        [BR_FIELD_PAYLOAD_OFFSET] = OFF_PAYLOAD_SIZE,
        [BR_FIELD_PAYLOAD_SIZE] = OFF_PARAMS,
        [BR_FIELD_PARAMS] = OFF_SOURCE,
        [BR_FIELD_SOURCE] = OFF_RESERVED,
        [BR_FIELD_BODY_SHA256] = OFF_HEADER_SHA256,
        [BR_FIELD_HEADER_SHA256] = BR_FILTER_HEADER_SIZE,
    };
    uint8_t buf[BR_FILTER_HEADER_SIZE] = {0};
    size_t n = BR_MIN(len, sizeof(buf));
    memcpy(buf, raw, n);
    memset(p, 0, sizeof(*p));
    header_load(buf, &p->h);
    memcpy(p->magic, buf + OFF_MAGIC, sizeof(p->magic));
    for (unsigned f = 0; f < BR_FILTER_FIELDS; f++)
        if (ends[f] <= n)
            p->present |= 1u << f;
    p->magic_ok = n >= 8 && memcmp(p->magic, BR_FILTER_MAGIC, 8) == 0;
    uint8_t sum[32];
    p->header_sum_ok = n == BR_FILTER_HEADER_SIZE && br_sha256(buf, OFF_HEADER_SHA256, sum) == 0 &&
                       memcmp(sum, buf + OFF_HEADER_SHA256, 32) == 0;
}

/* ---- reading ---- */

struct br_filter_file {
    uint8_t *map;
    uint64_t size;
    br_filter_header hdr;
    atomic_int damaged;           /* set by br_map_guard_fault() */
    int guard;                    /* its map_guard.h slot, -1 when none */
    const br_filter_file *parent; /* a view (br_filter_file_view): map is parent's */
    int fd;                       /* kept open: br_filter_file_changed() fstats it; -1 for a view */
    struct stat st;               /* the file as it was opened */
    int64_t record_at;            /* body trusted by a verification record of then; -1: hashed */
    atomic_bool leased;           /* a read lease is held on fd (br_filter_file_lease) */
};

/* ---- mappings guarded against truncation (filter_file.h, map_guard.h) ---- */

static void guard_add(br_filter_file *f)
{
    f->guard = br_map_guard_set(-1, &f->damaged, (uintptr_t)f->map, (size_t)f->size, PROT_READ);
}

static void guard_remove(br_filter_file *f)
{
    br_map_guard_clear(f->guard);
    f->guard = -1;
}

bool br_filter_file_damaged(const br_filter_file *f)
{
    if (f->parent)
        return br_filter_file_damaged(f->parent);
    return atomic_load(&((br_filter_file *)f)->damaged) != 0;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

int br_filter_file_lease(br_filter_file *f, const char *path, br_error *err)
{
    if (f->parent)
        return br_filter_file_lease((br_filter_file *)f->parent, path, err);
    if (fcntl(f->fd, F_SETLEASE, F_RDLCK) == 0) {
        /* The kernel tells the thread that took the lease; a loader thread
         * (a reload's) is gone by then: the process instead. */
        struct f_owner_ex owner = {.type = F_OWNER_PID, .pid = getpid()};
        (void)fcntl(f->fd, F_SETOWN_EX, &owner);
        atomic_store(&f->leased, true);
        return 1;
    }
    if (errno == EAGAIN)
        return br_error_set(err, -EBUSY,
                            "%s is open for writing by another process (a writable descriptor "
                            "or shared mapping could change it unseen): close it, and install "
                            "filters by rename",
                            path);
    return 0; /* EACCES: not the owner, no CAP_LEASE; EINVAL: no leases on this filesystem */
}

/* A held lease that a writer broke (F_GETLEASE says what it is going to:
 * F_UNLCK), or that the kernel took back: let it go, so that the opener
 * proceeds, and say so. */
static bool lease_broken(br_filter_file *f)
{
    if (!atomic_load(&f->leased) || fcntl(f->fd, F_GETLEASE) == F_RDLCK)
        return false;
    if (atomic_exchange(&f->leased, false))
        (void)fcntl(f->fd, F_SETLEASE, F_UNLCK);
    return true;
}

bool br_filter_file_changed(const br_filter_file *f)
{
    if (f->parent)
        return br_filter_file_changed(f->parent);
    struct stat now;
    br_filter_file *mf = (br_filter_file *)f;
    if (lease_broken(mf)) {
        atomic_store(&mf->damaged, 1);
        return true;
    }
    /* A rename over the path or a new hard link changes the link count and
     * with it the ctime, but not a byte: the ctime counts only while the
     * link count is the one of the open (then it also catches a write whose
     * mtime was set back, and a chmod or chown). */
    if (fstat(f->fd, &now) == 0 && now.st_size == f->st.st_size &&
        same_time(&now.st_mtim, &f->st.st_mtim) &&
        (now.st_nlink != f->st.st_nlink || same_time(&now.st_ctim, &f->st.st_ctim)))
        return false;
    atomic_store(&mf->damaged, 1); /* probes answer "maybe" from now on */
    return true;
}

int br_filter_file_check_owner(const br_filter_file *f, const char *path, long also_uid,
                               br_error *err)
{
    if (f->parent)
        return br_filter_file_check_owner(f->parent, path, also_uid, err);
    const struct stat *st = &f->st;
    if (st->st_uid != 0 && (also_uid < 0 || st->st_uid != (uid_t)also_uid))
        return br_error_set(err, -EPERM,
                            "%s belongs to uid %u: a filter must belong to root, so that only "
                            "root can rewrite it; fix: chown root %s",
                            path, (unsigned)st->st_uid, path);
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return br_error_set(err, -EPERM,
                            "%s is group- or world-writable (mode %04o); fix: chmod go-w %s", path,
                            (unsigned)(st->st_mode & 07777), path);
    return 0;
}

void br_filter_file_free(br_filter_file *f)
{
    if (!f)
        return;
    if (f->parent) {
        free(f);
        return;
    }
    guard_remove(f);
    if (f->map)
        munmap(f->map, f->size);
    if (f->fd >= 0)
        close(f->fd);
    free(f);
}

static int body_checksum(const uint8_t *body, uint64_t len, uint8_t out[32])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int r = -EIO;
    if (!ctx)
        return -ENOMEM;
    if (EVP_DigestInit_ex2(ctx, EVP_sha256(), NULL) != 1)
        goto out;
    /* In slices, so that a huge file is hashed with bounded page-cache churn. */
    for (uint64_t off = 0; off < len;) {
        size_t n = (size_t)BR_MIN(len - off, (uint64_t)64 << 20);
        if (EVP_DigestUpdate(ctx, body + off, n) != 1)
            goto out;
        off += n;
    }
    if (EVP_DigestFinal_ex(ctx, out, NULL) == 1)
        r = 0;
out:
    EVP_MD_CTX_free(ctx);
    return r;
}

/* The body: hashed whole, or (trust_record) vouched for by PATH.verified
 * when that matches the file as opened (filter_record.h). */
static int verify_body(br_filter_file *f, const char *path, bool trust_record, long also_uid,
                       const struct stat *st, br_error *err)
{
    br_error ignored = {{0}};
    int64_t at = 0;
    if (trust_record && br_filter_record_check(path, st, &f->hdr, also_uid, &at, &ignored) == 0) {
        f->record_at = at;
        return 0;
    }
    uint8_t sum[32];
    int r = body_checksum(f->map + BR_FILTER_HEADER_SIZE, f->size - BR_FILTER_HEADER_SIZE, sum);
    if (r < 0)
        return br_error_set(err, r, "%s: SHA-256 failed", path);
    if (memcmp(sum, f->hdr.body_sha256, 32) != 0 || br_filter_file_damaged(f))
        return br_error_set(err, -EINVAL, "%s: body checksum mismatch (file corrupted)", path);
    return 0;
}

static int open_file(const char *path, bool trust_record, long also_uid, br_filter_file **out,
                     br_error *err)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return br_error_set(err, -EINVAL, "%s: not a regular file", path);
    if ((uint64_t)st.st_size < BR_FILTER_HEADER_SIZE)
        return br_error_set(err, -EINVAL,
                            "%s: not a breachd filter file (%lld bytes, shorter than the "
                            "%d-byte header)",
                            path, (long long)st.st_size, BR_FILTER_HEADER_SIZE);

    _cleanup_(br_filter_file_freep) br_filter_file *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->guard = -1;
    f->fd = -1;
    f->record_at = -1;
    f->size = (uint64_t)st.st_size;
    void *map = mmap(NULL, f->size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return br_error_set(err, -errno, "%s: mmap: %s", path, strerror(errno));
    f->map = map;
    /* Huge pages where the file system keeps the file in large folios
     * (docs/filter-format.md, "Huge pages"): set before the verification
     * reads it, so that a file not yet cached is read in 2 MiB folios. */
    (void)madvise(map, f->size, MADV_HUGEPAGE);
    guard_add(f); /* a truncation while it is verified is caught too */

    int r = br_filter_header_decode(f->map, f->size, &f->hdr, err);
    if (r < 0)
        return br_error_prefix(err, r, "%s", path);
    uint64_t expect = f->hdr.payload_offset + f->hdr.payload_size;
    if (f->size != expect)
        return br_error_set(err, -EINVAL, "%s: %s: file is %llu bytes, header says %llu", path,
                            f->size < expect ? "truncated" : "trailing data",
                            (unsigned long long)f->size, (unsigned long long)expect);
    if ((r = verify_body(f, path, trust_record, also_uid, &st, err)) < 0)
        return r;
    /* Lookups are random probes: don't let readahead drag in neighbours. */
    (void)madvise(f->map, f->size, MADV_RANDOM);
    f->st = st;
    f->fd = fd;
    fd = -1;
    *out = BR_TAKE_PTR(f);
    return 0;
}

int br_filter_file_open(const char *path, br_filter_file **out, br_error *err)
{
    return open_file(path, false, -1, out, err);
}

int br_filter_file_open_trusting(const char *path, long also_uid, br_filter_file **out,
                                 br_error *err)
{
    return open_file(path, true, also_uid, out, err);
}

int64_t br_filter_file_record_time(const br_filter_file *f)
{
    return f->parent ? br_filter_file_record_time(f->parent) : f->record_at;
}

const struct stat *br_filter_file_stat(const br_filter_file *f)
{
    return f->parent ? br_filter_file_stat(f->parent) : &f->st;
}

int br_filter_file_view(const br_filter_file *parent, uint64_t offset, uint64_t len,
                        br_filter_file **out, br_error *err)
{
    if (offset % BR_FILTER_PAYLOAD_ALIGN || offset > parent->size || len > parent->size - offset)
        return br_error_set(err, -EINVAL, "bytes %llu+%llu are not a page-aligned part of the file",
                            (unsigned long long)offset, (unsigned long long)len);
    br_filter_file *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->guard = -1;
    f->fd = -1;
    f->record_at = -1;
    f->parent = parent;
    f->map = parent->map + offset;
    f->size = len;
    int r = br_filter_header_decode(f->map, f->size, &f->hdr, err);
    uint64_t expect = f->hdr.payload_offset + f->hdr.payload_size;
    if (r == 0 && f->size != expect)
        r = br_error_set(err, -EINVAL, "%s: part is %llu bytes, its header says %llu",
                         f->size < expect ? "truncated" : "trailing data",
                         (unsigned long long)f->size, (unsigned long long)expect);
    if (r < 0) {
        free(f);
        return r;
    }
    *out = f;
    return 0;
}

const br_filter_header *br_filter_file_header(const br_filter_file *f)
{
    return &f->hdr;
}

const uint8_t *br_filter_file_data(const br_filter_file *f)
{
    return f->map;
}

uint64_t br_filter_file_size(const br_filter_file *f)
{
    return f->size;
}

int br_filter_header_read(const char *path, br_filter_header *hdr)
{
    uint8_t raw[BR_FILTER_HEADER_SIZE];
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = pread(fd, raw, sizeof(raw), 0);
    if (n < 0)
        return -errno;
    if (n != (ssize_t)sizeof(raw))
        return -EIO;
    return br_filter_header_decode(raw, sizeof(raw), hdr, NULL) < 0 ? -EINVAL : 0;
}
