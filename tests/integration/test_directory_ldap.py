#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The OpenLDAP ppolicy check module (ppolicy_breachd.so) in a real slapd.

Each test runs Debian's slapd in the foreground with a slapd.conf of its
own (back_mdb and the ppolicy overlay loaded from /usr/lib/ldap, a
database in the test's directory), listening only on an ldapi:// socket
under the test's directory. The default policy entry names the module
(pwdCheckModule, pwdCheckQuality: 2) and its options (pwdCheckModuleArg).
Users change their own passwords with ldappasswd (the password modify
extended operation) and with ldapmodify of userPassword; breachd is real
(dirfx.py). Skips (77) when slapd or ldap-utils are not installed."""
import os
import re
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dirfx  # noqa: E402
import dtest  # noqa: E402
from dtest import check, test  # noqa: E402

SLAPD = "/usr/sbin/slapd"
LDAPADD = "/usr/bin/ldapadd"
LDAPMODIFY = "/usr/bin/ldapmodify"
LDAPPASSWD = "/usr/bin/ldappasswd"
MODULEDIR = "/usr/lib/ldap"
SUFFIX = "dc=example,dc=test"
ROOTDN = "cn=admin," + SUFFIX
ROOTPW = "admin-Pw-7d1c0e2f"
POLICY = "cn=default,ou=policies," + SUFFIX
ALICE = "uid=alice,ou=people," + SUFFIX
OLD = "Old-Pw-9f3b1c77-unbreached"

SLAPD_CONF = """include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
modulepath %(moduledir)s
moduleload back_mdb
moduleload ppolicy
pidfile %(dir)s/slapd.pid
argsfile %(dir)s/slapd.args
database mdb
maxsize 10485760
suffix "%(suffix)s"
rootdn "%(rootdn)s"
rootpw %(rootpw)s
directory %(dir)s/db
access to attrs=userPassword by self write by anonymous auth by * none
access to * by * read
overlay ppolicy
ppolicy_default "%(policy)s"
"""

BASE_LDIF = """dn: %(suffix)s
objectClass: dcObject
objectClass: organization
o: example
dc: example

dn: ou=policies,%(suffix)s
objectClass: organizationalUnit
ou: policies

dn: ou=people,%(suffix)s
objectClass: organizationalUnit
ou: people

dn: %(policy)s
objectClass: pwdPolicy
objectClass: pwdPolicyChecker
objectClass: organizationalRole
cn: default
pwdAttribute: userPassword
pwdCheckQuality: 2
pwdAllowUserChange: TRUE
pwdCheckModule: %(module)s
pwdCheckModuleArg: %(arg)s

dn: %(alice)s
objectClass: inetOrgPerson
uid: alice
cn: Alice Liddell
sn: Liddell
givenName: Alice
mail: wonderland@example.test
userPassword: %(old)s
"""


class Slapd:
    def __init__(self, ctx, arg):
        self.ctx = ctx
        self.dir = ctx.path("slapd")
        os.makedirs(os.path.join(self.dir, "db"))
        v = dict(moduledir=MODULEDIR, dir=self.dir, suffix=SUFFIX, rootdn=ROOTDN,
                 rootpw=ROOTPW, policy=POLICY, module=dtest.ARGS.module, arg=arg,
                 alice=ALICE, old=OLD)
        with open(self.path("slapd.conf"), "w") as f:
            f.write(SLAPD_CONF % v)
        self.url = "ldapi://" + urllib.parse.quote(self.path("ldapi"), safe="")
        self.out = self.path("slapd.out")
        with open(self.out, "wb") as log:
            # -d 256: in the foreground, its log (stats) on standard error
            self.proc = ctx.spawn([SLAPD, "-f", self.path("slapd.conf"), "-h", self.url,
                                   "-d", "256"], env=dirfx.server_env(), stdout=log,
                                  stderr=subprocess.STDOUT)
        dtest.wait_for(self.ready, timeout=20 * dtest.SLOW, what="slapd on " + self.url)
        with open(self.path("base.ldif"), "w") as f:
            f.write(BASE_LDIF % v)
        r = self.ldap(LDAPADD, ROOTDN, ROOTPW, "-f", self.path("base.ldif"))
        check(r.returncode == 0, r.stdout + r.stderr)

    def path(self, *p):
        return os.path.join(self.dir, *p)

    def ready(self):
        if self.proc.poll() is not None:
            raise AssertionError("slapd exited %d:\n%s" % (self.proc.returncode, self.log()))
        return os.path.exists(self.path("ldapi")) and self.ldap(
            "/usr/bin/ldapwhoami", ROOTDN, ROOTPW).returncode == 0

    def ldap(self, prog, binddn, bindpw, *args, input=None):
        return subprocess.run([prog, "-x", "-H", self.url, "-D", binddn, "-w", bindpw] +
                              list(args), input=input, capture_output=True, text=True,
                              timeout=30, env=dtest.base_env(),
                              preexec_fn=dtest._die_with_parent)

    def passwd(self, old, new):
        """alice changes her password with the password modify operation."""
        r = self.ldap(LDAPPASSWD, ALICE, old, "-a", old, "-s", new, "-e", "ppolicy")
        return r.returncode, r.stdout + r.stderr

    def modify(self, old, new):
        """alice replaces her userPassword with ldapmodify."""
        ldif = "dn: %s\nchangetype: modify\nreplace: userPassword\nuserPassword: %s\n" % (
            ALICE, new)
        r = self.ldap(LDAPMODIFY, ALICE, old, "-e", "ppolicy", input=ldif)
        return r.returncode, r.stdout + r.stderr

    def set_arg(self, arg):
        ldif = "dn: %s\nchangetype: modify\nreplace: pwdCheckModuleArg\npwdCheckModuleArg: %s\n" % (
            POLICY, arg)
        r = self.ldap(LDAPMODIFY, ROOTDN, ROOTPW, input=ldif)
        check(r.returncode == 0, r.stdout + r.stderr)

    def log(self):
        with open(self.out, errors="replace") as f:
            return f.read()


def setup():
    dirfx.need(SLAPD, LDAPADD, LDAPMODIFY, LDAPPASSWD, "/usr/bin/ldapwhoami",
               os.path.join(MODULEDIR, "ppolicy.so"), os.path.join(MODULEDIR, "back_mdb.so"))


def violation(rc, out, text):
    return rc != 0 and "Constraint violation (19)" in out and text in out


@test
def breached_refused_clean_accepted(ctx):
    dirfx.breachd(ctx)
    s = Slapd(ctx, "socket=%s timeout=%ds" % (ctx.path("breachd.sock"), 2 * dtest.SLOW))
    rc, out = s.passwd(OLD, "password")
    check(violation(rc, out, "has been seen 3,861,493 times in data breaches"), out)
    rc, out = s.modify(OLD, "letmein")
    check(violation(rc, out, "has been seen 577 times in data breaches"), out)
    clean = dirfx.clean_password()
    rc, out = s.passwd(OLD, clean)
    check(rc == 0, out)
    clean2 = dirfx.clean_password()
    rc, out = s.modify(clean, clean2)
    check(rc == 0, out)
    # the refused ones did not take: the last clean one is in force
    check(s.ldap("/usr/bin/ldapwhoami", ALICE, clean2).returncode == 0, "bind with new password")
    # the rootdn is above every ppolicy rule, this one included
    # (slapo-ppolicy(5)): docs/directories.md says so
    r = s.ldap(LDAPPASSWD, ROOTDN, ROOTPW, "-s", "letmein", ALICE)
    check(r.returncode == 0, r.stdout + r.stderr)
    dirfx.no_password_in([s.out], [OLD, clean, clean2, "letmein"])


@test
def min_count_and_options(ctx):
    dirfx.breachd(ctx)
    s = Slapd(ctx, "socket=%s min_count=10 timeout=%dms" % (ctx.path("breachd.sock"),
                                                          1500 * dtest.SLOW))
    rc, out = s.passwd(OLD, "rarely-seen")
    check(rc == 0, out)
    rc, out = s.passwd("rarely-seen", "Summer2024!")
    check(violation(rc, out, "seen 1,234 times"), out)
    # a bad option: refused, saying the check is misconfigured, one log line
    s.set_arg("socket=%s min_count=zero" % ctx.path("breachd.sock"))
    rc, out = s.passwd("rarely-seen", dirfx.clean_password())
    check(violation(rc, out, "misconfigured"), out)
    check("bad value of option min_count" in s.log(), s.log())


@test
def similar_options(ctx):
    # pwdCheckModuleArg similar=reject: Summer2024!! is a small change of
    # Summer2024! (1,234 times, at most 10% less in the offline filter)
    dirfx.breachd(ctx, similar=True)
    sock = ctx.path("breachd.sock")
    s = Slapd(ctx, "socket=%s similar=reject timeout=%ds" % (sock, 2 * dtest.SLOW))
    rc, out = s.passwd(OLD, "Summer2024!!")
    check(violation(rc, out, "it is a small change of a password seen 1,"), out)
    check("refused (similar=reject)" in s.log(), s.log())
    # warn (the default): accepted, one log line without the count
    s.set_arg("socket=%s timeout=%ds" % (sock, 2 * dtest.SLOW))
    rc, out = s.passwd(OLD, "Summer2024!!")
    check(rc == 0, out)
    warn = [ln for ln in s.log().splitlines() if "accepted (similar=warn)" in ln]
    check(len(warn) == 1 and not re.search(r"[0-9],[0-9]{3}", warn[0]), s.log())
    dirfx.no_password_in([s.out], [OLD, "Summer2024!!", "Summer2024!"])


@test
def banned_own_names_refused_nothing_sent(ctx):
    """banned= (docs/banned.md): the entry's own names (cn, sn, givenName,
    uid, the local part of mail) plus digits are refused before anything
    is sent (breachd's PW count does not move); a strong password is
    accepted."""
    d = dirfx.breachd(ctx, terms={"site_terms": "Contoso"})
    s = Slapd(ctx, "socket=%s timeout=%ds" % (ctx.path("breachd.sock"), 2 * dtest.SLOW))
    before = d.stats()["requests_pw"]
    for pw in ("Alice2024!", "L1ddell#99", "Wonderland7", "AliceLiddell1"):
        rc, out = s.passwd(OLD, pw)
        check(violation(rc, out, "it is made of the user's own name"), pw + ": " + out)
    rc, out = s.modify(OLD, "C0ntoso2025")
    check(violation(rc, out, "it is made of the organisation's name"), out)
    check(d.stats()["requests_pw"] == before, "a refused password was sent to breachd")
    check("refused (banned=reject)" in s.log(), s.log())
    clean = dirfx.clean_password()
    rc, out = s.passwd(OLD, clean)
    check(rc == 0, out)
    dirfx.no_password_in([s.out], [OLD, clean, "Alice2024!", "L1ddell#99", "Wonderland7"])


@test
def on_error_when_breachd_is_down_or_broken(ctx):
    sock = ctx.path("breachd.sock")
    s = Slapd(ctx, "socket=%s timeout=1s" % sock)
    clean = dirfx.clean_password()
    rc, out = s.passwd(OLD, clean)
    check(violation(rc, out, "could not be checked against known data breaches"), out)
    check(s.log().count("breachd is not running") == 1, s.log())
    for fake in (dirfx.garbage_breachd, lambda p: dirfx.garbage_breachd(p, with_id=False),
                 dirfx.mute_breachd):
        d = fake(sock)
        try:
            rc, out = s.passwd(OLD, clean)
            check(violation(rc, out, "could not be checked"), out)
        finally:
            d.stop()
            os.unlink(sock)
    log = s.log()
    check("unexpected answer" in log and log.count("no answer in time") == 2, log)
    check(log.count("ppolicy breachd: ") == 4, log)  # one line per check
    # on_error=allow: accepted, and said in the log
    s.set_arg("socket=%s timeout=1s on_error=allow" % sock)
    rc, out = s.passwd(OLD, clean)
    check(rc == 0, out)
    check("accepted (on_error=allow)" in s.log(), s.log())
    check(s.proc.poll() is None, "slapd still running")
    dirfx.no_password_in([s.out], [OLD, clean])


@test
def on_unknown_when_the_range_api_is_down(ctx):
    dirfx.unknown_breachd(ctx)
    sock = ctx.path("breachd.sock")
    s = Slapd(ctx, "socket=%s timeout=%ds" % (sock, 5 * dtest.SLOW))
    # "letmein" is a maybe of the filter; its range cannot be fetched
    rc, out = s.passwd(OLD, "letmein")
    check(violation(rc, out, "could not be checked against known data breaches"), out)
    check("breachd could not resolve a check" in s.log(), s.log())
    s.set_arg("socket=%s timeout=%ds on_unknown=allow" % (sock, 5 * dtest.SLOW))
    rc, out = s.passwd(OLD, "letmein")
    check(rc == 0, out)
    check("accepted (on_unknown=allow)" in s.log(), s.log())
    dirfx.no_password_in([s.out], [OLD, "letmein"])


@test
def only_the_sha1_crosses_the_socket(ctx):
    sock = ctx.path("breachd.sock")
    d = dirfx.recording_breachd(sock)
    try:
        s = Slapd(ctx, "socket=%s" % sock)
        new = dirfx.clean_password("Crosses \u00e9")
        rc, out = s.passwd(OLD, new)
        check(rc == 0, out)
    finally:
        d.stop()
    # PW of its SHA-1, then its variants' SHA-1s (similar=warn, the default)
    bad = dirfx.only_hashes_sent(d.lines, new)
    check(bad is None and len(d.lines) > 1, "requests %r: %s" % (d.lines[:3], bad))


if __name__ == "__main__":
    dtest.main(options=dirfx.OPTIONS, setup=setup)
