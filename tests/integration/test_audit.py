#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachctl audit end to end: a generated directory of accounts (pwned,
clean, unknown, empty passwords, shared passwords, machine accounts, accounts
without an NT hash) written in every input format (pwdump, secretsdump with
its banner, progress, Kerberos and cleartext lines, Samba's pdbedit -Lw,
NAME:NTHASH, NAME:SHA1 with --kind password-sha1), audited through a real
breachd whose range API is nginx serving both HIBP corpora; output, JSON,
--machines, exit statuses, errors, one request per distinct hash, no hash
ever printed or logged, --html (the page's structure and content, and the
page rendered by headless Chromium with its charts drawn). Fake daemons check the bulk lane (LANE bulk, then
ERR unknown-verb from an older daemon), ERR busy and a daemon that goes away.
NT hashes come from ntfx.py. Standard library only; dtest.py is the harness."""
import html
import json
import os
import random
import re
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, sha1hex, test  # noqa: E402
from fakedaemon import FakeDaemon  # noqa: E402
from ntfx import EMPTY_NT, nginx_location, nthash, write_ntlm_range  # noqa: E402
import pngfx  # noqa: E402

LM_EMPTY = "aad3b435b51404eeaad3b435b51404ee"
NO_PW = "NO PASSWORD*********************"
XS = "X" * 32
CLEARTEXT = "Cleartext-Marker-9f2c"  # in a secretsdump cleartext line: never printed
_FX = {}


class Account:
    def __init__(self, name, pw, machine=False):
        self.name, self.pw, self.machine = name, pw, machine  # pw None: no NT hash


class Fixture:
    """The accounts, the mirror (ROOT/ntlm NTLM ranges, ROOT SHA-1 ranges)
    and what each password must answer."""

    def __init__(self, d):
        os.makedirs(d)
        self.dir = d
        rng = random.Random(1601)
        self.count = {"pwned-%d" % i: rng.randint(1, 10 ** 6) for i in range(40)}
        self.clean = ["clean-%d" % i for i in range(40)]
        taken = set()
        for p in list(self.count) + self.clean:
            taken |= {nthash(p)[:5], sha1hex(p)[:5]}
        self.lost, i = [], 0
        while len(self.lost) < 6:
            p = "lost-%d" % i
            i += 1
            if nthash(p)[:5] not in taken and sha1hex(p)[:5] not in taken:
                taken |= {nthash(p)[:5], sha1hex(p)[:5]}
                self.lost.append(p)
        ntlm = {nthash(p): n for p, n in self.count.items()}
        sha = {sha1hex(p): n for p, n in self.count.items()}
        for p in self.clean:  # their ranges exist; they are not in them
            ntlm[nthash(p)[:5] + "F" * 27] = 3
            sha[sha1hex(p)[:5] + "F" * 35] = 3
        self.root = os.path.join(d, "mirror")
        write_ntlm_range(os.path.join(self.root, "ntlm"), ntlm, padding=2)
        dtest.write_range(self.root, sha)
        self.accounts = self.make_accounts(rng)

    def make_accounts(self, rng):
        pwned, out = list(self.count), []
        for i in range(120):
            kind = i % 6
            if kind in (0, 1):
                pw = rng.choice(pwned[:12])  # a few passwords, shared
            elif kind == 2:
                pw = self.clean[i % len(self.clean)]  # some shared
            elif kind == 3:
                pw = pwned[12 + i % 28]
            elif kind == 4:
                pw = self.lost[i % len(self.lost)] if i % 4 else ""
            else:
                pw = self.clean[(i * 7) % len(self.clean)] if i % 5 else None
            out.append(Account("user%03d" % i, pw))
            if i % 17 == 0:
                out.append(Account("WS%02d$" % i, rng.choice(pwned + self.clean), machine=True))
        return out

    def status(self, pw, ntlm=True):
        if ntlm and pw == "":
            return "EMPTY"
        if pw in self.count:
            return "PWNED %d" % self.count[pw]
        if pw in self.lost:
            return "UNKNOWN upstream-error"
        return "CLEAN"

    def expected(self, names, accounts, machines=False, ntlm=True):
        """The report: one line per audited account, the summary, the groups."""
        lines, n = [], {"pwned": 0, "clean": 0, "unknown": 0, "empty": 0}
        groups, skipped, no_hash = {}, 0, 0
        for a, name in zip(accounts, names):
            if a.machine and not machines:
                skipped += 1
                continue
            if a.pw is None:
                no_hash += 1
                continue
            st = self.status(a.pw, ntlm)
            lines.append("%s %s" % (name, st))
            n[st.split()[0].lower()] += 1
            if st != "EMPTY":
                groups.setdefault(a.pw, []).append(name)
        lines.append("summary: accounts=%d pwned=%d clean=%d unknown=%d empty=%d errors=0 "
                     "machines_skipped=%d no_hash=%d" % (sum(n.values()), n["pwned"], n["clean"],
                                                         n["unknown"], n["empty"], skipped,
                                                         no_hash))
        lines += ["shared: " + ", ".join(g) for g in groups.values() if len(g) > 1]
        return lines


def fx():
    if "fx" not in _FX:
        _FX["fx"] = Fixture(os.path.join(dtest.ROOT, "fixture"))
    return _FX["fx"]


def hexcase(h, i):
    return h.lower() if i % 3 == 1 else h


# ---- the formats: (lines, the names the report uses) --------------------------

def pwdump(accounts):
    lines, names = [], []
    for i, a in enumerate(accounts):
        nt = NO_PW if a.pw is None else hexcase(nthash(a.pw), i)
        lines.append("%s:%d:%s:%s:::" % (a.name, 1000 + i, NO_PW if i % 2 else LM_EMPTY, nt))
        names.append(a.name)
    return lines, names, accounts


def secretsdump(accounts):
    lines = ["Impacket v0.11.0 - Copyright 2023 Fortra", "",
             "[*] Target system bootKey: 0x0123456789abcdef0123456789abcdef",
             "[*] Dumping Domain Credentials (domain\\uid:rid:lmhash:nthash)",
             "[*] Using the DRSUAPI method to get NTDS.DIT secrets"]
    names = []
    for i, a in enumerate(accounts):
        name = a.name if i < 2 else "CONTOSO\\" + a.name  # the builtin ones have no domain
        nt = NO_PW if a.pw is None else hexcase(nthash(a.pw), i)
        suffix = ["", " (status=Enabled)", " (pwdLastSet=2024-01-02 10:11) (status=Disabled)"][i % 3]
        lines.append("%s:%d:%s:%s:::%s" % (name, 500 + i, LM_EMPTY, nt, suffix))
        names.append(name)
    lines.append("[*] Kerberos keys grabbed")
    for a in accounts[:5]:
        lines.append("CONTOSO\\%s:aes256-cts-hmac-sha1-96:%s" % (a.name, "ab" * 32))
        lines.append("CONTOSO\\%s:des-cbc-md5:%s" % (a.name, "cd" * 8))
    lines.append("[*] ClearText passwords grabbed")
    lines.append("CONTOSO\\%s:CLEARTEXT:%s" % (accounts[3].name, CLEARTEXT))
    lines.append("[*] Cleaning up...")
    return lines, names, accounts


def pdbedit(accounts):
    lines, names = [], []
    for i, a in enumerate(accounts):
        nt = XS if a.pw is None else hexcase(nthash(a.pw), i)
        flags = "[W          ]" if a.machine else "[DU         ]" if i % 4 == 0 else "[U          ]"
        lines.append("%s:%d:%s:%s:%s:LCT-5F3A2B1C:" % (a.name, 1000 + i, XS, nt, flags))
        names.append(a.name)
    return lines, names, accounts


def user_hash(accounts):
    """NAME:NTHASH has no way to say "no hash": those accounts are left out
    (the third value: the accounts written)."""
    kept = [a for a in accounts if a.pw is not None]
    return ["%s:%s" % (a.name, hexcase(nthash(a.pw), i)) for i, a in enumerate(kept)], \
        [a.name for a in kept], kept


FORMATS = {"pwdump": pwdump, "secretsdump": secretsdump, "pdbedit": pdbedit,
           "user-hash": user_hash}


def write(ctx, name, lines, crlf=False):
    path = ctx.path(name)
    with open(path, "w", newline="") as f:
        f.write(("\r\n" if crlf else "\n").join(lines) + "\n")
    return path


def start(ctx, **sections):
    f = fx()
    port = ctx.nginx(f.root, location=nginx_location(f.root))
    up = "http://127.0.0.1:%d/range/{prefix}" % port
    sections.setdefault("upstream", {}).setdefault("rate", 100000)
    conf = ctx.config(passwords={"filter": "", "upstream": up},
                      ntlm={"upstream": up + "?mode=ntlm"}, **sections)
    return ctx.daemon(conf)


def audit(d, *args, stdin=None, env=None):
    e = {"BREACHD_SOCKET": d if isinstance(d, str) else d.sock}
    e.update(env or {})
    r = subprocess.run([dtest.ARGS.breachctl, "audit"] + list(args), env=dtest.base_env(e),
                       input=stdin if stdin is not None else "", capture_output=True, text=True,
                       timeout=120)
    check("Sanitizer" not in r.stderr and "runtime error:" not in r.stderr,
          "sanitizer report:\n" + r.stderr)
    return r


def secrets_of(accounts):
    """Every text the report must never hold: the hashes (both cases), the
    LM hash, the cleartext line's password."""
    out = {LM_EMPTY, LM_EMPTY.upper(), CLEARTEXT}
    for a in accounts:
        if a.pw is not None:
            for h in (nthash(a.pw), sha1hex(a.pw)):
                out |= {h, h.lower()}
    return out


