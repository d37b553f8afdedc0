#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachd integration tests: the bulk lane (docs/protocol.md "Lanes").

The LANE verb and its errors; breachctl --bulk sends it first, and is an
error against a daemon that does not know it; [upstream] bulk_queue bounds
the bulk checks waiting (ERR busy past it) in place of [limits]
max_inflight; bulk checks outlive [upstream] timeout where interactive ones
answer UNKNOWN timeout; a 429 with Retry-After through the daemon (UNKNOWN
rate-limited for interactive checks, bulk ones wait; STATS and metrics),
and the same from the [ntlm] upstream (its nt_upstream_* figures move, the
SHA-1 ones do not); an upstream answering 502 opens the circuit, logged in
one line, not one per refused check, one more when it turns half-open for
its trial and one when it closes;
and the scenario of lanefx.py at CI size: 2,000 bulk checks in distinct
prefixes at rate = 400 (10 s of bulk at its 50% share) against an nginx
mirror, while interactive checks in
new prefixes never answer UNKNOWN or wrong (their p99s, unloaded and
loaded, are printed: the 2x bound is the benchmark's); and the same with `breachctl audit` as the bulk client: 2,000
accounts of a pwdump file at rate = 400, next to interactive PW and NT
checks in new prefixes, every answer right and none UNKNOWN (the
20,000-account runs at rate = 50: tests/bench/bench_lane.py).
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import fakedaemon  # noqa: E402
import lanefx  # noqa: E402
from dtest import check, eq, test  # noqa: E402


def ctl(*args, stdin=None, timeout=120):
    return subprocess.run([dtest.ARGS.breachctl] + list(args), input=stdin,
                          env=dtest.base_env(), capture_output=True, text=True,
                          timeout=timeout)


def fault_daemon(ctx, mode, upstream_keys=None, clock=None, **sections):
    """A daemon without a filter whose every check goes to the fault
    server's MODE (tests/integration/faultserver.c); with a dtest.Clock, on
    driven time."""
    port = ctx.faultserver()
    up = {"timeout": "2s", "rate": "1000"}
    up.update(upstream_keys or {})
    conf = ctx.config(passwords={"filter": "", "upstream": "http://127.0.0.1:%d/%s/{prefix}" % (
        port, mode)}, upstream=up, **sections)
    return ctx.daemon(conf, clock=clock)


@test
def lane_verb(ctx):
    d = fault_daemon(ctx, "ok")
    cl = d.client()
    before = cl.stats()
    eq(cl.ask("l1 LANE bulk"), "l1 OK")
    # a check on the bulk lane answers as on the interactive one
    eq(cl.ask("p1 PW %05X00000000000000000000000000000000001" % 0x12345), "p1 PWNED 42")
    eq(cl.ask("l2 LANE interactive"), "l2 OK")
    eq(cl.ask("p2 PW %05X00000000000000000000000000000000001" % 0x12346), "p2 PWNED 42")
    for req, code in [("e1 LANE", "bad-request"), ("e2 LANE Bulk", "bad-request"),
                      ("e3 LANE fast", "bad-request"), ("e4 LANE bulk now", "bad-request"),
                      ("e5 lane bulk", "unknown-verb")]:
        ans = cl.ask(req)
        rid = req.split()[0]
        check(ans.startswith("%s ERR %s " % (rid, code)), "%r answered %r" % (req, ans))
    after = cl.stats()
    eq(after["requests_lane"] - before["requests_lane"], 2, "requests_lane (valid ones)")
    eq(after["errors_bad_request"] - before["errors_bad_request"], 4, "bad requests")
    cl.close()


@test
def breachctl_bulk(ctx):
    d = fault_daemon(ctx, "ok")
    sha = "%05X00000000000000000000000000000000001" % 0x23456
    before = d.stats()
    r = ctl("--socket", d.sock, "sha1", "--bulk", sha)
    eq(r.returncode, 1, "breachctl sha1 --bulk exit status (%s)" % r.stderr)
    eq(r.stdout, "PWNED 42\n", "breachctl sha1 --bulk output")
    r = ctl("--socket", d.sock, "password", "--bulk", "--json", stdin="a\nb\n")
    eq(r.returncode, 0, "breachctl password --bulk exit status (%s)" % r.stderr)
    eq(r.stdout, '{"input":1,"status":"CLEAN"}\n{"input":2,"status":"CLEAN"}\n',
       "answers of password --bulk")
    r = ctl("--socket", d.sock, "ping", "--bulk")
    eq(r.returncode, 2, "ping --bulk")
    check("unrecognized option '--bulk'" in r.stderr, "ping --bulk: %r" % r.stderr)
    after = d.stats()
    eq(after["requests_lane"] - before["requests_lane"], 2, "LANE requests sent by breachctl")


@test
def breachctl_bulk_older_daemon(ctx):
    """A daemon that answers LANE with unknown-verb: an error, nothing checked."""
    seen = []

    def handler(n, rid, rest, conn):
        seen.append(rest)
        if rest.startswith("LANE"):
            conn.sendall(("%s ERR unknown-verb verbs are PING VERSION PW URL STATS RELOAD\n"
                          % rid).encode())
        else:
            conn.sendall(("%s CLEAN\n" % rid).encode())

    sock = ctx.path("old.sock")
    fd = fakedaemon.FakeDaemon(sock, handler)
    try:
        r = ctl("--socket", sock, "sha1", "--bulk", "0" * 40)
        eq(r.returncode, 2, "exit status against an older daemon")
        check("does not know LANE" in r.stderr, "message: %r" % r.stderr)
        eq(r.stdout, "", "no result line")
        eq(seen, ["LANE bulk"], "requests sent")
        r = ctl("--socket", sock, "sha1", "0" * 40)
        eq(r.returncode, 0, "without --bulk")
    finally:
        fd.stop()


def sha_in(prefix, suffix="00000000000000000000000000000000001"):
    """A SHA-1 in prefix; the fault server's ranges hold the default
    suffix with count 42."""
    return "%05X%s" % (prefix, suffix)


def answers_by_id(cl, n, timeout=30):
    out = {}
    for ln in cl.lines(n, timeout=timeout):
        rid, _, rest = ln.partition(" ")
        out[rid] = rest
    return out


@test
def bulk_queue_bound(ctx):
    """bulk_queue = 5 over every bulk connection, not [limits]
    max_inflight = 2; past it ERR busy at once, the others answered."""
    d = fault_daemon(ctx, "delay", {"timeout": "5s", "bulk_queue": "5"},
                     limits={"max_inflight": "2"})
    a = d.client(timeout=20)
    b = d.client(timeout=20)
    eq(a.ask("l LANE bulk"), "l OK")
    eq(b.ask("l LANE bulk"), "l OK")
    a.send("".join("a%d PW %s\n" % (i, sha_in(0x31000 + i)) for i in range(4)))
    time.sleep(0.3)
    b.send("".join("b%d PW %s\n" % (i, sha_in(0x32000 + i)) for i in range(3)))
    got = answers_by_id(b, 2, timeout=2)  # the refusals come at once
    eq(sorted(got), ["b1", "b2"], "refused ids")
    for rid, ans in got.items():
        check(ans.startswith("ERR busy "), "%s: %r" % (rid, ans))
    st = d.stats()
    eq(st["bulk_queue_depth"], 5, "bulk_queue_depth")
    eq(st["errors_busy"], 2, "errors_busy")
    # an interactive connection is bound by max_inflight = 2 alone
    c = d.client(timeout=20)
    c.send("".join("c%d PW %s\n" % (i, sha_in(0x33000 + i)) for i in range(3)))
    got = answers_by_id(c, 1, timeout=2)
    eq(list(got), ["c2"], "interactive refusal")
    check(got["c2"].startswith("ERR busy too many requests in flight"), got["c2"])
    got = answers_by_id(a, 4)
    got.update(answers_by_id(b, 1))
    eq(sorted(got.values()), ["PWNED 42"] * 5, "bulk answers")
    wait = dtest.wait_for(lambda: d.stats()["bulk_queue_depth"] == 0 or None, 5,
                          "an empty bulk queue")
    check(wait, "bulk_queue_depth")
    answers_by_id(c, 2)


@test
def bulk_outlives_timeout(ctx):
    """rate = 4 (bulk: 2/s) and a 300 ms deadline: of 12 interactive checks
    in new ranges at most 6 make it (4 at once, one more each 250 ms); 6
    bulk ones all do."""
    d = fault_daemon(ctx, "ok", {"timeout": "300ms", "rate": "4", "max_inflight": "4"})
    cl = d.client(timeout=20)
    cl.send("".join("i%d PW %s\n" % (i, sha_in(0x41000 + i)) for i in range(12)))
    inter = answers_by_id(cl, 12)
    timeouts = sum(1 for a in inter.values() if a == "UNKNOWN timeout")
    check(timeouts >= 6, "interactive answers %r" % inter)
    eq(cl.ask("l LANE bulk"), "l OK")
    t0 = time.monotonic()
    cl.send("".join("b%d PW %s\n" % (i, sha_in(0x42000 + i)) for i in range(6)))
    bulk = answers_by_id(cl, 6)
    took = time.monotonic() - t0
    eq(sorted(bulk.values()), ["PWNED 42"] * 6, "bulk answers")
    check(took > 0.3, "6 bulk checks at 2/s took only %.2fs" % took)
    st = d.stats()
    eq(st["upstream_bulk_queued"], 0, "upstream_bulk_queued")
    eq(st["bulk_queue_depth"], 0, "bulk_queue_depth")


@test
def rate_limited(ctx):
    """A 429 with Retry-After: 120 and a 500 ms deadline: the interactive
    check answers UNKNOWN rate-limited, a bulk one waits and is answered
    once the pause is over (on driven time); STATS and the metrics show
    the pause and the halved rate."""
    mport = dtest.free_port()
    clock = dtest.Clock(ctx)
    d = fault_daemon(ctx, "limit", {"timeout": "500ms", "rate": "40"}, clock=clock,
                     daemon={"metrics_listen": "127.0.0.1:%d" % mport},
                     limits={"idle_timeout": "1d"})
    with open(ctx.path("fault", "limit"), "w") as f:
        f.write("429 1\nRetry-After: 120\n")
    cl = d.client(timeout=20)
    bl = d.client(timeout=20)
    eq(bl.ask("l LANE bulk"), "l OK")
    eq(cl.ask("i1 PW %s" % sha_in(0x51000)), "i1 UNKNOWN rate-limited")
    bl.send("b1 PW %s\n" % sha_in(0x51001))
    st = d.stats()
    eq(st["upstream_pauses"], 1, "upstream_pauses")
    eq(st["upstream_paused_ms"], 120000, "upstream_paused_ms")
    eq(st["upstream_rate_limited"], 1, "upstream_rate_limited")
    eq(st["upstream_rate_decreases"], 1, "upstream_rate_decreases")
    check(0 < st["upstream_pause_left_ms"] <= 120000,
          "pause left %r" % st["upstream_pause_left_ms"])
    rate = float(st["upstream_rate_effective"])
    check(20 <= rate < 21, "effective rate %r after a 429 at 40/s" % rate)
    eq(st["circuit"], "closed", "circuit")
    eq(st["pw_unknown"], 1, "pw_unknown")
    clock.advance(120)
    eq(bl.line(timeout=20), "b1 PWNED 42", "the bulk check after the pause")
    import urllib.request
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=5).read().decode()
    for key in ("breachd_upstream_rate_effective ", "breachd_upstream_pauses_total 1",
                "breachd_upstream_paused_seconds_total 120.000", "breachd_bulk_queue_depth 0"):
        check(key in body, "metrics lack %r" % key)
    check("Retry-After" in d.log() and "429" in d.log(), "no notice of the pause in the log")


