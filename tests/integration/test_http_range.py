#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The HIBP-compatible range endpoint ([http] in breachd.conf(5)) against
what HIBP's own API answers, with the requests HIBP client libraries make
(GET with Add-Padding: true and a User-Agent) through curl and Python's
urllib:

  bodies:     identical to the mirror's files for every prefix, from a
              file:// mirror and from nginx serving it; a HIBP client finds
              present hashes with their counts and absent ones not at all;
  padding:    present as HIBP pads (800..999 lines, or 10..209 added),
              count-0 lines after the real ones, different every time,
              ignored by clients;
  ntlm:       ?mode=ntlm from the [ntlm] upstream, padded with 27-digit
              lines; an error without one, never SHA-1 data;
  errors:     HIBP's 400 texts for bad prefixes, 404 off /range/, 405;
              502 for a prefix the upstream does not have, never cached;
  validators: ETag, Last-Modified, Cache-Control; 304 for If-None-Match and
              If-Modified-Since, 200 when they do not match; HEAD;
  codings:    gzip and brotli by Accept-Encoding (decoded by curl and zlib);
  load:       200 concurrent clients all get correct bodies;
  fast path:  a plain GET answered without evhttp is byte for byte evhttp's
              answer; everything else still goes through evhttp.

Standard library only; the harness is dtest.py.
"""
import gzip
import hashlib
import os
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import httpfx  # noqa: E402
from dtest import check, eq, test  # noqa: E402
from httpfx import get  # noqa: E402


def mirror(ctx, kind="sha1"):
    return httpfx.Mirror(ctx.path("mirror-" + kind), kind)


@test
def bodies_identical_to_the_mirror(ctx):
    httpfx.require_curl()
    m = mirror(ctx)
    d, port = httpfx.start(ctx, m)
    base = "http://127.0.0.1:%d" % port
    for prefix in m.present:
        want = m.body(prefix)
        # unpadded: byte for byte, through curl and urllib, twice (cold, cached)
        for _ in range(2):
            status, head, body = httpfx.curl(port, "/range/" + prefix)
            eq(status, 200, prefix)
            eq(body.decode(), want, "curl body of " + prefix)
            eq(httpfx.hibp_range(base, prefix, padding=False), want, "urllib body of " + prefix)
        # lowercase prefix, as HIBP accepts
        eq(httpfx.hibp_range(base, prefix.lower(), padding=False), want)
        # padded: the same minus the count-0 lines
        status, head, body = httpfx.curl(port, "/range/" + prefix, "-H", "Add-Padding: true")
        eq(httpfx.strip_padding(body.decode()), want, "padded curl body of " + prefix)
        eq(httpfx.strip_padding(httpfx.hibp_range(base, prefix)), want)
    st = d.stats()
    eq(st["upstream_fetches"], len(m.present), "one fetch per prefix")
    eq(st["http_ok"], 7 * len(m.present))
    d.stop_ok()


@test
def hibp_client_answers(ctx):
    m = mirror(ctx)
    pw = hashlib.sha1(b"P@ssw0rd").hexdigest().upper()
    m.add_hash(pw, 1234567)
    d, port = httpfx.start(ctx, m)
    base = "http://127.0.0.1:%d" % port
    eq(httpfx.hibp_count(base, pw), 1234567, "a present hash")
    rng = random.Random(5)
    for prefix in m.present:
        e = m.ranges[prefix]
        some = rng.choice(sorted(e))
        eq(httpfx.hibp_count(base, prefix + some), e[some], "present in " + prefix)
        while True:  # an absent hash in a present prefix: not found, padding or not
            absent = m.rand_suffix(rng)
            if absent not in e:
                break
        eq(httpfx.hibp_count(base, prefix + absent), 0, "absent in " + prefix)
    d.stop_ok()


@test
def padding_as_hibp_pads(ctx):
    m = mirror(ctx)
    d, port = httpfx.start(ctx, m)
    seen_totals = set()
    for prefix in m.present:
        n = len(m.ranges[prefix])
        bodies = set()
        for _ in range(3):
            status, h, body = get(port, "/range/" + prefix, {"Add-Padding": "true"})
            eq(status, 200)
            text = body.decode()
            httpfx.check_padding(text, n)
            bodies.add(text)
            seen_totals.add(len(text.split("\r\n")))
            check(h["cache-control"].startswith("private,"),
                  "a padded answer is not for shared caches: %r" % h["cache-control"])
            check(h["etag"].startswith('W/"'), "a padded answer's ETag is weak")
        eq(len(bodies), 3, "padding differs each time")
    check(len(seen_totals) > 10, "the number of lines varies")
    # "Add-Padding: false" or another value: no padding (HIBP's test is == "true")
    for v in ("false", "1", "yes"):
        status, h, body = get(port, "/range/" + m.present[0], {"Add-Padding": v})
        eq(body.decode(), m.body(m.present[0]), "Add-Padding: " + v)
    status, h, body = get(port, "/range/" + m.present[0], {"Add-Padding": "TRUE"})
    check(body.decode() != m.body(m.present[0]), "Add-Padding is case-insensitive")
    d.stop_ok()


@test
def ntlm_mode(ctx):
    m = mirror(ctx)
    nm = mirror(ctx, "ntlm")
    d, port = httpfx.start(ctx, m, ntlm_mirror=nm)
    base = "http://127.0.0.1:%d" % port
    for prefix in nm.present:
        body = httpfx.hibp_range(base, prefix, mode="ntlm")
        eq(httpfx.strip_padding(body), nm.body(prefix), "NTLM body of " + prefix)
        httpfx.check_padding(body, len(nm.ranges[prefix]), width=27)
        eq(httpfx.hibp_range(base, prefix, mode="ntlm", padding=False), nm.body(prefix))
    # as HIBP: only exactly mode=ntlm selects NT hashes
    prefix = m.present[0]
    for q in ("?mode=sha1", "?mode=NTLM", "?x=1&mode=", "?", "?mode=x&mode=ntlm"):
        status, h, body = get(port, "/range/%s%s" % (prefix, q))
        eq((status, body.decode()), (200, m.body(prefix)), q)
    status, h, body = get(port, "/range/%s?mode=ntlm&mode=x" % nm.present[0])
    eq((status, body.decode()), (200, nm.body(nm.present[0])), "the first mode counts")
    d.stop_ok()
    # without an [ntlm] upstream: an error, never SHA-1 data in its place
    d, port = httpfx.start(ctx, m, ntlm={"upstream": ""})
    status, h, body = get(port, "/range/%s?mode=ntlm" % m.present[0], {"Add-Padding": "true"})
    check(status in (502, 503), "status %d" % status)
    eq(h["cache-control"], "no-store")
    check(b":" not in body, "no range lines: %r" % body[:80])
    d.stop_ok()


@test
def bad_requests(ctx):
    m = mirror(ctx)
    d, port = httpfx.start(ctx, m)
    fmt = "The hash prefix was not in a valid format"
    hexa = "The hash prefix was not valid hexadecimal"
    # HIBP does not decode the path: %35 is three characters
    for path, text in [("/range/", fmt), ("/range/5BAA", fmt), ("/range/5BAA61", fmt),
                       ("/range/5BAA6/", fmt), ("/range/%355BAA", fmt), ("/range/5B%20A", fmt),
                       ("/range/ZZZZZ", hexa), ("/range/5BAG6", hexa), ("/range/-5BA6", hexa)]:
        status, h, body = get(port, path)
        eq((status, body.decode()), (400, text), path)
    code, text = httpfx.http_error("http://127.0.0.1:%d/range/xyz12" % port)
    eq((code, text), (400, hexa))
    for path in ("/", "/range", "/ranges/5BAA6", "/api/v3/range/5BAA6"):
        status, h, body = get(port, path)
        eq(status, 404, path)
    status, h, body = get(port, "/range/5BAA6", method="POST")
    eq(status, 405)
    eq(body.decode(), "Only GET requests can be used to query ranges, but this request used "
                      "the POST verb")
    status, h, body = get(port, "/range/5BAA6", method="OPTIONS")
    eq(status, 200)
    eq(h["access-control-allow-headers"], "Add-Padding")
    upstream_fetches = httpfx.upstream_fetches(d)
    eq(upstream_fetches, 0, "nothing asked upstream")
    # a prefix the upstream has no file for: 502, not cached (asked again)
    absent = httpfx.absent_prefix(m, random.Random(3))
    for i in range(2):
        status, h, body = get(port, "/range/" + absent)
        eq(status, 502, "prefix missing upstream")
        eq(h["cache-control"], "no-store")
        eq(httpfx.upstream_fetches(d), upstream_fetches + i + 1)
    d.stop_ok()


@test
def validators_and_304(ctx):
    m = mirror(ctx)
    d, port = httpfx.start(ctx, m)
    prefix = m.present[1]
    status, h, body = get(port, "/range/" + prefix)
    eq(status, 200)
    etag, lm = h["etag"], h["last-modified"]
    check(etag.startswith('"') and etag.endswith('"') and len(etag) == 34, etag)
    st = os.stat(m.path(prefix))
    eq(lm, httpfx_date(st.st_mtime), "Last-Modified is the mirror file's")
    check(h["cache-control"].startswith("public, max-age="), h["cache-control"])
    eq(h["vary"], "Accept-Encoding, Add-Padding")
    eq(h["content-type"], "text/plain")

    def cond(headers, want, what):
        s, hh, b = get(port, "/range/" + prefix, headers)
        eq(s, want, what)
        if want == 304:
            eq(b, b"", what + ": no body")
            eq(hh["etag"], etag if "Add-Padding" not in headers else "W/" + etag, what)
        return hh

    cond({"If-None-Match": etag}, 304, "If-None-Match")
    cond({"If-None-Match": "W/" + etag}, 304, "weak If-None-Match")
    cond({"If-None-Match": '"other", ' + etag}, 304, "a list")
    cond({"If-None-Match": "*"}, 304, "*")
    cond({"If-None-Match": etag, "Add-Padding": "true"}, 304, "padded")
    cond({"If-None-Match": '"0123"'}, 200, "another tag")
    cond({"If-Modified-Since": lm}, 304, "If-Modified-Since")
    cond({"If-Modified-Since": "Mon, 01 Jan 2035 00:00:00 GMT"}, 304, "a later date")
    cond({"If-Modified-Since": "Thu, 01 Jan 1970 00:00:01 GMT"}, 200, "an earlier date")
    cond({"If-Modified-Since": "yesterday"}, 200, "not a date")
    cond({"If-None-Match": '"0123"', "If-Modified-Since": lm}, 200, "If-None-Match wins")
    # the gzip representation has its own tag, and matches too
    s, hz, b = get(port, "/range/" + prefix, {"Accept-Encoding": "gzip"})
    eq(hz["etag"], etag[:-1] + '-gzip"')
    cond({"If-None-Match": hz["etag"]}, 304, "gzip tag")
    # HEAD: the headers (Content-Length of the GET), no body, the connection
    # still usable; a HEAD's error the same
    raw = raw_exchange(port, "HEAD /range/%s HTTP/1.1\r\nHost: t\r\n\r\n"
                             "HEAD /range/ZZZZZ HTTP/1.1\r\nHost: t\r\n\r\n"
                             "GET /range/%s HTTP/1.1\r\nHost: t\r\n\r\n" % (prefix, prefix),
                       lambda d: d.count(b"\r\n\r\n") >= 3 and
                       len(d.split(b"\r\n\r\n", 3)[3]) >= len(m.body(prefix)))
    heads = raw.split(b"\r\n\r\n")
    check(heads[0].startswith(b"HTTP/1.1 200 ") and b"\r\nETag: " + etag.encode() in heads[0],
          heads[0])
    check(b"\r\nContent-Length: %d\r\n" % len(m.body(prefix)) in heads[0] + b"\r\n", heads[0])
    check(heads[1].startswith(b"HTTP/1.1 400 "), "the second answer: %r" % heads[1][:80])
    check(heads[2].startswith(b"HTTP/1.1 200 "), "the third answer: %r" % heads[2][:80])
    eq(heads[3].decode(), m.body(prefix), "the GET's body after two HEADs")
    # another range has another tag; the same range in a new daemon the same
    s, h2, b = get(port, "/range/" + m.present[2])
    check(h2["etag"] != etag, "tags differ between ranges")
    d.stop_ok()
    d2, port2 = httpfx.start(ctx, m, cache={"path": ctx.path("cache2")})
    s, h3, b = get(port2, "/range/" + prefix)
    eq(h3["etag"], etag, "the tag is the content's")
    d2.stop_ok()


def raw_exchange(port, text, done):
    """Send text on one connection; read until done(data) or the server
    closes (30 s at most)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        s.sendall(text.encode())
        data = b""
        while not done(data):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            data += chunk
        return data
    finally:
        s.close()


