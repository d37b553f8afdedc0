#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of pam_breachd.so through pamtester under
pam_wrapper with a real breachd (the harness, and how the stack is built
and observed, is pamtest.py): breached passwords refused and clean ones
accepted and passed on in PAM_AUTHTOK, retype and retry, use_authtok,
breachd down or failing (on_error=deny/allow), timeouts, UNKNOWN answers
(on_unknown=deny/allow), audit, min_count, root and users, bad options,
similar=reject|warn|off and similar_min_count against a breachd with an
offline filter of popular passwords (and one without), banned=reject|warn|off
against a breachd with banned terms (and one without),
the documented stack with the real pam_pwquality, the login stages
(test_pam_login.py, imported here), and, over every test before it, no
password, hash or breach count in the logs.

Exit 0 when every test passed, 1 when one failed, 77 when the tools are
missing (pamtester, libpam-wrapper, john-data). Standard library only.
"""
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pamtest as pt  # noqa: E402
from pamtest import (SECRETS, SYSLOG, Skip, breach_msg, check, clean_password,  # noqa: E402
                     expect_ok, expect_refused, has_log, sha1hex, test)
import test_pam_login  # noqa: E402,F401  (the login tests: registered first, run first)


# ---- tests -------------------------------------------------------------------
# The tests run as root in CI containers: enforce_for_root makes the module
# refuse there as it would for a user (see root_* for the difference).
ENF = "enforce_for_root"


@test
def breached_refused(ctx):
    ctx.service(ENF, pt.GOOD.sock)
    r = ctx.chauthtok([ctx.old, "letmein", "letmein"])
    expect_refused(ctx, r, breach_msg("letmein"))
    check("Retype" not in r.conv, "a refused password is not asked twice: %r" % r)
    check(has_log(r, r"user alice: new password refused: it appears in known data breaches"),
          "refusal logged: %r" % r)


@test
def log_file(ctx):
    # log_file=PATH: the module's lines go to a file of root's, 0600, for a
    # host without syslog (pam_breachd(8)); never a password or its hash.
    path = os.path.join(ctx.dir, "pam.log")
    ctx.service(ENF + " log_file=" + path, pt.GOOD.sock)
    r = ctx.chauthtok([ctx.old, "letmein", "letmein"])
    expect_refused(ctx, r, breach_msg("letmein"))
    check(not has_log(r, r"new password refused"), "the refusal went to syslog too: %r" % r)
    with open(path) as f:
        text = f.read()
    check(re.search(r"pam_breachd\[\d+\]: \S+ notice: user alice: new password refused: it "
                    r"appears in known data breaches", text), "log file: %r" % text)
    st = os.stat(path)
    check(st.st_mode & 0o777 == 0o600, "the log file's mode: %o" % st.st_mode)
    h = sha1hex("letmein")
    for bad in ("letmein", h[:10], h[:10].lower()):
        check(bad not in text, "a password or its hash in the log file: %r" % bad)
    # a log file others may write is not used: the line goes to syslog
    os.chmod(path, 0o666)
    r = ctx.chauthtok([ctx.old, "letmein", "letmein"])
    check(has_log(r, r"new password refused"), "back to syslog: %r" % r)
    check(text == open(path).read(), "nothing written to a group- or world-writable log file")


@test
def clean_accepted(ctx):
    ctx.service(ENF, pt.GOOD.sock)
    pw = clean_password()
    r = ctx.chauthtok([ctx.old, pw, pw, pw, pw])
    check("New password: " in r.conv and "Retype new password: " in r.conv,
          "pam_breachd prompts twice: %r" % r)
    expect_ok(ctx, r, pw)
    check("BAD PASSWORD" not in r.conv, "no message for a clean password: %r" % r)


@test
def retype_mismatch(ctx):
    ctx.service(ENF, pt.GOOD.sock)
    pw = clean_password()
    r = ctx.chauthtok([ctx.old, pw, pw + "x"])
    expect_refused(ctx, r, "Sorry, passwords do not match.")


@test
def retry(ctx):
    ctx.service(ENF + " retry=3", pt.GOOD.sock)
    pw = clean_password()
    r = ctx.chauthtok([ctx.old, "letmein", "123456", pw, pw, pw, pw])
    expect_ok(ctx, r, pw)
    check(r.conv.count("New password: ") == 3, "three prompts: %r" % r)
    check(breach_msg("letmein") in r.conv and breach_msg("123456") in r.conv,
          "both refusals shown: %r" % r)
    # Out of tries: PAM_MAXTRIES, as pam_pwquality.
    ctx.service(ENF + " retry=2", pt.GOOD.sock)
    r = ctx.chauthtok([ctx.old, "letmein", "123456", pw, pw, pw, pw])
    expect_refused(ctx, r, breach_msg("123456"),
                   "Have exhausted maximum number of retries for service")
    check(r.conv.count("New password: ") == 2, "two prompts: %r" % r)


PWQUALITY = "/lib/x86_64-linux-gnu/security/pam_pwquality.so"


@test
def stack_with_pwquality(ctx):
    """The documented stack (pam_breachd(8)): pam_breachd prompts with retry,
    then pam_pwquality use_authtok, then the password store. A breached
    password is refused and asked again, as pwquality's own rules are."""
    mod = next((p for p in (PWQUALITY, "/usr/lib/x86_64-linux-gnu/security/pam_pwquality.so")
                if os.path.exists(p)), None)
    if not mod:
        raise Skip("libpam-pwquality is not installed")
    after = ["password requisite %s use_authtok minlen=8 enforce_for_root" % mod]
    ctx.service(ENF + " retry=3", pt.GOOD.sock, after=after)
    pw = clean_password()
    # (pam_matrix, the password store, prompts for the new password again)
    r = ctx.chauthtok([ctx.old, "letmein", pw, pw, pw, pw])
    expect_ok(ctx, r, pw)
    check(breach_msg("letmein") in r.conv, "the refusal is shown: %r" % r)
    check(r.conv.count("New password: ") == 2, "asked again after the breached one: %r" % r)
    check("manipulation error" not in r.conv + r.out, "no token error: %r" % r)
    # pwquality still applies its own rules to what pam_breachd let through.
    r = ctx.chauthtok([ctx.old, "xY3!", "xY3!", "xY3!", "xY3!"])
    check(r.rc != 0, "a too short password is refused by pwquality: %r" % r)


