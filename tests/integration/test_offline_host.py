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
  check_config_warns: an offline filter with an upstream configured and no
                      [http] listen, and a section offline or none next to
                      one that still names HIBP: --check-config warns,
                      naming the sections; the documented offline
                      configuration gets no such warning.
"""
import os
import random
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


if __name__ == "__main__":
    dtest.main()
