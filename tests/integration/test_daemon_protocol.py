#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachd integration tests: protocol v1 over a real daemon.

Every verb and answer (with an nginx mirror), every verb documented, the
UNKNOWN reasons, a filter false positive answered CLEAN by the range
query, 40+ malformed requests with
their exact ERR codes and ids, line length and resynchronization, CRLF,
10,000 pipelined requests, out-of-order answers behind a slow upstream,
--check-config / --version, and no request argument in the log.
"""
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, test  # noqa: E402

PW40 = "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8"  # SHA-1("password")


def demo_daemon(ctx, upstream=None, **sections):
    c = dtest.corpus()
    pw = {"filter": c.filter, "upstream": upstream or "file://%s/{prefix}.txt" % c.mirror}
    pw.update(sections.pop("passwords", {}))
    return ctx.daemon(ctx.config(passwords=pw, **sections))


@test
def verbs_and_answers_nginx(ctx):
    c = dtest.corpus()
    port = ctx.nginx(c.mirror)
    d = demo_daemon(ctx, upstream="http://127.0.0.1:%d/range/{prefix}" % port)
    cl = d.client()
    before = cl.stats()
    eq(before["filter_loaded"], 1, "filter_loaded")
    eq(before["filter_generation"], 1, "filter_generation")
    eq(before["filter_keys"], len(c.counts), "filter_keys")
    eq(before["filter_stale"], 0, "filter_stale")

    eq(cl.ask("p1 PING"), "p1 PONG")
    v = cl.ask("v VERSION")
    m = re.fullmatch(r"v VERSION breachd (\S+) protocol 1", v)
    check(m, "VERSION answer %r" % v)
    out = subprocess.run([dtest.ARGS.breachd, "--version"], capture_output=True, text=True)
    check(m.group(1) in out.stdout, "--version %r does not name %s" % (out.stdout, m.group(1)))

    # PWNED with the corpus count, any case of hex; then from the cache.
    eq(cl.ask("a PW " + c.password), "a PWNED %d" % c.counts[c.password])
    eq(cl.ask("b PW " + c.password.lower()), "b PWNED %d" % c.counts[c.password])
    rng = random.Random(11)
    for i, h in enumerate(c.present(5, rng)):
        eq(cl.ask("c%d PW %s" % (i, h)), "c%d PWNED %d" % (i, c.counts[h]))
    # CLEAN: a definite no of the filter.
    while True:
        absent = c.absent(rng)
        if not dtest.filter_says(ctx, c.filter, [absent])[absent]:
            break
    eq(cl.ask("n PW " + absent), "n CLEAN")

    eq(cl.ask("u1 URL http://example.com/path?q=1"), "u1 UNKNOWN filter-unavailable")
    for i, secret in enumerate(["mailto:alice@example.com", "MAILTO:bob@example.org",
                                "alice@example.com", "a.b+tag@sub.example.co.uk"]):
        ans = cl.ask("e%d URL %s" % (i, secret))
        check(ans.startswith("e%d ERR secret-class " % i), "secret %r: %r" % (secret, ans))
        check(secret not in ans and "alice" not in ans, "secret echoed: %r" % ans)

    after = cl.stats()
    for key, delta in [("requests_ping", 1), ("requests_version", 1), ("requests_pw", 8),
                       ("requests_url", 5), ("requests_stats", 1), ("pw_pwned", 7),
                       ("pw_clean", 1), ("pw_filter_no", 1), ("pw_filter_maybe", 7),
                       ("url_unknown", 1), ("errors_secret_class", 4)]:
        eq(after[key] - before[key], delta, "STATS %s moved by" % key)
    check(after["upstream_fetches"] >= before["upstream_fetches"] + 1, "no upstream fetch")
    check(after["cache_hits"] >= before["cache_hits"] + 1, "the second lookup missed the cache")
    check(after["uptime_seconds"] >= 0 and after["connections"] >= 1, "uptime/connections")
    for key in ("cache_misses", "upstream_errors", "upstream_in_flight", "circuit", "reloads",
                "requests_in_flight", "cache_stale_answers", "connections_total"):
        check(key in after, "STATS lacks %s" % key)
    eq(after["circuit"], "closed", "circuit")
    eq(after["internal_errors"], 0, "internal_errors (a failed internal check)")

    eq(cl.ask("r RELOAD", timeout=30), "r RELOADED")  # root is an admin_user by default
    eq(cl.stats()["reloads"], 1, "reloads")
    cl.close()
    d.stop_ok()


@test
def unknown_reasons(ctx):
    rng = random.Random(3)
    h = dtest.rand_hash(rng)
    empty = ctx.path("empty-mirror")
    os.mkdir(empty)
    cases = [
        ("file://%s/{prefix}.txt" % empty, "upstream-error"),        # no such range file
        ("http://127.0.0.1:%d/range/{prefix}" % dtest.free_port(), "upstream-unavailable"),
        ("", "no-upstream"),                            # empty: the same as upstream = none
    ]
    for i, (up, reason) in enumerate(cases):
        conf = ctx.config(name="u%d.conf" % i, socket_path=ctx.path("u%d.sock" % i),
                          passwords={"filter": "", "upstream": up},
                          cache={"path": ctx.path("cache%d" % i)})
        d = ctx.daemon(conf)
        cl = d.client(timeout=60)
        eq(cl.ask("k PW " + h), "k UNKNOWN " + reason, "upstream %r" % up)
        st = cl.stats()
        eq(st["pw_unknown"], 1, "pw_unknown")
        eq(st["filter_loaded"], 0, "filter_loaded")
        cl.close()
        d.stop_ok()


@test
def filter_false_positive_is_clean(ctx):
    rng = random.Random(5)
    keys = {dtest.rand_hash(rng): 10 + i for i in range(12)}
    inp = ctx.path("tiny.txt")
    with open(inp, "w") as f:
        for h, n in keys.items():
            f.write("%s:%d\n" % (h, n))
    filt = ctx.build_filter(inp, ctx.path("tiny.bfuse"), generation=9, fp_bits=8)
    cands = [dtest.rand_hash(rng) for _ in range(3000)]
    says = dtest.filter_says(ctx, filt, cands + list(keys))
    check(all(says[k] for k in keys), "a key is not a maybe")
    fps = [h for h in cands if says[h] and h not in keys]
    check(fps, "no false positive among 3000 random hashes at 8 bits")
    fp = fps[0]
    mirror = ctx.path("mirror")
    entries = dict(keys)
    # The false positive's range exists but does not hold it.
    entries[fp[:5] + "0" * 35 if fp[5:] != "0" * 35 else fp[:5] + "1" * 35] = 3
    dtest.write_range(mirror, entries)
    d = ctx.daemon(ctx.config(passwords={"filter": filt,
                                         "upstream": "file://%s/{prefix}.txt" % mirror}))
    cl = d.client()
    st0 = cl.stats()
    eq(cl.ask("fp PW " + fp), "fp CLEAN")
    k = next(iter(keys))
    eq(cl.ask("k PW " + k), "k PWNED %d" % keys[k])
    st = cl.stats()
    eq(st["pw_filter_maybe"] - st0["pw_filter_maybe"], 2, "pw_filter_maybe")
    eq(st["pw_filter_no"] - st0["pw_filter_no"], 0, "pw_filter_no")
    eq(st["upstream_fetches"] - st0["upstream_fetches"], 2, "upstream_fetches")
    eq(st["filter_generation"], 9, "filter_generation")
    cl.close()
    d.stop_ok()


@test
def url_verb_with_a_filter(ctx):
    feed = ctx.path("feed.txt")
    with open(feed, "w") as f:
        f.write("http://evil-%s.example/\nhttp://bad.example/x/y\n" % "q7z")
    ranges = ctx.path("ranges")
    r = ctx.breachctl("filter", "build", "--kind", "url-sha256", "--input", feed, "--output",
                      ctx.path("urls.bbf"), "--ranges-dir", ranges, check_rc=False)
    if r.returncode != 0:
        raise dtest.Skip("no url-sha256 filter build: %s" % r.stderr.strip()[:200])
    d = ctx.daemon(ctx.config(urls={"filter": ctx.path("urls.bbf"),
                                    "upstream": "file://%s/{prefix}.txt" % ranges}))
    cl = d.client(timeout=30)
    b = cl.ask("1 URL http://evil-q7z.example/some/page?id=1")
    check(re.fullmatch(r"1 BLOCKED \S+ evil-q7z\.example/", b), "blocked host: %r" % b)
    b = cl.ask("2 URL HTTP://BAD.example:80/x/y")
    check(re.fullmatch(r"2 BLOCKED \S+ bad\.example/x/y", b), "blocked path: %r" % b)
    eq(cl.ask("3 URL http://bad.example/x/"), "3 SAFE", "a parent path")
    eq(cl.ask("4 URL https://fine-k9w.example.org/"), "4 SAFE")
    check(cl.ask("5 URL mailto:carol@evil-q7z.example").startswith("5 ERR secret-class "),
          "mailto")
    st = cl.stats()
    eq((st["url_blocked"], st["url_safe"], st["errors_secret_class"]), (2, 2, 1), "url counters")
    cl.close()
    d.stop_ok()
    log = d.log().lower()
    for s in ("evil-q7z", "fine-k9w", "carol", "bad.example", "some/page"):
        check(s not in log, "the log holds %r" % s)


# The table: (request line without LF, expected code, expected response id).
H = PW40
MALFORMED = [
    (b"", "bad-request", "-"),
    (b"\r", "bad-request", "-"),
    (b" PING", "bad-id", "-"),
    (b"  PING", "bad-id", "-"),
    (b"01234567890123456 PING", "bad-id", "-"),
    (b"a/b PING", "bad-id", "-"),
    (b"a:b PING", "bad-id", "-"),
    ("\u00e9 PING".encode(), "bad-id", "-"),
    (b"a\tb PING", "bad-id", "-"),
    (b"1\tPING", "bad-id", "-"),
    (b"\x00 PING", "bad-id", "-"),
    (b"x/y PW " + H.encode(), "bad-id", "-"),
    (b"1", "bad-request", "1"),
    (b"abc", "bad-request", "abc"),
    (b"1 ", "bad-request", "1"),
    (b"1  PING", "bad-request", "1"),
    (b"1 ping", "unknown-verb", "1"),
    (b"1 Ping", "unknown-verb", "1"),
    (b"1 PINGX", "unknown-verb", "1"),
    (b"1 GET /", "unknown-verb", "1"),
    (b"1 HELP", "unknown-verb", "1"),
    (b"q.2 pw " + H.encode(), "unknown-verb", "q.2"),
    (b"1 PING x", "bad-request", "1"),
    (b"1 PING ", "bad-request", "1"),
    (b"1 VERSION 2", "bad-request", "1"),
    (b"1 STATS all", "bad-request", "1"),
    (b"1 RELOAD now", "bad-request", "1"),
    (b"1 PW", "bad-request", "1"),
    (b"1 PW ", "bad-request", "1"),
    (b"1 PW  " + H.encode(), "bad-request", "1"),
    (b"1 PW password", "bad-request", "1"),
    (b"1 PW " + H[:39].encode(), "bad-request", "1"),
    (b"1 PW " + H.encode() + b"0", "bad-request", "1"),
    (b"1 PW " + H[:39].encode() + b"G", "bad-request", "1"),
    (b"1 PW " + H.encode() + b" ", "bad-request", "1"),
    (b"1 PW " + H.encode() + b" extra", "bad-request", "1"),
    (b"1 PW " + H[:39].encode() + b"\t", "bad-request", "1"),
    (b"1 PW " + H[:20].encode() + b"\x00" + H[21:].encode(), "bad-request", "1"),
    (b"1 URL", "bad-request", "1"),
    (b"1 URL ", "bad-request", "1"),
    (b"1 URL http://a b/", "bad-request", "1"),
    (b"1 URL  http://a/", "bad-request", "1"),
    (b"1 URL http://a/\x01", "bad-request", "1"),
    (b"1 URL http://a/\x7f", "bad-request", "1"),
    (b"1 PING\r\r", "bad-request", "1"),
    (b"1 PING\tx", "bad-request", "1"),
    (b"1 PING\x00", "bad-request", "1"),
    (b"0123456789abcdef PW xyz", "bad-request", "0123456789abcdef"),
    (b"-_.Az9 STATS\x1b[0m", "bad-request", "-_.Az9"),
    (b"1 URL mailto:alice@example.com", "secret-class", "1"),
    (b"2 URL alice@example.com", "secret-class", "2"),
    (b"3 URL carol.smith+x@mail.example.net/", "secret-class", "3"),
]


@test
def malformed_requests_table(ctx):
    check(len(MALFORMED) >= 40, "fewer than 40 cases")
    d = demo_daemon(ctx)
    cl = d.client()
    st0 = cl.stats()
    want_codes = {}
    for i, (line, code, rid) in enumerate(MALFORMED):
        cl.send(line + b"\n" + b"after%d PING\n" % i)
        got = cl.lines(2)
        msg = "case %d %r" % (i, line)
        m = re.fullmatch(r"(\S+) ERR (\S+) (.+)", got[0])
        check(m, "%s: not an ERR line: %r" % (msg, got[0]))
        eq((m.group(1), m.group(2)), (rid, code), msg + " (id, code)")
        check(H not in got[0].upper() and "alice" not in got[0] and "password" not in got[0],
              "%s: the argument is echoed: %r" % (msg, got[0]))
        eq(got[1], "after%d PONG" % i, msg + ": the connection is usable after the ERR")
        want_codes[code] = want_codes.get(code, 0) + 1
    # Valid edge cases on the same connection.
    eq(cl.ask("0123456789abcdef VERSION")[:25], "0123456789abcdef VERSION ")
    eq(cl.ask("- PING"), "- PONG")
    eq(cl.ask("x PW " + H.lower()[:20] + H[20:]), "x PWNED %d" % dtest.corpus().counts[H])
    st = cl.stats()
    for code, n in want_codes.items():
        key = "errors_" + code.replace("-", "_")
        eq(st[key] - st0[key], n, "STATS " + key)
    cl.close()
    d.stop_ok()


@test
def every_verb_documented(ctx):
    """The daemon's verbs (its ERR unknown-verb text, made from the one
    table BR_VERBS in protocol.h) are those of docs/protocol.md's requests
    table, each with its requests_VERB figure in STATS."""
    d = demo_daemon(ctx)
    cl = d.client()
    m = re.fullmatch(r"u ERR unknown-verb verbs are ([A-Z ]+)", cl.ask("u NOPE"))
    check(m, "ERR unknown-verb does not list the verbs")
    daemon_verbs = m.group(1).split()
    eq(len(set(daemon_verbs)), len(daemon_verbs), "a verb listed twice")
    with open(os.path.join(dtest.ARGS.source_root, "docs", "protocol.md")) as f:
        doc = f.read()
    documented = re.findall(r"^\| `ID ([A-Z]+)\b", doc, re.M)
    eq(sorted(documented), sorted(daemon_verbs), "docs/protocol.md's requests table")
    st = cl.stats()
    for v in daemon_verbs:
        check("requests_" + v.lower() in st, "STATS has no requests_%s" % v.lower())
    cl.close()
    d.stop_ok()


@test
def line_length_and_resync(ctx):
    d = demo_daemon(ctx)
    cl = d.client()
    base = b"u URL http://example.com/"
    ok8192 = base + b"a" * (8192 - len(base))
    eq(len(ok8192), 8192)
    cl.send(ok8192 + b"\n")
    eq(cl.line(), "u UNKNOWN filter-unavailable", "an 8192-byte line is accepted")
    cl.send(ok8192 + b"\r\n")
    eq(cl.line(), "u UNKNOWN filter-unavailable", "8192 bytes + CRLF is accepted")
    # 8193, 8194 and 9000 bytes (with and without CR), then a PING on the same connection.
    for n, cr in [(8193, b""), (8193, b"\r"), (8194, b""), (9000, b"\r"), (70000, b"")]:
        line = b"t%d URL http://example.com/" % n
        line += b"b" * (n - len(line))
        cl.send(line + cr + b"\n" + b"s%d PING\n" % n)
        got = cl.lines(2)
        check(re.fullmatch(r"t%d ERR line-too-long .+" % n, got[0]),
              "%d bytes: %r" % (n, got[0][:200]))
        eq(got[1], "s%d PONG" % n, "resynchronized after %d bytes" % n)
    # An over-long line without a usable id, and one sent in pieces.
    cl.send(b"bad/id " + b"c" * 9000 + b"\n1 PING\n")
    got = cl.lines(2)
    check(got[0].startswith("- ERR line-too-long "), "no-id: %r" % got[0])
    eq(got[1], "1 PONG")
    cl.send(b"p URL http://example.com/")
    for _ in range(40):
        cl.send(b"d" * 4096)
        time.sleep(0.002)
    cl.send(b"\n2 PING\n")
    got = cl.lines(2)
    check(got[0].startswith("p ERR line-too-long "), "pieces: %r" % got[0])
    eq(got[1], "2 PONG")
    # 4 MiB without a LF: the daemon discards as it reads; then it resyncs.
    cl.send(b"big URL http://x/" + b"e" * (4 << 20) + b"\n3 PING\n")
    got = cl.lines(2, timeout=60)
    check(got[0].startswith("big ERR line-too-long "), "4 MiB: %r" % got[0][:100])
    eq(got[1], "3 PONG")
    st = cl.stats()
    eq(st["errors_line_too_long"], 8, "errors_line_too_long")
    cl.close()
    d.stop_ok()


@test
def crlf_accepted(ctx):
    d = demo_daemon(ctx)
    cl = d.client()
    c = dtest.corpus()
    cl.send(b"1 PING\r\n2 VERSION\r\n3 PW " + c.password.encode() + b"\r\n4 URL http://a.example/\r\n"
            b"5 PING\n6 STATS\r\n")
    got = {ln.split(" ", 1)[0]: ln for ln in cl.lines(6)}
    eq(got["1"], "1 PONG")
    check(got["2"].startswith("2 VERSION breachd "), got["2"])
    eq(got["3"], "3 PWNED %d" % c.counts[c.password])
    eq(got["4"], "4 UNKNOWN filter-unavailable")
    eq(got["5"], "5 PONG")
    check(got["6"].startswith("6 STATS "), got["6"])
    check(not any("\r" in v for v in got.values()), "a CR in an answer")
    cl.close()
    d.stop_ok()


@test
def half_close_gets_every_answer(ctx):
    # A client may pipeline its requests and shut down its sending side.
    c = dtest.corpus()
    d = demo_daemon(ctx)
    rng = random.Random(21)
    hashes = c.present(30, rng)
    cl = d.client(timeout=30)
    cl.send("".join("h%d PW %s\n" % (i, h) for i, h in enumerate(hashes)) + "p PING\n")
    cl.s.shutdown(socket.SHUT_WR)
    got = sorted(cl.lines(len(hashes) + 1))
    want = sorted(["h%d PWNED %d" % (i, c.counts[h]) for i, h in enumerate(hashes)] +
                  ["p PONG"])
    eq(got, want, "answers after the client's EOF")
    cl.expect_eof()
    cl.close()
    d.stop_ok()


@test
def pipelined_10000(ctx):
    c = dtest.corpus()
    port = ctx.nginx(c.mirror)
    d = demo_daemon(ctx, upstream="http://127.0.0.1:%d/range/{prefix}" % port)
    rng = random.Random(10000)
    present = c.present(80, rng)
    reqs, want = [], {}
    randoms = []
    for i in range(10000):
        rid = "q%d" % i
        if i % 3 == 0:
            reqs.append("%s PING\n" % rid)
            want[rid] = rid + " PONG"
        elif i % 120 == 1:
            h = present[(i // 120) % len(present)]
            reqs.append("%s PW %s\n" % (rid, h))
            want[rid] = "%s PWNED %d" % (rid, c.counts[h])
        else:
            h = c.absent(rng)
            randoms.append((rid, h))
            reqs.append("%s PW %s\n" % (rid, h))
    maybe = dtest.filter_says(ctx, c.filter, [h for _, h in randoms])
    for rid, h in randoms:
        # A filter no answers CLEAN; a rare false positive goes to the mirror.
        want[rid] = rid + " CLEAN" if not maybe[h] else None
    cl = d.client(timeout=120)
    got = {}
    errors = []

    def reader():
        try:
            for _ in range(len(reqs)):
                ln = cl.line(timeout=120)
                if ln is None:
                    errors.append("EOF after %d answers" % len(got))
                    return
                rid = ln.split(" ", 1)[0]
                if rid in got:
                    errors.append("answered twice: %r / %r" % (got[rid], ln))
                got[rid] = ln
        except Exception as e:  # reported below
            errors.append(repr(e))

    t = threading.Thread(target=reader)
    t.start()
    t0 = time.monotonic()
    cl.send("".join(reqs))
    t.join(150)
    check(not t.is_alive(), "reader still running")
    check(not errors, "; ".join(errors[:5]))
    eq(len(got), 10000, "answers")
    for rid, w in want.items():
        if w is None:
            check(re.fullmatch(rid + r" (CLEAN|UNKNOWN \S+)", got[rid]), got[rid])
        else:
            eq(got[rid], w, rid)
    elapsed = time.monotonic() - t0
    st = cl.stats()
    eq(st["requests_total"], 10002, "requests_total (the ready PING, 10000, this STATS)")
    eq(st["errors_busy"], 0, "errors_busy")
    print("    10000 pipelined answers in %.2fs" % elapsed)
    cl.close()
    d.stop_ok()


@test
def out_of_order_answers(ctx):
    c = dtest.corpus()
    port = ctx.faultserver()
    d = demo_daemon(ctx, upstream="http://127.0.0.1:%d/delay/{prefix}" % port)
    rng = random.Random(2)
    while True:
        no = c.absent(rng)
        if not dtest.filter_says(ctx, c.filter, [no])[no]:
            break
    cl = d.client(timeout=30)
    t0 = time.monotonic()
    # 1 is a maybe (the upstream sleeps 3 s); 2 and 3 are answered locally.
    cl.send("1 PW %s\n2 PW %s\n3 PING\n4 VERSION\n" % (c.password, no))
    first = cl.lines(3, timeout=10)
    t_local = time.monotonic() - t0
    eq(first[:2], ["2 CLEAN", "3 PONG"], "local answers first")
    check(first[2].startswith("4 VERSION"), first[2])
    # The order proves it; the time only says the local ones did not wait.
    check(t_local < 2.9, "local answers took %.2fs" % t_local)
    last = cl.line(timeout=20)
    t_slow = time.monotonic() - t0
    # The faultserver's range does not hold the hash: CLEAN (a filter false positive).
    eq(last, "1 CLEAN", "the slow answer")
    check(t_slow >= 2.5, "the slow answer came after %.2fs: the upstream did not delay" % t_slow)
    cl.close()
    d.stop_ok()


@test
def check_config_and_version(ctx):
    bd = dtest.breachd_argv()
    r = subprocess.run(bd + ["--version"], capture_output=True, text=True, timeout=30)
    eq(r.returncode, 0, "--version exit")
    check(re.fullmatch(r"breachd \S+ \(protocol 1\)\n", r.stdout), "--version: %r" % r.stdout)
    c = dtest.corpus()
    good = ctx.config(name="good.conf", passwords={"filter": c.filter})
    r = subprocess.run(bd + ["--config", good, "--check-config"], capture_output=True, text=True,
                       timeout=60)
    eq(r.returncode, 0, "--check-config good: " + r.stderr)
    check(not os.path.exists(ctx.path("breachd.sock")), "--check-config created the socket")
    # The verdict, then the effective configuration (breachd(8)): every key,
    # defaults included, which loads again to the same configuration.
    head = "%s: OK\n\n# breachd effective configuration from %s\n" % (good, good)
    check(r.stdout.startswith(head), "--check-config output: %r" % r.stdout[:300])
    for line in ("\n[passwords]\n", "\nfilter = %s\n" % c.filter, "\n[cache]\n",
                 "\n# admin_users: uids 0\n"):
        check(line in r.stdout, "--check-config output lacks %r" % line)
    again = ctx.path("again.conf")
    with open(again, "w") as f:
        f.write(r.stdout[len(head):])
    r2 = subprocess.run(bd + ["--config", again, "--check-config"], capture_output=True,
                        text=True, timeout=60)
    eq(r2.returncode, 0, "--check-config of its own output: " + r2.stderr)
    eq(r2.stdout[r2.stdout.index("\n[daemon]"):], r.stdout[r.stdout.index("\n[daemon]"):],
       "the printed configuration, loaded again")
    # A proxy's password is not printed: the output lands in terminals and CI logs.
    secret = ctx.config(name="proxy.conf", passwords={"filter": c.filter},
                        upstream={"proxy": "http://ops:s3cr%40t-pw@127.0.0.1:3128/"})
    r = subprocess.run(bd + ["--config", secret, "--check-config"], capture_output=True,
                       text=True, timeout=60)
    eq(r.returncode, 0, "--check-config with a proxy: " + r.stderr)
    check("s3cr" not in r.stdout and "t-pw" not in r.stdout, "the proxy password printed")
    check("\nproxy = http://ops:REDACTED@127.0.0.1:3128/\n" in r.stdout,
          "the proxy line: %r" % [x for x in r.stdout.splitlines() if "proxy =" in x])
    # Nor the user:password@ or a token of an upstream or a feed URL
    secret = ctx.config(name="tokens.conf", passwords={
        "filter": c.filter,
        "upstream": "https://svc:Pw-up-1@ranges.example/range/{prefix}?api_key=K-up-2&mode=x",
        "filter_url": "https://T-feed-3@feeds.example/pw.bfuse?token=T-feed-4, "
                      "https://feeds.example/b.bfuse?sig=S-feed-5&X-Amz-Credential=C-feed-6"},
        urls={"upstream": "https://ranges.example/u/{prefix}?key=K-url-7;access_token=A-url-8"})
    r = subprocess.run(bd + ["--config", secret, "--check-config"], capture_output=True,
                       text=True, timeout=60)
    eq(r.returncode, 0, "--check-config with tokens: " + r.stderr)
    for s in ("Pw-up-1", "K-up-2", "T-feed-3", "T-feed-4", "S-feed-5", "C-feed-6", "K-url-7",
              "A-url-8"):
        check(s not in r.stdout, "%s printed: %r" % (s, [x for x in r.stdout.splitlines()
                                                         if "://" in x]))
    for line in ("upstream = https://svc:REDACTED@ranges.example/range/{prefix}"
                 "?api_key=REDACTED&mode=x",
                 "filter_url = https://REDACTED@feeds.example/pw.bfuse?token=REDACTED, "
                 "https://feeds.example/b.bfuse?sig=REDACTED&X-Amz-Credential=REDACTED",
                 "upstream = https://ranges.example/u/{prefix}?key=REDACTED;access_token=REDACTED"):
        check("\n%s\n" % line in r.stdout, "lacks %r: %r" % (line, [
            x for x in r.stdout.splitlines() if "://" in x]))
    # Bad files: (content, text the error must hold).
    bad = [
        ("[daemon]\nsocket = %s\n\nbogus_key = 1\n" % ctx.path("s"), ":4:"),
        ("[daemon]\nlog_level = loud\n", ":2:"),
        ("[nosuchsection]\n", ":1:"),
        ("[passwords]\nmax_filter_age = 5 days\n", ":2:"),
        ("[upstream]\ntimeout = 5s\ntimeout = 6s\n", ":3:"),
    ]
    for i, (text, where) in enumerate(bad):
        p = ctx.path("bad%d.conf" % i)
        with open(p, "w") as f:
            f.write(text)
        r = subprocess.run(bd + ["--config", p, "--check-config"], capture_output=True, text=True,
                           timeout=60)
        check(r.returncode != 0 and r.stdout == "", "bad config %d accepted: %r" % (i, r.stdout))
        check(p + where in r.stderr, "bad config %d: %r lacks %s%s" % (i, r.stderr, p, where))
    # A missing file, and a corrupt filter.
    r = subprocess.run(bd + ["--config", ctx.path("none.conf"), "--check-config"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "none.conf" in r.stderr, "missing config: %r" % r.stderr)
    broken = ctx.path("broken.bfuse")
    data = bytearray(open(c.filter, "rb").read())
    data[len(data) // 2] ^= 0x55
    open(broken, "wb").write(data)
    p = ctx.config(name="broken.conf", passwords={"filter": broken})
    r = subprocess.run(bd + ["--config", p, "--check-config"], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode != 0 and "broken.bfuse" in r.stderr, "corrupt filter: %r" % r.stderr)
    # An empty file and the shipped example are valid as they are: without a
    # filter every check goes to the range API.
    empty = ctx.path("empty.conf")
    open(empty, "w").close()
    example = os.path.join(dtest.ARGS.source_root, "data", "breachd.conf.example")
    for p in (empty, example):
        r = subprocess.run(bd + ["--config", p, "--check-config"], capture_output=True, text=True,
                           timeout=60)
        eq(r.returncode, 0, "--check-config %s: %s" % (p, r.stderr))
    # A filter that is named but missing: FILE:LINE and the fix.
    missing = ctx.path("missing.conf")
    with open(missing, "w") as f:
        f.write("[passwords]\n\nfilter = %s\n" % ctx.path("nope.bfuse"))
    r = subprocess.run(bd + ["--config", missing, "--check-config"], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode != 0 and missing + ":3: [passwords] filter" in r.stderr and
          "breachctl filter build" in r.stderr, "missing filter: %r" % r.stderr)


def _hashes_for_privacy(rng, n):
    # Prefixes with a digit and a letter cannot be a decimal number or a word in the log.
    out = []
    while len(out) < n:
        h = dtest.rand_hash(rng)
        p = h[:5]
        if any(ch.isdigit() for ch in p) and any(ch.isalpha() for ch in p):
            out.append(h)
    return out


@test
def privacy_no_argument_in_log(ctx):
    c = dtest.corpus()
    rng = random.Random(99)
    port_dead = dtest.free_port()
    secrets = []
    for level in ("info", "debug"):
        present = [h for h in c.present(40, rng) if any(ch.isalpha() for ch in h[:5]) and
                   any(ch.isdigit() for ch in h[:5])][:6] + [c.password]
        absent = _hashes_for_privacy(rng, 6)
        urls = ["http://secret-host-%s.example/private/path?token=s3cr3t%s" % (level, level),
                "https://intranet.%s.example.org/login" % level]
        emails = ["mailto:alice.%s@example.com" % level, "bob.%s@example.org" % level]
        for name, up in [("file", "file://%s/{prefix}.txt" % c.mirror),
                         ("dead", "http://127.0.0.1:%d/range/{prefix}" % port_dead)]:
            tag = "%s-%s" % (level, name)
            conf = ctx.config(name=tag + ".conf", socket_path=ctx.path(tag + ".sock"),
                              daemon={"log_level": level},
                              passwords={"filter": c.filter if name == "file" else "",
                                         "upstream": up},
                              cache={"path": ctx.path("cache-" + tag)})
            d = ctx.daemon(conf)
            cl = d.client(timeout=60)
            reqs = ["%d PW %s" % (i, h) for i, h in enumerate(present + absent)]
            reqs += ["l%d PW %s" % (i, h.lower()) for i, h in enumerate(absent[:2])]
            reqs += ["u%d URL %s" % (i, u) for i, u in enumerate(urls + emails)]
            reqs += ["b1 PW %s" % absent[0][:39], "b2 PW %sZ" % absent[1][:39],
                     "x/y PW %s" % absent[2], "b3 PW %s extra" % absent[3]]
            cl.send("".join(r + "\n" for r in reqs))
            got = cl.lines(len(reqs), timeout=60)
            check(len(got) == len(reqs), "answers")
            cl.close()
            d.stop_ok()
            log = d.log()
            check("listening" in log, "the log is empty?")
            low = log.lower()
            for h in present + absent:
                for s in (h, h[5:], h[:20], h[-20:]):
                    check(s.lower() not in low, "%s log holds part of a hash: %s" % (tag, s))
                if level == "info":
                    check(h[:5].lower() not in low, "%s log holds a prefix %s" % (tag, h[:5]))
            for s in urls + emails + ["secret-host", "intranet", "s3cr3t", "alice", "bob."]:
                check(s.lower() not in low, "%s log holds %r" % (tag, s))
            secrets.append(tag)
    eq(len(secrets), 4, "daemons checked")


if __name__ == "__main__":
    dtest.main()
