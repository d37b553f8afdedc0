#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Password-change hooks against a real breachd.

data/hooks/samba-check-password is run exactly the way Samba runs its
"check password script" (smb.conf(5); source4/dsdb/common/util.c): the
configured line through /bin/sh -c, the new password on standard input as
UTF-8 without a line break, standard input then closed,
SAMBA_CPS_ACCOUNT_NAME / SAMBA_CPS_USER_PRINCIPAL_NAME / SAMBA_CPS_FULL_NAME
in the environment, exit status 0 = acceptable, killed after 10 s. Samba
itself is not run here (no Samba AD DC or smbd in the test environment).

data/hooks/check-password is run as a batch pre-check in front of
chpasswd(8) / newusers(8) (a stand-in records whether the batch would have
been applied; the real tools would change this host's accounts).

Standard library only; dtest.py is the harness.
"""
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, sha1hex, test  # noqa: E402

KNOWN = {"password": 3861493, "p\u00e4ssw\u00f6rd": 77, "pa:ss": 5, "letmein": 577,
         "hunter2": 23, "Summer2024!": 1234}
_FX = {}
SAMBA_TIMEOUT_S = 10  # an AD DC kills the script after 10 s


class Fixture:
    def __init__(self, d):
        os.makedirs(d)
        self.lost = dtest.passwords_in_new_ranges(KNOWN, "lost", 2)
        corpus = os.path.join(d, "corpus.txt")
        with open(corpus, "w") as f:
            for p, n in list(KNOWN.items()) + [(p, 9) for p in self.lost]:
                f.write("%s:%d\n" % (sha1hex(p), n))
        self.mirror = os.path.join(d, "mirror")
        dtest.write_range(self.mirror, {sha1hex(p): n for p, n in KNOWN.items()})
        self.filter = os.path.join(d, "pw.bfuse")
        r = subprocess.run([dtest.ARGS.breachctl, "filter", "build", "--kind", "password-sha1",
                            "--input", corpus, "--output", self.filter, "--fp-bits", "32"],
                           env=dtest.base_env(), capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "filter build: " + r.stderr)
        rng = random.Random(3)
        self.clean = ["clean-%016x" % rng.getrandbits(64) for _ in range(20)]
        hooks = os.path.join(dtest.ARGS.source_root, "data", "hooks")
        self.samba = os.path.join(hooks, "samba-check-password")
        self.generic = os.path.join(hooks, "check-password")


def fx():
    if "fx" not in _FX:
        _FX["fx"] = Fixture(os.path.join(dtest.ROOT, "fixture"))
    return _FX["fx"]


def start(ctx):
    f = fx()
    conf = ctx.config(passwords={"filter": f.filter,
                                 "upstream": "file://%s/{prefix}.txt" % f.mirror},
                      upstream={"rate": 100000})
    return ctx.daemon(conf)


class Run:
    def __init__(self, rc, out, err, secs):
        self.rc, self.out, self.err, self.secs = rc, out, err, secs
        # A sanitizer build of breachctl reports on stderr (which the hooks
        # pass on); its exit status alone could look like a verdict.
        check("Sanitizer" not in err and "runtime error:" not in err,
              "sanitizer report:\n" + err)

    def __repr__(self):
        return "exit %d after %.2fs\n--- stdout:\n%s--- stderr:\n%s" % (
            self.rc, self.secs, self.out, self.err)


def hook_env(sock=None, **extra):
    env = {"BREACHCTL": dtest.ARGS.breachctl}
    if sock:
        env["BREACHD_SOCKET"] = sock
    env.update(extra)
    return dtest.base_env(env)


def samba(line, password, sock=None, account="alice", upn=None, full_name=None, env=None):
    """Run `line` the way Samba runs its check password script."""
    e = hook_env(sock, **(env or {}))
    e["SAMBA_CPS_ACCOUNT_NAME"] = account
    for k, v in (("SAMBA_CPS_USER_PRINCIPAL_NAME", upn), ("SAMBA_CPS_FULL_NAME", full_name)):
        if v is not None:
            e[k] = v
    t0 = time.monotonic()
    p = subprocess.Popen(["/bin/sh", "-c", line], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=e, preexec_fn=dtest._die_with_parent)
    try:
        out, err = p.communicate(password.encode("utf-8"), timeout=SAMBA_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise AssertionError("Samba would have killed the script after %d s" % SAMBA_TIMEOUT_S)
    r = Run(p.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
            time.monotonic() - t0)
    # ("password" itself is a word of the messages.)
    if password.strip() and password.strip().lower() != "password":
        check(password.strip() not in r.out + r.err, "password shown: %r" % r)
    return r


def generic(args, stdin, sock=None, env=None):
    t0 = time.monotonic()
    p = subprocess.run([fx().generic] + list(args), input=stdin.encode("utf-8"),
                       capture_output=True, env=hook_env(sock, **(env or {})), timeout=60)
    return Run(p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"),
               time.monotonic() - t0)


def no_leak(r, passwords):
    for p in passwords:
        check(p not in r.out and p not in r.err, "password %r shown: %r" % (p, r))


def mute_daemon(path):
    """A socket that accepts and never answers; returns a stop function."""
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(8)
    conns = []

    def serve():
        while True:
            try:
                conns.append(srv.accept()[0])
            except OSError:
                return
    t = threading.Thread(target=serve, daemon=True)
    t.start()

    def stop():
        srv.shutdown(socket.SHUT_RDWR)
        srv.close()
        t.join(5)
        for c in conns:
            c.close()
    return stop


# ---- Samba ------------------------------------------------------------------------


def seen(n):
    """A count as the hooks write it: plain thousands separators."""
    return "{:,}".format(n)

@test
def help_pages(ctx):
    # Both hooks answer --help (and -h) alike, as breachctl does: the usage
    # line and the whole page on standard output, exit status 0; an unknown
    # option is the usage line on standard error, exit status 2. Samba's
    # hook given --help with a password on standard input refuses it.
    hooks = os.path.join(dtest.ARGS.source_root, "data", "hooks")
    for name in ("check-password", "samba-check-password"):
        path = os.path.join(hooks, name)
        for opt in ("--help", "-h"):
            r = subprocess.run([path, opt], stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=30, env=hook_env())
            eq(r.returncode, 0, "%s %s: %s" % (name, opt, r.stderr))
            eq(r.stderr, "", "%s %s" % (name, opt))
            check(r.stdout.startswith("Usage: %s [" % name), r.stdout)
            for word in ("--on-unknown=reject|accept", "--on-error=reject|accept",
                         "--socket=PATH", "--timeout=MS", "BREACHCTL", "Exit status"):
                check(r.stdout.count(word) >= 1, "%s --help lacks %s:\n%s" % (name, word, r.stdout))
            check(len(r.stdout.splitlines()) >= 20, "%s --help is no full page" % name)
            check("SPDX" not in r.stdout and "set -u" not in r.stdout, r.stdout)
        if name == "samba-check-password":
            # --help in smb.conf, Samba writing the password: refused, not accepted
            r = samba(path + " --help", "letmein", sock=None)
            eq(r.rc, 2, r)
            check("refused" in r.err, r)
        r = subprocess.run([path, "--no-such-option"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=30, env=hook_env())
        eq(r.returncode, 2, name)
        eq(r.stdout, "", name)
        check("Usage: %s [" % name in r.stderr, r.stderr)


@test
def samba_clean_and_pwned(ctx):
    f = fx()
    d = start(ctx)
    line = f.samba
    r = samba(line, f.clean[0], d.sock)
    eq((r.rc, r.out, r.err), (0, "", ""), "clean password: accepted silently (%r)" % r)
    r = samba(line, "password", d.sock, upn="alice@example.com", full_name="Alice A.")
    eq(r.rc, 1, "pwned: %r" % r)
    eq(r.out, "", "stdout")
    # Samba's log: seen, never how often (docs/directories.md)
    eq(r.err.strip(), "samba-check-password: account alice: new password refused: it has been "
       "seen in data breaches", "message")
    # UTF-8 bytes exactly as Samba writes them, no line break; nothing trimmed.
    r = samba(line, "p\u00e4ssw\u00f6rd", d.sock)
    eq(r.rc, 1, "UTF-8 password: %r" % r)
    check("seen in data breaches" in r.err and "77" not in r.err, "no count: %r" % r)
    check(seen(1234567) == "1,234,567" and seen(577) == "577", "grouping")
    for variant in ["password ", " password", "Password", "password\t"]:
        r = samba(line, variant, d.sock)
        eq(r.rc, 0, "%r is another password: %r" % (variant, r))
    # A trailing line break (a script author's echo) changes nothing.
    r = samba(line, "password\n", d.sock)
    eq(r.rc, 1, "with a line break")
    # An account name with control characters cannot forge log lines.
    r = samba(line, "hunter2", d.sock, account="bob\nsamba-check-password: fake")
    eq(r.rc, 1, "pwned")
    eq(len(r.err.splitlines()), 1, "one line: %r" % r)
    check("account bob?samba-check-password? fake:" in r.err, "sanitized: %r" % r)
    # Options in the smb.conf line, socket by option.
    r = samba("%s --socket=%s --timeout=2000" % (line, d.sock), "letmein")
    eq(r.rc, 1, "--socket: %r" % r)
    # A bad option (a typo in smb.conf) refuses, never accepts.
    r = samba(line + " --on-unknwon=accept", f.clean[0], d.sock)
    eq(r.rc, 2, "bad option: %r" % r)
    check("unknown argument" in r.err, "message %r" % r)
    st = d.stats()
    eq(st["pw_pwned"], 5, "pwned answers")
    d.stop_ok()


def start_similar(ctx):
    """breachd with an offline similar_filter of the fixture's corpus."""
    f = fx()
    corpus = ctx.path("corpus.txt")
    with open(corpus, "w") as out:
        for p, n in KNOWN.items():
            out.write("%s:%d\n" % (sha1hex(p), n))
    sim = ctx.path("similar.bfuse")
    ctx.breachctl("filter", "build", "--kind", "password-sha1", "--offline", "--input", corpus,
                  "--output", sim)
    conf = ctx.config(passwords={"filter": f.filter, "similar_filter": sim,
                                 "upstream": "file://%s/{prefix}.txt" % f.mirror})
    return ctx.daemon(conf)


SAMBA_SMALL = "it is a small change of a password seen in data breaches"
SMALL = re.compile(r"it is a small change of a password seen 1,[12][0-9]{2} times in data "
                   r"breaches")  # Summer2024!: 1,234, an offline count at most 10% below


@test
def similar_in_both_hooks(ctx):
    f = fx()
    d = start_similar(ctx)
    tweak = "Summer2024!!"  # not in the corpus: Summer2024! with a repeat
    r = samba(f.samba + " --similar=reject", tweak, d.sock)
    check(r.rc == 1 and SAMBA_SMALL in r.err and "new password refused" in r.err, "%r" % r)
    r = samba(f.samba, tweak, d.sock)  # warn, the default
    check(r.rc == 0 and SAMBA_SMALL in r.err and "accepted with a warning" in r.err, "%r" % r)
    r = samba(f.samba + " --similar=off", tweak, d.sock)
    eq((r.rc, r.err), (0, ""), "off: %r" % r)
    r = samba(f.samba + " --similar=reject --similar-min-count=2000", tweak, d.sock)
    eq((r.rc, r.err), (0, ""), "min count: %r" % r)
    r = samba(f.samba + " --similar=maybe", tweak, d.sock)
    eq(r.rc, 2, "bad value: %r" % r)
    batch = "alice:%s\nbob:%s\n" % (tweak, f.clean[0])
    r = generic(["--format=chpasswd", "--similar=reject"], batch, d.sock)
    check(r.rc == 1 and re.search(r"line 1 \(alice\): refused: " + SMALL.pattern, r.err) and
          "bob" not in r.err, "%r" % r)
    r = generic(["--format=chpasswd"], batch, d.sock)
    check(r.rc == 0 and re.search(r"line 1 \(alice\): accepted with a warning: " + SMALL.pattern,
                                  r.err), "%r" % r)
    no_leak(r, [tweak, f.clean[0], "Summer2024!"])
    d.stop_ok()


def start_banned(ctx):
    """breachd with banned terms: the site's name and a terms file."""
    f = fx()
    terms = ctx.path("terms.txt")
    with open(terms, "w") as out:
        out.write("winter\n")
    conf = ctx.config(passwords={"filter": f.filter, "banned_terms": terms,
                                 "site_terms": "Contoso",
                                 "upstream": "file://%s/{prefix}.txt" % f.mirror})
    return ctx.daemon(conf)


@test
def banned_in_both_hooks(ctx):
    """The account's own names plus digits are refused and never sent to
    breachd (its PW count does not move); a strong password is accepted."""
    f = fx()
    d = start_banned(ctx)
    before = d.stats()["requests_pw"]
    for pw, kind, kw in (("Jsmith2024!", "the user's own name", {}),
                         ("Smith#1990", "the user's own name", {}),
                         ("Johnny99", "the user's own name", {"upn": "johnny@example.test"}),
                         ("C0ntoso2025", "the organisation's name", {}),
                         ("Winter2025", "a banned term", {})):
        r = samba(f.samba, pw, d.sock, account="jsmith", full_name="John Smith", **kw)
        check(r.rc == 1 and "new password refused: it is made of %s" % kind in r.err, "%r" % r)
    eq(d.stats()["requests_pw"], before, "PW requests: a refused password was sent")
    r = samba(f.samba, f.clean[1], d.sock, account="jsmith", full_name="John Smith")
    eq((r.rc, r.err), (0, ""), "strong: %r" % r)
    r = samba(f.samba + " --banned=warn", "Jsmith2024!", d.sock, account="jsmith")
    check(r.rc == 0 and "accepted with a warning: it is made of the user's own name" in r.err,
          "%r" % r)
    r = samba(f.samba + " --banned=off", "Jsmith2024!", d.sock, account="jsmith")
    eq((r.rc, r.err), (0, ""), "off: %r" % r)
    # check-password: each entry's own names (chpasswd: the user; newusers:
    # the user and its GECOS field)
    batch = "alice:Alice2024!\nbob:%s\ncarol:Winter2025\n" % f.clean[2]
    before = d.stats()["requests_pw"]
    r = generic(["--format=chpasswd"], batch, d.sock)
    check(r.rc == 1 and "line 1 (alice): refused: it is made of the user's own name" in r.err and
          "line 3 (carol): refused: it is made of a banned term" in r.err and "bob" not in r.err,
          "%r" % r)
    eq(d.stats()["requests_pw"] - before, 1, "only bob's password was sent")
    batch = "dave:Liddell#77:1001:1001:Dave Liddell,,,:/home/dave:/bin/sh\n"
    r = generic(["--format=newusers"], batch, d.sock)
    check(r.rc == 1 and "line 1 (dave): refused: it is made of the user's own name" in r.err,
          "%r" % r)
    r = generic(["--format=chpasswd", "--banned=warn"], "alice:Alice2024!\n", d.sock)
    check(r.rc == 0 and "accepted with a warning: it is made of the user's own name" in r.err,
          "%r" % r)
    no_leak(r, ["Alice2024!", "Winter2025", "Liddell#77", f.clean[2]])
    d.stop_ok()


@test
def samba_unknown_and_errors(ctx):
    f = fx()
    d = start(ctx)
    line = f.samba
    lost = f.lost[0]
    r = samba(line, lost, d.sock)
    eq(r.rc, 3, "UNKNOWN refused by default: %r" % r)
    check("could not check it (upstream-error)" in r.err, "message %r" % r)
    r = samba(line + " --on-unknown=accept", lost, d.sock)
    eq(r.rc, 0, "--on-unknown=accept: %r" % r)
    check("accepted unchecked" in r.err, "says so: %r" % r)
    r = samba(line, lost, d.sock, env={"BREACHD_HOOK_ON_UNKNOWN": "accept"})
    eq(r.rc, 0, "env accept")
    r = samba(line + " --on-unknown=reject", lost, d.sock,
              env={"BREACHD_HOOK_ON_UNKNOWN": "accept"})
    eq(r.rc, 3, "the option beats the environment")
    # on-unknown does not accept a pwned password.
    r = samba(line + " --on-unknown=accept --on-error=accept", "password", d.sock)
    eq(r.rc, 1, "pwned stays refused")
    # No password at all: always refused.
    r = samba(line + " --on-error=accept", "", d.sock)
    eq(r.rc, 2, "empty stdin: %r" % r)
    d.stop_ok()
    # breachd down.
    missing = ctx.path("gone.sock")
    r = samba(line, f.clean[0], missing)
    eq(r.rc, 2, "daemon down: %r" % r)
    check(missing in r.err and "No such file or directory" in r.err, "message %r" % r)
    eq(len(r.err.splitlines()), 1, "one line")
    r = samba(line + " --on-error=accept", f.clean[0], missing)
    eq(r.rc, 0, "--on-error=accept: %r" % r)
    r = samba(line, f.clean[0], missing, env={"BREACHD_HOOK_ON_ERROR": "accept"})
    eq(r.rc, 0, "env BREACHD_HOOK_ON_ERROR=accept")
    # breachctl missing: an error, refused.
    r = samba(line, f.clean[0], missing, env={"BREACHCTL": ctx.path("no-breachctl")})
    eq(r.rc, 2, "no breachctl: %r" % r)


@test
def samba_hung_daemon_within_samba_deadline(ctx):
    f = fx()
    path = ctx.path("mute.sock")
    stop = mute_daemon(path)
    try:
        # The default timeout (4 s) ends well before Samba's 10 s.
        r = samba(f.samba, f.clean[0], path)
        eq(r.rc, 2, "hung daemon: %r" % r)
        check("timed out" in r.err, "message %r" % r)
        check(3.5 < r.secs < 8, "gave up after %.2fs" % r.secs)
        r = samba(f.samba + " --timeout=300 --on-error=accept", f.clean[0], path)
        eq(r.rc, 0, "--on-error=accept: %r" % r)
        check(r.secs < 3, "took %.2fs" % r.secs)
    finally:
        stop()


@test
def samba_syslog(ctx):
    f = fx()
    d = start(ctx)
    bindir = ctx.path("bin")
    os.mkdir(bindir)
    record = ctx.path("logger.args")
    with open(os.path.join(bindir, "logger"), "w") as fh:
        fh.write("#!/bin/sh\n# SPDX-License-Identifier: MIT\nprintf '%%s|' \"$@\" >> %s\n"
                 "echo >> %s\n" % (record, record))
    os.chmod(os.path.join(bindir, "logger"), 0o755)
    path = bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin")
    r = samba(f.samba + " --syslog", "Summer2024!", d.sock, env={"PATH": path})
    eq(r.rc, 1, "pwned")
    with open(record) as fh:
        logged = fh.read()
    eq(logged.strip(), "-t|samba-check-password|-p|auth.notice|--|account alice: new password "
       "refused: it has been seen in data breaches|", "logger arguments")
    check("Summer2024" not in logged, "password logged")
    r = samba(f.samba + " --syslog", f.clean[0], d.sock, env={"PATH": path})
    eq(r.rc, 0, "clean")
    with open(record) as fh:
        eq(fh.read(), logged, "nothing logged for an accepted password")
    d.stop_ok()


# ---- generic: chpasswd / newusers batches ----------------------------------------------

@test
def generic_formats(ctx):
    f = fx()
    d = start(ctx)
    # plain (the default): one password a line.
    r = generic([], "%s\npassword\n%s\r\n" % (f.clean[0], f.clean[1]), d.sock)
    eq(r.rc, 1, "plain: %r" % r)
    eq(r.err, "check-password: line 2: refused: it has been seen %s times in data breaches\n"
       % seen(KNOWN["password"]), "plain message")
    eq(r.out, "", "stdout")
    # chpasswd: the password is everything after the first ':'.
    batch = ("alice:password\n\nbob:%s\ncarol:pa:ss\ndave:%s\r\nerin:%s" %
             (f.clean[0], f.lost[0], f.clean[1]))
    r = generic(["--format=chpasswd"], batch, d.sock)
    eq(r.rc, 1, "chpasswd: %r" % r)
    eq(r.err.splitlines(), [
        "check-password: line 1 (alice): refused: it has been seen %s times in data breaches"
        % seen(KNOWN["password"]),
        "check-password: line 4 (carol): refused: it has been seen 5 times in data breaches",
        "check-password: line 5 (dave): refused: breachd could not tell (upstream-error); "
        "try again later"], "chpasswd messages")
    no_leak(r, [f.clean[0], "pa:ss", f.lost[0], f.clean[1]])
    r = generic(["--format=chpasswd", "--on-unknown=accept"], "dave:%s\nerin:%s\n" %
                (f.lost[0], f.clean[0]), d.sock)
    eq(r.rc, 0, "unknown accepted: %r" % r)
    check("line 1 (dave): accepted unchecked" in r.err, "says so: %r" % r)
    r = generic(["--format=chpasswd", "--on-unknown=accept", "--quiet"], "dave:%s\nerin:%s\n" %
                (f.lost[0], f.clean[0]), d.sock)
    eq((r.rc, r.err), (0, "check-password: 1 of 2 password(s) accepted unchecked "
                          "(on-unknown=accept: 1, on-error=accept: 0)\n"), "--quiet fail-open")
    r = generic(["--format=chpasswd"], "dave:%s\nerin:%s\n" % (f.lost[0], f.clean[0]), d.sock)
    eq(r.rc, 3, "unknown refused")
    # newusers: the password is the second field.
    r = generic(["--format=newusers"], "frank:letmein:1001:1001:Frank:/home/frank:/bin/sh\n"
                "gina:%s:1002:1002::/home/gina:/bin/sh\n" % f.clean[2], d.sock)
    eq(r.rc, 1, "newusers: %r" % r)
    eq(r.err, "check-password: line 1 (frank): refused: it has been seen 577 times in data breaches\n",
       "newusers message")
    # A line without ':' is an error (2 beats 1), the others are still checked.
    r = generic(["--format=chpasswd"], "henry:hunter2\njustapassword\n", d.sock)
    eq(r.rc, 2, "malformed: %r" % r)
    check("line 2: no ':'" in r.err and "line 1 (henry): refused" in r.err, "messages %r" % r)
    no_leak(r, ["justapassword", "hunter2"])
    # --quiet: status only.
    r = generic(["--format=chpasswd", "--quiet"], "alice:password\n", d.sock)
    eq((r.rc, r.out, r.err), (1, "", ""), "--quiet")
    # Nothing at all.
    r = generic(["--format=chpasswd"], "\n\n", d.sock)
    eq(r.rc, 2, "no entry")
    d.stop_ok()


@test
def generic_in_front_of_chpasswd(ctx):
    """check-password --format=chpasswd < batch && chpasswd < batch, with a
    stand-in for chpasswd that records what it would have set."""
    f = fx()
    d = start(ctx)
    fake = ctx.path("chpasswd")
    with open(fake, "w") as fh:
        fh.write("#!/bin/sh\n# SPDX-License-Identifier: MIT\ncat > %s\n" % ctx.path("applied"))
    os.chmod(fake, 0o755)
    rng = random.Random(5)
    good = "".join("user%d:%s\n" % (i, "fresh-%016x" % rng.getrandbits(64))
                   for i in range(2000))
    for name, batch, want_rc, applied in [("good", good, 0, True),
                                          ("bad", good + "mallory:Summer2024!\n", 1, False)]:
        path = ctx.path(name + ".batch")
        with open(path, "w") as fh:
            fh.write(batch)
        if os.path.exists(ctx.path("applied")):
            os.unlink(ctx.path("applied"))
        t0 = time.monotonic()
        p = subprocess.run(["/bin/sh", "-c", '"$1" --format=chpasswd < "$2" && "$3" < "$2"',
                            "sh", f.generic, path, fake], capture_output=True, text=True,
                           env=hook_env(d.sock), timeout=60)
        secs = time.monotonic() - t0
        eq(p.returncode, want_rc, "%s batch: %s" % (name, p.stderr))
        eq(os.path.exists(ctx.path("applied")), applied, "%s batch applied" % name)
        if applied:
            with open(ctx.path("applied")) as fh:
                eq(fh.read(), batch, "the batch as given")
        else:
            eq(p.stderr, "check-password: line 2001 (mallory): refused: it has been seen 1,234 "
               "times in data breaches\n", "message")
        print("    %s batch of %d entries checked in %.2fs" % (name, batch.count("\n"), secs))
    eq(d.stats()["requests_pw"], 4001, "requests")
    d.stop_ok()


@test
def generic_daemon_down(ctx):
    f = fx()
    missing = ctx.path("gone.sock")
    r = generic(["--format=chpasswd"], "alice:%s\nbob:%s\n" % (f.clean[0], f.clean[1]), missing)
    eq(r.rc, 2, "daemon down: %r" % r)
    lines = r.err.splitlines()
    check(any(missing in ln and "No such file or directory" in ln for ln in lines),
          "names the socket and the errno: %r" % r)
    check("line 1 (alice): refused: cannot check it" in r.err, "per entry: %r" % r)
    r = generic(["--format=chpasswd", "--on-error=accept", "--quiet"], "alice:%s\n" % f.clean[0],
                missing)
    eq(r.rc, 0, "--on-error=accept: %r" % r)
    check(missing in r.err, "breachctl's error is still shown: %r" % r)
    # What went through unchecked is said even with --quiet (docs/operations.md).
    check("check-password: 1 of 1 password(s) accepted unchecked (on-unknown=accept: 0, "
          "on-error=accept: 1)" in r.err, "the fail-open is not silent under --quiet: %r" % r)
    check(f.clean[0] not in r.err, "the password in the message")
    r = generic(["--bogus"], "x\n", missing)
    eq(r.rc, 2, "bad option")


if __name__ == "__main__":
    dtest.main()
