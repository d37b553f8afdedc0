#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachd integration tests: the bulk lane (docs/protocol.md "Lanes").

The LANE verb and its errors; breachctl --bulk sends it first, and is an
error against a daemon that does not know it.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import fakedaemon  # noqa: E402
from dtest import check, eq, test  # noqa: E402


def ctl(*args, stdin=None, timeout=120):
    return subprocess.run([dtest.ARGS.breachctl] + list(args), input=stdin,
                          env=dtest.base_env(), capture_output=True, text=True,
                          timeout=timeout)


def fault_daemon(ctx, mode, upstream_keys=None, **sections):
    """A daemon without a filter whose every check goes to the fault
    server's MODE (tests/integration/faultserver.c)."""
    port = ctx.faultserver()
    up = {"timeout": "2s", "rate": "1000"}
    up.update(upstream_keys or {})
    conf = ctx.config(passwords={"filter": "", "upstream": "http://127.0.0.1:%d/%s/{prefix}" % (
        port, mode)}, upstream=up, **sections)
    return ctx.daemon(conf)


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
    check("--bulk is for checks" in r.stderr, "ping --bulk: %r" % r.stderr)
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


if __name__ == "__main__":
    dtest.main()
