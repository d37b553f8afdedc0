#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The process fault matrix (tests/README.md, "Fault matrix", "Process
faults"): breachd killed, reloaded and stopped at bad moments, against a
real nginx mirror and a real LMDB cache. Each row of FAULTS ends with
correct answers or UNKNOWN: nothing wrong cached, no crash, no leak, and a
daemon that serves afterwards.

- sigkill_cache_writes: SIGKILL inside commits of range answers to LMDB
  (strace -e inject at a random commit system call on data.mdb), 20 times
  on one cache; then mdb_stat / mdb_dump read it, every answer it holds
  equals the mirror's, and the daemon serves.
- sigkill_reload: SIGKILL inside a SIGHUP reload of a new filter generation
  (strace -e inject at a random point of it), 20 times; each restart serves
  the generation on disk.
- sighup_storm: 100 SIGHUPs within a second while clients check and new
  generations are installed, then SIGHUP and RELOAD during a held reload;
  the daemon stays up, every answer is right or UNKNOWN, it ends on the
  newest generation, and no descriptor, filter mapping or memory is left.
- sigterm_full_load: connections pipelining PW (filter hits resolved by
  range, filter no's), URL (listed, unlisted) and PING, two reading slowly;
  SIGTERM: each connection receives whole lines only, each the answer to
  one of its requests, then EOF; breachd exits 0 (at its drain timeout).
- sigterm_full_load_readers: the same with every connection reading: the
  drain ends before its timeout.
- sighup_through_stop: SIGHUPs without a pause from SIGTERM to the exit:
  the exit status stays 0.

Without strace (or under valgrind) the kills come at random moments.
"""
import os
import random
import re
import shutil
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq  # noqa: E402
from procfx import (Mirror, ask_all, build_generations, daemon_conf,  # noqa: E402
                    filter_mappings, inject, kill_at_syscall, mdb_check, no_clients, quiet,
                    replace_file, rss_kib, thread_held)

# Where a commit of the cache can be cut: LMDB's mdb_txn_commit makes an
# lseek + writev per run of dirty pages, an fdatasync, then a pwrite64 of the
# meta page; each on the cache's data file only (-P), the n-th call of that
# one system call (strace counts them one by one).
COMMIT_POINTS = [("lseek", 6), ("writev", 6), ("fdatasync", 3), ("pwrite64", 3)]
# Where a reload can be cut: the thread's start, the config read, the
# filter's header check, open and map (n-th call per thread), the new
# state's resolver on the loop thread.
RELOAD_POINTS = [("clone3", 1), ("openat", 1), ("openat", 2), ("openat", 3), ("pread64", 1),
                 ("madvise", 1), ("socketpair", 1)]


# ---- rows --------------------------------------------------------------------

def sigkill_cache_writes(ctx, rounds):
    per_round = 60 if dtest.is_slow() else 100
    m = Mirror(ctx, per_round * rounds, 300, seed=101)
    conf = daemon_conf(ctx, m)
    cache = ctx.path("cache")
    data_file = os.path.join(cache, "data.mdb")
    rng = random.Random(5150)
    mid_write = traced = 0
    for r in range(rounds):
        d = ctx.daemon(conf)  # opens the cache the previous round's kill left
        # The kill: at a random commit system call (strace), else at a
        # random moment.
        call, most = rng.choice(COMMIT_POINTS)
        log = ctx.path("strace-%d.txt" % r)
        tracer = kill_at_syscall(ctx, d.pid, call, rng.randint(1, most), path=data_file, log=log)
        part = m.prefixes[r * per_round:(r + 1) * per_round]
        checks = m.checks(part)
        cl = d.client(timeout=60)
        cl.send("".join("c%d PW %s\n" % (i, h) for i, (h, _) in enumerate(checks)))
        if tracer:
            got = 0
            while got < len(checks) and cl.line() is not None:
                got += 1
            killed = got < len(checks) or quiet(d.proc, log)
        else:
            time.sleep(rng.uniform(0.01, 0.3))
            killed = False
        if not killed:
            check(d.proc.poll() is None, "breachd exited: %r" % d.proc.poll())
            d.proc.send_signal(signal.SIGKILL)
        eq(d.proc.wait(), -signal.SIGKILL, "round %d: how breachd ended" % r)
        d.close_log()
        cl.close()
        if tracer:
            tracer.wait()
        mid_write += killed
        traced += tracer is not None
    print("    %d of %d kills placed by strace landed inside a commit" % (mid_write, traced))
    check(mid_write >= traced // 3, "too few kills inside a commit: %d" % mid_write)
    records = mdb_check(cache)
    all_checks = m.checks(m.prefixes)
    # What the cache holds, alone: the upstream is a closed port.
    dead = "http://127.0.0.1:%d/range/{prefix}" % dtest.free_port()
    d = ctx.daemon(ctx.config(name="cache-only.conf", passwords={"upstream": dead},
                              upstream={"rate": 100000, "timeout": "2s"},
                              limits={"max_inflight": 65536}))
    unknown = ask_all(d, all_checks, "o", allow_unknown=True)
    from_cache = len(all_checks) - unknown
    print("    %d of %d answers came from the cache (%s ranges stored)" % (
        from_cache, len(all_checks), records))
    check(from_cache > 0, "nothing was cached in %d rounds" % rounds)
    if records is not None:
        eq(from_cache, 2 * records, "answers from the cache, two for each stored range")
    d.stop_ok()
    # And with the mirror: everything, right.
    d = ctx.daemon(conf)
    ask_all(d, all_checks, "n")
    eq(d.client().ask("p PING"), "p PONG")
    d.stop_ok()
    mdb_check(cache)


def sigkill_reload(ctx, rounds):
    m = Mirror(ctx, 200, 50, seed=202)
    extra = 100000 if dtest.is_slow() else 300000
    gens = build_generations(ctx, m, range(2, rounds + 3), extra)
    live = ctx.path("live.bfuse")
    shutil.copyfile(gens[2], live)
    conf = daemon_conf(ctx, m, filt=live)
    checks = m.checks(m.prefixes[:60])
    rng = random.Random(99)
    during = traced = 0
    for r in range(rounds):
        gen = r + 3
        d = ctx.daemon(conf)
        eq(d.stats()["filter_generation"], gen - 1, "round %d: the generation on disk" % r)
        ask_all(d, checks[r * 4 % len(checks):][:20], "a%d." % r)
        replace_file(gens[gen], live)
        call, n = rng.choice(RELOAD_POINTS)
        tracer = kill_at_syscall(ctx, d.pid, call, n)
        d.send_signal(signal.SIGHUP)
        if tracer:
            # Killed inside the reload, or done with it (RELOADING then
            # READY in the log) when the point was not reached.
            dtest.wait_for(lambda: d.proc.poll() is not None or "reloaded " in d.log(),
                           30 * dtest.SLOW, "the reload or the kill")
            killed = d.proc.poll() is not None
        else:
            time.sleep(rng.uniform(0, 0.02))
            killed = False
        if not killed:
            d.proc.send_signal(signal.SIGKILL)
        eq(d.proc.wait(), -signal.SIGKILL, "round %d: how breachd ended" % r)
        d.close_log()
        if tracer:
            tracer.wait()
        during += killed
        traced += tracer is not None
    print("    %d of %d kills placed by strace landed inside the reload" % (during, traced))
    check(during >= traced // 3, "too few kills inside a reload: %d" % during)
    d = ctx.daemon(conf)
    eq(d.stats()["filter_generation"], rounds + 2, "the generation on disk after the last kill")
    ask_all(d, checks, "z")
    d.stop_ok()


class Checker(threading.Thread):
    """A client checking in a loop until stopped; every answer must be the
    expected one or UNKNOWN."""

    def __init__(self, d, checks, tag):
        super().__init__(daemon=True)
        self.cl = d.client(timeout=60)
        self.checks, self.tag = checks, tag
        self.stop = threading.Event()
        self.done = 0
        self.unknown = 0
        self.error = None

    def run(self):
        try:
            i = 0
            while not self.stop.is_set():
                batch = [self.checks[(i + k) % len(self.checks)] for k in range(20)]
                self.cl.send("".join("%s%d PW %s\n" % (self.tag, k, h)
                                     for k, (h, _) in enumerate(batch)))
                for ln in self.cl.lines(len(batch)):
                    rid, ans = ln.split(" ", 1)
                    want = batch[int(rid[len(self.tag):])][1]
                    if ans.startswith("UNKNOWN "):
                        self.unknown += 1
                    elif ans != want:
                        raise AssertionError("%s: %r, want %r" % (rid, ans, want))
                    self.done += 1
                i += 20
        except BaseException as e:  # noqa: B902 - reported by finish()
            self.error = e

    def finish(self):
        self.stop.set()
        self.join(60 * dtest.SLOW)
        self.cl.close()
        if self.error:
            raise AssertionError("checker %s: %r" % (self.tag, self.error))
        check(not self.is_alive(), "checker %s hangs" % self.tag)
        check(self.done > 0, "checker %s made no check" % self.tag)


def settle(ctx, d, want_gen, live):
    """Wait until the generation is want_gen and only the live filter is
    mapped (old states go once their last request is answered); STATS."""
    def done():
        st = d.stats()
        return st if st["filter_generation"] == want_gen else None
    st = dtest.wait_for(done, 15 * dtest.SLOW, "generation %d" % want_gen, step=0.1)
    try:
        dtest.wait_for(lambda: filter_mappings(d.pid, ctx.dir) == [live], 10 * dtest.SLOW,
                       "old filters unmapped")
    except AssertionError:
        raise AssertionError("mapped filters: %r" % filter_mappings(d.pid, ctx.dir))
    return st


def storm(d, gens, live, first, n_signals, per_gen):
    """n_signals SIGHUPs in one second, a new generation installed every
    per_gen of them; returns the last generation installed."""
    gen = first
    t0 = time.monotonic()
    for i in range(n_signals):
        if i % per_gen == 0 and gen + 1 in gens:
            gen += 1
            replace_file(gens[gen], live)
        d.send_signal(signal.SIGHUP)
        time.sleep(max(0.0, t0 + (i + 1) / n_signals - time.monotonic()))
    return gen


def sighup_storm(ctx, n_signals):
    m = Mirror(ctx, 200, 50, seed=303)
    extra = 100000 if dtest.is_slow() else 300000
    gens = build_generations(ctx, m, range(2, 26), extra)
    live = ctx.path("live.bfuse")
    shutil.copyfile(gens[2], live)
    d = ctx.daemon(daemon_conf(ctx, m, filt=live))
    checks = m.checks(m.prefixes)
    # A first storm: what a reload allocates once (arenas, libcurl) is there.
    gen = storm(d, gens, live, 2, 20, 10)
    settle(ctx, d, gen, live)
    fds0 = dtest.wait_for(lambda: no_clients(d.pid), 10 * dtest.SLOW, "clients gone")
    rss0 = rss_kib(d.pid)
    maps0 = filter_mappings(d.pid, ctx.dir)
    eq(maps0, [live], "mapped filters before the storm")
    workers = [Checker(d, checks, "w%d." % i) for i in range(3)]
    for w in workers:
        w.start()
    dtest.wait_for(lambda: all(w.done > 0 for w in workers), 30 * dtest.SLOW, "checks")
    gen = storm(d, gens, live, gen, n_signals, 10)
    check(d.proc.poll() is None, "breachd died in the storm: %r" % d.proc.poll())
    # The last generation arrives while a reload runs: the reload thread is
    # held (strace) when it maps the file it opened (breachd keeps a filter
    # file open: no close follows), the file is
    # replaced, SIGHUP and RELOAD sent; the daemon must end on the new one,
    # and RELOADED must mean it is in place.
    gen += 1
    tracer = inject(ctx, d.pid, "mmap", 1, "delay_enter=1000000", path=live)
    d.send_signal(signal.SIGHUP)
    if tracer:
        dtest.wait_for(lambda: thread_held(d.pid), 20 * dtest.SLOW, "the reload thread held")
    replace_file(gens[gen], live)
    d.send_signal(signal.SIGHUP)
    rl = d.client(timeout=60)
    eq(rl.ask("r RELOAD"), "r RELOADED", "RELOAD during a reload")
    eq(d.stats()["filter_generation"], gen, "the generation RELOADED put in place")
    rl.close()
    st = settle(ctx, d, gen, live)
    if tracer:
        tracer.terminate()
        tracer.wait()
    for w in workers:
        w.finish()
    check(d.proc.poll() is None, "breachd died: %r" % d.proc.poll())
    st = d.stats()
    print("    %d reloads for %d SIGHUPs and RELOADs; %d checks, %d UNKNOWN" % (
        st["reloads"], n_signals + 23, sum(w.done for w in workers),
        sum(w.unknown for w in workers)))
    eq(st["reload_failures"], 0, "reload failures")
    eq(st["internal_errors"], 0, "internal errors")
    eq(filter_mappings(d.pid, ctx.dir), [live], "mapped filters after the storm")
    # The checkers' connections close as the daemon reads their EOF.
    fds1 = dtest.wait_for(lambda: no_clients(d.pid), 10 * dtest.SLOW, "clients gone")
    rss1 = rss_kib(d.pid)
    print("    descriptors %r -> %r, VmRSS %d -> %d KiB" % (
        {k: v for k, v in fds0.items() if k != "files"},
        {k: v for k, v in fds1.items() if k != "files"}, rss0, rss1))
    # Upstream connections are the live resolver's keep-alive pool: how many
    # are still open depends on timing (under valgrind, some are), but a
    # leak per reload would leave one for each of the 100+ reloads.
    eq({k: v for k, v in fds1.items() if k != "tcp"},
       {k: v for k, v in fds0.items() if k != "tcp"}, "descriptors after the storm")
    check(fds1["tcp"] <= fds0["tcp"] + 16,
          "upstream connections after the storm: %d, before %d" % (fds1["tcp"], fds0["tcp"]))
    if not dtest.is_slow():  # ASan's quarantine holds freed memory
        check(rss1 - rss0 < 8 * 1024, "VmRSS grew by %d KiB" % (rss1 - rss0))
    ask_all(d, checks, "f")
    d.stop_ok()


class LoadClient(threading.Thread):
    """One connection pipelining a mix of requests: a sender thread (this
    one) and a reader that keeps every byte. slow: reads 4 KiB every 200 ms
    until the daemon has exited (its answers pile up in the daemon)."""

    def __init__(self, d, mix, tag, slow=False):
        super().__init__(daemon=True)
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(d.sock)
        self.mix, self.tag, self.slow = mix, tag, slow
        self.sent = {}  # id -> index in mix
        self.data = bytearray()
        self.stop = threading.Event()
        self.closed = threading.Event()
        self.may_read = threading.Event()
        if not slow:
            self.may_read.set()
        self.n = 0
        self.error = None
        self.reset = False
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        try:
            while True:
                if not self.may_read.is_set():  # a slow reader: 4 KiB now and then
                    self.may_read.wait(0.2)
                b = self.s.recv(65536 if self.may_read.is_set() else 4096)
                if not b:
                    break
                self.data += b
        except ConnectionResetError:
            # Closed with requests of ours unread (never accepted): after
            # the data, a reset instead of EOF, as the kernel does.
            self.reset = True
        except OSError as e:
            self.error = e
        self.closed.set()

    def answered(self):
        return self.data.count(b"\n")

    def run(self):
        i = 0
        try:
            while not self.closed.is_set() and not self.stop.is_set():
                lines = []
                for _ in range(25):
                    rid = "%s%d" % (self.tag, i)
                    self.sent[rid] = i % len(self.mix)
                    lines.append("%s %s\n" % (rid, self.mix[i % len(self.mix)][0]))
                    i += 1
                self.s.sendall("".join(lines).encode())
                self.n = i
                if not self.slow and b" ERR shutting-down " in self.data[-4096:]:
                    break  # what a client does when told (a slow one sees it late)
                while not self.slow and i - self.answered() > 400 and not self.closed.is_set():
                    time.sleep(0.001)  # a window of requests in flight
        except OSError:
            pass  # the daemon closed the connection

    def verify(self):
        """Whole lines, each a right answer to one request of ours, then EOF."""
        check(self.closed.is_set(), "%s: no EOF" % self.tag)
        check(self.error is None, "%s: %r" % (self.tag, self.error))
        data = bytes(self.data)
        check(not data or data.endswith(b"\n"),
              "%s: a half line before EOF: %r" % (self.tag, data[-80:]))
        seen = set()
        counts = {}
        for ln in data.decode().split("\n")[:-1]:
            rid, ans = ln.split(" ", 1)
            check(rid in self.sent, "%s: an answer to no request of ours: %r" % (self.tag, ln))
            check(rid not in seen, "%s: answered twice: %r" % (self.tag, ln))
            seen.add(rid)
            want = self.mix[self.sent[rid]][1]
            if ans.startswith("ERR shutting-down ") or ans.startswith("UNKNOWN "):
                k = ans.split(" ", 2)[0] + " " + ans.split(" ", 2)[1]
                counts[k] = counts.get(k, 0) + 1
                continue
            check(re.fullmatch(want, ans), "%s: %r, want %r" % (self.tag, ln, want))
            k = ans.split(" ", 1)[0]
            counts[k] = counts.get(k, 0) + 1
        return counts


def url_filter(ctx, n):
    """A URL filter of n listed URLs (category phishing) and its range
    mirror: (filter, mirror directory, [(request, answer pattern)])."""
    feed, filt, mirror = ctx.path("urls.txt"), ctx.path("urls.bbf"), ctx.path("urlmirror")
    with open(feed, "w") as f:
        f.write("".join("http://listed%d.example/p/\n" % i for i in range(n)))
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--output", filt, "--ranges-dir",
                  mirror, "--generation", "1", "--input", "%s=phishing" % feed)
    mix = [("URL http://listed%d.example/p/x" % i, r"BLOCKED phishing listed%d\.example/p/" % i)
           for i in range(n)]
    # Unlisted: the filter's no, or a false positive its range clears
    # (UNKNOWN where the prefix has no range file: nginx's 404).
    mix += [("URL http://unlisted%d.example/" % i, "SAFE") for i in range(n)]
    return filt, mirror, mix


def sigterm_full_load(ctx, n_conns, n_slow=2):
    ufilt, umirror, umix = url_filter(ctx, 50)
    m = Mirror(ctx, 400, 50, seed=404, url_dir=umirror)
    gens = build_generations(ctx, m, [2], 1000)
    # The slow readers' answers pile up (up to max_unread, 1M) and hold the
    # drain until its timeout.
    d = ctx.daemon(daemon_conf(ctx, m, filt=gens[2], limits={"drain_timeout": "5s"},
                               urls={"filter": ufilt, "upstream": m.url_upstream}))
    says = dtest.filter_says(ctx, gens[2], [m.absent(p) for p in m.prefixes])
    no = [p for p in m.prefixes if not says[m.absent(p)]]
    mix = [("PING", "PONG")]
    for k, p in enumerate(m.prefixes):
        h, c = m.hit[p]
        mix.append(("PW " + h, "PWNED %d" % c))  # a filter hit, then its range
        mix.append(("PW " + m.absent(p), "CLEAN"))  # mostly the filter's no
        if k % 8 == 0:
            mix.append(("PING", "PONG"))
    mix += umix
    random.Random(4).shuffle(mix)
    check(len(no) > 300, "the filter says maybe too often")
    clients = [LoadClient(d, mix[k * 37:] + mix[:k * 37], "c%d." % k, slow=k < n_slow)
               for k in range(n_conns)]
    for c in clients:
        c.start()
    fast = clients[n_slow:]
    dtest.wait_for(lambda: all(c.answered() >= 200 for c in fast), 60 * dtest.SLOW,
                   "every connection under load")
    eq(d.stats()["internal_errors"], 0, "internal errors")
    d.send_signal(signal.SIGTERM)
    rc = d.proc.wait(timeout=60 * dtest.SLOW)
    d.close_log()
    for c in clients:
        c.may_read.set()
    for c in clients:
        c.join(30)
        c.reader.join(30)
        c.s.close()
    eq(rc, 0, "exit status")
    total = {}
    for c in clients:
        for k, v in c.verify().items():
            total[k] = total.get(k, 0) + v
    for c in clients[:n_slow]:
        print("    %s (slow): %d sent, %d bytes received" % (c.tag, c.n, len(c.data)))
    print("    %d connections, %d requests sent, answers: %r" % (
        n_conns, sum(c.n for c in clients), total))
    check(not os.path.exists(d.sock), "the socket file is left behind")
    for k in ("PONG", "PWNED", "CLEAN", "BLOCKED", "SAFE"):
        check(total.get(k, 0) > 0, "no %s answer before the stop" % k)
    if not n_slow:  # clients that read: the drain ends before its timeout
        check("(drain timeout)" not in d.log(), "the drain ran into its timeout")


def sighup_through_stop(ctx, rounds):
    """SIGHUPs without a pause from SIGTERM until the process is gone: a
    stopping daemon exits 0, whatever signal comes last."""
    m = Mirror(ctx, 100, 50, seed=505)
    gens = build_generations(ctx, m, [2, 3], 1000)
    live = ctx.path("live.bfuse")
    shutil.copyfile(gens[2], live)
    conf = daemon_conf(ctx, m, filt=live)
    checks = m.checks(m.prefixes)
    sent = 0
    for r in range(rounds):
        d = ctx.daemon(conf)
        w = Checker(d, checks, "w.")
        w.start()
        dtest.wait_for(lambda: w.done > 0, 30 * dtest.SLOW, "checks")
        replace_file(gens[3 - r % 2], live)
        d.send_signal(signal.SIGTERM)
        while d.proc.poll() is None:
            try:
                os.kill(d.pid, signal.SIGHUP)  # the pid is ours until we reap it
                sent += 1
            except ProcessLookupError:
                break
        rc = d.proc.wait()
        d.close_log()
        w.stop.set()
        w.join(30)
        w.cl.close()
        eq(rc, 0, "round %d: exit status (-1: killed by a SIGHUP)" % r)
        check("stopped" in d.log(), "round %d: no 'stopped' in the log" % r)
    print("    %d SIGHUPs sent through %d stops" % (sent, rounds))


# name, function, repetitions (normal build, slow builds: ASan or valgrind)
FAULTS = [
    ("sigkill_cache_writes", sigkill_cache_writes, 20, 10),
    ("sigkill_reload", sigkill_reload, 20, 10),
    ("sighup_storm", sighup_storm, 100, 100),
    ("sigterm_full_load", sigterm_full_load, 12, 8),
    ("sigterm_full_load_readers", lambda ctx, n: sigterm_full_load(ctx, n, n_slow=0), 12, 8),
    ("sighup_through_stop", sighup_through_stop, 5, 3),
]


def _row(name, fn, reps, slow_reps):
    def run(ctx):
        fn(ctx, slow_reps if dtest.is_slow() else reps)
    run.__name__ = name
    return run


for _f in FAULTS:
    dtest.test(_row(*_f))

if __name__ == "__main__":
    dtest.main()
