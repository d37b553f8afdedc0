#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachd URL checks end to end ("Integration").

A URL filter built by the test with `breachctl filter build --kind
url-sha256` from feeds of the three formats (URL list, hosts file, domain
list) and several categories, its range mirror served by nginx on 127.0.0.1
at /range/XXXXX, and a real daemon answering `URL <url>`:

  BLOCKED: exact URL, path prefix, host suffix of a domain entry, hosts-file
           entry, the most specific match when several expressions of a URL
           are listed under different categories;
  SAFE:    a definite no of the filter (no range query), and a filter false
           positive resolved by the range query (a --fpr 0.1 filter; the
           prefix bitmap answers most Bloom false positives locally);
  UNKNOWN: upstream-error for a mirror file deleted (nginx 404) under a
           prefix whose bit is set, upstream-unavailable with nginx stopped;
  ERR:     secret-class (mailto:, bare e-mail addresses), bad-request;
  stale:   an old URL filter (SOURCE_DATE_EPOCH) with max_filter_age = 1d and
           when_stale = upstream: url_filter_stale=1 and every expression
           goes to the mirror;
  reload:  `breachctl filter add` writes generation 2, RELOAD loads it;
  privacy: nginx's access log holds only GET /range/XXXXX, the daemon's log
           never a URL or a host.

