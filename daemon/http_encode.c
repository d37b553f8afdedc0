/* SPDX-License-Identifier: MIT */
/* Content codings of the range endpoint (http_int.h): the choice by
 * Accept-Encoding, gzip through zlib and brotli through libbrotlienc (when
 * the build has it). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <zlib.h>

#include "config.h"
#include "http_int.h"

#if HAVE_BROTLI
#include <brotli/encode.h>
#endif

#define GZIP_LEVEL 1     /* every padded answer is compressed anew: fast */
#define BROTLI_QUALITY 1 /* the same */

bool bd_http_have_brotli(void)
{
    return HAVE_BROTLI;
}

const char *bd_http_enc_name(bd_http_enc enc)
{
    return enc == BD_ENC_GZIP ? "gzip" : enc == BD_ENC_BR ? "br" : NULL;
}

/* The q value of one Accept-Encoding element's parameters (";q=0.5"); 1
 * without one. Only whether it is 0 matters. */
static bool q_positive(const char *params, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (params[i] != ';')
            continue;
        size_t j = i + 1;
        while (j < len && (params[j] == ' ' || params[j] == '\t'))
            j++;
        if (j + 1 < len && (params[j] == 'q' || params[j] == 'Q') && params[j + 1] == '=') {
            for (j += 2; j < len && params[j] != ';'; j++)
                if (params[j] >= '1' && params[j] <= '9')
                    return true;
            return false;
        }
    }
    return true;
}

typedef struct accept_state {
    int gzip, br, star; /* -1 not listed, 0 refused (q=0), 1 accepted */
} accept_state;

static void accept_element(accept_state *st, const char *e, size_t len)
{
    while (len && (*e == ' ' || *e == '\t')) {
        e++;
        len--;
    }
    size_t name = 0;
    while (name < len && e[name] != ';' && e[name] != ' ' && e[name] != '\t')
        name++;
    int ok = q_positive(e + name, len - name) ? 1 : 0;
    if ((name == 4 && !strncasecmp(e, "gzip", 4)) || (name == 6 && !strncasecmp(e, "x-gzip", 6)))
        st->gzip = ok;
    else if (name == 2 && !strncasecmp(e, "br", 2))
        st->br = ok;
    else if (name == 1 && e[0] == '*')
        st->star = ok;
}

bd_http_enc bd_http_pick_encoding(const char *accept, bool prefer_br)
{
    if (!accept)
        return BD_ENC_IDENTITY;
    accept_state st = {-1, -1, -1};
    for (const char *p = accept; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        accept_element(&st, p, len);
        p += len + (comma ? 1 : 0);
    }
    bool gzip = st.gzip == 1 || (st.gzip == -1 && st.star == 1);
    bool br = HAVE_BROTLI && (st.br == 1 || (st.br == -1 && st.star == 1));
    if (br && (prefer_br || !gzip))
        return BD_ENC_BR;
    return gzip ? BD_ENC_GZIP : BD_ENC_IDENTITY;
}

static int gzip_compress(const void *in, size_t len, struct evbuffer *out)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (deflateInit2(&z, GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    size_t bound = deflateBound(&z, (uLong)len);
    struct evbuffer_iovec v;
    if (evbuffer_reserve_space(out, (ev_ssize_t)bound, &v, 1) < 1 || v.iov_len < bound) {
        deflateEnd(&z);
        return -ENOMEM;
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    z.next_out = v.iov_base;
    z.avail_out = (uInt)bound;
    int rc = deflate(&z, Z_FINISH);
    v.iov_len = bound - z.avail_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END)
        return -EIO;
    return evbuffer_commit_space(out, &v, 1) < 0 ? -ENOMEM : 0;
}

#if HAVE_BROTLI
static int brotli_compress(const void *in, size_t len, struct evbuffer *out)
{
    size_t bound = BrotliEncoderMaxCompressedSize(len);
    if (bound == 0)
        return -EIO;
    struct evbuffer_iovec v;
    if (evbuffer_reserve_space(out, (ev_ssize_t)bound, &v, 1) < 1 || v.iov_len < bound)
        return -ENOMEM;
    size_t n = bound;
    if (!BrotliEncoderCompress(BROTLI_QUALITY, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, len, in, &n,
                               v.iov_base))
        return -EIO;
    v.iov_len = n;
    return evbuffer_commit_space(out, &v, 1) < 0 ? -ENOMEM : 0;
}
#endif

int bd_http_compress(bd_http_enc enc, const void *in, size_t len, struct evbuffer *out)
{
    if (enc == BD_ENC_GZIP)
        return gzip_compress(in, len, out);
#if HAVE_BROTLI
    if (enc == BD_ENC_BR)
        return brotli_compress(in, len, out);
#endif
    return enc == BD_ENC_IDENTITY ? (evbuffer_add(out, in, len) < 0 ? -ENOMEM : 0) : -EINVAL;
}
