/* SPDX-License-Identifier: MIT */
/* The range endpoint's fast path reader (http_fast.c): which requests http.c
 * answers itself, without evhttp. Only the plainest GET of a range is one;
 * anything else (another method, version, path, query, header or value,
 * more than one request) is left to evhttp, which answers it as always. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most bytes a fast path request may take. */
#define BD_HTTP_FAST_MAX 1024

/* Are the n bytes at p exactly one whole request
 *   GET /range/{5 hex digits} HTTP/1.1 CRLF
 *   ({Host | User-Agent | Accept | Accept-Encoding}: value CRLF)*
 *   CRLF
 * with field names in any case, values of visible ASCII, spaces and tabs,
 * and an Accept-Encoding (if any) that picks the identity coding? Then
 * *prefix20 is the prefix. */
bool bd_http_fast_parse(const char *p, size_t n, uint32_t *prefix20);