Standard library only; the harness is dtest.py (temp dirs, 127.0.0.1 only,
every process stopped).
"""
import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, test  # noqa: E402

# ---- the blocklist -------------------------------------------------------------

# (file, format, category, lines): every format, several categories.
FEEDS = [
    ("phish.txt", "urls", "phishing", [
        "# phishing URLs",
        "http://evil.example.com/login/index.php?id=1",
        "http://shop.example.net/checkout/",          # a path prefix
        "http://mixed.example.org/a/b/c.html",        # most specific of three
        "https://bank-login.example.com/secure/",
    ]),
    ("scam.txt", "urls", "scam", [
        "mixed.example.org/a/",                       # no scheme: http://
    ]),
    ("ads.hosts", "hosts", "ads", [
        "# hosts file",
        "127.0.0.1 localhost",
        "0.0.0.0 ads.example.com",
        "0.0.0.0 tracker.example.com pixel.example.net",
        "127.0.0.1 sub.mixed.example.org",
    ]),
    ("malware.domains", "domains", "malware", [
        "malware.example",
        "mixed.example.org",
        "dropper.example.net",
    ]),
]

# URL -> (category, expression) that must be BLOCKED.
BLOCKED = {
    # exact URL, with what canonicalization removes or normalizes
    "http://evil.example.com/login/index.php?id=1": ("phishing", "evil.example.com/login/index.php?id=1"),
    "HTTP://user:pw@EVIL.Example.COM:8080/login/./index.php?id=1#frag":
        ("phishing", "evil.example.com/login/index.php?id=1"),
    # path prefix
    "http://shop.example.net/checkout/pay?card=1": ("phishing", "shop.example.net/checkout/"),
    "https://shop.example.net/checkout/": ("phishing", "shop.example.net/checkout/"),
    "https://bank-login.example.com/secure/x/y/z.html": ("phishing", "bank-login.example.com/secure/"),
    # host suffix of a domain entry
    "http://malware.example/": ("malware", "malware.example/"),
    "https://a.b.malware.example/x/y?z=1": ("malware", "malware.example/"),
    "http://cdn.dropper.example.net/payload.exe": ("malware", "dropper.example.net/"),
    # hosts file
    "http://ads.example.com/banner.gif": ("ads", "ads.example.com/"),
    "http://pixel.example.net/p.png?u=1": ("ads", "pixel.example.net/"),
    # the most specific of phishing (exact path), scam (prefix), malware (domain)
    "http://mixed.example.org/a/b/c.html": ("phishing", "mixed.example.org/a/b/c.html"),
    "http://www.mixed.example.org/a/b/c.html?q=1": ("phishing", "mixed.example.org/a/b/c.html"),
    "http://mixed.example.org/a/x.html": ("scam", "mixed.example.org/a/"),
    "http://mixed.example.org/z/": ("malware", "mixed.example.org/"),
    # host-major: a more specific host beats a longer path on a shorter host
    "http://sub.mixed.example.org/a/b/c.html": ("ads", "sub.mixed.example.org/"),
}

SAFE = [
    "http://good.example/",
    "https://www.good.example/some/page.html?x=1",
    "http://example.com/login/index.php?id=1",          # another host, same path
    "http://evil.example.com/login/index.php?id=2",     # another query
    "http://evil.example.com/login/",                   # a prefix of a listed URL is not listed
    "http://shop.example.net/checkout",                 # no trailing slash: not under it
    "http://notmalware.example/",
    "http://example.net/",
    "http://192.0.2.7/index.html",
]

SECRET = ["mailto:alice@example.com", "alice@example.com", "MAILTO:Bob.Smith@Example.ORG?subject=x",
          "carol.smith+tag@mail.example.net"]
BAD = ["javascript:alert(1)", "http://", "http://:80/x", "http://?q", "gopher://host.example/",
       "http://" + "a" * 64 + ".example/", "http://[::g]/", "http://host.example:80x/",
       "http://" + ".".join(["abcdefghij"] * 26) + ".example/"]


def sha256hex(s):
    return hashlib.sha256(s.encode()).hexdigest().upper()


class UrlSet:
    """Feeds, the filter (generation 1) and its range mirror, built once."""

    def __init__(self, d):
        self.dir = d
        os.makedirs(d)
        self.inputs = []
        self.expr_cat = {}
        for name, fmt, cat, lines in FEEDS:
            p = os.path.join(d, name)
            with open(p, "w") as f:
                f.write("\n".join(lines) + "\n")
            self.inputs += ["--input", "%s=%s" % (p, cat)]
        self.filter = os.path.join(d, "urls.bbf")
        self.mirror = os.path.join(d, "ranges")
        r = run_ctl("filter", "build", "--kind", "url-sha256", "--output", self.filter,
                    "--ranges-dir", self.mirror, "--generation", "1", "--source", "test feeds",
                    *self.inputs)
        # the builder recognized each format and category
        for name, fmt, cat, lines in FEEDS:
            check("%s: %s, category %s:" % (os.path.join(d, name), fmt, cat) in r.stderr,
                  "feed %s not read as %s/%s: %s" % (name, fmt, cat, r.stderr))
        self.entries = mirror_entries(self.mirror)
        self.listed = {}  # expression -> category
        for url, (cat, expr) in BLOCKED.items():
            self.listed[expr] = cat
        for expr, cat in self.listed.items():
            eq(self.entries.get(sha256hex(expr)), cat, "mirror entry of %s" % expr)
        # Ranges fetched in the second of the build are revalidated (the
        # daemon cannot order them against the build): wait for the next.
        time.sleep(1.02 - time.time() % 1)


def run_ctl(*args, env=None):
    r = subprocess.run([dtest.ARGS.breachctl] + list(args), env=dtest.base_env(env),
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("breachctl %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return r


def mirror_entries(mirror):
    """{sha256 hex: category} of a mirror directory."""
    out = {}
    for fn in os.listdir(mirror):
        if fn == "empty.txt":  # served for prefixes without entries (docs/upstream.md)
            continue
        m = re.fullmatch(r"([0-9A-F]{5})\.txt", fn)
        check(m, "unexpected file in the mirror: %s" % fn)
        with open(os.path.join(mirror, fn)) as f:
            for line in f:
                suf, cat = line.rstrip("\r\n").split(":")
                out[m.group(1) + suf.upper()] = cat
    return out


_SET = {}


def urlset():
    if "set" not in _SET:
        _SET["set"] = UrlSet(os.path.join(dtest.ROOT, "urlset"))
    return _SET["set"]


def copy_mirror(ctx, src):
    dst = ctx.path("ranges")
    shutil.copytree(src, dst)
    return dst


def expressions(*urls):
    """The lookup expressions of each URL, by breachctl url-expressions."""
    r = run_ctl("url-expressions", *urls)
    groups = r.stdout.strip("\n").split("\n\n")
    eq(len(groups), len(urls), "expression groups")
    return [g.split("\n") for g in groups]


def url_daemon(ctx, filt, upstream, conf_name="breachd.conf", env=None, **urls_kv):
    urls = {"filter": filt, "upstream": upstream}
    urls.update(urls_kv)
    return ctx.daemon(ctx.config(name=conf_name, urls=urls), env=env)


def ask_all(cl, urls, prefix="q"):
    """Pipeline every URL; {url: answer without the id} (a URL asked twice
    must get the same answer). Answers may come in any order: they are
    matched by id."""
    cl.send("".join("%s%d URL %s\n" % (prefix, i, u) for i, u in enumerate(urls)))
    by_id = {}
    for ln in cl.lines(len(urls), timeout=30):
        rid, rest = ln.split(" ", 1)
        check(rid.startswith(prefix) and rid[len(prefix):].isdigit(), "answer id %r" % ln)
        i = int(rid[len(prefix):])
        check(i < len(urls) and i not in by_id, "unexpected or repeated answer %r" % ln)
        by_id[i] = rest
    got = {}
    for i, rest in by_id.items():
        check(got.setdefault(urls[i], rest) == rest, "two answers for %s: %r, %r" % (
            urls[i], got[urls[i]], rest))
    return got


NGINX_LINE = re.compile(r'^127\.0\.0\.1 - - \[[^]]+\] "GET /range/([0-9A-F]{5}) HTTP/1\.[01]" '
                        r'(\d{3}) \d+ "-" "[^"]*"$')


def nginx_requests(ctx):
    """[(prefix, status)] from the test's nginx access log, each line checked
    to hold nothing but a range request."""
    p = ctx.path("nginx", "access.log")
    # nginx logs a request after sending its answer, so breachd can answer
    # its client first: wait until the log has stopped growing.
    last, end = -1, time.monotonic() + 3
    while time.monotonic() < end:
        size = os.path.getsize(p) if os.path.exists(p) else 0
        if size == last:
            break
        last = size
        time.sleep(0.15)
    if not os.path.exists(p):
        return []
    out = []
    with open(p) as f:
        for line in f:
            m = NGINX_LINE.match(line.rstrip("\n"))
            check(m, "nginx access log line is not a bare range request: %r" % line)
            out.append((m.group(1), int(m.group(2))))
    return out


def host_of(url):
    m = re.match(r"(?i)^(?:[a-z]+:)?(?://)?(?:[^@/]*@)?([^/:?#]+)", url)
    return m.group(1).lower() if m else url


def check_private(ctx, daemons, urls):
    """Neither a URL, a host, nor a path of them in the daemon logs or in
    nginx's access log (which only has /range/XXXXX lines)."""
    nginx_requests(ctx)  # every line is a bare range request
    logs = [(d.log_path, d.log().lower()) for d in daemons]
    p = ctx.path("nginx", "access.log")
    if os.path.exists(p):
        logs.append((p, open(p).read().lower()))
    words = set()
    for u in urls:
        words.add(u.lower())
        h = host_of(u)
        words.add(h)
        words.update(lab for lab in h.split(".") if len(lab) > 6)
    words.update(["/login/", "checkout", "index.php"])
    for path, text in logs:
        check(text.strip() or path.endswith("access.log"), "%s is empty?" % path)
        for w in words:
            check(w not in text, "%s holds %r" % (path, w))


