/* SPDX-License-Identifier: MIT */
/* GET /range/{prefix}[?mode=ntlm]: HIBP's answers (docs/upstream.md
 * "Serving the range API") from the resolver of the request's state, in the
 * client's own cache partition (http_range.h): the content coding chosen by
 * Accept-Encoding (gzip through zlib, brotli through libbrotlienc when the
 * build has it), the range set written out with HIBP's padding, entity tags
 * and the conditional checks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <zlib.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "config.h"
#include "core/hash.h"
#include "http_int.h"
#include "http_prep.h"
#include "http_range.h"
#include "log.h"
#include "range/range_format.h"
#include "server_types.h"
#include "core/random.h"
#include "core/util.h"

#if HAVE_BROTLI
#include <brotli/encode.h>
#endif

/* ---- content codings ---- */

#define GZIP_LEVEL 1     /* every padded answer is compressed anew: fast */
#define BROTLI_QUALITY 1 /* the same */

const char *bd_http_enc_name(bd_http_enc enc)
{
    return enc == BD_ENC_GZIP ? "gzip" : enc == BD_ENC_BR ? "br" : NULL;
}

/* The q value of one Accept-Encoding element's parameters (";q=0.5"); 1
 * without one. Only whether it is 0 matters. */
static bool q_positive(const char *params, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (params[i] != ';')
            continue;
        size_t j = i + 1;
        while (j < len && (params[j] == ' ' || params[j] == '\t'))
            j++;
        if (j + 1 < len && (params[j] == 'q' || params[j] == 'Q') && params[j + 1] == '=') {
            for (j += 2; j < len && params[j] != ';'; j++)
                if (params[j] >= '1' && params[j] <= '9')
                    return true;
            return false;
        }
    }
    return true;
}

typedef struct accept_state {
    int gzip, br, star; /* -1 not listed, 0 refused (q=0), 1 accepted */
} accept_state;

static void accept_element(accept_state *st, const char *e, size_t len)
{
    while (len && (*e == ' ' || *e == '\t')) {
        e++;
        len--;
    }
    size_t name = 0;
    while (name < len && e[name] != ';' && e[name] != ' ' && e[name] != '\t')
        name++;
    int ok = q_positive(e + name, len - name) ? 1 : 0;
    if ((name == 4 && !strncasecmp(e, "gzip", 4)) || (name == 6 && !strncasecmp(e, "x-gzip", 6)))
        st->gzip = ok;
    else if (name == 2 && !strncasecmp(e, "br", 2))
        st->br = ok;
    else if (name == 1 && e[0] == '*')
        st->star = ok;
}

bd_http_enc bd_http_pick_encoding(const char *accept, bool prefer_br)
{
    if (!accept)
        return BD_ENC_IDENTITY;
    accept_state st = {-1, -1, -1};
    for (const char *p = accept; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        accept_element(&st, p, len);
        p += len + (comma ? 1 : 0);
    }
    bool gzip = st.gzip == 1 || (st.gzip == -1 && st.star == 1);
    bool br = HAVE_BROTLI && (st.br == 1 || (st.br == -1 && st.star == 1));
    if (br && (prefer_br || !gzip))
        return BD_ENC_BR;
    return gzip ? BD_ENC_GZIP : BD_ENC_IDENTITY;
}

/* The largest output of bd_http_compress for len bytes with enc. */
static size_t bd_http_compress_bound(bd_http_enc enc, size_t len)
{
    if (enc == BD_ENC_GZIP)
        return compressBound((uLong)len) +
               32; /* the gzip header and trailer are larger than zlib's */
#if HAVE_BROTLI
    if (enc == BD_ENC_BR)
        return BrotliEncoderMaxCompressedSize(len);
#endif
    return len;
}

