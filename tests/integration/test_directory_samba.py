#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Samba AD DC: data/hooks/samba-check-password as the `check password
script` of a real, provisioned domain controller.

The setup provisions a DC once (samba-tool domain provision, no DNS
backend, everything under the run's temp directory: --targetdir); each
test gives it an smb.conf of its own whose [global] names the hook, then
adds users and sets passwords with samba-tool working on the DC's
sam.ldb directly (-H .../private/sam.ldb -s smb.conf). Samba runs the
script in that mode too, exactly as the running DC does (its password
checks are in the database layer both use). breachd is real (dirfx.py).
Skips (77) when samba-tool or Samba's provisioning data is missing, or
when not run as root (provisioning sets the sysvol's NT ACLs)."""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dirfx  # noqa: E402
import dtest  # noqa: E402
import fleetfx  # noqa: E402
import ntfx  # noqa: E402
from dtest import check, test  # noqa: E402

SAMBA_TOOL = "/usr/bin/samba-tool"
AD_SCHEMA = "/usr/share/samba/setup/ad-schema"
ADMIN_PW = "Adm1n-Pw-unbreached-77"
BREACHED = "Summer2024!"  # meets Samba's complexity rules; seen 1,234 times
REFUSED = "does not meet the complexity criteria"  # what Samba says for the script
DC = {}


def setup():
    dirfx.need(SAMBA_TOOL)
    if os.getuid() != 0:
        # provisioning writes the sysvol's NT ACLs (security.* xattrs)
        raise dtest.Skip("Samba AD provisioning needs root")
    if not os.path.isdir(AD_SCHEMA):
        raise dtest.Skip("Samba's provisioning data is missing (install samba-ad-provision)")
    d = os.path.join(dtest.ROOT, "dc")
    t0 = time.monotonic()
    r = subprocess.run([SAMBA_TOOL, "domain", "provision", "--realm=BREACHD.TEST",
                        "--domain=BREACHD", "--server-role=dc", "--dns-backend=NONE",
                        "--targetdir=" + d, "--host-name=dc1", "--adminpass=" + ADMIN_PW,
                        "--option=interfaces = lo", "--option=bind interfaces only = yes"],
                       capture_output=True, text=True, timeout=300, env=dtest.base_env())
    check(r.returncode == 0, "provision: " + r.stdout[-2000:] + r.stderr[-2000:])
    print("provision took %.1fs" % (time.monotonic() - t0))
    DC["dir"] = d
    with open(os.path.join(d, "etc", "smb.conf")) as f:
        DC["conf"] = f.read()


class Dc:
    """The provisioned DC with this test's smb.conf: the hook with args."""

    def __init__(self, ctx, *args):
        self.ctx = ctx
        self.conf = ctx.path("smb.conf")
        hook = os.path.join(dtest.ARGS.source_root, "data", "hooks", "samba-check-password")
        line = "BREACHCTL=%s %s %s" % (dtest.ARGS.breachctl, hook, " ".join(args))
        conf = re.sub(r"\[global\]\n", "[global]\n\tcheck password script = %s\n" % line,
                      DC["conf"], count=1)
        with open(self.conf, "w") as f:
            f.write(conf)
        self.outputs = []

    def tool(self, *args):
        r = subprocess.run([SAMBA_TOOL] + list(args) + [
            "-s", self.conf, "-H", os.path.join(DC["dir"], "private", "sam.ldb")],
            capture_output=True, text=True, timeout=60, env=dtest.base_env(),
            preexec_fn=dtest._die_with_parent)
        self.outputs.append(r.stdout + r.stderr)
        return r.returncode, r.stdout + r.stderr

    def add(self, user, password):
        return self.tool("user", "add", user, password)

    def setpassword(self, user, password):
        return self.tool("user", "setpassword", user, "--newpassword=" + password)

    def must_change(self, user):
        """Whether user must change the password at the next logon
        (pwdLastSet 0: pdbedit shows "Password last set: 0")."""
        r = subprocess.run(["pdbedit", "-s", self.conf, "-v", user], capture_output=True,
                           text=True, timeout=60, env=dtest.base_env())
        check(r.returncode == 0, r.stdout + r.stderr)
        last = [ln for ln in r.stdout.splitlines() if ln.startswith("Password last set:")]
        check(len(last) == 1, r.stdout)
        return last[0].split(":", 1)[1].strip() == "0"

    def audit(self, *args):
        hook = os.path.join(dtest.ARGS.source_root, "data", "hooks", "samba-audit")
        r = subprocess.run([hook, "--smb-conf=" + self.conf] + list(args), capture_output=True,
                           text=True, timeout=120,
                           env=dtest.base_env({"BREACHCTL": dtest.ARGS.breachctl}),
                           preexec_fn=dtest._die_with_parent)
        self.outputs.append(r.stdout + r.stderr)
        return r.returncode, r.stdout + r.stderr

    def no_leak(self, passwords):
        for out in self.outputs:
            for p in passwords:
                check(p not in out, "password %r shown: %s" % (p, out))


@test
def breached_refused_clean_accepted(ctx):
    dirfx.breachd(ctx)
    dc = Dc(ctx, "--socket=" + ctx.path("breachd.sock"))
    u = "alice"
    rc, out = dc.add(u, BREACHED)
    check(rc != 0 and REFUSED in out, out)
    clean = dirfx.clean_password()
    rc, out = dc.add(u, clean)
    check(rc == 0 and "added successfully" in out, out)
    rc, out = dc.setpassword(u, BREACHED)
    check(rc != 0 and REFUSED in out, out)
    clean2 = dirfx.clean_password()
    rc, out = dc.setpassword(u, clean2)
    check(rc == 0 and "Changed password OK" in out, out)
    dc.no_leak([BREACHED, clean, clean2])


@test
def banned_own_name_refused_nothing_sent(ctx):
    """banned (docs/banned.md): the account's own name plus digits (and
    symbols, to meet Samba's complexity rules) is refused before anything
    is sent (breachd's PW count does not move); a strong one is accepted."""
    d = dirfx.breachd(ctx, terms={"site_terms": "Contoso"})
    dc = Dc(ctx, "--socket=" + ctx.path("breachd.sock"))
    before = d.stats()["requests_pw"]
    rc, out = dc.add("jsmith", "Jsmith2024!")
    check(rc != 0 and REFUSED in out, out)
    rc, out = dc.add("bob", "C0ntoso#2025")
    check(rc != 0 and REFUSED in out, out)
    check(d.stats()["requests_pw"] == before, "a refused password was sent to breachd")
    clean = dirfx.clean_password()
    rc, out = dc.add("jsmith", clean)
    check(rc == 0 and "added successfully" in out, out)
    rc, out = dc.setpassword("jsmith", "Jsmith#1990")
    check(rc != 0 and REFUSED in out, out)
    dc.no_leak(["Jsmith2024!", "C0ntoso#2025", clean, "Jsmith#1990"])


@test
def breachd_down_on_error(ctx):
    sock = ctx.path("breachd.sock")  # nothing listens there
    u = "bob"
    # the default refuses what could not be checked
    dc = Dc(ctx, "--socket=" + sock)
    rc, out = dc.add(u, dirfx.clean_password())
    check(rc != 0 and REFUSED in out, out)
    # --on-error=accept: accepted unchecked, even the breached one (which
    # shows that Samba's own rules accept it: the refusal above and in the
    # first test is the hook's)
    dc = Dc(ctx, "--socket=" + sock, "--on-error=accept")
    rc, out = dc.add(u, BREACHED)
    check(rc == 0, out)
    # a silent breachd: the hook gives up after its timeout and refuses
    d = dirfx.mute_breachd(sock)
    try:
        dc = Dc(ctx, "--socket=" + sock, "--timeout=1000")
        rc, out = dc.setpassword(u, dirfx.clean_password())
        check(rc != 0 and REFUSED in out, out)
    finally:
        d.stop()


@test
def audit_marks_accounts_breached_by_a_delta(ctx):
    """samba-audit --expire: a password that enters the NTLM corpus by a
    delta filter marks its account at the next run, the others stay."""
    carol_pw, dave_pw = dirfx.clean_password("carol"), dirfx.clean_password("dave")
    known = {ntfx.nthash(p): n for p, n in dirfx.KNOWN.items()}
    base = fleetfx.build(ctx, ctx.path("nt-base.bfuse"), known, 1, kind="password-ntlm")
    mirror = ctx.path("nt-mirror")
    ntfx.write_ntlm_range(mirror, known)
    d = dirfx.breachd(ctx, ntlm={"filter": base, "upstream": "file://%s/{prefix}.txt" % mirror})
    dc = Dc(ctx, "--socket=" + d.sock)
    for name, pw in (("carol", carol_pw), ("dave", dave_pw)):
        rc, out = dc.add(name, pw)
        check(rc == 0, out)
    # before: neither is breached, nothing marked
    rc, out = dc.audit("--socket=" + d.sock, "--expire")
    check("carol" not in out and "dave" not in out, out)
    check("summary: accounts=" in out, out)
    check(not dc.must_change("carol") and not dc.must_change("dave"), "marked too early")
    # carol's password enters the corpus: a delta, its range, a RELOAD
    delta = fleetfx.build(ctx, ctx.path("nt-delta.bfuse"), {ntfx.nthash(carol_pw): 42}, 2,
                          base=[base], kind="password-ntlm")
    ntfx.write_ntlm_range(mirror, dict(known, **{ntfx.nthash(carol_pw): 42}))
    conf = ctx.config(passwords={"filter": dirfx.fx().filter, "upstream": ""},
                      ntlm={"filter": "%s, %s" % (base, delta),
                            "upstream": "file://%s/{prefix}.txt" % mirror})
    check(conf == d.conf, "the same config file")
    ctx.breachctl("--socket", d.sock, "reload")
    rc, out = dc.audit("--socket=" + d.sock)  # a report only
    check(rc == 1 and "breached: carol (seen 42 times in data breaches)" in out, out)
    check(not dc.must_change("carol"), "marked without --expire")
    rc, out = dc.audit("--socket=" + d.sock, "--expire")
    check(rc == 1, out)
    check("marked carol: must change password at next logon (seen 42 times" in out, out)
    check("dave" not in out, out)
    check(dc.must_change("carol") and not dc.must_change("dave"), "carol alone marked")
    dc.no_leak([carol_pw, dave_pw, ntfx.nthash(carol_pw), ntfx.nthash(dave_pw)])


if __name__ == "__main__":
    dtest.main(setup=setup)