def stats_delta(before, after, keys):
    return {k: after.get(k, 0) - before.get(k, 0) for k in keys}


# ---- the tests ----------------------------------------------------------------------

@test
def allow_category_overrides_blocklists(ctx):
    # An allow-list: feeds in the category "allow" make a URL SAFE even when
    # a blocklist lists it, its domain, or a more specific expression of it
    # (squidGuard's "pass allowed !blocked"). Given first, an allow entry
    # also wins a conflict with the same expression in a blocklist.
    d = ctx.path("allowset")
    os.makedirs(d)
    feeds = [("allow.txt", "allow", ["partner.example.com", "http://both.example.org/page"]),
             ("phish.txt", "phishing", ["http://partner.example.com/phish/",
                                        "http://both.example.org/page",
                                        "http://bad.example.org/x"]),
             ("malware.txt", "malware", ["example.com"])]
    inputs = []
    for name, cat, lines in feeds:
        p = os.path.join(d, name)
        with open(p, "w") as f:
            f.write("\n".join(lines) + "\n")
        inputs += ["--input", "%s=%s" % (p, cat)]
    filt, mirror = os.path.join(d, "urls.bbf"), os.path.join(d, "ranges")
    r = run_ctl("filter", "build", "--kind", "url-sha256", "--output", filt, "--ranges-dir", mirror,
                *inputs)
    check("1 category conflicts" in r.stderr, r.stderr)
    eq(mirror_entries(mirror).get(sha256hex("both.example.org/page")), "allow",
       "the first --input wins a conflict")
    time.sleep(1.02 - time.time() % 1)  # ranges newer than the filter's second
    daemon = url_daemon(ctx, filt, "file://%s/{prefix}.txt" % mirror)
    cl = daemon.client()
    got = ask_all(cl, ["http://partner.example.com/", "https://www.partner.example.com/a?b=1",
                       "http://partner.example.com/phish/login", "http://both.example.org/page",
                       "http://other.example.com/", "http://bad.example.org/x",
                       "http://unlisted.example.net/"])
    eq(got, {"http://partner.example.com/": "SAFE",
             "https://www.partner.example.com/a?b=1": "SAFE",
             "http://partner.example.com/phish/login": "SAFE",
             "http://both.example.org/page": "SAFE",
             "http://other.example.com/": "BLOCKED malware example.com/",
             "http://bad.example.org/x": "BLOCKED phishing bad.example.org/x",
             "http://unlisted.example.net/": "SAFE"}, "answers")
    st = cl.stats()
    eq((st["url_allowed"], st["url_safe"], st["url_blocked"]), (4, 5, 2), "url_allowed")
    cl.close()
    daemon.stop_ok()


@test
def blocked_and_safe_nginx(ctx):
    s = urlset()
    port = ctx.nginx(s.mirror)
    d = url_daemon(ctx, s.filter, "http://127.0.0.1:%d/range/{prefix}" % port)
    cl = d.client()
    st0 = cl.stats()
    eq(st0["url_filter_loaded"], 1, "url_filter_loaded")
    eq(st0["url_filter_generation"], 1, "url_filter_generation")
    eq(st0["url_filter_keys"], len(s.entries), "url_filter_keys")
    eq(st0["url_filter_stale"], 0, "url_filter_stale")

    # SAFE by the filter alone: no range query at all.
    got = ask_all(cl, SAFE, "s")
    for u in SAFE:
        eq(got[u], "SAFE", u)
    st1 = cl.stats()
    eq(stats_delta(st0, st1, ["url_safe", "url_filter_no", "url_filter_maybe"]),
       {"url_safe": len(SAFE), "url_filter_no": len(SAFE), "url_filter_maybe": 0}, "SAFE stats")
    eq(nginx_requests(ctx), [], "nginx requests for definite-no URLs")

    # BLOCKED, one at a time, then all pipelined (from the cache).
    for i, (u, (cat, expr)) in enumerate(BLOCKED.items()):
        eq(cl.ask("b%d URL %s" % (i, u)), "b%d BLOCKED %s %s" % (i, cat, expr), u)
    reqs = nginx_requests(ctx)
    listed_prefixes = {sha256hex(e)[:5] for e in s.listed}
    check(reqs, "no range request for the blocked URLs")
    for p, status in reqs:
        eq(status, 200, "nginx status for /range/%s" % p)
        check(p in listed_prefixes, "range request for a prefix %s that holds no listed entry" % p)
    check(len(reqs) == len(set(p for p, _ in reqs)), "a prefix fetched twice: %r" % reqs)
    urls = list(BLOCKED) * 3 + SAFE * 3
    random.Random(5).shuffle(urls)
    got = ask_all(cl, urls, "m")
    for u in urls:
        want = "SAFE" if u in SAFE else "BLOCKED %s %s" % BLOCKED[u]
        eq(got[u], want, "pipelined " + u)
    eq(len(nginx_requests(ctx)), len(reqs), "range requests after the cache was filled")
    st2 = cl.stats()
    eq(st2["url_blocked"] - st1["url_blocked"], len(BLOCKED) * 4, "url_blocked")
    eq(st2["url_unknown"], 0, "url_unknown")

    # breachctl url through the daemon: exit 1 blocked, 0 safe
    r = subprocess.run([dtest.ARGS.breachctl, "--socket", d.sock, "url",
                        "http://a.b.malware.example/x"], capture_output=True, text=True, timeout=30,
                       env=dtest.base_env())
    eq(r.returncode, 1, "breachctl url (blocked) exit status: " + r.stdout + r.stderr)
    check("malware" in r.stdout, "breachctl url output: %r" % r.stdout)
    r = subprocess.run([dtest.ARGS.breachctl, "--socket", d.sock, "url", "http://good.example/"],
                       capture_output=True, text=True, timeout=30, env=dtest.base_env())
    eq(r.returncode, 0, "breachctl url (safe) exit status: " + r.stdout + r.stderr)
    cl.close()
    d.stop_ok()
    check_private(ctx, [d], list(BLOCKED) + SAFE)


