#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The fleet of docs/fleet.md on loopback: a publisher (nginx with the
server block of docs/fleet.md, serving a signed base, a signed delta, the
password range mirror and the URL range mirror) and five breachd hosts with
their own configs, sockets, caches and filter directories.

Each host fetches (breachctl filter fetch --config); a new delta published
reaches all five at their next fetch; a tampered filter and one signed with
another key are refused everywhere while the hosts keep serving; with the
publisher down the hosts answer from their filters and caches; and nothing
but the publisher is ever contacted (configs, and every range fetch of every
host in the publisher's access log). A second nginx (docs/fleet.md's cache
block) in front keeps ETags working: 304s and ranges through it."""
import os
import re
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import fleetfx  # noqa: E402
from dtest import check, eq, test  # noqa: E402

HOSTS = 5

HTTP_WRAP = """daemon off;
master_process off;
worker_processes 1;
pid %%(dir)s/nginx.pid;
error_log %%(dir)s/error.log warn;
events { worker_connections 512; }
http {
    log_format fleet '$remote_addr "$request" $status $body_bytes_sent '
                     'range="$http_range" inm="$http_if_none_match" ir="$http_if_range" '
                     'cache="$upstream_cache_status" ua="$http_user_agent"';
    client_body_temp_path %%(dir)s/tmp/body;
    proxy_temp_path %%(dir)s/tmp/proxy;
    fastcgi_temp_path %%(dir)s/tmp/fastcgi;
    uwsgi_temp_path %%(dir)s/tmp/uwsgi;
    scgi_temp_path %%(dir)s/tmp/scgi;
%s
}
"""


def doc_block(marker):
    """The nginx block after `<!-- fleet-test: MARKER -->` in docs/fleet.md."""
    with open(os.path.join(dtest.ARGS.source_root, "docs", "fleet.md")) as f:
        text = f.read()
    m = re.search(r"<!-- fleet-test: %s -->\s*```nginx\n(.*?)```" % re.escape(marker), text, re.S)
    check(m is not None, "docs/fleet.md has no '%s' nginx block" % marker)
    return m.group(1)


def nginx_conf(block, root, upstream_port=None):
    """The documented block with the test's paths and port: a %-template
    for fleetfx.Nginx."""
    b = block.replace("%", "%%")
    b = b.replace("/srv/breachd/", root.rstrip("/") + "/")
    b = re.sub(r"listen 80;", "listen 127.0.0.1:%(port)d;", b)
    b = re.sub(r"access_log \S+;", "access_log %(dir)s/access.log fleet;", b)
    b = b.replace("/var/cache/nginx/breachd", "%(dir)s/cache")
    if upstream_port:
        b = b.replace("http://breachd-publisher", "http://127.0.0.1:%d" % upstream_port)
    return HTTP_WRAP % b


class Fleet:
    """Publisher content and the five hosts' configs."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.sec, self.pub = fleetfx.keypair(ctx, "publisher")
        self.sec2, _ = fleetfx.keypair(ctx, "intruder")
        self.root = ctx.path("srv")
        for d in ("mirror", "filters", "url-ranges", "build"):
            os.makedirs(os.path.join(self.root, d))
        self.ng = fleetfx.Nginx(ctx, "publisher", nginx_conf(doc_block("publisher nginx"),
                                                              self.root))
        # Passwords: the base's keys, then what each delta adds.
        self.k0 = fleetfx.passwords("fleet-base", 4000)
        self.added = [fleetfx.passwords("fleet-add%d" % i, 150) for i in range(3)]
        self.generation = 10
        self.build_base()
        # URLs: a base feed, and what a delta adds.
        self.urls0 = ["http://phish%d.example/login" % i for i in range(60)]
        self.urls_added = ["http://new-phish%d.example/x" % i for i in range(10)]
        self.build_urls(self.urls0, base=True)
        self.build_urls(self.urls0 + self.urls_added, base=False)
        self.hosts = [self.host(i) for i in range(HOSTS)]

    def path(self, *p):
        return os.path.join(self.root, *p)

    def keys(self, deltas):
        k = dict(self.k0)
        for a in self.added[:deltas]:
            k.update(a)
        return k

    def build_base(self):
        b = self.path("build", "passwords.bfuse")
        fleetfx.build(self.ctx, b, self.k0, self.generation, sign=self.sec)
        fleetfx.publish(b, self.path("filters"), "passwords.bfuse")
        self.publish_delta(1)

    def publish_delta(self, n, sign=None, tamper=False):
        """The cumulative delta of the first n additions, published (and the
        mirror written for every key it names)."""
        keys = self.keys(n)
        # The mirror's files of the new keys' prefixes (whole files: a
        # prefix may hold keys of several sets).
        prefixes = {h[:5] for h in self.added[n - 1]} | ({h[:5] for h in self.k0} if n == 1 else set())
        dtest.write_range(self.path("mirror"), {h: c for h, c in keys.items() if h[:5] in prefixes})
        self.generation += 1
        d = self.path("build", "passwords-delta.bfuse")
        fleetfx.build(self.ctx, d, keys, self.generation, base=[self.path("build", "passwords.bfuse")],
                      sign=sign or self.sec)
        if tamper:
            fleetfx.flip_byte(d, d, 4096 + 100)
        fleetfx.publish(d, self.path("filters"), "passwords-delta.bfuse")

    def build_urls(self, urls, base):
        feed = self.path("build", "feed.txt")
        with open(feed, "w") as f:
            f.write("\n".join(urls) + "\n")
        name = "urls.bbf" if base else "urls-delta.bbf"
        out = self.path("build", name)
        args = ["filter", "build", "--kind", "url-sha256", "--input", feed + "=phishing",
                "--output", out, "--ranges-dir", self.path("url-ranges"), "--generation", "3"]
        if not base:
            args += ["--base", self.path("build", "urls.bbf")]
        self.ctx.breachctl(*args)
        self.ctx.breachctl("filter", "sign", "--key", self.sec, out)
        fleetfx.publish(out, self.path("filters"), name)

    def host(self, i):
        d = self.ctx.path("host%d" % i)
        os.makedirs(os.path.join(d, "lib"))
        lib = os.path.join(d, "lib")
        u = self.ng.url

        def files(*names):
            return ", ".join(os.path.join(lib, n) for n in names)

        def urls(*names):
            return ", ".join(u("filters/" + n) for n in names)

        conf = self.ctx.config(
            "host%d.conf" % i, socket_path=os.path.join(d, "breachd.sock"),
            cache={"path": os.path.join(d, "cache")},
            passwords=dict(filter=files("passwords.bfuse", "passwords-delta.bfuse"),
                           filter_url=urls("passwords.bfuse", "passwords-delta.bfuse"),
                           pubkey=self.pub, upstream=u("range/{prefix}")),
            urls=dict(filter=files("urls.bbf", "urls-delta.bbf"),
                      filter_url=urls("urls.bbf", "urls-delta.bbf"),
                      pubkey=self.pub, upstream=u("url-range/{prefix}")))
        return {"conf": conf, "lib": lib, "daemon": None}

    def fetch(self, h, check_rc=True):
        return fleetfx.fetch(self.ctx, "--config", h["conf"], check_rc=check_rc)


