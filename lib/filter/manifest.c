/* SPDX-License-Identifier: MIT */
/* The publisher's manifest: format, parse, sign, verify, plan (manifest.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/util.h"
#include "filter_file.h"
#include "manifest.h"

void br_manifest_fini(br_manifest *m)
{
    free(m->deltas);
    free(m->feeds);
    memset(m, 0, sizeof(*m));
}

static bool name_ok(const char *s, bool feed)
{
    size_t n = strlen(s);
    if (n == 0 || n > BR_MANIFEST_NAME_MAX || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool ok = feed ? (islower(c) || isdigit(c) || c == '_')
                       : (isalnum(c) || c == '.' || c == '_' || c == '-');
        if (!ok)
            return false;
    }
    return true;
}

bool br_manifest_feed_name_ok(const char *name)
{
    return name_ok(name, true);
}

/* ---- writing ---- */

static void put_file(FILE *f, const char *what, const br_manifest_file *x)
{
    char hex[65];
    br_hex_encode_upper(x->sha256, 32, hex);
    fprintf(f, "%s %s %" PRIu64 " %s %" PRIu64 "\n", what, x->name, x->generation, hex, x->bytes);
}

int br_manifest_format(const br_manifest *m, char **text, size_t *len)
{
    *text = NULL;
    FILE *f = open_memstream(text, len);
    if (!f)
        return -ENOMEM;
    fprintf(f, "breachd-manifest 1\nkind %s\ngeneration %" PRIu64 "\npublished %" PRId64 "\n",
            br_filter_kind_name(m->kind), m->generation, m->published);
    if (m->cycle_s > 0)
        fprintf(f, "cycle %" PRId64 "\n", m->cycle_s);
    put_file(f, "base", &m->base);
    for (size_t i = 0; i < m->n_deltas; i++)
        put_file(f, "delta", &m->deltas[i]);
    for (size_t i = 0; i < m->n_feeds; i++) {
        const br_manifest_feed *x = &m->feeds[i];
        fprintf(f, "feed %s %" PRId64 " %" PRIu64 " %s%s%s\n", x->name, x->last_success, x->entries,
                x->held ? "held" : "ok", x->held ? " " : "", x->held ? x->reason : "");
    }
    if (fclose(f) != 0) {
        free(*text);
        *text = NULL;
        return -ENOMEM;
    }
    return 0;
}

/* ---- parsing ---- */

typedef struct line_ctx {
    br_manifest *m;
    unsigned line;
    bool have[4]; /* kind, generation, published, base */
} line_ctx;

static int bad(const line_ctx *c, br_error *err, const char *what)
{
    return br_error_set(err, -EINVAL, "manifest:%u: %s", c->line, what);
}

static int parse_file(line_ctx *c, const char *rest, br_manifest_file *x, br_error *err)
{
    char hex[80];
    int used = 0;
    if (sscanf(rest, "%64s %" SCNu64 " %79s %" SCNu64 "%n", x->name, &x->generation, hex, &x->bytes,
               &used) != 4 ||
        rest[used] != '\0')
        return bad(c, err, "expected NAME GENERATION SHA256 BYTES");
    if (!name_ok(x->name, false))
        return bad(c, err, "file name: [A-Za-z0-9._-], not starting with '.', at most 64");
    if (strlen(hex) != 64 || !br_hex_decode(hex, 32, x->sha256))
        return bad(c, err, "SHA-256: expected 64 hex digits");
    return 0;
}