def _fp_candidates(set_prefixes, unset, n, tag):
    """n URLs http://TAG<i>.test/ (a single expression "TAG<i>.test/") whose
    prefix bit is set (unset=False) or not set (unset=True)."""
    out = []
    i = 0
    while len(out) < n:
        i += 1
        host = "%s%d.test" % (tag, i)
        if (sha256hex(host + "/")[:5] in set_prefixes) != unset:
            out.append("http://%s/" % host)
    return out


def _offline_query(filt, keys, url=False):
    r = run_ctl("filter", "query", filt, *(["--url"] if url else []), *keys)
    ans = r.stdout.split()
    eq(len(ans), len(keys), "filter query answers")
    return ans


@test
def false_positive_resolved_by_range(ctx):
    s = urlset()
    d0 = ctx.path("fp")
    os.makedirs(d0)
    filler = os.path.join(d0, "filler.txt")
    with open(filler, "w") as f:
        for i in range(3000):
            f.write("http://listed-%d.example/p/\n" % i)
    filt = os.path.join(d0, "fp.bbf")
    mirror = os.path.join(d0, "ranges")
    run_ctl("filter", "build", "--kind", "url-sha256", "--output", filt, "--ranges-dir", mirror,
            "--fpr", "0.1", "--generation", "1", *s.inputs, "--input", filler + "=filler")
    info = run_ctl("filter", "info", filt).stdout
    m = re.search(r"expected now ([0-9.e-]+) per expression \(Bloom\), ([0-9.e-]+) with the prefix",
                  info)
    check(m, "filter info: %s" % info)
    bloom_fpr, fpr = float(m.group(1)), float(m.group(2))
    check(0.05 < bloom_fpr <= 0.1 and fpr < 0.001, "fpr model %s / %s" % (bloom_fpr, fpr))
    prefixes = {fn[:5] for fn in os.listdir(mirror)}

    # The prefix bitmap: random keys in prefixes that hold entries are Bloom
    # maybes about bloom_fpr of the time; in prefixes that hold none, never.
    rng = random.Random(3)
    plist = sorted(prefixes)
    in_set = [rng.choice(plist) + "%059X" % rng.getrandbits(236) for _ in range(1000)]
    listed = mirror_entries(mirror)
    in_set = [k for k in in_set if k not in listed]
    out_set = []
    while len(out_set) < 1000:
        k = "%064X" % rng.getrandbits(256)
        if k[:5] not in prefixes:
            out_set.append(k)
    maybe_in = _offline_query(filt, in_set).count("maybe") / len(in_set)
    maybe_out = _offline_query(filt, out_set).count("maybe")
    check(0.04 < maybe_in < 0.2, "Bloom false positives in set prefixes: %.3f" % maybe_in)
    eq(maybe_out, 0, "maybes in prefixes without entries")

    # URLs with one expression each: candidates in set prefixes, keep the
    # filter's maybes (false positives: not listed).
    cands = _fp_candidates(prefixes, False, 60, "fp")
    fps = [u for u, a in zip(cands, _offline_query(filt, cands, url=True)) if a == "maybe"]
    check(len(fps) >= 2, "only %d false positives among %d candidates" % (len(fps), len(cands)))
    fps = fps[:4]
    local = _fp_candidates(prefixes, True, 300, "loc")

    port = ctx.nginx(mirror)
    d = url_daemon(ctx, filt, "http://127.0.0.1:%d/range/{prefix}" % port)
    cl = d.client()
    st0 = cl.stats()
    got = ask_all(cl, local, "l")
    check(all(a == "SAFE" for a in got.values()), "locally SAFE: %r" % set(got.values()))
    st1 = cl.stats()
    eq(stats_delta(st0, st1, ["url_filter_no", "url_filter_maybe"]),
       {"url_filter_no": len(local), "url_filter_maybe": 0}, "stats after local SAFE")
    eq(nginx_requests(ctx), [], "range requests for prefixes without entries")

    got = ask_all(cl, fps, "f")
    for u in fps:
        eq(got[u], "SAFE", "false positive " + u)
    st2 = cl.stats()
    eq(stats_delta(st1, st2, ["url_filter_maybe", "url_safe", "url_blocked"]),
       {"url_filter_maybe": len(fps), "url_safe": len(fps), "url_blocked": 0},
       "stats after false positives")
    want = sorted({sha256hex(host_of(u) + "/")[:5] for u in fps})
    eq(sorted(p for p, _ in nginx_requests(ctx)), want, "range requests for the false positives")
    check(all(st == 200 for _, st in nginx_requests(ctx)), "nginx statuses")
    # a listed URL of that filter is still BLOCKED
    eq(cl.ask("x URL http://listed-17.example/p/q.html"), "x BLOCKED filler listed-17.example/p/")
    cl.close()
    d.stop_ok()
    check_private(ctx, [d], fps + local[:20])


