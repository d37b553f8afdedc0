#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""[urls] follow end to end (docs/fleet.md, "Publishing and following"):
breachctl publish against feeds served by nginx, that nginx serving the
publish directory too, and three breachd hosts following its manifest
(follow_interval = 1s). The hosts start before any manifest exists and
answer UNKNOWN filter-unavailable; then an addition reaches all three (the
deltas sent as their .gz: nginx gzip_static), a removal releases all
three, and a feed that shrinks by 90% is held (the hosts keep blocking).
Attacks, each refused while the hosts keep serving: a replayed (older)
manifest, an unsigned one, one signed by another key, a chain with a gap,
a delta of the wrong kind, a manifest of a password set. Waits have generous bounds; nothing asserts a time. At a
reload (driven time), follow and follow_interval take effect. A feed held
at the publisher ages the hosts' URL filter. [passwords] follow (and
[ntlm] follow): a password set's delta (a new key, a raised count) reaches
the host; manifests of another kind (a URL set, the other password kind)
are refused."""
import hashlib
import random
import http.client
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, sha1hex, test, wait_for  # noqa: E402


def write(path, lines, step):
    with open(path + ".tmp", "w") as f:
        f.write("".join(x + "\n" for x in lines))
    t = time.time() + 10 * step  # a later Last-Modified each time
    os.utime(path + ".tmp", (t, t))
    os.rename(path + ".tmp", path)


def answers(hosts, url):
    out = []
    for i, c in enumerate(hosts):
        c.send("q URL %s\n" % url)
        out.append(c.lines(1)[0].split(" ", 1)[1])
    return out


def all_say(hosts, url, want, what):
    wait_for(lambda: all(a.startswith(want) for a in answers(hosts, url)), timeout=60,
             what=what)


def sign(ctx, text):
    """manifest.sig for text by the publisher's key (the openssl tool):
    BRCHMAN1, the key id (SHA-256 of the raw public key), Ed25519."""
    m, sig = ctx.path("m.tmp"), ctx.path("s.tmp")
    with open(m, "wb") as f:
        f.write(text)
    subprocess.run(["openssl", "pkeyutl", "-sign", "-inkey", ctx.path("sec.pem"), "-rawin",
                    "-in", m, "-out", sig], check=True)
    der = subprocess.run(["openssl", "pkey", "-pubin", "-in", ctx.path("pub.pem"), "-outform",
                          "DER"], check=True, capture_output=True).stdout
    return b"BRCHMAN1" + hashlib.sha256(der[-32:]).digest() + open(sig, "rb").read()


def crafted(ctx, good, extra):
    """The good manifest, published later, with its feed lines after the
    lines extra, signed by the right key."""
    lines = good.decode().splitlines()
    head = [ln for ln in lines if not ln.startswith("feed ")]
    pub = [i for i, ln in enumerate(head) if ln.startswith("published ")][0]
    head[pub] = "published %d" % (int(head[pub].split()[1]) + 1000)
    gen = [i for i, ln in enumerate(head) if ln.startswith("generation ")][0]
    head[gen] = "generation %d" % extra[1]
    text = ("\n".join(head + [extra[0]]) + "\n").encode()
    return {"manifest": text, "manifest.sig": sign(ctx, text)}


def last_generation(good):
    return max(int(ln.split()[2]) for ln in good.decode().splitlines()
               if ln.startswith(("base ", "delta ")))


def wrong_kind(ctx, good):
    """A signed manifest naming, as its next delta, a URL range (Bloom)
    filter of the right generation, signed too."""
    gen = last_generation(good) + 1
    name = "delta-%d.bfuse" % gen
    path = ctx.path("out", name)
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--output", path, "--generation",
                  str(gen), "--input", ctx.path("feeds", "main.txt") + "=malware")
    ctx.breachctl("filter", "sign", "--key", ctx.path("sec.pem"), path)
    data = open(path, "rb").read()
    line = "delta %s %d %s %d" % (name, gen, hashlib.sha256(data).hexdigest().upper(), len(data))
    return crafted(ctx, good, (line, gen))


def password_kind(ctx, good):
    """The good manifest, signed and later, of a password set's kind."""
    lines = good.decode().replace("kind url-sha256\n", "kind password-sha1\n").splitlines()
    pub = [i for i, ln in enumerate(lines) if ln.startswith("published ")][0]
    lines[pub] = "published %d" % (int(lines[pub].split()[1]) + 1000)
    text = ("\n".join(lines) + "\n").encode()
    return {"manifest": text, "manifest.sig": sign(ctx, text)}


