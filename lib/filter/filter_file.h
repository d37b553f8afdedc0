/* SPDX-License-Identifier: MIT */
/* The filter-file container (docs/filter-format.md): a fixed 512-byte
 * little-endian header, then the algorithm's payload. Read through a
 * read-only mmap and fully verified before use; written by filter_writer.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/util.h"

#define BR_FILTER_MAGIC "BRCHFLTR"
/* The newest container version this build reads. Writers write the lowest
 * version that can express the file: 1 for a full single filter, 2 for a
 * delta or a layered file (docs/filter-format.md, "Version history"). */
#define BR_FILTER_VERSION 2
#define BR_FILTER_HEADER_SIZE 512
#define BR_FILTER_PARAMS_SIZE 64
#define BR_FILTER_SOURCE_SIZE 256
/* The payload starts on a page boundary so that arrays inside it can be aligned. */
#define BR_FILTER_PAYLOAD_ALIGN 4096

typedef enum br_filter_kind {
    BR_KIND_PASSWORD_SHA1 = 1,
    BR_KIND_URL_SHA256 = 2,
    BR_KIND_PASSWORD_NTLM = 3,
} br_filter_kind;

typedef enum br_filter_algorithm {
    BR_ALGO_BINARY_FUSE = 1,
    BR_ALGO_BLOCKED_BLOOM = 2,
    /* Container v2: complete filter files of one kind, the first a full
     * filter and each later one a delta of an earlier one (filter_delta.h). */
    BR_ALGO_LAYERS = 3,
    /* Container v2: a sharded binary fuse filter with 32-bit slots holding
     * a 24-bit fingerprint and an 8-bit code per key (offline_codes.h). */
    BR_ALGO_FUSE_OFFLINE = 4,
} br_filter_algorithm;

/* Container v2: what a file is to the files around it. */
typedef enum br_filter_role {
    BR_ROLE_FULL = 0,  /* answers on its own */
    BR_ROLE_DELTA = 1, /* extends the filter whose body_sha256 is base_body_sha256 */
} br_filter_role;

typedef enum br_key_encoding {
    /* Key = the first 8 bytes of the hash, big-endian, as a u64. */
    BR_KEYENC_HASH_PREFIX64 = 1,
    /* Key = SHA-256 of a canonical URL expression (URL canonicalization vN). */
    BR_KEYENC_URL_EXPR_SHA256 = 2,
} br_key_encoding;

typedef struct br_filter_header {
    uint32_t version;
    uint32_t header_size;
    uint32_t kind;
    uint32_t algorithm;
    uint32_t key_encoding;
    uint32_t key_encoding_version;
    uint64_t generation;
    int64_t build_time; /* seconds since the epoch */
    uint64_t key_count;
    uint64_t payload_offset; /* from the start of the file */
    uint64_t payload_size;   /* the payload runs to the end of the file */
    uint8_t params[BR_FILTER_PARAMS_SIZE];
    char source[BR_FILTER_SOURCE_SIZE]; /* NUL-terminated UTF-8 */
    uint32_t role;                      /* br_filter_role; v1: always full */
    uint8_t base_body_sha256[32];       /* a delta's base; zero otherwise */
    uint8_t body_sha256[32];            /* over every byte after the header */
    uint8_t header_sha256[32];          /* over the header bytes before this field */
} br_filter_header;

const char *br_filter_kind_name(uint32_t kind);
/* 0 and *kind set, or -EINVAL for an unknown name. */
int br_filter_kind_from_name(const char *name, br_filter_kind *kind);
const char *br_filter_algorithm_name(uint32_t algorithm);
const char *br_key_encoding_name(uint32_t encoding);

/* ---- reading ---- */

typedef struct br_filter_file br_filter_file;

/* Map path read-only and verify all of it: magic, version, header fields in
 * range, both SHA-256 sums, file size. Any failure is -EINVAL (or -errno for
 * I/O) with the reason in err; nothing of a refused file is kept. */
