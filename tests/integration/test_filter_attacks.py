#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Attacks on the filter files a host serves from, against nginx on
127.0.0.1 and a real breachd (docs/fleet.md, breachd(8) "Files"): an old
signed file of the same generation served again (a blocklist rollback);
links and files planted in the filter directory for root's `filter fetch`;
a filter whose owner or mode lets another user rewrite it, a filter
rewritten in place under breachd's mapping, and one rewritten through a
writable shared mapping (a read lease); a publisher that sends far more
bytes than a filter (zeros, or trailing data after a real header)."""
import mmap
import os
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import fleetfx  # noqa: E402
from dtest import check, eq, test  # noqa: E402

NOBODY = 65534
MIB = 1 << 20


def host_daemon(ctx, live, mirror, pubkey=None):
    sec = dict(filter=live, upstream="file://%s/{prefix}.txt" % mirror)
    if pubkey:
        sec["pubkey"] = pubkey
    return ctx.daemon(ctx.config(passwords=sec))


def sent_bytes(ng, name):
    """body_bytes_sent of every GET of /name in nginx's access log."""
    return [int(ln.split('"')[2].split()[1]) for ln in ng.log()
            if '"GET /%s HTTP' % name in ln]


@test
def same_generation_replayed(ctx):
    """Yesterday's and today's files both carry generation 2 (a delta's
    default used to be its base's + 1): serving yesterday's again must not
    replace today's, neither through filter fetch nor through a RELOAD."""
    sec, pub = fleetfx.keypair(ctx)
    root = ctx.path("www")
    ng = fleetfx.publisher(ctx, root)
    k1 = fleetfx.passwords("y", 1000)
    k2 = dict(k1)
    k2.update(fleetfx.passwords("t", 200))
    mirror = ctx.path("mirror")
    dtest.write_range(mirror, k2)
    yesterday = fleetfx.build(ctx, ctx.path("yesterday.bfuse"), k1, 2, sign=sec)
    today = fleetfx.build(ctx, ctx.path("today.bfuse"), k2, 2, sign=sec)
    os.mkdir(ctx.path("host"))
    live = ctx.path("host", "p.bfuse")
    args = ["--url", ng.url("p.bfuse"), "--pubkey", pub, "--output", live, "--no-reload"]
    fleetfx.publish(today, root, "p.bfuse")
    fleetfx.fetch(ctx, *args)
    fleetfx.publish(yesterday, root, "p.bfuse")
    r = fleetfx.fetch(ctx, *args, check_rc=False)
    eq(r.returncode, 2, "the replay is refused: " + r.stdout + r.stderr)
    check("generation 2 is not newer than the installed 2" in r.stderr, r.stderr)
    eq(fleetfx.file_sha(live), fleetfx.file_sha(today), "today's file still installed")
    # The daemon too: the same generation, another file, by rename.
    d = host_daemon(ctx, live, mirror, pub)
    cl = d.client(timeout=30)
    eq(cl.ask("u RELOAD", timeout=60), "u RELOADED", "a reload of the unchanged file")
    fleetfx.install(yesterday, live)
    ans = fleetfx.reload_fails(cl, "r", "generation 2 is not newer than the generation 2")
    check("filter rollback" in ans, ans)
    new = sorted(set(k2) - set(k1))[0]
    eq(cl.ask("n PW " + new), "n PWNED %d" % k2[new], "today's filter still answers")
    cl.close()
    d.stop_ok()


