# SPDX-License-Identifier: MIT
"""Shared by test_daemon_load.py and tests/bench/bench-slowloris.py: many
connections at once from one Python process (non-blocking Unix sockets on
one selector), the daemon's memory and descriptors from /proc, a small
corpus with its filter and an nginx mirror, the slowloris driver (run as a
child process: `python3 loadfx.py slowloris ...`, so that its work does not
share an interpreter with the client that measures latency) and the
slowloris scenario itself. Standard library only.
"""
import errno
import json
import os
import random
import re
import resource
import selectors
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check  # noqa: E402


def raise_nofile():
    """Raise this process's open-file soft limit to its hard limit (breachd,
    started from here, inherits it); returns the limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def mem_kib(pid):
    """VmRSS, VmHWM and RssAnon of pid, in KiB."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon"):
                out[k] = int(v.split()[0])
    return out


def _socket_inodes(table):
    out = set()
    try:
        with open("/proc/net/" + table) as f:
            next(f)
            for line in f:
                cols = line.split()
                out.add(cols[6] if table == "unix" else cols[9])
    except FileNotFoundError:
        pass
    return out


def fds(pid):
    """pid's open descriptors by kind: {"unix": Unix sockets (the listening
    socket and the clients'), "tcp": TCP sockets (libcurl's connections to
    the upstream, kept for reuse), "other": the rest}."""
    unix = _socket_inodes("unix")
    tcp = _socket_inodes("tcp") | _socket_inodes("tcp6")
    out = {"unix": 0, "tcp": 0, "other": 0}
    d = "/proc/%d/fd" % pid
    for name in os.listdir(d):
        try:
            t = os.readlink(os.path.join(d, name))
        except OSError:
            continue
        m = re.fullmatch(r"socket:\[(\d+)\]", t)
        if m and m.group(1) in unix:
            out["unix"] += 1
        elif m and m.group(1) in tcp:
            out["tcp"] += 1
        else:
            out["other"] += 1
    return out


def cpu_ns(pid):
    """(CPU time, run-queue wait) of pid's main thread in ns: what it ran and
    how long it was ready to run while other work held the cores
    (/proc/PID/schedstat); (-1, -1) when not available."""
    try:
        with open("/proc/%d/task/%d/schedstat" % (pid, pid)) as f:
            run, wait = f.read().split()[:2]
        return int(run), int(wait)
    except (OSError, ValueError):
        return -1, -1


def mem_line(what, m):
    return "%s: VmRSS %d KiB, VmHWM %d KiB, RssAnon %d KiB" % (what, m["VmRSS"], m["VmHWM"],
                                                              m["RssAnon"])


percentile = dtest.percentile


# ---- many connections --------------------------------------------------------

def connect_many(path, n, deadline_s=60.0, sndbuf=None):
    """n connected non-blocking Unix sockets. A non-blocking connect to a
    Unix socket whose backlog is full fails with EAGAIN at once: those are
    tried again (the daemon accepts meanwhile)."""
    socks, todo = [], []
    end = time.monotonic() + deadline_s
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        if sndbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
        todo.append(s)
    while todo:
        again = []
        for s in todo:
            e = s.connect_ex(path)
            if e == 0 or e == errno.EISCONN:
                socks.append(s)
            elif e in (errno.EAGAIN, errno.EINPROGRESS, errno.EALREADY):
                again.append(s)
            else:
                for x in socks + todo:
                    x.close()
                raise OSError(e, "connect %s: %s" % (path, os.strerror(e)))
        todo = again
        if todo:
            if time.monotonic() > end:
                for x in socks + todo:
                    x.close()
                raise AssertionError("%d of %d connections still refused (EAGAIN) after %.0f s"
                                     % (len(todo), n, deadline_s))
            time.sleep(0.002)
    return socks


def send_all_nb(socks_payloads, deadline_s=60.0):
    """Send each payload completely on its non-blocking socket."""
    sel = selectors.DefaultSelector()
    left = {}
    for s, p in socks_payloads:
        try:
            k = s.send(p)
        except BlockingIOError:
            k = 0
        if k < len(p):
            left[s] = memoryview(p)[k:]
            sel.register(s, selectors.EVENT_WRITE)
    end = time.monotonic() + deadline_s
    while left:
        if time.monotonic() > end:
            raise AssertionError("%d sockets could not send their requests" % len(left))
        for key, _ in sel.select(1.0):
            s = key.fileobj
            try:
                k = s.send(left[s])
            except BlockingIOError:
                continue
            left[s] = left[s][k:]
            if not left[s]:
                del left[s]
                sel.unregister(s)
    sel.close()


