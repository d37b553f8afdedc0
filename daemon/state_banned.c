/* SPDX-License-Identifier: MIT */
/* [passwords] banned_terms and site_terms (state_banned.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "log.h"
#include "state_banned.h"

static void bad_line(void *ctx, const char *message)
{
    (void)ctx;
    bd_log(LOG_WARNING, "[passwords] banned_terms: %s: skipped", message);
}

/* Where a key was set, for a message: "FILE:LINE: " or "". */
static void key_place(const breachd_config *cfg, const char *name, char *buf, size_t size)
{
    unsigned line = breachd_config_key_line(cfg, "passwords", name);
    if (line)
        snprintf(buf, size, "%s:%u: ", cfg->path, line);
    else
        buf[0] = '\0';
}

static int add_site_terms(const breachd_config *cfg, br_banned *b, br_error *err)
{
    const char *s = cfg->passwords.site_terms;
    char place[300];
    for (unsigned item = 1; *s; item++) {
        size_t n = strcspn(s, ",");
        const char *t = s;
        size_t len = n;
        while (len && (*t == ' ' || *t == '\t'))
            t++, len--;
        while (len && (t[len - 1] == ' ' || t[len - 1] == '\t'))
            len--;
        int r = br_banned_add(b, BR_BANNED_SITE, t, len, err);
        if (r < 0 && r != -ENOMEM) {
            key_place(cfg, "site_terms", place, sizeof(place));
            return br_error_prefix(err, r, "%s[passwords] site_terms: item %u", place, item);
        }
        if (r < 0)
            return br_error_set(err, r, "[passwords] site_terms: out of memory");
        s += n + (s[n] == ',');
    }
    return 0;
}

int bd_banned_load(const breachd_config *cfg, br_banned **out, uint64_t *generation, br_error *err)
{
    static uint64_t last;
    *out = NULL;
    if (!cfg->passwords.banned_terms[0] && !cfg->passwords.site_terms[0])
        return 0;
    br_banned *b = br_banned_new();
    int r = b ? add_site_terms(cfg, b, err) : -ENOMEM;
    if (r == 0 && cfg->passwords.banned_terms[0]) {
        r = br_banned_load(b, BR_BANNED_TERM, cfg->passwords.banned_terms, bad_line, NULL, err);
        if (r < 0) {
            char place[300];
            key_place(cfg, "banned_terms", place, sizeof(place));
            br_error_prefix(err, r, "%s[passwords] banned_terms", place);
        }
    }
    if (r < 0) {
        br_banned_free(b);
        return r == -ENOMEM && !err->text[0] ? br_error_set(err, r, "out of memory") : r;
    }
    *out = b;
    *generation = __atomic_add_fetch(&last, 1, __ATOMIC_RELAXED);
    return 0;
}
