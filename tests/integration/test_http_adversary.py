#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Adversary tests of the range endpoint ([http] in breachd.conf(5),
docs/privacy.md "An HTTP client of the range endpoint"):

  partition:  a second client address asks the prefixes a first one asked:
              each is fetched from the upstream again (STATS
              upstream_fetches), not served from the first client's entry;
              a client keeps its partition across a restart;
  trickle:    hundreds of connections from one address, each trickling a
              header a byte at a time under a lowered RLIMIT_NOFILE: the
              Unix socket still answers, the surplus connections are closed
              at once and the held ones at the header deadline (a
              well-behaved loopback HTTP client, the same client for the
              caps, is answered then), which also bounds a trickled body and
              a kept-alive connection's wait for its next request;
  starve:     a flood of /range misses held by the upstream: the socket's
              checks still get their answers (the endpoint's own lane);
  framing:    duplicate Content-Length, "+0", a blank before the colon and a
              NUL in a header value get 400 and a closed connection; the
              answer to a CONNECT is framed (Content-Length) and ends its
              connection, so a pipelined answer is never glued to it.

Standard library only; the harness is dtest.py.
"""
import os
import random
import resource
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import httpfx  # noqa: E402
from dtest import can_bind, check, eq, test  # noqa: E402
from httpfx import get  # noqa: E402



@test
def cache_partition_per_client(ctx):
    if not can_bind("127.0.0.2"):
        raise dtest.Skip("no 127.0.0.2 on this host")
    m = httpfx.Mirror(ctx.path("mirror"), n_prefixes=10)
    d, port = httpfx.start(ctx, m)
    for p in m.present:  # client A
        eq(get(port, "/range/" + p)[0], 200)
    eq(httpfx.upstream_fetches(d), 10)
    # client B probes A's prefixes: each must be fetched again, i.e. B's
    # answer did not come from A's entry (which a timing would tell)
    for p in m.present:
        status, _, body = get(port, "/range/" + p, source="127.0.0.2")
        eq((status, body.decode()), (200, m.body(p)))
    eq(httpfx.upstream_fetches(d), 20, "client B's requests served from A's entries")
    # each client's own repeat is still a cache hit
    for src in (None, "127.0.0.2"):
        for p in m.present:
            eq(get(port, "/range/" + p, source=src)[0], 200)
    eq(httpfx.upstream_fetches(d), 20)
    d.stop_ok()


@test
def partition_kept_across_restarts(ctx):
    """A client's partition is keyed with the cache's secret: after a
    restart its entries answer it again, and still nobody else."""
    if not can_bind("127.0.0.2"):
        raise dtest.Skip("no 127.0.0.2 on this host")
    m = httpfx.Mirror(ctx.path("mirror"), n_prefixes=3)
    cache = {"path": ctx.path("cache")}
    d, port = httpfx.start(ctx, m, cache=cache)
    for p in m.present:
        eq(get(port, "/range/" + p)[0], 200)
    eq(httpfx.upstream_fetches(d), 3)
    d.stop_ok()
    d, port = httpfx.start(ctx, m, cache=cache)
    for p in m.present:
        eq(get(port, "/range/" + p)[0], 200)
    eq(httpfx.upstream_fetches(d), 0, "the client's entries after a restart")
    for p in m.present:
        eq(get(port, "/range/" + p, source="127.0.0.2")[0], 200)
    eq(httpfx.upstream_fetches(d), 3, "another client after a restart")
    d.stop_ok()


# ---- many trickling connections ----------------------------------------------------

class Tricklers:
    """n connections from source, each sending a request head a byte at a
    time (every 0.3 s), forever; a thread keeps them trickling."""

    def __init__(self, port, source, n):
        self.socks = []
        self.closed = set()
        self.stop = threading.Event()
        for _ in range(n):
            s = socket.socket()
            s.bind((source, 0))
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            self.socks.append(s)
        time.sleep(0.2)
        for s in self.socks:
            try:
                s.send(b"GET /range/ABCDE HTTP/1.1\r\nHost: t\r\nX-Trickle: ")
            except OSError:
                pass
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.wait(0.3):
            for i, s in enumerate(self.socks):
                if i in self.closed:
                    continue
                try:
                    if s.recv(1) == b"":
                        self.closed.add(i)
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    self.closed.add(i)
                    continue
                try:
                    s.send(b"a")
                except BlockingIOError:
                    pass
                except OSError:
                    self.closed.add(i)

    def open_count(self):
        return len(self.socks) - len(self.closed)

    def close(self):
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            s.close()


@test
def trickling_connections(ctx):
    if not can_bind("127.0.0.2"):
        raise dtest.Skip("no 127.0.0.2 on this host")
    m = httpfx.Mirror(ctx.path("mirror"), n_prefixes=4)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = 200
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))  # breachd inherits it
    try:
        # the defaults of the connection caps and the header deadline
        d, port = httpfx.start(ctx, m, limits={"idle_timeout": "5s"})
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    n = 300
    tr = Tricklers(port, "127.0.0.2", n)
    try:
        # the surplus over the per-client cap is closed at once
        dtest.wait_for(lambda: tr.open_count() <= 64, timeout=10 * dtest.SLOW,
                       what="connections past the per-client cap closed (%d open)"
                       % tr.open_count())
        held = tr.open_count()
        # the Unix socket PAM uses still answers
        c = d.client(timeout=10 * dtest.SLOW)
        eq(c.ask("p PING"), "p PONG", "the Unix socket while %d connections trickle" % held)
        c.close()
        # (another loopback address is the same client for the caps: any
        # local user can send from all of 127.0.0.0/8, so a well-behaved
        # HTTP client on loopback waits until the held ones end, below)
        # the held ones end at the header deadline (10 s by default), though
        # each sends a byte far more often than the idle timeout
        dtest.wait_for(lambda: tr.open_count() == 0, timeout=30 * dtest.SLOW,
                       what="trickling connections closed at the header deadline "
                       "(%d open)" % tr.open_count())
        st = d.stats()
        print("    %d trickling connections: %d held at most, then closed; "
              "http_connections_refused %s, http_header_timeouts %s"
              % (n, held, st.get("http_connections_refused"), st.get("http_header_timeouts")))
        p = m.present[0]
        status, _, body = get(port, "/range/" + p)
        eq((status, body.decode()), (200, m.body(p)), "a well-behaved client")
        check(st["http_connections_refused"] >= n - 64, "refused %d" % st["http_connections_refused"])
        check(st["http_header_timeouts"] >= 1, "header timeouts %d" % st["http_header_timeouts"])
    finally:
        tr.close()
    d.stop_ok()


@test
def total_cap_and_descriptor_reserve(ctx):
    """Small caps from the config: past [http] max_connections a connection
    is closed at once, whatever its address; the Unix socket answers."""
    m = httpfx.Mirror(ctx.path("mirror"), n_prefixes=4)
    d, port = httpfx.start(ctx, m, http={"max_connections": "20",
                                         "max_connections_per_client": "1000",
                                         "header_timeout": "30s"})
    tr = Tricklers(port, "127.0.0.1", 60)
    try:
        dtest.wait_for(lambda: tr.open_count() <= 20, timeout=10 * dtest.SLOW,
                       what="connections past max_connections closed (%d open)"
                       % tr.open_count())
        c = d.client(timeout=10 * dtest.SLOW)
        eq(c.ask("p PING"), "p PONG")
        c.close()
        eq(d.stats()["http_connections_refused"], 40)
    finally:
        tr.close()
    # the cap frees with the connections
    dtest.wait_for(lambda: get(port, "/range/" + m.present[0])[0] == 200,
                   timeout=10 * dtest.SLOW, what="an answer once the tricklers left")
    d.stop_ok()


def closed_within(s, seconds, trickle=None):
    """Whether the server closes s within seconds, sending trickle one
    byte every 0.2 s meanwhile (when given)."""
    s.settimeout(0.2)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if s.recv(65536) == b"":
                return True
        except socket.timeout:
            pass
        except ConnectionResetError:
            return True
        if trickle:
            try:
                s.send(trickle)
            except OSError:
                return True
    return False


@test
def deadline_covers_body_and_idle_keepalive(ctx):
    """header_timeout bounds a whole request, a body trickled after a
    quick head included, and the wait for a kept-alive connection's next
    request; idle_timeout (per read) is far longer here."""
    m = httpfx.Mirror(ctx.path("mirror"), n_prefixes=2)
    d, port = httpfx.start(ctx, m, http={"header_timeout": "1s"},
                           limits={"idle_timeout": "60s"})
    p = m.present[0]
    body = socket.create_connection(("127.0.0.1", port), timeout=10)
    body.sendall(b"POST /range/%s HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n"
                 % p.encode())
    check(closed_within(body, 20 * dtest.SLOW, trickle=b"x"), "a trickled body stays open")
    body.close()
    idle = socket.create_connection(("127.0.0.1", port), timeout=10)
    idle.sendall(b"GET /range/%s HTTP/1.1\r\nHost: t\r\n\r\n" % p.encode())
    got = b""
    while b"\r\n\r\n" not in got:
        got += idle.recv(65536)
    check(got.startswith(b"HTTP/1.1 200 "), got[:80])
    check(closed_within(idle, 20 * dtest.SLOW), "an idle kept-alive connection stays open")
    idle.close()
    eq(d.stats()["http_header_timeouts"], 2)
    d.stop_ok()


# ---- framing --------------------------------------------------------------------

def exchange(port, data, timeout=10):
    """Send data on one connection, read until the server closes it (or
    timeout s pass: then None marks the connection still open)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout * dtest.SLOW)
    try:
        s.sendall(data)
        got = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                return got, None
            except ConnectionResetError:
                return got, "reset"
            if not chunk:
                return got, "closed"
            got += chunk
    finally:
        s.close()


