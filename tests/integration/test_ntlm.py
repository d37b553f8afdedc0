#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The NTLM kind end to end with real processes: breachd's NT verb against
an nginx mirror that serves HIBP's two corpora at one path (/range/PREFIX and
/range/PREFIX?mode=ntlm, 27-hex suffixes), NTLM ranges cached apart from
SHA-1 ranges, the [ntlm] filter (local "no", stale bypass, wrong kind
refused), breachctl nt and password --ntlm (UTF-8, Latin-1, MD4 not
available), breachctl download --ntlm against nginx and a filter built from
what it wrote. NT hashes are made by ntfx.py, not by breachd. Standard
library only; dtest.py is the harness."""
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, sha1hex, test  # noqa: E402
from ntfx import EMPTY_NT, nginx_location, nthash, write_ntlm_range  # noqa: E402

# The NTLM corpus of these tests: NT hash -> count.
PASSWORDS = {"password": 10437277, "123456": 7000000, "hunter2": 23, "p\u00e4ssw\u00f6rd": 77,
             "\U0001F511key": 5, "letmein": 577}
NTLM = {nthash(p): c for p, c in PASSWORDS.items()}
# A SHA-1 hash in the NT hash of "password"'s prefix: one prefix, both kinds.
SHA1_SAME_PREFIX = nthash("password")[:5] + "0123456789ABCDEF0123456789ABCDEF012"
NO_MD4 = {"OPENSSL_MODULES": "/nonexistent"}


def ntlm_in_new_range(taken, stem, n):
    out, i = [], 0
    while len(out) < n:
        h = nthash("%s-%d" % (stem, i))
        i += 1
        if h[:5] not in taken:
            taken.add(h[:5])
            out.append(h)
    return out


def mirror(ctx):
    """ROOT/ntlm (NTLM ranges of NTLM plus a 'clean' entry's range) and
    ROOT (one SHA-1 range in the prefix of NT("password")), served by nginx. Returns (port, root, clean NT hash in a served range, NT hash whose
    range is missing)."""
    root = ctx.path("mirror")
    entries = dict(NTLM)
    taken = {h[:5] for h in entries}
    clean, lost = ntlm_in_new_range(taken, "clean", 1)[0], ntlm_in_new_range(taken, "lost", 1)[0]
    entries[clean[:5] + "0" * 27] = 9  # the range exists; `clean` is not in it
    write_ntlm_range(os.path.join(root, "ntlm"), entries, padding=3)
    dtest.write_range(root, {SHA1_SAME_PREFIX: 111})
    port = ctx.nginx(root, location=nginx_location(root))
    return port, root, clean, lost


def conf(ctx, port, **sections):
    up = "http://127.0.0.1:%d/range/{prefix}" % port
    pw = {"filter": "", "upstream": up}
    pw.update(sections.pop("passwords", {}))
    nt = {"upstream": up + "?mode=ntlm"}
    nt.update(sections.pop("ntlm", {}))
    sections.setdefault("upstream", {}).setdefault("rate", 100000)
    return ctx.config(passwords=pw, ntlm=nt, **sections)


def access_log(ctx):
    with open(ctx.path("nginx", "access.log")) as f:
        return f.read()


def no_hash_in(text, hashes, what):
    for h in hashes:
        check(h not in text.upper(), "%s holds a hash: %r" % (what, text[-2000:]))


@test
def nt_verb_through_nginx(ctx):
    port, _, clean, lost = mirror(ctx)
    d = ctx.daemon(conf(ctx, port))
    c = d.client()
    pw = nthash("password")
    eq(c.ask("1 NT " + pw), "1 PWNED 10437277", "NT of password")
    eq(c.ask("2 NT " + pw.lower()), "2 PWNED 10437277", "lower-case hex")
    eq(c.ask("3 NT " + clean), "3 CLEAN", "absent from its range")
    eq(c.ask("4 NT " + lost), "4 UNKNOWN upstream-error", "range missing (404)")
    eq(c.ask("5 NT " + nthash("\U0001F511key")), "5 PWNED 5", "a password beyond the BMP")
    for bad in [pw[:31], pw + "0", sha1hex("password"), "G" * 32, "password"]:
        ln = c.ask("b NT " + bad)
        check(re.fullmatch(r"b ERR bad-request .+", ln), "bad NT %r: %r" % (bad, ln))
        check(bad not in ln, "argument echoed: %r" % ln)
    eq(c.ask("6 NT"), "6 ERR bad-request NT needs an NT hash (32 hex digits)", "no argument")
    check(c.ask("v VERSION").endswith(" protocol 1"), "VERSION still says protocol 1")
    # One prefix in both corpora: the SHA-1 range must not answer NT, nor
    # the other way round, also once both are cached.
    for _ in range(2):
        eq(c.ask("7 PW " + SHA1_SAME_PREFIX), "7 PWNED 111", "PW in the shared prefix")
        eq(c.ask("8 NT " + pw), "8 PWNED 10437277", "NT in the shared prefix")
    s = d.stats()
    eq(s["requests_nt"], 7, "requests_nt: the well-formed ones")
    eq((s["nt_pwned"], s["nt_clean"], s["nt_unknown"]), (5, 1, 1), "nt answers")
    eq(s["nt_upstream_fetches"], 4, "NTLM ranges fetched: 8846F, 2 others, the 404")
    eq(s["upstream_fetches"], 1, "the one SHA-1 range")
    eq(s["pw_pwned"], 2, "pw_pwned")
    log = access_log(ctx)
    eq(log.count("GET /range/%s?mode=ntlm " % pw[:5]), 1, "the NTLM range, once")
    eq(log.count("GET /range/%s " % pw[:5]), 1, "the SHA-1 range of that prefix, once")
    eq(len(re.findall(r"GET /range/[0-9A-F]{5} ", log)), 1, "only one SHA-1 request")
    d.stop_ok()
    no_hash_in(d.log(), [pw, clean, lost, SHA1_SAME_PREFIX], "breachd's log")


def build_nt_filter(ctx, entries, name="nt.bfuse", epoch=None, kind="password-ntlm"):
    corpus = ctx.path(name + ".txt")
    with open(corpus, "w") as f:
        for h, n in entries.items():
            f.write("%s:%d\n" % (h, n))
    out = ctx.path(name)
    ctx.breachctl("filter", "build", "--kind", kind, "--input", corpus, "--output", out,
                  "--fp-bits", "32", "--generation", "7",
                  env={"SOURCE_DATE_EPOCH": epoch} if epoch is not None else None)
    return out


@test
def nt_filter(ctx):
    port, _, clean, _ = mirror(ctx)
    filt = build_nt_filter(ctx, NTLM)
    d = ctx.daemon(conf(ctx, port, ntlm={"filter": filt}))
    c = d.client()
    absent = nthash("not in the corpus")
    eq(c.ask("1 NT " + absent), "1 CLEAN", "the filter's no")
    eq(c.ask("2 NT " + nthash("hunter2")), "2 PWNED 23", "a maybe resolved")
    # pipelined: the batch probe of NT lines
    c.send("".join("p%d NT %s\n" % (i, h) for i, h in enumerate([absent] * 5 + list(NTLM))))
    got = sorted(c.lines(5 + len(NTLM)))
    want = sorted(["p%d CLEAN" % i for i in range(5)] +
                  ["p%d PWNED %d" % (5 + i, n) for i, n in enumerate(NTLM.values())])
    eq(got, want, "pipelined answers")
    s = d.stats()
    eq((s["nt_filter_loaded"], s["nt_filter_keys"], s["nt_filter_generation"]),
       (1, len(NTLM), 7), "nt_filter_*")
    eq(s["nt_filter_no"], 6, "answered by the filter")
    eq(s["nt_filter_stale"], 0, "fresh")
    eq(s["filter_loaded"], 0, "no password-sha1 filter")
    check(clean not in NTLM, "fixture")
    d.stop_ok()
    check("NTLM filter: generation 7" in d.log(), "the filter is logged: " + d.log()[-500:])

    # A stale filter is bypassed: every NT check goes to the range API.
    old = build_nt_filter(ctx, NTLM, name="old.bfuse", epoch=1000000000)
    d = ctx.daemon(conf(ctx, port, ntlm={"filter": old, "max_filter_age": "1d"},
                        cache={"path": ctx.path("cache2")}))
    c = d.client()
    eq(c.ask("1 NT " + clean), "1 CLEAN", "answered by the range, not the filter")
    s = d.stats()
    eq((s["nt_filter_stale"], s["nt_filter_bypassed"], s["nt_filter_no"]), (1, 1, 0), "stale")
    d.stop_ok()

    # A password-sha1 filter in [ntlm] is refused by its kind.
    sha = build_nt_filter(ctx, {sha1hex("x"): 1}, name="sha1.bfuse", kind="password-sha1")
    r = subprocess.run([dtest.ARGS.breachd, "--config", conf(ctx, port, ntlm={"filter": sha}),
                        "--check-config"], env=dtest.base_env(), capture_output=True, text=True,
                       timeout=60)
    check(r.returncode != 0, "a password-sha1 filter in [ntlm] must be refused")
    check("[ntlm] filter %s: kind password-sha1, but breachd answers NT with password-ntlm "
          "filters only" % sha in r.stderr, "kind named: " + r.stderr)


def ctl_bytes(args, sock, stdin=b"", env=None):
    e = {"BREACHD_SOCKET": sock}
    e.update(env or {})
    r = subprocess.run([dtest.ARGS.breachctl] + args, env=dtest.base_env(e), input=stdin,
                       capture_output=True, timeout=60)
    err = r.stderr.decode(errors="replace")
    check("Sanitizer" not in err and "runtime error:" not in err, "sanitizer report:\n" + err)
    return r.returncode, r.stdout.decode(errors="replace"), err


@test
def breachctl_nt_and_password_ntlm(ctx):
    port, _, clean, lost = mirror(ctx)
    d = ctx.daemon(conf(ctx, port))
    pw = nthash("password")
    rc, out, err = ctl_bytes(["nt", pw, clean.lower(), lost], d.sock)
    eq(out.splitlines(), ["PWNED 10437277", "CLEAN", "UNKNOWN upstream-error"], "nt args")
    eq(rc, 1, "nt exit status")
    rc, out, _ = ctl_bytes(["nt"], d.sock, stdin=(clean + "\n" + clean + "\r\n").encode())
    eq((rc, out.splitlines()), (0, ["CLEAN", "CLEAN"]), "nt stdin")
    rc, out, err = ctl_bytes(["nt", "--json", "hunter2", pw], d.sock)
    eq(rc, 2, "a bad hash is an error")
    check(out.splitlines()[0].startswith('{"input":1,"status":"ERR","reason":"bad-request'), out)
    eq(out.splitlines()[1], '{"input":2,"status":"PWNED","count":10437277}', "JSON")
    check("hunter2" not in out + err, "the bad argument is not echoed")
    rc, out, err = ctl_bytes(["nt", sha1hex("password")], d.sock)
    eq(rc, 2, "a SHA-1 is not an NT hash")

    # password --ntlm: UTF-8 and Latin-1 spellings of one password, beyond the BMP
    lines = ["password", "p\u00e4ssw\u00f6rd", "\U0001F511key", "not breached at all"]
    stdin = "\n".join(lines).encode() + b"\np\xe4ssw\xf6rd\n"
    rc, out, err = ctl_bytes(["password", "--ntlm"], d.sock, stdin=stdin)
    eq(out.splitlines(), ["PWNED 10437277", "PWNED 77", "PWNED 5", "UNKNOWN upstream-error",
                          "PWNED 77"], "password --ntlm")
    eq(rc, 1, "password --ntlm exit status")
    for s in lines:
        check(s not in out + err, "password echoed")
    rc, out, err = ctl_bytes(["password"], d.sock, stdin=b"password\n")
    eq(out, "UNKNOWN upstream-error\n", "without --ntlm: SHA-1 (no such range here)")
    rc, out, err = ctl_bytes(["sha1", "--ntlm", sha1hex("x")], d.sock)
    eq(rc, 2, "--ntlm belongs to password")
    check("unrecognized option '--ntlm'" in err, err)

    # MD4 not available: said clearly, nothing sent
    before = d.stats()["requests_nt"]
    rc, out, err = ctl_bytes(["password", "--ntlm"], d.sock, stdin=b"password\n", env=NO_MD4)
    eq((rc, out), (2, ""), "no MD4: error, no answer")
    check("MD4 (for NT hashes) is not available: OpenSSL's legacy provider could not be loaded"
          in err, err)
    eq(d.stats()["requests_nt"], before, "nothing sent")
    d.stop_ok()
    no_hash_in(d.log(), [pw, clean, lost, nthash("p\u00e4ssw\u00f6rd")], "breachd's log")


@test
def filter_build_plaintext_ntlm(ctx):
    words = ctx.path("words.txt")
    with open(words, "wb") as f:
        f.write(b"password\np\xc3\xa4ssw\xc3\xb6rd\nlatin1-p\xe4ss\n")
    out = ctx.path("words.bfuse")
    ctx.breachctl("filter", "build", "--kind", "password-ntlm", "--plaintext", "--input", words,
                  "--output", out, "--fp-bits", "32")
    want = [nthash("password"), nthash("p\u00e4ssw\u00f6rd"), nthash("latin1-p\u00e4ss"),
            nthash("absent"), EMPTY_NT]
    r = ctx.breachctl("filter", "query", out, *want)
    eq(r.stdout.split(), ["maybe", "maybe", "maybe", "no", "no"], "plaintext NT keys")
    r = ctx.breachctl("filter", "info", out)
    check(re.search(r"kind:\s+password-ntlm", r.stdout), r.stdout)
    r = ctx.breachctl("filter", "build", "--kind", "password-ntlm", "--plaintext", "--input",
                      words, "--output", ctx.path("x.bfuse"), env=NO_MD4, check_rc=False)
    eq(r.returncode, 2, "no MD4")
    check("legacy provider" in r.stderr and not os.path.exists(ctx.path("x.bfuse")), r.stderr)


@test
def download_ntlm(ctx):
    root = ctx.path("mirror")
    rng = random.Random(16)
    entries = {}
    for p in range(256):
        for _ in range(rng.randint(1, 6)):
            entries["%05X%027X" % (p, rng.getrandbits(108))] = rng.randint(1, 999)
    write_ntlm_range(os.path.join(root, "ntlm"), entries)
    dtest.write_range(root, {"%05X%035X" % (p, 7): 1 for p in range(4)})
    port = ctx.nginx(root, location=nginx_location(root))
    out, single = ctx.path("out"), ctx.path("single.txt")
    up = "http://127.0.0.1:%d/range/{prefix}?mode=ntlm" % port
    r = ctx.breachctl("download", "--ntlm", "--out", out, "--upstream", up, "--range",
                      "00000-000FF", "--single-file", single)
    check("complete: 256/256 prefixes present" in r.stdout, r.stdout + r.stderr)
    for p in range(256):
        name = "%05X.txt" % p
        with open(os.path.join(out, name), "rb") as a, open(os.path.join(root, "ntlm", name),
                                                             "rb") as b:
            eq(a.read(), b.read(), name)
    with open(single) as f:
        got = [ln.split(":") for ln in f.read().splitlines()]
    eq(sorted((h, int(n)) for h, n in got), sorted(entries.items()), "the single file: HASH32")
    r = ctx.breachctl("download", "--ntlm", "--out", out, "--upstream", up, "--range",
                      "00000-000FF")
    check("(0 written, 0 unchanged, 256 not modified" in r.stdout, "a re-run: " + r.stdout)
    # SHA-1 ranges are not NTLM ranges: refused, never written
    sha_up = "http://127.0.0.1:%d/range/{prefix}" % port
    r = ctx.breachctl("download", "--ntlm", "--out", ctx.path("bad"), "--upstream", sha_up,
                      "--range", "00000-00003", check_rc=False)
    eq(r.returncode, 2, "SHA-1 bodies with --ntlm")
    check("4 of 4 prefixes missing" in r.stderr and "malformed body" in r.stderr, r.stderr)
    check(not [n for n in os.listdir(ctx.path("bad")) if n.endswith(".txt")], "nothing written")
    # the downloaded tree builds a password-ntlm filter
    filt = ctx.path("dl.bfuse")
    ctx.breachctl("filter", "build", "--kind", "password-ntlm", "--input", out, "--output", filt,
                  "--fp-bits", "32")
    some = rng.sample(sorted(entries), 20)
    r = ctx.breachctl("filter", "query", filt, *some)
    eq(r.stdout.split(), ["maybe"] * 20, "downloaded keys")
    r = ctx.breachctl("download", "--help")
    check("?mode=ntlm" in r.stdout, "the NTLM default is shown: " + r.stdout)


if __name__ == "__main__":
    dtest.main()
