# SPDX-License-Identifier: MIT
"""The harness of the Python integration tests (the daemon, client, URL,
hooks, hygiene, Squid and CLI tests; the PAM tests through pamtest.py, which
adds their fixtures on top of it).

Every test runs real processes (breachd, breachctl, nginx, faultserver) in a
fresh directory under one temporary directory of the run (tempdir()), talks
to them only over Unix sockets and 127.0.0.1, and stops every process it
started. Standard library only. A script registers its tests with @test and
calls main() (with the options, setup and teardown of its own, if any); it
prints one line per test and a final "N passed, M failed, K skipped" line,
and exits non-zero when a test failed (77, meson's "skipped", when every
test skipped or the setup skipped). The shared helpers: check/eq/wait_for,
Ctx (a test's directory, processes, config, daemons), nginx() (an nginx
serving one server block), wait_port(), free_port(), the demo corpus, and
the protocol client of protoclient.py.
"""
import argparse
import ctypes
import hashlib
import http.server
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The protocol client, re-exported: dtest.Client, dtest.Timeout, dtest.parse_stats.
from protoclient import Client, Timeout, parse_stats  # noqa: E402,F401

ARGS = None
TESTS = []
ROOT = None  # the mkdtemp() directory of this run
_SHARED = {}
# A command breachd runs under: `meson test --setup valgrind` sets it to
# valgrind and its options (tests/README.md, "Memory checking").
WRAPPER = shlex.split(os.environ.get("BREACHD_TEST_WRAPPER", ""))
# Waits and per-test timeouts stretch this much: BREACHD_TEST_SLOW, which the
# valgrind setup sets too.
SLOW = max(1, int(os.environ.get("BREACHD_TEST_SLOW", "1")))
TEST_TIMEOUT_S = 90 * SLOW  # per test, also under ASan


class Skip(Exception):
    """Raise to skip the running test (counted and reported as skipped)."""


def test(fn):
    TESTS.append(fn)
    return fn


def check(cond, msg="check failed"):
    if not cond:
        raise AssertionError(msg)


def eq(got, want, what=""):
    if got != want:
        raise AssertionError("%s: got %r, want %r" % (what or "value", got, want))


def wait_for(pred, timeout=10.0, what="condition", step=0.02):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(step)