def one_response(data):
    """(status, headers lower-cased, body, rest) of the first response,
    framed by its Content-Length (AssertionError without one)."""
    head, sep, rest = data.partition(b"\r\n\r\n")
    check(sep, "no complete response: %r" % data[:200])
    lines = head.decode(errors="replace").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        headers.setdefault(k.strip().lower(), []).append(v.strip())
    check("content-length" in headers, "answer without Content-Length: %r" % head)
    n = int(headers["content-length"][0])
    return status, headers, rest[:n], rest[n:]


@test
def malformed_headers_get_400(ctx):
    m = httpfx.Mirror(ctx.path("mirror"), n_prefixes=2)
    d, port = httpfx.start(ctx, m)
    p = m.present[0]
    good = "GET /range/%s HTTP/1.1\r\nHost: t\r\n" % p
    eq(one_response(exchange(port, (good + "Connection: close\r\n\r\n").encode())[0])[0], 200)
    cases = {
        "duplicate Content-Length": "Content-Length: 0\r\nContent-Length: 0\r\n",
        "differing Content-Length": "Content-Length: 0\r\nContent-Length: 5\r\n",
        "Content-Length +0": "Content-Length: +0\r\n",
        "Content-Length -0": "Content-Length: -0\r\n",
        "Content-Length 0x0": "Content-Length: 0x0\r\n",
        "blank before the colon": "Content-Length : 0\r\n",
        "blank before the colon (Host)": "X-Other : 1\r\n",
        "NUL in a header value": "X-Other: a\x00b\r\n",
    }
    # a NUL in a head sent in pieces, after bytes already read
    s = socket.create_connection(("127.0.0.1", port), timeout=10 * dtest.SLOW)
    s.sendall((good + "X-Other: abc").encode())
    time.sleep(0.2)
    s.sendall(b"d\x00e\r\n\r\n")
    got = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    s.close()
    eq(one_response(got)[0], 400, "a NUL in the second piece of a head")
    for what, extra in cases.items():
        # pipelined after it: a request that must not be answered
        data = (good + extra + "\r\n" + good + "\r\n").encode()
        got, end = exchange(port, data)
        status, _, _, rest = one_response(got)
        eq(status, 400, what)
        eq((rest, end), (b"", "closed"), what + ": the connection ends after the 400")
    st = d.stats()
    eq(st["http_ok"], 1)
    d.stop_ok()


