/* SPDX-License-Identifier: MIT */
/* Password filter sets: a base and its deltas, and layered files
 * (pwfilter.h, filter_delta.h). */
#include <errno.h>
#include <stdlib.h>

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
    int r = br_filter_delta_check(&pf->set_hdr, &pf->names, dh, err);
    if (r == 0 && delta->next)
        r = br_error_set(err, -EINVAL, "a set cannot be a delta");
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

int br_pwfilter_from_layers(br_filter_file *file, br_pwfilter **out, br_error *err)
{
    br_filter_file **views = NULL;
    size_t n = 0;
    int r = br_filter_layers_open(file, &views, &n, err);
    if (r < 0) {
        br_filter_file_free(file);
        return r;
    }
    br_pwfilter *head = NULL;
    for (size_t i = 0; i < n; i++) {
        br_pwfilter *pf = NULL;
        br_filter_file *v = BR_TAKE_PTR(views[i]);
        r = br_pwfilter_from_file(v, &pf, err);
        if (r == 0 && i > 0)
            r = br_pwfilter_attach(head, BR_TAKE_PTR(pf), err);
        else if (r == 0)
            head = BR_TAKE_PTR(pf);
        if (r < 0) {
            br_error_prefix(err, r, "layer %zu", i);
            break;
        }
    }
    for (size_t i = 0; i < n; i++)
        br_filter_file_free(views[i]);
    free(views);
    if (r == 0) {
        /* The set answers for the container: its generation, build time and
         * keys, and it may be named by the container's body as well. */
        head->set_hdr = *br_filter_file_header(file);
        r = br_filter_names_add(&head->names, head->set_hdr.body_sha256);
    }
    if (r < 0) {
        br_pwfilter_free(head);
        br_filter_file_free(file);
        return r;
    }
    head->outer = file;
    *out = head;
    return 0;
}