static int gzip_compress(const void *in, size_t len, void *out, size_t cap, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (deflateInit2(&z, GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    return rc == Z_STREAM_END ? 0 : -EIO;
}

/* Compress in (len bytes) with enc (gzip or br) into out (cap bytes, at
 * least the bound): 0 and *out_len, -EINVAL (identity, or brotli not built),
 * -ENOMEM or -EIO. */
static int bd_http_compress(bd_http_enc enc, const void *in, size_t len, void *out, size_t cap,
                            size_t *out_len)
{
    if (enc == BD_ENC_GZIP)
        return gzip_compress(in, len, out, cap, out_len);
#if HAVE_BROTLI
    if (enc == BD_ENC_BR) {
        size_t n = cap;
        if (!BrotliEncoderCompress(BROTLI_QUALITY, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, len, in,
                                   &n, out))
            return -EIO;
        *out_len = n;
        return 0;
    }
#endif
    return -EINVAL;
}

/* ---- padding ---- */

/* HIBP pads to a random total of 800 to 999 lines, and adds 10 to 209
 * random lines to a range that already holds about that many or more
 * (docs/upstream.md "Serving the range API"). */
size_t bd_http_pad_count(uint32_t n, uint32_t r)
{
    uint32_t extra = r % 200;
    size_t to_total = n < 800 + extra ? 800 + extra - n : 0;
    size_t appended = 10 + extra;
    return to_total > appended ? to_total : appended;
}

/* Padding digits, from the one source of randomness (core/random.h)
 * through a buffer refilled 4 KiB at a time (the loop's thread only): one
 * getrandom call for some hundred padding lines. Their number is drawn by
 * the caller. */
static uint8_t pad_pool[4096];
static size_t pad_left;

static void pad_random(uint8_t *out, size_t len)
{
    while (len > 0) {
        if (pad_left == 0) {
            if (br_random_bytes(pad_pool, sizeof(pad_pool)) < 0) {
                memset(out, 0, len); /* count-0 lines of zeros: still ignored */
                return;
            }
            pad_left = sizeof(pad_pool);
        }
        size_t n = len < pad_left ? len : pad_left;
        memcpy(out, pad_pool + sizeof(pad_pool) - pad_left, n);
        pad_left -= n;
        out += n;
        len -= n;
    }
}

/* ---- the body pool ----
 * Bodies are some 80 KB: a fresh malloc of that size is a fresh mmap, page
 * faults and an munmap per answer. Buffers are kept instead (the loop's
 * thread only), handed to evbuffers by reference and taken back when the
 * evbuffer is done with them. */

#define POOL_MAX 32
#define POOL_MIN_CAP ((size_t)128 << 10)

typedef struct pool_hdr {
    struct pool_hdr *next;
    size_t cap;
} pool_hdr;

static pool_hdr *pool_free;
static unsigned pool_count;

static pool_hdr *hdr_of(char *p)
{
    return (pool_hdr *)(void *)p - 1;
}

int bd_http_buf_get(size_t cap, bd_http_buf *b)
{
    pool_hdr **pp = &pool_free;
    while (*pp && (*pp)->cap < cap)
        pp = &(*pp)->next;
    pool_hdr *h = *pp;
    if (h) {
        *pp = h->next;
        pool_count--;
    } else {
        size_t want = cap < POOL_MIN_CAP ? POOL_MIN_CAP : (cap + 0xFFFF) & ~(size_t)0xFFFF;
        h = malloc(sizeof(*h) + want);
        if (!h)
            return -ENOMEM;
        h->cap = want;
    }
    h->next = NULL;
    b->p = (char *)(h + 1);
    b->cap = h->cap;
    b->len = 0;
    return 0;
}

static void pool_put_hdr(pool_hdr *h)
{
    if (pool_count >= POOL_MAX) {
        free(h);
        return;
    }
    h->next = pool_free;
    pool_free = h;
    pool_count++;
}

void bd_http_buf_put(bd_http_buf *b)
{
    if (b->p)
        pool_put_hdr(hdr_of(b->p));
    memset(b, 0, sizeof(*b));
}

static void buf_done(const void *data, size_t datalen, void *extra)
{
    (void)data;
    (void)datalen;
    pool_put_hdr(extra);
}

int bd_http_buf_give(bd_http_buf *b, struct evbuffer *out)
{
    int rc = 0;
    if (b->len == 0)
        bd_http_buf_put(b);
    else if (evbuffer_add_reference(out, b->p, b->len, buf_done, hdr_of(b->p)) < 0) {
        bd_http_buf_put(b);
        rc = -ENOMEM;
    }
    memset(b, 0, sizeof(*b));
    return rc;
}

/* ---- bodies ---- */

/* n_pad padding lines at out (room checked by the caller). */
static int put_padding(br_range_kind kind, size_t n_pad, bool body_empty, char *out, size_t *len)
{
    size_t rlen = br_range_pad_random_len(kind), line = 2 + br_range_pad_line_len(kind);
    enum { CHUNK = 256, RAND_MAX_LEN = 32 };
    uint8_t rnd[CHUNK * RAND_MAX_LEN];
    if (!rlen || rlen > RAND_MAX_LEN)
        return -EINVAL;
    char *p = out;
    for (size_t left = n_pad; left > 0;) {
        size_t k = left < CHUNK ? left : CHUNK;
        pad_random(rnd, k * rlen);
        size_t w = br_range_format_padding(kind, rnd, k, p, k * line);
        if (w != k * line)
            return -EINVAL;
        p += w;
        left -= k;
    }
    *len = (size_t)(p - out);
    /* after an empty body the first line has no CRLF before it */
    if (body_empty && *len >= 2) {
        memmove(out, out + 2, *len - 2);
        *len -= 2;
    }
    return 0;
}

/* The body of range set (value, len) of kind with n_pad padding lines, in a
 * buffer from the pool. 0, -EINVAL (not a count range set) or -ENOMEM. */
static int bd_http_body(br_range_kind kind, const uint8_t *value, size_t len, size_t n_pad,
                        bd_http_buf *b)
{
    uint32_t n;
    size_t max;
    int rc = br_range_format_size(kind, value, len, &n, &max);
    if (rc < 0)
        return rc;
    size_t pad_bytes = n_pad * (2 + br_range_pad_line_len(kind));
    if ((rc = bd_http_buf_get(max + pad_bytes, b)) < 0)
        return rc;
    size_t written = 0, padded = 0;
    rc = br_range_format(kind, value, len, b->p, b->cap, &written);
    if (rc == 0 && n_pad)
        rc = put_padding(kind, n_pad, written == 0, b->p + written, &padded);
    if (rc < 0) {
        bd_http_buf_put(b);
        return rc;
    }
    b->len = written + padded;
    return 0;
}

/* SHA-256 through a kept context: EVP's set-up per call costs more than
 * hashing the few bytes of validators. */
static int digest(const void *buf, size_t len, uint8_t out[BR_SHA256_LEN])
{
    static br_hasher *hasher;
    if (!hasher && !(hasher = br_hasher_new_sha256()))
        return br_sha256(buf, len, out);
    return br_hasher_digest(hasher, buf, len, out);
}

/* The entity tag core: the upstream's validators stand for the content
 * (the resolver revalidates with them and keeps the body on a 304), with the
 * resource and the range's size; without validators, the content itself. */
int bd_http_etag_core(br_range_kind kind, uint32_t prefix20, const br_range_answer *a, char out[33])
{
    uint8_t d[BR_SHA256_LEN];
    int rc;
    if (a->etag[0] || a->last_modified[0]) {
        char text[BR_RANGE_CACHE_VALIDATOR_MAX * 2 + 96];
        int n = snprintf(text, sizeof(text), "breachd-range-1 %d %05X %zu\n%s\n%s", (int)kind,
                         prefix20, a->len, a->etag, a->last_modified);
        size_t used = n < 0 ? 0 : (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1;
        rc = n < 0 ? -EIO : digest(text, used, d);
    } else {
        rc = digest(a->value, a->len, d);
    }
    if (rc < 0)
        return -EIO;
    br_hex_encode_upper(d, 16, out);
    return 0;
}

/* One entity tag of a list (without W/ and quotes, without a coding
 * suffix) against core. */
static bool tag_matches(const char *t, size_t len, const char *core)
{
    if (len >= 2 && (t[0] == 'W' || t[0] == 'w') && t[1] == '/') {
        t += 2;
        len -= 2;
    }
    if (len < 2 || t[0] != '"' || t[len - 1] != '"')
        return false;
    t++;
    len -= 2;
    size_t cl = strlen(core);
    if (len < cl || memcmp(t, core, cl) != 0)
        return false;
    const char *rest = t + cl;
    size_t rl = len - cl;
    return rl == 0 || (rl == 5 && !memcmp(rest, "-gzip", 5)) ||
           (rl == 3 && !memcmp(rest, "-br", 3));
}

bool bd_http_inm_matches(const char *inm, const char *core)
{
    for (const char *p = inm; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *s = p;
        if (*p == '*')
            return true;
        if (p[0] == 'W' && p[1] == '/')
            p += 2;
        if (*p == '"') {
            const char *close = strchr(p + 1, '"');
            p = close ? close + 1 : p + strlen(p);
        } else {
            while (*p && *p != ',')
                p++;
        }
        if (tag_matches(s, (size_t)(p - s), core))
            return true;
    }
    return false;
}

int64_t bd_http_parse_date(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = s ? strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm) : NULL;
    if (!end || *end)
        return -1;
    time_t t = timegm(&tm);
    return t == (time_t)-1 ? -1 : (int64_t)t;
}

/* ---- the range asked for ---- */

/* The request's range kind by its mode, as HIBP reads it: exactly
 * "mode=ntlm" selects NT hashes ([ntlm] upstream), anything else SHA-1. */
static br_range_kind kind_of(struct evhttp_request *req)
{
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    if (!query)
        return BR_RANGE_PASSWORD_SHA1;
    struct evkeyvalq kv = {0};
    br_range_kind kind = BR_RANGE_PASSWORD_SHA1;
    if (evhttp_parse_query_str(query, &kv) == 0) {
        /* the first "mode", as URLSearchParams.get() takes it */
        for (struct evkeyval *e = kv.tqh_first; e; e = e->next.tqe_next)
            if (!strcmp(e->key, "mode")) {
                if (!strcmp(e->value, "ntlm"))
                    kind = BR_RANGE_PASSWORD_NTLM;
                break;
            }
    }
    evhttp_clear_headers(&kv);
    return kind;
}

/* ---- the answer ---- */

static void answer_unknown(bd_http_job *j, const char *reason)
{
    int code = 502;
    const char *phrase = "Bad Gateway";
    if (!strcmp(reason, BR_REASON_TIMEOUT)) {
        code = 504;
        phrase = "Gateway Timeout";
    } else if (!strcmp(reason, BR_REASON_CIRCUIT_OPEN) || !strcmp(reason, BR_REASON_RATE_LIMITED) ||
               !strcmp(reason, BR_REASON_SHUTTING_DOWN)) {
        code = 503;
        phrase = "Service Unavailable";
        evhttp_add_header(evhttp_request_get_output_headers(j->req), "Retry-After", "10");
    }
    char text[128];
    snprintf(text, sizeof(text), "The range could not be had from the upstream (%s)", reason);
    bd_http_reply_text(j->http, j->req, code, phrase, text);
}

/* The validators and caching headers of an answer from a. */
typedef struct rep_meta {
    bd_prep_meta v; /* the version's, kept with its prepared body */
    char etag[48];  /* the representation's tag, quoted, W/ when padded */
    char cache_control[64];
} rep_meta;

/* The validators of a's version: the entity tag core, Last-Modified. */
static int version_meta(const bd_http_job *j, const br_range_answer *a, bd_prep_meta *v)
{
    if (bd_http_etag_core(j->kind, j->prefix20, a, v->core) < 0)
        return -EIO;
    v->lm[0] = '\0';
    v->lm_s = bd_http_parse_date(a->last_modified);
    if (v->lm_s >= 0) {
        struct tm tm;
        time_t t = (time_t)v->lm_s;
        gmtime_r(&t, &tm);
        if (!strftime(v->lm, sizeof(v->lm), "%a, %d %b %Y %H:%M:%S GMT", &tm))
            v->lm_s = -1;
    }
    return 0;
}

/* s (len bytes) at *p, moved past. */
static void put(char **p, const char *s, size_t len)
{
    memcpy(*p, s, len);
    *p += len;
}

/* This answer's own: its entity tag and Cache-Control, written out without
 * printf (its setup per call costs more than the few bytes). */
static void answer_meta(const br_range_answer *a, bool pad, bd_http_enc enc, rep_meta *m)
{
    char *p = m->etag;
    if (pad)
        put(&p, "W/", 2);
    put(&p, "\"", 1);
    put(&p, m->v.core, strlen(m->v.core));
    if (enc == BD_ENC_GZIP)
        put(&p, "-gzip", 5);
    else if (enc == BD_ENC_BR)
        put(&p, "-br", 3);
    put(&p, "\"", 2); /* with its NUL */
    /* The freshness the entry was given, not its age: the time a range was
     * fetched tells when someone asked for it (docs/privacy.md). */
    int64_t life = a->stale ? 0 : a->expires_at - a->fetched_at;
    uint64_t v = life > 0 ? (uint64_t)life : 0;
    char digits[24], *d = digits + sizeof(digits);
    do
        *--d = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    p = m->cache_control;
    if (pad)
        put(&p, "private, max-age=", 17);
    else
        put(&p, "public, max-age=", 16);
    put(&p, d, (size_t)(digits + sizeof(digits) - d));
    *p = '\0';
}

/* If-None-Match, else If-Modified-Since (RFC 9110 13.2.2). */
static bool not_modified(struct evhttp_request *req, const rep_meta *m)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *inm = evhttp_find_header(in, "If-None-Match");
    if (inm)
        return bd_http_inm_matches(inm, m->v.core);
    const char *ims = evhttp_find_header(in, "If-Modified-Since");
    if (!ims || m->v.lm_s < 0)
        return false;
    int64_t since = bd_http_parse_date(ims);
    return since >= 0 && m->v.lm_s <= since;
}

static void add_meta_headers(struct evhttp_request *req, const rep_meta *m)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Cache-Control", m->cache_control);
    evhttp_add_header(out, "ETag", m->etag);
    if (m->v.lm[0])
        evhttp_add_header(out, "Last-Modified", m->v.lm);
    evhttp_add_header(out, "Vary", "Accept-Encoding, Add-Padding");
}