def gap(ctx, good):
    gen = last_generation(good) + 2
    line = "delta delta-%d.bfuse %d %s 5000" % (gen, gen, "AB" * 32)
    return crafted(ctx, good, (line, gen))


def check_figures(ctx, d, mport):
    """STATS urls_generation and feed_age_main; the labelled metric."""
    gen = last_generation(open(ctx.path("out", "manifest"), "rb").read())
    wait_for(lambda: str(d.stats().get("urls_generation")) == str(gen), timeout=30,
             what="urls_generation")
    st = d.stats()
    check(0 <= int(st["feed_age_main"]) < 3600, st)
    h = http.client.HTTPConnection("127.0.0.1", mport, timeout=10)
    h.request("GET", "/metrics")
    body = h.getresponse().read().decode()
    h.close()
    check('breachd_feed_age_seconds{feed="main"} ' in body and
          "# TYPE breachd_feed_age_seconds gauge" in body, body[-2000:])
    r = ctx.breachctl("--socket", d.sock, "health", check_rc=False)
    check(r.returncode == 0 and "feed_age_main=" in r.stdout, r.stdout)
    wait_for(lambda: "feed main last succeeded" in ctx.breachctl(
        "--socket", d.sock, "health", "--critical-feed-age", "1s", check_rc=False).stdout,
        timeout=30, what="a critical feed age")
    if shutil.which("promtool"):
        r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True,
                           text=True)
        check(r.returncode == 0, r.stdout + r.stderr)


def gzipped(ctx):
    """Every delta went to the hosts as the publisher's DELTA.gz (nginx
    gzip_static): its bytes on the wire are those of the .gz file."""
    sent = {}
    with open(ctx.path("nginx", "access.log")) as f:
        for ln in f:
            m = re.search(r'"GET /pub/(delta-[0-9]+\.bfuse) HTTP[^"]*" 200 ([0-9]+)', ln)
            if m:
                sent.setdefault(m.group(1), set()).add(int(m.group(2)))
    check(sent, "no delta fetched")
    for name, sizes in sent.items():
        gz = os.path.getsize(ctx.path("out", name + ".gz"))
        check(sizes == {gz} and gz < os.path.getsize(ctx.path("out", name)) / 2,
              (name, sizes, gz))


def publisher(ctx, out, key, port):
    conf = ctx.path("publish-%s.conf" % os.path.basename(out))
    with open(conf, "w") as f:
        f.write("[publish]\noutput = %s\nkey = %s\n\n"
                "[feed main]\nurl = http://127.0.0.1:%d/feeds/main.txt\ncategory = malware\n"
                % (out, key, port))
    return conf


def dns_of_followed_set(ctx, files):
    """The set a host followed (a base and its deltas, keyed by XXH3:
    docs/fleet.md) through libbreachd-dns, signatures checked: the
    addition and the base block, the removal passes."""
    for f in files:
        info = ctx.breachctl("filter", "info", f).stdout
        check("url-expression-sha256 v6" in info and "keyed by:" in info, info)
    conf = ctx.path("dns.conf")
    with open(conf, "w") as f:
        f.write("[urls]\npubkey = %s\n[dns]\nfilter = %s\n"
                % (ctx.path("pub.pem"), ", ".join(files)))
    r = ctx.breachctl("dns", "new.example", "x.h1.example", "h0.example", "other.example",
                      env={"BREACHD_CONFIG": conf, "BREACHD_TRUST_OWN_FILTERS": "1"},
                      check_rc=False)
    eq(r.stdout, "block malware new.example nxdomain\nblock malware h1.example nxdomain\n"
       "pass\npass\n",
       "breachctl dns on the followed set")