@test
def generations_only_grow_at_the_publisher(ctx):
    """A delta's default generation is its build time, above its base's and
    above the file it replaces; --generation reused for a file is refused,
    and so is signing a file of an older generation than its .sig's."""
    sec, _ = fleetfx.keypair(ctx)
    keys = fleetfx.passwords("g", 300)
    base = fleetfx.build(ctx, ctx.path("base.bfuse"), keys, 5, sign=sec)
    inp = fleetfx.write_keys(ctx.path("more.in"), fleetfx.passwords("m", 50))
    delta = ctx.path("delta.bfuse")
    gens = []
    for _ in range(2):
        ctx.breachctl("filter", "build", "--kind", "password-sha1", "--input", inp,
                      "--base", base, "--output", delta, env={"SOURCE_DATE_EPOCH": "1700000000"})
        r = ctx.breachctl("filter", "info", delta)
        gens.append(int(r.stdout.split("generation:")[1].split()[0]))
    eq(gens, [1700000000, 1700000001], "build time, then above the file it replaced")
    r = ctx.breachctl("filter", "build", "--kind", "password-sha1", "--input", inp,
                      "--output", ctx.path("base.bfuse"), "--generation", "5", check_rc=False)
    eq(r.returncode, 2, r.stderr)
    check("--generation 5 is not above generation 5" in r.stderr, r.stderr)
    # A file of generation 4 built elsewhere, copied over base.bfuse, whose
    # .sig signed generation 5: refused.
    other = fleetfx.build(ctx, ctx.path("other.bfuse"), keys, 4)
    shutil.copyfile(other, base)
    r = ctx.breachctl("filter", "sign", "--key", sec, base, check_rc=False)
    eq(r.returncode, 2, r.stderr)
    check("signed generation 5 of another file" in r.stderr, r.stderr)


def plant_links(live, victims):
    for suffix, victim in victims.items():
        with open(victim, "w") as f:
            f.write("root only\n")
        os.chmod(victim, 0o600)
        os.symlink(victim, live + suffix)


@test
def fetch_never_follows_planted_links(ctx):
    """Links named like fetch's temporary files point at root-only files:
    none of them is written through, and the installed filter is a file of
    root's (not the planter's), mode 0644."""
    sec, pub = fleetfx.keypair(ctx)
    root = ctx.path("www")
    ng = fleetfx.publisher(ctx, root)
    g1 = fleetfx.build(ctx, ctx.path("g1.bfuse"), fleetfx.passwords("l", 500), 1, sign=sec)
    fleetfx.publish(g1, root, "p.bfuse")
    os.mkdir(ctx.path("host"))
    live = ctx.path("host", "p.bfuse")
    victims = {s: ctx.path("victim" + s) for s in (".part", ".sig.new", ".fetch.tmp")}
    plant_links(live, victims)
    args = ["--url", ng.url("p.bfuse"), "--pubkey", pub, "--output", live, "--no-reload"]
    fleetfx.fetch(ctx, *args, check_rc=False)
    for suffix, victim in victims.items():
        with open(victim, "rb") as f:
            eq(f.read()[:16], b"root only\n", "written through the planted %s link" % suffix)
    st = os.lstat(live)
    check(stat.S_ISREG(st.st_mode), "the installed filter is a regular file")
    eq(fleetfx.file_sha(live), fleetfx.file_sha(g1), "installed")


@test
def fetch_never_installs_a_planted_part(ctx):
    """A .part planted by another user, mode 0666: not continued, not
    installed (it would stay the planter's, writable by all)."""
    if os.geteuid() != 0:
        raise dtest.Skip("needs root (chown)")
    sec, pub = fleetfx.keypair(ctx)
    root = ctx.path("www")
    ng = fleetfx.publisher(ctx, root)
    g1 = fleetfx.build(ctx, ctx.path("g1.bfuse"), fleetfx.passwords("l", 500), 1, sign=sec)
    fleetfx.publish(g1, root, "p.bfuse")
    os.mkdir(ctx.path("host2"))
    live2 = ctx.path("host2", "p.bfuse")
    with open(live2 + ".part", "wb") as f:
        f.write(b"planted")
    os.chown(live2 + ".part", NOBODY, NOBODY)
    os.chmod(live2 + ".part", 0o666)
    fleetfx.fetch(ctx, "--url", ng.url("p.bfuse"), "--pubkey", pub, "--output", live2,
                  "--no-reload")
    st = os.stat(live2)
    eq((st.st_uid, stat.S_IMODE(st.st_mode)), (0, 0o644), "owner and mode of the installed file")