def ask(d, reqs):
    cl = d.client(timeout=30)
    try:
        return [cl.ask("q%d %s" % (i, r)).split(" ", 1)[1] for i, r in enumerate(reqs)]
    finally:
        cl.close()


def pw_reqs(keys):
    return ["PW " + h for h in keys]


def check_all(fleet, reqs, want, what):
    for i, h in enumerate(fleet.hosts):
        got = ask(h["daemon"], reqs)
        eq(got, want, "host %d: %s" % (i, what))


@test
def fleet_of_five(ctx):
    fl = Fleet(ctx)
    # First fetch on every host (no daemon yet: it loads them at start).
    for h in fl.hosts:
        r = fl.fetch(h)
        check(r.stdout.count(": updated:") == 4, r.stdout)
        h["daemon"] = ctx.daemon(h["conf"])
    k1 = fl.keys(1)
    base_key = sorted(fl.k0)[0]
    a1 = sorted(fl.added[0])[:5]
    absent = fleetfx.absent_hashes(k1, 5)
    reqs = pw_reqs([base_key] + a1 + absent)
    want = ["PWNED %d" % k1[h] for h in [base_key] + a1] + ["CLEAN"] * 5
    check_all(fl, reqs, want, "generation 11")
    new_url = fl.urls_added[0]
    check_all(fl, ["URL " + new_url, "URL http://fine.example/"],
              ["BLOCKED phishing %s" % new_url[7:], "SAFE"], "URLs")
    # A new delta reaches every host at its next fetch.
    fl.publish_delta(2)
    k2 = fl.keys(2)
    a2 = sorted(fl.added[1])[:5]
    check_all(fl, pw_reqs(a2), ["CLEAN"] * 5, "before the fetch")
    for h in fl.hosts:
        r = fl.fetch(h)
        check("passwords-delta.bfuse: updated" in r.stdout and "passwords.bfuse: unchanged" in r.stdout,
              r.stdout)
        eq(h["daemon"].stats()["filter_generation"], 12)
    check_all(fl, pw_reqs(a2), ["PWNED %d" % k2[h] for h in a2], "generation 12")
    # A tampered delta, then one signed by another key: refused everywhere,
    # the hosts keep serving generation 12.
    for kind in ("tampered", "foreign"):
        fl.publish_delta(3, tamper=kind == "tampered",
                         sign=fl.sec2 if kind == "foreign" else None)
        for i, h in enumerate(fl.hosts):
            r = fl.fetch(h, check_rc=False)
            eq(r.returncode, 2, "host %d, %s delta" % (i, kind))
            check(("body checksum mismatch" if kind == "tampered" else "signed by another key")
                  in r.stderr, r.stderr)
            eq(h["daemon"].stats()["filter_generation"], 12, "host %d still serving" % i)
        check_all(fl, pw_reqs(a2), ["PWNED %d" % k2[h] for h in a2], "after the %s delta" % kind)
    # A URL prefix without entries is answered empty (the documented block
    # serves empty.txt), one with entries with them.
    listed = {f[:5] for f in os.listdir(fl.path("url-ranges")) if f != "empty.txt"}
    unlisted = next("%05X" % p for p in range(1 << 20) if "%05X" % p not in listed)
    with urllib.request.urlopen(fl.ng.url("url-range/" + unlisted), timeout=10) as r:
        eq((r.status, r.read()), (200, b""), "a prefix without entries")
    with urllib.request.urlopen(fl.ng.url("url-range/" + sorted(listed)[0]), timeout=10) as r:
        check(r.status == 200 and b":phishing" in r.read(), "a prefix with entries")
    # Nothing but the publisher: every host's config names only it, and
    # every range fetch of every host so far is in the publisher's log.
    check_private(fl)
    # The publisher goes down: hosts answer from filters and cached ranges
    # (a range cached in the second its URL filter was built is revalidated
    # first, url_check.c: that fails, and the cached answer stands).
    fl.ng.stop()
    for h in fl.hosts:
        eq(fl.fetch(h, check_rc=False).returncode, 2, "fetch without a publisher")
    check_all(fl, pw_reqs([base_key] + a2 + absent),
              ["PWNED %d" % k2[h] for h in [base_key] + a2] + ["CLEAN"] * 5, "publisher down")
    check_all(fl, ["URL " + new_url], ["BLOCKED phishing %s" % new_url[7:]], "URL, publisher down")
    for h in fl.hosts:
        h["daemon"].stop_ok()


