#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The MIT Kerberos pwqual module (pwqual_breachd.so) in a real realm.

Each test makes its own realm under its directory (kdb5_util create -s,
a kdc.conf whose [plugins] pwqual loads the module and whose [appdefaults]
breachd holds its options, KRB5_CONFIG / KRB5_KDC_PROFILE pointing there),
then changes passwords with kadmin.local, and with kpasswd through a
running krb5kdc and kadmind on loopback ports. breachd is real (dirfx.py:
a small corpus, its filter, its mirror behind nginx). Skips (77) when the
Kerberos server programs are not installed."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dirfx  # noqa: E402
import dtest  # noqa: E402
from dtest import check, test  # noqa: E402

REALM = "BREACHD.TEST"
KDB5_UTIL = "/usr/sbin/kdb5_util"
KADMIN_LOCAL = "/usr/sbin/kadmin.local"
KRB5KDC = "/usr/sbin/krb5kdc"
KADMIND = "/usr/sbin/kadmind"
KPASSWD = "/usr/bin/kpasswd"

KDC_CONF = """[kdcdefaults]
 kdc_listen = 127.0.0.1:%(kdc)d
 kdc_tcp_listen = 127.0.0.1:%(kdc)d
[realms]
 %(realm)s = {
  database_name = %(dir)s/principal
  key_stash_file = %(dir)s/stash
  acl_file = %(dir)s/kadm5.acl
  kadmind_listen = 127.0.0.1:%(kadmind)d
  kpasswd_listen = 127.0.0.1:%(kpasswd)d
 }
[logging]
 kdc = FILE:%(dir)s/kdc.log
 admin_server = FILE:%(dir)s/kadmind.log
 default = FILE:%(dir)s/krb5.log
[plugins]
 pwqual = {
  module = breachd:%(module)s
 }
[appdefaults]
 breachd = {
%(options)s }
"""

KRB5_CONF = """[libdefaults]
 default_realm = %(realm)s
 dns_lookup_kdc = false
 dns_lookup_realm = false
 rdns = false
 udp_preference_limit = 1
[realms]
 %(realm)s = {
  kdc = 127.0.0.1:%(kdc)d
  admin_server = 127.0.0.1:%(kadmind)d
  kpasswd_server = 127.0.0.1:%(kpasswd)d
 }
"""

OLD = "Old-Pw-9f3b1c77-unbreached"


class Realm:
    def __init__(self, ctx, **options):
        self.ctx = ctx
        self.dir = ctx.path("realm")
        os.mkdir(self.dir)
        self.ports = {"kdc": dtest.free_port(), "kadmind": dtest.free_port(),
                      "kpasswd": dtest.free_port()}
        # the module's default timeout (2 s), stretched for slow runs (valgrind)
        opts = dict(socket=ctx.path("breachd.sock"), timeout="%ds" % (2 * dtest.SLOW))
        opts.update(options)
        v = dict(self.ports, realm=REALM, dir=self.dir, module=dtest.ARGS.module,
                 options="".join("  %s = %s\n" % kv for kv in opts.items()))
        with open(self.path("kdc.conf"), "w") as f:
            f.write(KDC_CONF % v)
        with open(self.path("krb5.conf"), "w") as f:
            f.write(KRB5_CONF % v)
        with open(self.path("kadm5.acl"), "w") as f:
            f.write("*/admin@%s *\n" % REALM)
        self.env = dirfx.server_env({"KRB5_CONFIG": self.path("krb5.conf"),
                                     "KRB5_KDC_PROFILE": self.path("kdc.conf"),
                                     "KRB5CCNAME": "FILE:" + self.path("ccache"),
                                     "KRB5RCACHETYPE": "none"})
        self.run([KDB5_UTIL, "-r", REALM, "create", "-s", "-P", "master-" + OLD])

    def path(self, *p):
        return os.path.join(self.dir, *p)

    def run(self, argv, input=None, check_rc=True):
        r = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=30,
                           env=dtest.base_env(self.env), preexec_fn=dtest._die_with_parent)
        if check_rc and r.returncode != 0:
            raise AssertionError("%s: exit %d\n%s%s" % (argv[0], r.returncode, r.stdout,
                                                        r.stderr))
        return r

    def kadmin(self, query):
        """kadmin.local -q QUERY: its output (kadmin.local exits 0 either way)."""
        r = self.run([KADMIN_LOCAL, "-r", REALM, "-q", query])
        return r.stdout + r.stderr

    def add(self, name, password=None):
        """A principal with password, or a random key (no check made)."""
        out = self.kadmin("addprinc %s %s" % ("-pw " + password if password else "-randkey",
                                              name))
        check('Principal "%s@%s" created' % (name, REALM) in out, out)

    def serve(self):
        """krb5kdc and kadmind in the foreground on their loopback ports."""
        log = open(self.path("servers.out"), "wb")
        kdc = self.ctx.spawn([KRB5KDC, "-n", "-r", REALM, "-P", self.path("kdc.pid")],
                             env=self.env, stdout=log, stderr=subprocess.STDOUT)
        kadmind = self.ctx.spawn([KADMIND, "-nofork", "-r", REALM, "-P",
                                  self.path("kadmind.pid")],
                                 env=self.env, stdout=log, stderr=subprocess.STDOUT)
        dirfx.wait_listen(self.ports["kdc"], kdc)
        dirfx.wait_listen(self.ports["kpasswd"], kadmind)

    def kpasswd(self, name, old, new):
        return self.run([KPASSWD, name], input="%s\n%s\n%s\n" % (old, new, new), check_rc=False)

    def logs(self):
        return [self.path(n) for n in ("kdc.log", "kadmind.log", "krb5.log", "servers.out")]

    def log(self):
        out = ""
        for p in self.logs():
            if os.path.exists(p):
                with open(p, errors="replace") as f:
                    out += f.read()
        return out


