#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Offline URL deltas end to end (docs/filter-format.md, "Sets"):
breachctl filter build --kind url-sha256 --offline --base writes the
expressions the base does not hold, each with its category, under a
category table that starts with the base's; breachd loads base + delta and
answers BLOCKED <category> <expression> / SAFE from them with no upstream
request (a real nginx stands by as the upstream and logs nothing); an
expression of the base keeps the base's category, and one that left the
feeds stays blocked, until the next full build; the set merges into one
layered file that answers the same and that a new delta may name. Refused,
naming the file, by breachctl and by breachd's RELOAD (which keeps serving
the old set): a range (Bloom) delta in an offline set, an offline delta in
a range set, a delta of another base. Standard library only; dtest.py is
the harness."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import fleetfx  # noqa: E402
from dtest import check, eq, test  # noqa: E402


def feed(ctx, name, lines):
    path = ctx.path(name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def build(ctx, out, feeds, *extra, offline=True, check_rc=True):
    """feeds: [(path, category)]; returns the breachctl result."""
    args = ["filter", "build", "--kind", "url-sha256", "--output", out]
    for path, cat in feeds:
        args += ["--input", "%s=%s" % (path, cat)]
    if offline:
        args.append("--offline")
    return ctx.breachctl(*(args + list(extra)), check_rc=check_rc)


def ask_all(c, want):
    urls = list(want)
    for i, u in enumerate(urls):
        c.send("u%d URL %s\n" % (i, u))
    answers = dict(ln.split(" ", 1) for ln in c.lines(len(urls)))
    for i, u in enumerate(urls):
        eq(answers["u%d" % i], want[u], u)


def first_feeds(ctx):
    """The base's feeds: 30 malware hosts, 10 phishing URLs."""
    return [(feed(ctx, "malware1.txt", ["m%d.example" % i for i in range(30)]), "malware"),
            (feed(ctx, "phish1.txt", ["http://p%d.example/login" % i for i in range(10)]),
             "phishing")]


def current_feeds(ctx):
    """The complete current feeds: ads (new, and given first), m0 removed,
    m1 moved to phishing, 10 new malware hosts."""
    return [(feed(ctx, "ads.txt", ["a%d.example" % i for i in range(5)]), "ads"),
            (feed(ctx, "malware2.txt",
                  ["m%d.example" % i for i in range(2, 30)] + ["n%d.example" % i for i in range(10)]),
             "malware"),
            (feed(ctx, "phish2.txt",
                  ["http://p%d.example/login" % i for i in range(10)] + ["m1.example"]),
             "phishing")]


WANT = {
    "http://n3.example/": "BLOCKED malware n3.example/",       # new in the delta
    "http://www.a2.example/x": "BLOCKED ads a2.example/",       # a new category
    "http://p4.example/login?x=1": "BLOCKED phishing p4.example/login",
    "http://m1.example/": "BLOCKED malware m1.example/",        # keeps the base's category
    "http://m0.example/": "BLOCKED malware m0.example/",        # removed: until the next base
    "http://m7.example/a/b": "BLOCKED malware m7.example/",
    "http://clean.example/": "SAFE",
}


@test
def delta_daemon_merge(ctx):
    base, delta = ctx.path("urls.bfuse"), ctx.path("urls-delta.bfuse")
    build(ctx, base, first_feeds(ctx))
    r = build(ctx, delta, current_feeds(ctx), "--base", base)
    check("39 expressions of the feeds are in the base set already" in r.stderr and
          "1 of them under another category" in r.stderr, r.stderr)
    info = ctx.breachctl("filter", "info", delta).stdout
    check("keys:              15\n" in info, info)
    check("categories:        3: malware phishing ads\n" in info, info)
    check("role:              delta" in info, info)
    mirror = ctx.path("mirror")
    os.makedirs(mirror)
    port = ctx.nginx(mirror)
    conf = ctx.config(urls={"filter": "%s, %s" % (base, delta),
                            "upstream": "http://127.0.0.1:%d/range/{prefix}" % port})
    d = ctx.daemon(conf)
    c = d.client()
    ask_all(c, WANT)
    dtest.no_upstream_stats(d, ("upstream_fetches", "upstream_transfers", "cache_entries"))
    check("offline URL filter: generation" in d.log() and
          "55 keys in a set of 2 (a base and its deltas)" in d.log(), d.log()[-600:])
    c.close()
    d.stop_ok()
    dtest.nginx_log_empty(ctx)
    # breachctl filter query --url on the set's files says the same
    out = ctx.breachctl("filter", "query", delta, "--url", "http://a0.example/").stdout
    eq(out, "blocked ads a0.example/\n", "filter query of the delta")
    # merged: one layered file, the same answers; a new delta names it
    merged = ctx.path("merged.bfuse")
    ctx.breachctl("filter", "build", "--merge", base, delta, "--output", merged)
    more = current_feeds(ctx) + [(feed(ctx, "late.txt", ["late.example"]), "late")]
    d2 = ctx.path("merged-delta.bfuse")
    r = build(ctx, d2, more, "--base", merged)
    check("54 expressions of the feeds are in the base set already" in r.stderr, r.stderr)
    info = ctx.breachctl("filter", "info", d2).stdout
    check("categories:        4: malware phishing ads late\n" in info, info)
    d = ctx.daemon(ctx.config(urls={"filter": "%s, %s" % (merged, d2), "upstream": "none"}))
    c = d.client()
    ask_all(c, dict(WANT, **{"http://late.example/": "BLOCKED late late.example/"}))
    c.close()
    d.stop_ok()


@test
def allow_list_exact(ctx):
    """Allow entries go to the exact table (key encoding v3): an allowed
    host releases its URLs, a blocked one stays blocked; a delta adds
    allow entries too (docs/filter-format.md, "The exact table")."""
    base, delta = ctx.path("urls.bfuse"), ctx.path("urls-delta.bfuse")
    ok = feed(ctx, "ok.txt", ["partner.example"])
    bad = feed(ctx, "bad.txt", ["partner.example/phish/", "evil.example"])
    r = build(ctx, base, [(ok, "allow"), (bad, "phishing")])
    check("2 expressions and 1 allow-list entries (exact)" in r.stderr, r.stderr)
    info = ctx.breachctl("filter", "info", base).stdout
    check("exact table:       1 allow, 0 removed" in info, info)
    ok2 = feed(ctx, "ok2.txt", ["partner.example", "friend.example"])
    bad2 = feed(ctx, "bad2.txt", ["partner.example/phish/", "evil.example", "friend.example/x"])
    build(ctx, delta, [(ok2, "allow"), (bad2, "phishing")], "--base", base)
    info = ctx.breachctl("filter", "info", delta).stdout
    check("exact table:       1 allow, 0 removed" in info, info)
    d = ctx.daemon(ctx.config(urls={"filter": "%s, %s" % (base, delta), "upstream": "none"}))
    c = d.client()
    ask_all(c, {"http://partner.example/phish/": "SAFE",
                "http://friend.example/x": "SAFE",
                "http://evil.example/paypal/login.php": "BLOCKED phishing evil.example/",
                "http://clean.example/": "SAFE"})
    c.close()
    d.stop_ok()


@test
def mixes_and_other_bases_refused(ctx):
    base, delta = ctx.path("urls.bfuse"), ctx.path("urls-delta.bfuse")
    build(ctx, base, first_feeds(ctx))
    build(ctx, delta, current_feeds(ctx), "--base", base)
    bbase, bdelta = ctx.path("urls.bbf"), ctx.path("urls-delta.bbf")
    build(ctx, bbase, first_feeds(ctx), offline=False)
    build(ctx, bdelta, current_feeds(ctx), "--base", bbase, offline=False)
    other = ctx.path("other.bfuse")
    build(ctx, other, [(feed(ctx, "o.txt", ["o.example"]), "malware")])
    foreign = ctx.path("foreign.bfuse")
    build(ctx, foreign, current_feeds(ctx), "--base", other)
    # breachctl builds a delta like its base, or not at all
    r = build(ctx, ctx.path("x"), current_feeds(ctx), "--base", bbase, check_rc=False)
    check(r.returncode == 2 and bbase in r.stderr and "not built offline" in r.stderr, r.stderr)
    r = build(ctx, ctx.path("x"), current_feeds(ctx), "--base", base, offline=False,
              check_rc=False)
    check(r.returncode == 2 and base in r.stderr and "an offline filter" in r.stderr, r.stderr)
    r = ctx.breachctl("filter", "add", base, "--input", current_feeds(ctx)[0][0], check_rc=False)
    check(r.returncode == 2 and "additions go in a delta" in r.stderr, r.stderr)
    # breachd: the live files are replaced by rename, RELOAD refuses, the
    # old set keeps answering
    os.mkdir(ctx.path("host"))
    lbase, ldelta = ctx.path("host", "urls.bfuse"), ctx.path("host", "urls-delta.bfuse")
    fleetfx.install(base, lbase)
    fleetfx.install(delta, ldelta)
    d = ctx.daemon(ctx.config(urls={"filter": "%s, %s" % (lbase, ldelta), "upstream": "none"}))
    c = d.client()
    ask_all(c, WANT)
    cases = [
        (bdelta, lbase, "a URL range filter, not an offline one"),  # Bloom delta, offline base
        (foreign, lbase, "a delta of another base"),
    ]
    for i, (src, _, reason) in enumerate(cases):
        fleetfx.install(src, ldelta)
        ans = fleetfx.reload_fails(c, "r%d" % i, reason)
        check(ldelta in ans, ans)
        ask_all(c, WANT)
    # an offline delta of a range base
    fleetfx.install(bbase, lbase)
    fleetfx.install(delta, ldelta)
    ans = fleetfx.reload_fails(c, "rb", "an offline filter: a URL range set holds no offline")
    check(ldelta in ans, ans)
    ask_all(c, WANT)
    c.close()
    d.stop_ok()


if __name__ == "__main__":
    dtest.main()
