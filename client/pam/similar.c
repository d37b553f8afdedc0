/* SPDX-License-Identifier: MIT */
/* similar= at change time (pam_breachd(8), docs/similar.md): the new
 * password's variants made and hashed here (lib/similar/), asked with
 * SIMILAR (docs/protocol.md), answered by breachd from an offline filter
 * of popular passwords on the host. The variants and their hashes are
 * wiped; nothing here logs a password, a variant, a hash or a count. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <security/pam_ext.h>

#include "proto/client.h"
#include "pam_breachd.h"
#include "similar/similar.h"
#include "core/util.h"

/* The variants' SHA-1s asked: 0 and *a, or a negative errno. */
static int ask(const pb_options *o, const char *password, br_similar_answer *a, br_error *err)
{
    _cleanup_(br_client_freep) br_client *c = NULL;
    int r = br_client_connect(o->socket, o->timeout_ms, &c, err);
    if (r < 0)
        return r;
    br_similar *sim = br_similar_new(BR_SIMILAR_SHA1, err);
    /* out of core dumps and swap: they are the password's variants */
    uint8_t(*h)[BR_SHA1_LEN] = br_secret_alloc(BR_SIMILAR_MAX * BR_SHA1_LEN);
    int n = !sim || !h
                ? -ENOMEM
                : br_similar_hashes(sim, password, strlen(password), h, NULL, BR_SIMILAR_MAX);
    r = n < 0 ? n : br_client_check_similar(c, false, (const uint8_t *)h, (size_t)n, a, err);
    br_secret_free(h, BR_SIMILAR_MAX * BR_SHA1_LEN);
    br_similar_free(sim);
    return r;
}

void pb_ask_similar(pam_handle_t *pamh, const pb_options *o, const char *password, pb_outcome *res)
{
    br_similar_answer a;
    br_error err = {{0}};
    int r = ask(o, password, &a, &err);
    if (r == 0 && a.similar && a.count >= o->similar_min_count) {
        res->similar = true;
        res->similar_count = a.count;
    } else if (o->debug) {
        /* a.reason is the daemon's first word; err.text names the socket */
        pb_syslog(pamh, LOG_DEBUG, "similar passwords: %s",
                  r < 0       ? "not checked: cannot talk to breachd"
                  : a.unknown ? (strcmp(a.reason, "no-similar-filter") == 0
                                     ? "not checked: breachd has no offline filter for them"
                                     : "not checked: breachd could not answer")
                  : a.similar ? "a match below similar_min_count"
                              : "none is a popular breached password");
    }
    br_wipe(&a, sizeof(a));
}
