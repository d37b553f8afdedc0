/* SPDX-License-Identifier: MIT */
/* Offline filters and `upstream = none` (offline.h): which sections have no
 * range API, and what --check-config says about them. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "filter/filter_delta.h"
#include "filter/filter_file.h"
#include "log.h"
#include "offline.h"
#include "url/url_expr.h"

bool bd_upstream_none(const char *tmpl)
{
    return !tmpl || !tmpl[0] || strcmp(tmpl, BD_UPSTREAM_NONE) == 0;
}

const char *bd_upstream_template(const char *tmpl)
{
    return bd_upstream_none(tmpl) ? NULL : tmpl;
}

bool bd_upstream_hibp(const char *tmpl)
{
    return !bd_upstream_none(tmpl) && strstr(tmpl, BD_HIBP_HOST) != NULL;
}

static void warn_section(const char *section, const char *filter, const br_pwfilter *pf)
{
    if (pf && br_pwfilter_offline(pf))
        return;
    bd_log(LOG_WARNING,
           "[%s] upstream = none (or empty) with %s: every check the filter cannot answer "
           "(every breached password, and about 1 clean one in 65536) gets UNKNOWN "
           "no-upstream; build the filter with `breachctl filter build --offline` or name an "
           "upstream",
           section, filter[0] ? "a filter that is not offline" : "no filter");
}

int bd_offline_check_config(const breachd_config *c, br_error *err)
{
    if (c->http.listen[0] && bd_upstream_none(c->passwords.upstream))
        return br_error_set(err, -EINVAL,
                            "%s: [http] listen = %s serves range bodies from the [passwords] "
                            "upstream, but [passwords] upstream = none (or empty): name an "
                            "upstream or leave [http] listen empty",
                            c->path, c->http.listen);
    return 0;
}

/* An offline filter with an upstream: no check ever goes there (pw_check.c,
 * url_check.c); only the range endpoint ([http] listen) serves range bodies
 * from a [passwords] or [ntlm] upstream (breachd.conf(5), "Offline filters
 * and upstreams"). */
static void warn_offline_upstream(const breachd_config *c, const char *section,
                                  const char *upstream, bool http_uses_it)
{
    if (bd_upstream_none(upstream) || (http_uses_it && c->http.listen[0]))
        return;
    bd_log(LOG_WARNING,
           "[%s] filter is offline but [%s] upstream names a range API: no check is ever sent "
           "there (a stale offline filter keeps answering, a damaged one answers UNKNOWN "
           "filter-damaged)%s; set upstream = none",
           section, section,
           http_uses_it ? ", and only the range endpoint ([http] listen, empty here) would use it"
                        : "");
}

/* Whether upstream = none puts kind k offline: a kind whose range API is
 * on by default (a [urls] upstream is not), and whose section is in use
 * (one that is off without a filter, [ntlm], needs its filter). */
static bool none_offline(const breachd_config *c, int k)
{
    const bd_kind_row *row = &bd_kinds[k];
    return !row->upstream_default_none && bd_upstream_none(bd_kind_upstream(c, (bd_kind)k)) &&
           (!row->off_without_filter || bd_kind_filter_path(c, (bd_kind)k)[0]);
}

/* A section offline (an offline filter, or upstream = none) next to one
 * whose upstream is still HIBP's: that section's checks leave the host. */
static void warn_mix(const breachd_config *c, const bool offline[BD_KINDS_])
{
    const char *quiet = NULL;
    for (int k = 0; k < BD_KINDS_ && !quiet; k++)
        if (offline[k])
            quiet = bd_kinds[k].section;
    for (int k = 0; quiet && k < BD_KINDS_; k++) {
        const char *section = bd_kinds[k].section;
        if (!offline[k] && bd_upstream_hibp(bd_kind_upstream(c, (bd_kind)k)))
            bd_log(LOG_WARNING,
                   "[%s] is offline (or upstream = none) but [%s] upstream is still HIBP's range "
                   "API (%s): the prefixes of %s checks leave the host; set [%s] upstream = none "
                   "(and an offline filter) on a host that must send nothing",
                   quiet, section, BD_HIBP_HOST, bd_kinds[k].checks, section);
    }
}

uint64_t bd_filter_min_count(const br_pwfilter *pf)
{
    const br_pwo *o = pf ? br_pwfilter_offline_info(pf) : NULL;
    return o ? o->min_count : 0;
}

/* A --min-count filter let in by min_count_ok = yes: the threshold said at
 * every load. */
static void warn_min_count(const char *section, const br_pwfilter *pf)
{
    uint64_t n = bd_filter_min_count(pf);
    if (n > 1)
        bd_log(LOG_WARNING,
               "[%s] filter was built with --min-count %" PRIu64 " and min_count_ok = yes: "
               "every breached password seen fewer than %" PRIu64 " times answers CLEAN",
               section, n, n);
}

/* Every kind with an upstream key of its own (a kind sharing a section's
 * upstream, SIMILAR, is that section's), one warning at a time in the
 * kinds' order. */
void bd_offline_warn(const breachd_config *c, const br_pwfilter *const filter[BD_KINDS_])
{
    bool offline[BD_KINDS_] = {false};
    for (int k = 0; k < BD_KINDS_; k++)
        if (bd_kinds[k].upstream_off && bd_kinds[k].min_count_ok_off)
            warn_min_count(bd_kinds[k].section, filter[k]);
    for (int k = 0; k < BD_KINDS_; k++)
        if (bd_kinds[k].upstream_off && none_offline(c, k))
            warn_section(bd_kinds[k].section, bd_kind_filter_path(c, (bd_kind)k), filter[k]);
    for (int k = 0; k < BD_KINDS_; k++) {
        bool off = filter[k] && br_pwfilter_offline(filter[k]);
        if (!bd_kinds[k].upstream_off)
            continue;
        if (off)
            warn_offline_upstream(c, bd_kinds[k].section, bd_kind_upstream(c, (bd_kind)k),
                                  bd_kinds[k].range_endpoint);
        offline[k] = off || none_offline(c, k);
    }
    for (int k = 0; k < BD_KINDS_; k++)
        if (filter[k] && bd_kinds[k].when_stale_off &&
            BD_KIND_CFG_(c, bd_kinds[k].when_stale_off, int) == BREACHD_WHEN_STALE_UPSTREAM)
            bd_log(LOG_WARNING,
                   "[%s] when_stale = upstream with an offline filter: taken as filter (an "
                   "offline filter never sends a check upstream)",
                   bd_kinds[k].section);
    warn_mix(c, offline);
}

/* ---- an offline [urls] filter ---- */

bool bd_offline_urls_configured(const breachd_config *cfg)
{
    char **paths;
    size_t n;
    if (!cfg->urls.filter[0] || breachd_config_list_split(cfg->urls.filter, &paths, &n) < 0)
        return false;
    br_filter_header h;
    bool offline =
        n && br_filter_header_read_first(paths[0], &h) == 0 && h.algorithm == BR_ALGO_FUSE_OFFLINE;
    breachd_config_list_free(paths, n);
    return offline;
}

unsigned bd_offline_url_labels(const br_pwfilter *pf)
{
    unsigned m = br_pwfilter_max_domain_labels(pf);
    return m > BR_URL_SB_HOST_COMPONENTS ? m : BR_URL_SB_HOST_COMPONENTS;
}