@test
def use_authtok(ctx):
    before = ["password required %s" % pt.TOOLS["pam_set_items"]]
    pw = clean_password()
    # An earlier module set PAM_AUTHTOK: checked without any prompt of ours.
    ctx.service(ENF + " use_authtok", pt.GOOD.sock, before=before)
    r = ctx.chauthtok([ctx.old, pw, pw], env={"PAM_AUTHTOK": pw})
    check("New password: " not in r.conv and "Retype" not in r.conv,
          "no prompt from pam_breachd: %r" % r)
    expect_ok(ctx, r, pw)
    r = ctx.chauthtok([ctx.old, "qwerty", "qwerty"], env={"PAM_AUTHTOK": "qwerty"})
    expect_refused(ctx, r, breach_msg("qwerty"))
    check("New password: " not in r.conv, "no prompt after a refused preset password: %r" % r)
    # use_authtok without an earlier module: PAM_AUTHTOK_ERR, no prompt.
    ctx.service(ENF + " use_authtok", pt.GOOD.sock)
    r = ctx.chauthtok([ctx.old, pw, pw, pw, pw])
    expect_refused(ctx, r, "Old password: ")
    check("New password: " not in r.conv, "use_authtok never prompts: %r" % r)
    check(has_log(r, "use_authtok: no earlier module in the stack set a new password"),
          "logged: %r" % r)
    # Without use_authtok a preset password is used too (pam_pwquality does).
    ctx.service(ENF + " retry=3", pt.GOOD.sock, before=before)
    pw2 = clean_password()
    r = ctx.chauthtok([ctx.old, pw2, pw2], env={"PAM_AUTHTOK": pw2})
    check("New password: " not in r.conv, "no prompt from pam_breachd: %r" % r)
    expect_ok(ctx, r, pw2)
    # ... and when it is refused, retry does not prompt for another one (that
    # would bypass the module that chose it).
    r = ctx.chauthtok([ctx.old, pw2, pw2, pw2, pw2], env={"PAM_AUTHTOK": "qwerty"})
    expect_refused(ctx, r, breach_msg("qwerty"))
    check("New password: " not in r.conv, "no prompt after a refused preset password: %r" % r)


