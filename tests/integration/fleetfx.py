# SPDX-License-Identifier: MIT
"""Fixtures of the fleet tests (signed filters, deltas, fetch): key pairs,
password sets with their range mirrors, signed builds. Built on dtest.py."""
import hashlib
import os
import random
import shutil

import dtest
from dtest import check


def sha1hex(s):
    return hashlib.sha1(s.encode()).hexdigest().upper()


def passwords(stem, n):
    """n distinct passwords STEM-0 .. and their SHA-1s, {hash: count}."""
    return {sha1hex("%s-%d" % (stem, i)): 1 + i % 97 for i in range(n)}


def write_keys(path, entries):
    """A HIBP single file of {hash: count}."""
    with open(path, "w") as f:
        for h, c in sorted(entries.items()):
            f.write("%s:%d\n" % (h, c))
    return path


def keypair(ctx, name="pub"):
    """(secret, public) paths of a new Ed25519 key pair."""
    sec, pub = ctx.path(name + ".key"), ctx.path(name + ".pub")
    ctx.breachctl("key", "generate", "--secret", sec, "--public", pub)
    return sec, pub


def build(ctx, out, entries, generation, base=(), epoch=None, sign=None, kind="password-sha1"):
    """Build a password filter of entries (a delta when base names files),
    sign it with the secret key sign; returns out."""
    inp = write_keys(out + ".in", entries)
    args = ["filter", "build", "--kind", kind, "--input", inp, "--output", out,
            "--generation", str(generation)]
    for b in base:
        args += ["--base", b]
    ctx.breachctl(*args, env={"SOURCE_DATE_EPOCH": epoch} if epoch is not None else None)
    if sign:
        ctx.breachctl("filter", "sign", "--key", sign, out)
    return out


def install(src, dst, sig=True):
    """Put src (and src.sig) at dst by rename, as an administrator would."""
    shutil.copyfile(src, dst + ".new")
    os.replace(dst + ".new", dst)
    if sig and os.path.exists(src + ".sig"):
        shutil.copyfile(src + ".sig", dst + ".sig.new")
        os.replace(dst + ".sig.new", dst + ".sig")


def flip_byte(src, dst, offset):
    """dst: a copy of src with the byte at offset flipped (by rename)."""
    with open(src, "rb") as f:
        data = bytearray(f.read())
    data[offset] ^= 0x01
    with open(dst + ".new", "wb") as f:
        f.write(data)
    os.replace(dst + ".new", dst)


def absent_hashes(known, n, seed=5):
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        h = "%040X" % rng.getrandbits(160)
        if h not in known:
            out.append(h)
    return out


def reload_fails(cl, tag, reason):
    """RELOAD is refused and the answer names reason."""
    ans = cl.ask("%s RELOAD" % tag, timeout=60)
    check(ans.startswith("%s ERR reload-failed " % tag), "RELOAD %s: %r" % (tag, ans))
    check(reason in ans, "RELOAD %s: %r does not say %r" % (tag, ans, reason))
    return ans
