# SPDX-License-Identifier: MIT
"""Shared by test_http_range.py and test_http_access.py: a HIBP-style mirror
of generated ranges (SHA-1 and NT hashes, HIBP's spelling: uppercase, sorted,
CRLF between lines, none after the last), a daemon serving the range
endpoint on 127.0.0.1, and the requests a HIBP client library makes, through
Python's standard library and through curl. Standard library only."""
import http.client
import http.server
import os
import random
import re
import subprocess
import threading
import urllib.error
import urllib.request

import dtest
from dtest import check, eq

USER_AGENT = "hibp-compat-test/1.0"  # HIBP asks every client for one


class Mirror:
    """PREFIX.txt files of kind "sha1" (35-hex suffixes) or "ntlm" (27)."""

    def __init__(self, d, kind="sha1", n_prefixes=24, seed=1):
        self.dir = d
        self.kind = kind
        self.width = 35 if kind == "sha1" else 27
        os.makedirs(d, exist_ok=True)
        rng = random.Random(seed)
        self.ranges = {}  # prefix -> {suffix: count}
        for i in range(n_prefixes):
            prefix = "%05X" % rng.getrandbits(20)
            # small ranges (padded to 800..999 lines) and HIBP-sized ones
            n = rng.choice([1, 40, 300, 850, 1900])
            self.add_range(prefix, {self.rand_suffix(rng): rng.randint(1, 5000000) for _ in range(n)})
        self.present = sorted(self.ranges)

    def rand_suffix(self, rng):
        return "%0*X" % (self.width, rng.getrandbits(4 * self.width))

    def add_range(self, prefix, entries):
        self.ranges[prefix] = dict(entries)
        with open(self.path(prefix), "w", newline="") as f:
            f.write(self.body(prefix))

    def add_hash(self, full_hex, count):
        """Put one full hash (upper hex) into its range, creating the range."""
        prefix, suffix = full_hex[:5], full_hex[5:]
        entries = self.ranges.get(prefix, {})
        entries[suffix] = count
        self.add_range(prefix, entries)
        if prefix not in self.present:
            self.present.append(prefix)

    def path(self, prefix):
        return os.path.join(self.dir, prefix + ".txt")

    def body(self, prefix):
        e = self.ranges[prefix]
        return "\r\n".join("%s:%d" % (s, e[s]) for s in sorted(e))

    def template(self):
        return "file://%s/{prefix}.txt" % self.dir


def absent_prefix(mirror, rng):
    while True:
        p = "%05X" % rng.getrandbits(20)
        if p not in mirror.ranges:
            return p


def start(ctx, mirror, http=None, ntlm_mirror=None, clock=None, **sections):
    """A daemon with the password upstream at mirror, serving [http] on a free
    127.0.0.1 port (rate unlimited unless http says otherwise); clock: a
    dtest.Clock driving it (breachd-testclock). Returns (daemon, port)."""
    port = dtest.free_port()
    hs = {"listen": "127.0.0.1:%d" % port, "rate": "0"}
    hs.update(http or {})
    sections.setdefault("passwords", {}).setdefault("upstream", mirror.template())
    if ntlm_mirror:
        sections["ntlm"] = {"upstream": ntlm_mirror.template()}
    conf = ctx.config(http=hs, **sections)
    return ctx.daemon(conf, clock=clock), port


# ---- clients --------------------------------------------------------------------

def get(port, path, headers=None, method="GET", host="127.0.0.1", source=None):
    """One request over http.client: (status, headers dict lower-cased, body bytes)."""
    c = http.client.HTTPConnection(host, port, timeout=30,
                                   source_address=(source, 0) if source else None)
    try:
        h = {"User-Agent": USER_AGENT}
        h.update(headers or {})
        c.request(method, path, headers=h)
        r = c.getresponse()
        body = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body
    finally:
        c.close()


