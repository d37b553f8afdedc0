#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An offline host never sends a check anywhere (docs/privacy.md, "What an
offline host sends"), whatever state its filters are in. A real nginx
mirror holding every range stands by as the upstream of [passwords] and
[ntlm]; its access log must stay empty.

  stale_keeps_answering: offline [passwords], [ntlm] and [urls] filters
                      past max_filter_age = 1s, with upstreams configured
                      ([urls] when_stale = upstream): every check still
                      answered by the filter (PWNED with its count, CLEAN,
                      BLOCKED, SAFE), filter_stale = 1, nothing bypassed,
                      no range request, a warning in the log.
  damaged_unknown:    the offline filters rewritten in place under their
                      mappings: every PW, NT and URL check UNKNOWN
                      filter-damaged (counted in unknown_filter_damaged),
                      no range request, STATS filter_damaged = 1.
  offline_host_sends_nothing: corpus.md's documented offline configuration
                      (read from the file) under strace -f -e
                      trace=connect,socket: checks of every kind (PW, NT,
                      URL, SIMILAR) and the canary, fresh, stale (a RELOAD
                      to filters built 100 days ago) and damaged (rewritten
                      in place): only Unix sockets, ever.
  min_count_filter_refused: an offline --min-count 100 filter as [passwords]
                      filter is refused (start, --check-config) unless
                      min_count_ok = yes, which states the threshold.
  check_config_warns: an offline filter with an upstream configured and no
                      [http] listen, and a section offline or none next to
                      one that still names HIBP: --check-config warns,
                      naming the sections; the documented offline
                      configuration gets no such warning.
