#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The upstream fault matrix, end to end through a real breachd (tests/README.md
"Fault matrix"): one table row per way the range upstream can fail (a name
that does not resolve, a refused connection, TLS certificates that are
self-signed, for another host or expired, redirects, a storm of 502s, an
upstream flapping up and down under load, upstreams that accept and never
answer, a DNS server that never answers, SIGTERM while the upstream hangs).
Each row runs its own breachd over the same filter, with [passwords]
upstream (and [ntlm] upstream in the DNS and TLS rows) aimed at the faulty
upstream, and checks that every PW check whose filter answer is "maybe"
(and every NT check: no NT filter) is answered correctly or UNKNOWN with the reason
docs/upstream.md and breachd.conf(5) give, that nothing was cached
(STATS cache_entries, and after the fault clears the same checks are
fetched again from the real mirror and answered correctly), that the daemon
logs no prefix or hash, still answers PING and a fresh check, and exits 0 on
SIGTERM (under ASan: no leak). The rows that hang also count the daemon's
connections to the upstream and its descriptors.

Rows run in parallel threads, four at a time (the 502 storm and the
flapping wait out the circuit breaker's cool-down, [upstream]
breaker_cooldown, 2 s here instead of the default 30 s); the fixtures are upfaultfx.py: a filter
over a known universe, an nginx mirror (plain and TLS), the test CA, a DNS
server on a loopback address. Nothing leaves the host: the upstreams are on 127.0.0.1,
and the rows with a host name run breachd in a private mount namespace
whose resolver asks only that DNS server. BREACHD_FAULT_ROWS=a,b runs only
the rows whose names contain a or b.
"""
import os
import re
import signal
import socket
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, test, wait_for  # noqa: E402
import upfaultfx as fx  # noqa: E402
from upfaultfx import ask_all, expect, hashes_of, tally  # noqa: E402

S = {}  # shared by the rows: "universe", "certs", "mirror"
UNAVAILABLE, ERROR, TIMEOUT, CIRCUIT = ("UNKNOWN upstream-unavailable", "UNKNOWN upstream-error",
                                        "UNKNOWN timeout", "UNKNOWN circuit-open")


class Row:
    """One fault: how to make it (setup(rx) -> (upstream URL template, clear()
    that ends the fault, fetched(prefixes) -> the prefixes the real upstream
    was asked for, the upstream's port, (pid, port) of a server whose side of
    the connections is counted or None)), the answers allowed while it lasts,
    whether a failed range query is retried (None: not checked), [upstream]
    keys, whether the row hangs (then its connections are counted), how many
    prefixes it asks; run: a row of its own kind instead of the standard one."""

    def __init__(self, name, fault, setup=None, answers=(), retried=None, keys=None,
                 hangs=False, prefixes=3, run=None, downs=(), breaker_closed=False, nt=False):
        self.name, self.fault, self.setup, self.answers = name, fault, setup, set(answers)
        self.retried, self.keys, self.hangs, self.n, self.run = retried, keys or {}, hangs, \
            prefixes, run
        self.downs, self.breaker_closed = downs, breaker_closed  # flapping rows
        self.nt = nt  # NT checks too, [ntlm] upstream at /ntlm/ of the same server


class Rx:
    """One row's run: its context, its breachd, what it found."""

    def __init__(self, row, ctx):
        self.row, self.ctx, self.d, self.notes = row, ctx, None, []
        self.clock = None  # a dtest.Clock: breachd-testclock, cool-down 5 minutes
        self.fault_answers, self.recovered = "", ""
        self.seen = []  # every prefix and hash asked, for the log check

    def conf(self, upstream, keys=None):
        cooldown = "5m" if self.clock else "%ds" % (2 * dtest.SLOW)
        up = {"ca_file": S["certs"].ca, "breaker_cooldown": cooldown}
        up.update(self.row.keys)
        up.update(keys or {})
        cache = {"path": self.ctx.path("cache"), "max_size": "16M"}
        cache.update(up.pop("cache", {}))
        nt = upstream.replace("/range/", "/ntlm/") if self.row.nt else ""
        return self.ctx.config(passwords={"filter": S["universe"].filter, "upstream": upstream},
                               ntlm={"upstream": nt}, upstream=up, cache=cache,
                               limits={"drain_timeout": "1s"})

    def start(self, upstream, prefix=None):
        conf = self.conf(upstream)
        self.d = fx.PrefixedDaemon(self.ctx, conf, prefix) if prefix else \
            self.ctx.daemon(conf, clock=self.clock)
        return self.d

    def reload(self, upstream):
        """The operator's fix: breachd.conf aimed at the real mirror, RELOAD."""
        self.conf(upstream)
        cl = self.d.client(timeout=60)
        try:
            eq(cl.ask("r RELOAD", timeout=60 * dtest.SLOW), "r RELOADED", "RELOAD")
        finally:
            cl.close()

    def ask(self, hashes, conns=1):
        self.seen += hashes
        return ask_all(self.d, hashes, conns)

    def finish(self):
        """PING, a fresh check, no internal error, nothing private logged,
        exit 0 on SIGTERM."""
        cl = self.d.client()
        eq(cl.ask("p PING"), "p PONG", "PING after the fault")
        cl.close()
        h = fx.hashes_of(S["universe"].take(1))
        all_right(h, self.ask(h), "to a fresh check after the fault")
        eq(self.d.stats()["internal_errors"], 0, "internal_errors")
        self.d.stop_ok()
        log = "".join(d.log() for d in self.ctx.daemons)
        for h in set(self.seen):
            check(h[5:] not in log, "the log names a hash of %s" % h[:5])
            # a prefix of digits only might be part of a number (a pid, a time)
            check(h[:5].isdigit() or h[:5] not in log, "the log names prefix %s" % h[:5])


