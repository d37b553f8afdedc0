/* SPDX-License-Identifier: MIT */
/* Writing a url-sha256 draft to its file (builder/urlfilter_save.h;
 * docs/filter-format.md, "Algorithm 2"). */
#include <errno.h>

#include "filter_writer.h"
#include "urlfilter_save.h"

int br_urlfilter_draft_save(br_urlfilter_draft *d, const char *path,
                            const br_urlfilter_save_opts *o, uint64_t *file_bytes, br_error *err)
{
    _cleanup_(br_filter_writer_freep) br_filter_writer *w = NULL;
    int r = br_filter_writer_new(path, &w, err);
    if (r < 0)
        return r;
    uint64_t bitmap_off = br_filter_writer_offset(w);
    r = br_filter_writer_write(w, br_urlfilter_draft_bitmap(d), BR_URLFILTER_BITMAP_BYTES, err);
    if (r < 0)
        return r;
    uint64_t blocks_off = br_filter_writer_offset(w);
    r = br_filter_writer_write(w, br_urlfilter_draft_block_data(d),
                               (size_t)br_urlfilter_draft_blocks(d) * BR_BLOOM_BLOCK_BYTES, err);
    if (r < 0)
        return r;

    br_filter_header hdr;
    br_urlfilter_draft_header(d, o, bitmap_off, blocks_off, &hdr);
    if (bitmap_off != BR_FILTER_PAYLOAD_ALIGN)
        return br_error_set(err, -EINVAL, "unexpected payload offset %llu",
                            (unsigned long long)bitmap_off);
    uint64_t bytes = br_filter_writer_offset(w);
    if (o->before_commit) {
        r = o->before_commit(o->ctx, err);
        if (r < 0)
            return r;
    }
    r = br_filter_writer_commit(w, &hdr, err);
    if (r < 0)
        return r;
    if (file_bytes)
        *file_bytes = bytes;
    return 0;
}
