/* SPDX-License-Identifier: MIT */
/* breachctl filter info --force: what the header of a file that failed its
 * checks says, as stored (br_filter_header_peek), every value marked
 * unverified; the fields past the end of a short file are named as
 * missing. Text fields are printed with every byte outside printable ASCII
 * escaped. See filter_info.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "breachctl.h"
#include "filter/filter_file.h"
#include "filter_info.h"
#include "core/hash.h"
#include "core/util.h"

#define LABEL "unverified %-21s "
#define PLAIN "%-32s "

static const char *const field_names[BR_FILTER_FIELDS] = {
    [BR_FIELD_MAGIC] = "magic",
    [BR_FIELD_VERSION] = "format version",
    [BR_FIELD_HEADER_SIZE] = "header size",
    [BR_FIELD_KIND] = "kind",
    [BR_FIELD_ALGORITHM] = "algorithm",
    [BR_FIELD_KEY_ENCODING] = "key encoding",
    [BR_FIELD_KEY_ENCODING_VERSION] = "key encoding version",
    [BR_FIELD_GENERATION] = "generation",
    [BR_FIELD_BUILD_TIME] = "build time",
    [BR_FIELD_KEY_COUNT] = "keys",
    [BR_FIELD_PAYLOAD_OFFSET] = "payload offset",
    [BR_FIELD_PAYLOAD_SIZE] = "payload size",
    [BR_FIELD_PARAMS] = "params",
    [BR_FIELD_SOURCE] = "source",
    [BR_FIELD_BODY_SHA256] = "body sha256",
    [BR_FIELD_HEADER_SHA256] = "header sha256",
};

/* "text" with every byte outside printable ASCII as \xHH. */
static void quoted(const uint8_t *s, size_t len)
{
    putchar('"');
    for (size_t i = 0; i < len; i++) {
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\')
            putchar(s[i]);
        else
            printf("\\x%02X", s[i]);
    }
    putchar('"');
}

/* Hex, 32 bytes a line. */
static void hex_line(const char *label, const uint8_t *d, size_t len)
{
    char hex[2 * 32 + 1];
    for (size_t i = 0; i < len; i += 32) {
        br_hex_encode_upper(d + i, BR_MIN(len - i, (size_t)32), hex);
        if (i == 0)
            printf(LABEL "%s\n", label, hex);
        else
            printf(PLAIN "%s\n", "", hex);
    }
}

/* NAME (N) for a known code, "N (unknown)" otherwise. */
static void code_line(const char *label, uint32_t code, const char *name)
{
    if (name)
        printf(LABEL "%s (%" PRIu32 ")\n", label, name, code);
    else
        printf(LABEL "%" PRIu32 " (unknown)\n", label, code);
}

