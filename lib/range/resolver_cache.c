/* SPDX-License-Identifier: MIT */
/* The resolver's cache flush and how a failing cache write is told
 * (resolver.h, "Cache writes"). A full disk, a read-only or broken cache
 * makes every write fail, at every flush: saying so each time would flood
 * the log (often on the same full disk), so a failure is logged when writes
 * start failing or fail with another error, the return to working writes
 * once, and an oversized range once; STATS cache_errors counts them all. */
#include <errno.h>
#include <string.h>
#include <syslog.h>

#include <event2/event.h>

#include "resolver_int.h"

void br_rs_cache_write_failed(br_resolver *r, int rc, const char *what)
{
    r->st.cache_errors++;
    if (rc == -EFBIG) {
        /* An entry that can never fit (over half of the cache's size): the
         * other entries of its batch are stored. */
        if (!r->told_oversized)
            br_rs_log(r, LOG_WARNING,
                      "range cache: a range larger than half the cache's size was answered but not "
                      "stored; the next ones are counted in cache_errors, not logged");
        r->told_oversized = true;
        return;
    }
    r->cache_failures++;
    if (r->cache_failing == -rc)
        return;
    r->cache_failing = -rc;
    br_rs_log(r, LOG_WARNING,
              "range cache %s failed: %s; answers go on from the upstream, uncached; further "
              "failures are counted in cache_errors, not logged, until a write succeeds",
              what, strerror(-rc));
}

/* A flush that committed something: writes work (again). */
static void cache_write_ok(br_resolver *r)
{
    if (!r->cache_failing)
        return;
    br_rs_log(r, LOG_INFO, "range cache writes succeed again, after %llu failures",
              (unsigned long long)r->cache_failures);
    r->cache_failing = 0;
    r->cache_failures = 0;
}

int br_resolver_flush(br_resolver *r)
{
    if (!r->cache)
        return 0;
    evtimer_del(r->flush_ev);
    size_t pending = br_range_cache_pending(r->cache);
    int rc = br_range_cache_flush(r->cache);
    r->st.flushes++;
    if (rc < 0)
        br_rs_cache_write_failed(r, rc, "flush");
    if ((rc == 0 || rc == -EFBIG) && pending)
        cache_write_ok(r);
    return rc;
}
