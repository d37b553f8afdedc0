/* SPDX-License-Identifier: MIT */
/* breachd.conf: libinih does the structure, a line reader of ours keeps the
 * line numbers and the raw text.
 *
 * Why a reader (ini_parse_stream) instead of ini_parse_file: libinih's
 * handler is not told the line number (INI_HANDLER_LINENO is fixed when the
 * library is built, and Debian's libinih1 is built without it, so defining
 * it here would change the callback ABI), and its other build-time choices
 * would silently change what a line means. Measured on Debian 12's libinih
 * r55:
 *   - "k = 5s ; note" gives the value "5s" (inline ';' comments are on);
 *   - an indented line after a key continues that key's value (multi-line
 *     values are on);
 *   - a line over 199 bytes is cut, the handler gets the cut value, and the
 *     rest is parsed as a line of its own;
 *   - "[section] junk" is taken as "[section]".
 * breachd.conf(5) says a comment is a whole line, so the reader hands libinih only
 * what cannot be misread: blank lines for blank and comment lines, a checked
 * "[section]", and "key=" for a key line, whose value the handler then takes
 * verbatim from the raw line the reader kept. libinih tracks the section and
 * calls the handler; the line number is the reader's count at that moment
 * (libinih calls the handler before it reads the next line).
 *
 * This file: the reader, finding a key in the table and the load; the
 * table of keys is conf_schema.c, the parsers of their values
 * conf_values.c, the questions asked of a loaded configuration
 * conf_access.c. */
#include <errno.h>
#include <stdarg.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "core/br_assert.h"
#include "conf_schema.h"
#include "dns_conf.h"

#define MAX_RAW_LINE 16384

/* ---- the parse ----------------------------------------------------------------- */

typedef struct parse_state {
    FILE *f;
    const char *name; /* file name for messages */
    breachd_config *cfg;
    br_error *err;
    char *raw; /* the current line as read (getline buffer) */
    size_t raw_cap;
    unsigned lineno;   /* of the line in raw */
    const char *value; /* key line: its value, trimmed, inside raw */
    unsigned *seen;    /* line where each key was set, 0 = not yet */
    int rc;            /* first failure, 0 while none */
    int read_errno;
} parse_state;

