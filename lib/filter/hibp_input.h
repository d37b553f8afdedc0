/* SPDX-License-Identifier: MIT */
/* Readers for the password inputs of `breachctl filter build` (layouts in
 * docs/corpus.md, "Corpus formats"), for the kind password-sha1 (HASH = 40
 * hex digits of a SHA-1, SUFFIX = 35) or password-ntlm (HASH = 32 hex digits
 * of an NT hash, SUFFIX = 27):
 *  - a HIBP single file: lines HASH:COUNT;
 *  - a HIBP per-prefix directory: files XXXXX.txt, XXXXX.txt.gz, XXXXX.gz,
 *    XXXXX.txt.bz2, XXXXX.bz2 or XXXXX holding SUFFIX:COUNT, the prefix
 *    taken from the file name, found in the directory and its
 *    subdirectories (AB/CD/ABCDE.txt, 5/B/A/5BAA6.bz2, ...; rules in
 *    hibp_input_int.h); other file names are ignored;
 *  - a plain list of HASHes, one per line;
 *  - with plaintext set, passwords, one per line, hashed with SHA-1 or to
 *    their NT hash (nthash.h: UTF-8 to UTF-16LE, then MD4).
 * Any file (also stdin) may be gzip-compressed, and any file that is not a
 * pipe bzip2-compressed (one or more streams): it is decompressed with zlib
 * or libbz2 while it is read, never as a whole (hibp_input_decomp.c). LF
 * or CRLF, any hex case, any order. Lines with count 0 (HIBP padding) are
 * skipped, and so are lines under min_count. A malformed line stops the read with "FILE:LINE: what
 * is wrong" and -EINVAL; corrupt or truncated gzip or bzip2 data with "FILE: not valid gzip|bzip2
 * data after line N (reason)"; bzip2 data on a pipe with "NAME: bzip2 data cannot be read from a
 * pipe: ...". Path "-" is stdin.
 *
 * Line rules (the LF and then one CR are removed first):
 *  - hash files: a UTF-8 byte order mark (EF BB BF) at the start of any line
 *    is ignored (the official downloader writes one before every block);
 *  - an empty line is blank and skipped; a line of spaces is malformed;
 *  - hash files: the first non-blank line decides HASH:COUNT or plain, a later
 *    line of the other form is malformed; a count is 1-20 decimal digits up to
 *    2^64-1 (leading zeros allowed); a prefix file must hold SUFFIX:COUNT;
 *  - a hash of the other kind's length is named as what it is: "this is an
 *    NTLM corpus; use --kind password-ntlm" (32 hex digits, 27 in a prefix
 *    file, read as password-sha1) and "this is a SHA-1 corpus; use --kind
 *    password-sha1" (40 and 35, read as password-ntlm);
 *  - plaintext: the line's exact bytes are the password (spaces included); a
 *    NUL byte, a UTF-8 BOM at the start of the file, or a line over the limit
 *    is an error, and no message ever contains the line's text;
 *  - a min_count > 1 with input that has no counts (plain list, plaintext) is
 *    an error. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/nthash.h"

/* Longest line accepted, without its LF and CR. */
#define BR_INPUT_MAX_HASH_LINE 1024
#define BR_INPUT_MAX_PLAIN_LINE 8192

/* Called once per accepted key, the hash: BR_SHA1_LEN bytes for
 * password-sha1, BR_NT_LEN for password-ntlm. A non-zero return stops the
 * read and is returned (err then says "FILE:LINE: " and strerror of a
 * negative code). */
typedef int (*br_key_cb)(void *ctx, const uint8_t *hash);
/* The same with the line's count (0 for a line without one). */
typedef int (*br_key_count_cb)(void *ctx, const uint8_t *hash, uint64_t count);

/* Called now and then (about every 64 KiB to 1 MiB of input) while reading,
 * and once at the end of a successful read with bytes_done of this call;
 * bytes_total is 0 when unknown (stdin, pipes). */
typedef void (*br_progress_cb)(void *ctx, uint64_t bytes_done, uint64_t bytes_total);

typedef struct br_input_opts {
    uint32_t kind;  /* BR_KIND_PASSWORD_SHA1 (also 0) or BR_KIND_PASSWORD_NTLM (filter_file.h) */
    bool plaintext; /* lines are passwords, not hashes */
    uint64_t min_count; /* keep lines with count >= min_count (0 and 1 mean: all counted ones) */
    /* An offline filter's build: every input must have counts (a plain list
     * or plaintext is an error), a count over max_count (0: no limit) is a
     * "FILE:LINE:" error, and count_cb (when set) gets each key instead of
     * cb, with cb's ctx. */
    bool need_counts;
    uint64_t max_count;
    br_key_count_cb count_cb;
    br_progress_cb progress;
    void *progress_ctx;
} br_input_opts;

typedef struct br_input_stats {
    uint64_t files;         /* files read (1 for a single file) */
    uint64_t lines;         /* lines seen, blank ones included */
    uint64_t keys;          /* keys passed to the callback */
    uint64_t skipped_zero;  /* count-0 lines (padding) */
    uint64_t skipped_min;   /* lines under min_count */
    uint64_t bytes;         /* input bytes read */
    uint64_t ignored_files; /* files in a directory tree that are not prefix files */
} br_input_stats;

/* Total size in bytes of what br_input_read would read at path (a file's
 * size, the sum of a directory's prefix files, compressed files as stored),
 * or 0 when unknown (stdin, pipes). */
uint64_t br_input_size(const char *path);

/* Read one input (file, directory, or "-") and pass every key to cb (NULL:
 * only check and count). A directory's prefix files are read in ascending
 * prefix order; two names for one prefix (abcde.txt, ABCDE.txt.gz, AB/ABCDE.txt)
 * are an error. -EINVAL for a kind other than the two password kinds;
 * -ENOSYS when password-ntlm plaintext cannot be hashed (no MD4, nthash.h).
 * The stats are added to (not reset), so one struct can sum several inputs;
 * on an error they hold what was read up to it. opts NULL: all defaults. */
int br_input_read(const char *path, const br_input_opts *opts, br_key_cb cb, void *cb_ctx,
                  br_input_stats *stats, br_error *err);
