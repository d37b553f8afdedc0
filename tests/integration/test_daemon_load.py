#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachd integration tests: load (docs/protocol.md "Limits",
breachd.conf(5) [limits]).

- 10,000 connections opened and held at once ([limits] max_connections
  raised above it, RLIMIT_NOFILE raised to the hard limit for the test and
  breachd), each with one request, every one answered right while all are
  open; the daemon's VmRSS / VmHWM before, at the peak and after are
  printed; once all are closed, its descriptors are back to their count
  before.
- slowloris: 1,000 clients sending request bytes one a second and 10 that
  pipeline PINGs until the daemon stops reading them, none reading a reply,
  while a well-behaved client's PING and PW checks are timed alone and under
  that load (in windows alternating with the slow clients paused) in the
  same run. Asserted: every well-behaved answer right, none
  slower than a bound only a blocked event loop would pass; the p99s and
  their ratio are printed (the 2x claim is tests/bench/bench-slowloris.py's,
  tests/bench/README.md "Load").
- 10,000 clients that pipeline requests, some of them waiting on a slow
  range fetch, and leave before their answers (close, close with SO_LINGER
  0, close with answers unread, shutdown then close, a partial line): the
  daemon then answers right, its descriptors are back to their count and its
  anonymous memory has not grown past a small bound since a warm-up round;
  it exits 0 on SIGTERM (and under ASan, with no leak report).
- more clients than descriptors, on the socket and the range endpoint:
  accepting pauses instead of spinning on EMFILE, and the clients left in
  the backlogs are served once descriptors free.
