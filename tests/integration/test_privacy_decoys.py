# SPDX-License-Identifier: MIT
"""Adversary tests: can the upstream tell breachd's real range requests from
its decoys ([upstream] decoys, docs/upstream.md "Decoys")?

The upstream is real nginx on 127.0.0.1 whose access log records, per
request in the order served: method, path, status, If-None-Match,
If-Modified-Since, Add-Padding, User-Agent, Accept, Accept-Encoding. The
test knows which prefixes it asked for; every other request is a decoy. Over
many lookups, repeated after the TTL ran out (so that ranges are
revalidated), real and decoy requests must not differ in:

  passwords: path shape, header values, conditional-ness (the share of
             conditional requests, and after the TTL every request of a
             burst alike), status, and the real request's place in its
             burst (spread over the places);
  URLs:      the same, against a sparse URL mirror (breachctl filter build
             --ranges-dir): decoys are drawn from the prefixes that have a
             file, so they get 200s like the real ones, never 404s.

Standard library only; the harness is dtest.py (temp dirs, 127.0.0.1 only,
every process stopped); breachd runs on driven time (breachd-testclock).
"""
import collections
import hashlib
import os
import random
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, test  # noqa: E402

DECOYS = 3
# seconds; the rounds after the first are this much later on driven time
# (dtest.Clock), so that every repeat is revalidated, and still within the
# upstream timeout (300 s), so that decoys in flight at the jump go on
TTL = 200

LOG_FORMAT = """    log_format probe '$request_method $request_uri $status inm=[$http_if_none_match] '
                     'ims=[$http_if_modified_since] pad=[$http_add_padding] '
                     'ua=[$http_user_agent] accept=[$http_accept] '
                     'enc=[$http_accept_encoding] args=[$args]';
"""
SERVER = """    server {
        listen 127.0.0.1:%(port)d;
        location ~ "^/range/([0-9A-F]{5})$" {
            root %(mirror)s;
            try_files /$1.txt %(fallback)s;
        }
    }
"""

LINE = re.compile(r"^(\S+) (\S+) (\d{3}) inm=\[(.*?)\] ims=\[(.*?)\] pad=\[(.*?)\] ua=\[(.*?)\] "
                  r"accept=\[(.*?)\] enc=\[(.*?)\] args=\[(.*?)\]$")


