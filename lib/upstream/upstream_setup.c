/* SPDX-License-Identifier: MIT */
/* Upstream fetcher: making a br_upstream (the URL template check, the config
 * with its defaults applied, the libcurl multi handle and the events that
 * drive it) and freeing one (every pending request cancelled first). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "upstream_int.h"
#include "core/random.h"

static double round_up(double x)
{
    double t = x < 1e15 ? (double)(uint64_t)x : x;
    return t < x ? t + 1 : t;
}

static int check_template(const char *t, br_upstream *up, br_error *err)
{
    if (!t || !*t)
        return br_error_set(err, -EINVAL, "upstream: no URL template");
    if (!strstr(t, PREFIX_TOKEN))
        return br_error_set(err, -EINVAL, "upstream: URL template has no {prefix}");
    if (strncasecmp(t, "https://", 8) == 0)
        up->is_https = true;
    else if (strncasecmp(t, "file://", 7) == 0)
        up->is_file = true;
    else if (strncasecmp(t, "http://", 7) != 0)
        return br_error_set(err, -EINVAL,
                            "upstream: URL template must start with https://, http:// or file://");
    for (const char *p = t; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return br_error_set(err, -EINVAL,
                                "upstream: URL template holds a space or control character");
    return 0;
}

/* The limits and retries of cfg, defaults for those left 0. */
static int apply_limits(br_upstream *up, const br_upstream_config *cfg, br_error *err)
{
    up->timeout_ns =
        (uint64_t)(cfg->timeout_ms ? cfg->timeout_ms : BR_UPSTREAM_DEFAULT_TIMEOUT_MS) * 1000000u;
    up->connect_timeout_ms =
        cfg->connect_timeout_ms ? cfg->connect_timeout_ms : up->timeout_ns / 2000000u;
    if (up->connect_timeout_ms == 0)
        up->connect_timeout_ms = 1;
    up->attempt_timeout_ms = cfg->attempt_timeout_ms;
    up->max_inflight = cfg->max_inflight ? cfg->max_inflight : BR_UPSTREAM_DEFAULT_MAX_INFLIGHT;
    up->rate = cfg->rate == 0 ? BR_UPSTREAM_DEFAULT_RATE : cfg->rate;
    if (isnan(up->rate))
        return br_error_set(err, -EINVAL, "upstream: rate is not a number");
    up->bulk_share = cfg->bulk_share == 0 ? BR_UPSTREAM_DEFAULT_BULK_SHARE : cfg->bulk_share;
    if (!(up->bulk_share > 0 && up->bulk_share <= 1))
        return br_error_set(err, -EINVAL, "upstream: bulk_share must be in (0, 1]");
    up->bulk_slots = (uint32_t)((double)up->max_inflight * up->bulk_share);
    if (up->bulk_slots < 1)
        up->bulk_slots = 1;
    if (up->rate > 0) {
        double b =
            cfg->burst ? (double)cfg->burst : BR_MIN((double)up->max_inflight, round_up(up->rate));
        up->burst = b < 1 ? 1 : b;
        up->tokens = up->burst;
        up->bulk_tokens = BR_MAX(1.0, up->burst * up->bulk_share);
    }
    up->rate_cfg = up->rate;
    up->burst_cfg = up->burst;
    uint32_t recovery_ms =
        cfg->rate_recovery_ms ? cfg->rate_recovery_ms : BR_UPSTREAM_DEFAULT_RATE_RECOVERY_MS;
    up->rate_step = up->rate / 2 / ((double)recovery_ms * 1e6);
    up->max_pause_ns =
        (uint64_t)(cfg->max_pause_ms ? cfg->max_pause_ms : BR_UPSTREAM_DEFAULT_MAX_PAUSE_MS) *
        1000000u;
    up->max_body = cfg->max_body ? cfg->max_body : BR_UPSTREAM_DEFAULT_MAX_BODY;
    up->max_attempts = cfg->max_attempts ? cfg->max_attempts : BR_UPSTREAM_DEFAULT_MAX_ATTEMPTS;
    up->retry_base_ms = cfg->retry_base_ms ? cfg->retry_base_ms : BR_UPSTREAM_DEFAULT_RETRY_BASE_MS;
    up->retry_max_ms = cfg->retry_max_ms ? cfg->retry_max_ms : BR_UPSTREAM_DEFAULT_RETRY_MAX_MS;
    if (up->retry_max_ms < up->retry_base_ms)
        up->retry_max_ms = up->retry_base_ms;
    up->breaker_threshold =
        cfg->breaker_threshold ? cfg->breaker_threshold : BR_UPSTREAM_DEFAULT_BREAKER_THRESHOLD;
    up->breaker_cooldown_ns =
        (uint64_t)(cfg->breaker_cooldown_ms ? cfg->breaker_cooldown_ms
                                            : BR_UPSTREAM_DEFAULT_BREAKER_COOLDOWN_MS) *
        1000000u;
    return 0;
}

