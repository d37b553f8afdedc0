# SPDX-License-Identifier: MIT
"""The fixtures of the pam_breachd.so tests (the tests are in test_pam.py,
which runs main() here; the harness is dtest.py): pamtester runs PAM under
pam_wrapper (LD_PRELOAD=libpam_wrapper.so, PAM_WRAPPER_SERVICE_DIR = service
files written here), with pam_matrix.so as the module that stores the password,
and a real breachd on a temp socket (demo corpus, filter, file:// mirror).
Password prompts are answered from pamtester's stdin.

  * pam_matrix prompts for the old password in PAM_PRELIM_CHECK and for the
    new one twice in PAM_UPDATE_AUTHTOK (it never reads PAM_AUTHTOK), so the
    input of a successful change is: old, new, new (pam_breachd), new, new
    (pam_matrix).
  * That pam_breachd leaves the password in PAM_AUTHTOK for the next modules
    is checked with pam_get_items.so (copies the PAM items into the PAM
    environment) and pam_exec.so running a script that records
    $PAM_AUTHTOK.
  * use_authtok: pam_set_items.so, earlier in the stack, sets PAM_AUTHTOK
    from the environment variable of the same name.
  * pam_syslog() lines reach stderr through pam_wrapper
    (PAM_WRAPPER_DEBUGLEVEL=2, no trace level: that one prints PAM items).

setup() makes everything the tests share, once per run under the run's
directory (dtest.tempdir(), world-readable: the user_enforced tests run as
another user): the corpus and its filter, breachd with the mirror (GOOD) and
without it (NOMIRROR), fake daemons (FAKES: "err", "close", "hang"). Ctx is
one test's service directory and pam_matrix password file; chauthtok() runs
pamtester and collects every pam_syslog line and every password typed for
the leak check (test_pam.py's no_secrets_in_logs). main() returns 0 when
every test passed, 1 when one failed, 77 when the tools are missing
(pamtester, libpam-wrapper, john-data). Standard library only.
"""
import glob
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
# Skip, check, sha1hex and test are the harness's, re-exported for test_pam.py.
from dtest import Skip, check, sha1hex, test  # noqa: E402,F401
from fakedaemon import FakeDaemon  # noqa: E402

ROOT = None      # dtest.ROOT, once setup() ran
ARGS = None      # dtest.ARGS, once setup() ran
ENV = {}         # the pam_wrapper environment
SYSLOG = []      # every pam_syslog line seen, for the leak check
SECRETS = set()  # every password typed, for the leak check
DAEMONS = []     # breachd processes to stop
# Set by setup(): tools, corpus {SHA1: count}, filter file, daemons.
TOOLS = CORPUS = FILTER = GOOD = NOMIRROR = SIMILAR = None
FAKES = {}
PAMTESTER_TIMEOUT_S = int(os.environ.get("PAMTESTER_TIMEOUT_S", "60"))
dtest.TEST_TIMEOUT_S = 120


# ---- tools -------------------------------------------------------------------

def pkgconfig(*args):
    try:
        r = subprocess.run(["pkg-config"] + list(args), capture_output=True, text=True)
    except OSError:
        return ""
    return r.stdout.strip() if r.returncode == 0 else ""


def find_tools():
    t = {"pamtester": shutil.which("pamtester")}
    if not t["pamtester"]:
        raise Skip("pamtester is not installed (Debian: pamtester)")
    lib = pkgconfig("--libs", "pam_wrapper")
    mods = pkgconfig("--variable=modules", "pam_wrapper")
    if not lib:
        lib = next(iter(glob.glob("/usr/lib/*/libpam_wrapper.so") +
                        glob.glob("/usr/lib*/libpam_wrapper.so")), "")
    if not mods and lib:
        mods = os.path.join(os.path.dirname(lib), "pam_wrapper")
    if not lib or not os.path.exists(lib):
        raise Skip("libpam_wrapper.so not found (Debian: libpam-wrapper)")
    for m in ("pam_matrix", "pam_get_items", "pam_set_items"):
        p = os.path.join(mods, m + ".so")
        if not os.path.exists(p):
            raise Skip("%s not found (Debian: libpam-wrapper)" % p)
        t[m] = p
    t["libpam_wrapper"] = lib
    return t