def no_secret(r, secrets, what):
    for s in secrets:
        check(s not in r.stdout and s not in r.stderr, "%s: %r printed" % (what, s))


@test
def every_format(ctx):
    f = fx()
    d = start(ctx)
    secrets = secrets_of(f.accounts)
    for fmt, writer in FORMATS.items():
        lines, names, accts = writer(f.accounts)
        path = write(ctx, fmt + ".txt", lines, crlf=fmt == "pdbedit")
        want = f.expected(names, accts)
        for args, stdin in [([path], None), (["--format", fmt, path], None),
                            (["-"], "\n".join(lines) + "\n"), ([], "\n".join(lines))]:
            r = audit(d, *args, stdin=stdin)
            eq(r.stdout.splitlines(), want, "%s %s" % (fmt, args))
            eq(r.returncode, 1, "%s: pwned accounts: exit 1" % fmt)
            no_secret(r, secrets, fmt)
    d.stop_ok()
    log = d.log()
    for s in secrets:
        check(s not in log, "breachd logged a hash")


@test
def sha1_kind(ctx):
    f = fx()
    d = start(ctx)
    kept = [a for a in f.accounts if a.pw]  # the empty password is an NT notion
    path = write(ctx, "sha1.txt", ["%s:%s" % (a.name, sha1hex(a.pw)) for a in kept])
    r = audit(d, "--kind", "password-sha1", path)
    eq(r.stdout.splitlines(), f.expected([a.name for a in kept], kept, ntlm=False), "SHA-1 audit")
    eq(r.returncode, 1, "exit 1")
    s = d.stats()
    eq((s["requests_nt"], s["requests_pw"]), (0, len({a.pw for a in kept if not a.machine})),
       "PW requests, one per distinct hash")
    # NT lines with --kind password-sha1, and the other way round
    lines, _, _ = pwdump(f.accounts[:3])
    r = audit(d, "--kind", "password-sha1", stdin="\n".join(lines))
    eq(r.returncode, 2, "pwdump with password-sha1")
    check("<stdin>:1: pwdump, secretsdump and pdbedit lines hold NT hashes: use --kind "
          "password-ntlm" in r.stderr, r.stderr)
    r = audit(d, path)
    eq(r.returncode, 2, "SHA-1 lines read as NT")
    check("%s:1: the hash is not 32 hex digits (an NT hash)" % path in r.stderr, r.stderr)
    no_secret(r, secrets_of(kept), "errors")
    d.stop_ok()


