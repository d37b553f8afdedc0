# SPDX-License-Identifier: MIT
"""Adversary tests: may one local user learn what another checked through
breachd's range cache? (breachd.conf(5) [cache] partition, [daemon]
stats_users.)

Two peers of one daemon: uid A (this process, root) and uid B (65534: a
socket connected by a child that dropped to that uid and handed the
descriptor back, so SO_PEERCRED says 65534). The upstream is a small HTTP
server on 127.0.0.1 that answers every range after a delay, so that a cache
miss costs a measurable time and a hit does not.

  timing:     B's answer time for a prefix A has just checked (primed) and
              for one nobody checked (unprimed), over 24 trials each,
              interleaved; the primed median must not be below half the
              unprimed one (a shared cache makes it ~100x smaller). The
              answers are the same.
  coalescing: B's lookup while A's fetch of the same prefix is pending
              does not join it: the upstream sees two requests, and B's
              answer does not come with A's.
  stats:      STATS from B is ERR forbidden; with stats_users = 65534 it
              is answered.
  metrics:    the Prometheus text is aggregate counters only: one
              unlabelled number per line, no prefix of a checked hash.
  eviction:   in a small cache (1 MiB, ranges of ~17 KB), B checks 60
              prefixes after A checked 8: none of A's ranges is evicted
              (A's repeats go to the upstream no more), since B's entries
              stay within [cache] partition_share and B evicts its own.

Root only (the second uid); skips otherwise. Standard library only; the
harness is dtest.py (temp dirs, 127.0.0.1 only, every process stopped).
"""
import hashlib
import http.server
import os
import re
import socket
import statistics
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, test  # noqa: E402

UID_B = 65534
DELAY_S = 0.03  # per range request


class SlowMirror:
    """HIBP-style /range/PREFIX on 127.0.0.1: every answer after a delay.
    Knows the hashes given to add() (count 3); logs the prefixes asked."""

    def __init__(self):
        self.entries = {}  # prefix -> [suffix]
        self.requests = []  # prefixes, in arrival order
        self.delay = DELAY_S
        self.filler = 0  # lines of count 1 added to every range (its size)
        self.lock = threading.Lock()
        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                m = re.fullmatch(r"/range/([0-9A-F]{5})", self.path)
                if not m:
                    self.send_error(404)
                    return
                p = m.group(1)
                with mirror.lock:
                    mirror.requests.append(p)
                    delay = mirror.delay
                time.sleep(delay)
                lines = ["%s:3" % s for s in mirror.entries.get(p, [])]
                lines += ["F%034X:1" % i for i in range(mirror.filler)]
                lines.append("0" * 34 + "1:0")  # padding, so the body is never empty
                dtest.send_text(self, ("\r\n".join(lines) + "\r\n").encode())

            def log_message(self, *a):
                pass

        self.srv = dtest.serve_http(Handler)
        self.port = self.srv.server_address[1]

    def add(self, sha1hex):
        self.entries.setdefault(sha1hex[:5], []).append(sha1hex[5:])

    def count(self, prefix):
        with self.lock:
            return self.requests.count(prefix)

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class Setup:
    def __init__(self, ctx, cache=None, **daemon_kv):
        if os.geteuid() != 0:
            raise dtest.Skip("not root: cannot connect as a second uid")
        self.mirror = SlowMirror()
        self.ctx = ctx
        # uid B must reach the socket: traverse the temp dirs, mode 0666.
        os.chmod(dtest.ROOT, 0o711)
        os.chmod(ctx.dir, 0o711)
        daemon = {"socket_mode": "0666"}
        daemon.update(daemon_kv)
        conf = ctx.config(daemon=daemon, cache=cache or {}, passwords={
            "filter": "", "upstream": "http://127.0.0.1:%d/range/{prefix}" % self.mirror.port})
        self.d = ctx.daemon(conf)
        self.used = set()

    def fresh_hash(self, tag):
        """A password SHA-1 in a prefix no earlier call used, known to the mirror."""
        i = 0
        while True:
            h = hashlib.sha1(("%s-%d-%d" % (tag, i, os.getpid())).encode()).hexdigest().upper()
            i += 1
            if h[:5] not in self.used:
                self.used.add(h[:5])
                self.mirror.add(h)
                return h

    def client_a(self):
        return self.d.client(timeout=20)

    def client_b(self):
        return dtest.Client(sock=connect_as(self.d.sock, UID_B, UID_B), timeout=20)

    def close(self):
        self.d.stop_ok()
        self.mirror.close()


def connect_as(path, uid, gid):
    """A socket connected to path by a child running as uid/gid (its
    SO_PEERCRED), passed back to this process over a socketpair."""
    here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:  # child: drop privileges, connect, hand the descriptor over
        code = 1
        try:
            here.close()
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            socket.send_fds(there, [b"s"], [s.fileno()])
            code = 0
        finally:
            os._exit(code)
    there.close()
    _, fds, _, _ = socket.recv_fds(here, 16, 1)
    here.close()
    _, status = os.waitpid(pid, 0)
    check(os.waitstatus_to_exitcode(status) == 0 and fds, "could not connect as uid %d" % uid)
    return socket.socket(fileno=fds[0])


def timed(cl, req):
    t0 = time.perf_counter()
    ans = cl.ask(req)
    return time.perf_counter() - t0, ans


