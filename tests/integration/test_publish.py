#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachctl publish (docs/fleet.md, "Publishing and following"): feeds
served by a real nginx (ETag / Last-Modified: an unchanged feed is a 304),
one --once cycle after another: the first writes a signed base and a
signed manifest; an addition and a removal give a delta whose exact table
holds the removal, and the set (base, delta) answers them; a feed that
shrinks by 90%, one that is not a feed and one that fails keep their last
good entries, held with their reason in the manifest, and publish nothing
new; an unchanged cycle writes no generation. The service announces its
cycle in the manifest, --once none; quiet feeds rewrite a 5-minute-old
manifest. A password set (kind password-sha1, a [corpus NAME]): a base,
then a load published as a delta of the new keys and raised counts,
smaller than the base, which breachd answers over the base; a load as
large as the base is a base; a rewrite with nothing new publishes
nothing; a truncated corpus whose base is due is held. Also filter build --stats,
the count histogram of a corpus. Standard library only."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, sha1hex, test  # noqa: E402


def write(path, lines):
    with open(path + ".tmp", "w") as f:
        f.write("".join(x + "\n" for x in lines))
    os.rename(path + ".tmp", path)


def touch(path, step):
    """A new Last-Modified (and nginx ETag): later than any before."""
    t = time.time() + 10 * step
    os.utime(path, (t, t))


def manifest(ctx):
    return open(ctx.path("out", "manifest")).read()


def setup(ctx):
    os.mkdir(ctx.path("feeds"))
    os.mkdir(ctx.path("out"))
    port = dtest.nginx(ctx, "nginx", "location /feeds/ { alias %s/; }" % ctx.path("feeds"))
    write(ctx.path("feeds", "bad.txt"), ["h%d.example" % i for i in range(100)])
    write(ctx.path("feeds", "ok.txt"), ["partner.example"])
    ctx.breachctl("key", "generate", "--secret", ctx.path("sec.pem"),
                  "--public", ctx.path("pub.pem"))
    conf = ctx.path("publish.conf")
    with open(conf, "w") as f:
        f.write("[publish]\noutput = %s\nkey = %s\ninterval = 1s\n\n"
                "[feed bad]\nurl = http://127.0.0.1:%d/feeds/bad.txt\ncategory = malware\n"
                "interval = 1s\n\n"
                "[feed ok]\nurl = http://127.0.0.1:%d/feeds/ok.txt\ncategory = allow\n"
                % (ctx.path("out"), ctx.path("sec.pem"), port, port))
    return conf




def quick_keys(info):
    """The quick filter's keys in filter info's output, None without one."""
    for ln in info.splitlines():
        if ln.startswith("quick filter:"):  # "quick filter:  8-bit, N keys (...)"
            return int(ln.split(",")[1].split()[0])
    return None