int br_filter_file_open(const char *path, br_filter_file **out, br_error *err);
/* As br_filter_file_open, but the body is not hashed when PATH.verified
 * (filter_record.h) matches the file as opened: its inode, size, mtime,
 * ctime and header checksum, the record belonging to root (or also_uid,
 * when >= 0) and not group- or world-writable. Otherwise the body is hashed
 * as br_filter_file_open does. breachd opens its filters this way, so that
 * start-up does not read a multi-GB body (docs/filter-format.md,
 * "Start-up: verification records"). */
int br_filter_file_open_trusting(const char *path, long also_uid, br_filter_file **out,
                                 br_error *err);
/* When the record that vouched for f's body was written (seconds since the
 * epoch), or -1 when the body was hashed at the open. */
int64_t br_filter_file_record_time(const br_filter_file *f);
/* The file as it was opened (fstat of the open descriptor). */
struct stat;
const struct stat *br_filter_file_stat(const br_filter_file *f);
void br_filter_file_free(br_filter_file *f);
BR_DEFINE_FREEP(br_filter_file, br_filter_file_free)

const br_filter_header *br_filter_file_header(const br_filter_file *f);
/* The whole mapped file; payload at header->payload_offset. */
const uint8_t *br_filter_file_data(const br_filter_file *f);
uint64_t br_filter_file_size(const br_filter_file *f);

/* ---- truncation while mapped ----
 * A filter file must be replaced by rename (a new inode), never rewritten or
 * truncated in place (docs/filter-format.md). If it is truncated anyway,
 * reading a page past the new end raises SIGBUS. The program's SIGBUS
 * handler (SA_SIGINFO) calls br_map_guard_fault(si_addr) (map_guard.h):
 * when the address lies in the mapping of an open filter file, that whole mapping is replaced
 * with zero pages, the file is marked damaged and the call returns true (the
 * faulting read then resumes and reads zeros); otherwise it returns false
 * and the handler must let the default action happen. Async-signal-safe,
 * any thread. Every open filter file is registered from
 * br_filter_file_open() until br_filter_file_free(). A file damaged while
 * it is being verified is refused. Probes of a damaged filter answer
 * "maybe" (pwfilter.h, urlfilter.h), never a wrong "no". The guard table
 * (map_guard.h) is shared with the range cache's mappings: the one handler
 * call covers a fault in either. */
/* True once a fault was handled in this file's mapping, or a change was
 * noticed by br_filter_file_changed(). Any thread. */
bool br_filter_file_damaged(const br_filter_file *f);

/* ---- rewriting in place ----
 * A file rewritten in place (`cp` over it, `dd conv=notrunc`: the same
 * inode) changes the mapped bytes without a fault. The file stays open:
 * this fstats it and compares size, mtime and ctime (the ctime only while
 * the link count is unchanged: a rename over the path, the supported way
 * to replace a filter, changes the old inode's ctime) with the open's. On
 * a difference the file is marked damaged (probes answer "maybe", as
 * after a truncation) and true is returned. A write updates the times
 * before its bytes reach the page cache, so a probe that read changed
 * bytes is followed by a call that returns true. A leased file
 * (br_filter_file_lease) whose lease was broken (someone opened it for
 * writing) counts as changed too. Any thread. */
bool br_filter_file_changed(const br_filter_file *f);

/* ---- writers: a read lease ----
 * A process that holds the file open for writing, or a writable shared
 * mapping of it, can change its bytes without moving its times (pages
 * already writable fault no more, and on tmpfs never are written back):
 * no fstat sees it. A read lease (fcntl(2) F_SETLEASE, F_RDLCK) closes
 * that: it is granted only while no one has the file open for writing,
 * and any later open for writing (or truncate) breaks it, the opener
 * waiting until the holder lets go (at most /proc/sys/fs/lease-break-time
 * seconds). The kernel tells the holder with SIGIO: a program that leases
 * must ignore or handle it (its default action ends the process).
 * Returns 1 with the lease held; 0 when the kernel grants none here (the
 * caller neither owns the file nor has CAP_LEASE, or the filesystem does
 * not support leases): writers are then noticed by fstat only; -EBUSY with
 * err naming path when the file is open for writing right now (a writable
 * descriptor or shared mapping elsewhere): it must not be trusted. Once
 * the lease is broken, br_filter_file_changed() lets it go (the opener
 * proceeds) and returns true: the file is damaged. */
