#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachctl sha1 | url | ping | stats | reload against a real breachd
("Client library" and "breachctl"): answers and invalid input, the
exit status rule over several inputs, URL checks (secret-class and
unsendable input), ping and stats (text and --json), reload as an admin and
not (as uid 65534 through setpriv when root), daemons that are not there,
and where --socket may stand.

A cmocka test of lib/proto/client.c would need a daemon anyway, so the library is
tested through breachctl. The fixture (filter, mirrors, start(), ctl()) is
clientfx.py; breachctl password is test_client_password.py, timeouts and
fake daemons test_client_faults.py. Standard library only; dtest.py is the
harness.
"""
import errno
import json
import os
import re
import shutil
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, sha1hex, test  # noqa: E402
from clientfx import KNOWN, ctl, fx, no_leak, one_stderr_line, start, want_rc  # noqa: E402

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
    # stats_users: STATS without RELOAD.
    d = start(ctx, name="b.conf", sock=ctx.path("b.sock"),
              daemon={"admin_users": str(other), "stats_users": str(os.getuid())})
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
    ln = one_stderr_line(r, d.sock, os.strerror(errno.EACCES))
    check("add the user to the breachd group or to allowed_users" in ln, "hint: %r" % ln)
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
        ln = one_stderr_line(r, missing, os.strerror(errno.ENOENT))
        check("is breachd running? (systemctl status breachd.socket; without systemd: service "
              "breachd status)" in ln, "hint: %r" % ln)
        no_leak(r, ["hunter2", "password\n"])
    # A socket file nobody listens on: ECONNREFUSED.
    dead = ctx.path("dead.sock")
    s = socket.socket(socket.AF_UNIX)
    s.bind(dead)
    s.close()
    r = ctl("ping", sock=dead)
    want_rc(r, 2, "refused")
    one_stderr_line(r, dead, os.strerror(errno.ECONNREFUSED), "is breachd running?")
    # A directory where the socket should be: said as such.
    r = ctl("ping", sock=ctx.dir)
    want_rc(r, 2, "directory")
    one_stderr_line(r, ctx.dir, "is a directory, not breachd's socket")
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


if __name__ == "__main__":
    dtest.main()
