#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Operations (docs/operations.md): the canary, breachctl health, and the
UNKNOWN answers counted by reason, through a real breachd and a real nginx
mirror of the demo corpus (which holds the canary's key, the SHA-1 of
"password").

breachd runs on driven time (breachd-testclock, dtest.Clock): the canary's
period is 4 minutes (within the upstream timeout, 300 s, so that a jump
times out no fetch in flight), and each run comes when the test advances
the clock by one period.

  canary_passes:      canary = 4m over the full filter and the mirror:
                      STATS canary=ok; the canary's range was fetched once
                      for many runs (the cache, ttl); the answer counters
                      users see did not move; a user's check of the same
                      hash is fetched again (the canary's partition is its
                      own); health says OK, exit 0, with performance data.
  canary_decoys:      decoys = 2: one fetch and two decoys for many runs.
  canary_upstream_down: the upstream refuses connections: a warning in the
                      log within a few periods, canary=failed, health
                      CRITICAL (exit 2); user checks answered UNKNOWN are
                      counted by reason (unknown_*), and a URL check with no
                      URL filter as filter_unavailable.
  canary_filter_missing_key: a filter built without the canary's key:
                      canary_reason=filter-missing-key, logged, CRITICAL.
  health_filter_age:  a filter built 3 days ago: OK by default, WARNING
                      (exit 1) past --warning-age 1d, CRITICAL (exit 2) past
                      --critical-age 2d.
  stale_filter_logged: a filter past max_filter_age: one warning in the log,
                      pw_filter_bypassed, health WARNING.
  health_unknown_and_down: STATS forbidden (not in admin_users or
                      stats_users): UNKNOWN (exit 3); no daemon: CRITICAL
                      (exit 2).
  nt_canary:          [ntlm] upstream only: passes with the key in the
                      range, fails upstream-missing-key without it.
  url_canary:         a URL filter whose feed lists the test page: through
                      the range API once; without it: a pass at the filter.
  canary_off:         canary = 0: canary=off, interval 0.
  offline_canary:     offline [passwords], [ntlm] and [urls] filters, no
                      upstream: pending until the first run, each canary
                      passes at its filter (nothing fetched, sent or
                      cached), fails filter-damaged once the files are
                      rewritten in place, and a RELOAD with canary = 0
                      clears the failure (off, health OK).
  offline_canary_missing_key: offline filters without the canary's keys:
                      filter-missing-key; a good filter and a RELOAD: ok.
  range_canary_without_upstream: a range filter with upstream = none
                      passes at the filter; [ntlm] empty is off; stale:
                      fails no-upstream.
  alert_rules:        data/prometheus/breachd-alerts.yml passes promtool
                      check rules (skipped without promtool).
  grafana_dashboard:  data/grafana/breachd-dashboard.json: every metric its
                      queries name is one that /metrics serves (password,
                      NT and URL sections configured), every panel has a
                      query, the datasource is a variable.
"""
import collections
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, test, wait_for  # noqa: E402
from ntfx import nthash  # noqa: E402

CANARY = dtest.sha1hex("password")  # 5BAA61E4..., in every corpus


PERIOD = 240  # seconds: [daemon] canary below
CANARY_KEYS = {"canary": "%ds" % PERIOD}
UPSTREAM_KEYS = {"timeout": "300s"}  # longer than a period: a jump ends no fetch


def daemon(ctx, filt, upstream, **daemon_keys):
    keys = dict(CANARY_KEYS)
    keys.update(daemon_keys)
    conf = ctx.config(daemon=keys, passwords={"filter": filt, "upstream": upstream},
                      upstream=UPSTREAM_KEYS)
    return ctx.daemon(conf, clock=dtest.Clock(ctx))


def periods(d, n, key="canary_runs"):
    """n canary periods on d's driven clock, each run finished (STATS key)."""
    for _ in range(n):
        want = d.stats()[key] + 1
        d.clock.advance(PERIOD)
        wait_for(lambda: d.stats()[key] >= want, 30 * dtest.SLOW, "a run (%s)" % key)