@test
def three_hosts_follow(ctx):
    for d in ("feeds", "out", "other"):
        os.mkdir(ctx.path(d))
    port = dtest.nginx(ctx, "nginx", "location /feeds/ { alias %s/; }\n"
                       "location /pub/ { alias %s/; gzip_static on; }\n"
                       % (ctx.path("feeds"), ctx.path("out")))
    ctx.breachctl("key", "generate", "--secret", ctx.path("sec.pem"), "--public",
                  ctx.path("pub.pem"))
    ctx.breachctl("key", "generate", "--secret", ctx.path("other.pem"), "--public",
                  ctx.path("other.pub"))
    feed = ["h%d.example" % i for i in range(100)]
    write(ctx.path("feeds", "main.txt"), feed, 0)
    conf = publisher(ctx, ctx.path("out"), ctx.path("sec.pem"), port)
    hosts, daemons = [], []
    mport = dtest.free_port()
    for i in range(3):
        c = ctx.config("host%d.conf" % i, socket_path=ctx.path("h%d.sock" % i),
                       daemon={"metrics_listen": "127.0.0.1:%d" % mport} if i == 0 else {},
                       urls={"filter": ctx.path("host%d" % i), "pubkey": ctx.path("pub.pem"),
                             "follow": "http://127.0.0.1:%d/pub/manifest" % port,
                             "follow_interval": "1s", "upstream": "none"})
        d = ctx.daemon(c)
        daemons.append(d)
        hosts.append(d.client())
    check(all(a == "UNKNOWN filter-unavailable" for a in answers(hosts, "http://h1.example/")),
          "before the first fetch")
    ctx.breachctl("publish", "--config", conf, "--once")
    all_say(hosts, "http://h1.example/", "BLOCKED malware", "the base on every host")
    check_figures(ctx, daemons[0], mport)
    saved = {n: open(ctx.path("out", n), "rb").read() for n in ("manifest", "manifest.sig")}
    # an addition
    write(ctx.path("feeds", "main.txt"), feed + ["new.example"], 1)
    ctx.breachctl("publish", "--config", conf, "--once")
    all_say(hosts, "http://new.example/x", "BLOCKED malware", "an addition on every host")
    gzipped(ctx)
    # a removal
    write(ctx.path("feeds", "main.txt"), feed[1:] + ["new.example"], 2)
    ctx.breachctl("publish", "--config", conf, "--once")
    all_say(hosts, "http://h0.example/", "SAFE", "a removal on every host")
    names = sorted(n for n in os.listdir(ctx.path("host0")) if n.startswith(("base-", "delta-")))
    held = [ln.split()[1] for ln in open(ctx.path("host0", "set")) if ln.startswith("file ")]
    check(names == sorted(held + [n + ".sig" for n in held]), (names, held))
    dns_of_followed_set(ctx, [ctx.path("host0", n) for n in held])
    # a shrink by 90% is held: still blocked everywhere
    write(ctx.path("feeds", "main.txt"), feed[1:11], 3)
    r = ctx.breachctl("publish", "--config", conf, "--once")
    check("shrank more than max_shrink" in r.stderr, r.stderr)
    time.sleep(2.5)  # a few polls: nothing may change
    check(all(a.startswith("BLOCKED") for a in answers(hosts, "http://h50.example/")),
          "held feed")
    # attacks: replayed, unsigned, foreign-signed manifests
    good = {n: open(ctx.path("out", n), "rb").read() for n in ("manifest", "manifest.sig")}
    oconf = publisher(ctx, ctx.path("other"), ctx.path("other.pem"), port)
    ctx.breachctl("publish", "--config", oconf, "--once")
    foreign = {n: open(ctx.path("other", n), "rb").read() for n in ("manifest", "manifest.sig")}
    cases = [(saved, "a replayed manifest?"),
             ({"manifest": good["manifest"] + b"", "manifest.sig": b""}, "not a manifest signature"),
             (foreign, "signed by another key"),
             (gap(ctx, good["manifest"]), "a chain with a gap"),
             (wrong_kind(ctx, good["manifest"]), "not the offline url-sha256 delta"),
             (password_kind(ctx, good["manifest"]), "a manifest of kind password-sha1")]
    for files, reason in cases:
        for n, data in files.items():
            with open(ctx.path("out", n + ".tmp"), "wb") as f:
                f.write(data)
            t = time.time() + 100
            os.utime(ctx.path("out", n + ".tmp"), (t, t))
        os.rename(ctx.path("out", "manifest.sig.tmp"), ctx.path("out", "manifest.sig"))
        os.rename(ctx.path("out", "manifest.tmp"), ctx.path("out", "manifest"))
        for d in daemons:
            wait_for(lambda d=d: reason in d.log(), timeout=60, what="refused: " + reason)
        check(all(a.startswith("BLOCKED") for a in answers(hosts, "http://new.example/")),
              "still serving after " + reason)
        check(all(a == "SAFE" for a in answers(hosts, "http://h0.example/")), "still the set")
    shutil.rmtree(ctx.path("other"))
    for c in hosts:
        c.close()
    for d in daemons:
        d.stop_ok()


def manifest_gets(ctx, loc):
    """The GETs of LOC/manifest in nginx's access log."""
    with open(ctx.path("nginx", "access.log")) as f:
        return sum(1 for ln in f if '"GET /%s/manifest HTTP' % loc in ln)


