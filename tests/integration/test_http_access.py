#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Who may use the range endpoint, how much, and what it tells whom
([http] in breachd.conf(5), docs/privacy.md):

  networks:  403 outside allowed_networks (a client from 127.0.0.1 when only
             127.0.0.2 is allowed, and the other way round), nothing asked
             upstream for it;
  rate:      429 with Retry-After past the per-address rate; another
             loopback address (127.0.0.2) is the same client, not a way
             round it;
  logs:      no prefix in the daemon's log at the default settings; one
             line per request with access_log = yes;
  partition: an HTTP client has a cache partition of its own: a range an
             HTTP client fetched is fetched again for a local user's check
             and the other way round, with [cache] partition = uid or none;
             a body prepared for one client never answers another;
  sockets:   a Unix socket listener (mode 0660), a listen changed by a
             reload, listeners gone at exit; a listen that fails stops the
             start; a port already taken is named with EADDRINUSE, and so is
             a taken metrics_listen (logged, the daemon runs on).

Standard library only; the harness is dtest.py.
"""
import hashlib
import os
import random
import signal
import socket
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import httpfx  # noqa: E402
from dtest import can_bind, check, eq, test  # noqa: E402
from httpfx import get  # noqa: E402



@test
def forbidden_outside_allowed_networks(ctx):
    if not can_bind("127.0.0.2"):
        raise dtest.Skip("no 127.0.0.2 on this host")
    m = httpfx.Mirror(ctx.path("mirror"))
    prefix = m.present[0]
    d, port = httpfx.start(ctx, m, http={"allowed_networks": "127.0.0.2/32"})
    status, h, body = get(port, "/range/" + prefix)  # from 127.0.0.1
    eq((status, body), (403, b"Forbidden"))
    status, h, body = get(port, "/range/" + prefix, source="127.0.0.2")
    eq((status, body.decode()), (200, m.body(prefix)), "from 127.0.0.2")
    st = d.stats()
    eq((st["http_forbidden"], st["upstream_fetches"]), (1, 1))
    d.stop_ok()

    # the default: loopback only, so 127.0.0.2 is in; an empty list: nobody
    d, port = httpfx.start(ctx, m, http={"allowed_networks": ""})
    for src in (None, "127.0.0.2"):
        status, h, body = get(port, "/range/" + prefix, source=src)
        eq(status, 403, "empty allowed_networks, from %s" % src)
    eq(httpfx.upstream_fetches(d), 0, "a refused request asks nothing upstream")
    d.stop_ok()


@test
def rate_per_client_address(ctx):
    m = httpfx.Mirror(ctx.path("mirror"))
    prefix = m.present[0]
    d, port = httpfx.start(ctx, m, http={"rate": "1"})
    statuses = []
    retry = None
    for _ in range(50):
        status, h, body = get(port, "/range/" + prefix)
        statuses.append(status)
        if status == 429:
            retry = h.get("retry-after")
            check(body.decode().startswith("Rate limit is exceeded."), body)
    eq(statuses[0], 200, "the first request")
    check(429 in statuses, "50 requests at rate 1: some 429, got %r" % sorted(set(statuses)))
    check(retry is not None and retry.isdigit() and int(retry) >= 1, "Retry-After %r" % retry)
    check(set(statuses) <= {200, 429}, statuses)
    if can_bind("127.0.0.2"):
        status, h, body = get(port, "/range/" + prefix, source="127.0.0.2")
        eq(status, 429, "another loopback address is the same client")
    check(d.stats()["http_rate_limited"] >= 1, "counted")
    d.stop_ok()


@test
def logs_hold_no_prefix(ctx):
    m = httpfx.Mirror(ctx.path("mirror"))
    prefixes = m.present[:5]
    d, port = httpfx.start(ctx, m, daemon={"log_level": "info"})
    for p in prefixes:
        eq(get(port, "/range/" + p, {"Add-Padding": "true"})[0], 200)
    eq(get(port, "/range/ZZZZZ")[0], 400)
    d.stop_ok()
    log = d.log()
    for p in prefixes + ["ZZZZZ"]:
        check(p not in log and p.lower() not in log, "prefix %s in the log:\n%s" % (p, log))
    # access_log = yes: one line per request, prefix included
    d, port = httpfx.start(ctx, m, http={"access_log": "yes"})
    eq(get(port, "/range/" + prefixes[0])[0], 200)
    eq(get(port, "/range/" + prefixes[0], {"If-None-Match": "*"})[0], 304)
    d.stop_ok()
    lines = [ln for ln in d.log().splitlines() if "GET /range/" in ln]
    eq(len(lines), 2, "access log lines")
    check(prefixes[0] in lines[0] and " 200 " in lines[0] and "127.0.0.1" in lines[0], lines[0])
    check(" 304 " in lines[1], lines[1])


def password_in(m, tag):
    """A password whose SHA-1 is in the mirror (put there), with its count."""
    h = hashlib.sha1(tag.encode()).hexdigest().upper()
    m.add_hash(h, 4242)
    return h


@test
def http_clients_have_their_own_partition(ctx):
    m = httpfx.Mirror(ctx.path("mirror"))
    for partition in ("uid", "none"):
        h1 = password_in(m, "first-" + partition)
        h2 = password_in(m, "second-" + partition)
        d, port = httpfx.start(ctx, m, cache={"partition": partition,
                                              "path": ctx.path("cache-" + partition)})
        c = d.client()
        # HTTP first, then a local user: two fetches
        eq(get(port, "/range/" + h1[:5])[0], 200)
        eq(httpfx.upstream_fetches(d), 1)
        eq(c.ask("a PW " + h1), "a PWNED 4242")
        eq(httpfx.upstream_fetches(d), 2, "the user's check did not use HTTP's entry")
        # a local user first, then HTTP: two fetches again
        eq(c.ask("b PW " + h2), "b PWNED 4242")
        eq(get(port, "/range/" + h2[:5])[0], 200)
        eq(httpfx.upstream_fetches(d), 4, "HTTP did not use the user's entry (%s)" % partition)
        # each side's own repeat is a cache hit
        eq(get(port, "/range/" + h1[:5])[0], 200)
        eq(c.ask("c PW " + h2), "c PWNED 4242")
        eq(httpfx.upstream_fetches(d), 4)
        c.close()
        d.stop_ok()


@test
def prepared_bodies_are_per_client(ctx):
    """A body prepared for one client ([http] prepared_size) never answers
    another: 127.0.0.2's first answer of a range 127.0.0.1 has asked twice
    is formatted for it (STATS http_prepared does not move), as fast as
    any first answer; its own second one is prepared."""
    if not can_bind("127.0.0.2"):
        raise dtest.Skip("no 127.0.0.2 on this host")
    m = httpfx.Mirror(ctx.path("mirror"))
    prefix = m.present[0]
    d, port = httpfx.start(ctx, m)
    c = d.client()

    def prepared():
        return int(c.stats()["http_prepared"])

    for src, want in ((None, 0), (None, 1), ("127.0.0.2", 1), ("127.0.0.2", 2), (None, 3)):
        status, h, body = get(port, "/range/" + prefix, source=src)
        eq((status, body.decode()), (200, m.body(prefix)), src)
        eq(prepared(), want, "answers from a prepared body after one from %s" % src)
    c.close()
    d.stop_ok()


@test
def unix_socket_listener(ctx):
    httpfx.require_curl()
    m = httpfx.Mirror(ctx.path("mirror"))
    path = ctx.path("http.sock")
    with open(path, "w"):
        pass  # a regular file in the way: the start fails, the file stays
    conf = ctx.config(http={"listen": path}, passwords={"upstream": m.template()})
    d = ctx.daemon(conf, wait=False)
    rc = d.proc.wait(timeout=30)
    check(rc != 0, "breachd started with a file in the way of its HTTP socket")
    check("exists and is not a socket" in d.log(), d.log())
    os.unlink(path)
    d = ctx.daemon(conf)
    eq(stat.S_IMODE(os.stat(path).st_mode), 0o660)
    prefix = m.present[0]
    out = subprocess.run(["curl", "-sS", "--unix-socket", path, "-H", "Add-Padding: true",
                          "http://breachd/range/" + prefix], capture_output=True, timeout=60)
    eq(out.returncode, 0, out.stderr)
    eq(httpfx.strip_padding(out.stdout.decode()), m.body(prefix))
    d.stop_ok()
    check(not os.path.exists(path), "the socket is removed at exit")


@test
def reload_moves_the_listener(ctx):
    m = httpfx.Mirror(ctx.path("mirror"))
    prefix = m.present[0]
    d, port = httpfx.start(ctx, m)
    eq(get(port, "/range/" + prefix)[0], 200)
    port2 = dtest.free_port()
    ctx.config(http={"listen": "127.0.0.1:%d" % port2, "rate": "0"},
               passwords={"upstream": m.template()})
    c = d.client()
    eq(c.ask("r RELOAD", timeout=30), "r RELOADED")
    c.close()
    eq(get(port2, "/range/" + prefix)[0], 200)
    try:
        get(port, "/range/" + prefix)
        raise AssertionError("the old port still answers")
    except ConnectionRefusedError:
        pass
    # listen emptied: off
    ctx.config(http={"listen": ""}, passwords={"upstream": m.template()})
    d.send_signal(signal.SIGHUP)
    dtest.wait_for(lambda: d.stats()["reloads"] == 2, what="the second reload")
    try:
        get(port2, "/range/" + prefix)
        raise AssertionError("listen is empty, yet the port answers")
    except ConnectionRefusedError:
        pass
    d.stop_ok()


@test
def upstream_down_is_an_error_not_an_empty_range(ctx):
    m = httpfx.Mirror(ctx.path("mirror"))
    rng = random.Random(9)
    absent = httpfx.absent_prefix(m, rng)
    d, port = httpfx.start(ctx, m, passwords={"upstream": "http://127.0.0.1:%d/range/{prefix}"
                                                           % dtest.free_port()})
    status, h, body = get(port, "/range/" + absent, {"Add-Padding": "true"})
    check(status in (502, 503, 504), "status %d" % status)
    eq(h["cache-control"], "no-store")
    check(b":" not in body, "no range lines in an error: %r" % body)
    d.stop_ok()


def send_get(port, prefix):
    """A raw GET on a connection of its own, left open."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(("GET /range/%s HTTP/1.1\r\nHost: t\r\nAdd-Padding: true\r\n\r\n"
               % prefix).encode())
    return s