@test
def json_machines_and_dedup(ctx):
    f = fx()
    d = start(ctx)
    lines, names, _ = secretsdump(f.accounts)
    path = write(ctx, "dump.ntds", lines)
    r = audit(d, "--json", "--machines", path)
    eq(r.returncode, 1, "exit 1")
    want = f.expected(names, f.accounts, machines=True)
    objs = [json.loads(ln) for ln in r.stdout.splitlines()]
    got = []
    for o in objs[:-1]:
        st = o["status"] + (" %d" % o["count"] if "count" in o else "") + \
            (" " + o["reason"] if "reason" in o else "")
        got.append("%s %s" % (o["user"], st))
    eq(got, want[:len(got)], "JSON accounts")
    summ = objs[-1]
    eq(sorted(summ), ["shared", "summary"], "the last object")
    eq("summary: accounts=%(accounts)d pwned=%(pwned)d clean=%(clean)d unknown=%(unknown)d "
       "empty=%(empty)d errors=%(errors)d machines_skipped=%(machines_skipped)d "
       "no_hash=%(no_hash)d" % summ["summary"], want[len(got)], "JSON summary")
    eq(["shared: " + ", ".join(g) for g in summ["shared"]], want[len(got) + 1:], "JSON groups")
    # one request per distinct non-empty hash
    distinct = {a.pw for a in f.accounts if a.pw}
    eq(d.stats()["requests_nt"], len(distinct), "requests_nt")
    d.stop_ok()