# ---- processes ---------------------------------------------------------------

class Daemon(dtest.Daemon):
    """A breachd that every test of the run shares, in ROOT/NAME: filter
    filt, the file:// mirror mirror, its socket mode (0666: the
    user_enforced tests reach it as another user). Stopped by teardown()."""

    def __init__(self, name, filt, mirror, mode="0666", similar="", **passwords):
        ctx = dtest.Ctx(name)
        passwords.update({"filter": filt, "upstream": "file://%s/{prefix}.txt" % mirror,
                          "similar_filter": similar})
        conf = ctx.config(daemon={"socket_mode": mode}, passwords=passwords)
        super().__init__(ctx, conf)
        ctx.daemons.append(self)
        DAEMONS.append(self)
        self.wait_ready(timeout=30)

    def read_log(self):
        return self.log()


def fake_daemon(name, mode):
    """A fake daemon (fakedaemon.py) that answers PING with PONG and a PW
    request as told: 'err' -> ERR busy, 'hang' -> never, 'close' -> closes
    the connection. Its socket is world-writable, for user_enforced."""
    def handler(n, rid, rest, c):
        if rest == "PING":
            c.sendall(("%s PONG\n" % rid).encode())
        elif rest.startswith("PW "):
            if mode == "err":
                c.sendall(("%s ERR busy too many requests in flight\n" % rid).encode())
            elif mode == "close":
                return "close"
        return None  # hang: no answer
    return FakeDaemon(os.path.join(dtest.ROOT, name + ".sock"), handler, mode=0o666)


class Result:
    def __init__(self, rc, out, err, secs):
        self.rc = rc
        self.out = out
        # pam_wrapper's lines (a prompt has no LF: one may start after it).
        pwrap = re.compile(r"PWRAP_[A-Z]+\[[^]]*\] - (.*)$")
        self.syslog = []  # pam_syslog() messages (without pid)
        conv = []         # what the user saw: prompts and messages, result
        for line in err.splitlines():
            m = pwrap.search(line)
            if m:
                if m.group(1).startswith("SYSLOG("):
                    self.syslog.append(m.group(1).split("): ", 1)[-1])
                line = line[:m.start()]
            if line:
                conv.append(line)
        self.conv = "\n".join(conv) + "\n" + out
        self.secs = secs

    def __repr__(self):
        return "rc=%d\n--- conversation:\n%s\n--- syslog:\n%s" % (
            self.rc, self.conv, "\n".join(self.syslog))