def percentile(xs, q):
    """The q-quantile (0..1) of xs, nearest rank (NaN when xs is empty)."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(q * len(s) + 0.5)) - 1))
    return s[k]


def fd_links(pid):
    """{descriptor: what it points at} of pid's open descriptors (those that
    close while being read are left out)."""
    out = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            out[fd] = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
    return out


def sha1hex(s):
    if isinstance(s, str):
        s = s.encode()
    return hashlib.sha1(s).hexdigest().upper()


def passwords_in_new_ranges(known, stem, n):
    """n passwords STEM-0, STEM-1, ... whose SHA-1 prefixes are neither those
    of the passwords in known nor each other's: a mirror can leave their
    ranges out without losing anything else."""
    taken = {sha1hex(p)[:5] for p in known}
    out = []
    i = 0
    while len(out) < n:
        p = "%s-%d" % (stem, i)
        i += 1
        if sha1hex(p)[:5] not in taken:
            taken.add(sha1hex(p)[:5])
            out.append(p)
    return out


def rand_hash(rng):
    return "%040X" % rng.getrandbits(160)


def breachd_argv(*args, clock=None):
    """The command line of a breachd process, under BREACHD_TEST_WRAPPER;
    with a Clock, of the test build breachd-testclock (next to breachd)."""
    exe = ARGS.breachd
    if clock is not None:
        exe = os.path.join(os.path.dirname(exe), "breachd-testclock")
    return WRAPPER + [exe] + list(args)


class Clock:
    """The driven time of breachd-testclock (tests/README.md, "Driven
    time"): the seconds written to a file that breachd adds to both its
    clocks. advance() moves them forward and returns once every daemon on
    this clock has moved its clocks and its pending timers (the ones then
    due run: idle connections, the canary, the purge)."""

    def __init__(self, ctx, name="clock"):
        self.path = ctx.path(name)
        self.offset = 0.0
        self.daemons = []
        self._write()

    def _write(self):
        with open(self.path + ".tmp", "w") as f:
            f.write("%.6f\n" % self.offset)
        os.replace(self.path + ".tmp", self.path)

    def _seen(self, d):
        try:
            with open("%s.%d" % (self.path, d.pid)) as f:
                return float(f.read()) >= self.offset - 1e-6
        except (OSError, ValueError):
            return False

    def advance(self, seconds):
        self.offset += seconds
        self._write()
        for d in self.daemons:
            wait_for(lambda: d.proc.poll() is not None or self._seen(d), 10 * SLOW,
                     "breachd %d to take the time +%gs" % (d.pid, self.offset))

    def env(self):
        return {"BREACHD_TEST_CLOCK": self.path}


def is_slow():
    """True when breachd runs slower than a plain build: ASan, or valgrind."""
    return bool(WRAPPER) or is_asan()


def is_asan():
    """True when breachd is a sanitizer build (slower: bounds are widened)."""
    if "asan" not in _SHARED:
        try:
            out = subprocess.run(["ldd", ARGS.breachd], capture_output=True, text=True).stdout
        except OSError:
            out = ""
        _SHARED["asan"] = "libasan" in out or "libubsan" in out
    return _SHARED["asan"]


# ---- processes ---------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    # The child is killed if the test runner dies (meson timeout, ^C).
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def base_env(extra=None):
    env = dict(os.environ)
    for k in list(env):
        if (k.startswith("BREACHD_") or k.startswith("LISTEN_") or k in (
                "NOTIFY_SOCKET", "JOURNAL_STREAM", "SOURCE_DATE_EPOCH") or
                k.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")):
            del env[k]
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
    return env


class Ctx:
    """One test's directory (ROOT/dirname, by default its name) and
    processes."""

    def __init__(self, name, dirname=None):
        self.name = name
        self.dir = os.path.join(ROOT, dirname or name)
        os.mkdir(self.dir)
        self.procs = []
        self.daemons = []

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def spawn(self, argv, env=None, stdout=None, stderr=None, **kw):
        p = subprocess.Popen(argv, env=base_env(env), stdin=subprocess.DEVNULL,
                             stdout=stdout, stderr=stderr, preexec_fn=_die_with_parent, **kw)
        self.procs.append(p)
        return p

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    p.kill()
                except ProcessLookupError:
                    pass
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        for d in self.daemons:
            d.close_log()

    # -- helpers that build things --

    def breachctl(self, *args, env=None, check_rc=True):
        r = subprocess.run([ARGS.breachctl] + list(args), env=base_env(env), capture_output=True,
                           text=True, timeout=60)
        if check_rc and r.returncode != 0:
            raise AssertionError("breachctl %s: exit %d: %s" % (" ".join(args), r.returncode,
                                                                 r.stderr.strip()))
        return r

    def build_filter(self, inp, out, generation=1, fp_bits=None, epoch=None):
        args = ["filter", "build", "--kind", "password-sha1", "--input", inp, "--output", out,
                "--generation", str(generation)]
        if fp_bits:
            args += ["--fp-bits", str(fp_bits)]
        self.breachctl(*args, env={"SOURCE_DATE_EPOCH": epoch} if epoch is not None else None)
        return out

    def faultserver(self):
        state = self.path("fault")
        os.makedirs(state, exist_ok=True)
        p = self.spawn([ARGS.faultserver, state], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
        line = p.stdout.readline()
        check(line.strip().isdigit(), "faultserver did not print its port")
        return int(line)

    def nginx(self, mirror, location=None):
        """nginx serving mirror/PREFIX.txt at /range/PREFIX (its files in
        the test's nginx/); returns the port. location: another location
        block (its text) instead."""
        if location is None:
            location = "location /range/ { alias %s/; try_files $uri.txt =404; }" % mirror
        return nginx(self, "nginx", location)

    def config(self, name="breachd.conf", socket_path=None, **sections):
        """Write a config. sections: daemon={...}, passwords={...}, ... merged
        over the defaults below; a value None drops the key."""
        conf = {
            "daemon": {"socket": socket_path or self.path("breachd.sock"), "log_level": "info",
                       # RELOAD is for root by default; a non-root run is its own admin.
                       "admin_users": "root" if os.getuid() == 0 else str(os.getuid()),
                       # Run as a plain user, the tests' filters are that user's:
                       # breachd accepts them only with its development key.
                       "trust_own_filters": "no" if os.geteuid() == 0 else "yes"},
            "passwords": {"filter": "", "upstream": ""},
            "ntlm": {"upstream": ""},  # the default is HIBP: tests never leave the host
            "cache": {"path": self.path("cache")},
        }
        for sec, kv in sections.items():
            conf.setdefault(sec, {}).update(kv)
        path = self.path(name)
        with open(path + ".tmp", "w") as f:
            for sec, kv in conf.items():
                f.write("[%s]\n" % sec)
                for k, v in kv.items():
                    if v is not None:
                        f.write("%s = %s\n" % (k, v))
        os.replace(path + ".tmp", path)
        return path

    def daemon(self, conf, env=None, wait=True, **kw):
        """A breachd on conf; clock=Clock(ctx): the test build, on driven time."""
        d = Daemon(self, conf, env, **kw)
        self.daemons.append(d)
        if wait:
            d.wait_ready()
        return d


NGINX = "/usr/sbin/nginx"
NGINX_HEAD = """daemon off;
master_process off;
worker_processes 1;
pid %(dir)s/nginx.pid;
error_log %(dir)s/error.log warn;
events { worker_connections %(connections)d; }
http {
%(head)s    access_log %(dir)s/access.log%(log_format)s;
    client_body_temp_path %(dir)s/tmp/body;
    proxy_temp_path %(dir)s/tmp/proxy;
    fastcgi_temp_path %(dir)s/tmp/fastcgi;
    uwsgi_temp_path %(dir)s/tmp/uwsgi;
    scgi_temp_path %(dir)s/tmp/scgi;
    default_type text/plain;
"""


def nginx_conf(dirname, servers, connections=256, head="", log_format=""):
    """The nginx.conf of a private nginx (no daemon, one worker; its pid,
    logs and temp files under dirname): servers are the http block's server
    blocks, head lines before access_log (a log_format), log_format the
    access log's format name."""
    return NGINX_HEAD % dict(dir=dirname, connections=connections, head=head,
                             log_format=" " + log_format if log_format else "") + servers + "}\n"


def nginx(ctx, name, server):
    """An nginx of ctx (stopped with the test) on a free port of 127.0.0.1,
    its config, logs (error.log, access.log) and temp files in ctx's
    directory NAME, serving one server block whose lines (after listen) are
    server; returns the port. Skips the test when nginx is not installed."""
    if not os.path.exists(NGINX):
        raise Skip("nginx is not installed")
    d = ctx.path(name)
    os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
    conf = os.path.join(d, "nginx.conf")
    for attempt in range(5):  # a port taken between free_port() and nginx
        port = free_port()
        with open(conf, "w") as f:
            f.write(nginx_conf(d, "    server {\n        listen 127.0.0.1:%d;\n        %s\n    }\n"
                               % (port, server)))
        p = ctx.spawn([NGINX, "-p", d, "-e", d + "/error.log", "-c", conf],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if wait_port(port, p, 5):
            return port
        p.kill()
        p.wait()
    raise AssertionError("nginx did not start (see %s/error.log)" % d)


def wait_port(port, proc, timeout):
    """True once 127.0.0.1:port accepts a connection; False when proc exits
    or timeout seconds pass first."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.02)
    return False


def can_bind(addr, family=socket.AF_INET):
    """Whether this host has the local address addr (127.0.0.2, ::1 with
    AF_INET6) to bind a test's client or server to."""
    s = socket.socket(family)
    try:
        s.bind((addr, 0))
        return True
    except OSError:
        return False
    finally:
        s.close()


def serve_http(handler):
    """A threading HTTP server on 127.0.0.1 (a free port: its
    server_address[1]) answering with the BaseHTTPRequestHandler class
    handler in a daemon thread; shutdown() and server_close() stop it."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def send_text(handler, body):
    """handler's answer: 200, text/plain, the bytes body."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def no_upstream_stats(d, keys=("upstream_fetches", "upstream_transfers", "upstream_decoys",
                                 "cache_entries")):
    """The running daemon d's STATS show nothing fetched, sent or cached
    (each of keys 0): answered on the host. The STATS, for more checks."""
    st = d.stats()
    for k in keys:
        eq(st.get(k, 0), 0, "STATS " + k)
    return st


def nginx_log_empty(ctx):
    """The test's nginx (ctx.path("nginx")) logged no request at all."""
    log = ctx.path("nginx", "access.log")
    eq(open(log).read() if os.path.exists(log) else "", "", "nginx access log")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    def __init__(self, ctx, conf, env=None, sock=None, pass_fds=(), argv_extra=(), clock=None,
                 tracer=()):
        """tracer: a command breachd runs under (strace ... --): proc is then
        the tracer's, pid breachd's once wait_ready found it."""
        self.ctx = ctx
        self.conf = conf
        self.sock = sock or conf_socket(conf)
        self.log_path = ctx.path("breachd-%d.log" % len(ctx.daemons))
        self._log = open(self.log_path, "wb")
        self.clock = clock
        if clock is not None:
            env = dict(env or {}, **clock.env())
        self.traced = bool(tracer)
        argv = list(tracer) + breachd_argv("--config", conf, "--foreground", *argv_extra,
                                           clock=clock)
        self.proc = ctx.spawn(argv, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                              pass_fds=pass_fds)
        self.pid = self.proc.pid
        if clock is not None:
            clock.daemons.append(self)

    def close_log(self):
        if not self._log.closed:
            self._log.close()

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def wait_ready(self, timeout=20):
        end = time.monotonic() + timeout * SLOW
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise AssertionError("breachd exited %d at start:\n%s" % (self.proc.returncode,
                                                                          self.log()))
            try:
                c = Client(self.sock, timeout=2)
            except OSError:
                time.sleep(0.02)
                continue
            try:
                c.send("ready PING\n")
                if c.line() == "ready PONG":
                    self._find_traced()
                    return
            finally:
                c.close()
            time.sleep(0.02)
        raise AssertionError("breachd not ready after %ds:\n%s" % (timeout, self.log()))

    def _find_traced(self):
        """Under a tracer, pid becomes the traced breachd's (the tracer's one
        child)."""
        path = "/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)
        if not getattr(self, "traced", False) or self.pid != self.proc.pid or not os.path.exists(path):
            return
        with open(path) as f:
            kids = f.read().split()
        exe = os.path.realpath(ARGS.breachd)
        for k in kids:
            try:
                if os.path.realpath("/proc/%s/exe" % k) == exe:
                    self.pid = int(k)
            except OSError:
                pass

    def client(self, timeout=10):
        return Client(self.sock, timeout=timeout)

    def stats(self):
        c = self.client()
        try:
            return c.stats()
        finally:
            c.close()

    def send_signal(self, sig):
        os.kill(self.pid, sig)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Signal and wait; returns the exit status."""
        if self.proc.poll() is None:
            os.kill(self.pid, sig)
        try:
            rc = self.proc.wait(timeout=timeout * SLOW)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("breachd did not stop within %ds" % timeout)
        self.close_log()
        return rc

    def stop_ok(self):
        rc = self.stop()
        if rc != 0:
            raise AssertionError("breachd exited %d:\n%s" % (rc, self.log()[-4000:]))


def conf_socket(conf):
    sec = None
    with open(conf) as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                sec = line.strip("[]")
            elif sec == "daemon" and (line.startswith("socket ") or line.startswith("socket=")):
                return line.split("=", 1)[1].strip()
    raise AssertionError("no socket in " + conf)


# ---- shared data ------------------------------------------------------------

class Corpus:
    """The demo corpus (data/demo/make-corpus), a filter over all of it, and
    a mirror of some of its ranges (every range of MIRRORED sampled hashes,
    each file complete: creating thousands of files is slow on some disks)."""

    MIRRORED = 400

    def __init__(self, d):
        self.dir = d
        self.counts = {}
        with open(os.path.join(d, "corpus.txt")) as f:
            for line in f:
                h, c = line.strip().split(":")
                self.counts[h] = int(c)
        self.mirror = os.path.join(d, "mirror")
        self.txt = os.path.join(d, "corpus.txt")
        self.filter = os.path.join(d, "demo.bfuse")  # generation 1
        self.password = sha1hex("password")
        check(self.password in self.counts, "'password' is not in the demo corpus")
        rng = random.Random(2026)
        prefixes = {h[:5] for h in rng.sample(sorted(self.counts), self.MIRRORED)}
        prefixes.add(self.password[:5])
        self.mirrored = sorted(h for h in self.counts if h[:5] in prefixes)
        write_range(self.mirror, {h: self.counts[h] for h in self.mirrored})

    def present(self, n, rng=None):
        """n hashes of the corpus whose range file exists."""
        rng = rng or random.Random(7)
        return rng.sample(self.mirrored, n)

    def absent(self, rng):
        while True:
            h = rand_hash(rng)
            if h not in self.counts:
                return h


def corpus():
    if "corpus" not in _SHARED:
        d = os.path.join(ROOT, "corpus")
        r = subprocess.run([os.path.join(ARGS.source_root, "data", "demo", "make-corpus"), d,
                            "--random", "2000"], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            if "no word list" in r.stderr:
                raise Skip("make-corpus: no word list (install john-data)")
            raise AssertionError("make-corpus failed: " + r.stderr)
        c = Corpus(d)
        r = subprocess.run([ARGS.breachctl, "filter", "build", "--kind", "password-sha1",
                            "--input", c.txt, "--output", c.filter, "--generation", "1"],
                           env=base_env(), capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "filter build: " + r.stderr)
        _SHARED["corpus"] = c
    return _SHARED["corpus"]


def filter_says(ctx, filt, hashes):
    """Offline query: {hash: True for maybe, False for no}."""
    out = {}
    hashes = list(hashes)
    for i in range(0, len(hashes), 500):
        part = hashes[i:i + 500]
        r = ctx.breachctl("filter", "query", filt, *part)
        ans = r.stdout.split()
        eq(len(ans), len(part), "filter query answers")
        for h, a in zip(part, ans):
            out[h] = a == "maybe"
    return out


def write_range(mirror, entries):
    """Write per-prefix files: entries {hash40: count}."""
    os.makedirs(mirror, exist_ok=True)
    by = {}
    for h, c in entries.items():
        by.setdefault(h[:5], []).append("%s:%d" % (h[5:], c))
    for p, lines in by.items():
        with open(os.path.join(mirror, p + ".txt"), "w", newline="") as f:
            f.write("\r\n".join(lines) + "\r\n")


# ---- the runner -------------------------------------------------------------

def tempdir(prefix, parent=None, mode=None):
    """A new directory under parent (default $TMPDIR, else /tmp) named
    PREFIXxxxxxxxx; mode: its permissions (default 0700)."""
    parent = parent or os.environ.get("TMPDIR") or "/tmp"
    d = tempfile.mkdtemp(prefix=prefix, dir=parent)
    if mode is not None:
        os.chmod(d, mode)
    return d


def _alarm(signum, frame):
    raise Timeout("test took longer than %ds" % TEST_TIMEOUT_S)


def _parse_args(options):
    ap = argparse.ArgumentParser()
    ap.add_argument("--breachd", required=True)
    ap.add_argument("--breachctl", required=True)
    ap.add_argument("--faultserver")
    ap.add_argument("--source-root", required=True)
    for name, kw in (options or {}).items():
        ap.add_argument(name, **kw)
    ap.add_argument("--keep", action="store_true", help="keep the temp directory")
    ap.add_argument("only", nargs="*", help="run only tests whose name contains one of these")
    return ap.parse_args()


def _run_one(fn, new_ctx):
    """Run one test: "ok", "FAIL" or "SKIP (why)"."""
    ctx = new_ctx(fn.__name__)
    signal.alarm(TEST_TIMEOUT_S)
    try:
        fn(ctx)
        return "ok"
    except Skip as e:
        return "SKIP (%s)" % e
    except BaseException as e:  # noqa: B902 - report everything, go on
        if isinstance(e, KeyboardInterrupt):
            raise
        print("---- %s failed:" % fn.__name__)
        traceback.print_exc(file=sys.stdout)
        for d in getattr(ctx, "daemons", ()):
            try:
                print("---- breachd log (%s), last lines:\n%s" % (d.log_path, d.log()[-3000:]))
            except OSError:
                pass
        return "FAIL"
    finally:
        signal.alarm(0)
        ctx.cleanup()


def run(options=None, setup=None, teardown=None, new_ctx=Ctx, prefix="breachd-dt.",
        parent=None, mode=None):
    """Parse the arguments (the common ones and options {"--name": argparse
    keywords}), make ROOT (tempdir(prefix, parent, mode)), call setup() (a
    Skip there skips the whole run), run every registered test in a context
    new_ctx(name), then teardown() (also after an exception), which returns
    the number of failures it found. Returns the exit status."""
    global ARGS, ROOT
    ARGS = _parse_args(options)
    ROOT = tempdir(prefix, parent, mode)
    signal.signal(signal.SIGALRM, _alarm)
    counts = {"ok": 0, "FAIL": 0, "SKIP": 0}
    t_all = time.monotonic()
    try:
        if setup:
            t0 = time.monotonic()
            try:
                setup()
            except Skip as e:
                print("SKIP: %s" % e)
                return 77
            print("%-44s %-6s %5.2fs" % ("(setup)", "ok", time.monotonic() - t0), flush=True)
        for fn in TESTS:
            if ARGS.only and not any(o in fn.__name__ for o in ARGS.only):
                continue
            t0 = time.monotonic()
            status = _run_one(fn, new_ctx)
            counts[status.split()[0]] += 1
            print("%-44s %-6s %5.2fs" % (fn.__name__, status, time.monotonic() - t0), flush=True)
    finally:
        if teardown:
            counts["FAIL"] += teardown()
        if ARGS.keep:
            print("temp directory kept: %s" % ROOT)
        else:
            shutil.rmtree(ROOT, ignore_errors=True)
    print("total %.1fs" % (time.monotonic() - t_all))
    print("%d passed, %d failed, %d skipped" % (counts["ok"], counts["FAIL"], counts["SKIP"]),
          flush=True)
    if counts["FAIL"]:
        return 1
    return 77 if counts["SKIP"] and not counts["ok"] else 0


def main(**kw):
    """run(**kw), then exit with its status."""
    # Files the tests copy into place are then 0644 whatever the caller's
    # umask: breachd refuses a filter that group or others may write.
    os.umask(0o022)
    sys.exit(run(**kw))