@test
def exit_statuses_and_errors(ctx):
    f = fx()
    d = start(ctx)
    clean = [Account("c%d" % i, p) for i, p in enumerate(f.clean[:5])]
    r = audit(d, stdin="\n".join(user_hash(clean)[0]))
    eq((r.returncode, r.stdout.splitlines()[:5]), (0, ["c%d CLEAN" % i for i in range(5)]),
       "all clean: 0")
    lost = clean + [Account("l0", f.lost[0])]
    r = audit(d, stdin="\n".join(user_hash(lost)[0]))
    eq(r.returncode, 3, "unknown, none pwned: 3")
    r = audit(d, stdin="e0:%s\n" % EMPTY_NT)
    eq((r.returncode, r.stdout.splitlines()[0]), (1, "e0 EMPTY"), "an empty password: 1")
    eq(d.stats()["requests_nt"], 5 + 6, "the empty password's hash is not asked")
    # malformed input: FILE:LINE, nothing checked, nothing quoted
    lines, _, _ = pwdump(f.accounts[:4])
    lines.insert(2, "user9:notanumber:%s:%s:::" % (LM_EMPTY, nthash("pwned-1")))
    path = write(ctx, "bad.txt", lines)
    r = audit(d, path)
    eq((r.returncode, r.stdout), (2, ""), "a bad line: nothing audited")
    eq(r.stderr.strip(), "breachctl: audit: %s:3: not an account line of pwdump, secretsdump, "
       "pdbedit -Lw or NAME:HASH" % path, "the error")
    r = audit(d, "--format", "pdbedit", path)
    check("%s:1: not a pdbedit -Lw line" % path in r.stderr and r.returncode == 2, r.stderr)
    no_secret(r, secrets_of(f.accounts[:4]), "errors")
    r = audit(d, stdin="WS01$:%s\n" % nthash("x"))
    eq(r.returncode, 2, "only machine accounts: nothing to audit")
    check("no account to audit in <stdin> (1 machine accounts skipped: --machines audits them"
          in r.stderr, r.stderr)
    # NetExec's --ntds output, log prefix and progress lines included; a SID
    # as the RID; colour codes refused with the fix
    nxc = ("SMB         10.0.0.5        445    DC01             [*] Dumping the NTDS, this could "
           "take a while so go grab a redbull...\n"
           "SMB         10.0.0.5        445    DC01             CONTOSO\\alice:1103:%s:%s:::\n"
           "SMB         10.0.0.5        445    DC01             [+] Dumped 1 NTDS hashes\n"
           "CONTOSO\\bob:S-1-5-21-1-2-3-1104:%s:%s::: (status=Enabled)\n"
           % (LM_EMPTY, nthash("pwned-2"), LM_EMPTY, nthash(f.clean[0])))
    r = audit(d, stdin=nxc)
    eq((r.returncode, r.stdout.splitlines()[:2]),
       (1, ["CONTOSO\\alice PWNED %d" % f.count["pwned-2"], "CONTOSO\\bob CLEAN"]), "NetExec lines")
    r = audit(d, stdin="\033[1;34mSMB\033[0m 10.0.0.5 445 DC01 alice:1103:%s:%s:::\n"
              % (LM_EMPTY, nthash("pwned-2")))
    eq(r.returncode, 2, "colour codes")
    check("terminal colour codes" in r.stderr and "~/.nxc/logs/*.ntds" in r.stderr, r.stderr)
    r = audit(d, "--machines", stdin="WS01$:%s\n" % nthash("pwned-2"))
    eq((r.returncode, r.stdout.splitlines()[0]), (1, "WS01$ PWNED %d" % f.count["pwned-2"]),
       "--machines")
    for bad in (["--format", "samba"], ["--kind", "url-sha256"], ["a", "b"],
                ["--kind", "password-sha1", "--format", "pwdump"], [ctx.path("missing")]):
        r = audit(d, *bad)
        eq(r.returncode, 2, "bad usage %r" % bad)
    r = audit(d, "--help")
    check(r.returncode == 0 and "Usage: breachctl audit" in r.stdout, "--help")
    d.stop_ok()


