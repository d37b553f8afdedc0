#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Signed filters: breachctl key generate, filter sign, filter verify
--pubkey, and breachd's [passwords] / [urls] pubkey: only filters signed by
that key load, at start and at each reload; an unsigned, altered, replayed
or foreign-signed filter is refused with the reason and the old set keeps
serving (docs/filter-format.md "Signatures", breachd.conf(5))."""
import os
import random
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import fleetfx  # noqa: E402
from dtest import check, eq, test  # noqa: E402

SIG_GENERATION = 56  # byte offset of generation in a .sig


@test
def key_generate_files(ctx):
    sec, pub = fleetfx.keypair(ctx)
    eq(stat.S_IMODE(os.stat(sec).st_mode), 0o600, "secret key mode")
    eq(stat.S_IMODE(os.stat(pub).st_mode), 0o644, "public key mode")
    with open(sec) as f:
        check("-----BEGIN PRIVATE KEY-----" in f.read(), "secret key is PKCS#8 PEM")
    # openssl reads both (the format is standard PEM).
    if shutil.which("openssl"):
        r = subprocess.run(["openssl", "pkey", "-in", sec, "-noout", "-text"],
                           capture_output=True, text=True)
        check(r.returncode == 0 and "ED25519" in r.stdout.upper(), "openssl pkey: " + r.stderr)
    # Existing files are never overwritten.
    r = ctx.breachctl("key", "generate", "--secret", sec, "--public", ctx.path("p2.pub"),
                      check_rc=False)
    eq(r.returncode, 2, "key generate over an existing secret")
    check("exists" in r.stderr, r.stderr)
    check(not os.path.exists(ctx.path("p2.pub")), "no public key left behind")
    r = ctx.breachctl("key", "generate", "--secret", ctx.path("s3.key"), check_rc=False)
    eq(r.returncode, 2, "key generate without --public")


@test
def sign_and_verify_cli(ctx):
    sec, pub = fleetfx.keypair(ctx)
    _, pub2 = fleetfx.keypair(ctx, "other")
    keys = fleetfx.passwords("sv", 300)
    f1 = fleetfx.build(ctx, ctx.path("g1.bfuse"), keys, 1)
    # Unsigned: the container is fine, the signature is missing.
    eq(ctx.breachctl("filter", "verify", f1).returncode, 0, "verify without --pubkey")
    r = ctx.breachctl("filter", "verify", "--pubkey", pub, f1, check_rc=False)
    eq(r.returncode, 2, "verify of an unsigned filter")
    check("has no signature" in r.stderr, r.stderr)
    # A secret key others may read is refused.
    os.chmod(sec, 0o640)
    r = ctx.breachctl("filter", "sign", "--key", sec, f1, check_rc=False)
    eq(r.returncode, 2, "sign with a group-readable key")
    check("accessible to group or others" in r.stderr, r.stderr)
    check(not os.path.exists(f1 + ".sig"), "no .sig written")
    os.chmod(sec, 0o600)
    r = ctx.breachctl("filter", "sign", "--key", sec, f1)
    check("generation 1" in r.stdout, r.stdout)
    eq(os.path.getsize(f1 + ".sig"), 200, ".sig size")
    r = ctx.breachctl("filter", "verify", "--pubkey", pub, f1)
    check("signature OK" in r.stdout and ": OK (password-sha1, 300 keys" in r.stdout, r.stdout)
    # Another key.
    r = ctx.breachctl("filter", "verify", "--pubkey", pub2, f1, check_rc=False)
    eq(r.returncode, 2, "verify against another key")
    check("signed by another key" in r.stderr, r.stderr)
    # Replayed onto the next generation of the same input.
    f2 = fleetfx.build(ctx, ctx.path("g2.bfuse"), keys, 2)
    shutil.copyfile(f1 + ".sig", f2 + ".sig")
    r = ctx.breachctl("filter", "verify", "--pubkey", pub, f2, check_rc=False)
    eq(r.returncode, 2, "replayed signature")
    check("signature is for generation 1, the filter is generation 2" in r.stderr, r.stderr)
    # The generation edited in the .sig: the signature itself fails.
    with open(f1 + ".sig", "rb") as f:
        sig = bytearray(f.read())
    sig[SIG_GENERATION] = 2
    with open(f2 + ".sig", "wb") as f:
        f.write(sig)
    r = ctx.breachctl("filter", "verify", "--pubkey", pub, f2, check_rc=False)
    eq(r.returncode, 2, "edited signature")
    check("bad signature" in r.stderr, r.stderr)
    # A tampered filter fails before its signature is looked at.
    fleetfx.flip_byte(f1, ctx.path("t.bfuse"), 5000)
    shutil.copyfile(f1 + ".sig", ctx.path("t.bfuse.sig"))
    r = ctx.breachctl("filter", "verify", "--pubkey", pub, ctx.path("t.bfuse"), check_rc=False)
    eq(r.returncode, 2, "tampered filter")
    check("body checksum mismatch" in r.stderr, r.stderr)


def signed_daemon(ctx, keys, sec, pub):
    live = ctx.path("passwords.bfuse")
    fleetfx.install(fleetfx.build(ctx, ctx.path("g1.bfuse"), keys, 1, sign=sec), live)
    mirror = ctx.path("mirror")
    dtest.write_range(mirror, keys)
    conf = ctx.config(passwords=dict(filter=live, pubkey=pub,
                                     upstream="file://%s/{prefix}.txt" % mirror))
    return ctx.daemon(conf), live, mirror


@test
def daemon_loads_only_signed(ctx):
    sec, pub = fleetfx.keypair(ctx)
    sec2, _ = fleetfx.keypair(ctx, "other")
    keys = fleetfx.passwords("ds", 400)
    d, live, mirror = signed_daemon(ctx, keys, sec, pub)
    cl = d.client(timeout=30)
    eq(cl.stats()["filter_generation"], 1, "signed generation 1 loaded")
    h = sorted(keys)[0]
    eq(cl.ask("a PW " + h), "a PWNED %d" % keys[h])
    more = dict(keys)
    more.update(fleetfx.passwords("ds2", 50))
    dtest.write_range(mirror, more)
    g2 = fleetfx.build(ctx, ctx.path("g2.bfuse"), more, 2)
    # Unsigned.
    fleetfx.install(g2, live, sig=False)
    os.unlink(live + ".sig")
    fleetfx.reload_fails(cl, "r1", "has no signature")
    # Signed by another key.
    ctx.breachctl("filter", "sign", "--key", sec2, g2)
    fleetfx.install(g2, live)
    fleetfx.reload_fails(cl, "r2", "signed by another key")
    # Generation 1's signature beside generation 2.
    shutil.copyfile(ctx.path("g1.bfuse.sig"), live + ".sig")
    fleetfx.reload_fails(cl, "r3", "signature is for generation 1, the filter is generation 2")
    # Properly signed, but the filter altered after signing.
    ctx.breachctl("filter", "sign", "--key", sec, g2)
    fleetfx.flip_byte(g2, live, 4096 + 17)
    shutil.copyfile(g2 + ".sig", live + ".sig")
    fleetfx.reload_fails(cl, "r4", "body checksum mismatch")
    st = cl.stats()
    eq((st["filter_generation"], st["reload_failures"]), (1, 4), "old set kept serving")
    new = sorted(set(more) - set(keys))[0]
    eq(cl.ask("b PW " + h), "b PWNED %d" % keys[h], "old filter answers")
    check("refused, its signature does not verify against [passwords] pubkey" in d.log(),
          "the log names the refusal")
    # The good pair loads.
    fleetfx.install(g2, live)
    eq(cl.ask("r5 RELOAD", timeout=60), "r5 RELOADED")
    eq(cl.stats()["filter_generation"], 2, "signed generation 2 loaded")
    eq(cl.ask("c PW " + new), "c PWNED %d" % more[new])
    cl.close()
    d.stop_ok()


@test
def daemon_refuses_unsigned_at_start(ctx):
    _, pub = fleetfx.keypair(ctx)
    keys = fleetfx.passwords("st", 100)
    live = fleetfx.build(ctx, ctx.path("passwords.bfuse"), keys, 1)
    conf = ctx.config(passwords=dict(filter=live, pubkey=pub, upstream=""))
    r = subprocess.run([dtest.ARGS.breachd, "--config", conf, "--check-config"],
                       capture_output=True, text=True, timeout=60)
    eq(r.returncode != 0, True, "--check-config accepts an unsigned filter")
    check("has no signature" in r.stderr, r.stderr)
    d = ctx.daemon(conf, wait=False)
    rc = d.proc.wait(timeout=60)
    check(rc != 0, "breachd started with an unsigned filter")
    check("has no signature" in d.log(), d.log())
    # A pubkey that is not a key names itself.
    conf = ctx.config(passwords=dict(filter=live, pubkey=live, upstream=""))
    r = subprocess.run([dtest.ARGS.breachd, "--config", conf, "--check-config"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "[passwords] pubkey" in r.stderr, r.stderr)


@test
def url_filter_signed(ctx):
    sec, pub = fleetfx.keypair(ctx)
    feed = ctx.path("feed.txt")
    with open(feed, "w") as f:
        f.write("http://evil.example/login\nhttp://bad.example/\n")
    live = ctx.path("urls.bbf")
    mirror = ctx.path("urlmirror")
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--input", feed + "=phishing",
                  "--output", live, "--ranges-dir", mirror)
    conf = ctx.config(urls=dict(filter=live, pubkey=pub,
                                upstream="file://%s/{prefix}.txt" % mirror))
    r = subprocess.run([dtest.ARGS.breachd, "--config", conf, "--check-config"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "has no signature" in r.stderr, r.stderr)
    ctx.breachctl("filter", "sign", "--key", sec, live)
    eq(ctx.breachctl("filter", "verify", "--pubkey", pub, live).returncode, 0, "url verify")
    d = ctx.daemon(conf)
    cl = d.client(timeout=30)
    eq(cl.ask("u URL http://evil.example/login"), "u BLOCKED phishing evil.example/login")
    eq(cl.stats()["url_filter_loaded"], 1)
    cl.close()
    d.stop_ok()


@test
def ntlm_filter_signed_set(ctx):
    """[ntlm] takes pubkey and a base with its delta like [passwords]."""
    sec, pub = fleetfx.keypair(ctx)
    rng = random.Random(17)
    keys = ["%032X" % rng.getrandbits(128) for _ in range(500)]
    more = keys + ["%032X" % rng.getrandbits(128) for _ in range(50)]
    base, delta = ctx.path("nt.bfuse"), ctx.path("nt-delta.bfuse")
    for path, ks, extra in ((base, keys, []), (delta, more, ["--base", base])):
        with open(path + ".in", "w") as f:
            f.write("\n".join(ks) + "\n")
        ctx.breachctl("filter", "build", "--kind", "password-ntlm", "--input", path + ".in",
                      "--output", path, *extra)
    ctx.breachctl("filter", "sign", "--key", sec, base)
    conf = ctx.config(ntlm=dict(filter="%s, %s" % (base, delta), pubkey=pub, upstream=""))
    r = subprocess.run([dtest.ARGS.breachd, "--config", conf, "--check-config"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "[ntlm] filter" in r.stderr and "nt-delta.bfuse has no signature"
          in r.stderr, r.stderr)
    ctx.breachctl("filter", "sign", "--key", sec, delta)
    d = ctx.daemon(conf)
    st = d.stats()
    eq((st["nt_filter_loaded"], st["nt_filter_keys"]), (1, 550), "[ntlm] set")
    d.stop_ok()


if __name__ == "__main__":
    dtest.main()
