#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachctl password against a real breachd ("Client library" and
"breachctl"): passwords on stdin answered one line each and in order (10,000
of them too), --quiet exit statuses, --json, and the prompt at a terminal
with echo off (also after ^C), Ctrl-D and empty lines at the prompt.
Every password typed or piped is checked
never to appear in breachctl's output nor in the daemon's log.

The fixture (filter, mirrors, start(), ctl()) is clientfx.py; the other
commands are test_client.py, timeouts and fake daemons test_client_faults.py.
Standard library only; dtest.py is the harness.
"""
import errno
import json
import os
import pty
import random
import select
import signal
import sys
import termios
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, sha1hex, test  # noqa: E402
from clientfx import (KNOWN, ctl, expected, fx, no_leak, no_sanitizer_report,  # noqa: E402
                      one_stderr_line, start, want_rc)

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
def password_print_hash(ctx):
    # --print-hash: each password's SHA-1 (NT with --ntlm), uppercase hex, one
    # a line; no daemon is asked (the socket does not exist).
    from ntfx import nthash
    nosock = ctx.path("no-daemon.sock")
    pws = ["password", "p\u00e4ssw\u00f6rd", "", "Tr0ub4dor&3"]
    r = ctl("password", "--print-hash", sock=nosock, stdin="\n".join(pws) + "\n")
    want_rc(r, 0, "--print-hash")
    eq(r.lines, [sha1hex(p) for p in pws], "SHA-1 lines")
    eq(r.err, "", "stderr")
    r = ctl("password", "--print-hash", "--ntlm", sock=nosock, stdin="\n".join(pws))
    want_rc(r, 0, "--print-hash --ntlm")
    eq(r.lines, [nthash(p) for p in pws], "NT lines")
    eq(r.lines[0], "8846F7EAEE8FB117AD06BDD830B7586C", "NT of 'password'")
    r = ctl("password", "--print-hash", "--json", sock=nosock, stdin="password\n")
    want_rc(r, 2, "--print-hash --json")
    eq(r.out, "", "stdout")
    # At a terminal: the prompt, no echo, the hash.
    secret = "Tr0ub4dor&3"
    out, status, echo_at_prompt = pty_run(["password", "--print-hash", "--ntlm"], nosock,
                                          secret + "\n")
    check(echo_at_prompt is False and secret not in out, "echo: %r" % out)
    eq(out.split("\n", 1)[1].replace("\r", "").strip(), nthash(secret), "tty NT hash")
    eq(status, 0, "exit status")


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
    # --ntlm at a tty: hashed to NT here; this daemon has no NTLM range API
    before = d.stats()["requests_nt"]
    out, status, echo_at_prompt = pty_run(["password", "--ntlm"], d.sock, secret + "\n")
    check(echo_at_prompt is False and secret not in out, "--ntlm: echo: %r" % out)
    eq(out.split("\n", 1)[1].replace("\r", "").strip(), "UNKNOWN no-upstream",
       "--ntlm result")
    eq((status, d.stats()["requests_nt"]), (3, before + 1), "one NT request")
    # ^C at the prompt: breachctl dies of SIGINT and the echo is back on.
    out, status, _ = pty_run(["password"], d.sock, "\x03", want_echo_after=True)
    eq(status, -signal.SIGINT, "killed by SIGINT")
    d.stop_ok()


@test
def password_tty_end_of_input_and_empty(ctx):
    d = start(ctx)
    secret = "Tr0ub4dor&3"
    # Ctrl-D at the prompt: no password given, quietly.
    out, status, _ = pty_run(["password"], d.sock, "\x04")
    eq(status, 2, "exit status after Ctrl-D")
    check("no password given" in out, "Ctrl-D: %r" % out)
    check("cannot read" not in out and "Input/output" not in out, "Ctrl-D is no error: %r" % out)
    eq(out.count("Password: "), 1, "prompts after Ctrl-D (%r)" % out)
    # An empty line is asked again once; then the password is checked.
    out, status, _ = pty_run(["password"], d.sock, ["\n", secret + "\n"])
    eq(out.count("Password: "), 2, "prompts (%r)" % out)
    check("empty password" in out, "the second prompt says why: %r" % out)
    check(secret not in out, "the password was echoed: %r" % out)
    eq(out.replace("\r", "").strip().split("\n")[-1], "PWNED %d" % KNOWN[secret], "result")
    eq(status, 1, "exit status")
    # Empty twice, or empty then Ctrl-D: refused, nothing sent.
    for typed in (["\n", "\n"], ["\n", "\x04"]):
        out, status, _ = pty_run(["password"], d.sock, typed)
        eq(status, 2, "exit status after %r" % typed)
        check("no password given" in out, "%r: %r" % (typed, out))
        eq(out.count("Password: "), 2, "prompts after %r (%r)" % (typed, out))
        check("CLEAN" not in out and "PWNED" not in out, "%r was checked: %r" % (typed, out))
    eq(d.stats()["requests_pw"], 1, "PW requests: only the password typed")
    d.stop_ok()


def pty_run(args, sock, typed, want_echo_after=False):
    """Run breachctl on a new pty as its controlling terminal; wait for the
    prompt, record whether echo is on, type `typed` (a list: each item after
    the next prompt), return (output, exit status or -signal, echo at the
    first prompt)."""
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
        for n, text in enumerate([typed] if isinstance(typed, str) else typed):
            while out.count(b"Password: ") <= n:
                out += pty_read(fd, end)
            # The terminal settings while the prompt waits (Linux: the
            # master reports the slave's termios).
            if echo is None:
                echo = bool(termios.tcgetattr(fd)[3] & termios.ECHO)
            os.write(fd, text.encode())
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


if __name__ == "__main__":
    dtest.main()