def read_lines_nb(socks, want, deadline_s=60.0):
    """Read from every socket until it has want[i] complete lines; returns
    the lists of lines. Fails at EOF or after the deadline."""
    sel = selectors.DefaultSelector()
    bufs = [b""] * len(socks)
    lines = [[] for _ in socks]
    idx = {}
    for i, s in enumerate(socks):
        if want[i] > 0:
            idx[s] = i
            sel.register(s, selectors.EVENT_READ)
    end = time.monotonic() + deadline_s
    while idx:
        if time.monotonic() > end:
            raise AssertionError("%d connections without all their answers after %.0f s" % (
                len(idx), deadline_s))
        for key, _ in sel.select(1.0):
            s = key.fileobj
            i = idx[s]
            try:
                chunk = s.recv(65536)
            except BlockingIOError:
                continue
            if not chunk:
                raise AssertionError("connection %d: EOF after %r" % (i, lines[i]))
            bufs[i] += chunk
            *done, bufs[i] = bufs[i].split(b"\n")
            lines[i] += [ln.decode(errors="replace") for ln in done]
            if len(lines[i]) >= want[i]:
                del idx[s]
                sel.unregister(s)
    sel.close()
    return lines


# ---- a corpus, its filter and a mirror --------------------------------------

class Corpus:
    """n random SHA-1 hashes with counts (HIBP's format), a filter over them
    (16-bit fingerprints: a random hash is a maybe 1 time in 65,536) and a
    mirror of their ranges served by nginx."""

    def __init__(self, ctx, n=2000, seed=11):
        rng = random.Random(seed)
        self.rng = rng
        self.counts = {}
        while len(self.counts) < n:
            self.counts["%040X" % rng.getrandbits(160)] = rng.randint(1, 99999)
        txt = ctx.path("corpus.txt")
        with open(txt, "w") as f:
            f.write("".join("%s:%d\n" % kv for kv in sorted(self.counts.items())))
        self.filter = ctx.build_filter(txt, ctx.path("corpus.bfuse"))
        self.mirror = ctx.path("mirror")
        dtest.write_range(self.mirror, self.counts)
        self.port = ctx.nginx(self.mirror)
        self.present = sorted(self.counts)
        self.absent = []
        says = dtest.filter_says(ctx, self.filter,
                                 ["%040X" % rng.getrandbits(160) for _ in range(400)])
        self.absent = sorted(h for h, maybe in says.items() if not maybe)

    def upstream(self):
        return "http://127.0.0.1:%d/range/{prefix}" % self.port


# ---- slowloris ---------------------------------------------------------------

def slowloris_main(argv):
    """The driver: python3 loadfx.py slowloris SOCKET N_SLOW N_PIPE
    READY_FILE. N_SLOW clients send their request lines one byte a second
    each (spread over the second: 1% of them every 10 ms); N_PIPE clients
    pipeline PINGs until the daemon stops reading them; none reads a reply.
    READY_FILE is written (JSON) once every client is connected and every
    pipeliner is stalled. The slow clients send only while active: SIGUSR1
    starts them, SIGUSR2 pauses them (the connections stay open and the
    driver keeps waking as often, so that a paused window differs from a
    loaded one only by the daemon's work). SIGTERM: print the figures as
    JSON, close everything, exit."""
    path, n_slow, n_pipe, ready = argv[0], int(argv[1]), int(argv[2]), argv[3]
    state = {"active": False, "done": False}
    signal.signal(signal.SIGUSR1, lambda *a: state.update(active=True))
    signal.signal(signal.SIGUSR2, lambda *a: state.update(active=False))
    signal.signal(signal.SIGTERM, lambda *a: state.update(done=True))
    raise_nofile()
    slow = connect_many(path, n_slow)
    pipe = connect_many(path, n_pipe, sndbuf=65536)
    # Half the slow clients send whole short requests (answered, never
    # read), half a PW line that completes only after ~50 s.
    scripts = []
    for i in range(n_slow):
        if i % 2:
            scripts.append(("s%d PING\n" % i).encode() * 10)
        else:
            scripts.append(("s%d PW %040X\n" % (i, i)).encode())
    pos = [0] * n_slow
    chunk = b"".join(b"p%d PING\n" % i for i in range(8192))
    piped = [0] * n_pipe
    stalled_since = [None] * n_pipe
    t0 = time.monotonic()
    is_ready = False
    active_s = 0.0
    slot = 0
    next_t = t0
    while not state["done"]:
        now = time.monotonic()
        if not is_ready and all(s is not None and now - s > 0.5 for s in stalled_since):
            is_ready = True
            with open(ready + ".tmp", "w") as f:
                json.dump({"setup_s": now - t0, "piped_bytes": piped}, f)
            os.replace(ready + ".tmp", ready)
        if not is_ready and now - t0 > 120:
            print(json.dumps({"error": "pipeliners never stalled", "piped": piped}))
            return 1
        if slot % 10 == 0:
            for j, s in enumerate(pipe):
                try:
                    k = s.send(chunk)
                    piped[j] += k
                    if k:
                        stalled_since[j] = None
                except BlockingIOError:
                    if stalled_since[j] is None:
                        stalled_since[j] = now
        active = state["active"]
        for i in range(slot % 100, n_slow, 100):
            if not active:
                break
            try:
                pos[i] += slow[i].send(scripts[i][pos[i] % len(scripts[i]):][:1])
            except BlockingIOError:
                pass
        slot += 1
        next_t = max(next_t + 0.01, time.monotonic() - 0.05)  # no catching up in bursts
        time.sleep(max(0.0, next_t - time.monotonic()))
        if active:
            active_s += time.monotonic() - now
    out = {"slow_bytes": sum(pos), "piped_bytes": sum(piped), "active_s": active_s}
    for s in slow + pipe:
        s.close()
    print(json.dumps(out), flush=True)
    return 0