@test
def fetch_refuses_a_directory_others_may_write(ctx):
    sec, pub = fleetfx.keypair(ctx)
    root = ctx.path("www")
    ng = fleetfx.publisher(ctx, root)
    g1 = fleetfx.build(ctx, ctx.path("g1.bfuse"), fleetfx.passwords("w", 200), 1, sign=sec)
    fleetfx.publish(g1, root, "p.bfuse")
    cases = [(0o777, None, "group- or world-writable"), (0o775, None, "group- or world-writable")]
    if os.geteuid() == 0:
        cases.append((0o755, NOBODY, "belongs to uid %d" % NOBODY))
    for i, (mode, owner, reason) in enumerate(cases):
        d = ctx.path("dir%d" % i)
        os.mkdir(d)
        os.chmod(d, mode)
        if owner is not None:
            os.chown(d, owner, owner)
        live = os.path.join(d, "p.bfuse")
        r = fleetfx.fetch(ctx, "--url", ng.url("p.bfuse"), "--pubkey", pub, "--output", live,
                          "--no-reload", check_rc=False)
        eq(r.returncode, 2, "mode %o: %s" % (mode, r.stdout))
        check(reason in r.stderr, r.stderr)
        eq(sorted(os.listdir(d)), [], "nothing written into %s" % d)


@test
def daemon_refuses_filters_others_may_write(ctx):
    keys = fleetfx.passwords("o", 500)
    mirror = ctx.path("mirror")
    dtest.write_range(mirror, keys)
    good = fleetfx.build(ctx, ctx.path("good.bfuse"), keys, 1)
    os.mkdir(ctx.path("host"))
    live = ctx.path("host", "p.bfuse")
    fleetfx.install(good, live)
    d = host_daemon(ctx, live, mirror)
    cl = d.client(timeout=30)
    g2 = fleetfx.build(ctx, ctx.path("g2.bfuse"), keys, 2)
    cases = [(0o666, None, "group- or world-writable (mode 0666)"),
             (0o664, None, "group- or world-writable (mode 0664)")]
    if os.geteuid() == 0:
        cases.append((0o644, NOBODY, "belongs to uid %d" % NOBODY))
    for i, (mode, owner, reason) in enumerate(cases):
        shutil.copyfile(g2, live + ".new")
        os.chmod(live + ".new", mode)
        if owner is not None:
            os.chown(live + ".new", owner, owner)
        os.replace(live + ".new", live)
        fleetfx.reload_fails(cl, "r%d" % i, reason)
    eq(cl.stats()["filter_generation"], 1, "the good file keeps serving")
    cl.close()
    d.stop_ok()