@test
def timing_does_not_tell_what_another_uid_checked(ctx):
    s = Setup(ctx)
    a, b = s.client_a(), s.client_b()
    eq(b.ask("w PING"), "w PONG", "uid B connected")
    primed, unprimed = [], []
    for i in range(24):
        # unprimed: a prefix nobody asked for
        h = s.fresh_hash("u%d" % i)
        t, ans = timed(b, "u%d PW %s" % (i, h))
        eq(ans, "u%d PWNED 3" % i, "B, unprimed")
        unprimed.append(t)
        # primed: A checks it first, then B
        h = s.fresh_hash("p%d" % i)
        eq(a.ask("a%d PW %s" % (i, h)), "a%d PWNED 3" % i, "A")
        t, ans = timed(b, "p%d PW %s" % (i, h))
        eq(ans, "p%d PWNED 3" % i, "B, primed: the same answer")
        primed.append(t)
    mp, mu = statistics.median(primed), statistics.median(unprimed)
    print("    median answer time for uid B: primed %.2f ms, unprimed %.2f ms" % (
        mp * 1e3, mu * 1e3))
    check(mp >= 0.5 * mu, "uid B is answered faster for prefixes uid A just checked "
          "(median %.2f ms vs %.2f ms): the cache is shared" % (mp * 1e3, mu * 1e3))
    # ... while B's own repeat is a cache hit: the cache works.
    t, _ = timed(b, "r PW %s" % h)
    check(t < 0.5 * mu, "B's own repeat took %.2f ms" % (t * 1e3))
    a.close()
    b.close()
    s.close()


@test
def no_coalescing_across_uids(ctx):
    s = Setup(ctx)
    a, b = s.client_a(), s.client_b()
    eq(b.ask("w PING"), "w PONG", "uid B connected")
    s.mirror.delay = 0.5
    h = s.fresh_hash("c")
    a.send("a PW %s\n" % h)
    dtest.wait_for(lambda: s.mirror.count(h[:5]) == 1, what="A's fetch")
    time.sleep(0.25)  # half way through A's fetch
    b.send("b PW %s\n" % h)
    eq(a.line(), "a PWNED 3", "A")
    ta = time.perf_counter()
    eq(b.line(), "b PWNED 3", "B")
    tb = time.perf_counter()
    eq(s.mirror.count(h[:5]), 2, "range requests for the prefix (B must not join A's fetch)")
    check(tb - ta >= 0.1, "B was answered %.0f ms after A: it rode on A's fetch" % (
        (tb - ta) * 1e3))
    a.close()
    b.close()
    s.close()


@test
def eviction_does_not_count_another_uid(ctx):
    s = Setup(ctx, cache={"max_size": "1M"})
    s.mirror.delay = 0
    s.mirror.filler = 800  # about 17 KB stored per range: 1 MiB holds about 45
    a, b = s.client_a(), s.client_b()
    eq(b.ask("w PING"), "w PONG", "uid B connected")
    mine = [s.fresh_hash("a%d" % i) for i in range(8)]
    for i, h in enumerate(mine):
        eq(a.ask("a%d PW %s" % (i, h)), "a%d PWNED 3" % i, "A")
    for i in range(60):
        h = s.fresh_hash("b%d" % i)
        eq(b.ask("b%d PW %s" % (i, h)), "b%d PWNED 3" % i, "B")
    for i, h in enumerate(mine):
        eq(a.ask("r%d PW %s" % (i, h)), "r%d PWNED 3" % i, "A again")
    refetched = [h[:5] for h in mine if s.mirror.count(h[:5]) > 1]
    st = a.stats()
    print("    B's 60 ranges: %d evicted in all, %d of A's 8 refetched" % (
        st["cache_evicted"], len(refetched)))
    check(st["cache_evicted"] > 0, "nothing was evicted: the test did not fill the cache")
    eq(refetched, [], "A's ranges evicted by B's checks")
    a.close()
    b.close()
    s.close()


@test
def stats_forbidden_for_other_users(ctx):
    s = Setup(ctx)
    b = s.client_b()
    ans = b.ask("s STATS")
    check(re.fullmatch(r"s ERR forbidden .+", ans), "STATS from uid %d: %r" % (UID_B, ans))
    eq(b.ask("p PING"), "p PONG", "the connection stays usable")
    b.close()
    a = s.client_a()  # root: in admin_users
    check(a.stats()["errors_forbidden"] >= 1, "errors_forbidden counted")
    a.close()
    s.close()


@test
def stats_users_may_read_stats(ctx):
    s = Setup(ctx, stats_users=str(UID_B))
    b = s.client_b()
    ans = b.ask("s STATS")
    check(ans.startswith("s STATS "), "STATS from a stats user: %r" % ans)
    ans = b.ask("r RELOAD")
    check(re.fullmatch(r"r ERR forbidden .+", ans), "RELOAD from a stats user: %r" % ans)
    b.close()
    s.close()


@test
def metrics_are_aggregate(ctx):
    if os.geteuid() != 0:
        raise dtest.Skip("not root")
    port = dtest.free_port()
    s = Setup(ctx, metrics_listen="127.0.0.1:%d" % port)

    def scrape():
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read()
        lines = [ln for ln in text.decode().split("\n") if ln and not ln.startswith("# ")]
        check(len(lines) > 20, "metrics: %r" % text[:200])
        for ln in lines:
            check(re.fullmatch(r"breachd_[a-z0-9_]+ [0-9]+(\.[0-9]+)?", ln),
                  "a metrics line that is not one aggregate number: %r" % ln)
        return {ln.split(" ")[0] for ln in lines}

    before = scrape()
    a = s.client_a()
    hashes = [s.fresh_hash("m%d" % i) for i in range(5)]
    for i, h in enumerate(hashes):
        eq(a.ask("m%d PW %s" % (i, h)), "m%d PWNED 3" % i, "lookup")
    a.close()
    # The same series after the lookups: none named after what was asked.
    eq(scrape(), before, "metric names after lookups")
    s.close()


if __name__ == "__main__":
    dtest.main()
