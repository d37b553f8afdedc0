/* SPDX-License-Identifier: MIT */
/* Password filter sets: a base and its deltas, and layered files
 * (pwfilter.h, filter_delta.h). */
#include <errno.h>
#include <stdlib.h>

#include "filter_set.h"
#include "pwfilter_int.h"

const br_filter_header *br_pwfilter_file_header(const br_pwfilter *pf)
{
    return pf->outer ? br_filter_file_header(pf->outer) : br_filter_file_header(pf->file);
}

bool br_pwfilter_names(const br_pwfilter *pf, const uint8_t body_sha256[32])
{
    return br_filter_names_has(&pf->names, body_sha256);
}

size_t br_pwfilter_members(const br_pwfilter *pf)
{
    size_t n = 0;
    for (; pf; pf = pf->next)
        n++;
    return n;
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