@test
def nt_rate_limited(ctx):
    """The [ntlm] upstream answers 429 with Retry-After: 120, the SHA-1 one
    answers: the nt_upstream_* rate, pause and bulk figures move in STATS
    and the metrics, the SHA-1 ones do not; the bulk NT check is answered
    once the pause is over (on driven time)."""
    mport = dtest.free_port()
    port = ctx.faultserver()
    conf = ctx.config(passwords={"filter": "", "upstream": "http://127.0.0.1:%d/ok/{prefix}" % port},
                      ntlm={"upstream": "http://127.0.0.1:%d/limit/{prefix}" % port},
                      upstream={"timeout": "500ms", "rate": "40"},
                      daemon={"metrics_listen": "127.0.0.1:%d" % mport},
                      limits={"idle_timeout": "1d"})
    clock = dtest.Clock(ctx)
    d = ctx.daemon(conf, clock=clock)
    with open(ctx.path("fault", "limit"), "w") as f:
        f.write("429 1\nRetry-After: 120\n")
    cl = d.client(timeout=20)
    bl = d.client(timeout=20)
    eq(bl.ask("l LANE bulk"), "l OK")
    eq(cl.ask("i1 NT %05X%s" % (0x52000, "0" * 27)), "i1 UNKNOWN rate-limited")
    eq(cl.ask("i2 PW %s" % sha_in(0x52001)), "i2 PWNED 42", "SHA-1 while NTLM is paused")
    bl.send("b1 NT %05X%s\n" % (0x52002, "0" * 27))
    st = dtest.wait_for(lambda: (lambda s: s["nt_upstream_bulk_queued"] == 1 and s)(d.stats()),
                        10, "the bulk NT check queued behind the pause")
    eq(st["nt_upstream_pauses"], 1, "nt_upstream_pauses")
    eq(st["nt_upstream_paused_ms"], 120000, "nt_upstream_paused_ms")
    eq(st["nt_upstream_rate_limited"], 1, "nt_upstream_rate_limited")
    eq(st["nt_upstream_rate_decreases"], 1, "nt_upstream_rate_decreases")
    check(0 < st["nt_upstream_pause_left_ms"] <= 120000,
          "pause left %r" % st["nt_upstream_pause_left_ms"])
    rate = float(st["nt_upstream_rate_effective"])
    check(20 <= rate < 21, "NTLM effective rate %r after a 429 at 40/s" % rate)
    eq(st["nt_upstream_bulk_in_flight"], 0, "nt_upstream_bulk_in_flight")
    eq(st["nt_circuit"], "closed", "nt_circuit")
    eq(st["nt_unknown"], 1, "nt_unknown")
    for key in ("upstream_pauses", "upstream_paused_ms", "upstream_pause_left_ms",
                "upstream_rate_limited", "upstream_rate_decreases", "upstream_bulk_queued",
                "upstream_bulk_in_flight"):
        eq(st[key], 0, key)
    eq(float(st["upstream_rate_effective"]), 40.0, "the SHA-1 effective rate")
    import urllib.request
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=5).read().decode()
    for key in ("breachd_nt_upstream_pauses_total 1\n",
                "breachd_nt_upstream_paused_seconds_total 120.000\n",
                "breachd_nt_upstream_rate_limited_total 1\n", "breachd_nt_upstream_bulk_queued 1\n",
                "breachd_nt_upstream_rate_effective 20", "breachd_nt_circuit_state 0\n",
                "breachd_upstream_pauses_total 0\n", "breachd_upstream_rate_effective 40\n"):
        check(key in body, "metrics lack %r" % key)
    clock.advance(120)
    line = bl.line(timeout=20)
    check(line.startswith("b1 ") and "rate-limited" not in line, "the bulk NT check after the pause: %r" % line)
    eq(d.stats()["nt_upstream_bulk_queued"], 0, "nt_upstream_bulk_queued after the pause")