class Ctx(dtest.Ctx):
    """One test: its directory ROOT/t-NAME, the PAM service NAME, alice's
    password file."""

    def __init__(self, name):
        super().__init__(name, dirname="t-" + name)
        os.chmod(self.dir, 0o777)  # pam_matrix and pam_exec write here, maybe as nobody
        self.svcdir = os.path.join(self.dir, "services")
        os.makedirs(self.svcdir)
        self.passdb = os.path.join(self.dir, "passdb")
        self.record = os.path.join(self.dir, "authtok.out")
        self.recorder = os.path.join(self.dir, "record-authtok")
        with open(self.recorder, "w") as f:
            f.write("#!/bin/sh\nprintf '%%s' \"$PAM_AUTHTOK\" > '%s'\n" % self.record)
        os.chmod(self.recorder, 0o755)
        self.old = "old-Pa55word"
        # state= (the grace state file), in a directory reachable by root only
        os.mkdir(os.path.join(self.dir, "state"), 0o700)
        self.grace = os.path.join(self.dir, "state", "grace")

    def reset(self):
        """Before each run: alice's password is self.old, nothing recorded."""
        with open(self.passdb, "w") as f:
            f.write("alice:%s:%s\n" % (self.old, self.name))
        os.chmod(self.passdb, 0o666)
        if os.path.exists(self.record):
            os.unlink(self.record)

    def stored(self):
        with open(self.passdb) as f:
            return f.read().split(":")[1]

    def recorded(self):
        try:
            with open(self.record) as f:
                return f.read()
        except FileNotFoundError:
            return None

    def service(self, opts, sock, before=(), control="requisite", record=True, after=()):
        """The service file: [before...] pam_breachd [after...] [pam_get_items pam_exec]
        pam_matrix."""
        lines = list(before)
        lines.append("password %s %s socket=%s state=%s %s" % (control, dtest.ARGS.module, sock,
                                                               self.grace, opts))
        lines.extend(after)
        if record:
            lines.append("password optional %s" % TOOLS["pam_get_items"])
            lines.append("password optional pam_exec.so quiet %s" % self.recorder)
        lines.append("password required %s passdb=%s" % (TOOLS["pam_matrix"], self.passdb))
        with open(os.path.join(self.svcdir, self.name), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(self.svcdir, "other"), "w") as f:
            f.write("password required pam_deny.so\n")

    def chauthtok(self, inputs, env=None, flags="", as_uid=None):
        self.reset()
        return self.pamtester(["chauthtok" + flags], inputs, env, as_uid)

    def pamtester(self, ops, inputs, env=None, as_uid=None):
        """pamtester SERVICE alice OPS... (no reset of the password file)."""
        SECRETS.update(i for i in inputs if len(i) >= 6)
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("PAM_") or k.startswith("BREACHD_"):
                del e[k]
        e.update(ENV)
        e["PAM_WRAPPER_SERVICE_DIR"] = self.svcdir
        e.update(env or {})
        argv = [TOOLS["pamtester"], self.name, "alice"] + list(ops)
        if as_uid is not None:
            # Preload pam_wrapper into pamtester only: in setpriv it would
            # make a config directory that nothing removes.
            argv = [shutil.which("setpriv"), "--reuid=%d" % as_uid, "--regid=%d" % as_uid,
                    "--clear-groups", "env", "LD_PRELOAD=" + e.pop("LD_PRELOAD")] + argv
        t0 = time.monotonic()
        r = subprocess.run(argv, input="".join(i + "\n" for i in inputs), env=e,
                           capture_output=True, text=True, timeout=PAMTESTER_TIMEOUT_S,
                           cwd=self.dir)
        res = Result(r.returncode, r.stdout, r.stderr, time.monotonic() - t0)
        SYSLOG.extend(res.syslog)
        if re.search(r"ERROR: (Address|Leak)Sanitizer|runtime error:", r.stderr):
            raise AssertionError("sanitizer report:\n" + r.stderr[-6000:])
        return res


def expect_ok(ctx, r, new):
    check(r.rc == 0 and "authentication token altered successfully" in r.conv,
          "the change should succeed: %r" % r)
    check(ctx.stored() == new, "pam_matrix should have stored the new password: %r" % r)
    check(ctx.recorded() == new, "PAM_AUTHTOK after pam_breachd should be the new password "
          "(recorded %r): %r" % (ctx.recorded(), r))


def expect_refused(ctx, r, message, pam_error="Authentication token manipulation error"):
    check(r.rc != 0, "the change should fail: %r" % r)
    check(message in r.conv, "the user should see %r: %r" % (message, r))
    check(pam_error in r.conv, "pamtester should report %r: %r" % (pam_error, r))
    check(ctx.stored() == ctx.old, "the password should be unchanged: %r" % r)
    check(ctx.recorded() is None, "no module after pam_breachd should have run: %r" % r)


def has_log(r, pattern):
    return any(re.search(pattern, l) for l in r.syslog)


def breach_msg(word):
    n = CORPUS[sha1hex(word)]
    if n == 1:
        return "BAD PASSWORD: it has been seen once in data breaches"
    return "BAD PASSWORD: it has been seen {:,} times in data breaches".format(n)