static int fail_line(parse_state *st, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_line(parse_state *st, int code, const char *fmt, ...)
{
    char msg[sizeof(st->err->text)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    st->rc = code;
    return br_error_set(st->err, code, "%s:%u: %s", st->name, st->lineno, msg);
}

/* A section breachd does not use: [dns] is libbreachd-dns's (breachd.conf(5),
 * "THE [dns] SECTION"). breachd checks its keys with the library's code
 * (dns_key), so that --check-config refuses what a resolver would. */
static const char foreign_section[] = "dns";

static bool known_section(const char *s, size_t len)
{
    if (len == strlen(foreign_section) && memcmp(s, foreign_section, len) == 0)
        return true;
    for (size_t i = 0; i < bd_conf_n_keys; i++)
        if (strlen(bd_conf_keys[i].section) == len && memcmp(bd_conf_keys[i].section, s, len) == 0)
            return true;
    return false;
}

/* Classify the raw line and put what libinih may see into buf (num bytes). */
static int feed_line(parse_state *st, char *buf, int num)
{
    char *line = st->raw;
    st->value = NULL;
    if (st->lineno == 1 && strncmp(line, "\xEF\xBB\xBF", 3) == 0)
        line += 3;
    char *s = skip_blanks(line);

    if (*s == '\0' || *s == '#' || *s == ';') {
        snprintf(buf, (size_t)num, "\n");
        return 0;
    }
    if (*s == '[') {
        rstrip_blanks(s);
        size_t len = strlen(s);
        char *close = strchr(s, ']');
        if (!close)
            return fail_line(st, -EINVAL, "section line without a closing ]");
        if (close != s + len - 1)
            return fail_line(st, -EINVAL,
                             "text after the section's ] (a comment must be on a "
                             "line of its own)");
        *close = '\0';
        if (!known_section(s + 1, len - 2)) {
            char expected[256];
            bd_conf_sections_text(expected, sizeof(expected));
            return fail_line(st, -EINVAL, "unknown section [%.64s]: expected %s", s + 1, expected);
        }
        snprintf(buf, (size_t)num, "[%s]\n", s + 1);
        return 0;
    }

    char *eq = strchr(s, '=');
    char *colon = strchr(s, ':');
    if (!eq || (colon && colon < eq))
        return fail_line(st, -EINVAL,
                         "expected \"key = value\", \"[section]\" or a comment "
                         "line starting with # or ;");
    *eq = '\0';
    rstrip_blanks(s);
    if (!*s)
        return fail_line(st, -EINVAL, "missing key name before =");
    size_t name_len = strlen(s);
    if (name_len > 64 || strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789_.-") != name_len) {
        char q[100];
        bd_conf_quote_value(q, sizeof(q), s);
        return fail_line(st, -EINVAL, "bad key name %s", q);
    }
    char *value = skip_blanks(eq + 1);
    rstrip_blanks(value);
    st->value = value;
    /* Only "key=" goes to libinih: the value comes from st->value. */
    if (name_len + 3 > (size_t)num)
        return fail_line(st, -EINVAL, "key name too long");
    snprintf(buf, (size_t)num, "%s=\n", s);
    return 0;
}

static char *ini_reader_fn(char *buf, int num, void *stream)
{
    parse_state *st = stream;
    if (st->rc < 0)
        return NULL;
    if (br_fails_assert(num >= 80)) { /* libinih's INI_MAX_LINE, 200 unless built otherwise */
        fail_line(st, -EINVAL, "internal error: libinih's line buffer is too small");
        return NULL;
    }
    errno = 0;
    ssize_t n = getline(&st->raw, &st->raw_cap, st->f);
    if (n < 0) {
        if (ferror(st->f))
            st->read_errno = errno ? errno : EIO;
        return NULL;
    }
    st->lineno++;
    if (memchr(st->raw, '\0', (size_t)n)) {
        fail_line(st, -EINVAL, "NUL byte in the line");
        return NULL;
    }
    if (n > 0 && st->raw[n - 1] == '\n')
        st->raw[--n] = '\0';
    if (n > 0 && st->raw[n - 1] == '\r')
        st->raw[--n] = '\0';
    if (n > MAX_RAW_LINE) {
        fail_line(st, -EINVAL, "line too long (more than %d bytes)", MAX_RAW_LINE);
        return NULL;
    }
    if (feed_line(st, buf, num) < 0)
        return NULL;
    return buf;
}

/* Edit distance of two short names (insertions, deletions, substitutions). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[65];
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            best = BR_MIN(best, up + 1);
            best = BR_MIN(best, row[j - 1] + 1);
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The key of [section] closest to a misspelt name, if it is close (at most
 * 2 edits, and fewer than half the name). */
static const char *closest_key(const char *section, const char *name)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < bd_conf_n_keys; i++) {
        if (strcmp(bd_conf_keys[i].section, section))
            continue;
        size_t d = edit_distance(name, bd_conf_keys[i].name);
        if (d < best_d && d * 2 < strlen(name)) {
            best_d = d;
            best = bd_conf_keys[i].name;
        }
    }
    return best;
}

/* A [dns] key, checked by libbreachd-dns's code with the same message as
 * the library gives ("FILE:LINE: [dns] KEY: what"). */
static int dns_key(parse_state *st, const char *name)
{
    br_error why = {{0}};
    if (bdns_conf_key(st->cfg->dns, name, st->value, &why) < 0) {
        fail_line(st, -EINVAL, "[%s] %s: %s", foreign_section, name, why.text);
        return 0;
    }
    return 1;
}