def read_all(s):
    data = b""
    while True:
        try:
            chunk = s.recv(1 << 20)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
        if b"\r\n\r\n" in data:
            head, _, body = data.partition(b"\r\n\r\n")
            n = [int(ln.split(b":")[1]) for ln in head.split(b"\r\n")
                 if ln.lower().startswith(b"content-length:")]
            if n and len(body) >= n[0]:
                break
    return data


@test
def client_gone_before_the_answer(ctx):
    """The client closes while its range is being fetched: the answer goes
    nowhere, the daemon goes on (and exits clean: sanitizer builds)."""
    m = httpfx.Mirror(ctx.path("mirror"))
    gm = httpfx.GatedMirror(m)
    try:
        d, port = httpfx.start(ctx, m, passwords={"upstream": gm.template()})
        prefix = m.present[0]
        gone = send_get(port, prefix)
        dtest.wait_for(lambda: gm.asked() == 1, what="the upstream request")
        gone.close()
        waiting = send_get(port, prefix)  # joins the same fetch
        gm.release()
        data = read_all(waiting)
        waiting.close()
        check(data.startswith(b"HTTP/1.1 200 "), data[:100])
        eq(httpfx.strip_padding(data.partition(b"\r\n\r\n")[2].decode()), m.body(prefix))
        eq(gm.asked(), 1)
        d.stop_ok()
    finally:
        gm.close()