def start_nginx(ctx, mirror, fallback):
    if not os.path.exists("/usr/sbin/nginx"):
        raise dtest.Skip("nginx is not installed")
    d = ctx.path("nginx")
    os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
    for _ in range(5):
        port = dtest.free_port()
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(dtest.nginx_conf(d, SERVER % dict(port=port, mirror=mirror, fallback=fallback),
                                     head=LOG_FORMAT, log_format="probe"))
        p = ctx.spawn(["/usr/sbin/nginx", "-p", d, "-e", d + "/error.log", "-c", conf],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 5
        while time.monotonic() < end and p.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port
            except OSError:
                time.sleep(0.02)
        p.kill()
        p.wait()
    raise AssertionError("nginx did not start (see %s/error.log)" % d)


def absent(v):
    """nginx logs an absent header as "-"."""
    return "" if v == "-" else v


def access_log(ctx, settle=0.3):
    """[dict] of the nginx access log lines, in order."""
    p = ctx.path("nginx", "access.log")
    last, end = -1, time.monotonic() + 3
    while time.monotonic() < end:
        size = os.path.getsize(p) if os.path.exists(p) else 0
        if size == last:
            break
        last = size
        time.sleep(settle)
    out = []
    if not os.path.exists(p):
        return out
    with open(p) as f:
        for line in f:
            m = LINE.match(line.rstrip("\n"))
            check(m, "unexpected access log line %r" % line)
            method, uri, status, inm, ims, pad, ua, acc, enc, args = m.groups()
            out.append(dict(method=method, uri=uri, status=int(status), inm=absent(inm),
                            ims=absent(ims), headers=(pad, ua, acc, enc, args)))
    return out


def prefix_of(req):
    m = re.fullmatch(r"/range/([0-9A-F]{5})", req["uri"])  # no query either
    check(m, "request path of another shape: %r" % req["uri"])
    return m.group(1)


def compare(bursts, real_of):
    """bursts: [[request]] (one lookup's requests each); real_of(burst) -> the
    real prefixes in it. Checks that real and decoy requests look alike."""
    real, decoy = [], []
    places = collections.Counter()
    for b in bursts:
        reals = real_of(b)
        for i, r in enumerate(b):
            (real if prefix_of(r) in reals else decoy).append(r)
            if prefix_of(r) in reals and len(reals) == 1:
                places[i] += 1
        # one burst is alike: all conditional or none
        conds = {bool(r["inm"] or r["ims"]) for r in b}
        eq(len(conds), 1, "conditional and unconditional requests in one burst %r" % (
            [(prefix_of(r), r["status"], bool(r["inm"])) for r in b],))
    check(real and decoy, "no real or no decoy requests (%d, %d)" % (len(real), len(decoy)))
    eq({r["method"] for r in real} | {r["method"] for r in decoy}, {"GET"}, "methods")
    eq({r["headers"] for r in decoy}, {r["headers"] for r in real}, "header values")

    def share(rs, pred):
        return sum(1 for r in rs if pred(r)) / len(rs)

    for what, pred in [("conditional", lambda r: bool(r["inm"] or r["ims"])),
                       ("304", lambda r: r["status"] == 304),
                       ("200", lambda r: r["status"] == 200)]:
        a, b = share(real, pred), share(decoy, pred)
        print("    %-12s real %.2f decoy %.2f" % (what, a, b))
        check(abs(a - b) <= 0.15, "%s: %.2f of real requests, %.2f of decoys" % (what, a, b))
    eq({r["status"] for r in decoy} - {r["status"] for r in real}, set(),
       "statuses only decoys get")
    n = sum(places.values())
    print("    places of the real request in %d bursts: %s" % (n, dict(sorted(places.items()))))
    check(n >= 8, "too few single-real bursts (%d)" % n)
    check(len(places) >= 2 and max(places.values()) <= 0.75 * n,
          "the real request's place in its burst is predictable: %r" % dict(places))


def bursts_of(log, starts):
    """Split the log at the given line counts (one lookup each)."""
    ends = starts[1:] + [len(log)]
    return [log[s:e] for s, e in zip(starts, ends) if e > s]


@test
def password_decoys_look_real(ctx):
    # One body for every prefix: a suffix list, so that any prefix plus one
    # of these suffixes is breached. nginx sends ETag and Last-Modified and
    # answers If-None-Match with 304.
    mirror = ctx.path("mirror")
    os.makedirs(mirror)
    rng = random.Random(12)
    suffixes = ["%035X" % rng.getrandbits(140) for _ in range(20)]
    with open(os.path.join(mirror, "all.txt"), "w") as f:
        f.write("".join("%s:%d\r\n" % (s, i + 1) for i, s in enumerate(suffixes)))
    port = start_nginx(ctx, mirror, "/all.txt =404")
    conf = ctx.config(passwords={"filter": "", "upstream": "http://127.0.0.1:%d/range/{prefix}" % port},
                      cache={"path": ctx.path("cache"), "ttl": "%ds" % TTL},
                      upstream={"decoys": str(DECOYS), "timeout": "300s"},
                      limits={"idle_timeout": "1d"}, daemon={"canary": "0"})
    clock = dtest.Clock(ctx)
    d = ctx.daemon(conf, clock=clock)
    cl = d.client(timeout=20)
    hashes = ["%05X%s" % (rng.getrandbits(20), suffixes[i % 20]) for i in range(12)]
    real = {h[:5] for h in hashes}
    starts = []
    for rnd in range(3):  # the second and third rounds come after the TTL
        if rnd:
            clock.advance(TTL + 1)
        for i, h in enumerate(hashes):
            starts.append(len(access_log(ctx, settle=0.05)))
            eq(cl.ask("r%d.%d PW %s" % (rnd, i, h)), "r%d.%d PWNED %d" % (rnd, i, i % 20 + 1), "answer")
    log = access_log(ctx)
    bursts = bursts_of(log, starts)
    eq(len(log), 3 * len(hashes) * (1 + DECOYS), "requests: every lookup a burst of %d" % (DECOYS + 1))
    compare(bursts, lambda b: {prefix_of(r) for r in b} & real)
    # Rounds two and three revalidate: every request conditional, 304.
    later = log[starts[len(hashes)]:]
    check(all(r["inm"] and r["status"] == 304 for r in later),
          "after the TTL: %r" % [(prefix_of(r), r["status"], r["inm"]) for r in later][:8])
    cl.close()
    d.stop_ok()


def url_feed(ctx, n):
    p = ctx.path("feed.txt")
    with open(p, "w") as f:
        for i in range(n):
            f.write("http://host%d.example.org/page%d.html\n" % (i, i))
    return p


@test
def url_decoys_look_real(ctx):
    feed = url_feed(ctx, 400)
    filt, mirror = ctx.path("urls.bbf"), ctx.path("ranges")
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--output", filt, "--ranges-dir", mirror,
                  "--generation", "1", "--input", feed + "=phishing")
    port = start_nginx(ctx, mirror, "=404")
    conf = ctx.config(urls={"filter": filt, "upstream": "http://127.0.0.1:%d/range/{prefix}" % port},
                      cache={"path": ctx.path("cache"), "ttl": "%ds" % TTL},
                      upstream={"decoys": str(DECOYS), "timeout": "300s"},
                      limits={"idle_timeout": "1d"}, daemon={"canary": "0"})
    clock = dtest.Clock(ctx)
    d = ctx.daemon(conf, clock=clock)
    clock.advance(2)  # ranges fetched in the build's second are revalidated
    cl = d.client(timeout=20)
    urls = ["http://host%d.example.org/page%d.html" % (i, i) for i in range(0, 400, 33)]
    exprs = ctx.breachctl("url-expressions", *urls).stdout.strip("\n").split("\n\n")
    eq(len(exprs), len(urls), "expression groups")
    expr_prefixes = [{hashlib.sha256(e.encode()).hexdigest().upper()[:5] for e in g.split("\n")}
                     for g in exprs]
    have = {fn[:5] for fn in os.listdir(mirror) if fn.endswith(".txt")}
    starts, owner = [], []
    for rnd in range(3):
        if rnd:
            clock.advance(TTL + 1)
        for i, u in enumerate(urls):
            starts.append(len(access_log(ctx, settle=0.05)))
            owner.append(i)
            ans = cl.ask("u%d.%d URL %s" % (rnd, i, u))
            check(ans.startswith("u%d.%d BLOCKED phishing " % (rnd, i)), "answer %r" % ans)
    log = access_log(ctx)
    bursts = bursts_of(log, starts)
    owners = [owner[k] for k, (s, e) in enumerate(zip(starts, starts[1:] + [len(log)])) if e > s]
    it = iter(owners)
    compare(bursts, lambda b: {prefix_of(r) for r in b} & expr_prefixes[next(it)])
    for r in log:
        check(prefix_of(r) in have, "a request for a prefix the mirror has no file for")
        check(r["status"] in (200, 304), "status %d" % r["status"])
    cl.close()
    d.stop_ok()


if __name__ == "__main__":
    dtest.main()