def mirror_upstream(ctx, c):
    return "http://127.0.0.1:%d/range/{prefix}" % ctx.nginx(c.mirror)


def health(ctx, d, *args):
    return ctx.breachctl("--socket", d.sock if d else ctx.path("none.sock"), "health", *args,
                         check_rc=False)


def canary_requests(ctx):
    path = ctx.path("nginx", "access.log")
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum("/range/%s " % CANARY[:5] in ln for ln in f)


@test
def canary_passes(ctx):
    c = dtest.corpus()
    d = daemon(ctx, c.filter, mirror_upstream(ctx, c))
    periods(d, 5)
    st = d.stats()
    eq((st["canary"], st["canary_reason"], st["canary_ok"]), ("ok", "none", 1), "canary")
    eq(st["canary_failures"], 0, "canary_failures")
    check(abs(st["canary_last_time"] - time.time() - d.clock.offset) < 60,
          "canary_last_time %r" % st)
    eq((st["nt_canary"], st["url_canary"]), ("off", "off"), "no [ntlm] and no URL filter")
    # Through the cache: one fetch for every run (ttl 7d).
    eq(canary_requests(ctx), 1, "upstream requests of the canary's range")
    # Not a user's request: the counters users see did not move.
    for key in ("requests_pw", "pw_pwned", "pw_clean", "pw_unknown", "pw_filter_maybe"):
        eq(st[key], 0, key)
    # Its partition is its own: a user's check of the same hash is fetched.
    cl = d.client()
    eq(cl.ask("1 PW " + CANARY), "1 PWNED %d" % c.counts[CANARY], "a user's check")
    cl.close()
    # nginx writes its log line after the answer: wait for it, then count
    wait_for(lambda: canary_requests(ctx) >= 2, 5 * dtest.SLOW, "the user's fetch in nginx's log")
    eq(canary_requests(ctx), 2, "upstream requests after a user's check")
    r = health(ctx, d)
    eq(r.returncode, 0, "health exit status (%s)" % r.stdout)
    check(r.stdout.startswith("BREACHD OK - ") and r.stdout.count("\n") == 1,
          "health line %r" % r.stdout)
    check(" | filter_age=" in r.stdout and "canary_failures=0c" in r.stdout,
          "health performance data %r" % r.stdout)
    check("password canary ok" in r.stdout, "health text %r" % r.stdout)
    d.stop_ok()


@test
def canary_decoys(ctx):
    """[upstream] decoys = 2: the canary's one fetch goes with two decoys,
    like a user's, and nothing more for later runs."""
    c = dtest.corpus()
    conf = ctx.config(daemon=CANARY_KEYS, upstream=dict(UPSTREAM_KEYS, decoys="2"),
                      passwords={"filter": c.filter, "upstream": mirror_upstream(ctx, c)})
    d = ctx.daemon(conf, clock=dtest.Clock(ctx))
    periods(d, 4)
    eq(d.stats()["canary"], "ok", "canary")
    with open(ctx.path("nginx", "access.log")) as f:
        lines = [ln for ln in f if "/range/" in ln]
    eq(len(lines), 3, "range requests: the canary's and two decoys (%r)" % lines)
    eq(canary_requests(ctx), 1, "the canary's range")
    d.stop_ok()