@test
def listener_moved_with_requests_waiting(ctx):
    m = httpfx.Mirror(ctx.path("mirror"))
    gm = httpfx.GatedMirror(m)
    try:
        d, port = httpfx.start(ctx, m, passwords={"upstream": gm.template()})
        prefix = m.present[1]
        waiting = send_get(port, prefix)
        dtest.wait_for(lambda: gm.asked() == 1, what="the upstream request")
        port2 = dtest.free_port()
        ctx.config(http={"listen": "127.0.0.1:%d" % port2, "rate": "0"},
                   passwords={"upstream": gm.template()})
        c = d.client()
        eq(c.ask("r RELOAD", timeout=30), "r RELOADED")
        c.close()
        eq(read_all(waiting), b"", "the old listener's connection is closed, unanswered")
        waiting.close()
        gm.release()
        eq(get(port2, "/range/" + prefix)[0], 200)
        d.stop_ok()
    finally:
        gm.close()


@test
def stop_waits_for_http_requests(ctx):
    m = httpfx.Mirror(ctx.path("mirror"))
    gm = httpfx.GatedMirror(m)
    try:
        d, port = httpfx.start(ctx, m, passwords={"upstream": gm.template()})
        prefix = m.present[2]
        idle = d.client(timeout=30)
        waiting = send_get(port, prefix)
        dtest.wait_for(lambda: gm.asked() == 1, what="the upstream request")
        d.send_signal(signal.SIGTERM)
        # draining (the socket says so), the waiting HTTP request not dropped
        dtest.wait_for(lambda: idle.ask("p PING").startswith("p ERR shutting-down"),
                       what="the drain to start")
        status, h, body = get(port, "/range/" + m.present[3])
        eq((status, body), (503, b"breachd is stopping"), "a new HTTP request while draining")
        check(d.proc.poll() is None, "breachd exited with an HTTP request waiting")
        gm.release()
        data = read_all(waiting)
        waiting.close()
        check(data.startswith(b"HTTP/1.1 200 "), data[:100])
        check(b"\r\nConnection: close\r\n" in data.partition(b"\r\n\r\n")[0], data[:400])
        eq(d.proc.wait(timeout=30), 0)
        idle.close()
    finally:
        gm.close()