@test
def connect_answer_is_framed(ctx):
    m = httpfx.Mirror(ctx.path("mirror"), n_prefixes=2)
    d, port = httpfx.start(ctx, m)
    p = m.present[0]
    data = ("CONNECT t:443 HTTP/1.1\r\nHost: t:443\r\n\r\n"
            "GET /range/%s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" % p).encode()
    got, end = exchange(port, data)
    check(end is not None, "the connection stays open after a CONNECT's answer")
    status, h, body, rest = one_response(got)
    check(status >= 400, "CONNECT answered %d" % status)
    # nothing glued to it: either nothing follows (the connection ended) or
    # a complete answer of its own
    if rest:
        check(rest.startswith(b"HTTP/1.1 "), "glued: %r" % rest[:80])
        eq(one_response(rest)[0], 200)
    d.stop_ok()


@test
def socket_checks_under_an_http_flood(ctx):
    """docs/privacy.md "What an HTTP client takes from the socket's users":
    one loopback client, well under its [http] rate, floods /range with 24
    misses at an upstream rate of 1 a second (24 s of work). A password
    check on the Unix socket sent after them is answered from the upstream
    ahead of the flood (the endpoint's lane goes after the interactive one,
    on its own share of the rate and slots), not behind it, 24 s later,
    after the 2 s a PAM or directory module waits. Asserted by the order in
    which the upstream saw the requests, not by a time."""
    m = httpfx.Mirror(ctx.path("mirror"), n_prefixes=2)
    rng = random.Random(33)
    while True:
        full = "%040X" % rng.getrandbits(160)
        if full[0] != "F":
            break
    m.add_hash(full, 4242)
    flood = ["F%04X" % i for i in range(24)]
    gm = httpfx.GatedMirror(m)
    gm.release()  # answers at once; records the order
    d, port = httpfx.start(ctx, m, http={"rate": "100"},
                           passwords={"upstream": gm.template()},
                           upstream={"rate": "1", "timeout": "60s", "max_inflight": "4"})
    def ask(prefix):
        try:
            get(port, "/range/" + prefix)
        except OSError:
            pass  # the daemon stopped with it pending

    threads = [threading.Thread(target=ask, args=(p,)) for p in flood]
    try:
        for t in threads:
            t.start()
        dtest.wait_for(lambda: d.stats()["http_requests"] >= len(flood), timeout=10 * dtest.SLOW,
                       what="the flood's requests at breachd")
        st = d.stats()
        check(st["upstream_http_in_flight"] <= 2 and st["upstream_http_queued"] >= 1,
              "the http lane: %d running (http_share 50%% of 4), %d waiting"
              % (st["upstream_http_in_flight"], st["upstream_http_queued"]))
        c = d.client(timeout=60)
        eq(c.ask("p PW " + full), "p PWNED 4242")
        c.close()
        with gm.lock:
            seen = list(gm.requests)
        pos = seen.index(full[:5])
        print("    the socket's check reached the upstream %d of %d (flood of %d /range misses)"
              % (pos + 1, len(seen), len(flood)))
        # (before: behind all 24; now ahead of all but those the http lane
        # started before the check came, one a second at most at its share
        # of the rate: a bound that a slow machine does not reach)
        check(pos < len(flood) // 2,
              "the socket's check waited behind %d of the flood's fetches" % pos)
    finally:
        d.stop_ok()
        gm.close()
        for t in threads:
            t.join(5)


if __name__ == "__main__":
    dtest.main()
