/* SPDX-License-Identifier: MIT */
/* Content codings of the range endpoint (http_int.h): the choice by
 * Accept-Encoding, gzip through zlib and brotli through libbrotlienc (when
 * the build has it). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

size_t bd_http_compress_bound(bd_http_enc enc, size_t len)
{
    if (enc == BD_ENC_GZIP)
        return compressBound((uLong)len) +
               32; /* the gzip header and trailer are larger than zlib's */
#if HAVE_BROTLI
    if (enc == BD_ENC_BR)
        return BrotliEncoderMaxCompressedSize(len);
#endif
    return len;
}

static int gzip_compress(const void *in, size_t len, void *out, size_t cap, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (deflateInit2(&z, GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    return rc == Z_STREAM_END ? 0 : -EIO;
}

int bd_http_compress(bd_http_enc enc, const void *in, size_t len, void *out, size_t cap,
                     size_t *out_len)
{
    if (enc == BD_ENC_GZIP)
        return gzip_compress(in, len, out, cap, out_len);
#if HAVE_BROTLI
    if (enc == BD_ENC_BR) {
        size_t n = cap;
        if (!BrotliEncoderCompress(BROTLI_QUALITY, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, len, in,
                                   &n, out))
            return -EIO;
        *out_len = n;
        return 0;
    }
#endif
    return -EINVAL;
}
