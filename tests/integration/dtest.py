# SPDX-License-Identifier: MIT
"""Shared harness of the breachd daemon integration tests.

Every test runs real processes (breachd, breachctl, nginx, faultserver) in a
fresh directory under one mkdtemp() directory, talks to them only over Unix
sockets and 127.0.0.1, and stops every process it started. Standard library
only. A script registers its tests with @test and calls main(); it prints one
line per test and a final "N passed, M failed" line, and exits non-zero when a
test failed (77, meson's "skipped", when every test skipped).
"""
import argparse
import ctypes
import hashlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

ARGS = None
TESTS = []
ROOT = None  # the mkdtemp() directory of this run
_SHARED = {}
TEST_TIMEOUT_S = 90  # per test, also under ASan


class Skip(Exception):
    """Raise to skip the running test (counted and reported as skipped)."""


class Timeout(Exception):
    pass


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
    """One test's directory and processes."""

    def __init__(self, name):
        self.name = name
        self.dir = os.path.join(ROOT, name)
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
        """nginx serving mirror/PREFIX.txt at /range/PREFIX; returns the port.
        location: another location block (its text) instead."""
        if location is None:
            location = "location /range/ { alias %s/; try_files $uri.txt =404; }" % mirror
        if not os.path.exists("/usr/sbin/nginx"):
            raise Skip("nginx is not installed")
        d = self.path("nginx")
        os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
        for attempt in range(5):
            port = free_port()
            conf = os.path.join(d, "nginx.conf")
            with open(conf, "w") as f:
                f.write(NGINX_CONF % dict(dir=d, port=port, location=location))
            p = self.spawn(["/usr/sbin/nginx", "-p", d, "-e", d + "/error.log", "-c", conf],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            end = time.monotonic() + 5
            while time.monotonic() < end and p.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    return port
                except OSError:
                    time.sleep(0.02)
            p.kill()
            p.wait()
        raise AssertionError("nginx did not start (see %s/error.log)" % d)

    def config(self, name="breachd.conf", socket_path=None, **sections):
        """Write a config. sections: daemon={...}, passwords={...}, ... merged
        over the defaults below; a value None drops the key."""
        conf = {
            "daemon": {"socket": socket_path or self.path("breachd.sock"), "log_level": "info",
                       # RELOAD is for root by default; a non-root run is its own admin.
                       "admin_users": "root" if os.getuid() == 0 else str(os.getuid())},
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
        d = Daemon(self, conf, env, **kw)
        self.daemons.append(d)
        if wait:
            d.wait_ready()
        return d


NGINX_CONF = """daemon off;
master_process off;
worker_processes 1;
pid %(dir)s/nginx.pid;
error_log %(dir)s/error.log warn;
events { worker_connections 256; }
http {
    access_log %(dir)s/access.log;
    client_body_temp_path %(dir)s/tmp/body;
    proxy_temp_path %(dir)s/tmp/proxy;
    fastcgi_temp_path %(dir)s/tmp/fastcgi;
    uwsgi_temp_path %(dir)s/tmp/uwsgi;
    scgi_temp_path %(dir)s/tmp/scgi;
    default_type text/plain;
    server {
        listen 127.0.0.1:%(port)d;
        %(location)s
    }
}
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    def __init__(self, ctx, conf, env=None, sock=None, pass_fds=(), argv_extra=()):
        self.ctx = ctx
        self.conf = conf
        self.sock = sock or conf_socket(conf)
        self.log_path = ctx.path("breachd-%d.log" % len(ctx.daemons))
        self._log = open(self.log_path, "wb")
        argv = [ARGS.breachd, "--config", conf, "--foreground"] + list(argv_extra)
        self.proc = ctx.spawn(argv, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                              pass_fds=pass_fds)
        self.pid = self.proc.pid

    def close_log(self):
        if not self._log.closed:
            self._log.close()

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def wait_ready(self, timeout=20):
        end = time.monotonic() + timeout
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
                    return
            finally:
                c.close()
            time.sleep(0.02)
        raise AssertionError("breachd not ready after %ds:\n%s" % (timeout, self.log()))

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
            rc = self.proc.wait(timeout=timeout)
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


class Client:
    """A protocol client with line buffering."""

    def __init__(self, path=None, timeout=10, sock=None):
        if sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            try:
                sock.connect(path)
            except OSError:
                sock.close()
                raise
        self.s = sock
        self.timeout = timeout
        self.buf = b""

    def close(self):
        self.s.close()

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.s.sendall(data)

    def line(self, timeout=None):
        """The next response line (str, without LF); None at EOF."""
        end = time.monotonic() + (timeout or self.timeout)
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                raise Timeout("no response line within %.1fs (have %r)" % (
                    timeout or self.timeout, self.buf[:200]))
            self.s.settimeout(left)
            try:
                chunk = self.s.recv(65536)
            except socket.timeout:
                continue
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                if self.buf:
                    raise AssertionError("EOF after a partial line %r" % self.buf[:200])
                return None
            self.buf += chunk
        ln, self.buf = self.buf.split(b"\n", 1)
        return ln.decode(errors="replace")

    def lines(self, n, timeout=None):
        out = []
        for _ in range(n):
            ln = self.line(timeout)
            if ln is None:
                raise AssertionError("EOF after %d of %d lines: %r" % (len(out), n, out))
            out.append(ln)
        return out

    def ask(self, req, timeout=None):
        """Send one request line and return its (only) answer."""
        self.send(req + "\n")
        ln = self.line(timeout)
        if ln is None:
            raise AssertionError("EOF instead of an answer to %r" % req)
        return ln

    def expect_eof(self, timeout=5):
        ln = self.line(timeout)
        if ln is not None:
            raise AssertionError("expected EOF, got %r" % ln)

    def stats(self):
        ln = self.ask("st STATS")
        check(ln.startswith("st STATS "), "bad STATS answer %r" % ln)
        return parse_stats(ln[len("st STATS "):])


def parse_stats(text):
    out = {}
    for kv in text.split():
        k, v = kv.split("=", 1)
        out[k] = int(v) if v.isdigit() else v
    return out


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

def _alarm(signum, frame):
    raise Timeout("test took longer than %ds" % TEST_TIMEOUT_S)


def main():
    global ARGS, ROOT
    ap = argparse.ArgumentParser()
    ap.add_argument("--breachd", required=True)
    ap.add_argument("--breachctl", required=True)
    ap.add_argument("--faultserver", required=True)
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the temp directory")
    ap.add_argument("only", nargs="*", help="run only tests whose name contains one of these")
    ARGS = ap.parse_args()
    tmp = os.environ.get("TMPDIR") or "/tmp"
    ROOT = tempfile.mkdtemp(prefix="breachd-dt.", dir=tmp)
    signal.signal(signal.SIGALRM, _alarm)
    passed = failed = skipped = 0
    t_all = time.monotonic()
    try:
        for fn in TESTS:
            name = fn.__name__
            if ARGS.only and not any(o in name for o in ARGS.only):
                continue
            ctx = Ctx(name)
            t0 = time.monotonic()
            signal.alarm(TEST_TIMEOUT_S)
            try:
                fn(ctx)
                status = "ok"
            except Skip as e:
                status = "SKIP (%s)" % e
            except BaseException as e:  # noqa: B902 - report everything, go on
                if isinstance(e, KeyboardInterrupt):
                    raise
                status = "FAIL"
                print("---- %s failed:" % name)
                traceback.print_exc(file=sys.stdout)
                for d in ctx.daemons:
                    try:
                        print("---- breachd log (%s), last lines:\n%s" % (d.log_path,
                                                                        d.log()[-3000:]))
                    except OSError:
                        pass
            finally:
                signal.alarm(0)
                ctx.cleanup()
            if status == "ok":
                passed += 1
            elif status == "FAIL":
                failed += 1
            else:
                skipped += 1
            print("%-44s %-6s %5.2fs" % (name, status if len(status) < 6 else status,
                                         time.monotonic() - t0), flush=True)
    finally:
        if ARGS.keep:
            print("temp directory kept: %s" % ROOT)
        else:
            shutil.rmtree(ROOT, ignore_errors=True)
    print("total %.1fs%s" % (time.monotonic() - t_all, ", %d skipped" % skipped if skipped else ""))
    print("%d passed, %d failed" % (passed, failed), flush=True)
    if failed:
        sys.exit(1)
    if skipped and not passed:
        sys.exit(77)
    sys.exit(0)