# ---- the row kinds -------------------------------------------------------------------------

def check_fault_answers(rx, hashes, answers):
    allowed = rx.row.answers
    for h, a in zip(hashes, answers):
        check(a in allowed, "%s: %s answered %r, want one of %s" % (rx.row.name, h[:5], a,
                                                                     sorted(allowed)))
    rx.fault_answers = tally(answers)


def check_nothing_cached(rx, st0, st1, hashes):
    n_nt = sum(1 for h in hashes if len(h) == 32)
    eq(st1["pw_unknown"] - st0["pw_unknown"], len(hashes) - n_nt, "pw_unknown")
    eq(st1["nt_unknown"] - st0["nt_unknown"], n_nt, "nt_unknown")
    eq(st1["cache_entries"], 0, "cache_entries during the fault")
    eq(st1["internal_errors"], 0, "internal_errors")
    retries = st1["upstream_retries"] - st0["upstream_retries"]
    if rx.row.retried is True:
        check(retries > 0, "a failed range query was not retried")
    elif rx.row.retried is False:
        eq(retries, 0, "upstream_retries (a failure that retrying cannot mend)")


def check_recovered(rx, hashes, fetched):
    """After the fault: every answer right, every prefix fetched anew
    (fetched(prefixes) -> the prefixes the real upstream was asked for)."""
    answers = rx.ask(hashes, conns=1 + len(hashes) // 200)
    all_right(hashes, answers, "after the fault cleared")
    prefixes = sorted({h[:5] for h in hashes})
    # The upstream logs a request after it has sent the answer, so its last
    # line may come a moment after breachd answered from it.
    try:
        wait_for(lambda: sorted(set(fetched(prefixes))) == prefixes, 5, "the upstream's log")
    except AssertionError:
        pass  # the eq below says what is missing
    eq(sorted(set(fetched(prefixes))), prefixes, "prefixes fetched after the fault")
    rx.recovered = tally(answers)


def all_right(hashes, answers, when):
    wrong = ["%s: %r, want %r" % (h[:5], a, expect(h)) for h, a in zip(hashes, answers)
             if a != expect(h)]
    check(not wrong, "%d wrong answers %s, e.g. %s" % (len(wrong), when, "; ".join(wrong[:4])))
    return True


def ask_while_hanging(rx, hashes, port, server=None):
    """Ask while the upstream hangs: the daemon's connections to port are
    seen open, and all closed once the checks have their answers (and the
    server's, given (pid, port), too); its descriptors go back to where they
    were."""
    d = rx.d
    base_fds = wait_for(lambda: fx.settled_fds(d.pid), 10, "breachd's descriptors to settle")
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("a", rx.ask(hashes)))
    t.start()
    seen = wait_for(lambda: fx.tcp_conns(d.pid, port), 20 * dtest.SLOW,
                    "connections to the upstream")
    t.join()
    check("a" in out, "the checks got no answers")
    wait_for(lambda: fx.tcp_conns(d.pid, port) == 0, 10 * dtest.SLOW, "connections closed")
    if server:
        wait_for(lambda: fx.tcp_conns(server[0], server[1], local=True) == 0, 10 * dtest.SLOW,
                 "the upstream's side of the connections closed")
    wait_for(lambda: fx.fd_count(d.pid) <= base_fds, 10 * dtest.SLOW, "descriptors released")
    rx.notes.append("%d upstream connections open while hanging, 0 after; fds %d -> %d"
                    % (seen, base_fds, fx.fd_count(d.pid)))
    return out["a"]