def httpfx_date(t):
    import email.utils
    return email.utils.formatdate(t, usegmt=True)


@test
def through_nginx(ctx):
    """The mirror served by nginx (ETag, Last-Modified, gzip) as the upstream."""
    m = mirror(ctx)
    port_ng = ctx.nginx(m.dir, "location /range/ { alias %s/; try_files $uri.txt =404; }" % m.dir)
    d, port = httpfx.start(ctx, m, passwords={"upstream": "http://127.0.0.1:%d/range/{prefix}"
                                                           % port_ng})
    base = "http://127.0.0.1:%d" % port
    for prefix in m.present:
        eq(httpfx.strip_padding(httpfx.hibp_range(base, prefix)), m.body(prefix))
        s, h, b = get(port_ng, "/range/" + prefix)
        s2, h2, b2 = get(port, "/range/" + prefix)
        eq(b2, b, "identical to nginx's body")
        eq(h2["last-modified"], h["last-modified"], "nginx's Last-Modified passed on")
    d.stop_ok()


@test
def content_codings(ctx):
    httpfx.require_curl()
    m = mirror(ctx)
    d, port = httpfx.start(ctx, m)
    for prefix in m.present[:6]:
        want = m.body(prefix)
        s, h, body = get(port, "/range/" + prefix, {"Accept-Encoding": "gzip, deflate"})
        eq(h.get("content-encoding"), "gzip")
        eq(gzip.decompress(body).decode(), want)
        s, h, body = get(port, "/range/" + prefix,
                         {"Accept-Encoding": "gzip", "Add-Padding": "true"})
        eq(httpfx.strip_padding(gzip.decompress(body).decode()), want, "padded gzip")
        for ae in ("gzip;q=0", "identity", "deflate", "*;q=0"):
            s, h, body = get(port, "/range/" + prefix, {"Accept-Encoding": ae})
            check("content-encoding" not in h, ae)
            eq(body.decode(), want, ae)
        status, head, body = httpfx.curl(port, "/range/" + prefix, "--compressed")
        eq(body.decode(), want, "curl --compressed")
        if brotli_built():
            status, head, body = httpfx.curl(port, "/range/" + prefix, "--compressed", "-H",
                                             "Accept-Encoding: br")
            check("content-encoding: br" in head.lower(), head)
            eq(body.decode(), want, "brotli through curl")
            s, h, b = get(port, "/range/" + prefix, {"Accept-Encoding": "br;q=0.5, gzip;q=0"})
            eq(h.get("content-encoding"), "br")
    d.stop_ok()


