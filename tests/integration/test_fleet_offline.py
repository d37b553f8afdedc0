#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The fleet path (docs/fleet.md) with offline filters, against a real
nginx publisher and a real breachd: an offline password filter and an
offline URL set (base and delta) are signed, fetched with `filter fetch
--config`, and the running daemon reloads and answers the new counts and
categories with no upstream (`upstream = none`); `filter rollback` brings
the older file back and the daemon answers as before; a bit-flipped offline
file is refused by the fetch (the installed files untouched) and, put in
place by hand, by the daemon's RELOAD, which keeps serving the old set; a
range (Bloom) delta published for the offline URL base is refused by the
fetch before it is installed. A password delta carries raised counts,
which win over the base's.
Fixtures: fleetfx.py (keys, publisher, publish, fetch). Standard library
only; dtest.py is the harness."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import fleetfx  # noqa: E402
from dtest import check, eq, test  # noqa: E402


def pw_build(ctx, out, entries, generation, sec):
    """An offline password filter of {hash: count}, signed."""
    inp = fleetfx.write_keys(out + ".in", entries)
    ctx.breachctl("filter", "build", "--kind", "password-sha1", "--offline", "--input", inp,
                  "--output", out, "--generation", str(generation))
    ctx.breachctl("filter", "sign", "--key", sec, out)
    return out


def url_build(ctx, out, feeds, generation, sec, base=None):
    """An offline URL filter of {category: [hosts]} (a delta of base when
    given), signed."""
    args = ["filter", "build", "--kind", "url-sha256", "--offline", "--output", out,
            "--generation", str(generation)]
    for cat, hosts in feeds.items():
        path = "%s.%s.txt" % (out, cat)
        with open(path, "w") as f:
            f.write("".join(h + "\n" for h in hosts))
        args += ["--input", "%s=%s" % (path, cat)]
    if base:
        args += ["--base", base]
    ctx.breachctl(*args)
    ctx.breachctl("filter", "sign", "--key", sec, out)
    return out


