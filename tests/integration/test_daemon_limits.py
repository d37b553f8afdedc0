#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachd integration tests: limits, backpressure, peers, drain.

Max connections, in-flight requests per connection, idle timeout,
backpressure (a client that does not read), peer refusal by SO_PEERCRED
(allowed_users, allowed_groups, admin_users; clients under another uid via
setpriv, root only), and the SIGTERM drain.
"""
import errno
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, test  # noqa: E402

HIT = "00000000000000000000000000000000001"  # every faultserver range holds it: count 42


def fault_daemon(ctx, mode="delay", env=None, filt=None, clock=None, **sections):
    port = ctx.faultserver()
    pw = {"filter": filt or "", "upstream": "http://127.0.0.1:%d/%s/{prefix}" % (port, mode)}
    return ctx.daemon(ctx.config(passwords=pw, **sections), env=env, clock=clock)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@test
def max_connections(ctx):
    d = ctx.daemon(ctx.config(limits={"max_connections": 5}))
    first = d.client()
    # The readiness probe's connection may still be closing: wait until it is gone.
    dtest.wait_for(lambda: first.stats()["connections"] == 1, what="one connection")
    conns = [first]
    for i in range(4):
        c = d.client()
        eq(c.ask("%d PING" % i), "%d PONG" % i)
        conns.append(c)
    sixth = d.client()
    ln = sixth.line()
    check(ln is not None and re.fullmatch(r"- ERR busy .+", ln), "6th connection: %r" % ln)
    check("closed" in ln, "the refusal does not say the connection is closed: %r" % ln)
    sixth.expect_eof()
    sixth.close()
    for i, c in enumerate(conns):  # the five still work
        eq(c.ask("again%d PING" % i), "again%d PONG" % i)
    conns.pop().close()
    dtest.wait_for(lambda: first.stats()["connections"] == 4, what="a slot to free up")
    c = d.client()
    eq(c.ask("new PING"), "new PONG")
    st = first.stats()
    eq(st["connections_refused"], 1, "connections_refused")
    eq(st["errors_busy"], 1, "errors_busy")
    for c in conns + [c]:
        c.close()
    d.stop_ok()


@test
def max_inflight_per_connection(ctx):
    c = dtest.corpus()
    d = fault_daemon(ctx, filt=c.filter, limits={"max_inflight": 4})
    rng = random.Random(4)
    maybes = c.present(6, rng)
    no = c.absent(rng)
    check(not dtest.filter_says(ctx, c.filter, [no])[no], "unlucky: a random hash is a maybe")
    cl = d.client(timeout=30)
    t0 = time.monotonic()
    cl.send("".join("m%d PW %s\n" % (i, h) for i, h in enumerate(maybes[:5])))
    # A definite no, a PING and the sixth maybe go on while four wait upstream.
    cl.send("n PW %s\np PING\nm5 PW %s\n" % (no, maybes[5]))
    quick = cl.lines(4, timeout=2.9)  # before the first upstream answer (3 s)
    eq(sorted(quick), sorted(["m4 ERR busy too many requests in flight on this connection",
                              "n CLEAN", "p PONG",
                              "m5 ERR busy too many requests in flight on this connection"]),
       "answers while four are in flight")
    # The limit is per connection.
    other = d.client(timeout=30)
    other.send("o PW %s\n" % maybes[4])
    slow = cl.lines(4, timeout=20)
    eq(sorted(slow), ["m%d CLEAN" % i for i in range(4)], "the four slow answers")
    check(time.monotonic() - t0 > 2.0, "the upstream did not delay")
    eq(other.line(timeout=20), "o CLEAN", "another connection's request")
    # Once answered, the slots are free again.
    cl.send("again PW %s\n" % maybes[5])
    eq(cl.line(timeout=20), "again CLEAN")
    st = cl.stats()
    eq(st["errors_busy"], 2, "errors_busy")
    eq(st["requests_in_flight"], 0, "requests_in_flight")
    cl.close()
    other.close()
    d.stop_ok()


@test
def idle_timeout(ctx):
    """idle_timeout = 60s on driven time (breachd-testclock, dtest.Clock): at
    +65 s the connection silent since 0 is closed, not the one that talked
    at +40 s nor the one waiting for an answer; that one once answered and
    silent for another 61 s."""
    clock = dtest.Clock(ctx)
    d = fault_daemon(ctx, limits={"idle_timeout": "60s"}, upstream={"timeout": "300s"},
                     clock=clock)
    waiting, idle, busy = d.client(timeout=30), d.client(), d.client()
    waiting.send("w PW ABCDE%s\n" % HIT)  # the faultserver answers after 3 s
    gone = d.client()
    gone.send("g PW 9F8E7%s\n" % HIT)  # a client that leaves before its answer
    gone.close()
    eq(busy.ask("0 PING"), "0 PONG")
    eq(idle.ask("i PING"), "i PONG")
    dtest.wait_for(lambda: d.stats()["requests_in_flight"] == 2, what="both requests in flight")
    clock.advance(40)
    eq(busy.ask("1 PING"), "1 PONG")
    clock.advance(25)
    idle.expect_eof(timeout=10)
    eq(busy.ask("still PING"), "still PONG", "the talking client was closed")
    eq(waiting.line(timeout=20), "w PWNED 42", "a connection waiting for an answer was closed")
    clock.advance(61)
    waiting.expect_eof(timeout=10)  # idle once answered
    busy.expect_eof(timeout=10)
    st = d.stats()
    eq((st["requests_in_flight"], st["connections"]), (0, 1), "in flight, connections")
    eq(st["pw_pwned"], 2, "both answers were made")
    d.stop_ok()


@test
def backpressure_unread_responses(ctx):
    c = dtest.corpus()
    d = ctx.daemon(ctx.config(passwords={"filter": c.filter, "upstream": ""},
                              limits={"max_unread": "4K"}))
    rng = random.Random(8)
    n = 60000
    absent = [c.absent(rng) for _ in range(200)]
    says = dtest.filter_says(ctx, c.filter, absent)
    absent = [h for h in absent if not says[h]]
    reqs, want = [], {}
    for i in range(n):
        rid = "b%d" % i
        if i % 2:
            reqs.append("%s PING\n" % rid)
            want[rid] = "PONG"
        else:
            reqs.append("%s PW %s\n" % (rid, absent[i % len(absent)]))
            want[rid] = "CLEAN"
    payload = "".join(reqs).encode()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)
    s.connect(d.sock)
    s.setblocking(False)
    rss0 = rss_kib(d.pid)
    sent = 0
    stalled_at = None
    deadline = time.monotonic() + 30
    while sent < len(payload) and time.monotonic() < deadline:
        try:
            sent += s.send(payload[sent:sent + 65536])
            stalled_at = None
        except BlockingIOError:
            if stalled_at is None:
                stalled_at = time.monotonic()
            elif time.monotonic() - stalled_at > 1.0:
                break  # the daemon stopped reading us
            time.sleep(0.01)
    check(sent < len(payload), "the daemon read all %d bytes without the client reading: "
          "no backpressure" % len(payload))
    rss1 = rss_kib(d.pid)
    limit = 64 * 1024 if dtest.is_asan() else 16 * 1024
    check(rss1 - rss0 < limit, "daemon RSS grew by %d KiB" % (rss1 - rss0))
    # Another connection is served meanwhile.
    other = d.client()
    eq(other.ask("o PING"), "o PONG")
    # Now read everything while sending the rest.
    got = {}
    errors = []

    def reader():
        buf = b""
        s2 = s.dup()
        s2.settimeout(60)
        try:
            while len(got) < n:
                chunk = s2.recv(1 << 20)
                if not chunk:
                    errors.append("EOF after %d answers" % len(got))
                    return
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for ln in lines:
                    rid, rest = ln.decode().split(" ", 1)
                    if rid in got:
                        errors.append("twice: " + rid)
                    got[rid] = rest
        except Exception as e:  # reported below
            errors.append(repr(e))
        finally:
            s2.close()

    t = threading.Thread(target=reader)
    t.start()
    s.setblocking(True)
    s.settimeout(60)
    s.sendall(payload[sent:])
    t.join(90)
    check(not t.is_alive(), "reader still running")
    check(not errors, "; ".join(errors[:5]))
    eq(len(got), n, "answers")
    bad = [(k, v, want[k]) for k, v in got.items() if v != want[k]]
    check(not bad, "wrong answers: %r" % bad[:5])
    print("    stalled after %d of %d bytes; RSS %d -> %d KiB" % (sent, len(payload), rss0, rss1))
    s.close()
    other.close()
    d.stop_ok()


# ---- peers ----

def setpriv_python(uid, gid, groups=None):
    """argv prefix running python as uid/gid; raises Skip when impossible."""
    if os.geteuid() != 0:
        raise dtest.Skip("not root: cannot run a client under another uid")
    sp = shutil.which("setpriv")
    if not sp:
        raise dtest.Skip("setpriv is missing (util-linux)")
    gr = ["--groups", ",".join(map(str, groups))] if groups else ["--clear-groups"]
    for py in (sys.executable, "/usr/bin/python3"):
        argv = [sp, "--reuid=%d" % uid, "--regid=%d" % gid] + gr + [py]
        try:
            r = subprocess.run(argv + ["-c", "import os; print(os.getuid())"],
                               capture_output=True, text=True, timeout=30)
        except OSError:
            continue
        if r.returncode == 0 and r.stdout.strip() == str(uid):
            return argv
    raise dtest.Skip("no python3 runnable by uid %d" % uid)


# A client for setpriv: connects, sends argv[2] (may be empty), prints the
# lines it gets until EOF, or until argv[3] lines came and 0.3 s more passed
# (or 5 s of silence), then "<EOF>" or "<OPEN>".
PEER_CLIENT = r"""
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("<CONNECT %s>" % e.__class__.__name__); sys.exit(0)
if sys.argv[2]:
    try:
        s.sendall(sys.argv[2].encode().replace(b"\\n", b"\n"))
    except OSError:
        pass