@test
def unknown_upstream_error_and_unavailable(ctx):
    s = urlset()
    mirror = copy_mirror(ctx, s.mirror)
    # tracker.example.com/ loses its mirror file: its bit is still set.
    lost = sha256hex("tracker.example.com/")[:5]
    others = [e for e in s.listed if sha256hex(e)[:5] == lost and e != "tracker.example.com/"]
    check(not others, "another listed entry shares the deleted prefix: %r" % others)
    os.unlink(os.path.join(mirror, lost + ".txt"))
    port = ctx.nginx(mirror)
    d = url_daemon(ctx, s.filter, "http://127.0.0.1:%d/range/{prefix}" % port)
    cl = d.client()
    eq(cl.ask("a URL http://tracker.example.com/t.gif?u=7"), "a UNKNOWN upstream-error")
    eq(nginx_requests(ctx), [(lost, 404)], "the 404")
    # never cached: asked again, fetched again
    eq(cl.ask("b URL http://tracker.example.com/"), "b UNKNOWN upstream-error")
    eq(nginx_requests(ctx), [(lost, 404)] * 2, "the second 404")
    # the rest of the mirror still answers; a BLOCKED beats an UNKNOWN of
    # another expression of the same URL: no URL here has both, so just:
    eq(cl.ask("c URL http://ads.example.com/x"), "c BLOCKED ads ads.example.com/")
    eq(cl.ask("d URL http://good.example/"), "d SAFE")
    st = cl.stats()
    eq(st["url_unknown"], 2, "url_unknown")

    # nginx stopped: upstream-unavailable for a prefix never fetched; the
    # cached prefix of ads.example.com and local no's still answer.
    for p in list(ctx.procs):
        if p.args[0] == "/usr/sbin/nginx":
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=10)
    eq(cl.ask("e URL http://malware.example/dl", timeout=30), "e UNKNOWN upstream-unavailable")
    eq(cl.ask("f URL http://ads.example.com/y"), "f BLOCKED ads ads.example.com/")
    eq(cl.ask("g URL https://www.good.example/"), "g SAFE")
    ans = cl.ask("h URL http://evil.example.com/login/index.php?id=1", timeout=30)
    check(ans in ("h UNKNOWN upstream-unavailable", "h UNKNOWN circuit-open"), ans)
    eq(cl.stats()["url_unknown"], 4, "url_unknown")
    cl.close()
    d.stop_ok()
    check_private(ctx, [d], ["http://tracker.example.com/t.gif?u=7", "http://malware.example/dl",
                             "http://evil.example.com/login/index.php?id=1"])


@test
def secret_class_and_bad_request(ctx):
    s = urlset()
    d = url_daemon(ctx, s.filter, "file://%s/{prefix}.txt" % s.mirror)
    cl = d.client()
    st0 = cl.stats()
    for i, u in enumerate(SECRET):
        ans = cl.ask("e%d URL %s" % (i, u))
        check(re.fullmatch(r"e%d ERR secret-class .+" % i, ans), "%s: %r" % (u, ans))
    for i, u in enumerate(BAD):
        ans = cl.ask("x%d URL %s" % (i, u))
        check(re.fullmatch(r"x%d ERR bad-request \S.*" % i, ans), "%s: %r" % (u, ans))
        # the reason never repeats the URL
        check(host_of(u) not in ans[len("x%d ERR bad-request" % i):] or len(host_of(u)) < 4,
              "reason repeats the URL: %r" % ans)
    # the connection is still usable
    eq(cl.ask("ok URL http://malware.example/"), "ok BLOCKED malware malware.example/")
    st1 = cl.stats()
    eq(st1["errors_secret_class"] - st0["errors_secret_class"], len(SECRET), "errors_secret_class")
    eq(st1["url_blocked"] - st0["url_blocked"], 1, "url_blocked")
    eq(st1["url_safe"] + st1["url_unknown"], 0, "nothing else answered")
    # breachctl url: exit 2 for both kinds
    for u in (SECRET[0], BAD[0]):
        r = subprocess.run([dtest.ARGS.breachctl, "--socket", d.sock, "url", u],
                           capture_output=True, text=True, timeout=30, env=dtest.base_env())
        eq(r.returncode, 2, "breachctl url %s: %s" % (u, r.stdout + r.stderr))
    cl.close()
    d.stop_ok()
    log = d.log().lower()
    for w in ["alice", "bob.smith", "carol", "mail.example", "javascript", "host.example", "abcdefghij"]:
        check(w not in log, "the log holds %r" % w)


