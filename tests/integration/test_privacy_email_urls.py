#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""E-mail addresses inside URLs, as an attacker would use them.

A phishing feed carries victims' addresses in its URLs (query, path,
userinfo, fragment; every spelling of tests/data/secret_spellings.txt). A
peer on the socket who wants to learn whether alice@victim-mail.example was
targeted asks about the URL with her address and with another one: every
entry point must give both the same answer, so no answer depends on the
address. Exercised through every entry point:

  feed builder:     cut rows indexed as their longest expression free of the
                    address, reported by FILE:LINE only; whole rows refuse
                    the build;
  range mirror:     holds exactly the expected expressions, none with an
                    address;
  daemon URL verb:  victim and other answers equal (BLOCKED with the cut
                    expression, or ERR secret-class);
  breachctl url, breachctl url-expressions, breachd-squid-helper: the same.

Standard library only; the harness is dtest.py.
"""
import hashlib
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import secret_table  # noqa: E402
from dtest import check, eq, test  # noqa: E402
from secret_table import OTHER, VICTIM  # noqa: E402

HELPER = None
SECRET_WORDS = ("alice", "victim-mail", "ALICE", "VICTIM-MAIL")


def rows(*kinds):
    return [r for r in secret_table.load(dtest.ARGS.source_root) if r.kind in kinds]


def sha256hex(s):
    return hashlib.sha256(s.encode()).hexdigest().upper()


def ctl(*args, env=None):
    return subprocess.run([dtest.ARGS.breachctl] + list(args), env=dtest.base_env(env),
                          capture_output=True, timeout=120)


def no_secret(text, what):
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    for w in SECRET_WORDS:
        check(w not in text, "%s holds %r: %r" % (what, w, text[:400]))


def mirror_entries(mirror):
    out = {}
    for fn in os.listdir(mirror):
        if fn == "empty.txt":  # served for prefixes without entries (docs/upstream.md)
            check(os.path.getsize(os.path.join(mirror, fn)) == 0, "empty.txt is not empty")
            continue
        m = re.fullmatch(r"([0-9A-F]{5})\.txt", fn)
        check(m, "unexpected file in the mirror: %s" % fn)
        with open(os.path.join(mirror, fn)) as f:
            for line in f:
                suf, cat = line.rstrip("\n").split(":")
                out[m.group(1) + suf] = cat
    return out


def build_victim_feed(ctx):
    """The feed (victims' addresses in URLs), its filter and mirror."""
    feed = ctx.path("phish.txt")
    with open(feed, "w", encoding="utf-8") as f:
        f.write("# phishing URLs with the victims' addresses\n")
        for r in rows("cut", "keep"):
            f.write(r.url() + "\n")
    filt, mirror = ctx.path("urls.bbf"), ctx.path("ranges")
    p = ctl("filter", "build", "--kind", "url-sha256", "--output", filt, "--ranges-dir", mirror,
            "--input", feed + "=phishing")
    eq(p.returncode, 0, "build: %s" % p.stderr.decode())
    return feed, filt, mirror, p.stderr.decode()


@test
def feed_builder_cuts_and_mirror_holds_no_address(ctx):
    feed, filt, mirror, err = build_victim_feed(ctx)
    cut, keep = rows("cut"), rows("keep")
    check("%s: %d entries held an e-mail address" % (feed, len(cut)) in err,
          "cut count missing: %s" % err)
    # FILE:LINE of each cut entry (the first ten), never the content.
    for line, r in enumerate(rows("cut", "keep"), start=2):
        if r.kind == "cut" and line - 1 <= 10:
            check("%s:%d: the URL holds an e-mail address" % (feed, line) in err,
                  "%r: no FILE:LINE note in %s" % (r, err))
    no_secret(err, "the build's messages")
    # The mirror holds exactly the cut and kept expressions.
    want = {sha256hex(r.expr()) for r in cut + keep}
    got = mirror_entries(mirror)
    eq(set(got), want, "mirror entries")
    # An entry that IS an address refuses the whole build, in every spelling.
    for r in rows("whole"):
        one = ctx.path("whole-%d.txt" % r.n)
        with open(one, "w", encoding="utf-8") as f:
            f.write("http://ok.example/\n" + r.url() + "\n")
        out = ctx.path("whole-%d.bbf" % r.n)
        p = ctl("filter", "build", "--kind", "url-sha256", "--output", out, "--input", one)
        eq(p.returncode, 2, "%r: build exit status" % r)
        check(("%s:2: secret-class data (e-mail address) is never indexed" % one).encode()
              in p.stderr, "%r: %s" % (r, p.stderr))
        check(not os.path.exists(out), "%r: an output file" % r)
        no_secret(p.stderr, "%r: the refusal" % r)


def victim_daemon(ctx):
    feed, filt, mirror, _ = build_victim_feed(ctx)
    port = ctx.nginx(mirror)
    return ctx.daemon(ctx.config(urls={
        "filter": filt, "upstream": "http://127.0.0.1:%d/range/{prefix}" % port}))


@test
def peer_cannot_confirm_an_address(ctx):
    """The attack: ask with the victim's address and with another one."""
    d = victim_daemon(ctx)
    cl = d.client()
    for r in rows("cut", "keep", "whole"):
        a = cl.ask("v%d URL %s" % (r.n, r.url(VICTIM)))
        b = cl.ask("o%d URL %s" % (r.n, r.url(OTHER)))
        eq(a.split(" ", 1)[1], b.split(" ", 1)[1], "%r: victim vs other answer" % r)
        if r.kind == "whole":
            check(a.startswith("v%d ERR secret-class " % r.n), "%r: %r" % (r, a))
        else:
            eq(a, "v%d BLOCKED phishing %s" % (r.n, r.expr()), "%r" % r)
        no_secret(a, "%r: the answer" % r)
    cl.close()
    d.stop_ok()
    no_secret(d.log(), "the daemon's log")


@test
def breachctl_url_and_expressions(ctx):
    d = victim_daemon(ctx)
    env = {"BREACHD_SOCKET": d.sock}
    for kinds, status in ((("cut", "keep"), 1), (("whole",), 2)):
        rs = rows(*kinds)
        a = ctl("url", *[r.url(VICTIM) for r in rs], env=env)
        b = ctl("url", *[r.url(OTHER) for r in rs], env=env)
        eq((a.returncode, a.stdout), (b.returncode, b.stdout), "breachctl url %s" % (kinds,))
        eq(a.returncode, status, "breachctl url %s: %s" % (kinds, a.stderr))
        no_secret(a.stdout + a.stderr, "breachctl url output")
        lines = a.stdout.decode().splitlines()
        for i, r in enumerate(rs):
            if r.kind == "whole":
                check(lines[i].startswith("ERR secret-class"), "%r: %r" % (r, lines[i]))
                check(("url: URL %d holds an e-mail address in every lookup expression"
                       % (i + 1)).encode() in a.stderr, "%r: %s" % (r, a.stderr))
            else:
                eq(lines[i], "BLOCKED phishing %s" % r.expr(), "%r" % r)
    d.stop_ok()
    for r in rows("cut", "keep", "whole", "none"):
        a = ctl("url-expressions", r.url(VICTIM))
        b = ctl("url-expressions", r.url(OTHER))
        eq((a.returncode, a.stdout), (b.returncode, b.stdout), "%r: url-expressions" % r)
        no_secret(a.stdout + a.stderr, "%r: url-expressions" % r)
        if r.kind == "whole":
            eq((a.returncode, a.stdout), (2, b""), "%r: url-expressions refused" % r)
            continue
        eq(a.returncode, 0, "%r: url-expressions: %s" % (r, a.stderr))
        exprs = a.stdout.decode().splitlines()
        if r.kind != "none":
            eq(exprs[0], r.expr(), "%r: first expression" % r)
        noted = b"holding an e-mail address not shown" in a.stderr
        eq(noted, r.kind == "cut", "%r: the stderr note: %s" % (r, a.stderr))


@test
def squid_helper_answers_alike(ctx):
    if not HELPER:
        raise dtest.Skip("no --helper")
    d = victim_daemon(ctx)
    sock = d.sock
    for args in ((), ("--on-unknown=block",)):
        p = subprocess.Popen([HELPER, "--socket", sock] + list(args), env=dtest.base_env(),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        rs = rows("cut", "keep", "whole")
        text = "".join("%d %s\n%d %s\n" % (2 * r.n, r.url(VICTIM), 2 * r.n + 1, r.url(OTHER))
                       for r in rs)
        out, err = p.communicate(text.encode(), timeout=60)
        no_secret(out + err, "the helper's output")
        ans = {}
        for line in out.decode().splitlines():
            ch, rest = line.split(" ", 1)
            ans[int(ch)] = rest
        for r in rs:
            a, b = ans.get(2 * r.n), ans.get(2 * r.n + 1)
            eq(a, b, "%r %s: victim vs other" % (r, args))
            if r.kind == "whole":
                verdict = "OK" if args else "ERR"
                check(a.startswith('%s message="not checked: secret-class ' % verdict),
                      "%r %s: %r" % (r, args, a))
            else:
                eq(a, 'OK message="blocked: phishing" tag=phishing', "%r" % r)
    d.stop_ok()


def _setup():
    global HELPER
    HELPER = dtest.ARGS.helper


if __name__ == "__main__":
    dtest.main(options={"--helper": dict(default=None, help="breachd-squid-helper")},
               setup=_setup)