@test
def circuit_open_log(ctx):
    """Every range query answered 502 and 200 checks in new prefixes at
    once, two range queries at a time: the circuit opens and ends the
    queued ones, then 100 more checks are refused (UNKNOWN circuit-open),
    all logged as one line when it opens, not one each; once the upstream
    answers and the cool-down ([upstream] breaker_cooldown = 5m, on
    driven time: dtest.Clock) is over, one line says it turned half-open for
    its trial and one that it closed and how many fetches it refused, the
    count STATS has too."""
    clock = dtest.Clock(ctx)
    d = fault_daemon(ctx, "switch", {"max_inflight": "2", "breaker_cooldown": "5m"}, clock=clock)
    state = ctx.path("fault")
    with open(os.path.join(state, "switch"), "w") as f:
        f.write("badgateway\n")
    cl = d.client(timeout=60)
    cl.send("".join("q%d PW %s\n" % (i, sha_in(0x53000 + i)) for i in range(200)))
    got = list(answers_by_id(cl, 200, timeout=60).values())
    check(set(got) <= {"UNKNOWN upstream-error", "UNKNOWN circuit-open"}, "answers %r" % set(got))
    check(got.count("UNKNOWN circuit-open") >= 150,
          "%d of 200 ended by the circuit" % got.count("UNKNOWN circuit-open"))
    st0 = d.stats()
    eq(st0["circuit"], "open", "circuit")
    cl.send("".join("r%d PW %s\n" % (i, sha_in(0x54000 + i)) for i in range(100)))
    got = answers_by_id(cl, 100)
    eq(sorted(set(got.values())), ["UNKNOWN circuit-open"], "answers while open")
    st1 = d.stats()
    eq(st1["upstream_circuit_refused"] - st0["upstream_circuit_refused"], 100,
       "upstream_circuit_refused")
    eq(st1["pw_unknown"], 300, "pw_unknown")

    def circuit_lines():
        return [ln for ln in d.log().splitlines()
                if "upstream circuit" in ln or "circuit-open" in ln]
    check(len(circuit_lines()) == 1 and "upstream circuit open" in circuit_lines()[0],
          "circuit lines in the log: %r" % circuit_lines())
    with open(os.path.join(state, "switch"), "w") as f:
        f.write("ok\n")
    probe = sha_in(0x55000)
    eq(cl.ask("o PW " + probe), "o UNKNOWN circuit-open", "before the cool-down is over")
    clock.advance(5 * 60)  # cl is idle past idle_timeout now: closed
    cl = d.client()
    # the trial (a decoy may go first): asked again until it has closed
    dtest.wait_for(lambda: cl.ask("p PW " + probe) == "p PWNED 42", 30 * dtest.SLOW,
                   "the circuit to close after its cool-down", step=0.2)
    st2 = d.stats()
    eq(st2["circuit"], "closed", "circuit")
    lines = circuit_lines()
    eq(len(lines), 3, "circuit lines in the log: %r" % lines)
    check("upstream circuit half-open" in lines[1] and "trial" in lines[1],
          "the half-open line %r" % lines[1])
    # nothing was refused before it opened: the close line counts them all
    check("upstream circuit closed" in lines[2] and
          " %d fetches refused" % st2["upstream_circuit_refused"] in lines[2],
          "the close line %r, upstream_circuit_refused=%d"
          % (lines[2], st2["upstream_circuit_refused"]))


@test
def bulk_does_not_slow_interactive(ctx):
    """No interactive check waits behind the bulk queue (none answers
    UNKNOWN or wrong); the p99s are reported, not asserted: on a shared
    machine they follow its other load (tests/bench/bench_lane.py asserts
    the 2x bound by hand)."""
    lanefx.run(ctx, n_bulk=2000, rate=400, pace=20, n_unloaded=150, assert_p99=False,
               report=lambda s: print("  " + s, flush=True))


@test
def audit_next_to_interactive(ctx):
    """breachctl audit on the bulk lane it asks for (200 ranges a second,
    half of rate = 400) while interactive PW checks (their own upstream)
    and NT checks (the audit's upstream) in new prefixes go one at a time;
    latencies are reported, not asserted."""
    lanefx.run_audit(ctx, n_accounts=2000, rate=400, pace=20, n_unloaded=40, assert_p99=False,
                     report=lambda s: print("  " + s, flush=True))


if __name__ == "__main__":
    dtest.TEST_TIMEOUT_S = 240  # the bulk run alone takes 10 s (60 s under valgrind)
    dtest.main()