def check_private(fl):
    origin = "http://127.0.0.1:%d/" % fl.ng.port
    for i, h in enumerate(fl.hosts):
        with open(h["conf"]) as f:
            text = f.read()
        # Every range section names its upstream (the defaults are HIBP's).
        for sec in ("passwords", "ntlm", "urls"):
            body = re.search(r"^\[%s\]\n(.*?)(?=^\[|\Z)" % sec, text, re.M | re.S)
            check(body and re.search(r"^upstream *=", body.group(1), re.M),
                  "host %d: [%s] upstream is not set" % (i, sec))
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() in ("upstream", "filter_url"):
                for v in value.split(","):  # empty: contacts nobody
                    check(not v.strip() or v.strip().startswith(origin),
                          "host %d: %s" % (i, line.strip()))
            eq(key.strip() == "proxy", False, "host %d has a proxy" % i)
    fetched = 0
    for h in fl.hosts:
        st = h["daemon"].stats()
        eq(st.get("cache_errors", 0), 0)
        fetched += st["cache_misses"]  # every transfer, revalidations included
    log = fl.ng.log()
    ranges = [ln for ln in log if re.search(r'"GET /(url-)?range/[0-9A-F]{5} ', ln)
              and "Python-urllib" not in ln]
    check(fetched > 0, "the hosts fetched no range")
    eq(len(ranges), fetched, "range fetches of the hosts vs. the publisher's log")
    check(all(ln.startswith("127.0.0.1 ") for ln in log), "a request from elsewhere")
    filters = [ln for ln in log if '"GET /filters/' in ln]
    check(len(filters) >= HOSTS * 8, "every host fetched its filters from the publisher")


