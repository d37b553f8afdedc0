/* SPDX-License-Identifier: MIT */
/* breachctl password --similar: see check_similar.h. The variants and
 * their hashes never leave this process but as SIMILAR requests, and every
 * buffer that held one is wiped. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "breachctl.h"
#include "ctl_opts.h"
#include "check_similar.h"
#include "core/util.h"

bool ctl_opt_similar(const char *cmd, const char *arg, void *dst)
{
    static const int values[] = {CTL_SIMILAR_REJECT, CTL_SIMILAR_WARN, CTL_SIMILAR_OFF};
    return ctl_opt_reject_warn_off(cmd, "similar", arg, values, dst);
}

/* The daemon cannot answer SIMILAR (no offline filter, an older daemon):
 * said once under --similar=reject, and not asked again. */
static void give_up(ctl_similar *s, const char *reason)
{
    if (s->mode == CTL_SIMILAR_REJECT)
        ctl_err("password: similar passwords not checked: breachd answered %s%s", reason,
                strcmp(reason, "unknown-verb") == 0 ? " (an older breachd)"
                : strcmp(reason, "no-similar-filter") == 0
                    ? " (no offline filter: [passwords] similar_filter, breachd.conf(5))"
                    : "");
    ctl_similar_close(s);
}

bool ctl_similar_open(ctl_similar *s)
{
    if (s->mode == CTL_SIMILAR_OFF)
        return false;
    br_error err = {{0}};
    s->sim = br_similar_new(s->nt ? BR_SIMILAR_NT : BR_SIMILAR_SHA1, &err);
    s->hash = calloc(BR_SIMILAR_MAX, sizeof(*s->hash));
    if (!s->sim || !s->hash) {
        ctl_err("password: similar passwords not checked: %s", s->sim ? "out of memory" : err.text);
        ctl_similar_close(s);
        return false;
    }
    return true;
}

void ctl_similar_close(ctl_similar *s)
{
    br_similar_free(s->sim);
    s->sim = NULL;
    if (s->hash)
        br_wipe(s->hash, BR_SIMILAR_MAX * sizeof(*s->hash));
    free(s->hash);
    s->hash = NULL;
}

int ctl_similar_apply(ctl_similar *s, br_client *c, const void *pw, size_t len, br_answer *a,
                      br_error *err)
{
    if (!s->sim || (a->kind != BR_ANSWER_CLEAN && a->kind != BR_ANSWER_UNKNOWN))
        return 0;
    uint8_t(*nt)[BR_NT_LEN] = (uint8_t(*)[BR_NT_LEN])s->hash; /* packed, 16 bytes each */
    int n = s->nt ? br_similar_hashes(s->sim, pw, len, NULL, nt, BR_SIMILAR_MAX)
                  : br_similar_hashes(s->sim, pw, len, s->hash, NULL, BR_SIMILAR_MAX);
    if (n < 0)
        return br_error_set(err, n, "hashing the variants of a password failed");
    br_similar_answer sa;
    int r = br_client_check_similar(c, s->nt, (const uint8_t *)s->hash, (size_t)n, &sa, err);
    br_wipe(s->hash, BR_SIMILAR_MAX * sizeof(*s->hash));
    if (r == 0 && sa.unknown)
        give_up(s, sa.reason);
    if (r == 0 && sa.similar && sa.count >= s->min_count) {
        memset(a, 0, sizeof(*a));
        a->kind = BR_ANSWER_OTHER;
        a->count = sa.count;
        strcpy(a->detail, "SIMILAR");
    }
    return r;
}

bool ctl_similar_answer(const br_answer *a)
{
    return a->kind == BR_ANSWER_OTHER && strcmp(a->detail, "SIMILAR") == 0;
}

int ctl_similar_keep(ctl_similar_chunk *ch, size_t i, const char *pw, size_t len)
{
    if (!ch)
        return 0;
    ch->text[i] = malloc(len ? len : 1);
    if (!ch->text[i])
        return -ENOMEM;
    memcpy(ch->text[i], pw, len);
    ch->len[i] = len;
    return 0;
}

void ctl_similar_chunk_wipe(ctl_similar_chunk *ch)
{
    for (size_t i = 0; ch && i < CTL_SIMILAR_CHUNK; i++) {
        if (ch->text[i])
            br_wipe(ch->text[i], ch->len[i]);
        free(ch->text[i]);
        ch->text[i] = NULL;
    }
}