@test
def stale_filter_goes_to_the_mirror(ctx):
    s = urlset()
    old = ctx.path("old.bbf")
    mirror = ctx.path("ranges")
    run_ctl("filter", "build", "--kind", "url-sha256", "--output", old, "--ranges-dir", mirror,
            "--generation", "1", *s.inputs, env={"SOURCE_DATE_EPOCH": "1500000000"})
    port = ctx.nginx(mirror)
    d = url_daemon(ctx, old, "http://127.0.0.1:%d/range/{prefix}" % port, max_filter_age="1d",
                   when_stale="upstream")
    cl = d.client()
    st0 = cl.stats()
    eq(st0["url_filter_stale"], 1, "url_filter_stale")
    eq(st0["url_filter_loaded"], 1, "url_filter_loaded")
    check(st0["url_filter_age_seconds"] > 86400 * 365, "url_filter_age_seconds")

    # A blocked URL: still BLOCKED, and every one of its expressions (not
    # only the maybes) was sent to the mirror.
    u = "http://www.mixed.example.org/a/b/c.html?q=1"
    exprs = expressions(u)[0]
    eq(cl.ask("a URL " + u), "a BLOCKED phishing mixed.example.org/a/b/c.html")
    want = {sha256hex(e)[:5] for e in exprs}
    got = nginx_requests(ctx)
    eq({p for p, _ in got}, want, "prefixes fetched for a stale filter")
    listed = {p for p in want if os.path.exists(os.path.join(mirror, p + ".txt"))}
    for p, status in got:
        eq(status, 200 if p in listed else 404, "status of /range/%s" % p)

    # A URL on no list: the filter's "no" is not trusted, every expression
    # goes to the mirror. The builder's mirror has files only for prefixes
    # that hold entries, so these are 404s and the answer is UNKNOWN
    # upstream-error, where a fresh filter answers SAFE locally (see the
    # report: a sparse URL mirror cannot answer for a stale filter).
    n0 = len(nginx_requests(ctx))
    u2 = "https://www.good.example/some/page.html?x=1"
    want2 = {sha256hex(e)[:5] for e in expressions(u2)[0]}
    check(not any(os.path.exists(os.path.join(mirror, p + ".txt")) for p in want2),
          "the test data changed: a prefix of %s has a mirror file" % u2)
    eq(cl.ask("b URL " + u2, timeout=30), "b UNKNOWN upstream-error", u2)
    got2 = nginx_requests(ctx)[n0:]
    eq({p for p, _ in got2}, want2, "prefixes fetched for " + u2)
    check(all(st == 404 for _, st in got2), "statuses %r" % got2)
    st1 = cl.stats()
    eq(st1["url_filter_bypassed"] - st0["url_filter_bypassed"], 2, "url_filter_bypassed")
    eq(st1["url_filter_no"] - st0["url_filter_no"], 0, "url_filter_no while stale")

    # the same with a fresh filter generation (RELOAD): local SAFE again
    fresh = ctx.path("fresh.bbf")
    run_ctl("filter", "build", "--kind", "url-sha256", "--output", fresh, "--generation", "2",
            *s.inputs)
    os.replace(fresh, old)
    eq(cl.ask("r RELOAD", timeout=30), "r RELOADED")
    st2 = cl.stats()
    eq((st2["url_filter_stale"], st2["url_filter_generation"]), (0, 2), "after RELOAD")
    n1 = len(nginx_requests(ctx))
    eq(cl.ask("c URL " + u2), "c SAFE")
    eq(len(nginx_requests(ctx)), n1, "range requests with a fresh filter")
    cl.close()
    d.stop_ok()
    check_private(ctx, [d], [u, u2])


def _stale_setup(ctx, location=None, **urls_kv):
    """An old URL filter (max_filter_age 1d) and its mirror behind nginx."""
    s = urlset()
    old, mirror = ctx.path("old.bbf"), ctx.path("ranges")
    run_ctl("filter", "build", "--kind", "url-sha256", "--output", old, "--ranges-dir", mirror,
            "--generation", "1", *s.inputs, env={"SOURCE_DATE_EPOCH": "1500000000"})
    port = ctx.nginx(mirror, location=location(mirror) if location else None)
    d = url_daemon(ctx, old, "http://127.0.0.1:%d/range/{prefix}" % port, max_filter_age="1d",
                   **urls_kv)
    return d, mirror


@test
def stale_filter_sends_no_burst(ctx):
    # Default when_stale = filter: a stale filter still answers, so a URL
    # check sends only its maybes' prefixes, never all of its expressions.
    d, mirror = _stale_setup(ctx)
    cl = d.client()
    st0 = cl.stats()
    eq(st0["url_filter_stale"], 1, "url_filter_stale")
    u = "https://www.good.example/some/page.html?x=1"
    eq(cl.ask("a URL " + u), "a SAFE", u)
    eq(nginx_requests(ctx), [], "range requests for a URL on no list")
    u2 = "http://www.mixed.example.org/a/b/c.html?q=1"
    eq(cl.ask("b URL " + u2), "b BLOCKED phishing mixed.example.org/a/b/c.html", u2)
    got = {p for p, _ in nginx_requests(ctx)}
    listed = {sha256hex(e)[:5] for e in expressions(u2)[0]
              if os.path.exists(os.path.join(mirror, sha256hex(e)[:5] + ".txt"))}
    check(got <= listed, "prefixes fetched beyond the filter's maybes: %r" % (got - listed))
    st1 = cl.stats()
    eq((st1["url_filter_stale"], st1["url_filter_bypassed"]), (1, 0), "stale, not bypassed")
    eq(cl.ask("c URL " + u), "c SAFE", u)
    cl.close()
    d.stop_ok()
    eq(d.log().count("older than max_filter_age"), 1, "stale warnings in the log (one an hour)")
    check_private(ctx, [d], [u, u2])