/* The template, proxy and CA file copied; the log; the random state and
 * the token bucket's clock. */
static int take_settings(br_upstream *up, const br_upstream_config *cfg, br_error *err)
{
    up->no_padding = cfg->no_padding;
    up->log = cfg->log;
    up->log_ctx = cfg->log_ctx;
    up->tmpl = strdup(cfg->url_template);
    if (!up->tmpl)
        return br_error_set(err, -ENOMEM, "upstream: out of memory");
    up->tmpl_len = strlen(up->tmpl);
    if (cfg->proxy && *cfg->proxy && !(up->proxy = strdup(cfg->proxy)))
        return br_error_set(err, -ENOMEM, "upstream: out of memory");
    if (cfg->ca_file && *cfg->ca_file && !(up->ca_file = strdup(cfg->ca_file)))
        return br_error_set(err, -ENOMEM, "upstream: out of memory");
    if (br_random_bytes(&up->rng, sizeof(up->rng)) < 0)
        up->rng = br_now_ns() ^ (uint64_t)(uintptr_t)up;
    up->tokens_at_ns = up->rate_at_ns = br_now_ns();
    return 0;
}

/* libcurl's multi handle on the event base: its socket and timer
 * callbacks, HTTP/2 multiplexing, the connection cache. */
static int start_curl(br_upstream *up, const br_upstream_config *cfg, br_error *err)
{
    /* Thread-safe and reference counted in libcurl >= 7.84. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return br_error_set(err, -EIO, "upstream: curl_global_init failed");
    up->pool = calloc(up->max_inflight, sizeof(*up->pool)); /* NULL: no reuse */
    up->multi = curl_multi_init();
    if (!up->multi) {
        curl_global_cleanup();
        return br_error_set(err, -EIO, "upstream: curl_multi_init failed");
    }
    up->curl_timer = evtimer_new(up->base, up_curl_timer_event_cb, up);
    up->pump_ev = evtimer_new(up->base, up_pump_cb, up);
    if (!up->curl_timer || !up->pump_ev)
        return br_error_set(err, -ENOMEM, "upstream: event_new failed");

    CURLMcode mc = CURLM_OK;
#define MSET(opt, val)                                                                             \
    do {                                                                                           \
        if (mc == CURLM_OK)                                                                        \
            mc = curl_multi_setopt(up->multi, opt, val);                                           \
    } while (0)
    MSET(CURLMOPT_SOCKETFUNCTION, up_curl_socket_cb);
    MSET(CURLMOPT_SOCKETDATA, up);
    MSET(CURLMOPT_TIMERFUNCTION, up_curl_timer_cb);
    MSET(CURLMOPT_TIMERDATA, up);
    MSET(CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    MSET(CURLMOPT_MAXCONNECTS, (long)up->max_inflight);
#if LIBCURL_VERSION_NUM >= 0x074300
    if (cfg->h2_max_streams)
        MSET(CURLMOPT_MAX_CONCURRENT_STREAMS, (long)cfg->h2_max_streams);
#else
    (void)cfg;
#endif
#undef MSET
    if (mc != CURLM_OK)
        return br_error_set(err, -EIO, "upstream: curl_multi_setopt: %s", curl_multi_strerror(mc));
    return 0;
}

int br_upstream_new(struct event_base *base, const br_upstream_config *cfg, br_upstream **out,
                    br_error *err)
{
    if (!base || !cfg || !out)
        return br_error_set(err, -EINVAL, "upstream: missing argument");
    *out = NULL;

    _cleanup_(br_upstream_freep) br_upstream *up = calloc(1, sizeof(*up));
    if (!up)
        return br_error_set(err, -ENOMEM, "upstream: out of memory");
    up->base = base;
    int rc = check_template(cfg->url_template, up, err);
    if (rc < 0 || (rc = apply_limits(up, cfg, err)) < 0 || (rc = take_settings(up, cfg, err)) < 0 ||
        (rc = start_curl(up, cfg, err)) < 0)
        return rc;
    *out = BR_TAKE_PTR(up);
    return 0;
}

void br_upstream_free(br_upstream *up)
{
    if (!up)
        return;
    up->closing = true;
    while (up->all) {
        req *r = up->all;
        if (r->state == RQ_RUNNING) {
            up_stop_transfer(up, r);
            r->state = RQ_BACKOFF;
            up->st.backoff++;
        }
        up_finish(r, BR_UPSTREAM_CANCELLED);
    }
    while (up->npool)
        curl_easy_cleanup(up->pool[--up->npool]);
    free(up->pool);
    if (up->multi) {
        /* may call up_curl_socket_cb(REMOVE) for the connections it closes */
        curl_multi_cleanup(up->multi);
        curl_global_cleanup();
    }
    up_socks_free(up);
    if (up->curl_timer)
        event_free(up->curl_timer);
    if (up->pump_ev)
        event_free(up->pump_ev);
    free(up->tmpl);
    free(up->proxy);
    free(up->ca_file);
    free(up);
}