@test
def publish_cycles(ctx):
    conf = setup(ctx)
    r = ctx.breachctl("publish", "--config", conf, "--once")
    check("base-" in r.stderr and "101 added" in r.stderr, r.stderr)
    m = manifest(ctx)
    check(m.startswith("breachd-manifest 1\nkind url-sha256\n"), m)
    check("feed bad " in m and " 100 ok\n" in m and "feed ok " in m, m)
    check(os.path.exists(ctx.path("out", "manifest.sig")), "manifest.sig")
    base = [ln.split()[1] for ln in m.splitlines() if ln.startswith("base ")][0]
    info = ctx.breachctl("filter", "info", ctx.path("out", base)).stdout
    check("exact table:       1 allow, 0 removed" in info, info)  # the allow feed, exact
    # fingerprints keyed by XXH3, a quick filter of the allow entry's
    # (key encoding v6; docs/filter-format.md, "The quick filter")
    check("url-expression-sha256 v6" in info and "keyed by:" in info, info)
    check(quick_keys(info) == 1, info)
    r = ctx.breachctl("filter", "query", ctx.path("out", base), "--url",
                      "http://partner.example/x", "http://h5.example/")
    eq(r.stdout, "allowed partner.example/\nblocked malware h5.example/\n", "the base answers")
    # unchanged feeds (304): no new generation
    r = ctx.breachctl("publish", "--config", conf, "--once")
    check("generation" not in r.stderr, r.stderr)
    eq(manifest(ctx).count("delta "), 0, "deltas after an unchanged cycle")
    # a state kept by a publisher that kept no XXH3s: the next cycle
    # downloads the bodies again (not a 304) for them, and publishes nothing
    for name in ("bad", "ok"):
        os.unlink(ctx.path("out.state", "feed-%s.quick" % name))
    r = ctx.breachctl("publish", "--config", conf, "--once")
    check("generation" not in r.stderr, r.stderr)
    for name, n in (("bad", 100), ("ok", 1)):
        eq(os.path.getsize(ctx.path("out.state", "feed-%s.quick" % name)), 32 + 8 * n,
           "feed %s's XXH3s, back" % name)
    # XXH3s kept for other keys (a crash between the two files): not taken
    q = ctx.path("out.state", "feed-ok.quick")
    good = open(q, "rb").read()
    data = bytearray(good)
    data[0] ^= 1  # the hash of other keys
    data[-1] ^= 1  # and another XXH3
    open(q, "wb").write(bytes(data))
    r = ctx.breachctl("publish", "--config", conf, "--once")
    check("generation" not in r.stderr, r.stderr)
    eq(open(q, "rb").read(), good, "feed ok's XXH3s, downloaded again")
    # h0 removed, new1 added: a delta with one removal in its exact table
    write(ctx.path("feeds", "bad.txt"), ["h%d.example" % i for i in range(1, 100)] +
          ["new1.example"])
    touch(ctx.path("feeds", "bad.txt"), 1)
    r = ctx.breachctl("publish", "--config", conf, "--once")
    check("1 added, 1 removed" in r.stderr, r.stderr)
    m = manifest(ctx)
    delta = [ln.split()[1] for ln in m.splitlines() if ln.startswith("delta ")]
    eq(len(delta), 1, "deltas")
    info = ctx.breachctl("filter", "info", ctx.path("out", delta[0])).stdout
    check("exact table:       0 allow, 1 removed" in info, info)
    check(quick_keys(info) == 0, info)  # no allow entry; a removal needs no quick key
    check(os.path.exists(ctx.path("out", delta[0] + ".sig")), "the delta's signature")
    # a shrink by 90% is held: nothing new, the manifest says why
    write(ctx.path("feeds", "bad.txt"), ["h%d.example" % i for i in range(1, 11)])
    touch(ctx.path("feeds", "bad.txt"), 2)
    r = ctx.breachctl("publish", "--config", conf, "--once")
    check("feed bad: 10 entries, down from 100: shrank more than max_shrink = 50%" in r.stderr,
          r.stderr)
    m = manifest(ctx)
    check("feed bad " in m and " 100 held 10 entries, down from 100" in m, m)
    eq(m.count("delta "), 1, "deltas after a held feed")
    # garbage, then a failing feed: held too
    with open(ctx.path("feeds", "bad.txt"), "wb") as f:
        f.write(b"\x00\x01garbage\xff\n" * 3)
    touch(ctx.path("feeds", "bad.txt"), 3)
    r = ctx.breachctl("publish", "--config", conf, "--once")
    check("feed bad: not a feed:" in r.stderr, r.stderr)
    os.unlink(ctx.path("feeds", "bad.txt"))
    r = ctx.breachctl("publish", "--config", conf, "--once")
    check("feed bad: fetch failed:" in r.stderr, r.stderr)
    check(" 100 held fetch failed" in manifest(ctx), manifest(ctx))
    eq(manifest(ctx).count("delta "), 1, "deltas after bad feeds")