/* The body, padded when asked, in the chosen coding, appended to out. */
static int make_body(const bd_http_job *j, const br_range_answer *a, bool pad, bd_http_enc enc,
                     struct evbuffer *out)
{
    size_t n_pad = 0;
    if (pad) {
        uint32_t n = 0, r = 0;
        br_range_format_size(j->kind, a->value, a->len, &n, NULL);
        if (br_random_bytes(&r, sizeof(r)) < 0)
            return -EIO;
        n_pad = bd_http_pad_count(n, r);
    }
    bd_http_buf plain, packed = {0};
    int rc = bd_http_body(j->kind, a->value, a->len, n_pad, &plain);
    if (rc < 0)
        return rc;
    if (enc == BD_ENC_IDENTITY)
        return bd_http_buf_give(&plain, out);
    rc = bd_http_buf_get(bd_http_compress_bound(enc, plain.len), &packed);
    if (rc == 0)
        rc = bd_http_compress(enc, plain.p, plain.len, packed.p, packed.cap, &packed.len);
    bd_http_buf_put(&plain);
    if (rc < 0) {
        bd_http_buf_put(&packed);
        return rc;
    }
    return bd_http_buf_give(&packed, out);
}

/* ---- prepared bodies (http_prep.h) ---- */

/* The identity body of a, formatted into fresh memory: 0, or -errno. */
static int format_plain(br_range_kind kind, const br_range_answer *a, char **out, size_t *len,
                        uint32_t *n_lines)
{
    size_t max;
    int rc = br_range_format_size(kind, a->value, a->len, n_lines, &max);
    if (rc < 0)
        return rc;
    char *p = malloc(max ? max : 1);
    if (!p)
        return -ENOMEM;
    if ((rc = br_range_format(kind, a->value, a->len, p, max, len)) < 0) {
        free(p);
        return rc;
    }
    *out = p;
    return 0;
}