def reload(d, tag):
    cl = d.client()
    cl.send("%s RELOAD\n" % tag)
    ans = cl.lines(1)[0]
    cl.close()
    check(ans == "%s RELOADED" % tag, "RELOAD %s: %r" % (tag, ans))


@test
def follow_on_reload(ctx):
    """[urls] follow and follow_interval take effect at a reload (driven
    time): turned on, a first poll at once; a longer interval counts from
    the last poll; another URL, a poll of it at once; turned off, no more
    polls."""
    for d in ("feeds", "out"):
        os.mkdir(ctx.path(d))
    port = dtest.nginx(ctx, "nginx", "location /feeds/ { alias %s/; }\n"
                       "location /pub/ { alias %s/; }\nlocation /mirror/ { alias %s/; }\n"
                       % (ctx.path("feeds"), ctx.path("out"), ctx.path("out")))
    ctx.breachctl("key", "generate", "--secret", ctx.path("sec.pem"), "--public",
                  ctx.path("pub.pem"))
    feed = ["h%d.example" % i for i in range(20)]
    write(ctx.path("feeds", "main.txt"), feed, 0)
    conf = publisher(ctx, ctx.path("out"), ctx.path("sec.pem"), port)
    ctx.breachctl("publish", "--config", conf, "--once")
    clock = dtest.Clock(ctx)

    def host(loc, interval):
        urls = {"filter": "", "upstream": "none"}
        if loc:
            urls.update({"filter": ctx.path("host"), "pubkey": ctx.path("pub.pem"),
                         "follow": "http://127.0.0.1:%d/%s/manifest" % (port, loc),
                         "follow_interval": interval})
        return ctx.config("host.conf", urls=urls)

    d = ctx.daemon(host(None, None), clock=clock)

    def says(url, want, what):  # a new connection: an advance closes idle ones
        cl = d.client()
        all_say([cl], url, want, what)
        cl.close()

    says("http://h1.example/", "UNKNOWN", "no URL filter")
    clock.advance(3600)
    check(manifest_gets(ctx, "pub") == 0, "not following: no poll")
    # on at a reload: a poll at once, then every 10 minutes
    host("pub", "10m")
    reload(d, "on")
    says("http://h1.example/", "BLOCKED malware", "followed after the reload")
    write(ctx.path("feeds", "main.txt"), feed + ["new.example"], 1)
    r = ctx.breachctl("publish", "--config", conf, "--once")
    # the saved set read back whole (its first key starts with a byte of
    # white space for these 20 names)
    check("1 added, 0 removed" in r.stderr, r.stderr)
    clock.advance(600)
    says("http://new.example/", "BLOCKED malware", "the next poll, 10 min later")
    # a longer interval counts from the last poll (at most 10 min ago)
    host("pub", "1h")
    reload(d, "longer")
    gets = manifest_gets(ctx, "pub")
    clock.advance(49 * 60)
    check(manifest_gets(ctx, "pub") == gets, "no poll 49 min after the last one")
    clock.advance(11 * 60)
    wait_for(lambda: manifest_gets(ctx, "pub") == gets + 1, timeout=30,
             what="one poll an hour after the last one")
    # another URL: a poll of it at once, none of the old one after
    write(ctx.path("feeds", "main.txt"), feed + ["new.example", "two.example"], 2)
    ctx.breachctl("publish", "--config", conf, "--once")
    host("mirror", "1h")
    reload(d, "moved")
    says("http://two.example/", "BLOCKED malware", "followed at its new URL")
    gets = manifest_gets(ctx, "pub")
    # off: no poll, however long
    host(None, None)
    reload(d, "off")
    mirror = manifest_gets(ctx, "mirror")
    clock.advance(3 * 3600)
    check(manifest_gets(ctx, "pub") == gets and manifest_gets(ctx, "mirror") == mirror,
          "no poll once off")
    check("[urls] follow: off" in d.log(), "the log says it")
    d.stop_ok()


