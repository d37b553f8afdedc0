/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "offline.h"

bool bd_upstream_none(const char *tmpl)
{
    return tmpl && strcmp(tmpl, BD_UPSTREAM_NONE) == 0;
}

const char *bd_upstream_template(const char *tmpl)
{
    return bd_upstream_none(tmpl) ? NULL : tmpl;
}

static void warn_section(const char *section, const char *filter, const br_pwfilter *pf,
                         bd_warn_fn warn, void *ctx)
{
    char text[512];
    if (pf && br_pwfilter_offline(pf))
        return;
    snprintf(text, sizeof(text),
             "[%s] upstream = none with %s: every check the filter cannot answer (every "
             "breached password, and about 1 clean one in 65536) gets UNKNOWN no-upstream; "
             "build the filter with `breachctl filter build --offline` or name an upstream",
             section, filter[0] ? "a filter that is not offline" : "no filter");
    warn(ctx, text);
}

int bd_offline_check(const bd_state_files *f, bd_warn_fn warn, void *ctx, br_error *err)
{
    const breachd_config *c = f->cfg;
    if (c->http.listen[0] && bd_upstream_none(c->passwords.upstream))
        return br_error_set(err, -EINVAL,
                            "%s: [http] listen = %s serves range bodies from the [passwords] "
                            "upstream, but [passwords] upstream = none: name an upstream or "
                            "leave [http] listen empty",
                            c->path, c->http.listen);
    if (bd_upstream_none(c->passwords.upstream))
        warn_section("passwords", c->passwords.filter, f->pwfilter, warn, ctx);
    if (bd_upstream_none(c->ntlm.upstream) && c->ntlm.filter[0])
        warn_section("ntlm", c->ntlm.filter, f->ntfilter, warn, ctx);
    return 0;
}