@test
def prepared_body_follows_the_entry(ctx):
    """A range asked again is sent from its prepared body ([http]
    prepared_size); once the cache entry changes (refetched after its ttl,
    the mirror's range changed without changing its size), every coding
    answers the new range, not the prepared old one."""
    m = mirror(ctx)
    prefix = next(p for p in m.present if len(m.ranges[p]) >= 40)
    clock = dtest.Clock(ctx)
    d, port = httpfx.start(ctx, m, cache={"ttl": "1h"}, clock=clock)

    def bodies():
        plain = get(port, "/range/" + prefix)[2].decode()
        s, h, packed = get(port, "/range/" + prefix, {"Accept-Encoding": "gzip"})
        eq(h.get("content-encoding"), "gzip")
        padded = get(port, "/range/" + prefix, {"Add-Padding": "true"})[2].decode()
        return plain, gzip.decompress(packed).decode(), httpfx.strip_padding(padded)

    for _ in range(3):  # formatted, then prepared
        eq(bodies(), (m.body(prefix),) * 3, "before the change")
    entries = dict(m.ranges[prefix])
    suffix = sorted(entries)[0]
    c = entries[suffix]
    entries[suffix] = c + 1 if c % 10 < 9 else c - 1  # as many digits: the same size
    old = m.body(prefix)
    m.add_range(prefix, entries)
    eq(len(m.body(prefix)), len(old), "the changed range's size")
    clock.advance(3601)  # past the ttl: the next request refetches
    for _ in range(2):
        eq(bodies(), (m.body(prefix),) * 3, "after the change")
    d.stop_ok()