@test
def daemon_down_deny(ctx):
    missing = os.path.join(pt.ROOT, "no-such.sock")
    ctx.service(ENF, missing)
    r = ctx.chauthtok([ctx.old, "letmein", "letmein"])
    # Found in PAM_PRELIM_CHECK: PAM_TRY_AGAIN before any password is typed.
    expect_refused(ctx, r, "Cannot check the new password against known data breaches "
                   "(breachd is not running); try again later",
                   "Failed preliminary check by password service")
    check("Old password: " not in r.conv, "stopped before the old password: %r" % r)
    check(has_log(r, r"preliminary check: breachd at %s is not usable" % re.escape(missing)),
          "logged: %r" % r)
    # The daemon fails between the phases (answers PING, not PW): no retry,
    # retyping would not help.
    for mode, reason in (("err", "breachd answered busy"), ("close", "cannot talk to breachd")):
        ctx.service(ENF + " retry=3", pt.FAKES[mode].path)
        pw = clean_password()
        r = ctx.chauthtok([ctx.old, pw, pw, pw, pw])
        expect_refused(ctx, r, "Cannot check the new password against known data breaches (%s)" %
                       reason)
        check(r.conv.count("New password: ") == 1, "asked once: %r" % r)
        check(has_log(r, r"cannot check the new password with breachd.*on_error=deny: refused"),
              "logged: %r" % r)


@test
def daemon_down_allow(ctx):
    missing = os.path.join(pt.ROOT, "no-such.sock")
    ctx.service(ENF + " on_error=allow", missing)
    pw = clean_password()
    r = ctx.chauthtok([ctx.old, pw, pw, pw, pw])
    expect_ok(ctx, r, pw)
    check("Cannot check" not in r.conv, "nothing shown: %r" % r)
    check(has_log(r, r"cannot check the new password with breachd at %s: cannot connect.*"
                  r"on_error=allow: accepted" % re.escape(missing)), "logged: %r" % r)
    ctx.service(ENF + " on_error=allow", pt.FAKES["err"].path)
    r = ctx.chauthtok([ctx.old, "letmein", "letmein", "letmein", "letmein"])
    expect_ok(ctx, r, "letmein")


@test
def timeout(ctx):
    ctx.service(ENF + " timeout=300", pt.FAKES["hang"].path)
    pw = clean_password()
    r = ctx.chauthtok([ctx.old, pw, pw, pw, pw])
    expect_refused(ctx, r, "Cannot check the new password against known data breaches "
                   "(no answer in time)")
    check(r.secs < 10, "the timeout bounds the wait: %.1fs" % r.secs)


@test
def unknown_deny(ctx):
    ctx.service(ENF, pt.NOMIRROR.sock)
    r = ctx.chauthtok([ctx.old, "letmein", "letmein"])
    expect_refused(ctx, r, "The new password could not be checked against known data "
                   "breaches right now, so it was not accepted; try again later")
    # An unchecked password is not a bad one, and the internal reason stays in the log.
    check("BAD PASSWORD" not in r.conv and "upstream-" not in r.conv,
          "no verdict and no internal reason on the terminal: %r" % r)
    check(has_log(r, r"UNKNOWN upstream-[a-z]+\); on_unknown=deny: refused"), "logged: %r" % r)
    # The filter still answers "no" locally for a clean password.
    pw = clean_password()
    r = ctx.chauthtok([ctx.old, pw, pw, pw, pw])
    expect_ok(ctx, r, pw)


@test
def unknown_allow(ctx):
    ctx.service(ENF + " on_unknown=allow", pt.NOMIRROR.sock)
    r = ctx.chauthtok([ctx.old, "letmein", "letmein", "letmein", "letmein"])
    expect_ok(ctx, r, "letmein")
    check("BAD PASSWORD" not in r.conv, "nothing shown: %r" % r)
    check(has_log(r, r"on_unknown=allow: accepted"), "logged: %r" % r)


@test
def audit(ctx):
    ctx.service("audit", pt.GOOD.sock)
    r = ctx.chauthtok([ctx.old, "letmein", "letmein", "letmein", "letmein"])
    expect_ok(ctx, r, "letmein")
    check("BAD PASSWORD" not in r.conv, "audit shows nothing to the user: %r" % r)
    check(has_log(r, r"user alice: new password audit: would be refused: it appears in known"),
          "logged: %r" % r)
    for sock, what in ((os.path.join(pt.ROOT, "no-such.sock"), "on_error=deny"),
                       (pt.NOMIRROR.sock, "on_unknown=deny")):
        ctx.service("audit " + ENF, sock)
        r = ctx.chauthtok([ctx.old, "qwerty", "qwerty", "qwerty", "qwerty"])
        expect_ok(ctx, r, "qwerty")
        check(has_log(r, "%s: audit: would be refused" % what), "logged: %r" % r)


