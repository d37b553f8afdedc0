# SPDX-License-Identifier: MIT
"""Fixtures of the fleet tests (signed filters, deltas, fetch): key pairs,
password sets with their range mirrors, signed builds. Built on dtest.py."""
import hashlib
import os
import random
import shutil
import socket
import subprocess
import time

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


# ---- a publisher: nginx serving a directory -----------------------------------

PUBLISHER_CONF = """daemon off;
master_process off;
worker_processes 1;
pid %(dir)s/nginx.pid;
error_log %(dir)s/error.log warn;
events { worker_connections 256; }
http {
    log_format fleet '$remote_addr "$request" $status $body_bytes_sent '
                     'range="$http_range" inm="$http_if_none_match" ir="$http_if_range"';
    access_log %(dir)s/access.log fleet;
    client_body_temp_path %(dir)s/tmp/body;
    proxy_temp_path %(dir)s/tmp/proxy;
    fastcgi_temp_path %(dir)s/tmp/fastcgi;
    uwsgi_temp_path %(dir)s/tmp/uwsgi;
    scgi_temp_path %(dir)s/tmp/scgi;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:%(port)d;
        root %(root)s;
    }
}
"""


class Nginx:
    """nginx on 127.0.0.1 with a config text (placeholders dir, port and
    what fmt adds); stop() and start() again on the same port."""

    def __init__(self, ctx, name, conf_text, **fmt):
        if not os.path.exists("/usr/sbin/nginx"):
            raise dtest.Skip("nginx is not installed")
        self.ctx = ctx
        self.dir = ctx.path(name)
        os.makedirs(os.path.join(self.dir, "tmp"), exist_ok=True)
        self.conf_text = conf_text
        self.fmt = fmt
        self.proc = None
        self.port = None
        for _ in range(5):
            self.port = dtest.free_port()
            if self.start():
                return
        raise AssertionError("nginx did not start (see %s/error.log)" % self.dir)

    def start(self):
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(self.conf_text % dict(self.fmt, dir=self.dir, port=self.port))
        self.proc = self.ctx.spawn(["/usr/sbin/nginx", "-p", self.dir, "-e",
                                    self.dir + "/error.log", "-c", conf],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 5
        while time.monotonic() < end and self.proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                time.sleep(0.02)
        self.stop()
        return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def url(self, path):
        return "http://127.0.0.1:%d/%s" % (self.port, path.lstrip("/"))

    def log(self):
        """Access log lines so far."""
        p = os.path.join(self.dir, "access.log")
        if not os.path.exists(p):
            return []
        with open(p) as f:
            return f.read().splitlines()


def publisher(ctx, root, name="publisher"):
    os.makedirs(root, exist_ok=True)
    return Nginx(ctx, name, PUBLISHER_CONF, root=root)


def publish(src, root, name, sig=True):
    """Copy src (and src.sig) into the publisher's root as name, by rename,
    each with an mtime at least a second after the file it replaces: nginx's
    ETag is the mtime and the size, and a .sig always has 200 bytes."""
    dst = os.path.join(root, name)
    paths = [dst] + ([dst + ".sig"] if sig else [])
    before = {p: int(os.stat(p).st_mtime) for p in paths if os.path.exists(p)}
    install(src, dst, sig=sig)
    now = int(time.time())
    for p in paths:
        if p in before and os.path.exists(p):
            t = max(now, before[p] + 1)
            os.utime(p, (t, t))
    return dst


def fetch(ctx, *args, check_rc=True):
    return ctx.breachctl("filter", "fetch", *args, check_rc=check_rc)


def file_sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()
