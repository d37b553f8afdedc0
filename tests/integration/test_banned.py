#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Banned terms end to end with real processes (docs/banned.md): breachd
reads [passwords] banned_terms and site_terms, logs each bad line of the
file as FILE:LINE and serves the rest, hands every term to clients with
BANNED a page at a time, keeps the old terms when a reload fails, and
refuses a bad site term by its place. breachctl password --banned
refuses a password made of the terms or the user's own names without
sending it to breachd (the daemon's request counters show no PW).
Standard library only; dtest.py is the harness."""
import os
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, test  # noqa: E402
from ptyfx import typed  # noqa: E402


def write_terms(path, lines):
    with open(path, "wb") as f:
        for ln in lines:
            f.write(ln if isinstance(ln, bytes) else ln.encode() + b"\n")
    return path


def all_terms(c, rid="t"):
    """Every (kind, term) of BANNED, page by page, with the generation and
    min_score; checks the pages line up."""
    out, start, gen, pages = [], 0, None, 0
    while True:
        a = c.ask("%s%d BANNED %d" % (rid, pages, start)).split(" ")
        eq(a[1], "TERMS", "answer: %r" % a[:6])
        g, score, total, nxt = int(a[2]), int(a[3]), int(a[4]), int(a[5])
        gen = g if gen is None else gen
        eq(g, gen, "generation within one walk")
        items = a[6].split(",") if len(a) > 6 else []
        check(len(" ".join(a)) < 8192, "a line over 8192 bytes")
        for it in items:
            out.append((it[0], urllib.parse.unquote(it[1:])))
        pages += 1
        eq(nxt, start + len(items), "next")
        if nxt == total:
            return out, gen, score, pages
        start = nxt


@test
def terms_served_and_reloaded(ctx):
    many = ["term%04dxyzzy" % i + "ü" * 20 for i in range(3000)]
    good = ["# the organisation", "Contoso", "  Fabrikam  ", "NEW YORK"] + many
    bad = [b"\n", b"bad\xc3(utf8\n", b"ab\n", b"x" * 80 + b"\n"]
    path = write_terms(ctx.path("terms.txt"), good[:4] + bad + good[4:])
    conf = ctx.config(passwords={"banned_terms": path, "site_terms": "Northwind, nw.example",
                                 "min_score": "6", "upstream": "none"})
    d = ctx.daemon(conf)
    c = d.client()
    got, gen, score, pages = all_terms(c)
    eq(score, 6, "min_score")
    check(pages >= 3, "pages: %d" % pages)
    want = [("s", "northwind"), ("s", "nw.example"), ("b", "contoso"), ("b", "fabrikam"),
            ("b", "newyork")] + [("b", t.replace("ü", "u")) for t in many]
    eq(len(got), len(want), "terms")
    bad_items = [(g, w) for g, w in zip(got, want) if g != w]
    check(not bad_items, "terms: %r" % bad_items[:3])
    # past the end, and bad arguments (never echoed)
    a = c.ask("e BANNED 99999").split(" ")
    eq(a[4:6], [str(len(want)), str(len(want))], "past the end")
    for rid, req in (("b1", "BANNED"), ("b2", "BANNED x"), ("b3", "BANNED 123456"),
                     ("b4", "BANNED -1"), ("b5", "BANNED 1 2")):
        check(c.ask("%s %s" % (rid, req)).startswith(rid + " ERR bad-request"), req)
    log = d.log()
    for no, what in ((5, "empty line"), (6, "invalid UTF-8 at byte 3"), (7, "too short"),
                     (8, "too long")):
        check("%s:%d: %s" % (path, no, what) in log, "line %d not logged: %s" % (no, log[-800:]))
    check("xxxxxxxx" not in log, "a bad term quoted in the log")
    # a reload with a new file: a new generation; an unreadable file: the
    # reload fails and the old terms keep serving
    write_terms(path, ["winter", "summer"])
    eq(c.ask("r RELOAD"), "r RELOADED", "reload")
    got2, gen2, _, _ = all_terms(c, "u")
    eq(got2, [("s", "northwind"), ("s", "nw.example"), ("b", "winter"), ("b", "summer")],
       "reloaded terms")
    check(gen2 != gen, "generation unchanged by a reload")
    os.rename(path, path + ".gone")
    a = c.ask("f RELOAD")
    check(a.startswith("f ERR reload-failed") and "banned_terms" in a, a)
    eq(all_terms(c, "v")[0], got2, "terms after a failed reload")
    c.close()
    d.stop_ok()


@test
def no_terms_and_bad_site_terms(ctx):
    d = ctx.daemon(ctx.config(passwords={"upstream": "none"}))
    c = d.client()
    eq(c.ask("a BANNED 0"), "a TERMS 0 5 0 0", "no terms")
    c.close()
    d.stop_ok()
    conf = ctx.config("bad.conf", passwords={"site_terms": "contoso, ab", "upstream": "none"})
    r = subprocess.run(dtest.breachd_argv("--config", conf, "--check-config"),
                       capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "bad.conf:" in r.stderr and
          "[passwords] site_terms: item 2: too short" in r.stderr, r.stderr)


def offline_filter(ctx, words):
    inp = ctx.path("corpus.txt")
    with open(inp, "w") as f:
        for w in sorted(dtest.sha1hex(w) for w in words):
            f.write("%s:5\n" % w)
    out = ctx.path("corpus.bfuse")
    ctx.breachctl("filter", "build", "--kind", "password-sha1", "--offline", "--input", inp,
                  "--output", out)
    return out


def password(d, pws, *args):
    return subprocess.run([dtest.ARGS.breachctl, "--socket", d.sock, "password"] + list(args),
                          input="".join(p + "\n" for p in pws), capture_output=True, text=True,
                          timeout=60, env=dtest.base_env())


TRIES = ["Contoso2024!", "J0hnSmith1", "Winter2025", "correct horse battery staple",
         "Tr0ub4dor&3xQ", "password"]


@test
def breachctl_password_banned(ctx):
    """The attack: a client that sent a password refused for a banned term
    to breachd anyway (a PW request, or its variants) shows in STATS'
    request counters."""
    terms = write_terms(ctx.path("terms.txt"), ["winter"])
    conf = ctx.config(passwords={"filter": offline_filter(ctx, ["password"]), "upstream": "none",
                                 "banned_terms": terms, "site_terms": "Contoso"})
    d = ctx.daemon(conf)
    who = ["--user", "jsmith", "--full-name", "John Smith"]
    before = d.stats()
    r = password(d, TRIES, "--similar=off", *who)  # terms on breachd: reject by default
    eq(r.returncode, 1, "default: " + r.stderr)
    eq(r.stdout.splitlines(), ["BANNED site", "BANNED user", "BANNED term", "CLEAN", "CLEAN",
                               "PWNED 5"], "default")
    after = d.stats()
    eq(after["requests_pw"] - before["requests_pw"], 3, "PW requests: the refused ones were sent")
    check(r.stderr == "", r.stderr)
    # nor their variants (SIMILAR, on by default)
    r = password(d, TRIES[:3], *who)
    eq((r.returncode, r.stdout.splitlines()), (1, ["BANNED site", "BANNED user", "BANNED term"]),
       "with SIMILAR")
    st = d.stats()
    eq((st["requests_pw"], st["requests_similar"]),
       (after["requests_pw"], after["requests_similar"]), "PW and SIMILAR requests")
    after = st
    # warn: printed instead of CLEAN, the exit status from the corpus
    r = password(d, TRIES[:5], "--banned=warn", *who)
    eq(r.returncode, 0, "warn: " + r.stderr)
    eq(r.stdout.splitlines(), ["BANNED site", "BANNED user", "BANNED term", "CLEAN", "CLEAN"],
       "warn")
    eq(d.stats()["requests_pw"] - after["requests_pw"], 5, "warn sends every password")
    r = password(d, TRIES[:3], "--banned=off", *who)
    eq((r.returncode, r.stdout.splitlines()), (0, ["CLEAN"] * 3), "off")
    r = password(d, TRIES[:2], "--json", *who)
    eq(r.stdout.splitlines(), ['{"input":1,"status":"BANNED","kind":"site"}',
                               '{"input":2,"status":"BANNED","kind":"user"}'], "json")
    # --user-fields: each line's own names; a line that does not split is
    # answered here and not sent
    before = d.stats()["requests_pw"]
    r = password(d, ["jsmith:John Smith:J0hnSmith1", "bob::Tr0ub4dor&3xQ", "no-colons"],
                 "--user-fields", "--similar=off")
    eq(r.returncode, 2, "user-fields: " + r.stderr)
    lines = r.stdout.splitlines()
    eq(lines[:2], ["BANNED user", "CLEAN"], "user-fields")
    check(lines[2].startswith("ERR bad-request --user-fields"), lines[2])
    eq(d.stats()["requests_pw"] - before, 1, "only bob's password was sent")
    # without --user: the invoking user's name
    import pwd
    me = pwd.getpwuid(os.getuid()).pw_name
    if len(me) >= 3:
        r = password(d, [me.capitalize() + "2024!"])
        eq((r.returncode, r.stdout.strip()), (1, "BANNED user"), "the invoking user")
    d.stop_ok()
    # no terms on breachd: off unless asked for; --banned=reject checks the names
    d = ctx.daemon(ctx.config("none.conf", passwords={
        "filter": offline_filter(ctx, ["password"]), "upstream": "none"}))
    r = password(d, TRIES[:2], *who)
    eq((r.returncode, r.stdout.splitlines()), (0, ["CLEAN", "CLEAN"]), "no terms")
    r = password(d, TRIES[:2], "--banned=reject", *who)
    eq((r.returncode, r.stdout.splitlines()), (1, ["CLEAN", "BANNED user"]), "names only")
    d.stop_ok()


@test
def typed_password_banned(ctx):
    """A typed password (a pty): refused before anything is sent under the
    default; warn asks breachd and prints BANNED instead of CLEAN."""
    conf = ctx.config(passwords={"filter": offline_filter(ctx, ["password"]), "upstream": "none",
                                 "site_terms": "Contoso"})
    d = ctx.daemon(conf)
    before = d.stats()["requests_pw"]
    out, st = typed(d.sock, "Contoso2024!", "--user", "jsmith")
    check(st == 1 and "BANNED site" in out, "default: %d %r" % (st, out))
    out, st = typed(d.sock, "J0hnSmith1", "--user", "jsmith", "--full-name", "John Smith")
    check(st == 1 and "BANNED user" in out, "names: %d %r" % (st, out))
    eq(d.stats()["requests_pw"], before, "PW requests: a typed refused password was sent")
    out, st = typed(d.sock, "Contoso2024!", "--banned=warn", "--similar=off")
    check(st == 0 and "BANNED site" in out and "CLEAN" not in out, "warn: %d %r" % (st, out))
    eq(d.stats()["requests_pw"], before + 1, "warn sends the password")
    out, st = typed(d.sock, "Tr0ub4dor&3xQ", "--user", "jsmith", "--similar=off")
    check(st == 0 and "CLEAN" in out, "strong: %d %r" % (st, out))
    d.stop_ok()


if __name__ == "__main__":
    dtest.main()