static void time_line(int64_t t)
{
    char when[64];
    struct tm tm;
    time_t tt = (time_t)t;
    /* Years 1970 to 9999: anything else is not a build time. */
    if (t >= 0 && t < INT64_C(253402300800) && gmtime_r(&tt, &tm) &&
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
        printf(LABEL "%s (%" PRId64 ")\n", "build time:", when, t);
    else
        printf(LABEL "%" PRId64 " (not a time this format writes)\n", "build time:", t);
}

static bool has(const br_filter_peek *p, br_filter_field f)
{
    return p->present & (1u << f);
}

/* The fields that decode as numbers and names. */
static void print_codes(const br_filter_peek *p)
{
    const br_filter_header *h = &p->h;
    if (has(p, BR_FIELD_VERSION))
        printf(LABEL "%" PRIu32 "\n", "format version:", h->version);
    if (has(p, BR_FIELD_HEADER_SIZE))
        printf(LABEL "%" PRIu32 "\n", "header size:", h->header_size);
    if (has(p, BR_FIELD_KIND))
        code_line("kind:", h->kind, br_filter_kind_name(h->kind));
    if (has(p, BR_FIELD_ALGORITHM))
        code_line("algorithm:", h->algorithm, br_filter_algorithm_name(h->algorithm));
    if (has(p, BR_FIELD_KEY_ENCODING))
        code_line("key encoding:", h->key_encoding, br_key_encoding_name(h->key_encoding));
    if (has(p, BR_FIELD_KEY_ENCODING_VERSION))
        printf(LABEL "%" PRIu32 "\n", "key encoding version:", h->key_encoding_version);
    if (has(p, BR_FIELD_GENERATION))
        printf(LABEL "%" PRIu64 "\n", "generation:", h->generation);
    if (has(p, BR_FIELD_BUILD_TIME))
        time_line(h->build_time);
    if (has(p, BR_FIELD_KEY_COUNT))
        printf(LABEL "%" PRIu64 "\n", "keys:", h->key_count);
    if (has(p, BR_FIELD_PAYLOAD_OFFSET))
        printf(LABEL "%" PRIu64 "\n", "payload offset:", h->payload_offset);
    if (has(p, BR_FIELD_PAYLOAD_SIZE))
        printf(LABEL "%" PRIu64 " bytes\n", "payload size:", h->payload_size);
}

/* The rest: bytes, text and checksums. */
static void print_bytes(const br_filter_peek *p)
{
    const br_filter_header *h = &p->h;
    if (has(p, BR_FIELD_PARAMS))
        hex_line("params:", h->params, sizeof(h->params));
    if (has(p, BR_FIELD_SOURCE)) {
        printf(LABEL, "source:");
        quoted((const uint8_t *)h->source, strnlen(h->source, sizeof(h->source)));
        putchar('\n');
    }
    if (has(p, BR_FIELD_BODY_SHA256))
        hex_line("body sha256:", h->body_sha256, sizeof(h->body_sha256));
    if (has(p, BR_FIELD_HEADER_SHA256)) {
        hex_line("header sha256:", h->header_sha256, sizeof(h->header_sha256));
        printf(PLAIN "%s\n", "",
               p->header_sum_ok ? "(matches the header's bytes)"
                                : "(does NOT match the header's bytes: the header is damaged)");
    }
}

/* The first header bytes of path into raw; their number, or -errno. */
static ssize_t read_head(const char *path, uint8_t raw[BR_FILTER_HEADER_SIZE], uint64_t *size)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return -errno;
    *size = (uint64_t)st.st_size;
    ssize_t n = pread(fd, raw, BR_FILTER_HEADER_SIZE, 0);
    return n < 0 ? -errno : n;
}

static void print_unverified(const char *path, const char *why, const br_filter_peek *p,
                             const uint8_t *raw, size_t n, uint64_t size)
{
    printf("UNVERIFIED: this file failed its checks. What its header says follows, as\n"
           "stored: none of it can be trusted.\n");
    printf(PLAIN "%s\n", "reason:", why);
    printf(PLAIN "%s\n", "file:", path);
    printf(PLAIN "%" PRIu64 " bytes\n", "file size:", size);
    if (has(p, BR_FIELD_MAGIC)) {
        printf(LABEL, "magic:");
        quoted(p->magic, sizeof(p->magic));
        puts(p->magic_ok ? " (a breachd filter file)" : " (not a breachd filter file)");
    } else if (n > 0) {
        printf(PLAIN, "first bytes:");
        quoted(raw, n);
        puts(" (not a breachd filter file)");
    }
    print_codes(p);
    print_bytes(p);
    /* The fields are in file order: those missing are the last ones. */
    for (unsigned f = 0; f < BR_FILTER_FIELDS; f++) {
        if (!has(p, (br_filter_field)f)) {
            printf(PLAIN "%s%s (the file holds %zu of the header's %d bytes)\n",
                   "missing (past the end):", field_names[f],
                   f + 1 < BR_FILTER_FIELDS ? " and every field after it" : "", n,
                   BR_FILTER_HEADER_SIZE);
            break;
        }
    }
}

int filter_info_refused(const char *path, bool force, int r, const br_error *err)
{
    const char *why = err->text[0] ? err->text : strerror(-r);
    ctl_err("%s", why);
    if (!force)
        return EXIT_ERROR;
    uint8_t raw[BR_FILTER_HEADER_SIZE];
    uint64_t size = 0;
    ssize_t n = read_head(path, raw, &size);
    if (n < 0) {
        ctl_err("filter info --force: %s: %s", path, strerror((int)-n));
        return EXIT_ERROR;
    }
    br_filter_peek p;
    br_filter_header_peek(raw, (size_t)n, &p);
    print_unverified(path, why, &p, raw, (size_t)n, size);
    return EXIT_ERROR;
}