"""
import os
import random
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, sha1hex, test, wait_for  # noqa: E402
from ntfx import nginx_location, nthash, write_ntlm_range  # noqa: E402


def write_corpus(path, entries):
    with open(path, "w") as f:
        for h in sorted(entries):
            f.write("%s:%d\n" % (h, entries[h]))
    return path


def offline_filter(ctx, name, entries, kind, epoch=None):
    inp = write_corpus(ctx.path(name + ".txt"), entries)
    out = ctx.path(name + ".bfuse")
    ctx.breachctl("filter", "build", "--kind", kind, "--offline", "--input", inp, "--output", out,
                  env={"SOURCE_DATE_EPOCH": epoch} if epoch is not None else None)
    return out


def offline_url_filter(ctx, epoch=None):
    feed = ctx.path("feed.txt")
    with open(feed, "w") as f:
        f.write("http://bad.example/\nhttp://testsafebrowsing.appspot.com/s/malware.html\n")
    out = ctx.path("urls.offline")
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--offline", "--input",
                  feed + "=malware", "--output", out,
                  env={"SOURCE_DATE_EPOCH": epoch} if epoch is not None else None)
    return out


class Host:
    """Offline [passwords], [ntlm] and [urls] filters (built `age` seconds
    ago) and an nginx mirror holding every range of the first two, named as
    the upstreams of all three ([urls] when_stale = upstream)."""

    def __init__(self, ctx, age=0):
        self.pw = {sha1hex("host-%d" % i): 10 + i for i in range(50)}
        self.nt = {nthash("host-nt-%d" % i): 20 + i for i in range(50)}
        epoch = str(int(time.time()) - age) if age else None
        self.pw_filter = offline_filter(ctx, "pw", self.pw, "password-sha1", epoch)
        self.nt_filter = offline_filter(ctx, "nt", self.nt, "password-ntlm", epoch)
        self.url_filter = offline_url_filter(ctx, epoch)
        mirror = ctx.path("mirror")
        dtest.write_range(mirror, self.pw)
        write_ntlm_range(os.path.join(mirror, "ntlm"), self.nt, padding=0)
        port = ctx.nginx(mirror, nginx_location(mirror))
        self.upstream = "http://127.0.0.1:%d/range/{prefix}" % port
        rng = random.Random(5)
        self.clean_pw = [dtest.rand_hash(rng) for _ in range(2)]
        self.clean_nt = ["%032X" % rng.getrandbits(128) for _ in range(2)]

    def config(self, ctx, **extra):
        return ctx.config(passwords=dict({"filter": self.pw_filter, "upstream": self.upstream},
                                         **extra),
                          ntlm=dict({"filter": self.nt_filter,
                                     "upstream": self.upstream + "?mode=ntlm"}, **extra),
                          urls=dict({"filter": self.url_filter, "upstream": self.upstream,
                                     "when_stale": "upstream"}, **extra),
                          daemon={"canary": "0"}, upstream={"decoys": "2"},
                          cache={"ttl": "5s", "max_stale": "5s"})  # a housekeeping tick a second

    def ask_all(self, cl):
        """One breached and two clean checks of each kind: {id: answer}."""
        reqs = [("p", "PW", sorted(self.pw)[0])] + [("c%d" % i, "PW", h)
                                                    for i, h in enumerate(self.clean_pw)]
        reqs += [("n", "NT", sorted(self.nt)[0])] + [("m%d" % i, "NT", h)
                                                     for i, h in enumerate(self.clean_nt)]
        reqs += [("u", "URL", "http://bad.example/x"), ("v", "URL", "http://good.example/")]
        for rid, verb, h in reqs:
            cl.send("%s %s %s\n" % (rid, verb, h))
        return dict(ln.split(" ", 1) for ln in cl.lines(len(reqs)))


@test
def stale_keeps_answering(ctx):
    host = Host(ctx, age=3 * 86400)
    d = ctx.daemon(host.config(ctx, max_filter_age="1s"))
    cl = d.client()
    got = host.ask_all(cl)
    eq(got["p"], "PWNED %d" % host.pw[sorted(host.pw)[0]], "a breached password, stale filter")
    eq(got["n"], "PWNED %d" % host.nt[sorted(host.nt)[0]], "a breached NT hash, stale filter")
    for rid in ("c0", "c1", "m0", "m1"):
        eq(got[rid], "CLEAN", "clean check " + rid)
    eq((got["u"], got["v"]), ("BLOCKED malware bad.example/", "SAFE"), "URL checks")
    cl.close()
    st = dtest.no_upstream_stats(d)
    eq((st["filter_stale"], st["nt_filter_stale"], st["url_filter_stale"]), (1, 1, 1),
       "filter_stale")
    eq((st["pw_filter_bypassed"], st["nt_filter_bypassed"], st["url_filter_bypassed"]),
       (0, 0, 0), "bypassed")
    wait_for(lambda: "still answering from it" in d.log(), 15 * dtest.SLOW, "the stale warning")
    d.stop_ok()
    dtest.nginx_log_empty(ctx)


def rewrite_in_place(path):
    """The operator's mistake: bytes of the live file rewritten where they
    are (the same bytes: only the file's times move)."""
    with open(path, "r+b") as f:
        f.seek(4096)
        b = f.read(16)
        f.seek(4096)
        f.write(b)


@test
def damaged_unknown(ctx):
    host = Host(ctx)
    d = ctx.daemon(host.config(ctx))
    cl = d.client()
    got = host.ask_all(cl)
    check(got["p"].startswith("PWNED ") and got["c0"] == "CLEAN", "before: %r" % got)
    time.sleep(0.05)  # a later mtime than the one loaded, even on coarse clocks
    rewrite_in_place(host.pw_filter)
    rewrite_in_place(host.nt_filter)
    rewrite_in_place(host.url_filter)
    got = host.ask_all(cl)
    for rid, ans in sorted(got.items()):
        eq(ans, "UNKNOWN filter-damaged", "check %s of a filter changed in place" % rid)
    cl.close()
    st = dtest.no_upstream_stats(d)
    eq(st["unknown_filter_damaged"], 8, "unknown_filter_damaged")
    eq((st["filter_damaged"], st["nt_filter_damaged"], st["url_filter_damaged"]), (1, 1, 1),
       "filter_damaged")
    d.stop_ok()
    dtest.nginx_log_empty(ctx)


HIBP = "https://api.pwnedpasswords.com/range/{prefix}"


def check_config(conf):
    r = subprocess.run(dtest.breachd_argv("--config", conf, "--check-config"), env=dtest.base_env(),
                       capture_output=True, text=True, timeout=60)
    eq(r.returncode, 0, "--check-config: " + r.stderr)
    return [ln for ln in r.stderr.splitlines() if "warning" in ln]


@test
def check_config_warns(ctx):
    host = Host(ctx)
    urls = host.url_filter
    # An offline filter with an upstream nothing uses.
    conf = ctx.config("a.conf", passwords={"filter": host.pw_filter, "upstream": host.upstream},
                      ntlm={"filter": host.nt_filter, "upstream": "none"})
    w = check_config(conf)
    check(any("[passwords] filter is offline but [passwords] upstream names a range API" in ln
              and "set upstream = none" in ln for ln in w), "no warning: %r" % w)
    check(not any("[ntlm]" in ln for ln in w), "[ntlm] is offline and none: %r" % w)
    # ... unless [http] listen serves range bodies from it: the reason to keep both.
    conf = ctx.config("b.conf", passwords={"filter": host.pw_filter, "upstream": host.upstream},
                      ntlm={"filter": host.nt_filter, "upstream": "none"},
                      http={"listen": "127.0.0.1:%d" % dtest.free_port()})
    eq(check_config(conf), [], "warnings with [http] listen")
    # [passwords] offline, [ntlm] still HIBP (its default), [urls] offline
    # with an upstream.
    conf = ctx.config("c.conf", passwords={"filter": host.pw_filter, "upstream": "none"},
                      ntlm={"upstream": HIBP + "?mode=ntlm"},
                      urls={"filter": urls, "upstream": host.upstream, "when_stale": "upstream"})
    w = check_config(conf)
    check(any("[passwords] is offline (or upstream = none) but [ntlm] upstream is still HIBP's"
              in ln for ln in w), "no HIBP warning: %r" % w)
    check(any("[urls] filter is offline but [urls] upstream" in ln for ln in w), "[urls]: %r" % w)
    check(any("when_stale = upstream with an offline filter" in ln for ln in w), "%r" % w)
    check(not any("HIBP" in ln and "[passwords] upstream" in ln for ln in w), "%r" % w)
    # upstream = none and an empty upstream are the same.
    conf = ctx.config("d.conf", passwords={"filter": "", "upstream": ""},
                      ntlm={"upstream": HIBP + "?mode=ntlm"})
    w = check_config(conf)
    check(any("[passwords] upstream = none (or empty) with no filter" in ln for ln in w), "%r" % w)
    check(any("[ntlm] upstream is still HIBP's" in ln for ln in w), "%r" % w)
    # Everything offline: no warning at all.
    conf = ctx.config("e.conf", passwords={"filter": host.pw_filter, "upstream": "none"},
                      ntlm={"filter": host.nt_filter, "upstream": "none"},
                      urls={"filter": urls})
    eq(check_config(conf), [], "warnings of an all-offline configuration")

@test
def min_count_filter_refused(ctx):
    """An offline filter built with --min-count 100 as [passwords] filter:
    refused at start and by --check-config (a password seen 65 times would
    be CLEAN), naming the file and the threshold; under min_count_ok = yes
    it serves and --check-config states the threshold; as similar_filter it
    is fine."""
    rare, common = sha1hex("seen-65-times"), sha1hex("seen-150-times")
    entries = {rare: 65, common: 150}
    popular = offline_filter(ctx, "popular", entries, "password-sha1")
    ctx.breachctl("filter", "build", "--kind", "password-sha1", "--offline", "--min-count", "100",
                  "--input", ctx.path("popular.txt"), "--output", popular)
    full = offline_filter(ctx, "full", entries, "password-sha1")
    conf = ctx.config("a.conf", passwords={"filter": popular, "upstream": "none"},
                      ntlm={"upstream": "none"})
    r = subprocess.run(dtest.breachd_argv("--config", conf, "--check-config"), env=dtest.base_env(),
                       capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "popular.bfuse: built with --min-count 100" in r.stderr and
          "min_count_ok = yes" in r.stderr and "a.conf:" in r.stderr,
          "a --min-count filter as [passwords] filter: exit %d: %s" % (r.returncode, r.stderr))
    d = ctx.daemon(conf, wait=False)
    check(d.proc.wait(timeout=30) != 0, "breachd started on a --min-count filter")
    conf = ctx.config("b.conf", passwords={"filter": popular, "upstream": "none",
                                           "min_count_ok": "yes"}, ntlm={"upstream": "none"})
    w = check_config(conf)
    check(any("--min-count 100 and min_count_ok = yes" in ln and "fewer than 100 times answers "
              "CLEAN" in ln for ln in w), "the threshold is not stated: %r" % w)
    d = ctx.daemon(conf)
    cl = d.client()
    eq(cl.ask("a PW " + rare), "a CLEAN", "under min_count_ok = yes, below the threshold")
    eq(cl.ask("b PW " + common), "b PWNED 150", "above it")
    cl.close()
    d.stop_ok()
    conf = ctx.config("c.conf", passwords={"filter": full, "upstream": "none",
                                           "similar_filter": popular}, ntlm={"upstream": "none"})
    eq(check_config(conf), [], "a --min-count filter as similar_filter")


# ---- the documented offline configuration under strace ----------------------

CANARY_SHA1 = sha1hex("password")
CANARY_NT = "8846F7EAEE8FB117AD06BDD830B7586C"  # the NT hash of "password"


def documented_sections(lib):
    """The [section] key = value lines of corpus.md's block marked
    offline-host-config, /var/lib/breachd/ read as lib/."""
    path = os.path.join(dtest.ARGS.source_root, "docs", "corpus.md")
    text = open(path).read()
    start = text.index("```ini", text.index("offline-host-config")) + len("```ini")
    block = text[start:text.index("```", start)]
    sections, cur = {}, None
    for ln in block.splitlines():
        ln = ln.strip()
        if not ln or ln.startswith("#"):
            continue
        if ln.startswith("["):
            cur = sections.setdefault(ln.strip("[]"), {})
            continue
        k, v = (x.strip() for x in ln.split("=", 1))
        cur[k] = v.replace("/var/lib/breachd/", lib + "/")
    return sections


def build_host_filters(ctx, lib, generation, epoch=None):
    """The three offline files the recipe names, holding the canary's keys."""
    os.makedirs(lib, exist_ok=True)
    pw = {sha1hex("doc-%d" % i): 3 + i for i in range(30)}
    pw[CANARY_SHA1] = 9659365
    nt = {nthash("doc-%d" % i): 3 + i for i in range(30)}
    nt[CANARY_NT] = 9659365
    env = {"SOURCE_DATE_EPOCH": epoch} if epoch is not None else None
    gen = ["--generation", str(generation)]
    for name, kind, entries in (("passwords", "password-sha1", pw),
                                ("ntlm", "password-ntlm", nt)):
        inp = write_corpus(ctx.path("%s-%d.txt" % (name, generation)), entries)
        tmp = os.path.join(lib, name + ".offline.new")
        ctx.breachctl("filter", "build", "--kind", kind, "--offline", "--input", inp, "--output",
                      tmp, *gen, env=env)
        os.replace(tmp, os.path.join(lib, name + ".offline"))
    feed = ctx.path("feed-%d.txt" % generation)
    with open(feed, "w") as f:
        f.write("http://bad.example/\n")
    tmp = os.path.join(lib, "urls.offline.new")
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--offline", "--input",
                  feed + "=malware", "--output", tmp, *gen, env=env)
    os.replace(tmp, os.path.join(lib, "urls.offline"))
    return pw, nt