@test
def canary_upstream_down(ctx):
    c = dtest.corpus()
    dead = "http://127.0.0.1:%d/range/{prefix}" % dtest.free_port()  # nobody listens
    d = daemon(ctx, c.filter, dead)
    periods(d, 1)
    wait_for(lambda: "canary: the password check" in d.log(), 30 * dtest.SLOW,
             "the canary's warning in the log")
    line = [ln for ln in d.log().splitlines() if "canary: the password check" in ln][0]
    check("warning" in line and "failed" in line, "the canary's log line %r" % line)
    check(CANARY not in d.log() and CANARY[:5] not in d.log(), "the log names the hash")
    st = d.stats()
    eq(st["canary"], "failed", "canary")
    check(st["canary_reason"] in ("upstream-unavailable", "circuit-open"),
          "canary_reason %r" % st["canary_reason"])
    r = health(ctx, d)
    eq(r.returncode, 2, "health exit status (%s)" % r.stdout)
    check(r.stdout.startswith("BREACHD CRITICAL - ") and "password canary failed" in r.stdout,
          "health line %r" % r.stdout)
    # UNKNOWN answers by reason: users' checks of hashes the filter holds.
    cl = d.client()
    hashes = c.present(3)
    reasons = collections.Counter()
    for i, h in enumerate(hashes):
        ans = cl.ask("%d PW %s" % (i, h))
        check(ans.startswith("%d UNKNOWN " % i), "answer %r" % ans)
        reasons[ans.split()[2]] += 1
    eq(cl.ask("u URL http://example.com/"), "u UNKNOWN filter-unavailable", "a URL check")
    reasons["filter-unavailable"] += 1
    cl.close()
    st = d.stats()
    for reason, n in reasons.items():
        eq(st["unknown_" + reason.replace("-", "_")], n, "unknown_" + reason)
    eq(sum(v for k, v in st.items() if k.startswith("unknown_")), sum(reasons.values()),
       "every UNKNOWN counted once")
    d.stop_ok()


@test
def canary_filter_missing_key(ctx):
    c = dtest.corpus()
    inp = ctx.path("without-canary.txt")
    with open(c.txt) as f, open(inp, "w") as out:
        out.writelines(ln for ln in f if not ln.startswith(CANARY))
    filt = ctx.build_filter(inp, ctx.path("without-canary.bfuse"))
    check(not dtest.filter_says(ctx, filt, [CANARY])[CANARY], "the filter still says maybe")
    d = daemon(ctx, filt, mirror_upstream(ctx, c))
    periods(d, 1)
    wait_for(lambda: "filter-missing-key" in d.log(), 30 * dtest.SLOW, "the canary's warning")
    st = d.stats()
    eq((st["canary"], st["canary_reason"]), ("failed", "filter-missing-key"), "canary")
    eq(canary_requests(ctx), 0, "the canary stopped at the filter")
    # Logged once for a reason that stays.
    periods(d, 2)
    eq(d.stats()["canary_failures"], 3, "canary_failures")
    eq(d.log().count("filter-missing-key"), 1, "warnings for one lasting failure")
    r = health(ctx, d)
    eq(r.returncode, 2, "health exit status (%s)" % r.stdout)
    check("password canary failed: filter-missing-key" in r.stdout, "health line %r" % r.stdout)
    d.stop_ok()


@test
def health_filter_age(ctx):
    c = dtest.corpus()
    filt = ctx.build_filter(c.txt, ctx.path("old.bfuse"), epoch=str(int(time.time()) - 3 * 86400))
    d = daemon(ctx, filt, mirror_upstream(ctx, c), canary="0")
    r = health(ctx, d)
    eq(r.returncode, 0, "health, default ages (%s)" % r.stdout)
    check("password filter 3d old" in r.stdout, "health line %r" % r.stdout)
    r = health(ctx, d, "--warning-age", "1d")
    eq(r.returncode, 1, "health --warning-age 1d (%s)" % r.stdout)
    check(r.stdout.startswith("BREACHD WARNING - password filter 3d old"), r.stdout)
    check("filter_age=%d" % 0 not in r.stdout and ";86400;" in r.stdout, r.stdout)
    r = health(ctx, d, "--warning-age", "1d", "--critical-age", "48h")
    eq(r.returncode, 2, "health --critical-age 48h (%s)" % r.stdout)
    check(r.stdout.startswith("BREACHD CRITICAL - "), r.stdout)
    r = health(ctx, d, "--warning-age", "soon")
    eq((r.returncode, r.stdout.split(" - ")[0]), (3, "BREACHD UNKNOWN"), "a bad age")
    d.stop_ok()