int br_filter_file_lease(br_filter_file *f, const char *path, br_error *err);

/* Owner and mode of the file as opened: 0 when it belongs to root (or to
 * also_uid, when >= 0) and neither group nor others may write it; else
 * -EPERM with err naming path, the owner or mode, and the fix. */
int br_filter_file_check_owner(const br_filter_file *f, const char *path, long also_uid,
                               br_error *err);

/* A filter file inside another one's mapping (a layer of a layered file,
 * filter_delta.h): bytes [offset, offset + len) of parent, whose body
 * checksum already covers them. Its header is decoded and range-checked and
 * its size checked; its own body checksum is not recomputed. The view does
 * not own the mapping: free it before parent. Damage to parent (a
 * truncation, above) is damage to the view. */
int br_filter_file_view(const br_filter_file *parent, uint64_t offset, uint64_t len,
                        br_filter_file **out, br_error *err);

/* Encode h as it is (version included) into raw and set its header_sha256
 * (in h and raw). 0 or -EIO. */
int br_filter_header_encode(br_filter_header *h, uint8_t raw[BR_FILTER_HEADER_SIZE]);

/* Decode and range-check a header from raw bytes (len >= BR_FILTER_HEADER_SIZE),
 * checking the header checksum but not the body. For `filter info` on a file
 * whose body is damaged. */
int br_filter_header_decode(const uint8_t *raw, size_t len, br_filter_header *hdr, br_error *err);
/* Read path's header and decode it as br_filter_header_decode (the body is
 * not read): 0, -errno when the file cannot be read, -EIO when it is
 * shorter than a header, -EINVAL when the header is not valid. */
int br_filter_header_read(const char *path, br_filter_header *hdr);

/* The header fields, in file order, for br_filter_header_peek. */
typedef enum br_filter_field {
    BR_FIELD_MAGIC,
    BR_FIELD_VERSION,
    BR_FIELD_HEADER_SIZE,
    BR_FIELD_KIND,
    BR_FIELD_ALGORITHM,
    BR_FIELD_KEY_ENCODING,
    BR_FIELD_KEY_ENCODING_VERSION,
    BR_FIELD_GENERATION,
    BR_FIELD_BUILD_TIME,
    BR_FIELD_KEY_COUNT,
    BR_FIELD_PAYLOAD_OFFSET,
    BR_FIELD_PAYLOAD_SIZE,
    BR_FIELD_PARAMS,
    BR_FIELD_SOURCE,
    BR_FIELD_BODY_SHA256,
    BR_FIELD_HEADER_SHA256,
    BR_FILTER_FIELDS,
} br_filter_field;

/* A header read as stored, without any check. */
typedef struct br_filter_peek {
    br_filter_header h; /* every field present, as stored; the others zero */
    uint8_t magic[8];   /* the first bytes as read (zero past len) */
    uint32_t present;   /* bit f: field f lies wholly within the bytes read */
    bool magic_ok;      /* magic[] is BR_FILTER_MAGIC */
    bool header_sum_ok; /* all of the header was read and its SHA-256 matches */
} br_filter_peek;

/* What a header says, unverified: for `filter info --force` on a file that
 * br_filter_file_open refused (damaged, truncated, of an unknown version or
 * not a filter at all). raw holds the file's first len bytes (any len,
 * also 0); no field is range-checked and none may be trusted. */
void br_filter_header_peek(const uint8_t *raw, size_t len, br_filter_peek *p);