@test
def cache_in_front_keeps_etags(ctx):
    sec, pub = fleetfx.keypair(ctx)
    root = ctx.path("srv")
    os.makedirs(os.path.join(root, "filters"))
    origin = fleetfx.Nginx(ctx, "publisher", nginx_conf(doc_block("publisher nginx"), root))
    cache = fleetfx.Nginx(ctx, "cache", nginx_conf(doc_block("cache nginx"), root,
                                                   upstream_port=origin.port))
    keys = fleetfx.passwords("cdn", 20000)
    f = fleetfx.build(ctx, ctx.path("p.bfuse"), keys, 1, sign=sec)
    fleetfx.publish(f, os.path.join(root, "filters"), "p.bfuse")
    os.mkdir(ctx.path("host"))
    live = ctx.path("host", "p.bfuse")
    args = ["--url", cache.url("filters/p.bfuse"), "--pubkey", pub, "--output", live, "--no-reload"]
    fleetfx.fetch(ctx, *args)
    eq(fleetfx.file_sha(live), fleetfx.file_sha(f))
    r = fleetfx.fetch(ctx, *args)
    check(r.stdout.strip().endswith("unchanged"), r.stdout)
    got = [ln for ln in cache.log() if '"GET /filters/p.bfuse ' in ln]
    eq([ln.split('"')[2].split()[0] for ln in got], ["200", "304"], "through the cache")
    check('cache="HIT"' in got[1], "the 304 came from the cache: " + got[1])
    eq(len([ln for ln in origin.log() if '"GET /filters/p.bfuse ' in ln]), 1,
       "the publisher saw one request")
    # A cut download resumes through the cache (206 from the cached file).
    os.unlink(live)
    size = os.path.getsize(f)
    with open(f, "rb") as src, open(live + ".part", "wb") as out:
        out.write(src.read(size // 2))
    with open(live + ".fetch") as s:
        state = s.read()
    etag = re.search(r"^file\.etag (.*)$", state, re.M).group(1)
    with open(live + ".fetch", "w") as s:
        s.write("breachctl-fetch-state 1\nurl %s\npart.etag %s\n" % (args[1], etag))
    r = fleetfx.fetch(ctx, *args)
    check("(resumed at byte %d)" % (size // 2) in r.stdout, r.stdout)
    eq(fleetfx.file_sha(live), fleetfx.file_sha(f), "resumed through the cache")


if __name__ == "__main__":
    dtest.main()
