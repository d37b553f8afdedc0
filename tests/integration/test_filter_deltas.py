#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Delta filters: breachctl filter build --base and --merge, and breachd's
`filter = base, delta, ...` (docs/filter-format.md "Deltas and layered
files", breachd.conf(5)): the set answers for every file, a delta of another
base is refused by name and the old set keeps serving, a merged file answers
as its set did; URL deltas and the removal cycle through the range mirror."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import fleetfx  # noqa: E402
from dtest import check, eq, test  # noqa: E402


def pw_daemon(ctx, filters, entries, **extra):
    mirror = ctx.path("mirror")
    dtest.write_range(mirror, entries)
    conf = ctx.config(passwords=dict(filter=", ".join(filters),
                                     upstream="file://%s/{prefix}.txt" % mirror, **extra))
    return ctx.daemon(conf), conf, mirror


def ask_pw(cl, hashes):
    out = {}
    for i, h in enumerate(hashes):
        ans = cl.ask("q%d PW %s" % (i, h))
        out[h] = ans.split(" ", 1)[1]
    return out


@test
def base_and_delta_set(ctx):
    old = fleetfx.passwords("base", 3000)
    new = dict(old)
    added = fleetfx.passwords("added", 300)
    new.update(added)
    base = fleetfx.build(ctx, ctx.path("base.bfuse"), old, 1)
    delta = fleetfx.build(ctx, ctx.path("delta.bfuse"), new, 2, base=[base])
    r = ctx.breachctl("filter", "info", delta)
    check("role:              delta" in r.stdout, r.stdout)
    # The delta holds the 300 new keys (a few may already be base maybes).
    info = ctx.breachctl("filter", "info", delta).stdout
    keys = int([ln.split()[1] for ln in info.splitlines() if ln.startswith("keys:")][0])
    check(290 <= keys <= 300, "delta keys %d" % keys)
    d, conf, _ = pw_daemon(ctx, [base], new)
    cl = d.client(timeout=30)
    sample = sorted(added)[:40]
    before = ask_pw(cl, sample)
    check(sum(v == "CLEAN" for v in before.values()) >= 38, "the base alone: %r" % before)
    # The base with its delta.
    ctx.config(passwords=dict(filter="%s, %s" % (base, delta),
                              upstream="file://%s/{prefix}.txt" % ctx.path("mirror")))
    eq(cl.ask("r RELOAD", timeout=60), "r RELOADED")
    after = ask_pw(cl, sample)
    for h in sample:
        eq(after[h], "PWNED %d" % added[h], "new key " + h)
    h0 = sorted(old)[0]
    eq(cl.ask("o PW " + h0), "o PWNED %d" % old[h0], "a base key")
    st = cl.stats()
    eq((st["filter_generation"], st["filter_keys"]), (2, 3000 + keys), "the set's STATS")
    check("password filter: generation 2" in d.log(), "the log names the set's generation")
    cl.close()
    d.stop_ok()


@test
def foreign_delta_refused_by_name(ctx):
    keys = fleetfx.passwords("fd", 2000)
    more = dict(keys)
    more.update(fleetfx.passwords("fd-more", 100))
    base = fleetfx.build(ctx, ctx.path("base.bfuse"), keys, 1)
    other = fleetfx.build(ctx, ctx.path("other.bfuse"), fleetfx.passwords("else", 500), 1)
    good = fleetfx.build(ctx, ctx.path("good-delta.bfuse"), more, 2, base=[base])
    foreign = fleetfx.build(ctx, ctx.path("foreign-delta.bfuse"), more, 3, base=[other])
    d, conf, mirror = pw_daemon(ctx, [base, good], more)
    cl = d.client(timeout=30)
    eq(cl.stats()["filter_generation"], 2)
    up = "file://%s/{prefix}.txt" % mirror
    ctx.config(passwords=dict(filter="%s, %s" % (base, foreign), upstream=up))
    ans = fleetfx.reload_fails(cl, "r1", "foreign-delta.bfuse: refused: a delta of another base")
    check(":2: [passwords] filter" in ans or "[passwords] filter" in ans, ans)
    # A delta first, a full filter second.
    ctx.config(passwords=dict(filter="%s, %s" % (good, base), upstream=up))
    fleetfx.reload_fails(cl, "r2", "good-delta.bfuse: a delta, not a full filter")
    ctx.config(passwords=dict(filter="%s, %s" % (base, other), upstream=up))
    fleetfx.reload_fails(cl, "r3", "a full filter, not a delta")
    st = cl.stats()
    eq((st["filter_generation"], st["reload_failures"]), (2, 3), "the good set keeps serving")
    h = sorted(set(more) - set(keys))[0]
    eq(cl.ask("n PW " + h), "n PWNED %d" % more[h])
    # breachctl refuses the same set the same way.
    r = ctx.breachctl("filter", "build", "--kind", "password-sha1", "--input", base + ".in",
                      "--output", ctx.path("x.bfuse"), "--base", base, "--base", foreign,
                      check_rc=False)
    eq(r.returncode, 2)
    check("a delta of another base" in r.stderr, r.stderr)
    cl.close()
    d.stop_ok()


@test
def merged_file_and_its_deltas(ctx):
    k1 = fleetfx.passwords("m1", 2000)
    k2 = dict(k1)
    k2.update(fleetfx.passwords("m2", 100))
    k3 = dict(k2)
    k3.update(fleetfx.passwords("m3", 100))
    base = fleetfx.build(ctx, ctx.path("base.bfuse"), k1, 1)
    d1 = fleetfx.build(ctx, ctx.path("d1.bfuse"), k2, 2, base=[base])
    merged = ctx.path("merged.bfuse")
    ctx.breachctl("filter", "build", "--merge", base, d1, "--output", merged)
    info = ctx.breachctl("filter", "info", merged).stdout
    check("2 layers" in info and "format version:    2" in info, info)
    # Every key of the set is a maybe of the merged file, offline.
    says = dtest.filter_says(ctx, merged, sorted(k2))
    check(all(says.values()), "a key of the set is not in the merged file")
    d3 = fleetfx.build(ctx, ctx.path("d3.bfuse"), k3, 3, base=[merged])
    d, conf, mirror = pw_daemon(ctx, [merged, d3], k3)
    cl = d.client(timeout=30)
    got = ask_pw(cl, sorted(set(k3) - set(k1)))
    for h, v in got.items():
        eq(v, "PWNED %d" % k3[h], h)
    eq(cl.stats()["filter_generation"], 3)
    cl.close()
    d.stop_ok()
    # Merging again is flat, and d3 still belongs.
    again = ctx.path("again.bfuse")
    ctx.breachctl("filter", "build", "--merge", merged, d3, "--output", again)
    check("3 layers" in ctx.breachctl("filter", "info", again).stdout, "flat merge")
    says = dtest.filter_says(ctx, again, sorted(k3))
    check(all(says.values()), "a key of the set is not in the second merge")


@test
def signed_set_needs_every_signature(ctx):
    sec, pub = fleetfx.keypair(ctx)
    keys = fleetfx.passwords("ss", 1000)
    more = dict(keys)
    more.update(fleetfx.passwords("ss-more", 50))
    base = fleetfx.build(ctx, ctx.path("base.bfuse"), keys, 1, sign=sec)
    delta = fleetfx.build(ctx, ctx.path("delta.bfuse"), more, 2, base=[base])
    mirror = ctx.path("mirror")
    dtest.write_range(mirror, more)
    up = "file://%s/{prefix}.txt" % mirror
    conf = ctx.config(passwords=dict(filter="%s, %s" % (base, delta), pubkey=pub, upstream=up))
    d = ctx.daemon(conf, wait=False)
    check(d.proc.wait(timeout=60) != 0, "an unsigned delta loaded")
    check("delta.bfuse has no signature" in d.log(), d.log())
    ctx.breachctl("filter", "sign", "--key", sec, delta)
    d = ctx.daemon(conf)
    cl = d.client(timeout=30)
    eq(cl.stats()["filter_generation"], 2)
    cl.close()
    d.stop_ok()


def url_set(ctx):
    """Feeds v1 (100 URLs) and v2 (v1 without 3, plus 20), a base of v1 with
    its mirror, and a delta of v2 with the whole set's mirror."""
    v1 = ["http://bad%d.example/p" % i for i in range(100)]
    removed = v1[:3]
    added = ["http://new%d.example/q" % i for i in range(20)]
    v2 = v1[3:] + added
    f1, f2 = ctx.path("feed1.txt"), ctx.path("feed2.txt")
    for path, urls in ((f1, v1), (f2, v2)):
        with open(path, "w") as f:
            f.write("\n".join(urls) + "\n")
    mirror = ctx.path("urlmirror")
    base, delta = ctx.path("urls.bbf"), ctx.path("urls-delta.bbf")
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--input", f1 + "=malware",
                  "--output", base, "--ranges-dir", mirror, "--generation", "1")
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--input", f2 + "=malware",
                  "--output", delta, "--ranges-dir", mirror, "--base", base)
    return base, delta, mirror, removed, added, v1[3:]