class Answers:
    """The answers coming in on socket s, one at a time."""

    def __init__(self, s):
        self.s = s
        self.data = b""

    def more(self, what):
        chunk = self.s.recv(1 << 16)
        check(chunk, "the connection closed %s: %r" % (what, self.data[:80]))
        self.data += chunk

    def next(self, head_only=False):
        """(head bytes, body bytes) of the next answer."""
        while b"\r\n\r\n" not in self.data:
            self.more("before an answer")
        head, _, self.data = self.data.partition(b"\r\n\r\n")
        n = 0
        for line in head.split(b"\r\n")[1:]:
            if line.lower().startswith(b"content-length:"):
                n = int(line.split(b":", 1)[1])
        if head_only or head.startswith(b"HTTP/1.1 304 "):
            n = 0
        while len(self.data) < n:
            self.more("in a body")
        body, self.data = self.data[:n], self.data[n:]
        return head, body


def date_of(head):
    return [line for line in head.split(b"\r\n") if line.startswith(b"Date: ")]


@test
def fast_path_answers_as_evhttp(ctx):
    """The plainest GET of a range (GET /range/{prefix} HTTP/1.1 with Host,
    User-Agent, Accept, an identity Accept-Encoding) alone on a connection
    is answered without evhttp (STATS http_fast) once its body is prepared:
    the same bytes, head and body, as evhttp's answer to the same request
    with one more header. Gzip, padded, conditional and HEAD requests keep
    going through evhttp, on the same connections; so do two requests in
    one write, and a reader too slow for the answer gets it whole."""
    m = mirror(ctx)
    prefix = max(m.present, key=lambda p: len(m.ranges[p]))
    d, port = httpfx.start(ctx, m)
    first = "GET /range/%s HTTP/1.1\r\nHost: t\r\n\r\n" % prefix
    eq(raw_exchange(port, first, lambda x: x.endswith(m.body(prefix).encode()))[-10:],
       m.body(prefix).encode()[-10:], "the first answer (prepares the body)")
    etag = get(port, "/range/" + prefix)[1]["etag"]
    fast_conn = socket.create_connection(("127.0.0.1", port), timeout=30)
    slow_conn = socket.create_connection(("127.0.0.1", port), timeout=30)
    fast_in, slow_in = Answers(fast_conn), Answers(slow_conn)
    cases = [  # name, method, headers, answered by the fast path
        ("plain", "GET", "Host: t\r\n", True),
        ("http.client's", "GET", "Host: t\r\nAccept-Encoding: identity\r\nUser-Agent: u\r\n", True),
        ("curl's", "GET", "host: t\r\nUser-Agent: curl/8\r\nAccept: */*\r\n", True),
        ("gzip", "GET", "Host: t\r\nAccept-Encoding: gzip\r\n", False),
        ("padded", "GET", "Host: t\r\nAdd-Padding: true\r\n", False),
        ("304", "GET", "Host: t\r\nIf-None-Match: %s\r\n" % etag, False),
        ("HEAD", "HEAD", "Host: t\r\n", False),
    ]
    for name, method, headers, fast in cases:
        for _ in range(5):  # until both answers fall in the same second (Date)
            req = "%s /range/%s HTTP/1.1\r\n%s" % (method, prefix, headers)
            before = d.stats()["http_fast"]
            fast_conn.sendall((req + "\r\n").encode())
            h1, b1 = fast_in.next(method == "HEAD")
            eq(d.stats()["http_fast"] - before, 1 if fast else 0, name + ": by the fast path")
            slow_conn.sendall((req + "X-Other: 1\r\n\r\n").encode())
            h2, b2 = slow_in.next(method == "HEAD")
            eq(d.stats()["http_fast"] - before, 1 if fast else 0, name + ": through evhttp")
            if date_of(h1) == date_of(h2):
                break
        if name == "padded":  # the padding differs every time, and its length
            strip = [line for line in h1.split(b"\r\n") if not line.startswith(b"Content-Length")]
            eq(strip, [line for line in h2.split(b"\r\n")
                       if not line.startswith(b"Content-Length")], name + ": the heads")
            eq(httpfx.strip_padding(b1.decode()), httpfx.strip_padding(b2.decode()), name)
            continue
        eq(h1.decode(), h2.decode(), name + ": the heads")
        eq(b1, b2, name + ": the bodies")
        if method == "GET" and name != "304":
            check(len(b1) > 0, name + ": a body")
    # two requests in one write: evhttp answers both, in order
    before = d.stats()["http_fast"]
    fast_conn.sendall((first + first).encode())
    for _ in range(2):
        eq(fast_in.next()[1].decode(), m.body(prefix), "pipelined")
    eq(fast_in.data, b"", "nothing after the pipelined answers")
    eq(d.stats()["http_fast"], before, "pipelined requests go through evhttp")
    fast_conn.close()
    slow_conn.close()
    # a reader that takes the answer slowly: the rest is written when the
    # socket takes it, and the next request on the connection is read after
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    s_in = Answers(s)
    for _ in range(2):
        s.sendall(first.encode())
        time.sleep(0.3)
        eq(s_in.next()[1].decode(), m.body(prefix), "a slow reader's answer")
    eq(d.stats()["http_fast"], before + 2, "a slow reader's answers by the fast path")
    # requests one by one while nothing is read: the socket fills up in an
    # answer (written on when it takes more, the next request read after)
    n = 120
    for _ in range(n):
        s.sendall(first.encode())
        time.sleep(0.02)
    for i in range(n):
        eq(s_in.next()[1].decode(), m.body(prefix), "answer %d of a reader that waited" % i)
    check(d.stats()["http_fast"] > before + 2, "some by the fast path")
    s.close()
    d.stop_ok()


def brotli_built():
    out = subprocess.run(["ldd", dtest.ARGS.breachd], capture_output=True, text=True).stdout
    return "libbrotlienc" in out


@test
def concurrent_clients(ctx):
    m = mirror(ctx)
    # 200 clients from one address: past the default per-client cap (64)
    d, port = httpfx.start(ctx, m, http={"max_connections_per_client": "256"})
    base = "http://127.0.0.1:%d" % port
    n = 200
    barrier = threading.Barrier(n)
    results = [None] * n
    prefixes = m.present

    def client(i):
        prefix = prefixes[i % len(prefixes)]
        try:
            barrier.wait(timeout=60)
            body = httpfx.hibp_range(base, prefix, padding=bool(i % 2))
            results[i] = httpfx.strip_padding(body) == m.body(prefix)
        except Exception as e:  # noqa: BLE001 - reported below
            results[i] = repr(e)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    bad = [(i, r) for i, r in enumerate(results) if r is not True]
    check(not bad, "%d of %d clients got a wrong answer: %r" % (len(bad), n, bad[:5]))
    eq(httpfx.upstream_fetches(d), len(prefixes), "cold prefixes coalesced: one fetch each")
    d.stop_ok()


if __name__ == "__main__":
    dtest.main()