@test
def stale_filter_when_stale_unknown(ctx):
    d, _ = _stale_setup(ctx, when_stale="unknown")
    cl = d.client()
    eq(cl.ask("a URL http://www.mixed.example.org/a/b/c.html"), "a UNKNOWN filter-stale", "answer")
    eq(cl.ask("b URL http://good.example/"), "b UNKNOWN filter-stale", "answer")
    eq(nginx_requests(ctx), [], "range requests")
    cl.close()
    d.stop_ok()


def _docs_nginx_location(mirror):
    """The nginx block of docs/upstream.md "Serving a URL range mirror"."""
    with open(os.path.join(dtest.ARGS.source_root, "docs", "upstream.md")) as f:
        text = f.read()
    m = re.search(r"```nginx\n(.*?)```", text, re.S)
    check(m and "/srv/url-ranges" in m.group(1), "no nginx block in docs/upstream.md")
    return m.group(1).replace("/srv/url-ranges", mirror)


@test
def empty_ranges_served_by_the_docs_snippet(ctx):
    # A stale filter with when_stale = upstream asks for every expression's
    # prefix; the docs' nginx block answers those without a file with the
    # builder's empty.txt: an empty 200, "no entries", cached.
    d, mirror = _stale_setup(ctx, location=_docs_nginx_location, when_stale="upstream")
    eq(os.path.getsize(os.path.join(mirror, "empty.txt")), 0, "empty.txt")
    cl = d.client()
    u = "https://www.good.example/some/page.html?x=1"
    want = {sha256hex(e)[:5] for e in expressions(u)[0]}
    eq(cl.ask("a URL " + u), "a SAFE", "a URL on no list, through empty ranges")
    got = nginx_requests(ctx)
    eq({p for p, _ in got}, want, "prefixes fetched")
    check(all(st == 200 for _, st in got), "statuses %r" % got)
    eq(cl.ask("b URL " + u), "b SAFE", "again")
    eq(len(nginx_requests(ctx)), len(got), "the empty ranges were cached")
    u2 = "http://www.mixed.example.org/a/b/c.html?q=1"
    eq(cl.ask("c URL " + u2), "c BLOCKED phishing mixed.example.org/a/b/c.html", u2)
    # Without empty.txt a prefix without a file is a 404: an error.
    os.unlink(os.path.join(mirror, "empty.txt"))
    eq(cl.ask("d URL http://other.example/x"), "d UNKNOWN upstream-error", "404")
    cl.close()
    d.stop_ok()


def _same_prefix_pair(tag):
    """Two hosts TAG<i>.test, TAG<j>.test whose "host/" expressions share a
    5-hex prefix (birthday search)."""
    seen = {}
    i = 0
    while True:
        i += 1
        h = "%s%d.test" % (tag, i)
        p = sha256hex(h + "/")[:5]
        if p in seen:
            return seen[p], h
        seen[p] = h


@test
def reload_new_generation(ctx):
    s = urlset()
    d0 = ctx.path("feeds")
    os.makedirs(d0)
    filt = ctx.path("urls.bbf")
    mirror = copy_mirror(ctx, s.mirror)
    shutil.copy(s.filter, filt)
    a, b = _same_prefix_pair("pair")
    port = ctx.nginx(mirror)
    d = url_daemon(ctx, filt, "http://127.0.0.1:%d/range/{prefix}" % port)
    cl = d.client()
    # Generation 1: a and b are not listed. a is made a maybe (its prefix
    # fetched and cached) by a first delta...
    eq(cl.ask("1 URL http://%s/" % a), "1 SAFE")
    eq(cl.ask("2 URL http://new-threat.example/x/y"), "2 SAFE")
    delta1 = os.path.join(d0, "delta1.txt")
    with open(delta1, "w") as f:
        f.write("http://new-threat.example/x/\n%s\n" % a)
    r = run_ctl("filter", "add", filt, "--input", delta1 + "=phishing", "--ranges-dir", mirror)
    check("generation 2" in r.stderr, "filter add: %s" % r.stderr)
    # the daemon still has generation 1 until RELOAD
    eq(cl.ask("3 URL http://new-threat.example/x/y"), "3 SAFE")
    eq(cl.ask("4 RELOAD", timeout=30), "4 RELOADED")
    st = cl.stats()
    eq(st["url_filter_generation"], 2, "url_filter_generation")
    eq(st["url_filter_keys"], len(s.entries) + 2, "url_filter_keys")
    eq(cl.ask("5 URL http://new-threat.example/x/y"), "5 BLOCKED phishing new-threat.example/x/")
    eq(cl.ask("6 URL http://%s/" % a), "6 BLOCKED phishing %s/" % a)
    # ... then b, in the same prefix, is added as generation 3: the prefix
    # fetched for a is in the range cache, but must not hide b.
    delta2 = os.path.join(d0, "delta2.txt")
    with open(delta2, "w") as f:
        f.write("%s\n" % b)
    run_ctl("filter", "add", filt, "--input", delta2 + "=malware", "--ranges-dir", mirror)
    eq(cl.ask("7 RELOAD", timeout=30), "7 RELOADED")
    eq(cl.stats()["url_filter_generation"], 3, "url_filter_generation")
    eq(cl.ask("8 URL http://%s/" % b), "8 BLOCKED malware %s/" % b)
    eq(cl.ask("9 URL http://%s/" % a), "9 BLOCKED phishing %s/" % a)
    # SIGHUP reloads too (same generation: still answers)
    d.send_signal(signal.SIGHUP)
    eq(cl.ask("10 URL http://evil.example.com/login/index.php?id=1"),
       "10 BLOCKED phishing evil.example.com/login/index.php?id=1")
    cl.close()
    d.stop_ok()
    check_private(ctx, [d], ["http://new-threat.example/x/y", "http://%s/" % a, "http://%s/" % b])


