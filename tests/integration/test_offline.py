#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Offline password filters end to end with real processes: breachctl
filter build --offline (counts kept, bad input refused by file and line,
truncated and flipped files refused, deltas never mixing offline and range
filters), filter info and query, offline URL filters of every feed format
(a category per expression, more than 255 categories refused by feed), and
breachd answering every PW, NT and URL check of an offline filter on the
host: a real nginx mirror with every
range stands by as the upstream (decoys on), and its access log and STATS
show that nothing was fetched or cached. `upstream = none`: UNKNOWN
no-upstream for a range filter's maybe, and what --check-config says about
it and about [http] without an upstream. Standard library only; dtest.py is
the harness."""
import hashlib
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, sha1hex, test  # noqa: E402
import feedfx  # noqa: E402
import fleetfx  # noqa: E402
from ntfx import nthash, write_ntlm_range  # noqa: E402

COUNTS = [1, 2, 7, 99, 100, 101, 150, 1000, 123456, 37000000]


def corpus(n=3000, seed=25):
    """{SHA-1 hex: count}: the COUNTS above, then random ones."""
    rng = random.Random(seed)
    out = {}
    for i in range(n):
        c = COUNTS[i] if i < len(COUNTS) else rng.choice([1, 3, 40, 250, 9999, 5000000])
        out[sha1hex("offline-%d" % i)] = c
    return out


def write_corpus(path, entries):
    with open(path, "w") as f:
        for h in sorted(entries):
            f.write("%s:%d\n" % (h, entries[h]))
    return path


def build(ctx, inp, out, *extra, kind="password-sha1", check_rc=True):
    return ctx.breachctl("filter", "build", "--kind", kind, "--offline", "--input", inp,
                         "--output", out, *extra, check_rc=check_rc)


def count_ok(got, true):
    """Exact up to 100; never above; above 100 less than 10% below."""
    if true <= 100:
        return got == true
    return got <= true and got > 0.9 * true


def clean_hashes(n, entries, seed=99):
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        h = dtest.rand_hash(rng)
        if h not in entries:
            out.append(h)
    return out


@test
def build_info_query(ctx):
    entries = corpus()
    inp = write_corpus(ctx.path("corpus.txt"), entries)
    filt = ctx.path("off.bfuse")
    build(ctx, inp, filt)
    info = ctx.breachctl("filter", "info", filt).stdout
    for want in ("offline", "24-bit fingerprint", "2^-24", "exact up to 100", "never above"):
        check(want in info, "filter info lacks %r:\n%s" % (want, info))
    hashes = sorted(entries)
    out = ctx.breachctl("filter", "query", filt, *hashes[:500]).stdout.split("\n")
    for h, line in zip(hashes[:500], out):
        check(line.startswith("pwned "), "%s: %r" % (h, line))
        check(count_ok(int(line.split()[1]), entries[h]), "%s: %r for %d" % (h, line, entries[h]))
    clean = clean_hashes(300, entries)
    out = ctx.breachctl("filter", "query", filt, *clean).stdout.split()
    eq(out, ["no"] * 300, "clean hashes")
    # --min-count keeps only keys seen that often
    popular = ctx.path("popular.bfuse")
    build(ctx, inp, popular, "--min-count", "1000")
    want = sum(1 for c in entries.values() if c >= 1000)
    check("keys:              %d\n" % want in ctx.breachctl("filter", "info", popular).stdout,
          "--min-count 1000 keeps %d keys" % want)
    low = [h for h in hashes if entries[h] < 1000][:50]
    eq(ctx.breachctl("filter", "query", popular, *low).stdout.split(), ["no"] * 50, "dropped keys")


@test
def bad_input_refused(ctx):
    inp = ctx.path("big.txt")
    with open(inp, "w") as f:
        f.write("%s:5\n%s:99999999999999\n" % (sha1hex("a"), sha1hex("b")))
    r = build(ctx, inp, ctx.path("x.bfuse"), check_rc=False)
    eq(r.returncode, 2, "exit status")
    check("big.txt:2:" in r.stderr and "does not fit" in r.stderr, r.stderr)
    plain = ctx.path("plain.txt")
    with open(plain, "w") as f:
        f.write(sha1hex("a") + "\n")
    r = build(ctx, plain, ctx.path("y.bfuse"), check_rc=False)
    check(r.returncode == 2 and "plain.txt:1:" in r.stderr and "no counts" in r.stderr, r.stderr)
    # a truncated or bit-flipped offline file is refused, by name
    good = ctx.path("good.bfuse")
    build(ctx, write_corpus(ctx.path("c.txt"), corpus(500)), good)
    data = open(good, "rb").read()
    for name, bad in (("trunc.bfuse", data[:-7]),
                      ("flip.bfuse", data[:6000] + bytes([data[6000] ^ 4]) + data[6001:])):
        p = ctx.path(name)
        with open(p, "wb") as f:
            f.write(bad)
        r = ctx.breachctl("filter", "verify", p, check_rc=False)
        check(r.returncode == 2 and name in r.stderr, "%s: %s" % (name, r.stderr))
    # deltas: an offline delta of a range base, and the reverse, are refused
    rng_base = ctx.build_filter(ctx.path("c.txt"), ctx.path("range.bfuse"))
    more = write_corpus(ctx.path("more.txt"), corpus(600, seed=3))
    r = build(ctx, more, ctx.path("d1.bfuse"), "--base", rng_base, check_rc=False)
    check(r.returncode == 2 and "range.bfuse" in r.stderr and "offline" in r.stderr, r.stderr)
    r = ctx.breachctl("filter", "build", "--kind", "password-sha1", "--input", more, "--output",
                      ctx.path("d2.bfuse"), "--base", good, check_rc=False)
    check(r.returncode == 2 and "good.bfuse" in r.stderr and "offline" in r.stderr, r.stderr)


def nginx_all(ctx, entries):
    mirror = ctx.path("mirror")
    dtest.write_range(mirror, entries)
    return ctx.nginx(mirror)


@test
def daemon_answers_locally(ctx):
    entries = corpus()
    filt = ctx.path("off.bfuse")
    build(ctx, write_corpus(ctx.path("corpus.txt"), entries), filt)
    nt_entries = {nthash("offline-nt-%d" % i): c for i, c in enumerate(COUNTS)}
    nt_inp = ctx.path("nt.txt")
    write_corpus(nt_inp, nt_entries)
    nt_filt = ctx.path("nt.bfuse")
    build(ctx, nt_inp, nt_filt, kind="password-ntlm")
    port = nginx_all(ctx, entries)
    write_ntlm_range(ctx.path("mirror", "ntlm"), nt_entries, padding=0)
    up = "http://127.0.0.1:%d/range/{prefix}" % port
    conf = ctx.config(passwords={"filter": filt, "upstream": up},
                      ntlm={"filter": nt_filt, "upstream": up + "?mode=ntlm"},
                      upstream={"decoys": "4"})
    d = ctx.daemon(conf)
    c = d.client()
    hashes = sorted(entries)[:400]
    for i, h in enumerate(hashes):
        c.send("p%d PW %s\n" % (i, h))
    clean = clean_hashes(400, entries)
    for i, h in enumerate(clean):
        c.send("c%d PW %s\n" % (i, h))
    for i, h in enumerate(sorted(nt_entries)):
        c.send("n%d NT %s\n" % (i, h))
    answers = dict(ln.split(" ", 1) for ln in c.lines(800 + len(nt_entries)))
    for i, h in enumerate(hashes):
        a = answers["p%d" % i]
        check(a.startswith("PWNED ") and count_ok(int(a.split()[1]), entries[h]),
              "%s (%d): %r" % (h, entries[h], a))
    for i in range(len(clean)):
        eq(answers["c%d" % i], "CLEAN", "clean %d" % i)
    for i, h in enumerate(sorted(nt_entries)):
        a = answers["n%d" % i]
        check(a.startswith("PWNED ") and count_ok(int(a.split()[1]), nt_entries[h]),
              "NT %s: %r" % (h, a))
    dtest.no_upstream_stats(d)
    c.close()
    d.stop_ok()
    dtest.nginx_log_empty(ctx)


@test
def upstream_none(ctx):
    entries = corpus(500)
    inp = write_corpus(ctx.path("corpus.txt"), entries)
    range_filt = ctx.build_filter(inp, ctx.path("range.bfuse"))
    off = ctx.path("off.bfuse")
    build(ctx, inp, off)
    feed = ctx.path("feed.txt")
    with open(feed, "w") as f:
        f.write("blocked.example\n")
    url_filt = ctx.path("urls.bbf")
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--input", feed, "--output", url_filt)
    conf = ctx.config(passwords={"filter": range_filt, "upstream": "none"},
                      urls={"filter": url_filt, "upstream": "none"})
    r = subprocess.run(dtest.breachd_argv("--config", conf, "--check-config"),
                       capture_output=True, text=True, timeout=60)
    eq(r.returncode, 0, "check-config exit: " + r.stderr)
    check("upstream = none" in r.stderr and "not offline" in r.stderr and "UNKNOWN no-upstream"
          in r.stderr, "no warning: " + r.stdout + r.stderr)
    d = ctx.daemon(conf)
    c = d.client()
    h = sorted(entries)[0]
    eq(c.ask("a PW " + h), "a UNKNOWN no-upstream", "a maybe without upstream")
    eq(c.ask("b URL http://blocked.example/x"), "b UNKNOWN no-upstream", "a URL maybe")
    eq(c.ask("c URL http://other.example/x"), "c SAFE", "a URL no")
    c.close()
    d.stop_ok()
    # offline: no warning, every answer local
    conf = ctx.config("off.conf", passwords={"filter": off, "upstream": "none"})
    r = subprocess.run(dtest.breachd_argv("--config", conf, "--check-config"),
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and "upstream = none" not in r.stderr, r.stderr)
    d = ctx.daemon(conf)
    c = d.client()
    check(c.ask("a PW " + h).startswith("a PWNED "), "offline hit")
    c.close()
    d.stop_ok()
    # [http] serves range bodies: it needs an upstream
    conf = ctx.config("http.conf", passwords={"filter": off, "upstream": "none"},
                      http={"listen": "127.0.0.1:%d" % dtest.free_port()})
    r = subprocess.run(dtest.breachd_argv("--config", conf, "--check-config"),
                       capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "[http]" in r.stderr and "upstream = none" in r.stderr,
          "http conflict: " + r.stderr)


@test
def fleet_signed_delta_merge(ctx):
    """An offline base and a 1% delta, signed: breachd (with a pubkey)
    answers both files' keys with their counts; a bad reload keeps the old
    set; the two merge into one layered file that answers the same."""
    sec, pub = fleetfx.keypair(ctx)
    base_entries = corpus(2000)
    grown = dict(base_entries)
    grown.update({sha1hex("grown-%d" % i): 100 + i for i in range(20)})
    base = ctx.path("base.off")
    build(ctx, write_corpus(ctx.path("base.txt"), base_entries), base, "--generation", "1")
    delta = ctx.path("delta.off")
    build(ctx, write_corpus(ctx.path("grown.txt"), grown), delta, "--base", base)
    for f in (base, delta):
        ctx.breachctl("filter", "sign", "--key", sec, f)
        ctx.breachctl("filter", "verify", "--pubkey", pub, f)
    info = ctx.breachctl("filter", "info", delta).stdout
    check("keys:              20\n" in info and "offline" in info, "the delta holds the 20 new keys")
    conf = ctx.config(passwords={"filter": "%s, %s" % (base, delta), "upstream": "none",
                                 "pubkey": pub})
    d = ctx.daemon(conf)
    c = d.client()
    new = sha1hex("grown-7")
    eq(c.ask("a PW " + new), "a PWNED 107", "a key of the delta")
    old = sorted(base_entries)[3]
    check(count_ok(int(c.ask("b PW " + old).split()[2]), base_entries[old]), "a key of the base")
    # a flipped delta: the reload is refused, the old set keeps serving
    data = bytearray(open(delta, "rb").read())
    data[5000] ^= 1
    with open(delta + ".new", "wb") as f:
        f.write(data)
    os.replace(delta + ".new", delta)
    r = c.ask("r RELOAD")
    check(r.startswith("r ERR reload-failed") and "delta.off" in r, r)
    eq(c.ask("c PW " + new), "c PWNED 107", "after the refused reload")
    c.close()
    d.stop_ok()
    # merged: one layered file, the same answers
    delta2 = ctx.path("delta2.off")
    build(ctx, ctx.path("grown.txt"), delta2, "--base", base)
    merged = ctx.path("merged.off")
    ctx.breachctl("filter", "build", "--merge", base, delta2, "--output", merged)
    out = ctx.breachctl("filter", "query", merged, new, old).stdout.split("\n")
    eq(out[0], "pwned 107", "merged: delta key")
    check(out[1].startswith("pwned "), "merged: base key")


def url_feeds(ctx):
    """Every feed format of feedfx.py, each under its category."""
    fxs = feedfx.write_all(ctx.path("feeds"))
    args = []
    for fx in fxs:
        args += ["--input", "%s=%s" % (fx.path, fx.category)]
        check(not fx.column or fx.fmt == "csv", fx.name)
    return fxs, args


def build_urls(ctx, out, fxs):
    """One offline filter per feed (formats differ in their options), and
    the blocked URLs of all: {url: (category, expression)}."""
    blocked, safe, outs = {}, [], []
    for i, fx in enumerate(fxs):
        o = "%s.%d" % (out, i)
        r = ctx.breachctl("filter", "build", "--kind", "url-sha256", "--offline", "--input",
                          "%s=%s" % (fx.path, fx.category), "--output", o, "--skip-bad",
                          "--max-bad", "1", *fx.format_args(), check_rc=False)
        eq(r.returncode, 0, "%s: %s" % (fx.name, r.stderr))
        outs.append((o, fx))
    return outs


@test
def url_offline_every_format(ctx):
    fxs, _ = url_feeds(ctx)
    for o, fx in build_urls(ctx, ctx.path("u.off"), fxs):
        info = ctx.breachctl("filter", "info", o).stdout
        check("offline" in info and fx.category in info, "%s: %s" % (fx.name, info))
        urls = list(fx.blocked) + list(fx.safe)
        out = ctx.breachctl("filter", "query", o, "--url", *urls).stdout.strip().split("\n")
        eq(len(out), len(urls), fx.name)
        for u, line in zip(urls, out):
            if u in fx.blocked:
                cat, expr = fx.blocked[u]
                eq(line, "blocked %s %s" % (cat, expr), "%s: %s" % (fx.name, u))
            else:
                eq(line, "no", "%s: %s" % (fx.name, u))
    # one category more than the code holds: refused, naming the feed
    f = ctx.path("one.txt")
    with open(f, "w") as out:
        out.write("http://one.example/x\n")
    args = []
    for i in range(256):
        args += ["--input", "%s=c%d" % (f if i < 255 else ctx.path("last.txt"), i)]
    with open(ctx.path("last.txt"), "w") as out:
        out.write("http://last.example/\n")
    r = ctx.breachctl("filter", "build", "--kind", "url-sha256", "--offline", "--output",
                      ctx.path("m.off"), *args, check_rc=False)
    check(r.returncode == 2 and "last.txt" in r.stderr and "255 categories" in r.stderr,
          r.stderr)


@test
def url_offline_check_filter(ctx):
    """Offline URL filters carry a 16-bit check filter and an 8-bit quick
    filter, their fingerprints keyed by XXH3 (key encoding v6);
    --sha256-keys keys them by SHA-256 (v5), --no-quick-filter writes v4
    (check filters only), --no-check-filter the layout before both (v2),
    which answer the same for listed and unlisted URLs; without --offline
    all three are refused."""
    fxs, _ = url_feeds(ctx)
    fx = [f for f in fxs if f.blocked and f.safe][0]
    urls = list(fx.blocked) + list(fx.safe)
    answers = []
    for extra, enc, rate in (((), "v6", "2^-40"), (("--sha256-keys",), "v5", "2^-40"),
                             (("--no-quick-filter",), "v4", "2^-40"),
                             (("--no-check-filter",), "v2", "2^-24")):
        o = ctx.path("c%s.off" % enc)
        ctx.breachctl("filter", "build", "--kind", "url-sha256", "--offline", "--input",
                      "%s=%s" % (fx.path, fx.category), "--output", o, "--skip-bad",
                      "--max-bad", "1", *fx.format_args(), *extra)
        info = ctx.breachctl("filter", "info", o).stdout
        check("url-expression-sha256 " + enc in info and rate in info, info)
        check(("check filter" in info) == (enc != "v2"), info)
        check(("quick filter:" in info) == (enc in ("v5", "v6")), info)
        check(("keyed by:" in info) == (enc == "v6"), info)
        answers.append(ctx.breachctl("filter", "query", o, "--url", *urls).stdout)
    eq(answers[0], answers[1], "the same answers with XXH3 and SHA-256 keys")
    eq(answers[0], answers[2], "the same answers with and without the quick filter")
    eq(answers[0], answers[3], "the same answers with and without check filters")
    r = ctx.breachctl("filter", "query", ctx.path("cv6.off"), "0" * 64, check_rc=False)
    check(r.returncode != 0 and "query it by URL" in r.stderr, r.stderr)
    for flag in ("--no-check-filter", "--no-quick-filter", "--sha256-keys"):
        r = ctx.breachctl("filter", "build", "--kind", "url-sha256", "--input", fx.path,
                          "--output", ctx.path("r.bbf"), flag, check_rc=False)
        check(r.returncode == 2 and "--offline" in r.stderr, r.stderr)


def write_lines(path, lines):
    with open(path, "w") as f:
        f.writelines(ln + "\n" for ln in lines)


@test
def url_offline_quick_filter_dns(ctx):
    """The feeds built keyed by XXH3 (v6), with the quick filter (v5) and
    without it (--no-quick-filter, v4): breachctl dns, through
    libbreachd-dns, answers listed, allowed, subdomain and random names
    alike (the XXH3s come from the feed text: docs/filter-format.md, "The
    quick filter")."""
    rng = random.Random(5)
    bad = ["b%d-%x.example" % (i, rng.getrandbits(24)) for i in range(1500)]
    phish = ["p%d.%x.test" % (i, rng.getrandbits(24)) for i in range(500)]
    ok = ["ok%d.%s" % (i, bad[i * 3]) for i in range(200)]
    write_lines(ctx.path("hosts.txt"), ["0.0.0.0 " + d for d in bad])
    write_lines(ctx.path("phish.txt"), phish)
    write_lines(ctx.path("allow.txt"), ok)
    names = (bad[::5] + phish[::3] + ok[::2] + ["x.y." + d for d in bad[1::7]] +
             ["deep." + d for d in ok[1::3]] +
             ["r%x.s%x.net" % (rng.getrandbits(40), i) for i in range(400)])
    out = {}
    for enc, extra in (("v6", ()), ("v5", ("--sha256-keys",)), ("v4", ("--no-quick-filter",))):
        f = ctx.path("q%s.off" % enc)
        ctx.breachctl("filter", "build", "--kind", "url-sha256", "--offline", "--output", f,
                      "--input", ctx.path("hosts.txt") + "=malware",
                      "--input", ctx.path("phish.txt") + "=phishing",
                      "--input", ctx.path("allow.txt") + "=allow", *extra)
        info = ctx.breachctl("filter", "info", f).stdout
        check("url-expression-sha256 " + enc in info, info)
        conf = ctx.path("dns-%s.conf" % enc)
        write_lines(conf, ["[dns]", "filter = " + f])
        r = ctx.breachctl("dns", *names, env={"BREACHD_CONFIG": conf,
                                              "BREACHD_TRUST_OWN_FILTERS": "1"}, check_rc=False)
        check(r.returncode == 1, r.stderr)
        out[enc] = r.stdout
    lines = out["v5"].splitlines()
    for enc in ("v5", "v6"):
        diff = [(n, a, b) for n, a, b in zip(names, out[enc].splitlines(), out["v4"].splitlines())
                if a != b]
        check(not diff, "%s and v4 answer differently, first: %r" % (enc, diff[:1]))
    eq(len(lines), len(names), "an answer per name")
    check(sum(ln.startswith("block malware") for ln in lines) > 300 and
          sum(ln.startswith("block phishing") for ln in lines) > 100, out["v5"][:500])


def blind_quick(src, dst):
    """A copy of the v5 or v6 file src whose quick filter's slots are zeroed
    (its sums made again): it says no to about 255 in 256 expressions, listed
    or not, so a reader that consults it misses listed URLs (v5) or allow
    entries (v6)."""
    with open(src, "rb") as f:
        data = bytearray(f.read())
    entry = data[-32:]  # the quick entry ends a v5 file (filter-format.md)
    off = int.from_bytes(entry[8:16], "little")
    n = int.from_bytes(entry[28:32], "little")  # array_length, 1 byte a slot
    data[off:off + n] = bytes(n)
    data[448:480] = hashlib.sha256(data[512:]).digest()
    data[480:512] = hashlib.sha256(data[0:480]).digest()
    with open(dst, "wb") as f:
        f.write(data)


@test
def daemon_urls_quick_filter(ctx):
    """breachd answers URLs from an offline set keyed by XXH3 (v6) and with
    the quick filter (v5) as from the same feeds without it (v4): unlisted
    expressions skip SHA-256 (filter-format.md, "The quick filter"). A v5
    file whose quick filter says no to everything misses listed URLs, a v6
    one its allow entries: the daemon consults them."""
    rng = random.Random(7)
    bad = ["b%d-%x.example" % (i, rng.getrandbits(24)) for i in range(300)]
    paths = ["http://u%d.example.net/dir/p%d.html" % (i, i) for i in range(200)]
    ok = ["ok%d.%s" % (i, bad[i * 2]) for i in range(50)]
    write_lines(ctx.path("hosts.txt"), ["0.0.0.0 " + d for d in bad])
    write_lines(ctx.path("paths.txt"), paths)
    write_lines(ctx.path("allow.txt"), ok)
    urls = (["http://%s/" % d for d in bad[::3]] + ["http://x.%s/a/b?c=1" % d for d in bad[1::3]] +
            paths[::4] + ["http://u%d.example.net/dir/other.html" % i for i in range(0, 200, 9)] +
            ["https://%s/q" % d for d in ok] +
            ["http://r%x.example/%x" % (rng.getrandbits(40), i) for i in range(200)])
    answers = {}
    for enc, extra in (("v6", ()), ("v5", ("--sha256-keys",)), ("v4", ("--no-quick-filter",))):
        f = ctx.path("d%s.off" % enc)
        ctx.breachctl("filter", "build", "--kind", "url-sha256", "--offline", "--output", f,
                      "--input", ctx.path("hosts.txt") + "=malware",
                      "--input", ctx.path("paths.txt") + "=phishing",
                      "--input", ctx.path("allow.txt") + "=allow", *extra)
    blind_quick(ctx.path("dv5.off"), ctx.path("dblind.off"))
    blind_quick(ctx.path("dv6.off"), ctx.path("dblind6.off"))
    for enc in ("v6", "v5", "v4", "blind", "blind6"):
        conf = ctx.config(name="%s.conf" % enc,
                          urls={"filter": ctx.path("d%s.off" % enc), "upstream": "none"})
        d = ctx.daemon(conf)
        c = d.client()
        for i, u in enumerate(urls):
            c.send("u%d URL %s\n" % (i, u))
        got = dict(ln.split(" ", 1) for ln in c.lines(len(urls)))
        answers[enc] = [got["u%d" % i] for i in range(len(urls))]
        c.close()
        d.stop_ok()
    for enc in ("v5", "v6"):
        diff = [(u, a, b) for u, a, b in zip(urls, answers[enc], answers["v4"]) if a != b]
        check(not diff, "%s and v4 answer differently, first: %r" % (enc, diff[:1]))
    blocked = sum(a.startswith("BLOCKED") for a in answers["v4"])
    check(blocked > 150 and answers["v4"].count("SAFE") > 250, answers["v4"][:5])
    blind = sum(a.startswith("BLOCKED") for a in answers["blind"])
    check(blind < blocked // 4, "the blinded quick filter still blocked %d of %d"
          % (blind, blocked))
    # v6: the allow entries' quick filter blinded, their URLs are blocked
    safe_ok = sum(a == "SAFE" for u, a in zip(urls, answers["v6"]) if u.startswith("https://ok"))
    safe_blind = sum(a == "SAFE" for u, a in zip(urls, answers["blind6"])
                     if u.startswith("https://ok"))
    check(safe_ok == len(ok) and safe_blind < len(ok) // 4,
          "allowed URLs SAFE: %d of %d, blinded v6: %d" % (safe_ok, len(ok), safe_blind))


@test
def daemon_answers_urls_locally(ctx):
    fxs, _ = url_feeds(ctx)
    fx = [f for f in fxs if f.blocked and f.safe][0]
    (o, _), = build_urls(ctx, ctx.path("u.off"), [fx])
    mirror = ctx.path("mirror")
    os.makedirs(mirror)
    port = ctx.nginx(mirror)
    conf = ctx.config(urls={"filter": o, "upstream": "http://127.0.0.1:%d/range/{prefix}" % port},
                      upstream={"decoys": "4"})
    d = ctx.daemon(conf)
    c = d.client()
    urls = list(fx.blocked) + list(fx.safe)
    for i, u in enumerate(urls):
        c.send("u%d URL %s\n" % (i, u))
    answers = dict(ln.split(" ", 1) for ln in c.lines(len(urls)))
    for i, u in enumerate(urls):
        if u in fx.blocked:
            eq(answers["u%d" % i], "BLOCKED %s %s" % fx.blocked[u], u)
        else:
            eq(answers["u%d" % i], "SAFE", u)
    dtest.no_upstream_stats(d)
    c.close()
    d.stop_ok()
    dtest.nginx_log_empty(ctx)


@test
def daemon_offline_allow_list(ctx):
    # An allow feed in an offline URL filter: SAFE whatever the blocklists
    # list for the URL, answered on the host like the rest (filter-format.md,
    # "Allow-lists").
    feeds = [("allow.txt", "allow", ["partner.example.com"]),
             ("phish.txt", "phishing", ["http://partner.example.com/phish/",
                                        "http://bad.example.org/x"]),
             ("malware.txt", "malware", ["example.com"])]
    args = []
    for name, cat, lines in feeds:
        with open(ctx.path(name), "w") as f:
            f.write("\n".join(lines) + "\n")
        args += ["--input", "%s=%s" % (ctx.path(name), cat)]
    o = ctx.path("allow.off")
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--offline", "--output", o, *args)
    d = ctx.daemon(ctx.config(urls={"filter": o, "upstream": "none"}))
    c = d.client()
    want = {"http://partner.example.com/": "SAFE",
            "http://www.partner.example.com/phish/login": "SAFE",
            "http://other.example.com/": "BLOCKED malware example.com/",
            "http://bad.example.org/x": "BLOCKED phishing bad.example.org/x"}
    urls = list(want)
    for i, u in enumerate(urls):
        c.send("u%d URL %s\n" % (i, u))
    answers = dict(ln.split(" ", 1) for ln in c.lines(len(urls)))
    for i, u in enumerate(urls):
        eq(answers["u%d" % i], want[u], u)
    st = d.stats()
    eq((st["url_allowed"], st["url_safe"], st["url_blocked"]), (2, 2, 2), "STATS")
    c.close()
    d.stop_ok()
    # breachctl filter query --url says what breachd answers
    out = ctx.breachctl("filter", "query", o, "--url", *urls).stdout.strip().split("\n")
    eq(out, ["allowed partner.example.com/", "allowed partner.example.com/",
             "blocked malware example.com/", "blocked phishing bad.example.org/x"],
       "filter query --url with an allow-list")


if __name__ == "__main__":
    dtest.main()