# ---- fake daemons: the bulk lane, busy, a daemon that goes away ---------------

def fake_answers(counts, seen, lane="OK", busy=0, close_after=None):
    """A handler answering LANE with `lane`, NT with PWNED counts[hash] or
    CLEAN, the first `busy` NT requests with ERR busy; it records the request
    lines in seen and closes after close_after requests."""
    state = {"busy": busy}

    def handler(n, rid, rest, conn):
        seen.append(rest)
        if close_after is not None and n > close_after:
            return "close"
        verb, _, arg = rest.partition(" ")
        if verb == "LANE":
            ans = lane
        elif verb == "NT" and state["busy"] > 0:
            state["busy"] -= 1
            ans = "ERR busy too many requests in flight on this connection"
        elif verb == "NT":
            ans = "PWNED %d" % counts[arg] if arg in counts else "CLEAN"
        else:
            ans = "ERR unknown-verb verbs are PING VERSION PW NT URL STATS RELOAD"
        conn.sendall(("%s %s\n" % (rid, ans)).encode())
    return handler


def fake_input(n=40):
    accts = [Account("u%02d" % i, "pw-%d" % (i % 13)) for i in range(n)]
    counts = {nthash("pw-%d" % k): 100 + k for k in range(0, 13, 2)}
    want = ["u%02d %s" % (i, "PWNED %d" % (100 + i % 13) if i % 13 % 2 == 0 else "CLEAN")
            for i in range(n)]
    return "\n".join(user_hash(accts)[0]) + "\n", counts, want