def hibp_range(base, prefix, mode=None, padding=True):
    """What a HIBP client library does: GET base/range/PREFIX with a
    User-Agent and Add-Padding, through urllib. Returns the body text."""
    url = "%s/range/%s%s" % (base, prefix, "?mode=" + mode if mode else "")
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if padding:
        req.add_header("Add-Padding", "true")
    with urllib.request.urlopen(req, timeout=30) as r:
        eq(r.status, 200, "status of " + url)
        return r.read().decode("ascii")


def hibp_count(base, full_hex, mode=None):
    """A HIBP client's answer for one hash: its count, 0 when not listed
    (padding lines have count 0 and never match)."""
    body = hibp_range(base, full_hex[:5], mode)
    for line in body.splitlines():
        suffix, count = line.split(":")
        if suffix == full_hex[5:].upper():
            return int(count)
    return 0


def curl(port, path, *args):
    """curl as a HIBP client: (status, headers text, body bytes)."""
    out = subprocess.run(["curl", "-sS", "-D", "-", "-A", USER_AGENT] + list(args) +
                         ["http://127.0.0.1:%d%s" % (port, path)],
                         capture_output=True, timeout=60)
    check(out.returncode == 0, "curl failed: %s" % out.stderr.decode(errors="replace"))
    head, _, body = out.stdout.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, head.decode(errors="replace"), body


def strip_padding(text):
    """The body without its count-0 lines (HIBP's padding), lines rejoined."""
    return "\r\n".join(ln for ln in text.split("\r\n") if ln and not ln.endswith(":0"))


def check_padding(text, real_lines, width=35):
    """Padding as HIBP pads: count-0 lines of the kind's width, after the
    real lines; the total 800..999 lines, or 10..209 lines added to a range
    of about 800 lines or more."""
    lines = text.split("\r\n")
    pad = [ln for ln in lines if ln.endswith(":0")]
    check(all(len(ln) == width + 2 and all(c in "0123456789ABCDEF" for c in ln[:width])
              for ln in pad), "padding lines are not SUFFIX:0")
    eq(lines[:real_lines], [ln for ln in lines if not ln.endswith(":0")], "real lines first")
    total = len(lines)
    if real_lines < 790:
        check(800 <= total <= 999, "%d real lines padded to %d" % (real_lines, total))
    else:
        check(10 <= len(pad) <= 209, "%d padding lines on %d" % (len(pad), real_lines))
    return len(pad)


def upstream_fetches(d):
    return d.stats()["upstream_fetches"]


def has_curl():
    try:
        subprocess.run(["curl", "--version"], capture_output=True, check=True)
        return True
    except (OSError, subprocess.CalledProcessError):
        return False


def require_curl():
    if not has_curl():
        raise dtest.Skip("curl is not installed")


def http_error(url, headers=None):
    try:
        urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    raise AssertionError("%s: expected an HTTP error" % url)


class GatedMirror:
    """The files of a Mirror over HTTP on 127.0.0.1, each answer held until
    release(): a range request that is still waiting for its upstream."""

    def __init__(self, mirror):
        self.gate = threading.Event()
        self.requests = []
        self.lock = threading.Lock()
        gm = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                m = re.fullmatch(r"/range/([0-9A-F]{5})", self.path)
                with gm.lock:
                    gm.requests.append(m.group(1) if m else self.path)
                gm.gate.wait(60)
                if not m or m.group(1) not in mirror.ranges:
                    self.send_error(404)
                    return
                dtest.send_text(self, mirror.body(m.group(1)).encode())

            def log_message(self, *a):
                pass

        self.srv = dtest.serve_http(Handler)
        self.port = self.srv.server_address[1]

    def template(self):
        return "http://127.0.0.1:%d/range/{prefix}" % self.port

    def asked(self):
        with self.lock:
            return len(self.requests)

    def release(self):
        self.gate.set()

    def close(self):
        self.gate.set()
        self.srv.shutdown()
        self.srv.server_close()