/* The most prepared bodies may take, in all and per partition. */
static void prep_bounds(const bd_http_job *j, uint64_t *budget, uint64_t *share)
{
    const breachd_config *cfg = j->state->cfg;
    *budget = cfg->http.prepared_size;
    *share = *budget / 100 * cfg->cache.partition_share_pct;
}

/* Are bodies prepared ([http] prepared_size)? The most they may take, in
 * all and per partition. */
static bool prep_on(const bd_http_job *j)
{
    return j->http->prep && j->state->cfg->http.prepared_size > 0;
}

/* The key of j's range at a's version: 0, or -EIO. */
static int prep_key(const bd_http_job *j, const br_range_answer *a, bd_prep_key *key)
{
    *key = (bd_prep_key){.partition = j->partition,
                         .prefix20 = j->prefix20,
                         .kind = j->kind,
                         .fetched_at = a->fetched_at,
                         .len = a->len,
                         .etag = a->etag,
                         .last_modified = a->last_modified};
    /* the validators stand for the content; without them, its digest */
    if (!a->etag[0] && !a->last_modified[0])
        return bd_http_etag_core(j->kind, j->prefix20, a, key->core) < 0 ? -EIO : 0;
    return 0;
}

/* A new prepared entry for key with a's identity body (held: released by
 * the caller), or NULL: out of memory; the body is then made for this
 * answer alone. */