@test
def min_count(ctx):
    n = pt.CORPUS[sha1hex("letmein")]
    ctx.service(ENF + " min_count=%d" % n, pt.GOOD.sock)
    r = ctx.chauthtok([ctx.old, "letmein", "letmein"])
    expect_refused(ctx, r, breach_msg("letmein"))
    ctx.service(ENF + " min_count=%d debug" % (n + 1), pt.GOOD.sock)
    r = ctx.chauthtok([ctx.old, "letmein", "letmein", "letmein", "letmein"])
    expect_ok(ctx, r, "letmein")
    check(has_log(r, "in known breaches, but fewer times than min_count"), "logged: %r" % r)


@test
def root_warning(ctx):
    if os.getuid() != 0:
        raise Skip("not root")
    # root without enforce_for_root: the message as a warning, then accepted.
    ctx.service("", pt.GOOD.sock)
    r = ctx.chauthtok([ctx.old, "letmein", "letmein", "letmein", "letmein"])
    check(breach_msg("letmein") in r.conv, "the warning is shown: %r" % r)
    expect_ok(ctx, r, "letmein")
    check(has_log(r, "not enforced for root: accepted with a warning"), "logged: %r" % r)
    # ... but an expired password is enforced even for root (pam_pwquality).
    r = ctx.chauthtok([ctx.old, "qwerty", "qwerty"], flags="(PAM_CHANGE_EXPIRED_AUTHTOK)")
    expect_refused(ctx, r, breach_msg("qwerty"))


@test
def user_enforced(ctx):
    # A user (not root) is refused without enforce_for_root.
    uid = None
    if os.getuid() == 0:
        if not shutil.which("setpriv"):
            raise Skip("setpriv is missing (util-linux)")
        uid = 65534
    ctx.service("", pt.GOOD.sock)
    r = ctx.chauthtok([ctx.old, "letmein", "letmein"], as_uid=uid)
    expect_refused(ctx, r, breach_msg("letmein"))


@test
def bad_options(ctx):
    # Logged and ignored, as pam_pwquality: the defaults (deny) stay.
    ctx.service(ENF + " frobnicate on_unknown=maybe timeout=soon retry=x socket=rel",
                pt.GOOD.sock)
    r = ctx.chauthtok([ctx.old, "letmein", "letmein"])
    expect_refused(ctx, r, breach_msg("letmein"))
    for opt in ("unknown option ignored: frobnicate",
                "bad value ignored, keeping the default: on_unknown=maybe",
                "bad value ignored, keeping the default: timeout=soon",
                "bad value ignored, keeping the default: retry=x",
                "bad value ignored, keeping the default: socket=rel"):
        check(has_log(r, re.escape(opt)), "%r logged: %r" % (opt, r))


SIMILAR_MSG = (r"it is a small change of a password seen [0-9,]+ times in data breaches")
TWEAK = "LetMeIn!!2027"  # a small change of letmein, not itself in the corpus


def similar_setup(ctx, opts):
    check(sha1hex(TWEAK) not in pt.CORPUS, "the tweak is in the demo corpus")
    ctx.service(ENF + " " + opts, pt.SIMILAR.sock)


@test
def similar_reject(ctx):
    similar_setup(ctx, "similar=reject")
    r = ctx.chauthtok([ctx.old, TWEAK, TWEAK])
    check(r.rc != 0 and re.search("BAD PASSWORD: " + SIMILAR_MSG, r.conv), "refused: %r" % r)
    expect_refused(ctx, r, "BAD PASSWORD: it is a small change")
    check(TWEAK not in r.conv and "letmein" not in r.conv.lower(),
          "the message names no password: %r" % r)
    check(has_log(r, r"user alice: new password refused: it is a small change of a popular "
                     r"breached password \(similar=reject\)"), "logged: %r" % r)
    check(not any(re.search(r"[0-9]{3}", ln) for ln in r.syslog if "small change" in ln),
          "no count in the log: %r" % r)