@test
def bulk_lane(ctx):
    text, counts, want = fake_input()
    cases = [("OK", None), ("ERR unknown-verb verbs are PING VERSION PW URL", "no bulk lane"),
             ("ERR bad-request no such lane", "LANE bulk was not accepted")]
    for i, (lane, note) in enumerate(cases):
        seen = []
        sock = ctx.path("fake-%d.sock" % i)
        fd = FakeDaemon(sock, fake_answers(counts, seen, lane=lane))
        try:
            r = audit(sock, stdin=text)
        finally:
            fd.stop()
        eq(r.stdout.splitlines()[:len(want)], want, "answers (%s)" % lane)
        eq(r.returncode, 1, "exit 1")
        eq(seen[0], "LANE bulk", "LANE bulk first")
        eq(len(seen), 1 + 13, "then one NT request per distinct hash")
        if note:
            check(note in r.stderr, "the lane is reported: %r" % r.stderr)
        else:
            eq(r.stderr, "", "nothing said on the bulk lane")


@test
def busy_and_gone(ctx):
    text, counts, want = fake_input()
    seen = []
    sock = ctx.path("busy.sock")
    fd = FakeDaemon(sock, fake_answers(counts, seen, busy=20))
    try:
        r = audit(sock, stdin=text)
    finally:
        fd.stop()
    eq(r.stdout.splitlines()[:len(want)], want, "ERR busy asked again")
    eq(r.returncode, 1, "exit 1")
    # 20 busy answers: all 13 hashes, then 7 of them again, then those 7
    eq(len([s for s in seen if s.startswith("NT ")]), 13 + 13 + 7, "busy ones asked again")

    seen = []
    sock = ctx.path("gone.sock")
    fd = FakeDaemon(sock, fake_answers(counts, seen, close_after=6))
    try:
        r = audit(sock, stdin=text)
    finally:
        fd.stop()
    lines = r.stdout.splitlines()
    eq(r.returncode, 2, "a daemon that goes away: error")
    eq(len(lines), len(want) + 1 + 13, "still one line per account, the summary, 13 groups")
    errs = [ln for ln in lines[:len(want)] if " ERR " in ln]
    check(errs and all("connection closed by breachd" in ln for ln in errs), "ERR lines: %r" % lines)
    check("errors=%d" % len(errs) in lines[len(want)], lines[len(want)])