@test
def stale_filter_logged(ctx):
    """A password filter past max_filter_age is bypassed: said once in the
    log (the housekeeping tick, 1 s with this ttl: driven), counted per
    check, and a health WARNING."""
    c = dtest.corpus()
    filt = ctx.build_filter(c.txt, ctx.path("old.bfuse"), epoch=str(int(time.time()) - 3 * 86400))
    conf = ctx.config(daemon={"canary": "0"}, cache={"ttl": "5s", "max_stale": "5s"},
                      passwords={"filter": filt, "upstream": mirror_upstream(ctx, c),
                                 "max_filter_age": "2d"})
    clock = dtest.Clock(ctx)
    d = ctx.daemon(conf, clock=clock)
    clock.advance(1)
    wait_for(lambda: "past [passwords] max_filter_age" in d.log(), 30 * dtest.SLOW,
             "the stale filter's warning")
    cl = d.client()
    h = c.present(1)[0]
    eq(cl.ask("1 PW " + h), "1 PWNED %d" % c.counts[h], "a check")
    cl.close()
    st = d.stats()
    eq((st["filter_stale"], st["pw_filter_bypassed"]), (1, 1), "stale and bypassed")
    r = health(ctx, d)
    eq(r.returncode, 1, "health (%s)" % r.stdout)
    check("password filter past max_filter_age" in r.stdout, r.stdout)
    for _ in range(3):  # more ticks
        clock.advance(1)
    eq(d.log().count("past [passwords] max_filter_age"), 1, "warnings for one stale filter")
    d.stop_ok()


@test
def health_unknown_and_down(ctx):
    conf = ctx.config(daemon={"admin_users": "nobody", "stats_users": ""})
    d = ctx.daemon(conf)
    r = health(ctx, d)
    eq(r.returncode, 3, "health without STATS (%s)" % r.stdout)
    check(r.stdout.startswith("BREACHD UNKNOWN - cannot read STATS"), r.stdout)
    d.stop_ok()
    r = health(ctx, d)
    eq(r.returncode, 2, "health, daemon stopped (%s)" % r.stdout)
    check(r.stdout.startswith("BREACHD CRITICAL - breachd does not answer"), r.stdout)


NT_CANARY = "8846F7EAEE8FB117AD06BDD830B7586C"  # the NT hash of "password"


@test
def nt_canary(ctx):
    """[ntlm] with only an upstream (file://): the NT canary passes when the
    range holds its key, and fails upstream-missing-key when it does not."""
    mirror = ctx.path("ntlm")
    os.makedirs(mirror)
    with open(os.path.join(mirror, NT_CANARY[:5] + ".txt"), "w") as f:
        f.write("%s:1000\r\n" % NT_CANARY[5:])
    conf = ctx.config(daemon=CANARY_KEYS, upstream=UPSTREAM_KEYS,
                      ntlm={"upstream": "file://%s/{prefix}.txt" % mirror})
    d = ctx.daemon(conf, clock=dtest.Clock(ctx))
    periods(d, 2, "nt_canary_runs")
    st = d.stats()
    eq((st["nt_canary"], st["canary"], st["url_canary"]), ("ok", "off", "off"), "canaries")
    eq((st["requests_nt"], st["nt_pwned"]), (0, 0), "the NT counters users see")
    d.stop_ok()
    with open(os.path.join(mirror, NT_CANARY[:5] + ".txt"), "w") as f:
        f.write("%s:1000\r\n" % ("0" * 27))
    shutil.rmtree(ctx.path("cache"))
    d = ctx.daemon(conf, clock=dtest.Clock(ctx, "clock2"))
    periods(d, 1, "nt_canary_runs")
    eq(d.stats()["nt_canary_failures"], 1, "an NT failure")
    eq(d.stats()["nt_canary_reason"], "upstream-missing-key", "nt_canary_reason")
    check("canary: the NT check" in d.log() and "upstream-missing-key" in d.log(), d.log())
    r = health(ctx, d)
    eq(r.returncode, 2, "health (%s)" % r.stdout)
    check("NT canary failed: upstream-missing-key" in r.stdout, r.stdout)
    d.stop_ok()