@test
def similar_warn(ctx):
    # warn, the default: accepted, the user warned
    similar_setup(ctx, "")
    r = ctx.chauthtok([ctx.old, TWEAK, TWEAK, TWEAK, TWEAK])
    expect_ok(ctx, r, TWEAK)
    check(re.search("Warning: " + SIMILAR_MSG, r.conv), "warned: %r" % r)
    check(has_log(r, r"new password accepted with a warning: it is a small change"),
          "logged: %r" % r)


@test
def similar_off_and_min_count(ctx):
    for opts in ("similar=off", "similar=reject similar_min_count=1000000000000"):
        similar_setup(ctx, opts)
        r = ctx.chauthtok([ctx.old, TWEAK, TWEAK, TWEAK, TWEAK])
        expect_ok(ctx, r, TWEAK)
        check("small change" not in r.conv, "%s: no message: %r" % (opts, r))
    # a daemon without the offline filter: the exact check only
    ctx.service(ENF + " similar=reject debug", pt.GOOD.sock)
    r = ctx.chauthtok([ctx.old, TWEAK, TWEAK, TWEAK, TWEAK])
    expect_ok(ctx, r, TWEAK)
    check(has_log(r, "similar passwords: not checked: breachd has no offline filter"),
          "logged: %r" % r)
    # the exact check still comes first
    similar_setup(ctx, "similar=reject")
    r = ctx.chauthtok([ctx.old, "letmein", "letmein"])
    expect_refused(ctx, r, breach_msg("letmein"))


@test
def banned_reject(ctx):
    """The attack: a module that asked breachd about a password it refused
    for a banned term would show in breachd's PW request count."""
    ctx.service(ENF, pt.BANNED.sock)  # breachd holds terms: reject by default
    for pw, kind in (("Alice2024!", "the user's own name"),
                     ("C0ntoso#2025", "the organisation's name"),
                     ("Winter2025", "a banned term")):
        before = pt.BANNED.stats()["requests_pw"]
        r = ctx.chauthtok([ctx.old, pw, pw])
        expect_refused(ctx, r, "BAD PASSWORD: it is made of " + kind)
        check(pw not in r.conv and "contoso" not in r.conv.lower(), "no term named: %r" % r)
        check(has_log(r, r"user alice: new password refused: it is made of %s \(banned=reject\)"
                      % re.escape(kind)), "logged: %r" % r)
        check(pt.BANNED.stats()["requests_pw"] == before, "%s was sent to breachd" % pw)
    good = clean_password()
    r = ctx.chauthtok([ctx.old] + [good] * 4)
    expect_ok(ctx, r, good)


@test
def banned_warn_and_off(ctx):
    ctx.service(ENF + " banned=warn", pt.BANNED.sock)
    r = ctx.chauthtok([ctx.old] + ["Winter2025"] * 4)
    expect_ok(ctx, r, "Winter2025")
    check("Warning: it is made of a banned term" in r.conv, "warned: %r" % r)
    ctx.service(ENF + " banned=off", pt.BANNED.sock)
    r = ctx.chauthtok([ctx.old] + ["Winter2025"] * 4)
    expect_ok(ctx, r, "Winter2025")
    # a breachd without terms: not checked by default; banned=reject checks
    # the user's names alone
    ctx.service(ENF, pt.GOOD.sock)
    r = ctx.chauthtok([ctx.old] + ["Alice2024!"] * 4)
    expect_ok(ctx, r, "Alice2024!")
    ctx.service(ENF + " banned=reject", pt.GOOD.sock)
    r = ctx.chauthtok([ctx.old, "Alice2024!", "Alice2024!"])
    expect_refused(ctx, r, "BAD PASSWORD: it is made of the user's own name")


@test
def no_secrets_in_logs(ctx):
    # Over every pam_syslog line of the tests above: no password typed, no
    # SHA-1 of one (nor its first 10 hex digits), no breach count.
    check(len(SYSLOG) > 20, "too few log lines collected (%d)" % len(SYSLOG))
    text = "\n".join(SYSLOG)
    for pw in SECRETS:
        h = sha1hex(pw)
        for bad in (pw, h[:10], h[:10].lower()):
            check(bad not in text, "a password or its hash was logged: %r" % bad)
        if h in pt.CORPUS:
            check(not re.search(r"\b%d\b" % pt.CORPUS[h], text), "a breach count was logged")



if __name__ == "__main__":
    sys.exit(pt.main())
