# SPDX-License-Identifier: MIT
"""Fixtures of the directory server tests (test_directory_*.py): a small
corpus with known counts, its filter and a range mirror served by a real
nginx, a breachd over both, and the two broken breachds of the failure
policies (one that answers garbage, one that never answers). On the
dtest.py harness; standard library only."""
import os
import random
import re
import shutil
import socket
import subprocess
import threading

import dtest
from dtest import check, sha1hex
from fakedaemon import FakeDaemon

# Passwords in the corpus with their counts; the messages show the counts
# with thousands separators.
KNOWN = {"password": 3861493, "letmein": 577, "Summer2024!": 1234, "rarely-seen": 3}
_FX = {}


class Fixture:
    def __init__(self, d):
        os.makedirs(d)
        corpus = os.path.join(d, "corpus.txt")
        with open(corpus, "w") as f:
            for p, n in KNOWN.items():
                f.write("%s:%d\n" % (sha1hex(p), n))
        self.mirror = os.path.join(d, "mirror")
        dtest.write_range(self.mirror, {sha1hex(p): n for p, n in KNOWN.items()})
        self.filter = os.path.join(d, "pw.bfuse")
        r = subprocess.run([dtest.ARGS.breachctl, "filter", "build", "--kind", "password-sha1",
                            "--input", corpus, "--output", self.filter, "--fp-bits", "32"],
                           env=dtest.base_env(), capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "filter build: " + r.stderr)
        # the offline filter of popular passwords that answers SIMILAR
        self.similar = os.path.join(d, "similar.bfuse")
        r = subprocess.run([dtest.ARGS.breachctl, "filter", "build", "--kind", "password-sha1",
                            "--offline", "--input", corpus, "--output", self.similar],
                           env=dtest.base_env(), capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "filter build --offline: " + r.stderr)


def fx():
    if "fx" not in _FX:
        _FX["fx"] = Fixture(os.path.join(dtest.ROOT, "fixture"))
    return _FX["fx"]


def clean_password(tag="clean"):
    """A password no corpus holds (random, so never in any breach)."""
    return "%s-%016x-Qz" % (tag, random.SystemRandom().getrandbits(64))


def breachd(ctx, sock=None, similar=False, terms=None, **sections):
    """A real breachd on sock (default: the test's breachd.sock): the
    fixture's filter, its mirror behind nginx on 127.0.0.1; similar: with
    the fixture's offline similar_filter; terms: more [passwords] keys
    (banned_terms, site_terms); sections: more of its config
    (ctx.config)."""
    f = fx()
    port = ctx.nginx(f.mirror)
    passwords = {"filter": f.filter, "upstream": "http://127.0.0.1:%d/range/{prefix}" % port,
                 "similar_filter": f.similar if similar else ""}
    passwords.update(terms or {})
    conf = ctx.config(socket_path=sock, passwords=passwords, upstream={"rate": 100000},
                      **sections)
    return ctx.daemon(conf)


def garbage_breachd(path, with_id=True):
    """A socket that answers every request with garbage: a status no
    breachd sends under the request's id (with_id), or a line with no id
    at all (which matches no request: the client times out)."""
    def handler(n, rid, rest, conn):
        if with_id:
            conn.sendall(("%s FROBNICATED \x01\x02 not breachd\n" % rid).encode())
        else:
            conn.sendall(b"\x01\x02 this is not breachd\n")
    return FakeDaemon(path, handler)


def recording_breachd(path, answer="CLEAN"):
    """A socket that answers every request with answer and keeps the
    request lines it got (.lines), to see what crosses the socket."""
    lines = []

    def handler(n, rid, rest, conn):
        lines.append(rest)
        conn.sendall(("%s %s\n" % (rid, answer)).encode())
    d = FakeDaemon(path, handler)
    d.lines = lines
    return d


def only_hashes_sent(lines, password):
    """The requests of one check: BANNED <index> (the banned terms asked
    for: docs/banned.md; it carries nothing of the password), PW <its
    SHA-1>, then SIMILAR sha1 requests (similar=warn, the default) of 1 to
    128 hashes of its variants each, never the password or its own SHA-1
    among them. Returns a failure message, or None."""
    while lines and re.fullmatch(r"BANNED [0-9]+", lines[0]):
        lines = lines[1:]
    if not lines or lines[0].upper() != "PW " + sha1hex(password):
        return "the first request is not PW of its SHA-1: %r" % lines[:1]
    for ln in lines[1:]:
        parts = ln.split(" ")
        hashes = parts[2].split(",") if len(parts) == 3 else []
        if parts[:2] != ["SIMILAR", "sha1"] or not 1 <= len(hashes) <= 128 or any(
                len(h) != 40 or h.strip("0123456789ABCDEFabcdef") for h in hashes):
            return "not a SIMILAR request of SHA-1s: %r" % ln[:120]
        if sha1hex(password) in (h.upper() for h in hashes):
            return "the password's own SHA-1 among its variants"
    if password in "".join(lines):
        return "the password crossed the socket"
    return None


def unknown_breachd(ctx):
    """A real breachd whose range API is down (a closed port): a password
    the filter cannot rule out is answered UNKNOWN."""
    f = fx()
    conf = ctx.config(passwords={"filter": f.filter,
                                 "upstream": "http://127.0.0.1:%d/range/{prefix}" % dtest.free_port()},
                      upstream={"rate": 100000, "timeout": "2s"})
    return ctx.daemon(conf)


def mute_breachd(path):
    """A socket that accepts and reads but never answers."""
    return FakeDaemon(path, lambda n, rid, rest, conn: None)


def need(*programs):
    for p in programs:
        if not shutil.which(p) and not os.path.exists(p):
            raise dtest.Skip("%s is not installed" % p)


def no_password_in(paths, passwords):
    """None of passwords (nor their SHA-1) appears in any file of paths."""
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        for p in passwords:
            for s in (p, sha1hex(p), sha1hex(p).upper()):
                check(s.encode() not in data, "%r found in %s" % (s, path))


def wait_listen(port, proc, timeout=20):
    """Wait until 127.0.0.1:port accepts TCP connections (proc alive)."""
    def up():
        if proc.poll() is not None:
            raise AssertionError("server exited %d before listening" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False
    dtest.wait_for(up, timeout=timeout * dtest.SLOW, what="port %d" % port)


class Lines:
    """A process's output file read from where the last look ended."""

    def __init__(self, path):
        self.path, self.pos = path, 0
        self.lock = threading.Lock()

    def new(self):
        with self.lock:
            if not os.path.exists(self.path):
                return ""
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
            self.pos += len(data)
            return data.decode(errors="replace")


def wait_for_text(path, text, timeout=10):
    """Wait until the file at path holds text (a server's log)."""
    def has():
        if not os.path.exists(path):
            return False
        with open(path, errors="replace") as f:
            return text in f.read()
    dtest.wait_for(has, timeout=timeout * dtest.SLOW, what="%r in %s" % (text, path))


def server_env(extra=None):
    """The environment of a directory server that loads a module of this
    build: in a sanitizer build (--preload) the ASan runtime is preloaded
    into the server, whose own leaks at exit are not ours."""
    env = dict(extra or {})
    if getattr(dtest.ARGS, "preload", None):
        env["LD_PRELOAD"] = dtest.ARGS.preload
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


OPTIONS = {"--module": {"required": True},
           "--preload": {"help": "a sanitizer runtime to preload into the servers"}}