@test
def own_filters_trusted_by_config_only(ctx):
    """A filter owned by breachd's own user (not root): refused whatever the
    environment says (BREACHD_TRUST_OWN_FILTERS=1 used to relax the check in
    shipped binaries); accepted only under [daemon] trust_own_filters = yes,
    which --check-config reports. As root, breachd runs as nobody
    (setpriv) over files of nobody's; otherwise as the user running the
    test, over the test's files."""
    base = dtest.tempdir("breachd-own.", mode=0o755)  # nobody must reach it
    try:
        keys = fleetfx.passwords("own", 200)
        filt = fleetfx.build(ctx, os.path.join(base, "p.bfuse"), keys, 1)
        prefix = []
        if os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            if not setpriv:
                raise dtest.Skip("no setpriv (util-linux)")
            os.chown(filt, NOBODY, NOBODY)
            prefix = [setpriv, "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]

        def check_config(trust):
            conf = os.path.join(base, "%s.conf" % trust)
            with open(conf, "w") as f:
                f.write("[daemon]\ntrust_own_filters = %s\n[passwords]\nfilter = %s\n"
                        "upstream = none\n[ntlm]\nupstream = none\n" % (trust, filt))
            os.chmod(conf, 0o644)
            env = dtest.base_env({"BREACHD_TRUST_OWN_FILTERS": "1"})
            return subprocess.run(prefix + dtest.breachd_argv("--config", conf, "--check-config"),
                                  env=env, capture_output=True, text=True, timeout=60)

        r = check_config("no")
        check(r.returncode != 0 and "p.bfuse" in r.stderr and "belongs to uid" in r.stderr,
              "a filter of breachd's own user, BREACHD_TRUST_OWN_FILTERS=1 in the environment: "
              "exit %d: %s" % (r.returncode, r.stderr))
        r = check_config("yes")
        eq(r.returncode, 0, "trust_own_filters = yes: " + r.stderr)
        check("trust_own_filters = yes" in r.stderr and "development only" in r.stderr,
              "--check-config does not report the key: " + r.stderr)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def ready_or_exit(d):
    """Wait until d answers PING (True) or exits (False)."""
    try:
        d.wait_ready()
        return True
    except AssertionError:
        if d.proc.poll() is None:
            raise
        return False


@test
def writable_shared_mapping_noticed(ctx):
    """A process holding a writable MAP_SHARED mapping of the live filter
    rewrites it without moving its times once its pages are writable (they
    fault no more): the fstat check never sees it, and a rewrite with
    another filter's bytes made every breached password CLEAN. breachd
    takes a read lease (F_SETLEASE) on each filter: a filter open for
    writing when it loads is refused, naming the reason; one opened for
    writing later breaks the lease, and the filter is damaged from then on
    (never CLEAN; filter_damaged=1), the writer going on at once."""
    keys_a, keys_b = fleetfx.passwords("a", 300), fleetfx.passwords("b", 300)
    fa = fleetfx.build(ctx, ctx.path("a.bfuse"), keys_a, 1)
    fb = fleetfx.build(ctx, ctx.path("b.bfuse"), keys_b, 1)
    other = open(fb, "rb").read()
    eq(len(other), os.path.getsize(fa), "two filters of the same size")
    os.mkdir(ctx.path("host"))
    live = ctx.path("host", "p.bfuse")
    fleetfx.install(fa, live)
    conf = ctx.config(passwords={"filter": live, "upstream": "none"})
    hashes = sorted(keys_a)[:50]

    def no_clean(cl, what):
        for i, h in enumerate(hashes):
            ans = cl.ask("%s%d PW %s" % (what, i, h))
            check(not ans.endswith(" CLEAN"), "%s: a breached password is %r after a rewrite "
                  "through a shared mapping" % (what, ans))

    # 1. The writer mapped it before breachd loaded it.
    with open(live, "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
        m[:] = m[:]  # every page written, so writable from now on: no more faults
        d = ctx.daemon(conf, wait=False)
        if ready_or_exit(d):  # loaded: the rewrite must still be noticed
            m[:] = other
            cl = d.client()
            no_clean(cl, "before")
            cl.close()
            d.stop_ok()
        else:
            check("open for writing by another process" in d.log() and live in d.log(),
                  "the refusal does not say why: " + d.log())
        m.close()
    # 2. The writer comes after the load: it waits for the lease, which
    # breachd lets go at once, the filter damaged.
    d = ctx.daemon(conf)
    cl = d.client()
    eq(cl.ask("c PW " + "0" * 40), "c CLEAN", "a clean password, filter intact")
    with open(live, "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
        m[:] = other
        no_clean(cl, "after")
        m.close()
    eq(cl.stats()["filter_damaged"], 1, "filter_damaged")
    cl.close()
    dtest.wait_for(lambda: "rewritten in place" in d.log(), 15, "the damage in the log")
    d.stop_ok()


@test
def filter_rewritten_in_place(ctx):
    """Another filter written over the live one in place (same inode, as
    `dd conv=notrunc`): no CLEAN from it; its hashes are asked of the range
    API, and the log says so at once."""
    keys = fleetfx.passwords("a", 3000)
    mirror = ctx.path("mirror")
    dtest.write_range(mirror, keys)
    a = fleetfx.build(ctx, ctx.path("a.bfuse"), keys, 1)
    b = fleetfx.build(ctx, ctx.path("b.bfuse"), fleetfx.passwords("b", 3000), 1)
    os.mkdir(ctx.path("host"))
    live = ctx.path("host", "p.bfuse")
    fleetfx.install(a, live)
    d = host_daemon(ctx, live, mirror)
    cl = d.client(timeout=30)
    probe = sorted(keys)[:200]
    eq(cl.ask("x PW " + probe[0]), "x PWNED %d" % keys[probe[0]], "before")
    ino = os.stat(live).st_ino
    with open(b, "rb") as src, open(live, "r+b") as dst:
        dst.write(src.read())
    eq(os.stat(live).st_ino, ino, "the same inode")
    wrong = []
    for i, h in enumerate(probe):
        ans = cl.ask("p%d PW %s" % (i, h))
        if ans != "p%d PWNED %d" % (i, keys[h]):
            wrong.append(ans)
    eq(wrong[:5], [], "%d of %d answers wrong after the rewrite" % (len(wrong), len(probe)))
    check("rewritten in place" in d.log(), "logged at the first check, not at a later tick")
    cl.close()
    d.stop_ok()


@test
def url_filter_rewritten_in_place(ctx):
    """The same with a URL filter: its listed URLs stay BLOCKED (from the
    URL range mirror), none turns SAFE."""
    def build(name, urls):
        feed = ctx.path(name + ".txt")
        with open(feed, "w") as f:
            f.write("\n".join(urls) + "\n")
        out = ctx.path(name + ".bbf")
        ctx.breachctl("filter", "build", "--kind", "url-sha256", "--input", feed + "=malware",
                      "--output", out, "--ranges-dir", ctx.path(name + "-ranges"),
                      "--generation", "1")
        return out
    listed = ["http://bad%d.example/p" % i for i in range(200)]
    a = build("a", listed)
    b = build("b", ["http://other%d.example/q" % i for i in range(200)])
    os.mkdir(ctx.path("host"))
    live = ctx.path("host", "urls.bbf")
    fleetfx.install(a, live)
    d = ctx.daemon(ctx.config(urls=dict(
        filter=live, upstream="file://%s/{prefix}.txt" % ctx.path("a-ranges"))))
    cl = d.client(timeout=30)
    eq(cl.ask("x URL " + listed[0]), "x BLOCKED malware " + listed[0][7:], "before")
    with open(b, "rb") as src, open(live, "r+b") as dst:
        dst.write(src.read())
    wrong = [u for i, u in enumerate(listed[:100])
             if cl.ask("u%d URL %s" % (i, u)) != "u%d BLOCKED malware %s" % (i, u[7:])]
    eq(wrong[:3], [], "%d of 100 listed URLs not BLOCKED after the rewrite" % len(wrong))
    check("URL filter %s was truncated or rewritten in place" % live in d.log(), "logged")
    cl.close()
    d.stop_ok()


@test
def fetch_stops_at_the_header(ctx):
    """64 MiB of zeros, then a real signed filter followed by 48 MiB: each
    download stops within a socket buffer or two of the header's verdict."""
    sec, pub = fleetfx.keypair(ctx)
    root = ctx.path("www")
    ng = fleetfx.publisher(ctx, root)
    g1 = fleetfx.build(ctx, ctx.path("g1.bfuse"), fleetfx.passwords("z", 500), 1, sign=sec)
    zeros = ctx.path("zeros.bfuse")
    with open(zeros, "wb") as f:
        f.truncate(64 * MIB)
    shutil.copyfile(g1 + ".sig", zeros + ".sig")
    fleetfx.publish(zeros, root, "z.bfuse")
    trailing = ctx.path("trailing.bfuse")
    shutil.copyfile(g1, trailing)
    with open(trailing, "ab") as f:
        f.truncate(os.path.getsize(g1) + 48 * MIB)
    shutil.copyfile(g1 + ".sig", trailing + ".sig")
    fleetfx.publish(trailing, root, "t.bfuse")
    os.mkdir(ctx.path("host"))
    for name, reason in (("z.bfuse", "not a breachd filter file"),
                         ("t.bfuse", "bytes its header declares")):
        live = ctx.path("host", name)
        r = fleetfx.fetch(ctx, "--url", ng.url(name), "--pubkey", pub, "--output", live,
                          "--no-reload", check_rc=False)
        eq(r.returncode, 2, name)
        check(reason in r.stderr, r.stderr)
        # nginx logs the request once its side of the cut connection ends
        dtest.wait_for(lambda: sent_bytes(ng, name), 15, "nginx's log line of " + name)
        sent = sent_bytes(ng, name)
        check(sent and max(sent) < os.path.getsize(g1) + 24 * MIB,
              "%s: nginx sent %s bytes" % (name, sent))
        check(not os.path.exists(live + ".part"), "no partial body kept")


if __name__ == "__main__":
    dtest.main()