@test
def url_canary(ctx):
    """A URL filter whose feed lists the canary's test page: the URL canary
    goes through the filter and the range API once (then the cache); a
    filter without it passes at the filter."""
    feed = ctx.path("feed.txt")
    with open(feed, "w") as f:
        f.write("http://testsafebrowsing.appspot.com/s/malware.html\nhttp://bad.test/\n")
    filt, ranges = ctx.path("urls.bbf"), ctx.path("ranges")
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--output", filt, "--ranges-dir",
                  ranges, "--input", feed + "=malware")
    conf = ctx.config(daemon=CANARY_KEYS, upstream=UPSTREAM_KEYS,
                      urls={"filter": filt, "upstream": "file://%s/{prefix}.txt" % ranges})
    d = ctx.daemon(conf, clock=dtest.Clock(ctx))
    periods(d, 3, "url_canary_runs")
    st = d.stats()
    eq((st["url_canary"], st["url_canary_failures"]), ("ok", 0), "url_canary")
    # Fetched (the filter said maybe), then from the cache: no fetch for
    # later runs. (A range fetched in the second the filter was built is
    # revalidated: url_fresh_after, docs/architecture.md.)
    check(st["cache_misses"] >= 1, "no range fetch: %r" % st["cache_misses"])
    periods(d, 1, "url_canary_runs")
    fetched = d.stats()["cache_misses"]
    periods(d, 3, "url_canary_runs")
    eq(d.stats()["cache_misses"], fetched, "range fetches of later runs")
    eq((st["requests_url"], st["url_blocked"], st["url_unknown"]), (0, 0, 0), "URL counters")
    d.stop_ok()
    with open(feed, "w") as f:
        f.write("http://bad.test/\n")
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--output", filt, "--ranges-dir",
                  ranges, "--input", feed + "=malware")
    shutil.rmtree(ctx.path("cache"))
    d = ctx.daemon(conf, clock=dtest.Clock(ctx, "clock2"))
    periods(d, 2, "url_canary_runs")
    st = d.stats()
    eq((st["url_canary"], st["cache_misses"]), ("ok", 0), "a filter's no is a pass")
    d.stop_ok()


@test
def canary_off(ctx):
    d = ctx.daemon(ctx.config(daemon={"canary": "0"}))
    st = d.stats()
    eq((st["canary"], st["canary_interval_ms"], st["canary_runs"]), ("off", 0, 0), "canary off")
    eq(health(ctx, d).returncode, 0, "health")
    d.stop_ok()


# ---- offline filters and upstream = none: the canary never needs an upstream

def offline_filters(ctx, with_canary=True, tag="", generation=1):
    """Offline [passwords], [ntlm] and [urls] filters: the first two hold the
    canary's keys (unless with_canary is false), the URL feed does not list
    the test page. {section: path}."""
    pw = {dtest.sha1hex("offline-canary-%d" % i): 5 + i for i in range(40)}
    nt = {nthash("offline-canary-%d" % i): 5 + i for i in range(40)}
    if with_canary:
        pw[CANARY] = 9659365
        nt[NT_CANARY] = 9659365
    out = {}
    for section, kind, entries in (("passwords", "password-sha1", pw),
                                   ("ntlm", "password-ntlm", nt)):
        inp = ctx.path("%s%s.txt" % (section, tag))
        with open(inp, "w") as f:
            f.writelines("%s:%d\n" % (h, c) for h, c in sorted(entries.items()))
        out[section] = ctx.path("%s%s.offline" % (section, tag))
        ctx.breachctl("filter", "build", "--kind", kind, "--offline", "--input", inp,
                      "--output", out[section], "--generation", str(generation))
    feed = ctx.path("feed%s.txt" % tag)
    with open(feed, "w") as f:
        f.write("http://bad.example/\n")
    out["urls"] = ctx.path("urls%s.offline" % tag)
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--offline", "--input",
                  feed + "=malware", "--output", out["urls"])
    return out


def offline_config(ctx, filters, canary):
    return ctx.config(daemon={"canary": canary},
                      passwords={"filter": filters["passwords"], "upstream": "none"},
                      ntlm={"filter": filters["ntlm"], "upstream": ""},  # empty: the same
                      urls={"filter": filters["urls"]})


def canaries(st):
    return tuple(st[p + "canary"] for p in ("", "nt_", "url_"))


def reload(d):
    c = d.client()
    eq(c.ask("r RELOAD", timeout=30), "r RELOADED", "RELOAD")
    c.close()