class Prober:
    """One well-behaved client: requests one at a time, every gap seconds,
    each timed from its send to its answer; every answer checked."""

    def __init__(self, d, checks, gap=0.005):
        self.cl = dtest.Client(d.sock, timeout=30)
        self.checks = checks  # [(request without id, answer without id)]
        self.gap = gap
        self.i = 0

    def probe(self, samples):
        req, want = self.checks[self.i % len(self.checks)]
        rid = "w%d" % self.i
        self.i += 1
        t = time.monotonic()
        self.cl.send("%s %s\n" % (rid, req))
        got = self.cl.line()
        dt = time.monotonic() - t
        if got != "%s %s" % (rid, want):
            raise AssertionError("well-behaved %r: got %r, want %r" % (req, got, want))
        samples.append(dt)
        time.sleep(self.gap)

    def run(self, samples, n=None, until=None):
        while (n is None or len(samples) < n) and (until is None or not until()):
            self.probe(samples)

    def close(self):
        self.cl.close()


def slowloris(ctx, n_slow=1000, n_pipe=10, seconds=12.0, window=2.0, n_unloaded=600,
              report=print):
    """The scenario: a daemon on a filter and an nginx mirror; a
    well-behaved client's PING, PW (filter no) and PW (cached range) checks
    timed alone ("unloaded"), then while the driver holds n_slow slowloris
    clients and n_pipe pipeliners that never read, in alternating windows:
    the slow clients sending ("loaded", seconds in all) and paused ("held":
    the same connections open, nothing sent), so that the machine's other
    work falls on both alike; then alone again. Asserts every well-behaved
    answer; returns the daemon, the figures (latencies in ms) and the
    loaded samples (s)."""
    raise_nofile()
    c = Corpus(ctx)
    conf = ctx.config(daemon={"log_level": "notice"},
                      passwords={"filter": c.filter, "upstream": c.upstream()},
                      limits={"max_connections": str(n_slow + n_pipe + 100)})
    d = ctx.daemon(conf)
    warm = d.client(timeout=30)
    present = c.present[:20]
    for h in present:  # their ranges into the cache
        ans = warm.ask("x PW %s" % h)
        check(ans == "x PWNED %d" % c.counts[h], "warm-up %r" % ans)
    warm.close()
    checks = []
    for i in range(60):
        checks += [("PING", "PONG"), ("PW %s" % c.absent[i % len(c.absent)], "CLEAN"),
                   ("PW %s" % present[i % 20], "PWNED %d" % c.counts[present[i % 20]])]
    pr = Prober(d, checks)
    pr.run([], n=30)
    before, loaded, held, after = [], [], [], []
    cpu = {"unloaded": [0, 0, 0.0], "loaded": [0, 0, 0.0]}  # run ns, wait ns, seconds

    def timed(phase, fn):
        a, t = cpu_ns(d.pid), time.monotonic()
        fn()
        b = cpu_ns(d.pid)
        f = cpu[phase]
        f[0] += b[0] - a[0]
        f[1] += b[1] - a[1]
        f[2] += time.monotonic() - t

    timed("unloaded", lambda: pr.run(before, n=n_unloaded))
    mem0 = mem_kib(d.pid)
    ready = ctx.path("slowloris.ready")
    drv = ctx.spawn([sys.executable, os.path.abspath(__file__), "slowloris", d.sock, str(n_slow),
                     str(n_pipe), ready], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        dtest.wait_for(lambda: os.path.exists(ready) or drv.poll() is not None,
                       timeout=120 * dtest.SLOW, what="the slowloris clients")
        if drv.poll() is not None:
            raise AssertionError("the slowloris driver exited early: %r" % drv.stdout.read())
        with open(ready) as f:
            setup = json.load(f)
        conns_loaded = d.stats()["connections"]
        for w in range(2 * max(1, int(round(seconds / window)))):
            on = w % 2 == 0
            drv.send_signal(signal.SIGUSR1 if on else signal.SIGUSR2)
            end = time.monotonic() + window
            timed("loaded" if on else "unloaded",
                  lambda: pr.run(loaded if on else held, until=lambda: time.monotonic() > end))
        mem1 = mem_kib(d.pid)
        drv.send_signal(signal.SIGTERM)
        text = drv.stdout.read()
        drv.wait()
    finally:
        if drv.poll() is None:
            drv.kill()
    check(drv.returncode == 0, "the slowloris driver failed (%d): %s" % (drv.returncode,
                                                                        text[-2000:]))
    out = json.loads(text)
    pr.run(after, n=max(1, n_unloaded // 2))
    pr.close()
    base = before + after
    fig = {"slow": n_slow, "pipe": n_pipe, "conns_loaded": conns_loaded,
           "setup_s": setup["setup_s"], "loaded_s": out["active_s"],
           "slow_bytes": out["slow_bytes"], "piped_mib": out["piped_bytes"] / 2**20,
           "piped_max_kib": max(setup["piped_bytes"] or [0]) / 1024,
           "unloaded_n": len(base), "held_n": len(held), "loaded_n": len(loaded),
           "unloaded_p50_ms": 1e3 * percentile(base, 0.5),
           "unloaded_p99_ms": 1e3 * percentile(base, 0.99),
           "held_p50_ms": 1e3 * percentile(held, 0.5),
           "held_p99_ms": 1e3 * percentile(held, 0.99),
           "loaded_p50_ms": 1e3 * percentile(loaded, 0.5),
           "loaded_p99_ms": 1e3 * percentile(loaded, 0.99),
           "loaded_max_ms": 1e3 * max(loaded) if loaded else float("nan"),
           "rss_before_kib": mem0["VmRSS"], "rss_loaded_kib": mem1["VmRSS"],
           "hwm_kib": mem1["VmHWM"]}
    fig["p99_ratio"] = fig["loaded_p99_ms"] / fig["unloaded_p99_ms"]
    fig["p99_ratio_held"] = fig["loaded_p99_ms"] / fig["held_p99_ms"]
    # The daemon's loop thread, in ms per second: CPU, and waiting for a
    # core (the machine's other work); "unloaded" here: alone and held.
    for name, (run, wait, secs) in cpu.items():
        ok = secs > 0 and cpu_ns(d.pid)[0] >= 0
        fig[name + "_cpu_ms_s"] = run / 1e6 / secs if ok else -1
        fig[name + "_runq_ms_s"] = wait / 1e6 / secs if ok else -1
    report("slowloris: %(slow)d byte-a-second clients and %(pipe)d pipeliners (%(piped_mib).1f MiB "
           "sent before the daemon stopped reading them), %(conns_loaded)d connections, "
           "%(loaded_s).1f s loaded, %(slow_bytes)d bytes trickled" % fig)
    report("well-behaved: unloaded p50 %(unloaded_p50_ms).3f ms p99 %(unloaded_p99_ms).3f ms "
           "(n=%(unloaded_n)d); held open, quiet: p50 %(held_p50_ms).3f ms p99 %(held_p99_ms).3f "
           "ms (n=%(held_n)d); loaded p50 %(loaded_p50_ms).3f ms p99 %(loaded_p99_ms).3f ms "
           "max %(loaded_max_ms).3f ms (n=%(loaded_n)d); p99 ratio %(p99_ratio).2f (to held: "
           "%(p99_ratio_held).2f)" % fig)
    report("daemon loop thread, ms per s: CPU %(unloaded_cpu_ms_s).1f unloaded, "
           "%(loaded_cpu_ms_s).1f loaded; waiting for a core %(unloaded_runq_ms_s).1f unloaded, "
           "%(loaded_runq_ms_s).1f loaded" % fig)
    report("daemon RSS %(rss_before_kib)d KiB before, %(rss_loaded_kib)d KiB loaded, VmHWM "
           "%(hwm_kib)d KiB" % fig)
    return d, fig, loaded


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "slowloris":
        sys.exit(slowloris_main(sys.argv[2:]))
    sys.exit("usage: loadfx.py slowloris SOCKET N_SLOW N_PIPE READY_FILE")