@test
def service_announces_its_cycle(ctx):
    """--once announces no period; the service (interval 1s) writes a
    manifest at its first cycle, naming its period ("cycle 1"), and keeps
    naming it in the manifests of its later generations."""
    conf = setup(ctx)
    ctx.breachctl("publish", "--config", conf, "--once")
    check("\ncycle " not in manifest(ctx), manifest(ctx))
    p = ctx.spawn([dtest.ARGS.breachctl, "publish", "--config", conf],
                  stderr=open(ctx.path("service.log"), "w"))
    try:
        dtest.wait_for(lambda: "\ncycle 1\n" in manifest(ctx), timeout=30,
                       what="the service's manifest")
        first = int(manifest(ctx).split("\npublished ")[1].split()[0])
        write(ctx.path("feeds", "bad.txt"), ["h%d.example" % i for i in range(101)])
        touch(ctx.path("feeds", "bad.txt"), 1)
        dtest.wait_for(lambda: int(manifest(ctx).split("\npublished ")[1].split()[0]) > first,
                       timeout=30, what="a new generation")
    finally:
        p.terminate()
        p.wait()
    check("\ncycle 1\n" in manifest(ctx), manifest(ctx))


@test
def quiet_feeds_refresh_the_manifest(ctx):
    """Unchanged feeds that succeed write no generation, but once the
    manifest is 5 minutes old (its published time and the feeds' last
    successes moved back 400 s here) a cycle writes it again with the
    feeds' new successes, so the hosts' feed ages stay the data's."""
    conf = setup(ctx)
    ctx.breachctl("publish", "--config", conf, "--once")
    r = ctx.breachctl("publish", "--config", conf, "--once")  # 304s, fresh manifest
    check("generation" not in r.stderr, r.stderr)
    m = manifest(ctx)
    pub = int(m.split("\npublished ")[1].split()[0])
    old = pub - 400
    lines = []
    for ln in m.splitlines():
        w = ln.split()
        if w[0] == "published":
            w[1] = str(old)
        elif w[0] == "feed":
            w[2] = str(old)
        lines.append(" ".join(w))
    with open(ctx.path("out", "manifest"), "w") as f:
        f.write("\n".join(lines) + "\n")
    r = ctx.breachctl("publish", "--config", conf, "--once")
    check("generation" not in r.stderr, r.stderr)
    m = manifest(ctx)
    check(int(m.split("\npublished ")[1].split()[0]) >= pub, m)
    ages = [int(ln.split()[2]) for ln in m.splitlines() if ln.startswith("feed ")]
    check(len(ages) == 2 and min(ages) >= pub, m)


@test
def build_stats(ctx):
    """filter build --stats: the count histogram of the input (to size
    --min-count tiers), with and without --offline."""
    src = os.path.join(dtest.ARGS.source_root, "data", "fixtures",
                       "password-sha1-v2-offline.input")
    want = ("  count >= 1      1000\n  count >= 2      999\n  count >= 10     991\n"
            "  count >= 100    901\n  count >= 1000   850\n  count >= 10000  849\n"
            "  no count        0\n")
    for extra in ([], ["--offline"]):
        r = ctx.breachctl("filter", "build", "--kind", "password-sha1", "--input", src,
                          "--output", ctx.path("f%d.bfuse" % len(extra)), "--stats", *extra)
        check(r.stdout.endswith(want), r.stdout)


def write_corpus(path, entries):
    """A HIBP corpus file (HASH:COUNT lines), replaced whole."""
    write(path, ["%s:%d" % (h, entries[h]) for h in sorted(entries)])


def files_of(m, what):
    """{name: bytes} of the manifest's base or delta lines."""
    return {ln.split()[1]: int(ln.split()[4]) for ln in m.splitlines()
            if ln.startswith(what + " ")}