@test
def offline_canary(ctx):
    """Offline filters for all three kinds, no upstream anywhere: pending
    until the first run; each canary passes at its filter with nothing
    fetched, sent or cached; a filter rewritten in place fails its canary
    (filter-damaged, health CRITICAL); a RELOAD with canary = 0 clears the
    failure (off, health OK)."""
    filters = offline_filters(ctx)
    conf = offline_config(ctx, filters, "1h")
    d = ctx.daemon(conf)
    st = d.stats()
    eq(canaries(st), ("pending",) * 3, "before the first run")
    eq(health(ctx, d).returncode, 0, "health while pending")
    offline_config(ctx, filters, "200ms")
    reload(d)
    wait_for(lambda: min(d.stats()[p + "canary_runs"] for p in ("", "nt_", "url_")) >= 2,
             30 * dtest.SLOW, "two runs of each canary")
    st = dtest.no_upstream_stats(d)
    eq(canaries(st), ("ok",) * 3, "offline canaries")
    eq(sum(st[p + "canary_failures"] for p in ("", "nt_", "url_")), 0, "failures")
    eq(st["cache_misses"], 0, "range lookups")
    r = health(ctx, d)
    eq(r.returncode, 0, "health (%s)" % r.stdout)
    for path in filters.values():  # rewritten in place: the same bytes, a new mtime
        with open(path, "r+b") as f:
            b = f.read(8)
            f.seek(0)
            f.write(b)
    wait_for(lambda: canaries(d.stats()) == ("failed",) * 3, 30 * dtest.SLOW,
             "the canaries to fail")
    st = dtest.no_upstream_stats(d)
    eq(tuple(st[p + "canary_reason"] for p in ("", "nt_", "url_")), ("filter-damaged",) * 3,
       "reasons")
    r = health(ctx, d)
    eq(r.returncode, 2, "health (%s)" % r.stdout)
    check("password canary failed: filter-damaged" in r.stdout, r.stdout)
    offline_config(ctx, filters, "0")
    reload(d)
    st = d.stats()
    eq(canaries(st), ("off",) * 3, "canary = 0 after a RELOAD")
    eq((st["canary_reason"], st["canary_ok"], st["canary_runs"], st["nt_canary_runs"]),
       ("none", 0, 0, 0), "the failure cleared")
    r = health(ctx, d)
    eq(r.returncode, 0, "health after the RELOAD (%s)" % r.stdout)
    d.stop_ok()


@test
def offline_canary_missing_key(ctx):
    """Offline filters without the canary's keys: filter-missing-key for
    passwords and NT hashes; a good filter renamed in and a RELOAD: the
    canaries pass again and health is OK."""
    bad = offline_filters(ctx, with_canary=False)
    good = offline_filters(ctx, tag="-good", generation=2)
    d = ctx.daemon(offline_config(ctx, bad, "200ms"))
    wait_for(lambda: d.stats()["nt_canary_failures"] >= 1 and d.stats()["canary_failures"] >= 1,
             30 * dtest.SLOW, "the canaries to fail")
    st = dtest.no_upstream_stats(d)
    eq((st["canary_reason"], st["nt_canary_reason"], st["url_canary"]),
       ("filter-missing-key", "filter-missing-key", "ok"), "canaries")
    eq(health(ctx, d).returncode, 2, "health")
    for section in ("passwords", "ntlm"):
        os.replace(good[section], bad[section])
    reload(d)
    st = d.stats()
    eq(canaries(st)[:2], ("failed", "failed"), "a failure shows until the next run")
    wait_for(lambda: canaries(d.stats()) == ("ok",) * 3, 30 * dtest.SLOW, "the canaries to pass")
    st = dtest.no_upstream_stats(d)
    eq((st["canary_reason"], st["nt_canary_reason"]), ("none", "none"), "reasons")
    eq(health(ctx, d).returncode, 0, "health")
    check("canary: the password check passes again" in d.log(), "logged")
    d.stop_ok()