def every_kind(cl, pw, nt, want):
    """PW, NT, URL and SIMILAR checks; want: the answer every check must
    get (None: its verdict)."""
    hit, clean = sorted(pw)[0], "0" * 40
    reqs = [("PW " + hit, "PWNED %d" % pw[hit]), ("PW " + clean, "CLEAN"),
            ("NT " + sorted(nt)[0], "PWNED %d" % nt[sorted(nt)[0]]), ("NT " + "0" * 32, "CLEAN"),
            ("URL http://bad.example/a", "BLOCKED malware bad.example/"),
            ("URL http://good.example/", "SAFE"),
            ("SIMILAR sha1 %s,%s" % (clean, hit), "SIMILAR %d 1" % pw[hit])]
    for i, (req, _) in enumerate(reqs):
        cl.send("k%d %s\n" % (i, req))
    got = dict(ln.split(" ", 1) for ln in cl.lines(len(reqs)))
    for i, (req, verdict) in enumerate(reqs):
        w = want if want and not req.startswith("SIMILAR") else verdict
        if req.startswith("SIMILAR") and want:
            continue  # SIMILAR answers UNKNOWN of its own when damaged
        eq(got["k%d" % i], w, req)


def canary_runs(d, at_least):
    wait_for(lambda: min(d.stats()[p + "canary_runs"] for p in ("", "nt_", "url_")) >= at_least,
             30 * dtest.SLOW, "%d runs of each canary" % at_least)
    return d.stats()