def setup():
    dirfx.need(KDB5_UTIL, KADMIN_LOCAL, KRB5KDC, KADMIND, KPASSWD)


def refused(out, count_text):
    return "has been seen %s in data breaches" % count_text in out


@test
def kadmin_local_refuses_breached_accepts_clean(ctx):
    dirfx.breachd(ctx)
    realm = Realm(ctx)
    clean = dirfx.clean_password()
    realm.add("alice", OLD)
    out = realm.kadmin("cpw -pw password alice")
    check(refused(out, "3,861,493 times"), out)
    check("changed" not in out, out)
    out = realm.kadmin("cpw -pw letmein alice")
    check(refused(out, "577 times"), out)
    out = realm.kadmin("cpw -pw %s alice" % clean)
    check('Password for "alice@%s" changed' % REALM in out, out)
    # addprinc goes through the same check
    out = realm.kadmin("addprinc -pw Summer2024! bob")
    check(refused(out, "1,234 times") and "created" not in out, out)
    # ("password" itself is a word of kadmind's log lines: its hash is checked)
    dirfx.no_password_in(realm.logs(), ["letmein", "Summer2024!", clean])


@test
def similar_reject_warn(ctx):
    # Summer2024!! is a small change of Summer2024! (1,234 times), not itself
    # in the corpus; the module's similar= and similar_min_count options.
    dirfx.breachd(ctx, similar=True)
    realm = Realm(ctx, similar="reject", similar_min_count=1000)
    realm.add("alice", OLD)
    out = realm.kadmin("cpw -pw Summer2024!! alice")
    # (an offline count: at most 10% below the corpus's 1,234)
    check(re.search(r"small change of a password seen 1,[12][0-9]{2} times", out) and
          "changed" not in out, out)
    out = realm.kadmin("cpw -pw Letmein1 alice")  # letmein: 577, below 1000
    check("changed" in out, out)
    check("refused (similar=reject)" in realm.log(), realm.log())
    dirfx.no_password_in(realm.logs(), ["Summer2024!!", "Summer2024!", "Letmein1"])


@test
def banned_own_name_refused_nothing_sent(ctx):
    """banned= (docs/banned.md): the principal's own name plus digits is
    refused before anything is sent (breachd's PW count does not move); a
    strong password is accepted."""
    d = dirfx.breachd(ctx, terms={"site_terms": "Contoso"})
    realm = Realm(ctx)
    realm.add("jsmith/admin", OLD)
    before = d.stats()["requests_pw"]
    for pw, kind in (("Jsmith2024!", "the user's own name"), ("Adm1n#2025", "the user's own name"),
                     ("C0ntoso99", "the organisation's name")):
        out = realm.kadmin("cpw -pw %s jsmith/admin" % pw)
        check("it is made of %s" % kind in out and "changed" not in out, out)
    check(d.stats()["requests_pw"] == before, "a refused password was sent to breachd")
    check("refused (banned=reject)" in realm.log(), realm.log())
    clean = dirfx.clean_password()
    out = realm.kadmin("cpw -pw %s jsmith/admin" % clean)
    check("changed" in out, out)
    dirfx.no_password_in(realm.logs(), ["Jsmith2024!", "Adm1n#2025", "C0ntoso99", clean])


@test
def min_count_accepts_rarely_seen(ctx):
    dirfx.breachd(ctx)
    realm = Realm(ctx, min_count=10)
    realm.add("alice", OLD)
    out = realm.kadmin("cpw -pw rarely-seen alice")
    check("changed" in out, out)
    out = realm.kadmin("cpw -pw letmein alice")
    check(refused(out, "577 times"), out)