@test
def secretsdump_history_and_secrets(ctx):
    """secretsdump -history with LSA secrets and cached credentials in the
    same run: the sections' lines are skipped and counted by kind on stderr
    (never quoted), the NT hashes after them audited; NAME_historyN lines are
    old passwords of NAME, reported apart ("history: NAME N ..."), not
    counted as accounts, in no shared group; DC01$_historyN is a machine's."""
    f = fx()
    d = start(ctx)
    pw = list(f.count)
    lsa_secret = "Service-Secret-5e1d"
    lines = ["Impacket v0.11.0 - Copyright 2023 Fortra",
             "[*] Dumping local SAM hashes (uid:rid:lmhash:nthash)",
             "Administrator:500:%s:%s:::" % (LM_EMPTY, nthash(pw[0])),
             "[*] Dumping cached domain logon information (domain/username:hash)",
             "CONTOSO.LOCAL/alice:$DCC2$10240#alice#%s: (2024-01-02 10:11:12)" % ("ab" * 16),
             "[*] Dumping LSA Secrets",
             "[*] $MACHINE.ACC ",
             "CONTOSO\\DC01$:aes256-cts-hmac-sha1-96:%s" % ("cd" * 32),
             "CONTOSO\\DC01$:plain_password_hex:%s" % ("ef" * 20),
             "CONTOSO\\DC01$:%s:%s:::" % (LM_EMPTY, nthash(pw[1])),
             "[*] DPAPI_SYSTEM ",
             "dpapi_machinekey:0x%s" % ("12" * 20),
             "[*] _SC_MSSQLSERVER ",
             "CONTOSO\\sqlsvc:%s" % lsa_secret,
             "[*] NL$KM ",
             " 0000   8B 2D 5E 8C 39 36 2A 8E  C1 8D DE 9D 41 6A 9F 5B   .-^.96*.....Aj.[",
             "[*] Dumping Domain Credentials (domain\\uid:rid:lmhash:nthash)",
             "CONTOSO\\alice:1103:%s:%s:::" % (LM_EMPTY, nthash(f.clean[0])),
             "CONTOSO\\alice_history0:1103:%s:%s:::" % (LM_EMPTY, nthash(pw[2])),
             "CONTOSO\\alice_history1:1103:%s:%s:::" % (LM_EMPTY, nthash(f.clean[0])),
             "CONTOSO\\bob:1104:%s:%s:::" % (LM_EMPTY, nthash(pw[2])),
             "CONTOSO\\DC01$:1000:%s:%s:::" % (LM_EMPTY, nthash(pw[3])),
             "CONTOSO\\DC01$_history0:1000:%s:%s:::" % (LM_EMPTY, nthash(pw[4])),
             "[*] Cleaning up..."]
    path = write(ctx, "history.txt", lines)
    r = audit(d, path)
    eq(r.returncode, 1, "exit status (pwned accounts): " + r.stderr)
    eq(r.stdout.splitlines(), [
        "Administrator PWNED %d" % f.count[pw[0]],
        "CONTOSO\\alice CLEAN",
        "CONTOSO\\bob PWNED %d" % f.count[pw[2]],
        "history: CONTOSO\\alice 0 PWNED %d" % f.count[pw[2]],
        "history: CONTOSO\\alice 1 CLEAN",
        "summary: accounts=3 pwned=2 clean=1 unknown=0 empty=0 errors=0 machines_skipped=2 "
        "no_hash=0 history=2 history_pwned=1"], "the report")
    eq(r.stderr.strip(), "breachctl: audit: %s: skipped, not audited: cached_dcc2=1 "
       "lsa_secrets=6" % path, "the skipped lines by kind")
    for s in [lsa_secret, "cd" * 32, "ef" * 20, "12" * 20] + [nthash(p) for p in pw[:5]]:
        check(s not in r.stdout and s not in r.stderr, "%r printed" % s)
    r = audit(d, "--json", path)
    first = json.loads(r.stdout.splitlines()[3])
    eq(first, {"user": "CONTOSO\\alice", "history": 0, "status": "PWNED",
               "count": f.count[pw[2]]}, "history in JSON")
    summary = json.loads(r.stdout.splitlines()[-1])["summary"]
    eq((summary["accounts"], summary["history"], summary["history_pwned"]), (3, 2, 1), "summary")
    d.stop_ok()


# ---- --html: the report as one page --------------------------------------------

def html_section(page, sid):
    """The text of the page from the heading with id sid to the next heading."""
    i = page.index('id="%s"' % sid)
    j = page.find("<h2", i)
    return page[i:j if j >= 0 else len(page)]


