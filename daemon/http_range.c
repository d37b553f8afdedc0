/* SPDX-License-Identifier: MIT */
/* GET /range/{prefix}[?mode=ntlm]: HIBP's answers (docs/upstream.md
 * "Serving the range API") from the resolver of the request's state, in the
 * client's own cache partition. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/crypto.h>

#include "hash.h"
#include "http_int.h"
#include "log.h"
#include "range_format.h"
#include "server_types.h"

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
    } else if (!strcmp(reason, BR_REASON_CIRCUIT_OPEN) ||
               !strcmp(reason, BR_REASON_RATE_LIMITED) ||
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
    char etag[48]; /* the representation's tag, quoted, W/ when padded */
    char core[33];
    char lm[64]; /* Last-Modified (the upstream's, canonical), "" when none */
    int64_t lm_s;
    char cache_control[64];
} rep_meta;

static int meta_of(const bd_http_job *j, const br_range_answer *a, bool pad, bd_http_enc enc,
                   rep_meta *m)
{
    if (bd_http_etag_core(j->kind, j->prefix20, a, m->core) < 0)
        return -EIO;
    const char *suffix = enc == BD_ENC_GZIP ? "-gzip" : enc == BD_ENC_BR ? "-br" : "";
    snprintf(m->etag, sizeof(m->etag), "%s\"%s%s\"", pad ? "W/" : "", m->core, suffix);
    m->lm[0] = '\0';
    m->lm_s = bd_http_parse_date(a->last_modified);
    if (m->lm_s >= 0) {
        struct tm tm;
        time_t t = (time_t)m->lm_s;
        gmtime_r(&t, &tm);
        strftime(m->lm, sizeof(m->lm), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    }
    /* The freshness the entry was given, not its age: the time a range was
     * fetched tells when someone asked for it (docs/privacy.md). */
    int64_t life = a->stale ? 0 : a->expires_at - a->fetched_at;
    snprintf(m->cache_control, sizeof(m->cache_control), "%s, max-age=%lld",
             pad ? "private" : "public", (long long)(life > 0 ? life : 0));
    return 0;
}

/* If-None-Match, else If-Modified-Since (RFC 9110 13.2.2). */
static bool not_modified(struct evhttp_request *req, const rep_meta *m)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *inm = evhttp_find_header(in, "If-None-Match");
    if (inm)
        return bd_http_inm_matches(inm, m->core);
    const char *ims = evhttp_find_header(in, "If-Modified-Since");
    if (!ims || m->lm_s < 0)
        return false;
    int64_t since = bd_http_parse_date(ims);
    return since >= 0 && m->lm_s <= since;
}

static void add_meta_headers(struct evhttp_request *req, const rep_meta *m)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Cache-Control", m->cache_control);
    evhttp_add_header(out, "ETag", m->etag);
    if (m->lm[0])
        evhttp_add_header(out, "Last-Modified", m->lm);
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
        if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
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

static void answer_range(bd_http_job *j, const br_range_answer *a)
{
    struct evhttp_request *req = j->req;
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *ap = evhttp_find_header(in, "Add-Padding");
    bool pad = ap && !strcasecmp(ap, "true");
    bd_http_enc enc = bd_http_pick_encoding(evhttp_find_header(in, "Accept-Encoding"), false);
    rep_meta m;
    if (meta_of(j, a, pad, enc, &m) < 0) {
        bd_http_reply_text(j->http, req, 500, "Internal Server Error", "Internal Server Error");
        return;
    }
    add_meta_headers(req, &m);
    if (not_modified(req, &m)) {
        bd_http_reply(j->http, req, 304, "Not Modified", NULL);
        return;
    }
    struct evbuffer *body = evbuffer_new();
    if (!body || make_body(j, a, pad, enc, body) < 0) {
        if (body)
            evbuffer_free(body);
        bd_http_reply_text(j->http, req, 500, "Internal Server Error", "Internal Server Error");
        return;
    }
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Content-Type", "text/plain");
    if (enc != BD_ENC_IDENTITY)
        evhttp_add_header(out, "Content-Encoding", bd_http_enc_name(enc));
    bd_http_reply(j->http, req, 200, "OK", body);
    evbuffer_free(body);
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

/* ---- the client's partition ---- */

/* The cache partition of req's client (docs/privacy.md "An HTTP client of
 * the range endpoint"): each client (an IPv4 address, an IPv6 network of
 * [http] ipv6_prefix bits) has its own, so that no client is answered from,
 * waits on or is sped up by another's entry or fetch. Its number is a keyed
 * hash of the client into the upper half of the numbers (uids are below
 * 2^31 on any usual system), BD_PARTITION_HTTP and
 * BR_RESOLVER_PARTITION_SHARED left out; the key is the cache's secret, so
 * a client keeps its partition across restarts. Clients of a Unix socket
 * listener share BD_PARTITION_HTTP. */
static uint32_t client_partition(const bd_http *h, struct evhttp_request *req)
{
    struct evhttp_connection *con = evhttp_request_get_connection(req);
    const struct sockaddr *sa = con ? evhttp_connection_get_addr(con) : NULL;
    uint8_t in[sizeof(h->part_secret) + 16], md[BR_SHA256_LEN];
    if (!sa || !bd_http_client_key(sa, h->srv->state->cfg->http.ipv6_prefix,
                                   in + sizeof(h->part_secret)))
        return BD_PARTITION_HTTP;
    memcpy(in, h->part_secret, sizeof(h->part_secret));
    int rc = br_sha256(in, sizeof(in), md);
    OPENSSL_cleanse(in, sizeof(in));
    if (rc < 0)
        return BD_PARTITION_HTTP;
    uint32_t p;
    memcpy(&p, md, sizeof(p));
    p |= UINT32_C(0x80000000);
    return p >= BD_PARTITION_HTTP ? p - 2 : p;
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
    j->partition = client_partition(h, req);
    int rc = br_resolver_resolve_range(j->state->resolver, j->partition, kind, j->prefix20,
                                       range_cb, j);
    if (rc < 0) {
        /* no callback: answer here */
        bd_http_reply_text(h, req, rc == -ENOMEM ? 503 : 500,
                           rc == -ENOMEM ? "Service Unavailable" : "Internal Server Error",
                           "The range could not be looked up");
        bd_http_job_free(j);
    }
}