static int ini_handler_fn(void *user, const char *section, const char *name, const char *ignored)
{
    parse_state *st = user;
    (void)ignored;
    if (st->rc < 0)
        return 0;
    if (br_fails_assert(st->value)) {
        fail_line(st, -EINVAL, "internal error: libinih and the reader disagree");
        return 0;
    }
    if (!*section) {
        fail_line(st, -EINVAL, "%s: key outside a section (put it under its [section])", name);
        return 0;
    }
    if (strcmp(section, foreign_section) == 0)
        return dns_key(st, name);
    size_t k = bd_conf_n_keys;
    for (size_t i = 0; i < bd_conf_n_keys; i++)
        if (strcmp(bd_conf_keys[i].section, section) == 0 &&
            strcmp(bd_conf_keys[i].name, name) == 0) {
            k = i;
            break;
        }
    if (k == bd_conf_n_keys) {
        const char *elsewhere = NULL;
        for (size_t i = 0; i < bd_conf_n_keys; i++)
            if (strcmp(bd_conf_keys[i].name, name) == 0) {
                elsewhere = bd_conf_keys[i].section;
                break;
            }
        const char *near = elsewhere ? NULL : closest_key(section, name);
        if (elsewhere)
            fail_line(st, -EINVAL, "[%s] %s: unknown key (%s is a key of [%s])", section, name,
                      name, elsewhere);
        else if (near)
            fail_line(st, -EINVAL, "[%s] %s: unknown key (did you mean %s?)", section, name, near);
        else
            fail_line(st, -EINVAL, "[%s] %s: unknown key", section, name);
        return 0;
    }
    if (st->seen[k]) {
        fail_line(st, -EINVAL, "[%s] %s: duplicate key (first set on line %u)", section, name,
                  st->seen[k]);
        return 0;
    }
    st->seen[k] = st->lineno;

    const char *v = st->value;
    for (const char *p = v; *p; p++)
        if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f) {
            fail_line(st, -EINVAL, "[%s] %s: control character in the value", section, name);
            return 0;
        }
    br_error why = {{0}};
    int rc = bd_conf_apply(st->cfg, &bd_conf_keys[k], v, &why);
    if (rc == -ENOMEM) {
        st->rc = rc;
        br_error_set(st->err, rc, "%s: out of memory", st->name);
        return 0;
    }
    if (rc < 0) {
        /* An inline comment is part of the value (breachd.conf(5)): say so. */
        bool inline_comment = false;
        for (const char *p = v; *p && !inline_comment; p++)
            inline_comment = is_blank(p[0]) && (p[1] == '#' || p[1] == ';');
        fail_line(st, -EINVAL, "[%s] %s: %s%s", section, name, why.text,
                  inline_comment ? " (a comment must be on a line of its own)" : "");
        return 0;
    }
    return 1;
}

int breachd_config_load_stream(FILE *f, const char *name, breachd_config **out, br_error *err)
{
    *out = NULL;
    _cleanup_(breachd_config_freep) breachd_config *c = NULL;
    int rc = breachd_config_defaults(&c);
    if (rc < 0)
        return br_error_set(err, rc, "%s: out of memory", name);
    if (bd_conf_set_str(&c->path, name) < 0)
        return br_error_set(err, -ENOMEM, "%s: out of memory", name);

    _cleanup_free_ unsigned *seen = calloc(bd_conf_n_keys, sizeof(*seen));
    if (!seen)
        return br_error_set(err, -ENOMEM, "%s: out of memory", name);
    parse_state st = {.f = f, .name = name, .cfg = c, .err = err, .seen = seen};
    int r = ini_parse_stream(ini_reader_fn, &st, ini_handler_fn, &st);
    free(st.raw);
    if (st.rc < 0)
        return st.rc;
    if (st.read_errno)
        return br_error_set(err, -st.read_errno, "%s: read error: %s", name,
                            strerror(st.read_errno));
    if (r == -2)
        return br_error_set(err, -ENOMEM, "%s: out of memory", name);
    if (r != 0)
        return br_error_set(err, -EINVAL, "%s:%d: cannot parse this line", name, r);
    c->key_lines = BR_TAKE_PTR(seen);
    *out = BR_TAKE_PTR(c);
    return 0;
}

static void fclosep(FILE **f)
{
    if (*f)
        fclose(*f);
}

int breachd_config_load(const char *path, breachd_config **out, br_error *err)
{
    *out = NULL;
    _cleanup_(fclosep) FILE *f = fopen(path, "re");
    if (!f)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) < 0)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return br_error_set(err, -EISDIR, "%s: is a directory", path);
    return breachd_config_load_stream(f, path, out, err);
}