def flipped(src, dst):
    """A copy of src and its (valid) .sig with one bit flipped in the
    middle of the payload."""
    fleetfx.flip_byte(src, dst, 4096 + (os.path.getsize(src) - 4096) // 2)
    fleetfx.install(src + ".sig", dst + ".sig", sig=False)
    return dst


class Host:
    """The host: files under host/, a config naming the publisher, breachd."""

    NAMES = {"passwords": ["pw.bfuse"], "urls": ["urls.bfuse", "urls-delta.bfuse"]}

    def __init__(self, ctx, ng, pub):
        os.makedirs(ctx.path("host"))
        self.path = {n: ctx.path("host", n) for ns in self.NAMES.values() for n in ns}
        sections = {}
        for sec, names in self.NAMES.items():
            sections[sec] = dict(filter=", ".join(self.path[n] for n in names),
                                 filter_url=", ".join(ng.url(n) for n in names),
                                 pubkey=pub, upstream="none")
        self.conf = ctx.config(**sections)


def answers(cl, pw, urls):
    """{hash or URL: answer without its tag}."""
    out = {}
    for i, h in enumerate(pw):
        out[h] = cl.ask("p%d PW %s" % (i, h)).split(" ", 1)[1]
    for i, u in enumerate(urls):
        out[u] = cl.ask("u%d URL %s" % (i, u)).split(" ", 1)[1]
    return out


@test
def offline_fetch_reload_rollback_tamper(ctx):
    sec, pub = fleetfx.keypair(ctx)
    root = ctx.path("www")
    ng = fleetfx.publisher(ctx, root)
    k1 = {fleetfx.sha1hex("off-%d" % i): 1 + i % 90 for i in range(2000)}
    k2 = dict(k1)
    hot = sorted(k1)[7]
    k2[hot] = k1[hot] + 5  # its count grew
    fresh = fleetfx.sha1hex("off-new")
    k2[fresh] = 42
    g1 = pw_build(ctx, ctx.path("g1.bfuse"), k1, 1, sec)
    g2 = pw_build(ctx, ctx.path("g2.bfuse"), k2, 2, sec)
    feeds = {"malware": ["m%d.example" % i for i in range(50)], "phishing": ["p.example"]}
    ubase = url_build(ctx, ctx.path("ubase.bfuse"), feeds, 10, sec)
    ud1 = url_build(ctx, ctx.path("ud1.bfuse"), feeds, 11, sec, base=ubase)
    feeds2 = dict(feeds, ads=["ads.example"], malware=feeds["malware"] + ["late.example"])
    ud2 = url_build(ctx, ctx.path("ud2.bfuse"), feeds2, 12, sec, base=ubase)
    for src, name in ((g1, "pw.bfuse"), (ubase, "urls.bfuse"), (ud1, "urls-delta.bfuse")):
        fleetfx.publish(src, root, name)
    host = Host(ctx, ng, pub)
    fleetfx.fetch(ctx, "--config", host.conf, "--no-reload")
    d = ctx.daemon(host.conf)
    cl = d.client(timeout=30)
    pw = [hot, fresh]
    urls = ["http://ads.example/", "http://late.example/x", "http://m3.example/", "http://p.example/"]
    old = {hot: "PWNED %d" % k1[hot], fresh: "CLEAN",
           urls[0]: "SAFE", urls[1]: "SAFE", urls[2]: "BLOCKED malware m3.example/",
           urls[3]: "BLOCKED phishing p.example/"}
    eq(answers(cl, pw, urls), old, "generation 1 and the first URL delta")

    # New files: fetched, verified, installed, RELOADed; the new counts and
    # categories answer.
    fleetfx.publish(g2, root, "pw.bfuse")
    fleetfx.publish(ud2, root, "urls-delta.bfuse")
    r = fleetfx.fetch(ctx, "--config", host.conf)
    check("urls.bfuse: unchanged" in r.stdout, r.stdout)
    new = dict(old, **{hot: "PWNED %d" % k2[hot], fresh: "PWNED 42",
                       urls[0]: "BLOCKED ads ads.example/",
                       urls[1]: "BLOCKED malware late.example/"})
    eq(answers(cl, pw, urls), new, "after the fetch")
    eq(cl.stats()["reloads"], 1, "one RELOAD")

    # Rollback: the older files back, the older answers.
    ctx.breachctl("filter", "rollback", "--socket", d.sock, host.path["pw.bfuse"])
    ctx.breachctl("filter", "rollback", "--socket", d.sock, host.path["urls-delta.bfuse"])
    eq(answers(cl, pw, urls), old, "rolled back")

    # A bit-flipped offline file, its signature valid for the original:
    # refused by the fetch, the installed files untouched.
    g3 = pw_build(ctx, ctx.path("g3.bfuse"), k2, 3, sec)
    ud3 = url_build(ctx, ctx.path("ud3.bfuse"), feeds2, 13, sec, base=ubase)
    for src, name in ((g3, "pw.bfuse"), (ud3, "urls-delta.bfuse")):
        bad = flipped(src, ctx.path("bad-" + name))
        fleetfx.publish(bad, root, name)
    before = {n: fleetfx.file_sha(p) for n, p in host.path.items()}
    r = fleetfx.fetch(ctx, "--config", host.conf, check_rc=False)
    eq(r.returncode, 2, "fetch of flipped files")
    check("checksum" in r.stderr or "sha256" in r.stderr.lower(), r.stderr)
    eq({n: fleetfx.file_sha(p) for n, p in host.path.items()}, before, "installed files")
    eq(answers(cl, pw, urls), old, "after the refused fetch")

    # Put in place by hand (by rename, as root): the RELOAD refuses each,
    # naming it, and the daemon keeps serving the set it had.
    for name, src in (("pw.bfuse", g2), ("urls-delta.bfuse", ud2)):
        live = host.path[name]
        good = ctx.path("keep-" + name)
        fleetfx.install(live, good)
        flipped(src, live)
        ans = fleetfx.reload_fails(cl, "r" + name[:2], live)
        check("checksum" in ans or "sha256" in ans.lower(), ans)
        eq(answers(cl, pw, urls), old, "after the refused RELOAD of " + name)
        fleetfx.install(good, live)

    # A range (Bloom) delta published for the offline set, signed and of a
    # newer generation: refused by the fetch, naming it, before install.
    feed = ctx.path("bloom.txt")
    with open(feed, "w") as f:
        f.write("bloom.example\n")
    bbase, bdelta = ctx.path("b.bbf"), ctx.path("bd.bbf")
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--input", feed, "--output", bbase)
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--input", feed, "--base", bbase,
                  "--output", bdelta, "--generation", "20")
    ctx.breachctl("filter", "sign", "--key", sec, bdelta)
    fleetfx.publish(g1, root, "pw.bfuse")  # what the host has: unchanged
    fleetfx.publish(bdelta, root, "urls-delta.bfuse")
    r = fleetfx.fetch(ctx, "--config", host.conf, check_rc=False)
    eq(r.returncode, 2, "fetch of a range delta for an offline base")
    check("urls-delta.bfuse" in r.stderr and "offline set holds offline files only" in r.stderr,
          r.stderr)
    eq({n: fleetfx.file_sha(p) for n, p in host.path.items()}, before, "installed files")
    eq(answers(cl, pw, urls), old, "after the refused fetch of a range delta")
    cl.close()
    d.stop_ok()


@test
def password_delta_counts(ctx):
    """A password load as an offline delta (docs/fleet.md): the new keys and
    the keys whose count grew, smaller than the base; a host loading base
    and delta answers the delta's count (the newest file wins)."""
    k1 = {fleetfx.sha1hex("load-%d" % i): 1 + i % 90 for i in range(5000)}
    hot = sorted(k1)[11]
    k2 = dict(k1)
    k2[hot] = k1[hot] + 7  # its count grew in the load
    fresh = fleetfx.sha1hex("load-new")
    k2[fresh] = 42
    base, delta = ctx.path("base.bfuse"), ctx.path("delta.bfuse")
    ctx.breachctl("filter", "build", "--kind", "password-sha1", "--offline", "--input",
                  fleetfx.write_keys(base + ".in", k1), "--output", base, "--generation", "1")
    r = ctx.breachctl("filter", "build", "--kind", "password-sha1", "--offline", "--input",
                      fleetfx.write_keys(delta + ".in", k2), "--base", base, "--output", delta,
                      "--generation", "2")
    check("with a higher count are in it" in r.stderr and " 1 with a higher count" in r.stderr,
          r.stderr)
    check(os.path.getsize(delta) < os.path.getsize(base) / 2,
          (os.path.getsize(delta), os.path.getsize(base)))
    conf = ctx.config(passwords={"filter": "%s, %s" % (base, delta), "upstream": "none"})
    d = ctx.daemon(conf)
    cl = d.client()
    other = sorted(k1)[12]
    eq(answers(cl, [hot, fresh, other], []),
       {hot: "PWNED %d" % k2[hot], fresh: "PWNED 42", other: "PWNED %d" % k1[other]},
       "the delta's counts over the base's")
    cl.close()
    d.stop_ok()


if __name__ == "__main__":
    dtest.main()