@test
def held_feed_ages_the_set(ctx):
    """A followed set is as old as its oldest feed at the publisher: one
    feed held for 3 hours (its kept last success moved back 3 hours) while
    another one changes makes a new delta, yet the hosts' URL filter is 3
    hours old and past max_filter_age (1h), not as new as that delta."""
    for d in ("feeds", "out"):
        os.mkdir(ctx.path(d))
    port = dtest.nginx(ctx, "nginx", "location /feeds/ { alias %s/; }\n"
                       "location /pub/ { alias %s/; }\n" % (ctx.path("feeds"), ctx.path("out")))
    ctx.breachctl("key", "generate", "--secret", ctx.path("sec.pem"), "--public",
                  ctx.path("pub.pem"))
    write(ctx.path("feeds", "main.txt"), ["m%d.example" % i for i in range(20)], 0)
    write(ctx.path("feeds", "other.txt"), ["o%d.example" % i for i in range(20)], 0)
    conf = publisher(ctx, ctx.path("out"), ctx.path("sec.pem"), port)
    with open(conf, "a") as f:
        f.write("\n[feed other]\nurl = http://127.0.0.1:%d/feeds/other.txt\ncategory = phishing\n"
                % port)
    ctx.breachctl("publish", "--config", conf, "--once")
    c = ctx.config(urls={"filter": ctx.path("host"), "pubkey": ctx.path("pub.pem"),
                         "follow": "http://127.0.0.1:%d/pub/manifest" % port,
                         "follow_interval": "1s", "max_filter_age": "1h", "upstream": "none"})
    d = ctx.daemon(c)
    cl = d.client()
    all_say([cl], "http://m1.example/", "BLOCKED malware", "the base")
    st = d.stats()
    check(int(st["url_filter_age_seconds"]) < 600 and int(st["url_filter_stale"]) == 0, st)
    # main fails (a 404) and has for 3 hours; other gains a URL
    os.unlink(ctx.path("feeds", "main.txt"))
    meta = ctx.path("out.state", "feed-main.meta")
    fields = open(meta).read().split("\n", 1)
    head = fields[0].split()
    head[0] = str(int(time.time()) - 3 * 3600)
    with open(meta, "w") as f:
        f.write(" ".join(head) + "\n" + fields[1])
    write(ctx.path("feeds", "other.txt"), ["o%d.example" % i for i in range(21)], 1)
    r = ctx.breachctl("publish", "--config", conf, "--once")
    check("1 added" in r.stderr and "feed main" in r.stderr, r.stderr)
    all_say([cl], "http://o20.example/", "BLOCKED phishing", "the new delta")
    all_say([cl], "http://m1.example/", "BLOCKED malware", "main's entries kept")
    st = d.stats()
    check(int(st["feed_age_main"]) >= 3 * 3600 and int(st["feed_age_other"]) < 600, st)
    check(int(st["url_filter_age_seconds"]) >= 3 * 3600, "the data's age: %r" % st)
    check(int(st["url_filter_stale"]) == 1, st)
    r = ctx.breachctl("--socket", d.sock, "health", check_rc=False)
    check(r.returncode == 2 and "feed main last succeeded" in r.stdout, r.stdout)
    cl.close()
    d.stop_ok()


def write_corpus(path, entries, step):
    """A HIBP corpus file (HASH:COUNT lines), replaced whole."""
    write(path, ["%s:%d" % (h, entries[h]) for h in sorted(entries)], step)


def other_kind(ctx, good, kind, other):
    """The good KIND manifest, signed and later, of kind OTHER."""
    lines = good.decode().replace("kind %s\n" % kind, "kind %s\n" % other).splitlines()
    pub = [i for i, ln in enumerate(lines) if ln.startswith("published ")][0]
    lines[pub] = "published %d" % (int(lines[pub].split()[1]) + 1000)
    text = ("\n".join(lines) + "\n").encode()
    return {"manifest": text, "manifest.sig": sign(ctx, text)}


