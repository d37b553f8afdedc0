#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachctl filter fetch and rollback against nginx on 127.0.0.1 and a
real breachd (docs/fleet.md): conditional GETs (304s in nginx's log),
verified before install, PATH.prev kept, RELOAD; resumed downloads (Range,
If-Range); every failure (tampered, foreign key, replayed old generation,
404, publisher down, a set that does not chain, a delta the daemon refuses)
leaves the installed files as they were; --config takes filter_url; a DNS
server that never answers fails the fetch at its timeout, not when the
system resolver gives up (breachctl runs in a private mount namespace whose
resolver is a DNS server on the loopback: no packet leaves the host)."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import fleetfx  # noqa: E402
import upfaultfx  # noqa: E402
from dtest import check, eq, test  # noqa: E402


def host_daemon(ctx, path, mirror, pubkey, filters=None):
    conf = ctx.config(passwords=dict(filter=filters or path, pubkey=pubkey,
                                     upstream="file://%s/{prefix}.txt" % mirror))
    return ctx.daemon(conf), conf


def requests_for(ng, name, since=0):
    """(status, range header) of each GET of /name after line `since`."""
    out = []
    for ln in ng.log()[since:]:
        if '"GET /%s HTTP' % name in ln:
            parts = ln.split('"')
            status = parts[2].split()[0]
            rng = ln.split('range="')[1].split('"')[0]
            out.append((status, rng))
    return out


@test
def fetch_update_unchanged_rollback(ctx):
    sec, pub = fleetfx.keypair(ctx)
    root = ctx.path("www")
    ng = fleetfx.publisher(ctx, root)
    k1 = fleetfx.passwords("f1", 2000)
    k2 = dict(k1)
    k2.update(fleetfx.passwords("f2", 200))
    mirror = ctx.path("mirror")
    dtest.write_range(mirror, k2)
    g1 = fleetfx.build(ctx, ctx.path("g1.bfuse"), k1, 1, sign=sec)
    fleetfx.publish(g1, root, "passwords.bfuse")
    os.mkdir(ctx.path("host"))
    live = ctx.path("host", "passwords.bfuse")
    url = ng.url("passwords.bfuse")
    r = fleetfx.fetch(ctx, "--url", url, "--pubkey", pub, "--output", live, "--no-reload")
    check("updated: password-sha1, generation 1" in r.stdout, r.stdout)
    eq(fleetfx.file_sha(live), fleetfx.file_sha(g1), "installed bytes")
    d, conf = host_daemon(ctx, live, mirror, pub)
    cl = d.client(timeout=30)
    eq(cl.stats()["filter_generation"], 1)
    # Nothing new: conditional GETs, 304 for the filter and its signature.
    n = len(ng.log())
    r = fleetfx.fetch(ctx, "--url", url, "--pubkey", pub, "--output", live, "--socket", d.sock)
    check(r.stdout.strip().endswith("unchanged"), r.stdout)
    # nginx logs a request after its answer went out: wait for both lines.
    dtest.wait_for(lambda: requests_for(ng, "passwords.bfuse", n)
                   and requests_for(ng, "passwords.bfuse.sig", n), 15, "nginx's log lines")
    eq([s for s, _ in requests_for(ng, "passwords.bfuse", n)], ["304"], "filter request")
    eq([s for s, _ in requests_for(ng, "passwords.bfuse.sig", n)], ["304"], "sig request")
    eq(cl.stats()["reloads"], 0, "no RELOAD when unchanged")
    # Generation 2: fetched, installed, reloaded; generation 1 kept as .prev.
    g2 = fleetfx.build(ctx, ctx.path("g2.bfuse"), k2, 2, sign=sec)
    fleetfx.publish(g2, root, "passwords.bfuse")
    r = fleetfx.fetch(ctx, "--url", url, "--pubkey", pub, "--output", live, "--socket", d.sock)
    check("generation 2" in r.stdout, r.stdout)
    eq(cl.stats()["filter_generation"], 2, "RELOADed")
    new = sorted(set(k2) - set(k1))[0]
    eq(cl.ask("n PW " + new), "n PWNED %d" % k2[new])
    eq(fleetfx.file_sha(live + ".prev"), fleetfx.file_sha(g1), ".prev is generation 1")
    eq(fleetfx.file_sha(live + ".sig.prev"), fleetfx.file_sha(g1 + ".sig"), ".sig.prev")
    # Rollback: generation 1 back, reloaded; the next fetch leaves it (304).
    r = ctx.breachctl("filter", "rollback", "--socket", d.sock, live)
    eq(cl.stats()["filter_generation"], 1, "rolled back")
    check(not os.path.exists(live + ".prev"), ".prev used up")
    r = ctx.breachctl("filter", "verify", "--pubkey", pub, live)
    r = fleetfx.fetch(ctx, "--url", url, "--pubkey", pub, "--output", live, "--socket", d.sock)
    check("unchanged" in r.stdout, "a rollback sticks until the publisher publishes anew")
    r = ctx.breachctl("filter", "rollback", live, "--no-reload", check_rc=False)
    eq(r.returncode, 2, "nothing to roll back to")
    cl.close()
    d.stop_ok()


@test
def failures_never_touch_the_installed_file(ctx):
    sec, pub = fleetfx.keypair(ctx)
    sec2, _ = fleetfx.keypair(ctx, "other")
    root = ctx.path("www")
    ng = fleetfx.publisher(ctx, root)
    keys = fleetfx.passwords("nt", 1500)
    more = dict(keys)
    more.update(fleetfx.passwords("nt2", 100))
    g2 = fleetfx.build(ctx, ctx.path("g2.bfuse"), keys, 2, sign=sec)
    fleetfx.publish(g2, root, "p.bfuse")
    os.mkdir(ctx.path("host"))
    live = ctx.path("host", "p.bfuse")
    url = ng.url("p.bfuse")
    args = ["--url", url, "--pubkey", pub, "--output", live, "--no-reload"]
    fleetfx.fetch(ctx, *args)
    good = fleetfx.file_sha(live), fleetfx.file_sha(live + ".sig")
    g3 = fleetfx.build(ctx, ctx.path("g3.bfuse"), more, 3, sign=sec)
    tampered = ctx.path("tampered.bfuse")
    fleetfx.flip_byte(g3, tampered, 5000)
    shutil.copyfile(g3 + ".sig", tampered + ".sig")
    foreign = fleetfx.build(ctx, ctx.path("foreign.bfuse"), more, 3, sign=sec2)
    old = fleetfx.build(ctx, ctx.path("g1.bfuse"), keys, 1, sign=sec)
    cases = [(tampered, "body checksum mismatch"), (foreign, "signed by another key"),
             (old, "generation 1 is not newer than the installed 2")]
    for src, reason in cases:
        fleetfx.publish(src, root, "p.bfuse")
        r = fleetfx.fetch(ctx, *args, check_rc=False)
        eq(r.returncode, 2, "fetch of " + src)
        check(reason in r.stderr, "%s: %r" % (src, r.stderr))
        eq((fleetfx.file_sha(live), fleetfx.file_sha(live + ".sig")), good, "installed after " + src)
        check(not os.path.exists(live + ".part") and not os.path.exists(live + ".sig.new"),
              "nothing left behind")
    # The .sig missing at the publisher; the filter missing; the publisher down.
    fleetfx.publish(g3, root, "p.bfuse")
    os.unlink(os.path.join(root, "p.bfuse.sig"))
    r = fleetfx.fetch(ctx, *args, check_rc=False)
    check(r.returncode == 2 and "HTTP 404" in r.stderr, r.stderr)
    os.unlink(os.path.join(root, "p.bfuse"))
    r = fleetfx.fetch(ctx, *args, check_rc=False)
    check(r.returncode == 2 and "HTTP 404" in r.stderr, r.stderr)
    check(not os.path.exists(live + ".part") and not os.path.exists(live + ".sig.new"),
          "nothing left behind by the 404s")
    ng.stop()
    r = fleetfx.fetch(ctx, *args, check_rc=False)
    eq(r.returncode, 2, "publisher down")
    eq((fleetfx.file_sha(live), fleetfx.file_sha(live + ".sig")), good, "installed at the end")


@test
def resumed_download(ctx):
    sec, pub = fleetfx.keypair(ctx)
    root = ctx.path("www")
    ng = fleetfx.publisher(ctx, root)
    keys = fleetfx.passwords("rs", 30000)
    g1 = fleetfx.build(ctx, ctx.path("g1.bfuse"), keys, 1, sign=sec)
    fleetfx.publish(g1, root, "big.bfuse")
    os.mkdir(ctx.path("host"))
    live = ctx.path("host", "big.bfuse")
    url = ng.url("big.bfuse")
    # An interrupted earlier attempt: half the file, and the validators it
    # had (the ETag nginx sends for it).
    r = subprocess.run(["curl", "-sI", url], capture_output=True, text=True)
    if r.returncode != 0:
        raise dtest.Skip("no curl to read the ETag")
    etag = [ln.split(":", 1)[1].strip() for ln in r.stdout.splitlines()
            if ln.lower().startswith("etag:")][0]
    size = os.path.getsize(g1)
    with open(g1, "rb") as f, open(live + ".part", "wb") as out:
        out.write(f.read(size // 2))
    with open(live + ".fetch", "w") as f:
        f.write("breachctl-fetch-state 1\nurl %s\npart.etag %s\n" % (url, etag))
    n = len(ng.log())
    r = fleetfx.fetch(ctx, "--url", url, "--pubkey", pub, "--output", live, "--no-reload")
    check("(resumed at byte %d)" % (size // 2) in r.stdout, r.stdout)
    dtest.wait_for(lambda: requests_for(ng, "big.bfuse", n), 15, "nginx's log line")
    reqs = requests_for(ng, "big.bfuse", n)
    eq(reqs, [("206", "bytes=%d-" % (size // 2))], "one ranged request")
    eq(fleetfx.file_sha(live), fleetfx.file_sha(g1), "resumed file")
    # A partial of another version (If-Range no longer matches): 200, whole file.
    with open(g1, "rb") as f, open(live + ".part", "wb") as out:
        out.write(b"\0" * (size // 3))
    g2 = fleetfx.build(ctx, ctx.path("g2.bfuse"), keys, 2, sign=sec)
    fleetfx.publish(g2, root, "big.bfuse")
    with open(live + ".fetch") as f:
        state = f.read()
    with open(live + ".fetch", "w") as f:
        f.write(state + "part.etag %s\n" % etag)
    n = len(ng.log())
    r = fleetfx.fetch(ctx, "--url", url, "--pubkey", pub, "--output", live, "--no-reload")
    check("generation 2" in r.stdout and "(resumed at" not in r.stdout, r.stdout)
    dtest.wait_for(lambda: requests_for(ng, "big.bfuse", n), 15, "nginx's log line")
    eq([s for s, _ in requests_for(ng, "big.bfuse", n)], ["200"], "If-Range mismatch")
    eq(fleetfx.file_sha(live), fleetfx.file_sha(g2), "whole new file")


def config_host(ctx, ng, pub, names, mirror):
    d = ctx.path("host")
    os.makedirs(d, exist_ok=True)
    paths = [os.path.join(d, n) for n in names]
    conf = ctx.config(passwords=dict(filter=", ".join(paths), pubkey=pub,
                                     filter_url=", ".join(ng.url(n) for n in names),
                                     upstream="file://%s/{prefix}.txt" % mirror))
    return conf, paths


@test
def config_base_and_delta(ctx):
    sec, pub = fleetfx.keypair(ctx)
    root = ctx.path("www")
    ng = fleetfx.publisher(ctx, root)
    k1 = fleetfx.passwords("cb", 3000)
    k2 = dict(k1)
    k2.update(fleetfx.passwords("cb2", 100))
    k3 = dict(k2)
    k3.update(fleetfx.passwords("cb3", 100))
    mirror = ctx.path("mirror")
    dtest.write_range(mirror, k3)
    base = fleetfx.build(ctx, ctx.path("base.bfuse"), k1, 1, sign=sec)
    d2 = fleetfx.build(ctx, ctx.path("d2.bfuse"), k2, 2, base=[base], sign=sec)
    fleetfx.publish(base, root, "passwords.bfuse")
    fleetfx.publish(d2, root, "passwords-delta.bfuse")
    conf, (lbase, ldelta) = config_host(ctx, ng, pub, ["passwords.bfuse", "passwords-delta.bfuse"],
                                        mirror)
    fleetfx.fetch(ctx, "--config", conf, "--no-reload")
    d = ctx.daemon(conf)
    cl = d.client(timeout=30)
    eq(cl.stats()["filter_generation"], 2)
    # A new delta: only it is fetched; one RELOAD (socket from the config).
    d3 = fleetfx.build(ctx, ctx.path("d3.bfuse"), k3, 3, base=[base], sign=sec)
    fleetfx.publish(d3, root, "passwords-delta.bfuse")
    n = len(ng.log())
    r = fleetfx.fetch(ctx, "--config", conf)
    check("passwords.bfuse: unchanged" in r.stdout and "generation 3" in r.stdout, r.stdout)
    dtest.wait_for(lambda: requests_for(ng, "passwords.bfuse", n), 15, "nginx's log line")
    eq([s for s, _ in requests_for(ng, "passwords.bfuse", n)], ["304"])
    st = cl.stats()
    eq((st["filter_generation"], st["reloads"]), (3, 1))
    h = sorted(set(k3) - set(k2))[0]
    eq(cl.ask("a PW " + h), "a PWNED %d" % k3[h])
    # A new base whose delta is not published yet: the set does not chain,
    # nothing is installed.
    nb = fleetfx.build(ctx, ctx.path("nb.bfuse"), k3, 4, sign=sec)
    fleetfx.publish(nb, root, "passwords.bfuse")
    before = fleetfx.file_sha(lbase), fleetfx.file_sha(ldelta)
    r = fleetfx.fetch(ctx, "--config", conf, check_rc=False)
    eq(r.returncode, 2)
    check("a delta of another base" in r.stderr, r.stderr)
    eq((fleetfx.file_sha(lbase), fleetfx.file_sha(ldelta)), before, "installed set untouched")
    # With its (empty) delta, the new set goes in.
    nd = fleetfx.build(ctx, ctx.path("nd.bfuse"), k3, 5, base=[nb], sign=sec)
    fleetfx.publish(nd, root, "passwords-delta.bfuse")
    fleetfx.fetch(ctx, "--config", conf)
    eq(cl.stats()["filter_generation"], 5)
    eq(cl.ask("b PW " + h), "b PWNED %d" % k3[h])
    # A config without a pubkey is not fetched.
    bad = ctx.config("nokey.conf", passwords=dict(filter=lbase, filter_url=ng.url("x")))
    r = fleetfx.fetch(ctx, "--config", bad, check_rc=False)
    check(r.returncode == 2 and "without a pubkey" in r.stderr, r.stderr)
    cl.close()
    d.stop_ok()


@test
def daemon_refusal_puts_the_old_file_back(ctx):
    """A delta fetched on its own verifies, but the daemon's set does not
    take it (another base): the previous file goes back."""
    sec, pub = fleetfx.keypair(ctx)
    root = ctx.path("www")
    ng = fleetfx.publisher(ctx, root)
    k1 = fleetfx.passwords("dr", 1000)
    mirror = ctx.path("mirror")
    dtest.write_range(mirror, k1)
    base = fleetfx.build(ctx, ctx.path("base.bfuse"), k1, 1, sign=sec)
    other = fleetfx.build(ctx, ctx.path("other.bfuse"), fleetfx.passwords("x", 10), 1)
    d1 = fleetfx.build(ctx, ctx.path("d1.bfuse"), k1, 2, base=[base], sign=sec)
    foreign = fleetfx.build(ctx, ctx.path("fd.bfuse"), k1, 3, base=[other], sign=sec)
    os.mkdir(ctx.path("host"))
    lbase, ldelta = ctx.path("host", "base.bfuse"), ctx.path("host", "delta.bfuse")
    fleetfx.install(base, lbase)
    fleetfx.install(d1, ldelta)
    d, conf = host_daemon(ctx, lbase, mirror, pub, filters="%s, %s" % (lbase, ldelta))
    cl = d.client(timeout=30)
    fleetfx.publish(foreign, root, "delta.bfuse")
    r = fleetfx.fetch(ctx, "--url", ng.url("delta.bfuse"), "--pubkey", pub, "--output", ldelta,
                      "--socket", d.sock, check_rc=False)
    eq(r.returncode, 2)
    check("breachd refused the new filters" in r.stderr and "previous file is back" in r.stderr,
          r.stderr)
    eq(fleetfx.file_sha(ldelta), fleetfx.file_sha(d1), "the delta that serves is back")
    eq(cl.stats()["filter_generation"], 2)
    cl.close()
    d.stop_ok()


@test
def silent_dns(ctx):
    """The publisher's name is asked of a DNS server that never answers and
    the resolver would wait 150 s (timeout:30 attempts:5): filter fetch
    --timeout 1 fails with a timeout while the lookup still hangs (libcurl
    leaves it to its thread, docs/upstream.md "What is an error, and what
    is cached") and changes nothing."""
    _, pub = fleetfx.keypair(ctx)
    dns = upfaultfx.FakeDns()
    dns.mode = "drop"
    try:
        prefix = upfaultfx.private_resolver_argv(ctx, dns.addr, "timeout:30 attempts:5")
        os.mkdir(ctx.path("host"))
        live = ctx.path("host", "passwords.bfuse")
        url = "http://%s:9/passwords.bfuse" % upfaultfx.NAME
        p = subprocess.Popen(prefix + [dtest.ARGS.breachctl, "filter", "fetch", "--url", url,
                                       "--pubkey", pub, "--output", live, "--no-reload",
                                       "--timeout", "1"],
                             env=dtest.base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        try:
            out, err = p.communicate(timeout=60 * dtest.SLOW)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise AssertionError("filter fetch waited for the hung name lookup")
        check(dns.queries and all(q[0] == upfaultfx.NAME for q in dns.queries),
              "the lookup went to the loopback DNS server: %r" % dns.queries)
        check(dns.held, "the DNS server answered nothing")
        eq(p.returncode, 2, "filter fetch exit status; stderr %r" % err)
        check("timed out" in err.lower() or "timeout" in err.lower(), err)
        check(not os.path.exists(live), "nothing installed")
    finally:
        dns.close()


if __name__ == "__main__":
    dtest.main()