def run_standard(rx):
    """Make the fault, ask, check; clear it, ask again."""
    row, U = rx.row, S["universe"]
    upstream, clear, fetched, port, server = row.setup(rx)
    d = rx.start(upstream)
    prefixes = U.take(row.n)
    hashes = hashes_of(prefixes)
    fp = U.take_fp()
    if fp:
        hashes.append(fp)
    if row.nt:
        hashes += fx.nt_hashes_of(U.take(1))
    st0 = d.stats()
    answers = ask_while_hanging(rx, hashes, port, server) if row.hangs else rx.ask(hashes)
    check_fault_answers(rx, hashes, answers)
    check_nothing_cached(rx, st0, d.stats(), hashes)
    eq(S["mirror"].requests_for({h[:5] for h in hashes}), [], "mirror requests during the fault")
    clear()
    check_recovered(rx, hashes, fetched)
    rx.finish()


def mirror_fetched(prefixes):
    return [re.search(r"/(?:range|ntlm)/([0-9A-F]{5}) ", ln).group(1)
            for ln in S["mirror"].requests_for(prefixes)]


def fs_fetched(state):
    return lambda prefixes: [ln.split()[1] for ln in fx.fs_requests(state, "ok", prefixes)]


def setup_refused(rx):
    port, state, proc = rx.ctx.faultserver_proc()
    fx.control(state, "refuse", "")
    wait_for(lambda: not can_connect(port), 10, "the fault server to stop listening")

    def clear():
        fx.control(state, "refuse")
        wait_for(lambda: can_connect(port), 10, "the fault server to listen again")
    return ("http://127.0.0.1:%d/switch/{prefix}" % port, clear, fs_fetched(state), port, None)