def follow_password_set(ctx, section, kind, verb, key, others, what):
    """SECTION follow of a KIND set (VERB checks, key(TEXT) a corpus hash):
    a host with no set yet takes the base, then a load published as a
    delta (a new key, a raised count); a manifest of each of OTHERS kinds
    is refused and the set stays."""
    os.mkdir(ctx.path("out"))
    port = dtest.nginx(ctx, "nginx", "location /pw/ { alias %s/; gzip_static on; }\n"
                       % ctx.path("out"))
    ctx.breachctl("key", "generate", "--secret", ctx.path("sec.pem"), "--public",
                  ctx.path("pub.pem"))
    rng = random.Random(36)
    entries = {key("pw-%d" % i): rng.choice([1, 3, 40]) for i in range(10000)}
    write_corpus(ctx.path("corpus.txt"), entries, 0)
    conf = ctx.path("publish.conf")
    with open(conf, "w") as f:
        f.write("[publish]\noutput = %s\nkey = %s\nkind = %s\n\n[corpus hibp]\ninput = %s\n"
                % (ctx.path("out"), ctx.path("sec.pem"), kind, ctx.path("corpus.txt")))
    d = ctx.daemon(ctx.config(**{section: {
        "filter": ctx.path("host"), "pubkey": ctx.path("pub.pem"), "upstream": "none",
        "follow": "http://127.0.0.1:%d/pw/manifest" % port, "follow_interval": "1s"}}))
    c = d.client()
    old = sorted(entries)[-1]
    ask = lambda tag, h: c.ask("%s %s %s" % (tag, verb, h))  # noqa: E731
    check(not ask("a", old).startswith("a PWNED"), "no set before the first fetch")
    ctx.breachctl("publish", "--config", conf, "--once")
    wait_for(lambda: ask("b", old) == "b PWNED %d" % entries[old], timeout=60,
             what="the base on the host")
    # a load: a new key and a raised count, published as a delta
    new, raised = key("load-1"), sorted(entries)[3]
    entries.update({new: 77, raised: 99})
    write_corpus(ctx.path("corpus.txt"), entries, 1)
    ctx.breachctl("publish", "--config", conf, "--once")
    m = open(ctx.path("out", "manifest")).read()
    check("\ndelta " in m, "published as a delta: " + m)
    wait_for(lambda: ask("c", new) == "c PWNED 77", timeout=60, what="the new key")
    eq(ask("d", raised), "d PWNED 99", "the raised count")
    eq(ask("e", old), "e PWNED %d" % entries[old], "a key of the base")
    held = [ln.split()[1] for ln in open(ctx.path("host", "set")) if ln.startswith("file ")]
    check(len(held) == 2 and held[1].startswith("delta-"), held)
    good = open(ctx.path("out", "manifest"), "rb").read()
    for step, other in enumerate(others):
        for n, data in other_kind(ctx, good, kind, other).items():
            with open(ctx.path("out", n + ".tmp"), "wb") as f:
                f.write(data)
            t = time.time() + 100 * (step + 1)  # a later Last-Modified each time
            os.utime(ctx.path("out", n + ".tmp"), (t, t))
        os.rename(ctx.path("out", "manifest.sig.tmp"), ctx.path("out", "manifest.sig"))
        os.rename(ctx.path("out", "manifest.tmp"), ctx.path("out", "manifest"))
        reason = "a manifest of kind %s, not %s ([%s] follow)" % (other, kind, section)
        wait_for(lambda: reason in d.log(), timeout=60, what="refused: " + other)
        eq(ask("f", new), "f PWNED 77", "still the set after a %s manifest" % other)
    check("the %s filter in use stays" % what in d.log(), "the log says what stays")
    c.close()
    d.stop_ok()


@test
def passwords_follow(ctx):
    follow_password_set(ctx, "passwords", "password-sha1", "PW", sha1hex,
                        ("url-sha256", "password-ntlm"), "password")


@test
def ntlm_follow(ctx):
    follow_password_set(ctx, "ntlm", "password-ntlm", "NT", lambda t: sha1hex(t)[:32],
                        ("password-sha1",), "NTLM")


@test
def follow_needs_pubkey(ctx):
    conf = ctx.config(urls={"filter": ctx.path("dir"), "follow": "http://127.0.0.1:9/manifest"})
    r = subprocess.run([dtest.ARGS.breachd, "--config", conf, "--check-config"],
                       capture_output=True, text=True)
    check(r.returncode != 0 and "[urls] follow needs [urls] pubkey" in r.stderr, r.stderr)
    conf = ctx.config(passwords={"filter": ctx.path("dir"), "upstream": "none",
                                 "follow": "http://127.0.0.1:9/manifest"})
    r = subprocess.run([dtest.ARGS.breachd, "--config", conf, "--check-config"],
                       capture_output=True, text=True)
    check(r.returncode != 0 and "[passwords] follow needs [passwords] pubkey" in r.stderr,
          r.stderr)
    follow = {"filter": ctx.path("dir"), "pubkey": ctx.path("pub.pem"), "upstream": "none",
              "follow": "http://127.0.0.1:9/manifest"}
    conf = ctx.config(passwords=follow, urls=follow)
    r = subprocess.run([dtest.ARGS.breachd, "--config", conf, "--check-config"],
                       capture_output=True, text=True)
    check(r.returncode != 0 and "needs a directory of its own" in r.stderr, r.stderr)


if __name__ == "__main__":
    dtest.main()
