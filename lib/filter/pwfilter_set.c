/* SPDX-License-Identifier: MIT */
/* Password filter sets: a base and its deltas, and layered files
 * (pwfilter.h, filter_delta.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "filter_set.h"
#include "pwfilter_int.h"

const br_filter_header *br_pwfilter_file_header(const br_pwfilter *pf)
{
    return pf->outer ? br_filter_file_header(pf->outer) : br_filter_file_header(pf->file);
}

size_t br_pwfilter_members(const br_pwfilter *pf)
{
    size_t n = 0;
    for (; pf; pf = pf->next)
        n++;
    return n;
}

/* An offline url-sha256 delta's categories must agree with every member's
 * before it: a code names the same category in all (the shorter table is
 * the start of the longer one; docs/filter-format.md, "Sets"). */
static int categories_agree(const br_pwfilter *pf, const br_pwfilter *delta, br_error *err)
{
    if (!delta->offline || delta->offline->code_kind != BR_CODES_CATEGORIES)
        return 0;
    const br_category_table *d = &delta->offline->cats;
    for (const br_pwfilter *m = pf; m; m = m->next) {
        if (!m->offline || m->offline->code_kind != BR_CODES_CATEGORIES)
            continue;
        const br_category_table *t = &m->offline->cats;
        for (unsigned c = 0; c < t->count && c < d->count; c++)
            if (strcmp(t->names[c], d->names[c]) != 0)
                return br_error_set(err, -EINVAL,
                                    "category code %u is '%s' in this delta but '%s' in the set "
                                    "before it: a delta's category table starts with its "
                                    "base's (rebuild the delta with filter build --base)",
                                    c + 1, d->names[c], t->names[c]);
    }
    return 0;
}

const br_category_table *br_pwfilter_categories(const br_pwfilter *pf)
{
    const br_category_table *best = NULL;
    for (; pf; pf = pf->next)
        if (pf->offline && pf->offline->code_kind == BR_CODES_CATEGORIES &&
            (!best || pf->offline->cats.count > best->count))
            best = &pf->offline->cats;
    return best;
}

int br_pwfilter_attach(br_pwfilter *pf, br_pwfilter *delta, br_error *err)
{
    const br_filter_header *dh = br_pwfilter_file_header(delta);
    int r = br_filter_set_admit(&pf->set_hdr, &pf->names, dh, delta->next != NULL, err);
    if (r == 0 && !pf->offline != !delta->offline)
        r = br_error_set(err, -EINVAL,
                         "a delta built %s of a base built %s: an offline set holds offline "
                         "files only (rebuild the delta %s --offline)",
                         delta->offline ? "offline" : "not offline",
                         pf->offline ? "offline" : "not offline", pf->offline ? "with" : "without");
    if (r == 0)
        r = categories_agree(pf, delta, err);
    if (r == 0)
        r = br_filter_names_add(&pf->names, dh->body_sha256);
    if (r < 0) {
        br_pwfilter_free(delta);
        return r;
    }
    br_pwfilter *last = pf;
    while (last->next)
        last = last->next;
    last->next = delta;
    br_filter_set_fold(&pf->set_hdr, dh);
    return 0;
}

BR_FILTER_SET_OPS(br_pwfilter, set_ops);

int br_pwfilter_from_layers(br_filter_file *file, br_pwfilter **out, br_error *err)
{
    void *set = NULL;
    int r = br_filter_set_from_layers(file, &set_ops, &set, err);
    *out = set;
    return r;
}

int br_pwfilter_open_set(const char *const *paths, size_t n, br_pwfilter **out, uint8_t last_body[32],
                       br_error *err)
{
    void *set = NULL;
    int r = br_filter_set_open(paths, n, &set_ops, &set, last_body, err);
    *out = set;
    return r;
}
