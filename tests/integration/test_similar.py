#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Similar passwords end to end with real processes (docs/similar.md): the
SIMILAR verb answered from an offline filter of popular passwords
([passwords] similar_filter, or [passwords] filter when that one is
offline) and from nothing else: a real nginx with every range of the
corpus stands by as the upstream, decoys on, with no [passwords] filter
(every PW would go upstream) and with a range filter; its access log and
STATS show that no variant caused a fetch, a decoy or a cache entry, and
the daemon's debug log holds none of the hashes. Bad requests (too many
hashes, wrong lengths) are refused without echoing a hash. breachctl
password --similar=reject|warn|off and --similar-min-count. Standard
library only; dtest.py is the harness."""
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, sha1hex, test  # noqa: E402
from ntfx import nthash  # noqa: E402
from ptyfx import typed  # noqa: E402

POPULAR = {"password": 3000000, "summer": 50000, "monkey": 2500, "dragon": 1200,
           "sunshine": 150, "letmein": 80}


def corpus(n=2000, seed=27):
    """{SHA-1 hex: count}: POPULAR, then random passwords seen once or twice."""
    rng = random.Random(seed)
    out = {sha1hex(p): c for p, c in POPULAR.items()}
    for i in range(n):
        out[sha1hex("rare-%d-%d" % (i, rng.getrandbits(32)))] = rng.choice([1, 2])
    return out


def write_corpus(path, entries):
    with open(path, "w") as f:
        for h in sorted(entries):
            f.write("%s:%d\n" % (h, entries[h]))
    return path


def offline_filter(ctx, entries, name="similar.bfuse", *extra):
    inp = write_corpus(ctx.path(name + ".txt"), entries)
    out = ctx.path(name)
    ctx.breachctl("filter", "build", "--kind", "password-sha1", "--offline", "--input", inp,
                  "--output", out, *extra)
    return out


def near(got, true):
    """An offline count: exact up to 100, never above, less than 10% below."""
    return got == true if true <= 100 else true * 0.9 < got <= true


def similar_of(lines):
    """Each output line as an int (the count of SIMILAR) or the line."""
    return [int(ln.split()[1]) if ln.startswith("SIMILAR ") else ln for ln in lines]


def counts_ok(got, want, what):
    check(len(got) == len(want) and all(
        near(g, w) if isinstance(w, int) and isinstance(g, int) else g == w
        for g, w in zip(got, want)), "%s: %r, want %r" % (what, got, want))


def similar_line(rid, hashes, kind="sha1"):
    return "%s SIMILAR %s %s\n" % (rid, kind, ",".join(hashes))


def ask_variants(ctx, d):
    """SIMILAR requests of every size up to 128, hits and misses, pipelined:
    their answers. Returns the hashes sent (for the log check)."""
    rng = random.Random(5)
    pop = [sha1hex(p) for p in POPULAR]
    sent = []
    c = d.client()
    reqs = {}
    for i in range(40):
        n = rng.choice([1, 2, 17, 64, 127, 128])
        hashes = [dtest.rand_hash(rng) for _ in range(n)]
        if i % 2 == 0:  # a hit among them
            hashes[rng.randrange(n)] = pop[i % len(pop)]
        sent += hashes
        reqs["s%d" % i] = (hashes, i % 2 == 0)
        c.send(similar_line("s%d" % i, hashes))
    answers = dict(ln.split(" ", 1) for ln in c.lines(len(reqs)))
    for rid, (hashes, hit) in reqs.items():
        a = answers[rid]
        if hit:
            best = max(POPULAR[p] for p in POPULAR if sha1hex(p) in hashes)
            parts = a.split()
            check(len(parts) == 3 and parts[0] == "SIMILAR", "%s: %r" % (rid, a))
            got = int(parts[1])
            check(near(got, best), "%s: count %d for %d" % (rid, got, best))
            eq(parts[2], "1", rid + " hits")
        else:
            eq(a, "CLEAN", rid)
    # the password's own upper bound of variants: 8 requests of 128
    hashes = [dtest.rand_hash(rng) for _ in range(1024)]
    hashes[1000] = sha1hex("password")
    hashes[3] = sha1hex("monkey")
    for k in range(8):
        c.send(similar_line("b%d" % k, hashes[128 * k:128 * (k + 1)]))
    answers = dict(ln.split(" ", 1) for ln in c.lines(8))
    check(answers["b0"].startswith("SIMILAR ") and answers["b0"].endswith(" 1"), answers["b0"])
    check(answers["b7"].startswith("SIMILAR "), answers["b7"])
    for k in range(1, 7):
        eq(answers["b%d" % k], "CLEAN", "b%d" % k)
    sent += hashes
    c.close()
    return sent


@test
def similar_never_leaves_the_host(ctx):
    """The adversary: a daemon that sent a variant to the range API would
    show it in nginx's log, STATS' fetches and decoys, or the cache."""
    entries = corpus()
    sim = offline_filter(ctx, entries, "similar.bfuse", "--min-count", "100")
    mirror = ctx.path("mirror")
    dtest.write_range(mirror, entries)
    port = ctx.nginx(mirror)
    up = "http://127.0.0.1:%d/range/{prefix}" % port
    range_filt = ctx.build_filter(write_corpus(ctx.path("all.txt"), entries),
                                  ctx.path("range.bfuse"))
    # no [passwords] filter (every PW goes upstream), then a range filter
    for name, pw_filter in (("nofilter.conf", ""), ("range.conf", range_filt)):
        conf = ctx.config(name, passwords={"filter": pw_filter, "upstream": up,
                                           "similar_filter": sim},
                          upstream={"decoys": "4"}, daemon={"log_level": "debug"})
        d = ctx.daemon(conf)
        sent = ask_variants(ctx, d)
        st = dtest.no_upstream_stats(d, ("upstream_fetches", "upstream_transfers",
                                         "upstream_decoys", "cache_entries", "cache_misses",
                                         "lookups_coalesced"))
        eq((st["similar_hits"], st["similar_clean"]), (22, 26), "similar_hits, _clean")
        d.stop_ok()
        log = d.log()
        for h in sent:
            check(h not in log and h.lower() not in log, "a variant hash in the log")
    dtest.nginx_log_empty(ctx)


@test
def filter_choice_and_refusals(ctx):
    entries = corpus(300)
    off = offline_filter(ctx, entries, "off.bfuse")
    range_filt = ctx.build_filter(write_corpus(ctx.path("all.txt"), entries),
                                  ctx.path("range.bfuse"))
    pw = sha1hex("password")
    # [passwords] filter offline, no similar_filter: it answers
    conf = ctx.config("a.conf", passwords={"filter": off, "upstream": "none"})
    d = ctx.daemon(conf)
    c = d.client()
    a = c.ask("a SIMILAR sha1 " + pw).split()
    check(a[1] == "SIMILAR" and near(int(a[2]), 3000000) and a[3] == "1", "fallback: %r" % a)
    eq(c.ask("n SIMILAR nt " + "A" * 32), "n UNKNOWN no-similar-filter", "no offline [ntlm]")
    # refusals: never echo a hash
    rng = random.Random(3)
    bad = {
        "b1": "SIMILAR sha1 " + ",".join(dtest.rand_hash(rng) for _ in range(129)),
        "b2": "SIMILAR sha1 " + pw[:39],
        "b3": "SIMILAR sha1 " + pw + ",",
        "b4": "SIMILAR md5 " + pw,
        "b5": "SIMILAR sha1 " + pw + ";" + pw,
        "b6": "SIMILAR nt " + pw,
        "b7": "SIMILAR",
        "b8": "SIMILAR sha1 " + pw[:-1] + "G",
    }
    for rid, req in bad.items():
        a = c.ask("%s %s" % (rid, req))
        check(a.startswith(rid + " ERR bad-request "), "%s: %r" % (rid, a[:120]))
        check(pw[:20] not in a.upper(), rid + ": the answer echoes the hash")
    c.close()
    d.stop_ok()
    # a range filter and no similar_filter: no answer
    conf = ctx.config("b.conf", passwords={"filter": range_filt, "upstream": "none"})
    d = ctx.daemon(conf)
    c = d.client()
    eq(c.ask("a SIMILAR sha1 " + pw), "a UNKNOWN no-similar-filter", "range filter")
    c.close()
    eq(d.stats()["similar_unknown"], 1, "similar_unknown")
    d.stop_ok()
    # similar_filter must be offline
    conf = ctx.config("c.conf", passwords={"similar_filter": range_filt, "upstream": "none"})
    r = subprocess.run(dtest.breachd_argv("--config", conf, "--check-config"),
                       capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "[passwords] similar_filter: " in r.stderr and
          "not an offline filter" in r.stderr, r.stderr)


def check_config(conf):
    return subprocess.run(dtest.breachd_argv("--config", conf, "--check-config"),
                          capture_output=True, text=True, timeout=60)


@test
def similar_filter_checked_like_the_others(ctx):
    """[passwords] pubkey: an unsigned similar_filter is refused, a signed one
    loads; a file another user owns is refused (as root)."""
    entries = corpus(100)
    sim = offline_filter(ctx, entries, "sim.bfuse")
    sec, pub = ctx.path("s.key"), ctx.path("p.pub")
    ctx.breachctl("key", "generate", "--secret", sec, "--public", pub)
    conf = ctx.config("signed.conf", passwords={"similar_filter": sim, "pubkey": pub,
                                                "upstream": "none"})
    r = check_config(conf)
    check(r.returncode != 0 and "[passwords] similar_filter: " in r.stderr and
          "signed.conf:" in r.stderr and "sim.bfuse has no signature" in r.stderr,
          "unsigned: %r" % r.stderr)
    ctx.breachctl("filter", "sign", "--key", sec, sim)
    r = check_config(conf)
    eq(r.returncode, 0, "signed: " + r.stderr)
    d = ctx.daemon(conf)
    eq(d.stats()["similar_filter_loaded"], 1, "loaded")
    d.stop_ok()
    if os.getuid() == 0:
        other = offline_filter(ctx, entries, "other.bfuse")
        os.chown(other, 65534, 65534)
        conf = ctx.config("owner.conf", passwords={"similar_filter": other, "upstream": "none"})
        r = check_config(conf)
        check(r.returncode != 0 and "other.bfuse" in r.stderr and "similar_filter" in r.stderr,
              "not root's: %r" % r.stderr)


def password(ctx, d, pws, *args):
    return subprocess.run([dtest.ARGS.breachctl, "--socket", d.sock, "password"] + list(args),
                          input="".join(p + "\n" for p in pws), capture_output=True, text=True,
                          timeout=60, env=dtest.base_env())


@test
def breachctl_similar(ctx):
    entries = corpus(300)
    off = offline_filter(ctx, entries, "sim.bfuse", "--min-count", "100")
    full = offline_filter(ctx, entries, "full.bfuse")
    conf = ctx.config(passwords={"filter": full, "upstream": "none", "similar_filter": off})
    d = ctx.daemon(conf)
    tweaks = ["P@ssw0rd1", "Summer2025!", "monkey123", "Dragon!!"]
    strong = ["correct horse battery staple", "xQ7#mZ2!vR9p"]
    r = password(ctx, d, tweaks + strong + ["password"], "--similar=reject")
    eq(r.returncode, 1, "reject exit: " + r.stderr)
    lines = r.stdout.splitlines()
    counts_ok(similar_of(lines[:6]), [3000000, 50000, 2500, 1200, "CLEAN", "CLEAN"], "reject")
    check(lines[6].startswith("PWNED "), "exact: " + lines[6])
    # warn: printed, exit status by the exact check only
    r = password(ctx, d, tweaks[:2] + strong, "--similar=warn")
    eq(r.returncode, 0, "warn")
    counts_ok(similar_of(r.stdout.splitlines()), [3000000, 50000, "CLEAN", "CLEAN"], "warn")
    # on standard input without --similar: warn, as for a typed password
    r = password(ctx, d, tweaks[:2] + strong)
    eq(r.returncode, 0, "stdin default: " + r.stderr)
    counts_ok(similar_of(r.stdout.splitlines()), [3000000, 50000, "CLEAN", "CLEAN"], "stdin default")
    # more than one pipelined chunk (256): every line its own input's answer
    many = [tweaks[i % 4] if i % 7 == 0 else strong[i % 2] + str(i) for i in range(600)]
    many[300] = "password"
    r = password(ctx, d, many, "--similar=reject")
    lines = r.stdout.splitlines()
    eq((r.returncode, len(lines)), (1, 600), "600 on stdin: " + r.stderr)
    for i, line in enumerate(lines):
        want = "PWNED" if i == 300 else "SIMILAR" if i % 7 == 0 else "CLEAN"
        check(line.split()[0] == want, "line %d: %r, want %s" % (i + 1, line, want))
    # min count: monkey (2500) and dragon (1200) are below 3000
    r = password(ctx, d, tweaks, "--similar=reject", "--similar-min-count", "3000")
    counts_ok(similar_of(r.stdout.splitlines()), [3000000, 50000, "CLEAN", "CLEAN"], "min")
    # the default min count (1000): sunshine (150) is not enough
    r = password(ctx, d, ["Sunshine1", "Monkey1"], "--similar=reject")
    counts_ok(similar_of(r.stdout.splitlines()), ["CLEAN", 2500], "default min count")
    r = password(ctx, d, tweaks, "--similar=off")
    eq((r.returncode, r.stdout.splitlines()), (0, ["CLEAN"] * 4), "off")
    r = password(ctx, d, tweaks[:1], "--similar=reject", "--json")
    check(r.stdout.startswith('{"input":1,"status":"SIMILAR","count":'), "json: " + r.stdout)
    r = password(ctx, d, tweaks[:1], "--similar=maybe")
    check(r.returncode == 2 and "reject, warn or off" in r.stderr, r.stderr)
    d.stop_ok()
    # no filter to ask: the exact answer, and a note when --similar was given
    conf = ctx.config("none.conf", passwords={"filter": "", "upstream": "none"})
    d = ctx.daemon(conf)
    r = password(ctx, d, tweaks[:1], "--similar=reject")
    eq((r.returncode, r.stdout.strip()), (3, "UNKNOWN no-upstream"), "no filter")
    check("no-similar-filter" in r.stderr, r.stderr)
    r = password(ctx, d, tweaks[:1])
    eq(r.stderr, "", "the default says nothing")
    d.stop_ok()


@test
def typed_password_default_warn(ctx):
    """A typed password gets similar=warn without --similar."""
    entries = corpus(100)
    off = offline_filter(ctx, entries, "sim.bfuse", "--min-count", "100")
    d = ctx.daemon(ctx.config(passwords={"filter": off, "upstream": "none"}))
    out, st = typed(d.sock, "Summer2025!")
    check(st == 0 and "SIMILAR " in out, "default warn: %d %r" % (st, out))
    out, st = typed(d.sock, "Summer2025!", "--similar=reject")
    check(st == 1 and "SIMILAR " in out, "reject: %d %r" % (st, out))
    out, st = typed(d.sock, "Summer2025!", "--similar=off")
    check(st == 0 and "CLEAN" in out and "SIMILAR" not in out, "off: %d %r" % (st, out))
    d.stop_ok()


@test
def ntlm_and_bad_input(ctx):
    """NT variants against an offline [ntlm] filter; passwords of any bytes
    and length through breachctl --similar: an answer for each, the bound
    holds, nothing leaks."""
    entries = corpus(200)
    off = offline_filter(ctx, entries, "sim.bfuse", "--min-count", "100")
    nt_in = write_corpus(ctx.path("nt.txt"), {nthash(p): c for p, c in POPULAR.items()})
    nt_off = ctx.path("nt.bfuse")
    ctx.breachctl("filter", "build", "--kind", "password-ntlm", "--offline", "--input", nt_in,
                  "--output", nt_off)
    conf = ctx.config(passwords={"filter": off, "upstream": "none"},
                      ntlm={"filter": nt_off, "upstream": "none"},
                      daemon={"log_level": "debug"})
    d = ctx.daemon(conf)
    c = d.client()
    a = c.ask("n SIMILAR nt %s,%s" % ("0" * 32, nthash("summer"))).split()
    check(a[1] == "SIMILAR" and near(int(a[2]), 50000) and a[3] == "1", "nt: %r" % a)
    c.close()
    r = password(ctx, d, ["Summer2025!", "xQ7#mZ2!vR9p"], "--ntlm", "--similar=reject")
    eq(r.returncode, 1, "ntlm reject: " + r.stderr)
    counts_ok(similar_of(r.stdout.splitlines()), [50000, "CLEAN"], "ntlm")
    # any bytes, any length: 4 KiB, 64 KiB of look-alikes, invalid UTF-8
    odd = ["a" * 4096, "1!|" * 20000, "\udcff\udcfepass\udc80word", "P@ss\x7fw0rd", ""]
    data = "".join(p + "\n" for p in odd).encode("utf-8", "surrogateescape")
    r = subprocess.run([dtest.ARGS.breachctl, "--socket", d.sock, "password", "--similar=reject"],
                       input=data, capture_output=True, timeout=60, env=dtest.base_env())
    lines = r.stdout.decode().splitlines()
    eq(len(lines), len(odd), "one answer per input: %r %r" % (lines, r.stderr))
    check(lines[3].startswith("SIMILAR "), "P@ss\\x7fw0rd: %r" % lines[3])
    st = d.stats()
    check(st["similar_hashes"] <= 1024 * (len(odd) + 2) + 2, "the bound: %d" % st["similar_hashes"])
    d.stop_ok()
    log = d.log()
    for p in POPULAR:
        for h in (sha1hex(p), nthash(p)):
            check(h[:16] not in log.upper(), "a hash in the log")


if __name__ == "__main__":
    dtest.main()