static bd_prepared *prepared_new(const bd_http_job *j, const br_range_answer *a,
                                 const bd_prep_key *key, const bd_prep_meta *v)
{
    bd_http_prep *t = j->http->prep;
    uint64_t budget, share;
    prep_bounds(j, &budget, &share);
    char *p;
    size_t len;
    uint32_t n;
    if (format_plain(j->kind, a, &p, &len, &n) < 0)
        return NULL;
    bd_prepared *e = bd_http_prep_add(t, key, v);
    if (!e) {
        free(p);
        return NULL;
    }
    if (bd_http_prep_set(t, e, BD_ENC_IDENTITY, p, len, n, budget, share) < 0) {
        bd_http_prep_release(e);
        return NULL;
    }
    return e;
}

/* e's body in coding enc, compressed once from its identity body. */
static int prepared_coded(const bd_http_job *j, bd_prepared *e, bd_http_enc enc)
{
    const char *plain, *have;
    size_t plain_len, len;
    if (bd_http_prep_body(e, (int)enc, &have, &len))
        return 0;
    if (!bd_http_prep_body(e, BD_ENC_IDENTITY, &plain, &plain_len))
        return -EINVAL;
    size_t cap = bd_http_compress_bound(enc, plain_len);
    char *p = malloc(cap ? cap : 1);
    if (!p)
        return -ENOMEM;
    int rc = bd_http_compress(enc, plain, plain_len, p, cap, &len);
    if (rc < 0) {
        free(p);
        return rc;
    }
    char *fit = realloc(p, len ? len : 1);
    uint64_t budget, share;
    prep_bounds(j, &budget, &share);
    return bd_http_prep_set(j->http->prep, e, (int)enc, fit ? fit : p, len, 0, budget, share);
}

