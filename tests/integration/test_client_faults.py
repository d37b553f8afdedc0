#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachctl when breachd is slow or misbehaves ("Client library"
and "breachctl"): --timeout against a real daemon with the faultserver's
slow upstream, and, for what a real daemon will not do on demand (answers
out of order by design, dripping answers, closing half way,
connection-level refusals, stale and garbage lines, a full listen backlog),
small fake daemons in this process.

The fixture (filter, mirrors, start(), ctl()) is clientfx.py; the commands
are test_client.py and test_client_password.py. Standard library only;
dtest.py is the harness.
"""
import os
import re
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, sha1hex, test  # noqa: E402
import fakedaemon  # noqa: E402
from fakedaemon import FakeDaemon  # noqa: E402
from clientfx import HIT, ctl, fx, no_leak, one_stderr_line, start, want_rc  # noqa: E402

# ---- timeouts, failures half way -------------------------------------------------------

@test
def client_timeout_slow_upstream(ctx):
    f = fx()
    port = ctx.faultserver()
    d = start(ctx, upstream="http://127.0.0.1:%d/delay/{prefix}" % port,
              limits={"drain_timeout": "300ms"})
    # hunter2 is a filter maybe: its range is asked upstream, which takes
    # 3 s; the clean ones are answered at once (out of order).
    pws = [f.clean[0], "hunter2", f.clean[1]]
    r = ctl("password", "--timeout", "200", sock=d.sock, stdin="\n".join(pws) + "\n")
    want_rc(r, 2, "timeout")
    check(r.secs < 2.0, "took %.2fs" % r.secs)
    eq(r.lines[0], "CLEAN", "answered before the timeout")
    check(re.fullmatch(r"ERR .*timed out.*200 ms", r.lines[1]), "timed-out line: %r" % r)
    eq(r.lines[2], "CLEAN", "answered before the timeout, out of order")
    one_stderr_line(r, d.sock, "timed out", "200 ms")
    no_leak(r, pws)
    r = ctl("sha1", "--timeout", "200", sha1hex("letmein"), sock=d.sock)
    want_rc(r, 2, "sha1 timeout")
    one_stderr_line(r, "timed out")
    # Longer than the upstream: answered (the faultserver's range does not
    # hold it: CLEAN).
    r = ctl("sha1", "--timeout", "8000", sha1hex("hunter2"), sock=d.sock)
    eq((r.rc, r.lines), (0, ["CLEAN"]), "patient client")
    r = ctl("--socket", d.sock, "sha1", "--timeout", "0", HIT + "ABCDE")
    want_rc(r, 2, "--timeout 0 refused")
    check("--timeout" in r.err, "message %r" % r)
    d.stop()


@test
def fake_daemon_failures(ctx):
    """What the real daemon will not do on demand."""
    hashes = [sha1hex("fake-%d" % i) for i in range(6)]

    # 1. Answers 2 of 4, then closes: the 2 are printed, the rest ERR, one
    #    line on stderr, exit 2.
    def half(n, rid, rest, c):
        if n <= 2:
            c.sendall(("%s PWNED %d\n" % (rid, n)).encode())
        elif n == 4:
            return "close"
    fk = FakeDaemon(ctx.path("half.sock"), half)
    r = ctl("sha1", *hashes[:4], sock=fk.path)
    fk.stop()
    want_rc(r, 2, "closed half way")
    eq(r.lines[:2], ["PWNED 1", "PWNED 2"], "the answers that came")
    check(all(re.fullmatch(r"ERR .*connection closed by breachd.*", ln) for ln in r.lines[2:])
          and len(r.lines) == 4, "the others: %r" % r)
    one_stderr_line(r, "connection closed by breachd")

    # 2. A connection-level refusal ("- ERR busy ...; connection closed").
    def busy(n, rid, rest, c):
        c.sendall(b"- ERR busy too many connections; connection closed\n")
        return "close"
    fk = FakeDaemon(ctx.path("busy.sock"), busy)
    r = ctl("sha1", hashes[0], hashes[1], sock=fk.path)
    fk.stop()
    want_rc(r, 2, "refusal")
    one_stderr_line(r, "busy too many connections; connection closed")
    eq(len(r.lines), 2, "one line per input: %r" % r)

    # 3. Answers out of order (reverse, after all came in): printed in order.
    pending = []

    def reverse(n, rid, rest, c):
        pending.append(rid)
        if n == 5:
            for i, p in enumerate(reversed(pending)):
                c.sendall(("%s PWNED %d\n" % (p, 100 + int(p))).encode())
    fk = FakeDaemon(ctx.path("rev.sock"), reverse)
    r = ctl("sha1", *hashes[:5], sock=fk.path)
    fk.stop()
    want_rc(r, 1, "out of order")
    ids = [int(x) for x in fk.ids[0]]
    eq(r.lines, ["PWNED %d" % (100 + i) for i in ids], "printed in input order")

    # 4. Slow but steady: one answer every 150 ms; --timeout 400 is about
    #    progress, not the whole batch (6 x 150 ms > 400 ms).
    def steady(n, rid, rest, c):
        time.sleep(0.15)
        c.sendall(("%s CLEAN\n" % rid).encode())
    fk = FakeDaemon(ctx.path("steady.sock"), steady)
    r = ctl("sha1", "--timeout", "400", *hashes, sock=fk.path)
    fk.stop()
    eq((r.rc, r.lines), (0, ["CLEAN"] * 6), "steady answers: %r" % r)
    check(r.secs > 0.8, "%.2fs: not slow enough to tell" % r.secs)

    # 5. Ids are never reused on a connection, even across breachctl's
    #    batches of 256 (a late answer of a failed batch must never be
    #    taken for a later request's).
    def echo_clean(n, rid, rest, c):
        c.sendall(("%s CLEAN\n" % rid).encode())
    fk = FakeDaemon(ctx.path("ids.sock"), echo_clean)
    r = ctl("password", sock=fk.path, stdin="".join("p%d\n" % i for i in range(600)))
    fk.stop()
    eq((r.rc, len(r.lines)), (0, 600), "600 over one connection")
    eq(len(fk.ids), 1, "one connection")
    # (each password's SIMILAR requests too: the default, similar=warn)
    check(len(fk.ids[0]) >= 600, "%d requests" % len(fk.ids[0]))
    eq(len(set(fk.ids[0])), len(fk.ids[0]), "distinct ids")

    # 5b. The connection drops at a password's SIMILAR request: under
    #     --similar=reject neither it nor a later one may be printed CLEAN
    #     unchecked (ERR); under the default (warn) the exact answers stand.
    def drop_at_similar(n, rid, rest, c):
        if rest.startswith("SIMILAR"):
            return "close"
        c.sendall(("%s CLEAN\n" % rid).encode())
    for mode, rc, want in (("reject", 2, "ERR"), ("warn", 0, "CLEAN")):
        fk = FakeDaemon(ctx.path("drop-%s.sock" % mode), drop_at_similar)
        r = ctl("password", "--similar=" + mode, sock=fk.path,
                stdin="Summer2025!\nP@ssw0rd1\nmonkey123\n")
        fk.stop()
        eq((r.rc, [x.split()[0] for x in r.lines]), (rc, [want] * 3), "dropped at SIMILAR, %s: %r" % (mode, r.err))

    # 6. A stale answer (an id this batch did not send) and garbage are
    #    ignored; a non-closing "- ERR" line does not fail the batch.
    def noisy(n, rid, rest, c):
        c.sendall(("999 PWNED 5\n- ERR bad-id noise\nnot-a-line\n%s CLEAN\n" % rid).encode())
    fk = FakeDaemon(ctx.path("noisy.sock"), noisy)
    r = ctl("sha1", hashes[0], hashes[1], sock=fk.path)
    fk.stop()
    eq((r.rc, r.lines, r.err), (0, ["CLEAN", "CLEAN"], ""), "noise ignored")

    # 7. Timeout while nothing comes at all.
    fk = FakeDaemon(ctx.path("mute.sock"), lambda n, rid, rest, c: None)
    r = ctl("ping", "--timeout", "300", sock=fk.path)
    fk.stop()
    want_rc(r, 2, "mute daemon")
    one_stderr_line(r, "timed out", "300 ms")
    check(0.25 < r.secs < 2.0, "timed out after %.2fs" % r.secs)


@test
def full_listen_backlog(ctx):
    """A full backlog: a non-blocking AF_UNIX connect() fails with EAGAIN and
    does not go on in the background; the client retries until its timeout
    (it used to call the socket connected and fail with ENOTCONN)."""
    path = ctx.path("backlog.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(0)
    fillers = []
    try:
        while True:  # fill the backlog
            c = socket.socket(socket.AF_UNIX)
            c.setblocking(False)
            try:
                c.connect(path)
            except BlockingIOError:
                c.close()
                break
            fillers.append(c)
            check(len(fillers) < 100, "the backlog never filled")
        r = ctl("ping", "--timeout", "400", sock=path)
        want_rc(r, 2, "backlog full")
        one_stderr_line(r, path, "backlog")
        check(0.35 < r.secs < 3, "gave up after %.2fs" % r.secs)

        # The daemon accepts within the timeout: the ping goes through.
        def accept_later():
            time.sleep(0.3)
            for _ in fillers:  # first in the queue; they send nothing
                srv.accept()[0].close()
            a, _ = srv.accept()
            a.settimeout(5)
            try:
                data = a.recv(100)
                if data.endswith(b" PING\n"):
                    a.sendall(data.split(b" ")[0] + b" PONG\n")
                    time.sleep(0.2)
            except OSError:
                pass
            a.close()
        t = threading.Thread(target=accept_later, daemon=True)
        t.start()
        r = ctl("ping", "--timeout", "3000", sock=path)
        t.join(10)
        eq((r.rc, r.lines), (0, ["PONG"]), "accepted late: %r" % r)
        check(r.secs > 0.25, "did not wait (%.2fs)" % r.secs)
    finally:
        for c in fillers:
            c.close()
        srv.close()


@test
def impostor_socket_refused(ctx):
    """Another uid serves a socket where breachd's is expected (its
    directory writable by others): breachctl checks the peer's uid
    (SO_PEERCRED) and refuses it, in one line naming the uid, instead of
    printing the impostor's CLEAN."""
    sock = fakedaemon.impostor(ctx)
    r = ctl("sha1", "12345" + HIT, sock=sock)
    check("CLEAN" not in r.out, "the impostor's answer taken: %r" % r)
    want_rc(r, 2, "an impostor")
    one_stderr_line(r, "uid 65534", "not breachd")


if __name__ == "__main__":
    dtest.main()