@test
def publish_passwords(ctx):
    """A password load is published as a delta (new keys, raised counts)
    smaller than the base, which breachd answers over the base."""
    rng = random.Random(36)
    entries = {sha1hex("pw-%d" % i): rng.choice([1, 3, 40]) for i in range(20000)}
    os.mkdir(ctx.path("out"))
    write_corpus(ctx.path("corpus.txt"), entries)
    sec, pub = ctx.path("sec.pem"), ctx.path("pub.pem")
    ctx.breachctl("key", "generate", "--secret", sec, "--public", pub)
    conf = ctx.path("publish.conf")
    with open(conf, "w") as f:
        f.write("[publish]\noutput = %s\nkey = %s\nkind = password-sha1\n\n"
                "[corpus hibp]\ninput = %s\n" % (ctx.path("out"), sec, ctx.path("corpus.txt")))
    r = ctx.breachctl("publish", "--config", conf, "--once")
    m = manifest(ctx)
    check(m.startswith("breachd-manifest 1\nkind password-sha1\n"), m)
    check("\nfeed hibp " in m and " 20000 ok\n" in m, m)
    base = files_of(m, "base")
    eq(len(base), 1, "one base")
    # an unchanged corpus: no new generation
    r = ctx.breachctl("publish", "--config", conf, "--once")
    check("generation" not in r.stderr, r.stderr)
    # a load: 20 new keys, 10 counts raised, the rest unchanged
    new = {sha1hex("load-%d" % i): 50 + i for i in range(20)}
    raised = sorted(entries)[:10]
    entries.update(new)
    entries.update({h: 99 for h in raised})
    write_corpus(ctx.path("corpus.txt"), entries)
    r = ctx.breachctl("publish", "--config", conf, "--once")
    m = manifest(ctx)
    delta = files_of(m, "delta")
    eq(len(delta), 1, "one delta: %s" % r.stderr)
    check(list(delta.values())[0] < list(base.values())[0], "the delta is smaller: %s" % m)
    info = ctx.breachctl("filter", "info", ctx.path("out", list(delta)[0])).stdout
    check("keys:              30\n" in info, "new keys and raised counts: " + info)
    files = [ctx.path("out", x) for x in list(base) + list(delta)]
    d = ctx.daemon(ctx.config(passwords={"filter": ", ".join(files), "upstream": "none",
                                         "pubkey": pub}))
    c = d.client()
    eq(c.ask("a PW " + sha1hex("load-7")), "a PWNED 57", "a new key")
    eq(c.ask("b PW " + raised[3]), "b PWNED 99", "a raised count")
    old = sorted(entries)[-1]
    eq(c.ask("c PW " + old), "c PWNED %d" % entries[old], "a key of the base")
    c.close()
    d.stop_ok()
    # a load larger than the base: published as a base
    entries.update({sha1hex("big-%d" % i): 2 for i in range(40000)})
    write_corpus(ctx.path("corpus.txt"), entries)
    r = ctx.breachctl("publish", "--config", conf, "--once")
    m = manifest(ctx)
    check("not smaller than the base" in r.stderr, r.stderr)
    eq((len(files_of(m, "base")), len(files_of(m, "delta"))), (1, 0), "a new base: " + m)
    check(files_of(m, "base") != base, "another base")
    # a corpus rewritten with nothing new: no generation
    gen = m.split("\ngeneration ")[1].split()[0]
    write_corpus(ctx.path("corpus.txt"), entries)
    r = ctx.breachctl("publish", "--config", conf, "--once")
    check("no new key or count" in r.stderr and "\ngeneration %s\n" % gen in manifest(ctx),
          r.stderr)
    # a delta past a quarter of the base, then a truncated corpus: the base
    # that is due would shrink the set past max_shrink; the set stays, held
    entries.update({sha1hex("more-%d" % i): 5 for i in range(20000)})
    write_corpus(ctx.path("corpus.txt"), entries)
    ctx.breachctl("publish", "--config", conf, "--once")
    m = manifest(ctx)
    eq(len(files_of(m, "delta")), 1, "a delta of 20000 keys: " + m)
    write_corpus(ctx.path("corpus.txt"), dict(sorted(entries.items())[:1000]))
    r = ctx.breachctl("publish", "--config", conf, "--once")
    check("a base of 1000 keys would replace a set of 80020" in r.stderr, r.stderr)
    held = manifest(ctx)
    eq(files_of(held, "delta"), files_of(m, "delta"), "the set stays: " + held)
    check(" held the corpus shrank past max_shrink\n" in held, held)