def html_rows(section):
    return [[html.unescape(re.sub(r"<[^>]*>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>",
                                                                        row)]
            for row in re.findall(r"<tr>(.*?)</tr>", section) if "<td" in row]


# The chart colours of audit_html.c, and the page's: each chart's bars.
COLOURS = {"chart-counts": (0xc0, 0x39, 0x2b), "chart-reuse": (0xd6, 0x89, 0x10),
           "chart-summary": (0x1a, 0x52, 0x76)}


@test
def html_report(ctx):
    """--html OUT: one page, no script, nothing to fetch, no hash or password,
    the privacy note first; breached accounts most seen first, the reuse
    groups, three SVG charts with one bar per value; names escaped. Then the
    page rendered by headless Chromium: the charts' bars are drawn."""
    f = fx()
    d = start(ctx)
    accts = f.accounts + [Account("<script>alert(1)</script>", list(f.count)[0]),
                          Account('a&b"c', list(f.count)[0])]
    lines, names, accts = pwdump(accts)
    path = write(ctx, "dump.txt", lines)
    out = ctx.path("report.html")
    r = audit(d, "--html", out, path)
    eq(r.returncode, 1, "exit 1: " + r.stderr)
    want = f.expected(names, accts)
    eq(r.stdout.splitlines(), want, "the text report is unchanged")
    eq(stat.S_IMODE(os.stat(out).st_mode), 0o600, "a new report is 0600")
    with open(out, encoding="utf-8") as fh:
        page = fh.read()
    check(page.startswith("<!DOCTYPE html>"), "an HTML5 page")
    check("default-src 'none'" in page, "a Content-Security-Policy that fetches nothing")
    for bad in ("<script", "http://", "https://", "<img", "<link", "src=", "href=", "url("):
        check(bad not in page.replace("&lt;script&gt;", ""), "the page holds %r" % bad)
    for sec in secrets_of(accts) | {a.pw for a in accts if a.pw}:
        check(sec not in page, "the page holds a hash or a password: %r" % sec)
    note = page.index('id="privacy"')
    check(note < page.index("<h2") and "no password and no password hash" in page[note:note + 200],
          "the privacy note comes first")
    # the breached accounts, most seen first (then by name)
    pwned = [(ln.rsplit(" ", 2)[0], int(ln.rsplit(" ", 1)[1])) for ln in want
             if " PWNED " in ln]
    pwned.sort(key=lambda x: (-x[1], x[0]))
    got = [(row[0], int(row[1].replace(",", ""))) for row in html_rows(html_section(page,
                                                                                     "breached"))]
    eq(got, pwned, "the breached accounts, most seen first")
    check("<script>alert(1)</script>" in [n for n, _ in got] and
          "&lt;script&gt;alert(1)&lt;/script&gt;" in page and 'a&amp;b&quot;c' in page,
          "names are escaped")
    # the groups: the text report's, largest first
    groups = [ln[len("shared: "):].split(", ") for ln in want if ln.startswith("shared: ")]
    rows = html_rows(html_section(page, "reuse"))
    eq(sorted(row[3].split(", ") for row in rows), sorted(groups), "the reuse groups")
    eq([int(row[1]) for row in rows], sorted((len(g) for g in groups), reverse=True),
       "largest first")
    # the charts: the bars' values are the counts
    for cid in COLOURS:
        check('<svg id="%s"' % cid in page, "chart %s" % cid)
    counts = re.search(r'<svg id="chart-counts".*?</svg>', page, re.S).group(0)
    bars = [int(v.replace(",", "")) for v in re.findall(r"<text x=\"\d+\" y=\"\d+\">([\d,]+)<",
                                                        counts)]
    want_bars = [0] * 8  # once, 2-9, 10-99, ..., a million or more
    for _, n in pwned:
        want_bars[min(0 if n == 1 else len(str(n)), 7)] += 1
    eq(bars, want_bars, "the count chart: breached accounts per decade of their count")
    d.stop_ok()

    # Rendered: each chart's bars are there, below the note, in page order.
    png = ctx.path("report.png")
    pngfx.render(out, png, width=900, height=2400, scale=0.5)
    img = pngfx.read(png)
    tops = {}
    for cid, rgb in COLOURS.items():
        ys = pngfx.rows_with(img, rgb)
        check(len(ys) >= 3 and pngfx.count(img, rgb) >= 200,
              "chart %s is not drawn (%d rows of its colour)" % (cid, len(ys)))
        tops[cid] = ys[0]
    check(tops["chart-summary"] < tops["chart-counts"] < tops["chart-reuse"],
          "the charts in page order: %r" % tops)
    white = pngfx.count(img, (255, 255, 255))
    check(white < img.width * img.height * 0.97, "the page is not blank")


if __name__ == "__main__":
    dtest.main()
