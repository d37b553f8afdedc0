#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of pam_breachd.so at login (auth + account stages) and
of the exemptions, through pamtester under pam_wrapper with a real breachd
(the harness is pamtest.py; test_pam.py imports this file, so the meson
test `pam` runs these too, before its own leak check over every log line).

The login stack of each test:
  auth     required  pam_matrix      (verifies the typed password)
  auth     optional  pam_set_items   (pam_matrix wipes PAM_AUTHTOK after
                                      verifying it, pam_unix leaves it set:
                                      this puts it back from $PAM_AUTHTOK,
                                      which login() sets to the typed one)
  auth     optional  pam_breachd
  account  required  pam_matrix
  account  required  pam_breachd
  password requisite pam_breachd, required pam_matrix (forced changes)
pamtester runs `authenticate acct_mgmt` on one PAM handle, as login and
sshd do. Groups come from nss_wrapper (libnss-wrapper): alice exists only
there, so a membership found is one NSS gave. The grace period runs out
under pam_breachd_testclock.so, the never-installed build of the module
that reads BREACHD_PAM_TEST_NOW; the installed module is shown to ignore it.

Standalone: same arguments as test_pam.py.
"""
import datetime
import fcntl
import glob
import os
import re
import shutil
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pamtest as pt  # noqa: E402
from pamtest import SECRETS, Skip, check, clean_password, has_log, sha1hex, test  # noqa: E402

FORCED = "Authentication token is no longer valid; new one required"
AUTH_OK = "pamtester: successfully authenticated"
ACCT_OK = "pamtester: account management done."
DAY = 86400
# Noon UTC, 2026-01-10: far from midnight, so day arithmetic is exact.
T0 = 1768046400
STATE_LINE = re.compile(r"^[^\s]+ \d{4}-\d\d-\d\d$")


def seen(word):
    n = pt.CORPUS[sha1hex(word)]
    return "seen once" if n == 1 else "seen {:,} times".format(n)


def login_msg(word, tail):
    return "Your password has been %s in data breaches; %s" % (seen(word), tail)


def testclock_module():
    p = os.path.join(os.path.dirname(pt.ARGS.module), "pam_breachd_testclock.so")
    if not os.path.exists(p):
        raise AssertionError("%s was not built" % p)
    return p


def login_service(ctx, auth="", acct="", sock=None, module=None, authtok=True,
                  auth_after=(), pw_opts="enforce_for_root"):
    m = module or pt.ARGS.module
    sock = sock or pt.GOOD.sock
    matrix = "%s passdb=%s" % (pt.TOOLS["pam_matrix"], ctx.passdb)
    lines = ["auth required " + matrix]
    if authtok:
        lines.append("auth optional %s" % pt.TOOLS["pam_set_items"])
    lines.append("auth optional %s socket=%s %s" % (m, sock, auth))
    lines.extend(auth_after)
    lines.append("account required " + matrix)
    lines.append("account required %s socket=%s state=%s %s" % (m, sock, ctx.grace, acct))
    lines.append("password requisite %s socket=%s state=%s %s" % (m, sock, ctx.grace, pw_opts))
    lines.append("password required " + matrix)
    with open(os.path.join(ctx.svcdir, ctx.name), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(ctx.svcdir, "other"), "w") as f:
        f.write("auth required pam_deny.so\naccount required pam_deny.so\n"
                "password required pam_deny.so\n")


def set_password(ctx, pw):
    """alice's password in pam_matrix's file is pw."""
    ctx.old = pw
    ctx.reset()


def login(ctx, pw, env=None, typed=None, ops=("authenticate", "acct_mgmt"), more=()):
    e = {"PAM_AUTHTOK": pw}
    e.update(env or {})
    SECRETS.add(pw)
    return ctx.pamtester(list(ops), [typed if typed is not None else pw] + list(more), e)


def expect_login(r, message=None):
    check(r.rc == 0 and AUTH_OK in r.conv and ACCT_OK in r.conv,
          "the login should succeed: %r" % r)
    if message:
        check(message in r.conv, "the user should see %r: %r" % (message, r))
    else:
        check("Your password" not in r.conv, "no message: %r" % r)


def expect_forced(r, message):
    check(r.rc != 0 and AUTH_OK in r.conv, "authentication succeeds: %r" % r)
    check(FORCED in r.conv, "acct_mgmt should require a new password: %r" % r)
    check(message in r.conv, "the user should see %r: %r" % (message, r))


def read_state(ctx):
    try:
        with open(ctx.grace) as f:
            return f.read()
    except FileNotFoundError:
        return None


def day(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%d")


NOBODY = 65534
# Run as another user: open PATH, take flock(LOCK_EX) on it, say so, and hold
# it until stdin closes; or say why not.
LOCKER = r"""
import fcntl, os, sys
try:
    fd = os.open(sys.argv[1], os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError as e:
    print("denied: " + e.strerror, flush=True)
    sys.exit(0)
print("locked", flush=True)
sys.stdin.read()
"""


def lock_as(path, uid):
    """A process of uid holding a lock on path: (process, "locked"), or
    (None, "denied: why")."""
    # The system's python: the test's may be in a home nobody cannot reach.
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    p = subprocess.Popen([py, "-c", LOCKER, path], user=uid, group=uid,
                         extra_groups=[], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    said = p.stdout.readline().strip()
    if said == "locked":
        return p, said
    p.wait(timeout=30)
    return None, said


def release(holders):
    for p, _ in holders:
        if p:
            p.stdin.close()
            p.wait(timeout=30)


def write_state(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def nss_env(ctx, groups):
    """nss_wrapper with root, alice (uid 1000, primary group alice) and bob,
    and groups {name: [members]}."""
    libdir = pt.pkgconfig("--variable=libdir", "nss_wrapper")
    lib = next(iter(([os.path.join(libdir, "libnss_wrapper.so")] if libdir else []) +
                    glob.glob("/usr/lib/*/libnss_wrapper.so")), "")
    if lib and not os.path.exists(lib):
        lib = ""
    if not lib:
        raise Skip("libnss_wrapper.so not found (Debian: libnss-wrapper)")
    passwd = os.path.join(ctx.dir, "passwd")
    group = os.path.join(ctx.dir, "group")
    with open(passwd, "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n"
                "alice:x:1000:1000:Alice:/home/alice:/bin/sh\n"
                "bob:x:1001:1001:Bob:/home/bob:/bin/sh\n")
    with open(group, "w") as f:
        f.write("root:x:0:\nalice:x:1000:\nbob:x:1001:\n")
        for gid, (name, members) in enumerate(sorted(groups.items()), 2000):
            f.write("%s:x:%d:%s\n" % (name, gid, ",".join(members)))
    e = {"LD_PRELOAD": pt.ENV["LD_PRELOAD"] + ":" + lib,
         "NSS_WRAPPER_PASSWD": passwd, "NSS_WRAPPER_GROUP": group}
    if pt.ARGS.preload:
        e["NSS_WRAPPER_DISABLE_DEEPBIND"] = "1"
    return e


# ---- login_action ------------------------------------------------------------

@test
def login_force(ctx):
    set_password(ctx, "letmein")
    login_service(ctx)
    r = login(ctx, "letmein")
    expect_forced(r, login_msg("letmein", "you must change it now"))
    check(has_log(r, r"^user alice: password used at login appears in known data breaches: "
                  r"login_action=force: password change required$"), "logged: %r" % r)
    check(read_state(ctx) is None, "force keeps no state")
    # A clean password: nothing shown, nothing kept.
    pw = clean_password()
    set_password(ctx, pw)
    expect_login(login(ctx, pw))


@test
def login_warn(ctx):
    set_password(ctx, "123456")
    login_service(ctx, acct="login_action=warn")
    r = login(ctx, "123456")
    expect_login(r, login_msg("123456", "please change it"))
    check(has_log(r, r"user alice: .*login_action=warn: warned$"), "logged: %r" % r)


@test
def login_forced_change(ctx):
    """What login and sshd do after PAM_NEW_AUTHTOK_REQD: chauthtok with
    PAM_CHANGE_EXPIRED_AUTHTOK on the same handle. A breached new password
    is refused (even for root: the password has expired), a clean one is
    set, and the next login passes."""
    set_password(ctx, "letmein")
    login_service(ctx, pw_opts="")
    ops = ("authenticate", "chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)")
    r = login(ctx, "letmein", ops=ops, more=["letmein", "qwerty"])
    check(r.rc != 0 and "BAD PASSWORD: it has been %s in data breaches" % seen("qwerty")
          in r.conv, "a breached new password is refused: %r" % r)
    pw = clean_password()
    r = login(ctx, "letmein", ops=ops, more=["letmein", pw, pw, pw, pw])
    check(r.rc == 0 and "authentication token altered successfully" in r.conv,
          "the change succeeds: %r" % r)
    check(ctx.stored() == pw, "pam_matrix stored the new password: %r" % r)
    expect_login(login(ctx, pw))


@test
def login_grace(ctx):
    """grace=3 under the test clock: warned on days 0 to 2 from the first
    breached login, forced from day 3; the line goes when a password passes."""
    mod = testclock_module()
    set_password(ctx, "letmein")
    login_service(ctx, acct="login_action=grace=3", module=mod)
    with open(ctx.grace, "w") as f:  # another user's line stays as it is
        f.write("bob 2025-12-01\n")
    os.chmod(ctx.grace, 0o600)
    for d, tail in ((0, "you must change it within 3 days"),
                    (1, "you must change it within 2 days"),
                    (2, "you must change it within 1 day")):
        r = login(ctx, "letmein", env={"BREACHD_PAM_TEST_NOW": str(T0 + d * DAY)})
        expect_login(r, login_msg("letmein", tail))
        check(read_state(ctx) == "bob 2025-12-01\nalice %s\n" % day(T0),
              "the first day is kept: %r" % read_state(ctx))
    check(has_log(r, r"login_action=grace=3: warned, 1 day of grace left$"), "logged: %r" % r)
    st = os.stat(ctx.grace)
    check(stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid(),
          "root-only: %o" % st.st_mode)
    for d in (3, 30):
        r = login(ctx, "letmein", env={"BREACHD_PAM_TEST_NOW": str(T0 + d * DAY)})
        expect_forced(r, login_msg("letmein", "you must change it now"))
    check(has_log(r, r"login_action=grace=3: password change required$"), "logged: %r" % r)
    # The installed module reads no test clock: 30 days on, still day 0.
    login_service(ctx, acct="login_action=grace=3")
    with open(ctx.grace, "w") as f:
        f.write("alice %s\n" % day(time.time()))
    r = login(ctx, "letmein", env={"BREACHD_PAM_TEST_NOW": str(int(time.time()) + 30 * DAY)})
    expect_login(r, "you must change it within")
    # A clean password at login ends the grace period.
    login_service(ctx, acct="login_action=grace=3", module=mod)
    pw = clean_password()
    set_password(ctx, pw)
    r = login(ctx, pw, env={"BREACHD_PAM_TEST_NOW": str(T0 + 30 * DAY)})
    expect_login(r)
    check(read_state(ctx) == "", "alice's line removed: %r" % read_state(ctx))
    check(has_log(r, r"user alice: password used at login passed the check: grace period ended"),
          "logged: %r" % r)
    # grace=0 forces at once and keeps nothing.
    set_password(ctx, "letmein")
    login_service(ctx, acct="login_action=grace=0", module=mod)
    expect_forced(login(ctx, "letmein"), "you must change it now")
    check(read_state(ctx) == "", "nothing kept for grace=0: %r" % read_state(ctx))


def run_passwd(ctx, inputs, env):
    """The real passwd(1) (shadow) changing alice's password under
    pam_wrapper (service file "passwd") and nss_wrapper. Unlike pamtester,
    which always ends with pam_end(PAM_SUCCESS), passwd hands pam_end the
    result of the change."""
    passwd = shutil.which("passwd")
    if not passwd:
        raise Skip("passwd(1) is missing")
    SECRETS.update(i for i in inputs if len(i) >= 6)
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("PAM_") and not k.startswith("BREACHD_")}
    e.update(pt.ENV)
    e.update(env)
    e["PAM_WRAPPER_SERVICE_DIR"] = ctx.svcdir
    if pt.ARGS.preload:
        # pam_wrapper leaves out RTLD_DEEPBIND (which ASan refuses) when it
        # sees libasan in LD_PRELOAD, but passwd removes LD_* from its
        # environment first; pam_wrapper 1.1.4 reads this name instead.
        e["UID_WRAPPER_DISABLE_DEEPBIND"] = "1"
        # passwd itself leaks its copy of the user's entry; the module's own
        # leaks are checked in the pamtester runs, over the same code.
        e["ASAN_OPTIONS"] = (e.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    r = subprocess.run([passwd, "alice"], input="".join(i + "\n" for i in inputs), env=e,
                       capture_output=True, text=True, timeout=pt.PAMTESTER_TIMEOUT_S,
                       cwd=ctx.dir)
    res = pt.Result(r.returncode, r.stdout, r.stderr, 0)
    pt.SYSLOG.extend(res.syslog)
    check(not re.search(r"ERROR: (Address|Leak)Sanitizer|runtime error:", r.stderr),
          "sanitizer report:\n" + r.stderr[-6000:])
    return res


@test
def grace_cleared_at_change(ctx):
    """A change to a clean password removes the line once the whole change
    succeeded (pam_end with success); a change that a later module fails
    keeps it (pam_exec running false fails in PAM_UPDATE_AUTHTOK only, after
    pam_breachd accepted the password)."""
    if os.getuid() != 0:
        raise Skip("passwd(1) changes another user's password as root only")
    env = nss_env(ctx, {})
    pw = clean_password()
    line = "alice 2026-01-01\n"
    for fail, kept in ((True, True), (False, False)):
        set_password(ctx, "old-Pa55word")
        with open(ctx.passdb, "w") as f:
            f.write("alice:old-Pa55word:passwd\n")
        with open(ctx.grace, "w") as f:
            f.write(line)
        os.chmod(ctx.grace, 0o600)
        with open(os.path.join(ctx.svcdir, "passwd"), "w") as f:
            f.write("password requisite %s socket=%s state=%s\n" % (pt.ARGS.module, pt.GOOD.sock,
                                                                    ctx.grace))
            if fail:
                f.write("password requisite pam_exec.so quiet /bin/false\n")
            f.write("password required %s passdb=%s\n" % (pt.TOOLS["pam_matrix"], ctx.passdb))
        r = run_passwd(ctx, ["old-Pa55word", pw, pw, pw, pw], env)
        check("Retype new password: " in r.conv, "pam_breachd accepted the password: %r" % r)
        check(("password unchanged" in r.conv) == kept, "the change %s: %r" %
              ("fails" if kept else "succeeds", r))
        check(read_state(ctx) == (line if kept else ""), "state %r after %r" %
              (read_state(ctx), r))
    check(has_log(r, r"^user alice: password changed: grace period ended$"), "logged: %r" % r)


@test
def grace_state_safety(ctx):
    """The state file is used only when it is a regular root file nobody
    else can write, in a directory reachable by root only; else the error is
    logged and the grace period counts as over (a fault of the state never
    gives the period back), and nothing is written through a symlink."""
    set_password(ctx, "letmein")
    login_service(ctx, acct="login_action=grace=2")
    forced = "you must change it now"
    target = os.path.join(ctx.dir, "target")
    with open(target, "w") as f:
        f.write("keep\n")
    os.symlink(target, ctx.grace)
    r = login(ctx, "letmein")
    expect_forced(r, login_msg("letmein", forced))
    check(has_log(r, r"grace state .*: cannot open it: .*: the grace period counts as over"),
          "logged: %r" % r)
    with open(target) as f:
        check(f.read() == "keep\n", "the symlink's target is untouched")
    os.unlink(ctx.grace)
    with open(ctx.grace, "w") as f:
        f.write("alice 2000-01-01\n")
    os.chmod(ctx.grace, 0o666)
    r = login(ctx, "letmein")
    expect_forced(r, forced)
    check(has_log(r, r"grace state .*: owned by another user, or writable by others"),
          "logged: %r" % r)
    # Malformed lines are dropped (logged) when the file is next written.
    os.chmod(ctx.grace, 0o600)
    with open(ctx.grace, "w") as f:
        f.write("garbage\nbob 2026-02-30\ncarol 2026-01-05\n")
    r = login(ctx, "letmein")
    expect_login(r, "you must change it within 2 days")
    check(read_state(ctx) == "carol 2026-01-05\nalice %s\n" % day(time.time()),
          "state %r" % read_state(ctx))
    check(has_log(r, r"grace state: 2 malformed line\(s\) dropped"), "logged: %r" % r)
    # A directory that others can reach is refused.
    os.chmod(os.path.dirname(ctx.grace), 0o755)
    r = login(ctx, "letmein")
    expect_forced(r, forced)
    check(has_log(r, r"its directory must be root's and reachable by root only \(mode 0700\)"),
          "logged: %r" % r)
    os.chmod(os.path.dirname(ctx.grace), 0o700)
    # A missing directory is made, root's and 0700; one whose parent is
    # missing is logged.
    login_service(ctx, acct="login_action=grace=2 state=%s/new-dir/grace" % ctx.dir)
    expect_login(login(ctx, "letmein"), "you must change it within 2 days")
    st = os.stat(os.path.join(ctx.dir, "new-dir"))
    check(st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700,
          "made %o" % st.st_mode)
    login_service(ctx, acct="login_action=grace=2 state=%s/no-such-dir/sub/grace" % ctx.dir)
    r = login(ctx, "letmein")
    expect_forced(r, forced)
    check(has_log(r, r"no-such-dir/sub/grace: cannot make its directory"), "logged: %r" % r)


@test
def grace_state_lock_attack(ctx):
    """A local user must not be able to turn login_action=grace=N off. The
    attack: hold the lock of the grace state (on its directory, and on the
    file) as nobody, so that every login waits for it and then, the state
    failing, got a full grace period again. The state's directory must be
    root's, mode 0700 (nobody cannot open it, so cannot lock it), and a
    state that is locked or unusable never restarts a period."""
    if os.getuid() != 0:
        raise Skip("the attacker runs as uid %d through setuid: root only" % NOBODY)
    mod = testclock_module()
    set_password(ctx, "letmein")
    now = {"BREACHD_PAM_TEST_NOW": str(T0)}
    over = "alice %s\n" % day(T0 - 10 * DAY)  # alice's 3 days ran out long ago
    forced = login_msg("letmein", "you must change it now")
    # The attack, on a state in a directory anyone can read (as the daemon's
    # /var/lib/breachd is).
    home = ctx.grace
    opendir = os.path.join(ctx.dir, "open")
    os.mkdir(opendir)
    os.chmod(opendir, 0o755)
    ctx.grace = os.path.join(opendir, "grace")
    write_state(ctx.grace, over)
    login_service(ctx, acct="login_action=grace=3", module=mod)
    holders = [lock_as(p, NOBODY) for p in (opendir, ctx.grace)]
    try:
        r = login(ctx, "letmein", env=now)
    finally:
        release(holders)
    expect_forced(r, forced)
    check(read_state(ctx) == over, "the state is kept: %r" % read_state(ctx))
    # The state's own directory (pamtest.Ctx makes it as breachd's packages
    # would not: the module makes a missing one) is root's, 0700: nobody
    # can take no lock there.
    ctx.grace = home
    sdir = os.path.dirname(ctx.grace)
    st = os.stat(sdir)
    check(st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o700, "state dir %o" % st.st_mode)
    write_state(ctx.grace, over)
    for p in (sdir, ctx.grace):
        h = lock_as(p, NOBODY)
        release([h])
        check(h[1].startswith("denied"), "nobody locked %s: %r" % (p, h[1]))
    # A lock held by root (a stuck login) keeps the last known count: the
    # state is read without the lock, and left as it is.
    login_service(ctx, acct="login_action=grace=3", module=mod)
    fd = os.open(sdir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        r = login(ctx, "letmein", env=now)
        expect_forced(r, forced)
        check(has_log(r, r"grace state .*: locked by another process for 2 s: "
                         r"read without the lock, not updated$"), "logged: %r" % r)
        write_state(ctx.grace, "bob 2026-01-01\n")  # alice's first failed login
        r = login(ctx, "letmein", env=now)
        expect_login(r, login_msg("letmein", "you must change it within 3 days"))
        check(read_state(ctx) == "bob 2026-01-01\n", "not written: %r" % read_state(ctx))
    finally:
        os.close(fd)
    # A state that cannot be used never gives a full period back.
    for mode, why in ((0o666, "owned by another user, or writable by others"),):
        write_state(ctx.grace, over, mode)
        r = login(ctx, "letmein", env=now)
        expect_forced(r, forced)
        check(has_log(r, "grace state .*: %s: .*: the grace period counts as over" % why),
              "logged: %r" % r)


# ---- the auth stage never decides ----------------------------------------------

@test
def auth_result_unchanged(ctx):
    set_password(ctx, "letmein")
    login_service(ctx)
    # A wrong password still fails; the account stage is never reached.
    r = login(ctx, "qwerty", typed="qwerty")
    check(r.rc != 0 and "Authentication failure" in r.conv and FORCED not in r.conv,
          "wrong password: %r" % r)
    # PAM_IGNORE even as `sufficient`: a clean password grants nothing.
    pw = clean_password()
    set_password(ctx, pw)
    with open(os.path.join(ctx.svcdir, ctx.name), "w") as f:
        f.write("auth optional %s\nauth sufficient %s socket=%s\nauth required pam_deny.so\n" %
                (pt.TOOLS["pam_set_items"], pt.ARGS.module, pt.GOOD.sock))
    r = login(ctx, pw, ops=("authenticate",))
    check(r.rc != 0 and "Authentication failure" in r.conv, "never grants: %r" % r)
    # No password in PAM_AUTHTOK (e.g. a key login): nothing checked, no prompt.
    set_password(ctx, "letmein")
    login_service(ctx, auth="debug", authtok=False)
    r = login(ctx, "letmein")
    expect_login(r)
    check(r.conv.count("Password: ") == 1, "pam_breachd never prompts: %r" % r)
    check(has_log(r, "user alice: no password in PAM_AUTHTOK: not checked"), "logged: %r" % r)


@test
def login_audit_min_count(ctx):
    set_password(ctx, "letmein")
    login_service(ctx, acct="audit")
    r = login(ctx, "letmein")
    expect_login(r)
    check(has_log(r, r"appears in known data breaches: audit: login_action=force not applied"),
          "logged: %r" % r)
    n = pt.CORPUS[sha1hex("letmein")]
    login_service(ctx, acct="min_count=%d" % (n + 1))
    expect_login(login(ctx, "letmein"))
    login_service(ctx, acct="min_count=%d" % n)
    expect_forced(login(ctx, "letmein"), login_msg("letmein", "you must change it now"))


# ---- failures: allowed at login by default -----------------------------------------

@test
def login_daemon_down(ctx):
    set_password(ctx, "letmein")
    missing = os.path.join(pt.ROOT, "no-such.sock")
    for sock, log in ((missing, r"cannot check the password used at login with breachd: "
                       r"cannot connect.*on_error=allow: login allowed"),
                      (pt.FAKES["err"].path, r"on_error=allow: login allowed"),
                      (pt.FAKES["hang"].path, r"on_error=allow: login allowed"),
                      (pt.NOMIRROR.sock, r"breachd could not check the password used at "
                       r"login \(UNKNOWN upstream-[a-z]+\); on_unknown=allow: login allowed")):
        login_service(ctx, auth="timeout=300", sock=sock)
        r = login(ctx, "letmein")
        expect_login(r)
        check(r.secs < 10, "the timeout bounds the wait: %.1fs" % r.secs)
        check(has_log(r, log), "logged %r: %r" % (log, r))
    # deny at login: the password counts as failing the check.
    login_service(ctx, sock=missing, acct="on_error=deny")
    r = login(ctx, "letmein")
    expect_forced(r, "Your password could not be checked against known data breaches; "
                  "you must change it now")
    check(has_log(r, r"could not be checked \(breachd is not running\); on_error=deny: "
                  r"login_action=force: password change required"), "logged: %r" % r)
    login_service(ctx, sock=pt.NOMIRROR.sock, acct="on_unknown=deny login_action=warn")
    expect_login(login(ctx, "letmein"), "Your password could not be checked against known "
                 "data breaches; please change it")


# ---- exemptions -----------------------------------------------------------------

@test
def exemptions(ctx):
    set_password(ctx, "letmein")
    forced = login_msg("letmein", "you must change it now")
    env = nss_env(ctx, {"staff": ["bob"], "svc": ["alice"], "admins": ["alice"]})
    cases = (("skip_users=bob,alice", True), ("skip_users=bob", False),
             ("skip_groups=staff,svc", True), ("skip_groups=staff", False),
             ("only_groups=staff", True), ("only_groups=staff,admins", False),
             ("only_groups=alice", False),  # the primary group counts
             ("skip_groups=no-such-group", False))
    for opts, skipped in cases:
        login_service(ctx, auth=opts + " debug", acct=opts)
        r = login(ctx, "letmein", env=env)
        if skipped:
            expect_login(r)
            check(has_log(r, "user alice: .*: not checked"), "%s logged: %r" % (opts, r))
        else:
            expect_forced(r, forced)
    check(has_log(r, "group no-such-group: no such group"), "logged: %r" % r)
    # Without nss_wrapper alice is unknown to NSS: not a member of anything.
    login_service(ctx, acct="only_groups=svc")
    r = login(ctx, "letmein")
    expect_login(r)
    check(has_log(r, "user alice: cannot find the groups: no such user"), "logged: %r" % r)
    # At a change: an exempt user is prompted as usual, and not checked.
    ctx.service("skip_groups=svc enforce_for_root", pt.GOOD.sock)
    ctx.old = "old-Pa55word"
    r = ctx.chauthtok([ctx.old, "letmein", "letmein", "letmein", "letmein"], env=env)
    pt.expect_ok(ctx, r, "letmein")
    check("BAD PASSWORD" not in r.conv, "not checked: %r" % r)
    ctx.service("only_groups=admins enforce_for_root", pt.GOOD.sock)
    r = ctx.chauthtok([ctx.old, "letmein", "letmein"], env=env)
    pt.expect_refused(ctx, r, pt.breach_msg("letmein"))


@test
def login_bad_options(ctx):
    set_password(ctx, "letmein")
    login_service(ctx, acct="login_action=later skip_users=a,,b state=rel")
    r = login(ctx, "letmein")
    expect_forced(r, "you must change it now")  # the default stays: force
    for opt in ("login_action=later", "skip_users=a,,b", "state=rel"):
        check(has_log(r, "bad value ignored, keeping the default: " + re.escape(opt)),
              "%r logged: %r" % (opt, r))


@test
def login_no_secrets_in_files(ctx):
    """Every grace state file holds only "user YYYY-MM-DD" lines, and neither
    they nor breachd's logs hold a password typed or its hash."""
    files = [p for p in glob.glob(os.path.join(pt.ROOT, "t-*", "state", "grace"))
             if os.path.isfile(p) and not os.path.islink(p)]
    if not files and pt.ARGS.only:
        raise Skip("run with the grace tests")
    check(len(files) >= 2, "too few state files: %r" % files)
    texts = {}
    for p in files:
        with open(p) as f:
            texts[p] = f.read()
        for line in texts[p].splitlines():
            check(STATE_LINE.match(line), "%s: unexpected line %r" % (p, line))
    for d in pt.DAEMONS:
        texts[d.log_path] = d.read_log()
    for p, text in texts.items():
        for pw in SECRETS:
            h = sha1hex(pw)
            for bad in (pw, h[:10], h[:10].lower()):
                check(bad not in text, "%s holds a password or its hash" % p)


if __name__ == "__main__":
    sys.exit(pt.main())