@test
def on_error_when_breachd_is_down_or_broken(ctx):
    sock = ctx.path("breachd.sock")
    realm = Realm(ctx)
    realm.add("alice")
    clean = dirfx.clean_password()
    # nothing listening: the default on_error=reject refuses, one log line
    out = realm.kadmin("cpw -pw %s alice" % clean)
    check("could not be checked against known data breaches" in out, out)
    check("changed" not in out, out)
    check(realm.log().count("breachd is not running") == 1, realm.log())
    # garbage, then silence: refused too, no hang beyond the timeout
    for fake in (dirfx.garbage_breachd, lambda p: dirfx.garbage_breachd(p, with_id=False),
                 dirfx.mute_breachd):
        d = fake(sock)
        try:
            out = realm.kadmin("cpw -pw %s alice" % clean)
            check("could not be checked" in out and "changed" not in out, out)
        finally:
            d.stop()
            os.unlink(sock)
    log = realm.log()
    check("unexpected answer" in log, log)
    check(log.count("no answer in time") == 2, log)
    check(log.count("pwqual breachd: ") == 4, log)  # one line per check
    # on_error=allow: accepted, and said in the log
    with open(realm.path("kdc.conf")) as f:
        conf = f.read()
    with open(realm.path("kdc.conf"), "w") as f:
        f.write(conf.replace(" breachd = {\n", " breachd = {\n  on_error = allow\n"))
    out = realm.kadmin("cpw -pw %s alice" % clean)
    check("changed" in out, out)
    check("accepted (on_error=allow)" in realm.log(), realm.log())
    dirfx.no_password_in(realm.logs(), [clean, OLD])


@test
def on_unknown_and_what_crosses_the_socket(ctx):
    dirfx.unknown_breachd(ctx)
    realm = Realm(ctx, timeout="%ds" % (5 * dtest.SLOW))
    realm.add("alice")
    out = realm.kadmin("cpw -pw letmein alice")  # a maybe; the range API is down
    check("could not be checked" in out and "changed" not in out, out)
    check("breachd could not resolve a check" in realm.log(), realm.log())
    ctx.daemons[0].stop_ok()
    # a breachd that records what it gets: one PW line, the SHA-1 alone,
    # then the variants' SHA-1s (similar=warn)
    d = dirfx.recording_breachd(ctx.path("breachd.sock"))
    try:
        new = dirfx.clean_password()
        out = realm.kadmin("cpw -pw %s alice" % new)
        check("changed" in out, out)
    finally:
        d.stop()
    bad = dirfx.only_hashes_sent(d.lines, new)
    check(bad is None and len(d.lines) > 1, "sent %r: %s" % (d.lines[:3], bad))


@test
def bad_option_refuses_and_says_which(ctx):
    dirfx.breachd(ctx)
    realm = Realm(ctx, on_error="maybe")
    out = realm.kadmin("addprinc -pw %s alice" % dirfx.clean_password())
    check("misconfigured" in out and "created" not in out, out)
    check("bad value of option on_error" in realm.log(), realm.log())


@test
def kpasswd_and_kadmin_through_kadmind(ctx):
    dirfx.breachd(ctx)
    realm = Realm(ctx)
    realm.add("alice", OLD)
    admin_pw = dirfx.clean_password("admin")
    realm.add("ops/admin", admin_pw)
    realm.serve()
    # kpasswd: refused. MIT 1.20's kpasswd service words the result itself
    # from the module's code: a breached password is a dictionary word
    # (KADM5_PASS_Q_DICT); the module's message is in kadmind's log.
    r = realm.kpasswd("alice", OLD, "password")
    out = r.stdout + r.stderr
    check(r.returncode != 0 and "Password change rejected" in out, out)
    check("found in a dictionary of possible passwords" in out, out)
    dirfx.wait_for_text(realm.path("kadmind.log"), "has been seen 3,861,493 times")
    clean = dirfx.clean_password()
    r = realm.kpasswd("alice", OLD, clean)
    check(r.returncode == 0 and "Password changed" in r.stdout, r.stdout + r.stderr)
    # the new password is the one in force: kinit with it works
    r = realm.run(["kinit", "alice"], input=clean + "\n", check_rc=False)
    check(r.returncode == 0, r.stdout + r.stderr)
    # an administrator through kadmind (kadmin over the network): refused,
    # in the code's words too (MIT 1.20 sends no module message over
    # kadmin's RPC either); the module's message is in kadmind's log
    r = realm.run(["kadmin", "-r", REALM, "-p", "ops/admin", "-w", admin_pw, "-q",
                   "cpw -pw letmein alice"], check_rc=False)
    out = r.stdout + r.stderr
    check("Password is in the password dictionary" in out and "changed." not in out, out)
    dirfx.wait_for_text(realm.path("kadmind.log"), "has been seen 577 times")
    # breachd stopped under a running kadmind: on_error (reject) applies
    ctx.daemons[0].stop_ok()
    r = realm.kpasswd("alice", clean, dirfx.clean_password())
    out = r.stdout + r.stderr
    check(r.returncode != 0 and "Password change rejected" in out, out)
    check("Unspecified password quality failure" in out, out)  # not a dictionary word
    dirfx.wait_for_text(realm.path("kadmind.log"), "breachd is not running")
    dirfx.no_password_in(realm.logs(), [OLD, clean, admin_pw, "letmein"])


if __name__ == "__main__":
    dtest.main(options=dirfx.OPTIONS, setup=setup)