@test
def publish_without_quick_filter(ctx):
    """[publish] quick_filter = no: v4 files, for hosts that predate v5;
    sha256_keys = yes: v5 files (fingerprints keyed by SHA-256, a quick
    filter of every expression), for hosts that predate v6."""
    conf = setup(ctx)
    text = open(conf).read()
    for key, enc, quick in (("quick_filter = no", "v4", None), ("sha256_keys = yes", "v5", 101)):
        out = ctx.path("out-" + enc)
        os.mkdir(out)
        with open(conf, "w") as f:
            f.write(text.replace("[publish]\n", "[publish]\n%s\n" % key, 1)
                    .replace("output = %s\n" % ctx.path("out"), "output = %s\n" % out, 1))
        ctx.breachctl("publish", "--config", conf, "--once")
        m = open(os.path.join(out, "manifest")).read()
        base = [ln.split()[1] for ln in m.splitlines() if ln.startswith("base ")][0]
        info = ctx.breachctl("filter", "info", os.path.join(out, base)).stdout
        check("url-expression-sha256 " + enc in info and quick_keys(info) == quick, info)
        r = ctx.breachctl("filter", "query", os.path.join(out, base), "--url",
                          "http://partner.example/x", "http://h5.example/")
        eq(r.stdout, "allowed partner.example/\nblocked malware h5.example/\n", enc + " answers")


@test
def config_errors(ctx):
    conf = ctx.path("bad.conf")
    with open(conf, "w") as f:
        f.write("[publish]\noutput = /tmp/x\nkey = /tmp/k\nmax_shrink = 150%\n")
    r = ctx.breachctl("publish", "--config", conf, check_rc=False)
    check(r.returncode == 2 and conf + ":4: max_shrink = 150%" in r.stderr, r.stderr)
    with open(conf, "w") as f:
        f.write("[publish]\noutput = /tmp/x\nkey = /tmp/k\nquick_filter = maybe\n")
    r = ctx.breachctl("publish", "--config", conf, check_rc=False)
    check(r.returncode == 2 and conf + ":4: quick_filter = maybe: expected yes or no" in r.stderr,
          r.stderr)
    with open(conf, "w") as f:
        f.write("[publish]\noutput = /tmp/x\nkey = /tmp/k\nsha256_keys = 1\n")
    r = ctx.breachctl("publish", "--config", conf, check_rc=False)
    check(r.returncode == 2 and conf + ":4: sha256_keys = 1: expected yes or no" in r.stderr,
          r.stderr)
    with open(conf, "w") as f:
        f.write("[publish]\noutput = /tmp/x\nkey = /tmp/k\n[feed Bad-Name]\nurl = x\n")
    r = ctx.breachctl("publish", "--config", conf, check_rc=False)
    check(r.returncode == 2 and "a feed name is [a-z0-9_]" in r.stderr, r.stderr)
    with open(conf, "w") as f:
        f.write("[publish]\noutput = /tmp/x\nkey = /tmp/k\nkind = password-sha1\n"
                "[feed a]\nurl = x\ncategory = malware\n")
    r = ctx.breachctl("publish", "--config", conf, check_rc=False)
    check(r.returncode == 2 and "[feed NAME] sections only for kind = url-sha256" in r.stderr,
          r.stderr)
    with open(conf, "w") as f:
        f.write("[publish]\noutput = /tmp/x\nkey = /tmp/k\n[corpus a]\ninput = x\n")
    r = ctx.breachctl("publish", "--config", conf, check_rc=False)
    check(r.returncode == 2 and "[corpus NAME] sections only for a password kind" in r.stderr,
          r.stderr)


if __name__ == "__main__":
    dtest.main()