/* The answer's body from e by reference: coded, or identity with this
 * answer's own padding after it (a padded coded body is made per answer). */
static int prepared_body(const bd_http_job *j, bd_prepared *e, bool pad, bd_http_enc enc,
                         struct evbuffer *out)
{
    if (enc != BD_ENC_IDENTITY) {
        int rc = prepared_coded(j, e, enc);
        return rc < 0 ? rc : bd_http_prep_give(e, (int)enc, out);
    }
    int rc = bd_http_prep_give(e, BD_ENC_IDENTITY, out);
    if (rc < 0 || !pad)
        return rc;
    const char *plain;
    size_t plain_len;
    uint32_t r = 0;
    (void)bd_http_prep_body(e, BD_ENC_IDENTITY, &plain, &plain_len);
    if (br_random_bytes(&r, sizeof(r)) < 0)
        return -EIO;
    size_t n_pad = bd_http_pad_count(bd_http_prep_lines(e), r);
    bd_http_buf b;
    if ((rc = bd_http_buf_get(n_pad * (2 + br_range_pad_line_len(j->kind)), &b)) < 0)
        return rc;
    if ((rc = put_padding(j->kind, n_pad, plain_len == 0, b.p, &b.len)) < 0) {
        bd_http_buf_put(&b);
        return rc;
    }
    return bd_http_buf_give(&b, out);
}

/* The body of the answer into out: from e, the prepared entry found, or
 * one prepared now when key is given, else made for this answer. */
static int answer_body(const bd_http_job *j, const br_range_answer *a, const rep_meta *m,
                       const bd_prep_key *key, bd_prepared *e, bool pad, bd_http_enc enc,
                       struct evbuffer *out)
{
    bd_prepared *made = !e && key ? prepared_new(j, a, key, &m->v) : NULL;
    if (!e && !made)
        return make_body(j, a, pad, enc, out);
    j->http->srv->counters.http_prepared += !made;
    int rc = prepared_body(j, e ? e : made, pad, enc, out);
    bd_http_prep_release(made);
    return rc;
}