@test
def url_delta_and_removals(ctx):
    base, delta, mirror, removed, added, kept = url_set(ctx)
    info = ctx.breachctl("filter", "info", delta).stdout
    check("keys:              20" in info and "role:              delta" in info, info)
    # The base still says maybe for the removed URLs; their ranges are empty.
    says = ctx.breachctl("filter", "query", base, "--url", *removed).stdout.split()
    eq(says, ["maybe"] * 3, "the base still lists the removed URLs")
    conf = ctx.config(urls=dict(filter="%s, %s" % (base, delta),
                                upstream="file://%s/{prefix}.txt" % mirror))
    d = ctx.daemon(conf)
    cl = d.client(timeout=30)
    for i, u in enumerate(added):
        eq(cl.ask("a%d URL %s" % (i, u)), "a%d BLOCKED malware %s" % (i, u[7:]), u)
    for i, u in enumerate(kept[:10]):
        eq(cl.ask("k%d URL %s" % (i, u)), "k%d BLOCKED malware %s" % (i, u[7:]), u)
    for i, u in enumerate(removed):
        eq(cl.ask("r%d URL %s" % (i, u)), "r%d SAFE" % i, "removed " + u)
    gen = ctx.breachctl("filter", "info", delta).stdout.split("generation:")[1].split()[0]
    eq(cl.stats()["url_filter_generation"], int(gen), "the delta's generation")
    check(int(gen) > 1, "a delta is above its base")
    # filter add refuses a delta.
    r = ctx.breachctl("filter", "add", delta, "--input", ctx.path("feed1.txt"), check_rc=False)
    eq(r.returncode, 2)
    check("is a delta" in r.stderr, r.stderr)
    cl.close()
    d.stop_ok()


if __name__ == "__main__":
    dtest.main()
