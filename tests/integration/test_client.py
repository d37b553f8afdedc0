#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachctl password | sha1 | url | ping | stats | reload against a real
breachd (issue 6, "Client library" and "breachctl").

A cmocka test of lib/client.c would need a daemon anyway, so the library is
tested through breachctl: real daemons on temp sockets (a small password
filter with --fp-bits 32, a file:// mirror missing some ranges for UNKNOWN,
a URL filter and its range mirror, the faultserver's slow upstream), and, for
what a real daemon will not do on demand (answers out of order by design,
dripping answers, closing half way, connection-level refusals, a full listen
backlog), small fake daemons in this process. Every password typed or piped
is checked never to appear in breachctl's output. Standard library only;
dtest.py is the harness.
"""
import errno
import json
import os
import pty
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import termios
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, sha1hex, test  # noqa: E402

# Passwords of the test corpus and their counts; "Tr0ub4dor&3" is the one
# typed at the terminal.
KNOWN = {"password": 3861493, "123456": 37359195, "Tr0ub4dor&3": 4242, "letmein": 577,
         "hunter2": 23}
KNOWN.update({"pwned-%04d" % i: i + 1 for i in range(300)})
HIT = "00000000000000000000000000000000001"  # in every faultserver range: count 42
_FX = {}


class Fixture:
    """Built once: pw.bfuse (every KNOWN and LOST password), a mirror with
    the ranges of KNOWN only (so LOST ones are UNKNOWN upstream-error), a URL
    filter with its range mirror minus the range of LOST_URL."""

    def __init__(self, d):
        os.makedirs(d)
        self.dir = d
        rng = random.Random(6)
        taken = {sha1hex(p)[:5] for p in KNOWN}
        self.lost = []
        i = 0
        while len(self.lost) < 3:
            p = "lost-range-%d" % i
            i += 1
            if sha1hex(p)[:5] not in taken:
                taken.add(sha1hex(p)[:5])
                self.lost.append(p)
        corpus = os.path.join(d, "corpus.txt")
        with open(corpus, "w") as f:
            for p, n in KNOWN.items():
                f.write("%s:%d\n" % (sha1hex(p), n))
            for p in self.lost:
                f.write("%s:%d\n" % (sha1hex(p), 99))
        self.mirror = os.path.join(d, "mirror")
        dtest.write_range(self.mirror, {sha1hex(p): n for p, n in KNOWN.items()})
        self.filter = os.path.join(d, "pw.bfuse")
        run_ok([dtest.ARGS.breachctl, "filter", "build", "--kind", "password-sha1", "--input",
                corpus, "--output", self.filter, "--fp-bits", "32"])
        # Clean passwords: random, not in the corpus (a 2^-32 false positive aside).
        self.clean = ["clean-%016x" % rng.getrandbits(64) for _ in range(50)]
        # URLs.
        self.url_blocked = {"http://evil.example.com/login": ("phishing", "evil.example.com/login"),
                            "http://malware.example/dl/x.exe": ("malware", "malware.example/")}
        self.url_lost = "http://lost.example.net/x"
        feeds = []
        for name, lines, cat in [("phish.txt", ["http://evil.example.com/login"], "phishing"),
                                 ("mal.txt", ["malware.example"], "malware"),
                                 ("lost.txt", ["http://lost.example.net/x"], "lost")]:
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            feeds += ["--input", "%s=%s" % (path, cat)]
        self.url_filter = os.path.join(d, "url.bbf")
        self.url_ranges = os.path.join(d, "url-ranges")
        run_ok([dtest.ARGS.breachctl, "filter", "build", "--kind", "url-sha256", "--output",
                self.url_filter, "--ranges-dir", self.url_ranges, "--fpr", "1e-9"] + feeds)
        import hashlib
        lost_key = hashlib.sha256(b"lost.example.net/x").hexdigest().upper()
        others = {hashlib.sha256(e.encode()).hexdigest().upper()[:5]
                  for e in ("evil.example.com/login", "malware.example/")}
        check(lost_key[:5] not in others, "unlucky: URL range prefixes collide")
        os.unlink(os.path.join(self.url_ranges, lost_key[:5] + ".txt"))


def run_ok(argv):
    r = subprocess.run(argv, env=dtest.base_env(), capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "%s: exit %d: %s" % (" ".join(argv), r.returncode, r.stderr))
    return r


def fx():
    if "fx" not in _FX:
        _FX["fx"] = Fixture(os.path.join(dtest.ROOT, "fixture"))
    return _FX["fx"]


def start(ctx, upstream=None, env=None, name="breachd.conf", sock=None, **sections):
    f = fx()
    pw = {"filter": f.filter, "upstream": upstream or "file://%s/{prefix}.txt" % f.mirror}
    pw.update(sections.pop("passwords", {}))
    urls = {"filter": f.url_filter, "upstream": "file://%s/{prefix}.txt" % f.url_ranges}
    urls.update(sections.pop("urls", {}))
    cache = {"path": ctx.path(name + ".cache")}
    # The default rate (50 fetches a second) would make the big batch, with
    # its hundreds of ranges, take seconds.
    sections.setdefault("upstream", {}).setdefault("rate", 100000)
    conf = ctx.config(name=name, socket_path=sock, passwords=pw, urls=urls, cache=cache,
                      **sections)
    return ctx.daemon(conf, env=env)


class Run:
    def __init__(self, r, secs):
        self.rc = r.returncode
        self.out = r.stdout
        self.err = r.stderr
        self.lines = r.stdout.splitlines()
        self.secs = secs

    def __repr__(self):
        return "exit %d after %.2fs\n--- stdout:\n%s--- stderr:\n%s" % (
            self.rc, self.secs, self.out[:3000], self.err[:3000])


def ctl(*args, sock=None, stdin=None, env=None, prefix=(), timeout=60):
    """Run breachctl; sock goes in $BREACHD_SOCKET."""
    e = dict(env or {})
    if sock:
        e["BREACHD_SOCKET"] = sock
    t0 = time.monotonic()
    r = subprocess.run(list(prefix) + [dtest.ARGS.breachctl] + list(args), env=dtest.base_env(e),
                       input=stdin if stdin is not None else "", capture_output=True, text=True,
                       timeout=timeout)
    run = Run(r, time.monotonic() - t0)
    no_sanitizer_report(run.err)
    return run


def no_sanitizer_report(err):
    """A sanitizer build reports on stderr; an exit status alone could pass
    (ASan exits 1, which is also "pwned")."""
    check("Sanitizer" not in err and "runtime error:" not in err, "sanitizer report:\n" + err)


def want_rc(r, rc, what):
    check(r.rc == rc, "%s: want exit %d, got %r" % (what, rc, r))


def no_leak(r, secrets):
    for s in secrets:
        check(s not in r.out and s not in r.err, "password %r leaked: %r" % (s, r))


def one_stderr_line(r, *needles):
    lines = r.err.splitlines()
    check(len(lines) == 1, "want one line on stderr: %r" % r)
    for n in needles:
        check(n in lines[0], "%r not in %r" % (n, lines[0]))
    return lines[0]


def expected(pw):
    f = fx()
    if pw in KNOWN:
        return "PWNED %d" % KNOWN[pw]
    if pw in f.lost:
        return "UNKNOWN upstream-error"
    return "CLEAN"


# ---- password ------------------------------------------------------------------

@test
def password_stdin_in_order_never_echoed(ctx):
    f = fx()
    d = start(ctx)
    pws = ["password", f.clean[0], f.lost[0], "hunter2", f.clean[1], "Tr0ub4dor&3", "letmein",
           f.clean[2], "123456", f.lost[1]]
    # CRLF and a last line without LF are taken as well.
    stdin = "\n".join(pws[:4]) + "\r\n" + "\n".join(pws[4:])
    r = ctl("password", sock=d.sock, stdin=stdin)
    eq(r.lines, [expected(p) for p in pws], "one answer per input, in order")
    want_rc(r, 1, "pwned among unknown and clean")
    eq(r.err, "", "stderr")
    no_leak(r, pws)
    # An empty line is an (empty) password and gets its line too.
    r = ctl("password", sock=d.sock, stdin="\n%s\n\n" % f.clean[3])
    eq(r.lines, ["CLEAN"] * 3, "empty lines")
    want_rc(r, 0, "all clean")
    # No line at all: nothing was checked, which is not "clean".
    r = ctl("password", sock=d.sock, stdin="")
    want_rc(r, 2, "empty stdin")
    eq(r.out, "", "stdout")
    one_stderr_line(r, "no password")
    # Passwords are never arguments.
    r = ctl("password", "hunter2", sock=d.sock)
    want_rc(r, 2, "password as an argument")
    check("command line" in r.err, "reason: %r" % r)
    st = d.stats()
    eq(st["requests_pw"], 13, "PW requests the daemon saw")
    d.stop_ok()
    log = d.log()
    for p in pws:
        check(sha1hex(p) not in log and sha1hex(p).lower() not in log, "hash of %r logged" % p)
        check(p == "password" or p not in log, "%r in the daemon log" % p)


@test
def password_quiet_and_statuses(ctx):
    f = fx()
    d = start(ctx)
    for pws, rc in [([f.clean[0]], 0), (["password"], 1), ([f.lost[0]], 3),
                    ([f.clean[0], f.lost[0]], 3), ([f.lost[0], "hunter2", f.clean[1]], 1),
                    (["hunter2", f.lost[0]], 1), ([f.clean[0]] * 5, 0)]:
        r = ctl("password", "--quiet", sock=d.sock, stdin="\n".join(pws) + "\n")
        want_rc(r, rc, "--quiet %r" % pws)
        eq((r.out, r.err), ("", ""), "--quiet prints nothing (%r)" % pws)
    r = ctl("password", "-q", sock=d.sock, stdin="password\n")
    want_rc(r, 1, "-q")
    eq(r.out + r.err, "", "-q prints nothing")
    d.stop_ok()


@test
def password_json(ctx):
    f = fx()
    d = start(ctx)
    pws = ["password", f.clean[0], f.lost[0], 'a"quote\\back']
    r = ctl("password", "--json", sock=d.sock, stdin="\n".join(pws) + "\n")
    want_rc(r, 1, "--json")
    objs = [json.loads(ln) for ln in r.lines]
    eq(objs, [{"input": 1, "status": "PWNED", "count": KNOWN["password"]},
              {"input": 2, "status": "CLEAN"},
              {"input": 3, "status": "UNKNOWN", "reason": "upstream-error"},
              {"input": 4, "status": "CLEAN"}], "JSON lines")
    no_leak(r, pws)
    d.stop_ok()


@test
def password_tty_prompt_no_echo(ctx):
    d = start(ctx)
    secret = "Tr0ub4dor&3"
    out, status, echo_at_prompt = pty_run(["password"], d.sock, secret + "\n")
    check(echo_at_prompt is False, "echo is on at the prompt")
    check(out.startswith("Password: "), "prompt: %r" % out)
    check(secret not in out, "the password was echoed: %r" % out)
    eq(out.split("\n", 1)[1].replace("\r", "").strip(), "PWNED %d" % KNOWN[secret], "result")
    eq(status, 1, "exit status")
    out, status, _ = pty_run(["password", "--json"], d.sock, fx().clean[0] + "\n")
    check(fx().clean[0] not in out, "echoed")
    eq(json.loads(out.split("\n", 1)[1]), {"input": 1, "status": "CLEAN"}, "--json at a tty")
    eq(status, 0, "exit status")
    # ^C at the prompt: breachctl dies of SIGINT and the echo is back on.
    out, status, _ = pty_run(["password"], d.sock, "\x03", want_echo_after=True)
    eq(status, -signal.SIGINT, "killed by SIGINT")
    d.stop_ok()


def pty_run(args, sock, typed, want_echo_after=False):
    """Run breachctl on a new pty as its controlling terminal; wait for the
    prompt, record whether echo is on, type `typed`, return (output, exit
    status or -signal, echo at the prompt)."""
    env = dtest.base_env({"BREACHD_SOCKET": sock})
    pid, fd = pty.fork()
    if pid == 0:  # child: the pty is stdin/stdout/stderr and the controlling tty
        try:
            os.execve(dtest.ARGS.breachctl, [dtest.ARGS.breachctl] + args, env)
        finally:
            os._exit(127)
    out = b""
    echo = None
    try:
        end = time.monotonic() + 30
        while b"Password: " not in out:
            out += pty_read(fd, end)
        # The terminal settings while the prompt waits (Linux: the master
        # reports the slave's termios).
        echo = bool(termios.tcgetattr(fd)[3] & termios.ECHO)
        os.write(fd, typed.encode())
        if want_echo_after:
            # The signal handler restores the settings before the process
            # dies; the pty stays open on our side.
            _, st = os.waitpid(pid, 0)
            pid = None
            check(termios.tcgetattr(fd)[3] & termios.ECHO, "echo left off after ^C")
            return out.decode(errors="replace"), -os.WTERMSIG(st) if os.WIFSIGNALED(st) else \
                os.WEXITSTATUS(st), echo
        while True:
            chunk = pty_read(fd, end, eof_ok=True)
            if not chunk:
                break
            out += chunk
    finally:
        if pid:
            try:
                _, st = os.waitpid(pid, 0)
            except ChildProcessError:
                st = 0
        os.close(fd)
    status = -os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)
    no_sanitizer_report(out.decode(errors="replace"))
    return out.decode(errors="replace"), status, echo


def pty_read(fd, end, eof_ok=False):
    left = end - time.monotonic()
    check(left > 0, "pty: timed out")
    r, _, _ = select.select([fd], [], [], left)
    check(r, "pty: nothing to read")
    try:
        return os.read(fd, 4096)
    except OSError as e:  # EIO: the child closed the slave
        if eof_ok and e.errno == errno.EIO:
            return b""
        raise


@test
def password_batch_10000_in_order(ctx):
    f = fx()
    d = start(ctx)
    rng = random.Random(10)
    pws = []
    known = list(KNOWN)
    for i in range(10000):
        k = rng.random()
        if k < 0.05:
            pws.append(rng.choice(known))
        elif k < 0.06:
            pws.append(rng.choice(f.lost))
        else:
            pws.append("batch-%d-%016x" % (i, rng.getrandbits(64)))
    r = ctl("password", sock=d.sock, stdin="\n".join(pws) + "\n", timeout=120)
    want_rc(r, 1, "10,000 passwords")
    eq(len(r.lines), 10000, "answer count")
    bad = [(i, p, a) for i, (p, a) in enumerate(zip(pws, r.lines)) if a != expected(p)]
    check(not bad, "%d answers wrong or out of order, first: %r" % (len(bad), bad[:3]))
    eq(r.err, "", "stderr")
    st = d.stats()
    eq(st["requests_pw"], 10000, "requests_pw")
    check(st["errors_busy"] == 0, "the client overran the daemon's in-flight limit")
    print("    10,000 passwords answered in %.2fs" % r.secs)
    d.stop_ok()


# ---- sha1, url, exit statuses ------------------------------------------------------

@test
def sha1_hashes(ctx):
    f = fx()
    d = start(ctx)
    pw = sha1hex("password")
    r = ctl("sha1", pw, pw.lower(), sha1hex(f.clean[0]), sha1hex(f.lost[0]), sock=d.sock)
    eq(r.lines, ["PWNED %d" % KNOWN["password"]] * 2 + ["CLEAN", "UNKNOWN upstream-error"],
       "sha1 answers")
    want_rc(r, 1, "sha1")
    for bad in ["zz", pw[:39], pw + "0", "G" * 40, "", "hunter2"]:
        r = ctl("sha1", sha1hex(f.clean[0]), bad, sock=d.sock)
        want_rc(r, 2, "invalid hex %r" % bad)
        eq(r.lines[0], "CLEAN", "the valid one is answered")
        check(re.fullmatch(r"ERR bad-request .+", r.lines[1]), "ERR line: %r" % r)
        eq(len(r.lines), 2, "lines")
        if bad:
            check(bad not in r.lines[1] and bad not in r.err, "input echoed: %r" % r)
    r = ctl("sha1", "--json", "nothex", pw, sock=d.sock)
    objs = [json.loads(ln) for ln in r.lines]
    eq(objs[0]["status"], "ERR", "JSON ERR")
    check(objs[0]["reason"].startswith("bad-request "), "reason %r" % objs[0])
    eq(objs[1], {"input": 2, "status": "PWNED", "count": KNOWN["password"]}, "JSON PWNED")
    want_rc(r, 2, "2 before 1")
    r = ctl("sha1", sock=d.sock)
    want_rc(r, 2, "no argument")
    d.stop_ok()


@test
def exit_status_rule_several_inputs(ctx):
    """The first that applies of 2, 1, 3, 0, whatever the order."""
    f = fx()
    d = start(ctx)
    kinds = {0: sha1hex(f.clean[0]), 1: sha1hex("hunter2"), 2: "not-hex", 3: sha1hex(f.lost[2])}
    import itertools
    cases = 0
    for n in (1, 2, 3, 4):
        for combo in itertools.permutations([0, 1, 2, 3], n):
            want = next(s for s in (2, 1, 3, 0) if s in combo)
            r = ctl("sha1", "--quiet", *[kinds[k] for k in combo], sock=d.sock)
            want_rc(r, want, "inputs giving %r" % (combo,))
            cases += 1
    # Repeats, and the same through password / url.
    r = ctl("sha1", kinds[0], kinds[0], kinds[3], kinds[0], sock=d.sock)
    want_rc(r, 3, "clean, unknown")
    r = ctl("password", "--quiet", sock=d.sock, stdin="%s\n%s\n%s\n" % (f.lost[0], f.clean[0],
                                                                      "letmein"))
    want_rc(r, 1, "password: unknown, clean, pwned")
    r = ctl("url", "--quiet", "http://fine.example.org/", fx().url_lost, sock=d.sock)
    want_rc(r, 3, "url: safe, unknown")
    r = ctl("url", "--quiet", fx().url_lost, "http://evil.example.com/login", sock=d.sock)
    want_rc(r, 1, "url: unknown, blocked")
    r = ctl("url", "--quiet", "http://evil.example.com/login", "mailto:a@example.com",
            sock=d.sock)
    want_rc(r, 2, "url: blocked, error")
    print("    %d combinations" % cases)
    d.stop_ok()


@test
def url_checks(ctx):
    f = fx()
    d = start(ctx)
    urls = ["http://evil.example.com/login", "http://fine.example.org/a?b=c",
            "https://malware.example/dl/x.exe", f.url_lost, "HTTP://EVIL.example.com:80/./login"]
    r = ctl("url", *urls, sock=d.sock)
    eq(r.lines, ["BLOCKED phishing evil.example.com/login", "SAFE", "BLOCKED malware malware.example/",
                 "UNKNOWN upstream-error", "BLOCKED phishing evil.example.com/login"], "url answers")
    want_rc(r, 1, "url")
    r = ctl("url", "--json", urls[0], urls[1], sock=d.sock)
    eq([json.loads(ln) for ln in r.lines],
       [{"input": 1, "status": "BLOCKED", "category": "phishing",
         "expression": "evil.example.com/login"}, {"input": 2, "status": "SAFE"}], "url --json")
    # Secret-class input: refused by the daemon, never echoed.
    r = ctl("url", "mailto:alice@example.com", "bob@example.org", urls[1], sock=d.sock)
    want_rc(r, 2, "secret-class")
    check(all(ln.startswith("ERR secret-class ") for ln in r.lines[:2]), "ERR lines %r" % r)
    eq(r.lines[2], "SAFE", "the next URL")
    check("alice" not in r.out + r.err and "bob" not in r.out + r.err, "e-mail echoed: %r" % r)
    # A URL that cannot be sent (space, control byte, too long) is answered
    # locally, and the ones after it are still sent (the batch used to stall
    # after such a request until the timeout).
    r = ctl("url", "--timeout", "3000", urls[1], "http://a b/", "http://x/\x01",
            "http://e.example/" + "a" * 9000, urls[0], sock=d.sock)
    eq(r.lines[0], "SAFE", "first")
    for ln in r.lines[1:4]:
        check(ln.startswith("ERR bad-request not sent"), "local ERR: %r" % r)
    eq(r.lines[4], "BLOCKED phishing evil.example.com/login", "after the unsendable ones")
    want_rc(r, 2, "unsendable URLs")
    check(r.secs < 2.5, "took %.2fs: stalled" % r.secs)
    # Without a URL filter: UNKNOWN filter-unavailable.
    d.stop_ok()
    d2 = start(ctx, name="nourl.conf", sock=ctx.path("nourl.sock"), urls={"filter": "",
                                                                          "upstream": ""})
    r = ctl("url", urls[0], sock=d2.sock)
    eq(r.lines, ["UNKNOWN filter-unavailable"], "no URL filter")
    want_rc(r, 3, "unknown")
    d2.stop_ok()


# ---- ping, stats, reload -----------------------------------------------------------------

@test
def ping_and_stats(ctx):
    d = start(ctx)
    r = ctl("ping", sock=d.sock)
    eq((r.rc, r.lines, r.err), (0, ["PONG"], ""), "ping")
    r = ctl("ping", "--json", sock=d.sock)
    eq(json.loads(r.out), {"status": "PONG"}, "ping --json")
    r = ctl("ping", "--quiet", sock=d.sock)
    eq((r.rc, r.out, r.err), (0, "", ""), "ping --quiet")
    r = ctl("ping", "extra", sock=d.sock)
    want_rc(r, 2, "ping with an argument")
    ctl("sha1", sha1hex("password"), sock=d.sock)
    r = ctl("stats", sock=d.sock)
    want_rc(r, 0, "stats")
    kv = {}
    for ln in r.lines:
        m = re.fullmatch(r"([a-z0-9_]+)=(\S*)", ln)
        check(m, "stats line %r" % ln)
        kv[m.group(1)] = m.group(2)
    for k, v in [("filter_loaded", "1"), ("url_filter_loaded", "1"), ("requests_pw", "1"),
                 ("pw_pwned", "1"), ("circuit", "closed")]:
        eq(kv.get(k), v, "stats %s" % k)
    r = ctl("stats", "--json", sock=d.sock)
    eq(len(r.lines), 1, "stats --json is one line")
    obj = json.loads(r.out)
    eq(set(obj), set(kv), "the same keys")
    for k, v in kv.items():  # (counters may have moved between the two runs)
        check(isinstance(obj[k], int) if v.isdigit() else obj[k] == v, "JSON %s: %r" % (k, obj))
    eq(obj["requests_stats"], int(kv["requests_stats"]) + 1, "requests_stats")
    check(isinstance(obj["uptime_seconds"], int) and obj["circuit"] == "closed", "types")
    d.stop_ok()


@test
def reload_admin_and_not(ctx):
    d = start(ctx, daemon={"socket_mode": "0666"})
    r = ctl("reload", sock=d.sock)
    eq((r.rc, r.lines), (0, ["RELOADED"]), "root (admin_users = root) reloads: %r" % r)
    r = ctl("reload", "--json", sock=d.sock)
    eq(json.loads(r.out), {"status": "RELOADED"}, "reload --json")
    eq(d.stats()["reloads"], 2, "reloads")
    d.stop_ok()
    # Not an admin: this uid is not in admin_users (works without root).
    other = 65534 if os.getuid() != 65534 else 65533
    d = start(ctx, name="b.conf", sock=ctx.path("b.sock"), daemon={"admin_users": str(other)})
    r = ctl("reload", sock=d.sock)
    want_rc(r, 2, "non-admin reload")
    eq(r.out, "", "stdout")
    one_stderr_line(r, "reload", "forbidden")
    eq(d.stats()["reloads"], 0, "no reload happened")
    d.stop_ok()
    # As uid 65534 through setpriv (root only): not an admin, then an admin;
    # then a peer not in allowed_users, refused at the connection.
    setpriv = nobody_prefix()
    os.chmod(dtest.ROOT, 0o711)
    os.chmod(ctx.dir, 0o711)
    d = start(ctx, name="c.conf", sock=ctx.path("c.sock"), daemon={"socket_mode": "0666"})
    r = ctl("reload", sock=d.sock, prefix=setpriv)
    want_rc(r, 2, "uid 65534 reload")
    one_stderr_line(r, "forbidden")
    r = ctl("ping", sock=d.sock, prefix=setpriv)
    eq((r.rc, r.lines), (0, ["PONG"]), "uid 65534 may still ping: %r" % r)
    d.stop_ok()
    d = start(ctx, name="e.conf", sock=ctx.path("e.sock"),
              daemon={"socket_mode": "0666", "admin_users": "root,65534"})
    r = ctl("reload", sock=d.sock, prefix=setpriv)
    eq((r.rc, r.lines), (0, ["RELOADED"]), "uid 65534 as an admin: %r" % r)
    d.stop_ok()
    d = start(ctx, name="f.conf", sock=ctx.path("f.sock"),
              daemon={"socket_mode": "0666", "allowed_users": "root"})
    r = ctl("sha1", sha1hex("password"), "--timeout", "5000", sock=d.sock, prefix=setpriv)
    want_rc(r, 2, "refused peer")
    ln = one_stderr_line(r, d.sock, "refused this client", "forbidden")
    check("closed" in ln, "says the connection is closed: %r" % ln)
    check(r.lines == [] or r.lines[0].startswith("ERR "), "stdout %r" % r)
    d.stop_ok()
    # A socket the uid cannot open: the errno is named.
    d = start(ctx, name="g.conf", sock=ctx.path("g.sock"), daemon={"socket_mode": "0600"})
    r = ctl("ping", sock=d.sock, prefix=setpriv)
    want_rc(r, 2, "0600 socket")
    one_stderr_line(r, d.sock, os.strerror(errno.EACCES))
    d.stop_ok()


def nobody_prefix():
    if os.geteuid() != 0:
        raise dtest.Skip("not root: the setpriv part (uid 65534) is not run")
    sp = shutil.which("setpriv")
    if not sp:
        raise dtest.Skip("setpriv is missing (util-linux)")
    return [sp, "--reuid=65534", "--regid=65534", "--clear-groups"]


# ---- the socket, unreachable daemons ------------------------------------------------------

@test
def daemon_unreachable(ctx):
    missing = ctx.path("no-such.sock")
    for args, stdin in [(["ping"], ""), (["password"], "hunter2\npassword\n"),
                        (["sha1", sha1hex("x")], ""), (["url", "http://a.example/"], ""),
                        (["stats", "--json"], ""), (["reload"], ""), (["password", "--quiet"],
                                                                      "hunter2\n")]:
        r = ctl(*args, sock=missing, stdin=stdin)
        want_rc(r, 2, "%r, no daemon" % args)
        eq(r.out, "", "stdout of %r" % args)
        one_stderr_line(r, missing, os.strerror(errno.ENOENT))
        no_leak(r, ["hunter2", "password\n"])
    # A socket file nobody listens on: ECONNREFUSED.
    dead = ctx.path("dead.sock")
    s = socket.socket(socket.AF_UNIX)
    s.bind(dead)
    s.close()
    r = ctl("ping", sock=dead)
    want_rc(r, 2, "refused")
    one_stderr_line(r, dead, os.strerror(errno.ECONNREFUSED))
    # A path too long for sun_path.
    long = ctx.path("x" * 120 + ".sock")
    r = ctl("ping", sock=long)
    want_rc(r, 2, "long path")
    one_stderr_line(r, "too long")
    # The daemon stops: a second run after SIGTERM fails the same way.
    d = start(ctx)
    eq(ctl("ping", sock=d.sock).rc, 0, "up")
    d.stop_ok()
    r = ctl("ping", sock=d.sock)
    want_rc(r, 2, "stopped daemon")
    one_stderr_line(r, d.sock)


@test
def socket_option_positions(ctx):
    d = start(ctx)
    missing = ctx.path("missing.sock")
    pw = sha1hex("password")
    cases = [
        (["--socket", d.sock, "ping"], None),
        (["ping", "--socket", d.sock], None),
        (["ping", "--socket=" + d.sock], None),
        (["ping"], d.sock),                                   # $BREACHD_SOCKET
        (["--socket", d.sock, "ping"], missing),              # --socket beats the environment
        (["ping", "--socket", d.sock], missing),
        (["--socket", missing, "ping", "--socket", d.sock], None),  # the later one wins
        (["sha1", pw, "--socket", d.sock], None),             # after the arguments too
        (["url", "--socket", d.sock, "--json", "http://fine.example.org/"], None),
    ]
    for args, env_sock in cases:
        r = ctl(*args, sock=env_sock)
        want_rc(r, 1 if args[0] == "sha1" else 0, "%r with BREACHD_SOCKET=%r" % (args, env_sock))
    # Neither: the compiled-in default (nothing there in a test) is named.
    r = ctl("ping", env={"BREACHD_SOCKET": ""})
    if r.rc != 0:  # (unless a breachd serves this host)
        want_rc(r, 2, "default socket")
        check(re.search(r"cannot connect to /\S+\.sock", r.err), "names the default: %r" % r)
    r = ctl("--socket", missing, "ping", sock=d.sock)
    one_stderr_line(r, missing)
    # "--" ends the options.
    r = ctl("--socket", d.sock, "url", "--", "--json", "http://fine.example.org/")
    eq(r.lines[1], "SAFE", "after --: %r" % r)
    d.stop_ok()


# ---- timeouts, failures half way -------------------------------------------------------

@test
def client_timeout_slow_upstream(ctx):
    f = fx()
    port = ctx.faultserver()
    d = start(ctx, upstream="http://127.0.0.1:%d/delay/{prefix}" % port,
              env={"BREACHD_DRAIN_TIMEOUT_MS": 300})
    # hunter2 is a filter maybe: its range is asked upstream, which takes
    # 3 s; the clean ones are answered at once (out of order).
    pws = [f.clean[0], "hunter2", f.clean[1]]
    r = ctl("password", "--timeout", "200", sock=d.sock, stdin="\n".join(pws) + "\n")
    want_rc(r, 2, "timeout")
    check(r.secs < 2.0, "took %.2fs" % r.secs)
    eq(r.lines[0], "CLEAN", "answered before the timeout")
    check(re.fullmatch(r"ERR .*timed out.*200 ms", r.lines[1]), "timed-out line: %r" % r)
    eq(r.lines[2], "CLEAN", "answered before the timeout, out of order")
    one_stderr_line(r, d.sock, "timed out", "200 ms")
    no_leak(r, pws)
    r = ctl("sha1", "--timeout", "200", sha1hex("letmein"), sock=d.sock)
    want_rc(r, 2, "sha1 timeout")
    one_stderr_line(r, "timed out")
    # Longer than the upstream: answered (the faultserver's range does not
    # hold it: CLEAN).
    r = ctl("sha1", "--timeout", "8000", sha1hex("hunter2"), sock=d.sock)
    eq((r.rc, r.lines), (0, ["CLEAN"]), "patient client")
    r = ctl("--socket", d.sock, "sha1", "--timeout", "0", HIT + "ABCDE")
    want_rc(r, 2, "--timeout 0 refused")
    check("--timeout" in r.err, "message %r" % r)
    d.stop()


class FakeDaemon:
    """A Unix socket server in this process: handler(conn_index, lines_so_far,
    sock) is called on each request line and does what the test wants."""

    def __init__(self, path, handler, backlog=16):
        self.path = path
        self.handler = handler
        self.srv = socket.socket(socket.AF_UNIX)
        self.srv.bind(path)
        self.srv.listen(backlog)
        self.ids = []  # per connection: the request ids seen
        self.threads = []
        self.stopping = False
        self.t = threading.Thread(target=self.serve, daemon=True)
        self.t.start()

    def serve(self):
        while not self.stopping:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            ids = []
            self.ids.append(ids)
            t = threading.Thread(target=self.conn, args=(c, ids), daemon=True)
            self.threads.append(t)
            t.start()

    def conn(self, c, ids):
        buf = b""
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    break
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    rid, _, rest = line.decode().partition(" ")
                    ids.append(rid)
                    if self.handler(len(ids), rid, rest, c) == "close":
                        c.shutdown(socket.SHUT_RDWR)
                        return
        except OSError:
            pass
        finally:
            c.close()

    def stop(self):
        self.stopping = True
        try:
            self.srv.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.srv.close()
        self.t.join(5)
        for t in self.threads:
            t.join(5)


@test
def fake_daemon_failures(ctx):
    """What the real daemon will not do on demand."""
    hashes = [sha1hex("fake-%d" % i) for i in range(6)]

    # 1. Answers 2 of 4, then closes: the 2 are printed, the rest ERR, one
    #    line on stderr, exit 2.
    def half(n, rid, rest, c):
        if n <= 2:
            c.sendall(("%s PWNED %d\n" % (rid, n)).encode())
        elif n == 4:
            return "close"
    fk = FakeDaemon(ctx.path("half.sock"), half)
    r = ctl("sha1", *hashes[:4], sock=fk.path)
    fk.stop()
    want_rc(r, 2, "closed half way")
    eq(r.lines[:2], ["PWNED 1", "PWNED 2"], "the answers that came")
    check(all(re.fullmatch(r"ERR .*connection closed by breachd.*", ln) for ln in r.lines[2:])
          and len(r.lines) == 4, "the others: %r" % r)
    one_stderr_line(r, "connection closed by breachd")

    # 2. A connection-level refusal ("- ERR busy ...; connection closed").
    def busy(n, rid, rest, c):
        c.sendall(b"- ERR busy too many connections; connection closed\n")
        return "close"
    fk = FakeDaemon(ctx.path("busy.sock"), busy)
    r = ctl("sha1", hashes[0], hashes[1], sock=fk.path)
    fk.stop()
    want_rc(r, 2, "refusal")
    one_stderr_line(r, "busy too many connections; connection closed")
    eq(len(r.lines), 2, "one line per input: %r" % r)

    # 3. Answers out of order (reverse, after all came in): printed in order.
    pending = []

    def reverse(n, rid, rest, c):
        pending.append(rid)
        if n == 5:
            for i, p in enumerate(reversed(pending)):
                c.sendall(("%s PWNED %d\n" % (p, 100 + int(p))).encode())
    fk = FakeDaemon(ctx.path("rev.sock"), reverse)
    r = ctl("sha1", *hashes[:5], sock=fk.path)
    fk.stop()
    want_rc(r, 1, "out of order")
    ids = [int(x) for x in fk.ids[0]]
    eq(r.lines, ["PWNED %d" % (100 + i) for i in ids], "printed in input order")

    # 4. Slow but steady: one answer every 150 ms; --timeout 400 is about
    #    progress, not the whole batch (6 x 150 ms > 400 ms).
    def steady(n, rid, rest, c):
        time.sleep(0.15)
        c.sendall(("%s CLEAN\n" % rid).encode())
    fk = FakeDaemon(ctx.path("steady.sock"), steady)
    r = ctl("sha1", "--timeout", "400", *hashes, sock=fk.path)
    fk.stop()
    eq((r.rc, r.lines), (0, ["CLEAN"] * 6), "steady answers: %r" % r)
    check(r.secs > 0.8, "%.2fs: not slow enough to tell" % r.secs)

    # 5. Ids are never reused on a connection, even across breachctl's
    #    batches of 256 (a late answer of a failed batch must never be
    #    taken for a later request's).
    def echo_clean(n, rid, rest, c):
        c.sendall(("%s CLEAN\n" % rid).encode())
    fk = FakeDaemon(ctx.path("ids.sock"), echo_clean)
    r = ctl("password", sock=fk.path, stdin="".join("p%d\n" % i for i in range(600)))
    fk.stop()
    eq((r.rc, len(r.lines)), (0, 600), "600 over one connection")
    eq(len(fk.ids), 1, "one connection")
    eq(len(set(fk.ids[0])), 600, "distinct ids")

    # 6. A stale answer (an id this batch did not send) and garbage are
    #    ignored; a non-closing "- ERR" line does not fail the batch.
    def noisy(n, rid, rest, c):
        c.sendall(("999 PWNED 5\n- ERR bad-id noise\nnot-a-line\n%s CLEAN\n" % rid).encode())
    fk = FakeDaemon(ctx.path("noisy.sock"), noisy)
    r = ctl("sha1", hashes[0], hashes[1], sock=fk.path)
    fk.stop()
    eq((r.rc, r.lines, r.err), (0, ["CLEAN", "CLEAN"], ""), "noise ignored")

    # 7. Timeout while nothing comes at all.
    fk = FakeDaemon(ctx.path("mute.sock"), lambda n, rid, rest, c: None)
    r = ctl("ping", "--timeout", "300", sock=fk.path)
    fk.stop()
    want_rc(r, 2, "mute daemon")
    one_stderr_line(r, "timed out", "300 ms")
    check(0.25 < r.secs < 2.0, "timed out after %.2fs" % r.secs)


@test
def full_listen_backlog(ctx):
    """A full backlog: a non-blocking AF_UNIX connect() fails with EAGAIN and
    does not go on in the background; the client retries until its timeout
    (it used to call the socket connected and fail with ENOTCONN)."""
    path = ctx.path("backlog.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(0)
    fillers = []
    try:
        while True:  # fill the backlog
            c = socket.socket(socket.AF_UNIX)
            c.setblocking(False)
            try:
                c.connect(path)
            except BlockingIOError:
                c.close()
                break
            fillers.append(c)
            check(len(fillers) < 100, "the backlog never filled")
        r = ctl("ping", "--timeout", "400", sock=path)
        want_rc(r, 2, "backlog full")
        one_stderr_line(r, path, "backlog")
        check(0.35 < r.secs < 3, "gave up after %.2fs" % r.secs)

        # The daemon accepts within the timeout: the ping goes through.
        def accept_later():
            time.sleep(0.3)
            for _ in fillers:  # first in the queue; they send nothing
                srv.accept()[0].close()
            a, _ = srv.accept()
            a.settimeout(5)
            try:
                data = a.recv(100)
                if data.endswith(b" PING\n"):
                    a.sendall(data.split(b" ")[0] + b" PONG\n")
                    time.sleep(0.2)
            except OSError:
                pass
            a.close()
        t = threading.Thread(target=accept_later, daemon=True)
        t.start()
        r = ctl("ping", "--timeout", "3000", sock=path)
        t.join(10)
        eq((r.rc, r.lines), (0, ["PONG"]), "accepted late: %r" % r)
        check(r.secs > 0.25, "did not wait (%.2fs)" % r.secs)
    finally:
        for c in fillers:
            c.close()
        srv.close()


if __name__ == "__main__":
    dtest.main()