@test
def pipelined_batches(ctx):
    """Lines pipelined in one write are taken in batches (32 lines) whose
    URLs are prepared and probed together: every answer carries its id and
    is the one the URL gets alone, across batch boundaries, with other
    verbs, secret-class and bad URLs inside a batch."""
    s = urlset()
    d = url_daemon(ctx, s.filter, "file://%s/{prefix}.txt" % s.mirror)
    cl = d.client()
    pool = [(u, "BLOCKED %s %s" % v) for u, v in BLOCKED.items()] + [(u, "SAFE") for u in SAFE]
    pool += [(u, "secret") for u in SECRET] + [(u, "bad") for u in BAD]
    # an address in the query only: checked through the other expressions
    pool.append(("http://malware.example/share?to=alice@example.com", "BLOCKED malware malware.example/"))
    lines, want = [], {}
    for i in range(130):
        rid = "b%d" % i
        if i % 17 == 5:
            lines.append("%s PING" % rid)
            want[rid] = "PONG"
            continue
        u, w = pool[(i * 7) % len(pool)]
        lines.append("%s URL %s" % (rid, u))
        want[rid] = w
    st0 = cl.stats()
    cl.send("".join(ln + "\n" for ln in lines))
    got = {}
    for ln in cl.lines(len(lines), timeout=30):
        rid, rest = ln.split(" ", 1)
        check(rid in want and rid not in got, "unexpected or repeated answer %r" % ln)
        got[rid] = rest
    for rid, w in want.items():
        if w == "secret":
            check(got[rid].startswith("ERR secret-class "), "%s: %r" % (rid, got[rid]))
        elif w == "bad":
            check(got[rid].startswith("ERR bad-request "), "%s: %r" % (rid, got[rid]))
        else:
            eq(got[rid], w, rid)
    st1 = cl.stats()
    eq(st1["url_blocked"] - st0["url_blocked"], sum(w.startswith("BLOCKED") for w in want.values()),
       "url_blocked")
    eq(st1["url_safe"] - st0["url_safe"], sum(w == "SAFE" for w in want.values()), "url_safe")
    eq(st1["errors_secret_class"] - st0["errors_secret_class"],
       sum(w == "secret" for w in want.values()), "errors_secret_class")
    cl.close()
    d.stop_ok()


@test
def long_stream_read_in_pieces(ctx):
    """A long pipelined stream (many 32-line batches in each read) to a
    client that reads the answers in small pieces while it still sends:
    every answer comes once, whole, with its id and the answer the URL gets
    alone (the output meets a full socket, then the backlog). Reads of
    several batches write their first answers before the later batches are
    worked on (writes_early counts those writes)."""
    s = urlset()
    d = url_daemon(ctx, s.filter, "file://%s/{prefix}.txt" % s.mirror)
    cl = d.client()
    early0 = cl.stats()["writes_early"]
    pool = [(u, "BLOCKED %s %s" % v) for u, v in BLOCKED.items()] + [(u, "SAFE") for u in SAFE]
    lines, want = [], {}
    for i in range(6000):
        u, w = pool[(i * 7) % len(pool)]
        rid = "e%d" % i
        lines.append("%s URL %s\n" % (rid, u))
        want[rid] = w
    data = "".join(lines).encode()
    sender = threading.Thread(target=cl.s.sendall, args=(data,))
    sender.start()
    got, buf = {}, b""
    cl.s.settimeout(30)
    while len(got) < len(want):
        chunk = cl.s.recv(700)  # small reads: the daemon meets a full socket
        check(chunk, "EOF after %d of %d answers" % (len(got), len(want)))
        buf += chunk
        *done, buf = buf.split(b"\n")
        for ln in done:
            rid, rest = ln.decode().split(" ", 1)
            check(rid in want and rid not in got, "unexpected or repeated answer %r" % ln)
            eq(rest, want[rid], rid)
            got[rid] = rest
    sender.join()
    eq(buf, b"", "bytes after the last answer")
    eq(cl.ask("z PING"), "z PONG")
    early = cl.stats()["writes_early"] - early0
    check(early > 0, "no answers written between the batches of a read (writes_early %d)" % early)
    cl.close()
    d.stop_ok()


if __name__ == "__main__":
    dtest.main()
