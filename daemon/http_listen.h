/* SPDX-License-Identifier: MIT */
/* The range endpoint's listeners (http_listen.c): [http] listen bound for
 * the endpoint's evhttp, and the Unix sockets it made removed again. */
#pragma once

#include "conf.h"
#include "core/error.h"
#include "http_int.h"

/* Bind every address of cfg's [http] listen (at most BD_HTTP_MAX_LISTEN)
 * to h's evhttp, each with its accept pause. 0, or a negative errno with
 * err naming the address and why ("[http] listen ADDR: ..."); what was
 * bound before the failure stays bound for bd_http_free. */
int bd_http_listen(bd_http *h, const breachd_config *cfg, br_error *err);
/* Remove the Unix sockets bd_http_listen created (at the endpoint's stop). */
void bd_http_unlisten(bd_http *h);