static int parse_feed(line_ctx *c, const char *rest, br_error *err)
{
    br_manifest_feed *v = realloc(c->m->feeds, (c->m->n_feeds + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    c->m->feeds = v;
    br_manifest_feed *x = &v[c->m->n_feeds];
    memset(x, 0, sizeof(*x));
    char state[8];
    int used = 0;
    if (sscanf(rest, "%64s %" SCNd64 " %" SCNu64 " %7s%n", x->name, &x->last_success, &x->entries,
               state, &used) != 4)
        return bad(c, err, "expected feed NAME LAST_SUCCESS ENTRIES ok|held [REASON]");
    if (!br_manifest_feed_name_ok(x->name))
        return bad(c, err, "feed name: [a-z0-9_], at most 64");
    x->held = strcmp(state, "held") == 0;
    if (!x->held && (strcmp(state, "ok") != 0 || rest[used]))
        return bad(c, err, "feed state: ok, or held and a reason");
    if (x->held)
        snprintf(x->reason, sizeof(x->reason), "%s", rest + used + (rest[used] == ' '));
    c->m->n_feeds++;
    return 0;
}

static int parse_line(line_ctx *c, char *s, br_error *err)
{
    char *sp = strchr(s, ' ');
    if (!sp)
        return bad(c, err, "expected KEYWORD VALUE");
    *sp = '\0';
    const char *rest = sp + 1;
    br_manifest *m = c->m;
    char *end = NULL;
    if (strcmp(s, "kind") == 0) {
        br_filter_kind kind;
        if (br_filter_kind_from_name(rest, &kind) < 0)
            return bad(c, err, "kind: expected url-sha256, password-sha1 or password-ntlm");
        m->kind = kind;
        c->have[0] = true;
    } else if (strcmp(s, "generation") == 0 || strcmp(s, "published") == 0 ||
               strcmp(s, "cycle") == 0) {
        errno = 0;
        unsigned long long v = strtoull(rest, &end, 10);
        if (errno || end == rest || *end || !isdigit((unsigned char)rest[0]) || v > INT64_MAX)
            return bad(c, err, "expected a number");
        if (s[0] == 'c') { /* optional */
            m->cycle_s = (int64_t)v;
            return 0;
        }
        bool gen = s[0] == 'g';
        if (gen)
            m->generation = v;
        else
            m->published = (int64_t)v;
        c->have[gen ? 1 : 2] = true;
    } else if (strcmp(s, "base") == 0) {
        if (c->have[3])
            return bad(c, err, "a second base");
        c->have[3] = true;
        return parse_file(c, rest, &m->base, err);
    } else if (strcmp(s, "delta") == 0) {
        br_manifest_file *v = realloc(m->deltas, (m->n_deltas + 1) * sizeof(*v));
        if (!v)
            return -ENOMEM;
        m->deltas = v;
        memset(&v[m->n_deltas], 0, sizeof(*v));
        int r = parse_file(c, rest, &v[m->n_deltas], err);
        if (r < 0)
            return r;
        uint64_t want = (m->n_deltas ? v[m->n_deltas - 1].generation : m->base.generation) + 1;
        if (!c->have[3] || v[m->n_deltas].generation != want)
            return br_error_set(err, -EINVAL,
                                "manifest:%u: delta generation %" PRIu64 ", expected %" PRIu64
                                " (a chain with a gap, or a delta before the base)",
                                c->line, v[m->n_deltas].generation, want);
        m->n_deltas++;
    } else if (strcmp(s, "feed") == 0) {
        return parse_feed(c, rest, err);
    } else {
        return bad(c, err, "unknown keyword");
    }
    return 0;
}

static int parse_lines(line_ctx *c, char *buf, br_error *err)
{
    char *save = NULL;
    for (char *s = strtok_r(buf, "\n", &save); s; s = strtok_r(NULL, "\n", &save)) {
        c->line++;
        int r = c->line == 1 ? (strcmp(s, "breachd-manifest 1") == 0
                                    ? 0
                                    : bad(c, err, "not a breachd manifest of version 1"))
                             : parse_line(c, s, err);
        if (r < 0)
            return r;
    }
    for (int i = 0; i < 4; i++)
        if (!c->have[i])
            return br_error_set(err, -EINVAL, "manifest: no %s line",
                                (const char *[]){"kind", "generation", "published", "base"}[i]);
    uint64_t last =
        c->m->n_deltas ? c->m->deltas[c->m->n_deltas - 1].generation : c->m->base.generation;
    if (last != c->m->generation)
        return br_error_set(err, -EINVAL,
                            "manifest: generation %" PRIu64 ", but its newest file is %" PRIu64,
                            c->m->generation, last);
    return 0;
}

int br_manifest_parse(const char *text, size_t len, br_manifest *m, br_error *err)
{
    memset(m, 0, sizeof(*m));
    if (len > BR_MANIFEST_MAX_BYTES || memchr(text, '\0', len) || (len && text[len - 1] != '\n'))
        return br_error_set(err, -EINVAL,
                            "manifest: not a text of at most 1 MiB ending in a newline");
    char *buf = malloc(len + 1);
    if (!buf)
        return -ENOMEM;
    memcpy(buf, text, len);
    buf[len] = '\0';
    line_ctx c = {.m = m};
    int r = parse_lines(&c, buf, err);
    free(buf);
    if (r < 0)
        br_manifest_fini(m);
    return r;
}

/* ---- signature ---- */

int br_manifest_sign(const br_sign_key *secret, const char *text, size_t len,
                     uint8_t sig[BR_MANIFEST_SIG_SIZE], br_error *err)
{
    memcpy(sig, BR_MANIFEST_SIG_MAGIC, 8);
    if (br_sign_key_id(secret, sig + 8) < 0)
        return br_error_set(err, -EIO, "reading the public half of the key failed (OpenSSL)");
    return br_sign_bytes(secret, text, len, sig + 8 + BR_KEY_ID_LEN, err);
}

int br_manifest_verify(const br_sign_key *pub, const char *text, size_t len, const uint8_t *sig,
                       size_t sig_len, br_error *err)
{
    if (sig_len != BR_MANIFEST_SIG_SIZE || memcmp(sig, BR_MANIFEST_SIG_MAGIC, 8) != 0)
        return br_error_set(err, -EINVAL, "manifest.sig: not a manifest signature (%zu bytes)",
                            sig_len);
    uint8_t id[BR_KEY_ID_LEN];
    if (br_sign_key_id(pub, id) < 0)
        return br_error_set(err, -EIO, "reading the public key failed (OpenSSL)");
    if (memcmp(id, sig + 8, BR_KEY_ID_LEN) != 0) {
        char hex[17];
        br_hex_encode_upper(sig + 8, 8, hex);
        return br_error_set(err, -EKEYREJECTED,
                            "manifest.sig: signed by another key (key id %s...), not by [urls] "
                            "pubkey",
                            hex);
    }
    if (br_verify_bytes(pub, text, len, sig + 8 + BR_KEY_ID_LEN) < 0)
        return br_error_set(err, -EKEYREJECTED,
                            "manifest.sig: the signature does not verify (a changed manifest)");
    return 0;
}

/* ---- what a follower fetches ---- */

int br_manifest_plan_for(const br_manifest *m, bool have_base, const uint8_t have_base_sha[32],
                         uint64_t have_generation, int64_t last_published, br_manifest_plan *plan,
                         br_error *err)
{
    memset(plan, 0, sizeof(*plan));
    if (have_base && m->generation < have_generation)
        return br_error_set(err, -ESTALE,
                            "manifest generation %" PRIu64 " is older than the %" PRIu64
                            " this host serves (a replayed manifest?)",
                            m->generation, have_generation);
    if (last_published >= 0 && m->published < last_published)
        return br_error_set(err, -ESTALE,
                            "manifest published at %" PRId64 ", before the one accepted at %" PRId64
                            " (a replayed manifest?)",
                            m->published, last_published);
    bool same_base = have_base && memcmp(have_base_sha, m->base.sha256, 32) == 0 &&
                     have_generation >= m->base.generation;
    if (!same_base) {
        plan->take_base = true;
        return 0;
    }
    /* the deltas are base+1, base+2, ...: the first one the host lacks */
    plan->first_delta = (size_t)(have_generation - m->base.generation);
    if (plan->first_delta > m->n_deltas) /* cannot be: generation >= have_generation */
        plan->first_delta = m->n_deltas;
    return 0;
}

/* ---- when a follower polls ---- */

int64_t br_manifest_next_poll_ms(const br_manifest_when *w)
{
    int64_t earliest = w->last_poll_ms + w->interval_ms;
    if (w->cycle_s <= 0 || w->published < 0) /* no period announced */
        return earliest;
    /* the first start after the last poll's, at most half a cycle early */
    int64_t c = w->cycle_s * 1000, lag = c / 6 + (c / 3) * w->lag_draw / 65535;
    earliest -= BR_MIN(w->interval_ms, c) / 2;
    int64_t d = earliest - (w->published * 1000 + lag), k = d / c; /* toward 0 */
    if (k * c < d)                                                 /* round up */
        k++;
    return earliest - d + k * c; /* the first start + lag at or after earliest */
}