/* The prepared entry of a's version (held), when bodies are prepared for
 * this answer (a padded coded body is made per answer); *key is set for
 * one to be prepared. NULL with *use: none yet. -EIO on a failed digest. */
static int prepared_find(const bd_http_job *j, const br_range_answer *a, bool pad, bd_http_enc enc,
                         bd_prep_key *key, bool *use, bd_prepared **e)
{
    *e = NULL;
    *use = prep_on(j) && !(pad && enc != BD_ENC_IDENTITY);
    if (!*use)
        return 0;
    if (prep_key(j, a, key) < 0)
        return -EIO;
    *e = bd_http_prep_find(j->http->prep, key);
    return 0;
}

/* The answer's validators: the prepared entry's, else made now. */
static int answer_meta_of(const bd_http_job *j, const br_range_answer *a, const bd_prepared *e,
                          bool pad, bd_http_enc enc, rep_meta *m)
{
    if (e)
        m->v = *bd_http_prep_meta(e);
    else if (version_meta(j, a, &m->v) < 0)
        return -EIO;
    answer_meta(a, pad, enc, m);
    return 0;
}

static void answer_fail(bd_http_job *j)
{
    bd_http_reply_text(j->http, j->req, 500, "Internal Server Error", "Internal Server Error");
}

/* 200 with the body, in a buffer sent whole. */
static void answer_ok(bd_http_job *j, const br_range_answer *a, const rep_meta *m,
                      const bd_prep_key *key, bd_prepared *e, bool pad, bd_http_enc enc)
{
    struct evhttp_request *req = j->req;
    struct evbuffer *body = evbuffer_new();
    /* it goes to the socket whole (evhttp moves its chains to the
     * connection's output): a prepared body's file segment stays one, to
     * be sent with sendfile, instead of being read into memory */
    if (body)
        evbuffer_set_flags(body, EVBUFFER_FLAG_DRAINS_TO_FD);
    if (!body || answer_body(j, a, m, key, e, pad, enc, body) < 0) {
        if (body)
            evbuffer_free(body);
        answer_fail(j);
        return;
    }
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Content-Type", "text/plain");
    if (enc != BD_ENC_IDENTITY)
        evhttp_add_header(out, "Content-Encoding", bd_http_enc_name(enc));
    bd_http_reply(j->http, req, 200, "OK", body);
    evbuffer_free(body);
}

static void answer_range(bd_http_job *j, const br_range_answer *a)
{
    struct evhttp_request *req = j->req;
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *ap = evhttp_find_header(in, "Add-Padding");
    bool pad = ap && !strcasecmp(ap, "true");
    bd_http_enc enc = bd_http_pick_encoding(evhttp_find_header(in, "Accept-Encoding"), false);
    bd_prep_key key;
    bool use;
    bd_prepared *e;
    rep_meta m;
    if (prepared_find(j, a, pad, enc, &key, &use, &e) < 0 ||
        answer_meta_of(j, a, e, pad, enc, &m) < 0) {
        bd_http_prep_release(e);
        answer_fail(j);
        return;
    }
    add_meta_headers(req, &m);
    if (not_modified(req, &m))
        bd_http_reply(j->http, req, 304, "Not Modified", NULL);
    else
        answer_ok(j, a, &m, use ? &key : NULL, e, pad, enc);
    bd_http_prep_release(e);
}

static void range_cb(void *ctx, const br_range_answer *a)
{
    bd_http_job *j = ctx;
    if (j->req) {
        if (a->reason)
            answer_unknown(j, a->reason);
        else
            answer_range(j, a);
    }
    bd_http_job_free(j);
}

/* ---- the fast path's answer (http_int.h) ---- */

typedef struct fast_job {
    bd_http_job j; /* not a waiting request: what the helpers above read */
    const char *date;
    bd_http_fast *out;
} fast_job;

/* "name: value\r\n" at *p, moved past; false when past end. */
static bool head_add(char **p, const char *end, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    if ((size_t)(end - *p) < nl + vl + 4)
        return false;
    put(p, name, nl);
    put(p, ": ", 2);
    put(p, value, vl);
    put(p, "\r\n", 2);
    return true;
}