@test
def ipv6_listener(ctx):
    if not socket.has_ipv6 or not can_bind("::1", socket.AF_INET6):
        raise dtest.Skip("no ::1 on this host")
    m = httpfx.Mirror(ctx.path("mirror"))
    port = dtest.free_port()
    d, _ = httpfx.start(ctx, m, http={"listen": "[::1]:%d" % port})
    status, h, body = get(port, "/range/" + m.present[0], host="::1")
    eq((status, body.decode()), (200, m.body(m.present[0])), "over ::1 (allowed by default)")
    d.stop_ok()


@test
def a_breachd_as_another_breachds_upstream(ctx):
    """docs/fleet.md section 6: a host's upstream is the publisher's range
    endpoint. The host asks with Add-Padding: true, gets padded answers and
    ignores the padding; NT hashes through ?mode=ntlm."""
    m = httpfx.Mirror(ctx.path("mirror"))
    nm = httpfx.Mirror(ctx.path("mirror-ntlm"), "ntlm")
    pw = password_in(m, "publisher-check")
    nt = "8846F7EAEE8FB117AD06BDD830B7586C"  # the NT hash of "password"
    nm.add_hash(nt, 777)
    pub, port = httpfx.start(ctx, m, ntlm_mirror=nm, daemon={"socket": ctx.path("pub.sock")},
                             cache={"path": ctx.path("pub-cache")})
    base = "http://127.0.0.1:%d/range/{prefix}" % port
    conf = ctx.config("host.conf", socket_path=ctx.path("host.sock"),
                      passwords={"upstream": base}, ntlm={"upstream": base + "?mode=ntlm"},
                      cache={"path": ctx.path("host-cache")})
    host = ctx.daemon(conf)
    c = host.client()
    eq(c.ask("a PW " + pw), "a PWNED 4242")
    eq(c.ask("b PW " + m.present[0] + "0" * 35), "b CLEAN")
    eq(c.ask("n NT " + nt), "n PWNED 777")
    c.close()
    st = pub.stats()
    eq(st["http_ok"], 3, "the host's three ranges came from the publisher's endpoint")
    host.stop_ok()
    pub.stop_ok()


@test
def taken_ports_are_named(ctx):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        m = httpfx.Mirror(ctx.path("mirror"))
        conf = ctx.config(http={"listen": "127.0.0.1:%d" % port},
                          passwords={"upstream": m.template()})
        d = ctx.daemon(conf, wait=False)
        rc = d.proc.wait(timeout=30)
        check(rc != 0, "breachd started on a taken [http] port")
        want = "[http] listen 127.0.0.1:%d: cannot listen: Address already in use (EADDRINUSE)" % port
        check(want in d.log(), d.log())
        # metrics_listen taken: the daemon runs on, and says why there are no metrics
        conf = ctx.config(daemon={"metrics_listen": "127.0.0.1:%d" % port},
                          passwords={"upstream": m.template()})
        d = ctx.daemon(conf)
        eq(d.client().ask("1 PING"), "1 PONG")
        want = "metrics_listen 127.0.0.1:%d: cannot listen: Address already in use (EADDRINUSE)" % port
        check(want in d.log(), d.log())
        d.stop_ok()
    finally:
        taken.close()



if __name__ == "__main__":
    dtest.main()