want = int(sys.argv[3])
buf = b""
end = "<OPEN>"
while True:
    if buf.count(b"\n") >= want:
        s.settimeout(0.3)
    try:
        c = s.recv(4096)
    except socket.timeout:
        break
    except OSError:
        c = b""
    if not c:
        end = "<EOF>"
        break
    buf += c
sys.stdout.write(buf.decode(errors="replace"))
print(end)
"""


def run_peer(ctx, uid, gid, sock, send, lines, groups=None):
    """Run PEER_CLIENT as uid/gid; its output lines (the last is <EOF> or <OPEN>)."""
    argv = setpriv_python(uid, gid, groups) + ["-c", PEER_CLIENT, sock, send, str(lines)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=dtest.base_env())
    check(r.returncode == 0, "peer client failed: %s" % r.stderr)
    return r.stdout.splitlines()



def open_dir_for_others(ctx):
    os.chmod(dtest.ROOT, 0o711)
    os.chmod(ctx.dir, 0o711)


@test
def peer_refused_allowed_users(ctx):
    setpriv_python(65534, 65534)  # skips when not root / no setpriv
    open_dir_for_others(ctx)
    d = ctx.daemon(ctx.config(daemon={"allowed_users": "root", "socket_mode": "0666"}))
    eq(oct(os.stat(d.sock).st_mode & 0o777), "0o666", "socket_mode")
    out = run_peer(ctx, 65534, 65534, d.sock, "1 PING\\n", 1)
    eq(len(out), 2, "peer output %r" % out)
    check(re.fullmatch(r"- ERR forbidden .*closed.*", out[0]), "refusal line %r" % out[0])
    eq(out[1], "<EOF>", "the connection is closed")
    cl = d.client()
    eq(cl.ask("r PING"), "r PONG", "root is allowed")
    st = cl.stats()
    eq(st["connections_refused"], 1, "connections_refused")
    eq(st["errors_forbidden"], 1, "errors_forbidden")
    eq(st["requests_ping"], 2, "the refused peer's PING was not served")
    cl.close()
    d.stop_ok()


@test
def peer_allowed_groups(ctx):
    setpriv_python(65534, 65534)
    open_dir_for_others(ctx)
    d = ctx.daemon(ctx.config(daemon={"allowed_groups": "65534", "socket_mode": "0666"}))
    cases = [
        (65534, 65534, None, True),      # primary group listed
        (65534, 100, None, False),       # neither group
        (65534, 100, [65534], True),     # supplementary group listed (SO_PEERGROUPS)
        (1234, 1234, None, False),
    ]
    for uid, gid, groups, ok in cases:
        out = run_peer(ctx, uid, gid, d.sock, "g PING\\n", 1, groups=groups)
        what = "uid %d gid %d groups %s" % (uid, gid, groups)
        if ok:
            eq(out, ["g PONG", "<OPEN>"], what)
        else:
            eq(len(out), 2, what)
            check(out[0].startswith("- ERR forbidden "), "%s: %r" % (what, out))
            eq(out[1], "<EOF>", what)
    cl = d.client()  # root: in admin_users, so allowed
    eq(cl.ask("r PING"), "r PONG")
    eq(cl.stats()["connections_refused"], 2, "connections_refused")
    cl.close()
    d.stop_ok()


@test
def peer_admin_users_reload(ctx):
    setpriv_python(65534, 65534)
    open_dir_for_others(ctx)
    conf = ctx.config(daemon={"allowed_users": "root,65534", "socket_mode": "0666"})
    d = ctx.daemon(conf)
    out = run_peer(ctx, 65534, 65534, d.sock, "1 RELOAD\\n2 PING\\n", 2)
    eq(len(out), 3, "output %r" % out)
    check(re.fullmatch(r"1 ERR forbidden .+", out[0]), "non-admin RELOAD: %r" % out[0])
    eq(out[1:], ["2 PONG", "<OPEN>"], "the connection stays usable")
    cl = d.client(timeout=30)
    eq(cl.ask("r RELOAD"), "r RELOADED", "root reloads")
    eq(cl.stats()["reloads"], 1, "reloads")
    cl.close()
    d.stop_ok()
    # admin_users = 65534: nobody may reload (and so connect); root may not.
    conf = ctx.config(name="b.conf", socket_path=ctx.path("b.sock"),
                      daemon={"admin_users": "65534", "socket_mode": "0666"},
                      cache={"path": ctx.path("cache-b")})
    d = ctx.daemon(conf)
    out = run_peer(ctx, 65534, 65534, d.sock, "1 RELOAD\\n", 1)
    eq(out, ["1 RELOADED", "<OPEN>"], "admin nobody reloads")
    cl = d.client()
    ans = cl.ask("r RELOAD")
    check(re.fullmatch(r"r ERR forbidden .+", ans), "root is not an admin here: %r" % ans)
    cl.close()
    d.stop_ok()


@test
def reload_forbidden_for_non_admin(ctx):
    # Works without root: the test's own uid is not in admin_users, but in
    # stats_users (STATS without RELOAD).
    other = 65534 if os.getuid() != 65534 else 65533
    d = ctx.daemon(ctx.config(daemon={"admin_users": str(other), "stats_users": str(os.getuid())}))
    cl = d.client()
    ans = cl.ask("1 RELOAD")
    check(re.fullmatch(r"1 ERR forbidden .+", ans), "non-admin RELOAD: %r" % ans)
    eq(cl.ask("2 PING"), "2 PONG")
    st = cl.stats()
    eq((st["reloads"], st["errors_forbidden"]), (0, 1), "reloads, errors_forbidden")
    cl.close()
    # breachctl says it with the code apart: "forbidden: RELOAD is for ..."
    r = ctx.breachctl("--socket", d.sock, "reload", check_rc=False)
    eq((r.returncode, r.stderr.strip()),
       (2, "breachctl: reload: forbidden: RELOAD is for admin_users"), "breachctl reload")
    d.stop_ok()


# ---- SIGTERM ----

def connect_after_stop(sock):
    """What a new client gets from a stopping daemon: 'gone' (cannot
    connect), 'eof', or the first line."""
    try:
        c = dtest.Client(sock, timeout=3)
    except OSError as e:
        check(e.errno in (errno.ENOENT, errno.ECONNREFUSED), "connect: %r" % e)
        return "gone"
    try:
        ln = c.line(timeout=3)  # a refusal comes unasked
    except dtest.Timeout:
        try:  # nothing: is it served?
            c.send("n PING\n")
            ln = c.line(timeout=3)
        except dtest.Timeout:
            ln = "<no answer>"
        except OSError:
            ln = None
    c.close()
    return "eof" if ln is None else ln


@test
def sigterm_drain(ctx):
    """drain_timeout = 5m on driven time, never advanced: breachd exits once
    the pending request is answered, not when the drain timeout ends."""
    d = fault_daemon(ctx, limits={"drain_timeout": "5m"}, clock=dtest.Clock(ctx))
    pending = d.client(timeout=30)
    idle = d.client(timeout=30)
    pending.send("1 PW 12ABC%s\n" % HIT)
    dtest.wait_for(lambda: idle.stats()["requests_in_flight"] == 1, what="the request in flight")
    d.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    got = connect_after_stop(d.sock)
    # breachd's own socket: accepted only to be refused, with a word.
    check(got.startswith("- ERR shutting-down ") and "closed" in got,
          "a new connection during the drain got %r" % got)
    ans = idle.ask("2 PING")
    check(ans.startswith("2 ERR shutting-down "), "a request during the drain: %r" % ans)
    eq(pending.line(timeout=20), "1 PWNED 42", "the pending request is answered")
    eq(d.proc.wait(timeout=60), 0, "exit status")
    check(not os.path.exists(d.sock), "the socket file is left behind")
    pending.expect_eof()
    idle.expect_eof()


@test
def sigterm_drain_timeout(ctx):
    """drain_timeout = 100s on driven time, the upstream hanging (its
    timeout 300 s): the request is cut when the clock passes the drain
    timeout, and breachd exits."""
    clock = dtest.Clock(ctx)
    d = fault_daemon(ctx, "hang", limits={"drain_timeout": "100s"}, upstream={"timeout": "300s"},
                     clock=clock)
    cl = d.client(timeout=30)
    cl.send("1 PW 12ABC%s\n" % HIT)
    dtest.wait_for(lambda: d.stats()["requests_in_flight"] == 1, what="the request in flight")
    d.send_signal(signal.SIGTERM)
    dtest.wait_for(lambda: connect_after_stop(d.sock).startswith("- ERR shutting-down "),
                   what="the drain to start")  # its timer set before the jump
    clock.advance(100)
    ans = cl.line(timeout=30)
    eq(d.proc.wait(timeout=60), 0, "exit status")
    eq(ans, "1 UNKNOWN shutting-down", "the request cut by the drain timeout")
    cl.expect_eof()
    check(not os.path.exists(d.sock), "the socket file is left behind")


if __name__ == "__main__":
    dtest.main()
