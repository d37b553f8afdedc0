/* SPDX-License-Identifier: MIT */
/* PhishTank's JSON feed: an array of objects, each with a "url" string
 * (url_feed_formats.h). json-c parses each element; this file walks the
 * array between them, so that every element is parsed alone and its line is
 * known for messages. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "url_feed_formats.h"
#include "core/util.h"

typedef struct walk {
    const char *name;
    const char *buf;
    size_t len, pos;
    uint64_t line; /* of buf[pos] */
    br_error *err;
} walk;

static void advance(walk *w, size_t to)
{
    for (; w->pos < to; w->pos++)
        if (w->buf[w->pos] == '\n')
            w->line++;
}

static void skip_space(walk *w)
{
    size_t p = w->pos;
    while (p < w->len && strchr(" \t\r\n", w->buf[p]))
        p++;
    advance(w, p);
}

static int syntax(walk *w, const char *what)
{
    return br_error_set(w->err, -EINVAL, "%s:%llu: not valid JSON (%s)", w->name,
                        (unsigned long long)w->line, what);
}

/* Parse the element at w->pos with json-c; *obj NULL on error (err set). */
static int parse_element(walk *w, json_tokener *tok, json_object **obj)
{
    json_tokener_reset(tok);
    size_t rest = w->len - w->pos;
    int chunk = rest > (size_t)INT32_MAX ? INT32_MAX : (int)rest;
    *obj = json_tokener_parse_ex(tok, w->buf + w->pos, chunk);
    enum json_tokener_error e = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    if (!*obj || (e != json_tokener_success && e != json_tokener_continue)) {
        advance(w, w->pos + used);
        json_object_put(*obj);
        *obj = NULL;
        return syntax(w, e == json_tokener_continue ? "the file ends inside an element"
                                                    : json_tokener_error_desc(e));
    }
    advance(w, w->pos + used);
    return 0;
}

int br_fmt_json_read(const char *name, const char *buf, size_t len, br_fmt_json_entry_cb entry,
                     br_fmt_json_bad_cb bad, void *ctx, br_error *err)
{
    walk w = {.name = name, .buf = buf, .len = len, .line = 1, .err = err};
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        w.pos = 3;
    skip_space(&w);
    if (w.pos == w.len || buf[w.pos] != '[')
        return syntax(&w, "expected an array of objects, '['");
    advance(&w, w.pos + 1);
    json_tokener *tok = json_tokener_new();
    if (!tok)
        return br_error_set(err, -ENOMEM, "out of memory");
    int r = 0;
    for (size_t index = 0;; index++) {
        skip_space(&w);
        if (w.pos < w.len && buf[w.pos] == ']' && index == 0)
            break;
        uint64_t at = w.line;
        json_object *obj = NULL;
        r = parse_element(&w, tok, &obj);
        if (r < 0)
            break;
        json_object *url = NULL;
        if (!json_object_is_type(obj, json_type_object))
            r = bad(ctx, at, "an array element that is not an object");
        else if (!json_object_object_get_ex(obj, "url", &url) ||
                 !json_object_is_type(url, json_type_string))
            r = bad(ctx, at, "an object without a \"url\" string");
        else
            r = entry(ctx, json_object_get_string(url), (size_t)json_object_get_string_len(url),
                      at);
        json_object_put(obj);
        if (r < 0)
            break;
        skip_space(&w);
        if (w.pos < w.len && buf[w.pos] == ',') {
            advance(&w, w.pos + 1);
            continue;
        }
        if (w.pos < w.len && buf[w.pos] == ']')
            break;
        r = syntax(&w, w.pos == w.len ? "the file ends before ']'" : "expected ',' or ']'");
        break;
    }
    json_tokener_free(tok);
    if (r < 0)
        return r;
    advance(&w, w.pos + 1);
    skip_space(&w);
    if (w.pos < w.len)
        return syntax(&w, "something follows the array");
    return 0;
}
