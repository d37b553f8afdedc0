/* SPDX-License-Identifier: MIT */
/* Offline filters and `upstream = none` (offline.h): which sections have no
 * range API, and what --check-config says about them. */
#include <errno.h>
#include <fcntl.h>
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
    return tmpl && strcmp(tmpl, BD_UPSTREAM_NONE) == 0;
}

const char *bd_upstream_template(const char *tmpl)
{
    return bd_upstream_none(tmpl) ? NULL : tmpl;
}

static void warn_section(const char *section, const char *filter, const br_pwfilter *pf)
{
    if (pf && br_pwfilter_offline(pf))
        return;
    bd_log(LOG_WARNING,
           "[%s] upstream = none with %s: every check the filter cannot answer (every "
           "breached password, and about 1 clean one in 65536) gets UNKNOWN no-upstream; "
           "build the filter with `breachctl filter build --offline` or name an upstream",
           section, filter[0] ? "a filter that is not offline" : "no filter");
}

int bd_offline_check_config(const breachd_config *c, br_error *err)
{
    if (c->http.listen[0] && bd_upstream_none(c->passwords.upstream))
        return br_error_set(err, -EINVAL,
                            "%s: [http] listen = %s serves range bodies from the [passwords] "
                            "upstream, but [passwords] upstream = none: name an upstream or "
                            "leave [http] listen empty",
                            c->path, c->http.listen);
    return 0;
}

void bd_offline_warn(const breachd_config *c, const br_pwfilter *pwfilter,
                     const br_pwfilter *ntfilter)
{
    if (bd_upstream_none(c->passwords.upstream))
        warn_section("passwords", c->passwords.filter, pwfilter);
    if (bd_upstream_none(c->ntlm.upstream) && c->ntlm.filter[0])
        warn_section("ntlm", c->ntlm.filter, ntfilter);
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