@test
def range_canary_without_upstream(ctx):
    """A range filter with upstream = none: the canary passes at the
    filter's maybe (no range lookup); [ntlm] with neither filter nor
    upstream (empty) has no canary; the filter past max_filter_age is
    bypassed for clients, so the canary fails no-upstream."""
    c = dtest.corpus()
    conf = ctx.config(daemon={"canary": "200ms"},
                      passwords={"filter": c.filter, "upstream": "none"})
    d = ctx.daemon(conf)
    wait_for(lambda: d.stats()["canary_runs"] >= 2, 30 * dtest.SLOW, "two canary runs")
    st = dtest.no_upstream_stats(d)
    eq(canaries(st), ("ok", "off", "off"), "canaries")
    d.stop_ok()
    old = ctx.build_filter(c.txt, ctx.path("old.bfuse"), epoch=str(int(time.time()) - 3 * 86400))
    conf = ctx.config(daemon={"canary": "200ms"},
                      passwords={"filter": old, "upstream": "none", "max_filter_age": "1d"})
    d = ctx.daemon(conf)
    wait_for(lambda: d.stats()["canary_failures"] >= 1, 30 * dtest.SLOW, "a canary failure")
    eq(d.stats()["canary_reason"], "no-upstream", "canary_reason")
    d.stop_ok()


@test
def alert_rules(ctx):
    promtool = shutil.which("promtool")
    if not promtool:
        raise dtest.Skip("no promtool (Debian package prometheus)")
    rules = os.path.join(dtest.ARGS.source_root, "data", "prometheus", "breachd-alerts.yml")
    r = subprocess.run([promtool, "check", "rules", rules], capture_output=True, text=True,
                       timeout=60)
    eq(r.returncode, 0, "promtool check rules: %s%s" % (r.stdout, r.stderr))


def metric_names(ctx, **sections):
    """The sample names /metrics serves (metrics_listen on a free port)."""
    port = dtest.free_port()
    d = ctx.daemon(ctx.config(daemon={"metrics_listen": "127.0.0.1:%d" % port}, **sections))
    h = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    h.request("GET", "/metrics")
    body = h.getresponse().read().decode()
    h.close()
    d.stop_ok()
    return {ln.split()[0].split("{")[0] for ln in body.splitlines()
            if ln and not ln.startswith("#")}


def dashboard_queries(dash):
    """(panel title, expr) of every target of every panel, rows' too."""
    out = []
    for p in dash["panels"]:
        for q in p.get("panels", []) + [p]:
            for t in q.get("targets", []):
                out.append((q.get("title"), t.get("expr", "")))
    return out


@test
def grafana_dashboard(ctx):
    path = os.path.join(dtest.ARGS.source_root, "data", "grafana", "breachd-dashboard.json")
    with open(path) as f:
        dash = json.load(f)
    c = dtest.corpus()
    up = mirror_upstream(ctx, c)
    urls = ctx.path("urls.txt")
    with open(urls, "w") as f:
        f.write("http://phish.example.test/login\n")
    ufilter = ctx.path("urls.bbf")
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--input", urls + "=phishing",
                  "--output", ufilter)
    have = metric_names(ctx, passwords={"filter": c.filter, "upstream": up},
                        ntlm={"upstream": up + "?mode=ntlm"},
                        urls={"filter": ufilter, "upstream": ""})
    queries = dashboard_queries(dash)
    check(len(queries) >= 8, "a dashboard of a few panels: %r" % queries)
    used = set()
    for title, expr in queries:
        check(expr, "panel %r has an empty query" % title)
        # metric names: breachd_... identifiers, and the regex selectors'
        names = set(re.findall(r"\bbreachd_[a-z0-9_]+", expr))
        check(names, "panel %r queries no breachd metric: %r" % (title, expr))
        used |= {n for n in names if not n.endswith("_")}
    missing = sorted(n for n in used if n not in have)
    eq(missing, [], "metrics the dashboard uses that /metrics does not serve")
    ds = json.dumps(dash)
    check("${datasource}" in ds or "${DS_PROMETHEUS}" in ds, "the datasource is a variable")
    check(dash.get("uid") and dash.get("title"), "uid and title")


if __name__ == "__main__":
    dtest.main()