def clean_password():
    """A random passphrase that the filter answers "no" for (a "maybe", one
    in about 65,536, would be resolved by the mirror: UNKNOWN there)."""
    for _ in range(20):
        pw = "clean-%s" % secrets.token_urlsafe(12)
        r = subprocess.run([dtest.ARGS.breachctl, "filter", "query", FILTER, sha1hex(pw)],
                           capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip() == "no":
            return pw
    raise AssertionError("no clean password found: breachctl filter query: " + r.stderr)


# ---- runner ------------------------------------------------------------------

def setup():
    global ROOT, ARGS, TOOLS, CORPUS, FILTER, GOOD, NOMIRROR, FAKES, SIMILAR, BANNED
    ROOT = dtest.ROOT
    ARGS = dtest.ARGS
    ARGS.module = os.path.abspath(ARGS.module)
    TOOLS = find_tools()
    d = os.path.join(ROOT, "corpus")
    r = subprocess.run([os.path.join(ARGS.source_root, "data", "demo", "make-corpus"), d,
                        "--mirror", "--random", "2000"], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        if "no word list" in r.stderr:
            raise Skip("make-corpus: no word list (Debian: john-data)")
        raise AssertionError("make-corpus: " + r.stderr)
    CORPUS = {}
    with open(os.path.join(d, "corpus.txt")) as f:
        for line in f:
            h, c = line.strip().split(":")
            CORPUS[h] = int(c)
    for w in ("letmein", "123456", "qwerty"):
        check(sha1hex(w) in CORPUS, "%r is not in the demo corpus" % w)
    FILTER = os.path.join(d, "passwords.bfuse")
    r = subprocess.run([ARGS.breachctl, "filter", "build", "--kind", "password-sha1",
                        "--input", os.path.join(d, "corpus.txt"), "--output", FILTER,
                        "--generation", "1"], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "filter build: " + r.stderr)
    # the offline filter of popular passwords for similar= (docs/similar.md)
    simfilter = os.path.join(d, "similar.bfuse")
    r = subprocess.run([ARGS.breachctl, "filter", "build", "--kind", "password-sha1", "--offline",
                        "--min-count", "2", "--input", os.path.join(d, "corpus.txt"), "--output",
                        simfilter], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "filter build --offline: " + r.stderr)
    # Everything under ROOT must be reachable by the unprivileged user of
    # user_enforced.
    for dirpath, dirnames, _ in os.walk(ROOT):
        os.chmod(dirpath, 0o755)
    GOOD = Daemon("good", FILTER, os.path.join(d, "mirror"))
    empty = os.path.join(ROOT, "empty-mirror")
    os.makedirs(empty)
    NOMIRROR = Daemon("nomirror", FILTER, empty)
    SIMILAR = Daemon("similar", FILTER, os.path.join(d, "mirror"), similar=simfilter)
    # banned terms (docs/banned.md): the site's name and a terms file
    terms = os.path.join(ROOT, "banned-terms")
    with open(terms, "w") as f:
        f.write("# seasons\nwinter\n")
    os.chmod(terms, 0o644)
    BANNED = Daemon("banned", FILTER, os.path.join(d, "mirror"), site_terms="Contoso",
                    banned_terms=terms)
    FAKES = {m: fake_daemon("fake-" + m, m) for m in ("err", "close", "hang")}
    ENV.update({
        "LD_PRELOAD": ":".join(([ARGS.preload] if ARGS.preload else []) +
                               [TOOLS["libpam_wrapper"]]),
        "PAM_WRAPPER": "1",
        "PAM_WRAPPER_DEBUGLEVEL": "2",
    })
    if ARGS.preload:
        # ASan-built module in a plain pamtester: the ASan runtime must come
        # first; pam_wrapper's RTLD_DEEPBIND does not mix with sanitizers.
        # ASAN_OPTIONS (leak checks included) are the caller's.
        ENV["PAM_WRAPPER_DISABLE_DEEPBIND"] = "1"


def teardown():
    """Stop the shared daemons and the fakes: the number of daemons that did
    not exit 0."""
    failed = 0
    while DAEMONS:
        d = DAEMONS.pop()
        try:
            rc = d.stop()
        except AssertionError as e:
            rc = str(e)
        if rc != 0:
            print("breachd (%s) exited %s:\n%s" % (d.conf, rc, d.log()[-3000:]))
            failed += 1
    for f in FAKES.values():
        f.stop()
    return failed


def main():
    """Run test_pam.py's tests; the exit status (dtest.run)."""
    return dtest.run(options={"--module": dict(required=True, help="pam_breachd.so"),
                              "--preload": dict(default="",
                                                help="sanitizer runtime to LD_PRELOAD")},
                     setup=setup, teardown=teardown, new_ctx=Ctx, prefix="breachd-pam.",
                     parent="/tmp", mode=0o755)