"""
import os
import random
import re
import resource
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import loadfx  # noqa: E402
from dtest import check, eq, test  # noqa: E402

N_CONNS = 10000


def quiet(d, ctl, conns=1, timeout=30):
    """Wait until the daemon holds conns connections (ctl's own included)
    and no request in flight; returns its STATS."""
    last = {}

    def done():
        last.update(ctl.stats())
        return last["connections"] == conns and last["requests_in_flight"] == 0
    dtest.wait_for(done, timeout=timeout * dtest.SLOW, step=0.1,
                   what="%d connections and nothing in flight (now %s connections, %s in flight)"
                   % (conns, last.get("connections"), last.get("requests_in_flight")))
    return last


@test
def ten_thousand_connections(ctx):
    nofile = loadfx.raise_nofile()
    if nofile < N_CONNS + 200:
        raise dtest.Skip("RLIMIT_NOFILE hard limit %d < %d" % (nofile, N_CONNS + 200))
    c = loadfx.Corpus(ctx)
    conf = ctx.config(daemon={"log_level": "notice"},
                      passwords={"filter": c.filter, "upstream": c.upstream()},
                      upstream={"rate": "1000", "max_inflight": "64", "timeout": "20s"},
                      limits={"max_connections": str(N_CONNS + 100)})
    d = ctx.daemon(conf)
    ctl = d.client(timeout=30)
    quiet(d, ctl)
    fd0 = loadfx.fds(d.pid)
    m0 = loadfx.mem_kib(d.pid)
    rng = random.Random(10)
    present = rng.sample(c.present, 200)  # 200 ranges fetched, each shared by ~12 checks
    reqs, want = [], []
    for i in range(N_CONNS):
        k = i % 4
        if k == 0:
            reqs.append("c%d PING\n" % i)
            want.append("c%d PONG" % i)
        elif k == 1:
            reqs.append("c%d PW %s\n" % (i, c.absent[i % len(c.absent)]))
            want.append("c%d CLEAN" % i)
        elif k == 2:
            h = present[(i // 4) % len(present)]
            reqs.append("c%d PW %s\n" % (i, h.lower() if i % 8 == 2 else h))
            want.append("c%d PWNED %d" % (i, c.counts[h]))
        else:
            reqs.append("c%d VERSION\n" % i)
            want.append(None)
    t0 = time.monotonic()
    socks = loadfx.connect_many(d.sock, N_CONNS, deadline_s=60 * dtest.SLOW)
    t_conn = time.monotonic() - t0
    try:
        st = quiet(d, ctl, conns=N_CONNS + 1)
        eq(st["connections_refused"], 0, "connections_refused")
        loadfx.send_all_nb(list(zip(socks, [r.encode() for r in reqs])))
        got = loadfx.read_lines_nb(socks, [1] * N_CONNS, deadline_s=90 * dtest.SLOW)
        t_all = time.monotonic() - t0
        bad = []
        for i, (g, w) in enumerate(zip(got, want)):
            ok = (len(g) == 1 and (g[0] == w if w else
                                   re.fullmatch(r"c%d VERSION breachd \S+ protocol 1" % i, g[0])))
            if not ok:
                bad.append((i, g, w))
        check(not bad, "%d wrong answers, e.g. %r" % (len(bad), bad[:5]))
        st = ctl.stats()  # still all open
        eq(st["connections"], N_CONNS + 1, "connections while answered")
        m1 = loadfx.mem_kib(d.pid)
        fd1 = loadfx.fds(d.pid)
    finally:
        for s in socks:
            s.close()
    st = quiet(d, ctl)
    fd2 = loadfx.fds(d.pid)
    m2 = loadfx.mem_kib(d.pid)
    print("    %d connections: connected in %.2f s, all answered %.2f s after the first connect "
          "(%d range fetches)" % (N_CONNS, t_conn, t_all, st["upstream_fetches"]))
    print("    " + loadfx.mem_line("before", m0))
    print("    " + loadfx.mem_line("at the peak (%d open)" % N_CONNS, m1))
    print("    " + loadfx.mem_line("after closing all", m2))
    print("    RSS per held connection: %.2f KiB; descriptors before %s, at the peak %s, after %s"
          % ((m1["VmRSS"] - m0["VmRSS"]) / N_CONNS, fd0, fd1, fd2))
    eq(fd1["unix"], fd0["unix"] + N_CONNS, "Unix sockets at the peak")
    # Unix sockets and the rest as before; TCP: libcurl keeps connections to
    # the upstream for reuse, at most [upstream] max_inflight.
    eq((fd2["unix"], fd2["other"]), (fd0["unix"], fd0["other"]),
       "Unix sockets and other descriptors after closing every connection")
    check(fd2["tcp"] <= 64, "%d TCP sockets left" % fd2["tcp"])
    eq(st["internal_errors"], 0, "internal_errors")
    eq(st["pw_unknown"], 0, "pw_unknown")
    eq(ctl.ask("end PING"), "end PONG")
    ctl.close()
    d.stop_ok()


@test
def slowloris(ctx):
    nofile = loadfx.raise_nofile()
    if nofile < 2000:
        raise dtest.Skip("RLIMIT_NOFILE hard limit %d < 2000" % nofile)
    d, fig, loaded = loadfx.slowloris(ctx, n_slow=1000, n_pipe=10, seconds=8.0,
                                      report=lambda t: print("    " + t))
    # No timed assert on the ratio (shared machines); what a blocked loop
    # would break: every answer came (checked by the prober), none took 2 s.
    bound = 2.0 * dtest.SLOW
    check(fig["loaded_max_ms"] < 1e3 * bound, "a well-behaved check waited %.0f ms under "
          "slowloris load" % fig["loaded_max_ms"])
    check(len(loaded) >= 100, "only %d well-behaved checks under load" % len(loaded))
    check(fig["conns_loaded"] >= 1000 + 10 + 1, "only %d connections under load"
          % fig["conns_loaded"])
    # The pipeliners were stopped by max_unread (1M), not read without
    # bound: each got in what fills 1 MiB of unread answers (about as many
    # bytes as its requests) and the socket buffers (a few hundred KiB).
    check(fig["piped_max_kib"] < 4096, "a client that never reads sent %d KiB"
          % fig["piped_max_kib"])
    ctl = d.client()
    st = quiet(d, ctl)
    eq(st["internal_errors"], 0, "internal_errors")
    ctl.close()
    d.stop_ok()


HIT = "00000000000000000000000000000000001"  # in every faultserver range: count 42
N_LEAVERS = 10000
ROUND = 1000


def leave_round(d, first, prefix_of):
    """ROUND clients, numbered from first, each pipelining a PING, two PW
    checks waiting on slow ranges, another PING and half a request, then
    leaving without reading (mostly) by one of five ways."""
    socks = loadfx.connect_many(d.sock, ROUND, deadline_s=60 * dtest.SLOW)
    pay = []
    for j, s in enumerate(socks):
        k = first + j
        pa, pb = prefix_of(k)
        pay.append((s, ("a%d PING\nb%d PW %05X%s\nc%d PW %05XABCDEF0123456789ABCDEF0123456789ABC\n"
                        "d%d PING\ne%d PW 0123" % (k, k, pa, HIT, k, pb, k, k)).encode()))
    loadfx.send_all_nb(pay)
    for j, s in enumerate(socks):
        way = (first + j) % 5
        if way == 1:  # a reset: SO_LINGER 0
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif way == 2:  # answers unread in the socket: the daemon gets ECONNRESET
            s.setblocking(True)
            s.settimeout(10 * dtest.SLOW)
            s.recv(1)
        elif way == 3:  # half-close: the daemon sees EOF with answers owed
            s.shutdown(socket.SHUT_WR)
        elif way == 4:  # leave before the daemon has even read the requests
            pass
        s.close()


@test
def disconnect_mid_pipeline(ctx):
    loadfx.raise_nofile()
    port = ctx.faultserver()
    # The fault server's "limit" mode with "0 0 MS": the ok body after MS
    # milliseconds, for every request (tests/integration/faultserver.c).
    with open(ctx.path("fault", "limit"), "w") as f:
        f.write("0 0 800\n")
    conf = ctx.config(daemon={"log_level": "notice"},
                      passwords={"filter": "",
                                 "upstream": "http://127.0.0.1:%d/limit/{prefix}" % port},
                      upstream={"rate": "1000", "max_inflight": "64", "timeout": "20s"},
                      cache={"partition": "none"},
                      limits={"max_connections": str(ROUND * 4)})
    d = ctx.daemon(conf)
    ctl = d.client(timeout=30)
    rng = random.Random(5)
    # Clients in groups of 100 share their two prefixes: a group is sent in
    # far less than the 0.8 s the fault server takes, so its checks wait on
    # the group's two range fetches while it leaves.
    groups = rng.sample(range(1 << 20), 2 * (N_LEAVERS + 3 * ROUND) // 100 + 2)

    def prefix_of(k):
        return groups[2 * (k // 100)], groups[2 * (k // 100) + 1]

    # Rounds of 1,000, each waited for (its answers all made), so that every
    # round holds the same at its peak; the warm-up rounds bring malloc's
    # arenas and libevent's tables to that size.
    pending_seen = 0
    for r in range(3):
        leave_round(d, r * ROUND, prefix_of)
        pending_seen = max(pending_seen, ctl.stats()["requests_in_flight"])
        st = quiet(d, ctl)
    fd0 = loadfx.fds(d.pid)
    m0 = loadfx.mem_kib(d.pid)
    fetches0 = st["upstream_fetches"]
    t0 = time.monotonic()
    for r in range(N_LEAVERS // ROUND):
        leave_round(d, (3 + r) * ROUND, prefix_of)
        pending_seen = max(pending_seen, ctl.stats()["requests_in_flight"])
        st = quiet(d, ctl)
    took = time.monotonic() - t0
    st = quiet(d, ctl)
    fd1 = loadfx.fds(d.pid)
    m1 = loadfx.mem_kib(d.pid)
    print("    %d clients left mid-pipeline in %.1f s (%d range fetches; up to %d checks "
          "pending at once)" % (N_LEAVERS, took, st["upstream_fetches"] - fetches0, pending_seen))
    print("    " + loadfx.mem_line("after the warm-up (%d clients)" % (3 * ROUND), m0))
    print("    " + loadfx.mem_line("after %d more" % N_LEAVERS, m1))
    print("    descriptors %s -> %s" % (fd0, fd1))
    check(pending_seen > 0, "no check was ever seen pending")
    eq(st["pw_unknown"], 0, "pw_unknown (every range fetch succeeded)")
    eq(st["internal_errors"], 0, "internal_errors")
    eq((fd1["unix"], fd1["other"]), (fd0["unix"], fd0["other"]),
       "Unix sockets and other descriptors")
    # The leak bound: each leaving client had a bd_conn, its events, its
    # buffers and idle timer, and two waiters (about 2 KiB together, 1.97
    # KiB per connection in ten_thousand_connections). Keeping even a tenth
    # of that per client would add 2 MiB over 10,000; what is allowed is
    # 1 MiB of allocator noise. Under ASan (whose quarantine keeps up to
    # 256 MiB of freed blocks poisoned, to catch a use after free) and
    # valgrind the figure means nothing: there LeakSanitizer / memcheck
    # check at exit, and stop_ok() fails on their report.
    bound = 1024
    grew = m1["RssAnon"] - m0["RssAnon"]
    if dtest.is_slow():
        print("    (under a sanitizer or valgrind: growth %d KiB not checked)" % grew)
    else:
        check(grew <= bound, "anonymous memory grew by %d KiB over %d clients leaving "
              "(bound %d KiB)" % (grew, N_LEAVERS, bound))
    # Still answering right.
    cl = d.client(timeout=30)
    pa, pb = rng.sample(range(1 << 20), 2)
    cl.send("x PING\ny PW %05X%s\nz PW %05XABCDEF0123456789ABCDEF0123456789ABD\n" % (pa, HIT, pb))
    eq(sorted(cl.lines(3)), ["x PONG", "y PWNED 42", "z CLEAN"], "answers after the leavers")
    cl.close()
    ctl.close()
    d.stop_ok()


def http_served(s, timeout):
    """Send a range request on the connected TCP socket s; its status line."""
    s.setblocking(True)
    s.settimeout(timeout)
    s.sendall(b"GET /range/ABCDE HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n", 1)[0].decode(errors="replace")


@test
def out_of_descriptors(ctx):
    """More clients than the daemon has descriptors for, on its socket and
    on the range endpoint ([http] listen): accept fails with EMFILE while
    the listening sockets stay readable. The daemon pauses accepting (STATS
    accept_pauses) instead of retrying in a tight loop that fills its log,
    and serves the waiting clients once descriptors free."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = 160
    port = dtest.free_port()
    conf = ctx.config(limits={"max_connections": "1000"},
                      http={"listen": "127.0.0.1:%d" % port})
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))  # breachd inherits it
    try:
        d = ctx.daemon(conf)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    ctl = d.client()
    socks = []
    end = time.monotonic() + 10 * dtest.SLOW
    while len(socks) < limit + 80 and time.monotonic() < end:  # into the backlog
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        if s.connect_ex(d.sock) == 0:
            socks.append(s)
        else:  # EAGAIN: the backlog is full for now
            s.close()
            time.sleep(0.01)
    check(len(socks) > limit, "only %d connections made" % len(socks))
    dtest.wait_for(lambda: "accept" in d.log(), timeout=10 * dtest.SLOW,
                   what="accept to fail on the socket")
    # The range endpoint: its clients wait in the TCP backlog.
    tcp = []
    for i in range(40):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        tcp.append(s)
    dtest.wait_for(lambda: "[http]" in d.log() or "Error from accept" in d.log(),
                   timeout=10 * dtest.SLOW, what="accept to fail on the range endpoint")
    time.sleep(1.0)  # what a spinning accept would fill the log with meanwhile
    st = ctl.stats()
    spins = sum(1 for ln in d.log().splitlines() if "accept" in ln)
    print("    %d clients, open-file limit %d: %d connections held, %s accept pauses, "
          "%d log lines" % (len(socks) + len(tcp), limit, st["connections"],
                            st.get("accept_pauses"), spins))
    check(spins <= 4, "%d accept lines in the log: accept spins" % spins)
    check(st["accept_pauses"] >= 2, "accept_pauses %d" % st["accept_pauses"])
    # Free descriptors: the clients still in the backlogs are served.
    keep = socks[-60:]
    for s in socks[:-60]:
        s.close()
    loadfx.send_all_nb([(s, b"k%d PING\n" % i) for i, s in enumerate(keep)])
    got = loadfx.read_lines_nb(keep, [1] * len(keep), deadline_s=30 * dtest.SLOW)
    eq(got, [["k%d PONG" % i] for i in range(len(keep))], "answers once descriptors freed")
    for s in tcp[-5:]:
        line = http_served(s, 30 * dtest.SLOW)
        check(line.startswith("HTTP/1.1 "), "range endpoint client: %r" % line)
    for s in keep + tcp:
        s.close()
    quiet(d, ctl)
    ctl.close()
    d.stop_ok()


if __name__ == "__main__":
    dtest.main()