def can_connect(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


def setup_tls(leaf):
    def setup(rx):
        m = S["mirror"]
        return (m.url(leaf), lambda: rx.reload(m.url("good")), mirror_fetched, m.port[leaf], None)
    return setup


def setup_redirect(mode):
    def setup(rx):
        port, state, proc = rx.ctx.faultserver_proc()
        m = S["mirror"]
        fx.control(state, "location", m.url("plain"))  # a working mirror

        def clear():
            prefixes = {h[:5] for h in rx.seen}
            eq(len(fx.fs_requests(state, mode, prefixes)), len(prefixes),
               "one %s per prefix" % mode)
            rx.reload(m.url("plain"))
        return ("http://127.0.0.1:%d/%s/{prefix}" % (port, mode), clear, mirror_fetched, port,
                None)
    return setup


def setup_hang(tls):
    def setup(rx):
        port, state, proc = rx.ctx.faultserver_proc()
        fx.control(state, "switch", "hang")
        m = S["mirror"]
        if tls:  # the TLS handshake never ends: the server waits for a request line
            return ("https://127.0.0.1:%d/switch/{prefix}" % port,
                    lambda: rx.reload(m.url("good")), mirror_fetched, port, (proc.pid, port))
        return ("http://127.0.0.1:%d/switch/{prefix}" % port,
                lambda: fx.control(state, "switch", "ok"), fs_fetched(state), port,
                (proc.pid, port))
    return setup


def setup_backlog(rx):
    """A socket that listens and never accepts: the kernel completes the
    handshakes, nobody reads."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    rx.ctx.closers.append(s.close)
    m = S["mirror"]
    return ("http://127.0.0.1:%d/range/{prefix}" % s.getsockname()[1],
            lambda: rx.reload(m.url("plain")), mirror_fetched, s.getsockname()[1], None)


# ---- the rows of a kind of their own -----------------------------------------------------------

def run_dns(rx):
    """The mirror's host name does not resolve: the DNS server answers
    SERVFAIL, then NXDOMAIN, then is gone; then it answers, and the same
    checks are fetched from the mirror by that name."""
    dns = fx.FakeDns()
    rx.ctx.closers.append(dns.close)
    prefix = fx.private_resolver_argv(rx.ctx, dns.addr)
    d = rx.start(S["mirror"].url("plain", host=fx.NAME), prefix=prefix)
    U = S["universe"]
    st0 = d.stats()
    hashes, answers = [], []
    for mode, n in (("servfail", 2), ("nxdomain", 1), ("gone", 1)):  # 4 failures: circuit closed
        if mode == "gone":
            dns.close()
        dns.mode = mode
        before = len(dns.queries)
        h = hashes_of(U.take(n)) + (fx.nt_hashes_of(U.take(1)) if mode == "servfail" else [])
        answers += rx.ask(h)
        hashes += h
        if mode != "gone":
            check(any(q == (fx.NAME, 1) for q in dns.queries[before:]),
                  "%s: no A query for %s reached the DNS server" % (mode, fx.NAME))
    check_fault_answers(rx, hashes, answers)
    check_nothing_cached(rx, st0, d.stats(), hashes)
    eq(S["mirror"].requests_for({h[:5] for h in hashes}), [], "mirror requests during the fault")
    names = sorted({q[0] for q in dns.queries})
    check(all(n.startswith(fx.NAME) for n in names), "other names asked: %r" % names)
    dns.reopen()
    dns.mode = "answer"
    check_recovered(rx, hashes, mirror_fetched)
    rx.notes.append("%d DNS queries, all to %s:53" % (len(dns.queries), dns.addr))
    rx.finish()


def run_dns_silent(rx):
    """The DNS server never answers (a dead resolver, a firewall dropping
    port 53) and the resolver would wait 30 s for it: the check still ends
    UNKNOWN timeout at its deadline ([upstream] timeout = 1s), a PING is
    answered meanwhile and a second check ends the same way (libcurl must
    not make the event loop wait for the stuck name lookup); then the DNS
    server answers, the stuck lookups end without leaving a thread or a
    descriptor, and the same checks are fetched and answered right."""
    dns = fx.FakeDns()
    rx.ctx.closers.append(dns.close)
    dns.mode = "drop"
    prefix = fx.private_resolver_argv(rx.ctx, dns.addr, "timeout:30 attempts:1")
    d = rx.start(S["mirror"].url("plain", host=fx.NAME), prefix=prefix)
    U, hashes, answers = S["universe"], [], []
    st0 = d.stats()
    base_fds = wait_for(lambda: fx.settled_fds(d.pid), 10, "breachd's descriptors to settle")
    base_tasks = tasks(d.pid)
    for _ in range(2):
        h = hashes_of(U.take(1))[:1]
        before = len(dns.queries)
        cl, other = d.client(timeout=15 * dtest.SLOW), d.client(timeout=15 * dtest.SLOW)
        cl.send("1 PW %s\n" % h[0])
        wait_for(lambda: len(dns.queries) > before, 10 * dtest.SLOW, "the name lookup")
        try:
            answers.append(cl.line().split(" ", 1)[1])
            eq(other.ask("p PING"), "p PONG", "PING while the lookup hangs")
        except dtest.Timeout as e:
            raise AssertionError("breachd stopped answering while a name lookup hangs: %s" % e)
        cl.close()
        other.close()
        hashes += h
        rx.seen += h
    check_fault_answers(rx, hashes, answers)
    check_nothing_cached(rx, st0, d.stats(), hashes)
    # the two lookups still wait for the DNS server, on threads of their own;
    # answered, they end, and leave no thread or descriptor behind
    stuck = tasks(d.pid) - base_tasks  # 0 with a libcurl that resolves without threads
    dns.answer_held()
    wait_for(lambda: tasks(d.pid) <= base_tasks, 20 * dtest.SLOW, "the lookup threads to end")
    wait_for(lambda: fx.fd_count(d.pid) <= base_fds, 20 * dtest.SLOW, "descriptors released")
    rx.notes.append("threads %d, %d with the lookups stuck, %d once they ended; fds %d -> %d"
                    % (base_tasks, base_tasks + stuck, tasks(d.pid), base_fds,
                       fx.fd_count(d.pid)))
    check_recovered(rx, hashes, mirror_fetched)
    rx.finish()


def tasks(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def run_storm(rx):
    """Many checks in new prefixes at once, every range query answered 502:
    the breaker opens; the storm ends; after the cool-down (5 minutes on
    driven time) its trial closes it and every check is fetched and answered
    right."""
    port, state, proc = rx.ctx.faultserver_proc()
    fx.control(state, "switch", "badgateway")
    rx.clock = dtest.Clock(rx.ctx)
    d = rx.start("http://127.0.0.1:%d/switch/{prefix}" % port)
    prefixes = S["universe"].take(rx.row.n)
    hashes = hashes_of(prefixes)
    st0 = d.stats()
    answers = rx.ask(hashes, conns=4)
    check_fault_answers(rx, hashes, answers)
    check(ERROR in answers and CIRCUIT in answers, "no upstream-error or no circuit-open")
    st1 = d.stats()
    check_nothing_cached(rx, st0, st1, hashes)
    check(st1["upstream_breaker_trips"] >= 1, "the breaker did not trip")
    eq(st1["circuit"], "open", "circuit during the storm")
    n502 = len(fx.fs_requests(state, "badgateway", set(prefixes)))
    fx.control(state, "switch", "ok")
    probe = hashes[:1]
    eq(rx.ask(probe), [CIRCUIT], "before the cool-down is over")
    rx.clock.advance(5 * 60)
    wait_for(lambda: rx.ask(probe) == [expect(probe[0])], 60 * dtest.SLOW,
             "the circuit to close after its cool-down", step=0.2)
    check_recovered(rx, hashes, fs_fetched(state))
    eq(d.stats()["circuit"], "closed", "circuit after the storm")
    rx.notes.append("%d requests answered 502 (the breaker stopped the rest)" % n502)
    rx.finish()


def run_hang_sigterm(rx):
    """SIGTERM while checks wait on an upstream that never answers: they are
    answered UNKNOWN shutting-down after [limits] drain_timeout, breachd
    exits 0 and closes its upstream connections; a new breachd on the same
    cache fetches the same checks afresh (nothing was cached)."""
    port, state, proc = rx.ctx.faultserver_proc()
    fx.control(state, "switch", "hang")
    d = rx.start("http://127.0.0.1:%d/switch/{prefix}" % port)
    hashes = hashes_of(S["universe"].take(rx.row.n))
    rx.seen += hashes
    cl = d.client(timeout=30 * dtest.SLOW)
    cl.send("".join("%d PW %s\n" % (i, h) for i, h in enumerate(hashes)))
    seen = wait_for(lambda: fx.tcp_conns(d.pid, port), 20 * dtest.SLOW,
                    "connections to the upstream")
    d.send_signal(signal.SIGTERM)
    answers = [None] * len(hashes)
    for ln in cl.lines(len(hashes)):
        rid, a = ln.split(" ", 1)
        answers[int(rid)] = a
    cl.close()
    check_fault_answers(rx, hashes, answers)
    rc = d.proc.wait(timeout=30 * dtest.SLOW)  # the one SIGTERM: no second one
    d.close_log()
    eq(rc, 0, "breachd's exit status after SIGTERM")
    wait_for(lambda: fx.tcp_conns(proc.pid, port, local=True) == 0, 10 * dtest.SLOW,
             "the upstream's side of the connections closed")
    fx.control(state, "switch", "ok")
    rx.start("http://127.0.0.1:%d/switch/{prefix}" % port)
    eq(rx.d.stats()["cache_entries"], 0, "cache_entries after the restart")
    check_recovered(rx, hashes, fs_fetched(state))
    rx.notes.append("%d upstream connections open at SIGTERM; exit 0; a new breachd fetched all"
                    % seen)
    rx.finish()


def flapper(state, downs, stop, flips):
    """Up, down, up, down... every 100 ms; each down another way."""
    i = 0
    while not stop.is_set():
        down = downs[i % len(downs)]
        if down == "refuse":
            fx.control(state, "refuse", "")
        else:
            fx.control(state, "switch", down)
        flips.append(down)
        stop.wait(0.1)
        fx.control(state, "refuse")
        fx.control(state, "switch", "ok")
        stop.wait(0.1)
        i += 1


def flap_load(rx, hashes, secs):
    """Four clients check every hash, round after round, for secs seconds;
    every answer must be right or UNKNOWN. Returns all the answers."""
    answers, end = [], time.monotonic() + secs
    while not answers or time.monotonic() < end:
        got = rx.ask(hashes, conns=4)
        answers += got
        for h, a in zip(hashes, got):
            check(fx.is_correct_or_unknown(h, a), "%s answered %r while flapping, want %r or "
                  "UNKNOWN" % (h[:5], a, expect(h)))
        time.sleep(0.1)
    return answers


def run_flapping(rx):
    """The upstream flaps every 100 ms while four clients keep checking
    (cache ttl 1 s: ranges expire and are fetched again under the flapping):
    every answer is the right one or UNKNOWN; once it stays up, every check
    is answered right (nothing wrong was cached), after the breaker's
    cool-down if the flapping opened it."""
    port, state, proc = rx.ctx.faultserver_proc()
    d = rx.start("http://127.0.0.1:%d/switch/{prefix}" % port)
    U = S["universe"]
    hashes = hashes_of(U.take(rx.row.n)) + [h for h in (U.take_fp(), U.take_fp()) if h]
    stop, flips = threading.Event(), []
    t = threading.Thread(target=flapper, args=(state, rx.row.downs, stop, flips))
    t.start()
    try:
        answers = flap_load(rx, hashes, 3.0)
    finally:
        stop.set()
        t.join()
    fx.control(state, "refuse")
    fx.control(state, "switch", "ok")
    with open(os.path.join(state, "requests.log")) as f:
        met = {ln.split()[0] for ln in f} - {"ok"}
    check(met, "the load met none of the faults")
    rx.fault_answers = tally(answers)
    st = d.stats()
    if rx.row.breaker_closed:  # 200s with bad bodies are no upstream failure
        eq(st["upstream_breaker_trips"], 0, "upstream_breaker_trips")
        check(st["upstream_parse_errors"] > 0, "no bad body was met")
    # right or UNKNOWN (circuit-open: the cool-down) until all are right
    wait_for(lambda: all(a == expect(h) for h, a in zip(hashes, flap_load(rx, hashes, 0))),
             60 * dtest.SLOW, "every answer right once the upstream stays up", step=0.2)
    rx.recovered = "%d x right" % len(hashes)
    st = d.stats()
    eq(st["internal_errors"], 0, "internal_errors")
    rx.notes.append("%d flips; faults met: %s; %d fetches, %d parse errors, %d breaker trips"
                    % (len(flips), ", ".join(sorted(met)), st["upstream_fetches"],
                       st["upstream_parse_errors"], st["upstream_breaker_trips"]))
    rx.finish()


ROWS = [
    Row("dns", "host name does not resolve (SERVFAIL, NXDOMAIN, no DNS server)", run=run_dns,
        answers=[UNAVAILABLE], retried=True, nt=True),
    Row("dns-silent", "the DNS server never answers (the lookup would take 30 s)",
        run=run_dns_silent, answers=[TIMEOUT], keys={"timeout": "1s"}),
    Row("refused", "connection refused", setup_refused, [UNAVAILABLE], retried=True),
    Row("tls-selfsigned", "TLS: self-signed certificate", setup_tls("selfsigned"), [UNAVAILABLE],
        retried=False, nt=True),
    Row("tls-wronghost", "TLS: certificate for another host name", setup_tls("wronghost"),
        [UNAVAILABLE], retried=False, nt=True),
    Row("tls-expired", "TLS: expired certificate", setup_tls("expired"), [UNAVAILABLE],
        retried=False, nt=True),
    Row("redirect-301", "301 to a working mirror", setup_redirect("r301"), [ERROR], retried=False),
    Row("redirect-302", "302 to a working mirror", setup_redirect("r302"), [ERROR], retried=False),
    Row("redirect-307", "307 to a working mirror", setup_redirect("r307"), [ERROR], retried=False),
    Row("redirect-308", "308 to a working mirror", setup_redirect("r308"), [ERROR], retried=False),
    Row("502-storm", "every range query answered 502", run=run_storm, answers=[ERROR, CIRCUIT],
        retried=True, prefixes=150),
    Row("flapping", "up and down (refused, 502, 503, closed, reset, cut) every 100 ms under load",
        run=run_flapping, prefixes=200, downs=("refuse", "badgateway", "fail", "close", "reset",
                                               "badlen"),
        keys={"rate": 1000, "timeout": "2s", "cache": {"ttl": "1s"}}),
    Row("flapping-bodies", "200s with bad bodies (garbage, empty, cut short) every 100 ms under "
        "load", run=run_flapping, prefixes=200, downs=("garbage", "empty", "shortlen"),
        breaker_closed=True, keys={"rate": 1000, "timeout": "2s", "cache": {"ttl": "1s"}}),
    Row("hang", "accepts, reads the request, never answers", setup_hang(False), [TIMEOUT],
        keys={"timeout": "2s"}, hangs=True),
    Row("hang-tls", "accepts, never completes the TLS handshake", setup_hang(True), [TIMEOUT],
        keys={"timeout": "2s"}, hangs=True),
    Row("hang-backlog", "listens, never accepts", setup_backlog, [TIMEOUT],
        keys={"timeout": "2s"}, hangs=True),
    Row("hang-sigterm", "never answers, and breachd is stopped meanwhile", run=run_hang_sigterm,
        answers=["UNKNOWN shutting-down"], keys={"timeout": "30s"}),
]


def run_row(row, results, parent):
    ctx = fx.RowCtx(row.name, dirname=os.path.join(parent, "r-" + row.name))
    ctx.closers = []
    rx = Rx(row, ctx)
    try:
        (row.run or run_standard)(rx)
        results[row.name] = ("ok", rx)
    except dtest.Skip as e:
        results[row.name] = ("SKIP (%s)" % e, rx)
    except BaseException:  # noqa: B902 - reported with the table
        rx.notes.append(traceback.format_exc())
        for d in ctx.daemons:
            rx.notes.append("breachd log, last lines:\n" + d.log()[-3000:])
        results[row.name] = ("FAIL", rx)
    finally:
        for c in ctx.closers:
            c()
        ctx.cleanup()


def setup():
    ctx = dtest.Ctx("shared")
    S["ctx"] = ctx
    n = sum(r.n + 1 for r in ROWS) + 20
    S["universe"] = fx.Universe(ctx, n)
    S["certs"] = fx.Certs(ctx.path("certs"))
    S["mirror"] = fx.Mirror(ctx, S["certs"])


def teardown():
    if "ctx" in S:
        S["ctx"].cleanup()
    return 0


@test
def upstream_fault_matrix(ctx):
    only = [w for w in os.environ.get("BREACHD_FAULT_ROWS", "").split(",") if w]
    rows = [r for r in ROWS if not only or any(w in r.name for w in only)]
    # the long rows first; at most four rows at once on the shared cores
    rows.sort(key=lambda r: r.run is None)
    results, gate = {}, threading.Semaphore(4)

    def one(row):
        with gate:
            run_row(row, results, ctx.name)
    threads = [threading.Thread(target=one, args=(r,)) for r in rows]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in rows:
        status, rx = results.get(r.name, ("FAIL", None))
        print("%-15s %-5s %s" % (r.name, status, r.fault))
        if rx:
            print("    during the fault: %s\n    after it cleared: %s" % (rx.fault_answers,
                                                                        rx.recovered))
            for n in rx.notes:
                print("    " + n.replace("\n", "\n    "))
    failed = [r.name for r in rows if results.get(r.name, ("FAIL",))[0] == "FAIL"]
    check(not failed, "rows failed: %s" % ", ".join(failed))
    if all(results[r.name][0].startswith("SKIP") for r in rows):
        raise dtest.Skip("every row skipped")


if __name__ == "__main__":
    dtest.main(setup=setup, teardown=teardown)