/* The head answer_ok and evhttp write for a 200 of m with a body of len:
 * the headers in the order they are added (request_cb, add_meta_headers,
 * answer_ok, then evhttp's Date and Content-Length). */
static bool fast_head(const rep_meta *m, const char *date, size_t len, bd_http_fast *out)
{
    char *p = out->head, *end = out->head + sizeof(out->head);
    char n[24];
    snprintf(n, sizeof(n), "%zu", len);
    put(&p, "HTTP/1.1 200 OK\r\n", 17);
    bool ok = head_add(&p, end, "Access-Control-Allow-Origin", "*") &&
              head_add(&p, end, "Cache-Control", m->cache_control) &&
              head_add(&p, end, "ETag", m->etag) &&
              (!m->v.lm[0] || head_add(&p, end, "Last-Modified", m->v.lm)) &&
              head_add(&p, end, "Vary", "Accept-Encoding, Add-Padding") &&
              head_add(&p, end, "Content-Type", "text/plain") && head_add(&p, end, "Date", date) &&
              head_add(&p, end, "Content-Length", n) && end - p >= 2;
    if (!ok)
        return false;
    put(&p, "\r\n", 2);
    out->head_len = (size_t)(p - out->head);
    return true;
}

static bool fast_take(void *ctx, const br_range_answer *a)
{
    fast_job *f = ctx;
    bd_prep_key key;
    bd_prepared *e = NULL;
    rep_meta m;
    bool use;
    if (prepared_find(&f->j, a, false, BD_ENC_IDENTITY, &key, &use, &e) < 0 || !e) {
        bd_http_prep_release(e);
        return false;
    }
    m.v = *bd_http_prep_meta(e);
    answer_meta(a, false, BD_ENC_IDENTITY, &m);
    f->out->fd = bd_http_prep_file(e, &f->out->len);
    if (f->out->fd < 0 || f->out->len == 0 || !fast_head(&m, f->date, f->out->len, f->out)) {
        bd_http_prep_release(e);
        return false;
    }
    f->out->e = e;
    f->j.http->srv->counters.http_prepared++;
    return true;
}

bool bd_http_range_fast(bd_http *h, uint32_t partition, uint32_t prefix20, const char *date,
                        bd_http_fast *out)
{
    fast_job f = {.j = {.http = h,
                        .state = h->srv->state,
                        .kind = BR_RANGE_PASSWORD_SHA1,
                        .prefix20 = prefix20,
                        .partition = partition},
                  .date = date,
                  .out = out};
    if (!prep_on(&f.j))
        return false;
    return br_resolver_peek_range(h->srv->state->resolver, partition, BR_RANGE_PASSWORD_SHA1,
                                  prefix20, fast_take, &f) == 1;
}

/* ---- the request ---- */

void bd_http_range(bd_http *h, struct evhttp_request *req, const char *rest)
{
    /* HIBP's checks and texts: 5 characters, then hexadecimal */
    if (strlen(rest) != 5) {
        bd_http_reply_text(h, req, 400, "Bad Request", "The hash prefix was not in a valid format");
        return;
    }
    uint8_t bytes[3] = {0};
    char hex[6];
    memcpy(hex, rest, 5);
    hex[5] = '0';
    if (!br_hex_decode(hex, 3, bytes)) {
        bd_http_reply_text(h, req, 400, "Bad Request", "The hash prefix was not valid hexadecimal");
        return;
    }
    br_range_kind kind = kind_of(req);
    bd_http_job *j = bd_http_job_new(h, req);
    if (!j) {
        bd_http_reply_text(h, req, 503, "Service Unavailable", "out of memory");
        return;
    }
    j->kind = kind;
    j->prefix20 = br_range_prefix20(bytes);
    j->partition = bd_http_partition(h, req);
    int rc =
        br_resolver_resolve_range(j->state->resolver, j->partition, kind, j->prefix20, range_cb, j);
    if (rc < 0) {
        /* no callback: answer here */
        bd_http_reply_text(h, req, rc == -ENOMEM ? 503 : 500,
                           rc == -ENOMEM ? "Service Unavailable" : "Internal Server Error",
                           "The range could not be looked up");
        bd_http_job_free(j);
    }
}