@test
def offline_host_sends_nothing(ctx):
    """corpus.md's "host with no internet access" configuration, run under
    strace -f -e trace=connect,socket: checks of every kind and the canary
    while the filters are fresh, past max_filter_age (a new generation
    built 100 days ago, RELOAD) and rewritten in place; no socket but Unix
    ones is ever made or connected."""
    strace = shutil.which("strace")
    if not strace or dtest.WRAPPER:
        raise dtest.Skip("no strace (Debian package strace), or under valgrind")
    lib = ctx.path("lib")
    pw, nt = build_host_filters(ctx, lib, 1)
    sections = documented_sections(lib)
    eq(sorted(sections), ["ntlm", "passwords", "urls"], "the documented sections")
    sections["daemon"] = {"canary": "200ms"}
    conf = ctx.config(**sections)
    eq(check_config(conf), [], "--check-config warnings of the documented configuration")
    trace = ctx.path("connect.trace")
    d = ctx.daemon(conf, env=untraceable_leak_check(), tracer=[
        strace, "-f", "-q", "-o", trace, "-e", "trace=connect,socket", "--"])
    check(d.pid != d.proc.pid, "breachd under strace not found")
    cl = d.client()
    every_kind(cl, pw, nt, None)
    st = canary_runs(d, 2)
    eq(tuple(st[p + "canary"] for p in ("", "nt_", "url_")), ("ok",) * 3, "fresh: canaries")
    # stale: a new generation built 100 days ago (past 45d and 2d)
    old = str(int(time.time()) - 100 * 86400)
    build_host_filters(ctx, lib, 2, epoch=old)
    eq(cl.ask("r RELOAD", timeout=30), "r RELOADED", "RELOAD")
    every_kind(cl, pw, nt, None)
    st = canary_runs(d, 2)  # the runs of a new state count from the RELOAD on
    eq((st["filter_stale"], st["nt_filter_stale"], st["url_filter_stale"]), (1, 1, 1), "stale")
    eq(tuple(st[p + "canary"] for p in ("", "nt_", "url_")), ("ok",) * 3, "stale: canaries")
    # damaged: rewritten in place
    for name in ("passwords", "ntlm", "urls"):
        rewrite_in_place(os.path.join(lib, name + ".offline"))
    every_kind(cl, pw, nt, "UNKNOWN filter-damaged")
    wait_for(lambda: d.stats()["url_canary"] == "failed" and d.stats()["canary"] == "failed",
             30 * dtest.SLOW, "the canaries to fail")
    cl.close()
    dtest.no_upstream_stats(d)
    d.stop_ok()
    eq(inet_calls(trace), [], "sockets that are not Unix sockets")
    # The control: the same tracing sees a check that does leave the host.
    conf = ctx.config("control.conf", daemon={"canary": "0"}, passwords={
        "upstream": "http://127.0.0.1:%d/range/{prefix}" % dtest.free_port()})
    trace = ctx.path("control.trace")
    d = ctx.daemon(conf, env=untraceable_leak_check(), tracer=[
        strace, "-f", "-q", "-o", trace, "-e", "trace=connect,socket", "--"])
    cl = d.client()
    check(cl.ask("c PW " + "1" * 40).startswith("c UNKNOWN "), "the control's check")
    cl.close()
    d.stop_ok()
    check(any("AF_INET" in ln for ln in inet_calls(trace)), "the control's connect not seen")


def untraceable_leak_check():
    """The environment of a breachd under strace: LeakSanitizer (ASan
    builds) refuses to run under ptrace and would end it with status 1."""
    opts = os.environ.get("ASAN_OPTIONS", "")
    return {"ASAN_OPTIONS": (opts + ":" if opts else "") + "detect_leaks=0"}


def inet_calls(trace):
    """The socket and connect calls of a finished strace log that are not
    of Unix sockets."""
    lines = open(trace).read().splitlines()
    check(any("+++ exited with 0 +++" in ln for ln in lines), "strace saw the exit: %r" % lines[-3:])
    calls = [ln for ln in lines if " connect(" in ln or " socket(" in ln]
    check(calls, "no socket or connect call traced at all")
    return [ln for ln in calls if "AF_UNIX" not in ln and "AF_LOCAL" not in ln]


if __name__ == "__main__":
    dtest.main()
