# SPDX-License-Identifier: MIT
"""libbreachd-dns inside real resolvers (docs/dns.md): PowerDNS Recursor
with data/dns/pdns-recursor.lua, unbound with data/dns/unbound.py, dnsdist
with data/dns/dnsdist.lua, Knot Resolver with data/dns/kresd.lua. An
authoritative nsd on 127.0.0.1 serves the zone test.; each resolver
forwards test. to it, its root hints point at 127.0.0.1, no security
polling: nothing leaves the host. dig checks that blocked, subdomain,
parent, allow-listed, logged, sinkholed, redirected and unlisted names get
the configured answers with the Extended DNS Error (RFC 8914) where the
resolver sends it, and that a replaced filter is followed. BIND 9.18's
named loads `breachctl filter export --format rpz` of the same feeds."""
import os
import re
import shutil
import subprocess
import time

import dtest
from dtest import check, eq, test, wait_for

FIXTURE = {}

ZONE = """$TTL 300
@ IN SOA ns.test. hostmaster.test. 1 3600 600 86400 300
@ IN NS ns.test.
ns IN A 127.0.0.1
evil IN A 192.0.2.1
www.evil IN A 192.0.2.1
good.evil IN A 192.0.2.2
www.good.evil IN A 192.0.2.2
parent IN A 192.0.2.3
deep.parent IN A 192.0.2.3
unlisted IN A 192.0.2.4
ads IN A 192.0.2.5
phish IN A 192.0.2.6
phish IN AAAA 2001:db8::6
nodata IN A 192.0.2.7
redir IN A 192.0.2.8
blockpage IN A 192.0.2.80
* IN A 192.0.2.99
"""

FEEDS = {
    "malware": "evil.test\ndeep.parent.test\n",
    "allow": "good.evil.test\n",
    "ads": "ads.test\n",
    "phishing": "phish.test\n",
    "spam": "nodata.test\n",
    "gambling": "redir.test\n",
}


def build_filter(path, feeds):
    """Replace the filter with the feeds, one generation above the last: an
    older one would be refused (docs/dns.md, "Older files")."""
    generation = FIXTURE["generation"] = FIXTURE.get("generation", 9) + 1
    d = os.path.dirname(path)
    args = []
    for cat, text in feeds.items():
        feed = os.path.join(d, "feed-%s-%d.txt" % (cat, generation))
        with open(feed, "w") as f:
            f.write(text)
        args += ["--input", "%s=%s" % (feed, cat)]
    tmp = path + ".tmp"
    r = subprocess.run([dtest.ARGS.breachctl, "filter", "build", "--kind", "url-sha256",
                        "--offline", "--output", tmp, "--generation", str(generation)] + args,
                       capture_output=True, text=True)
    eq(r.returncode, 0, "filter build: " + r.stderr)
    os.rename(tmp, path)


def setup():
    if dtest.is_asan():
        # the sanitizer runtime must be the first library of a process: a
        # sanitized libbreachd-dns cannot load into a resolver built without
        raise dtest.Skip("a sanitizer build (the resolvers are not)")
    for prog in ("nsd", "dig"):
        if not shutil.which(prog):
            raise dtest.Skip("%s not installed" % prog)
    d = dtest.tempdir("dns-fixture.", dtest.ROOT)
    os.chmod(d, 0o755)
    FIXTURE["dir"] = d
    FIXTURE["filter"] = os.path.join(d, "urls.bf")
    build_filter(FIXTURE["filter"], FEEDS)
    conf = os.path.join(d, "breachd.conf")
    with open(conf, "w") as f:
        f.write("[urls]\nfilter = %s\n[dns]\naction = nxdomain\naction.phishing = sinkhole\n"
                "action.spam = nodata\naction.gambling = redirect\naction.ads = log\n"
                "redirect = blockpage.test\nsinkhole = 0.0.0.0, ::\n" % FIXTURE["filter"])
    FIXTURE["conf"] = conf
    with open(os.path.join(d, "test.zone"), "w") as f:
        f.write(ZONE)
    with open(os.path.join(d, "root.hints"), "w") as f:
        f.write(". 3600000 NS a.root.test.\na.root.test. 3600000 A 127.0.0.1\n")
    port = dtest.free_port()
    with open(os.path.join(d, "nsd.conf"), "w") as f:
        f.write('server:\n  ip-address: 127.0.0.1@%d\n  zonesdir: "%s"\n  database: ""\n'
                '  zonelistfile: "%s/zone.list"\n  xfrdfile: "%s/xfrd.state"\n'
                '  pidfile: "%s/nsd.pid"\n  username: ""\n  chroot: ""\n  verbosity: 1\n'
                '  server-count: 1\n  hide-version: yes\n'
                'remote-control:\n  control-enable: no\n'
                'zone:\n  name: test.\n  zonefile: test.zone\n' % (port, d, d, d, d))
    log = open(os.path.join(d, "nsd.log"), "wb")
    FIXTURE["nsd"] = subprocess.Popen(["nsd", "-d", "-c", os.path.join(d, "nsd.conf")],
                                      stdout=log, stderr=subprocess.STDOUT,
                                      preexec_fn=dtest._die_with_parent)
    FIXTURE["nsd_port"] = port
    wait_for(lambda: "NOERROR" in dig(port, "unlisted.test", norec=True), 10, "nsd answers")


def teardown():
    p = FIXTURE.get("nsd")
    if p:
        p.terminate()
        p.wait(10)
    return 0


def lib_env():
    return {"BREACHD_CONFIG": FIXTURE["conf"], "LD_LIBRARY_PATH": dtest.ARGS.lib_dir,
            "BREACHD_TRUST_OWN_FILTERS": "1",
            "BREACHD_DNS_LUA_DIR": os.path.join(dtest.ARGS.source_root, "data", "dns")}


def dig(port, name, qtype="A", norec=False):
    r = subprocess.run(["dig", "@127.0.0.1", "-p", str(port), "+time=3", "+tries=1",
                        "+norec" if norec else "+rec", name, qtype],
                       capture_output=True, text=True)
    return r.stdout


def status_of(out):
    m = re.search(r"status: (\w+)", out)
    return m.group(1) if m else "no answer"


def answers(out):
    """The answer section's data, e.g. ['A 192.0.2.1'] or ['CNAME blockpage.test.', 'A ...']."""
    sect = out.split(";; ANSWER SECTION:\n", 1)
    if len(sect) < 2:
        return []
    rows = []
    for line in sect[1].split("\n\n", 1)[0].splitlines():
        f = line.split()
        if len(f) >= 5:
            rows.append("%s %s" % (f[3], f[4]))
    return rows


def ede_of(out):
    m = re.search(r"; EDE: (\d+)[^:]*:? ?\(?([^)\n]*)\)?", out)
    return (int(m.group(1)), m.group(2)) if m else None


def check_answers(port, ede, chases_cname=True):
    """The configured answers for every kind of name. ede: whether this
    resolver sends the Extended DNS Error; chases_cname: whether a redirect
    comes with the block page's address."""
    def blocked(name, category, qtype="A"):
        out = dig(port, name, qtype)
        if ede:
            eq(ede_of(out), (15, category), "%s: EDE\n%s" % (name, out))
        return out

    out = blocked("evil.test", "malware")
    eq(status_of(out), "NXDOMAIN", "evil.test: listed\n" + out)
    eq(status_of(blocked("www.evil.test", "malware")), "NXDOMAIN", "a subdomain")
    eq(status_of(blocked("deep.parent.test", "malware")), "NXDOMAIN", "deep.parent.test")
    for name, addr in (("parent.test", "192.0.2.3"), ("good.evil.test", "192.0.2.2"),
                       ("www.good.evil.test", "192.0.2.2"), ("unlisted.test", "192.0.2.4"),
                       ("ads.test", "192.0.2.5")):
        out = dig(port, name)
        eq((status_of(out), answers(out)), ("NOERROR", ["A " + addr]), name + "\n" + out)
        eq(ede_of(out), None, name + ": no EDE")
    out = blocked("phish.test", "phishing")
    eq((status_of(out), answers(out)), ("NOERROR", ["A 0.0.0.0"]), "sinkhole A\n" + out)
    out = blocked("phish.test", "phishing", "AAAA")
    eq((status_of(out), answers(out)), ("NOERROR", ["AAAA ::"]), "sinkhole AAAA\n" + out)
    out = blocked("nodata.test", "spam")
    eq((status_of(out), answers(out)), ("NOERROR", []), "nodata\n" + out)
    out = blocked("redir.test", "gambling")
    eq((status_of(out), answers(out)[:1]), ("NOERROR", ["CNAME blockpage.test."]),
       "redirect\n" + out)
    if chases_cname:
        check("A 192.0.2.80" in answers(out), "redirect: the block page's address\n" + out)
    eq(status_of(dig(port, "bad\\000name.test")), "NOERROR", "a binary label: answered")


def check_follows(port):
    """A new generation replacing the filter is followed; a bad one is not."""
    feeds = dict(FEEDS)
    feeds["malware"] = "evil.test\nnewly-listed.test\n"
    build_filter(FIXTURE["filter"], feeds)
    # a new name each time: a resolver's cache answers a name it has seen
    # without asking the hook again (docs/dns.md, "Caches")
    fresh = iter(range(1000))
    wait_for(lambda: status_of(dig(port, "n%d.newly-listed.test" % next(fresh))) == "NXDOMAIN",
             10, "the new filter followed")
    with open(FIXTURE["filter"], "rb") as f:
        data = f.read()
    with open(FIXTURE["filter"] + ".tmp", "wb") as f:
        f.write(data[: len(data) // 2])
    os.rename(FIXTURE["filter"] + ".tmp", FIXTURE["filter"])
    time.sleep(1)
    eq(status_of(dig(port, "evil.test")), "NXDOMAIN", "a truncated file: the last good serves")
    build_filter(FIXTURE["filter"], FEEDS)


def start(ctx, name, argv, port, env):
    log = open(ctx.path(name + ".log"), "wb")
    p = ctx.spawn(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: p.poll() is None and "NOERROR" in dig(port, "unlisted.test"), 20,
                 name + " answers")
    except AssertionError:
        p.kill()
        p.wait()
        with open(ctx.path(name + ".log")) as f:
            raise AssertionError("%s did not answer:\n%s" % (name, f.read()[-3000:]))
    return p


def serve_and_check(ctx, name, argv, port, ede, chases_cname=True):
    """Start the resolver, check every kind of answer and a replaced
    filter, stop it."""
    p = start(ctx, name, argv, port, lib_env())
    check_answers(port, ede=ede, chases_cname=chases_cname)
    check_follows(port)
    p.terminate()
    p.wait(10)


@test
def pdns_recursor_lua(ctx):
    if not shutil.which("pdns_recursor"):
        raise dtest.Skip("pdns-recursor not installed")
    port = dtest.free_port()
    os.makedirs(ctx.path("run"))
    argv = ["pdns_recursor", "--config-dir=" + ctx.dir, "--socket-dir=" + ctx.path("run"),
            "--local-address=127.0.0.1", "--local-port=%d" % port,
            "--forward-zones=test.=127.0.0.1:%d" % FIXTURE["nsd_port"],
            "--hint-file=" + os.path.join(FIXTURE["dir"], "root.hints"),
            "--lua-dns-script=" + os.path.join(dtest.ARGS.source_root, "data", "dns",
                                               "pdns-recursor.lua"),
            "--security-poll-suffix=", "--daemon=no", "--disable-syslog", "--threads=2",
            "--dnssec=off", "--extended-resolution-errors=yes", "--loglevel=4",
            "--disable-packetcache"]
    p = start(ctx, "pdns", argv, port, lib_env())
    check_answers(port, ede=True)
    check_follows(port)
    r = subprocess.run(["rec_control", "--socket-dir=" + ctx.path("run"), "get-all"],
                       capture_output=True, text=True)
    check(re.search(r"^breachd_dns_blocked_malware\s+[1-9]", r.stdout, re.M),
          "metrics:\n" + r.stdout + r.stderr)
    with open(ctx.path("pdns.log")) as f:
        log = f.read()
    check("evil" not in log, "a name in the resolver's log:\n" + log)
    p.terminate()
    p.wait(10)


@test
def unbound_python(ctx):
    if not shutil.which("unbound") or not os.path.exists(
            "/usr/lib/python3/dist-packages/unboundmodule.py"):
        raise dtest.Skip("unbound or python3-unbound not installed")
    port = dtest.free_port()
    conf = ctx.path("unbound.conf")
    with open(conf, "w") as f:
        f.write('server:\n  interface: 127.0.0.1@%d\n  port: %d\n  do-daemonize: no\n'
                '  username: ""\n  chroot: ""\n  directory: "%s"\n  pidfile: "%s/u.pid"\n'
                '  use-syslog: no\n  logfile: ""\n  verbosity: 1\n  do-not-query-localhost: no\n'
                '  root-hints: "%s/root.hints"\n  module-config: "python iterator"\n'
                '  num-threads: 2\n  do-ip6: no\n  local-zone: "test." nodefault\n'
                'python:\n  python-script: "%s"\n'
                'remote-control:\n  control-enable: no\n'
                'forward-zone:\n  name: "test."\n  forward-addr: 127.0.0.1@%d\n'
                % (port, port, ctx.dir, ctx.dir, FIXTURE["dir"],
                   os.path.join(dtest.ARGS.source_root, "data", "dns", "unbound.py"),
                   FIXTURE["nsd_port"]))
    env = lib_env()
    env["PYTHONPATH"] = "/usr/lib/python3/dist-packages"
    p = start(ctx, "unbound", ["unbound", "-d", "-c", conf], port, env)
    # neither an EDE nor the CNAME chased from a python module's answer
    check_answers(port, ede=False, chases_cname=False)
    check_follows(port)
    p.terminate()
    p.wait(10)


@test
def dnsdist_lua(ctx):
    if not shutil.which("dnsdist"):
        raise dtest.Skip("dnsdist not installed")
    port = dtest.free_port()
    with open(ctx.path("dnsdist.conf"), "w") as f:
        f.write('setLocal("127.0.0.1:%d")\nnewServer({address="127.0.0.1:%d"})\n'
                'setSecurityPollSuffix("")\ndofile("%s")\n'
                % (port, FIXTURE["nsd_port"],
                   os.path.join(dtest.ARGS.source_root, "data", "dns", "dnsdist.lua")))
    # neither an EDE nor the CNAME chased: dnsdist is no recursor
    serve_and_check(ctx, "dnsdist", ["dnsdist", "--supervised", "--disable-syslog", "-C",
                                     ctx.path("dnsdist.conf")], port, False, False)


@test
def knot_resolver_policy(ctx):
    if not shutil.which("kresd"):
        raise dtest.Skip("knot-resolver not installed")
    port = dtest.free_port()
    with open(ctx.path("kresd.conf"), "w") as f:
        f.write("net.listen('127.0.0.1', %d, { kind = 'dns' })\n"
                "trust_anchors.remove('.')\n"
                "modules.load('hints')\nhints.root({ ['a.root.test.'] = '127.0.0.1' })\n"
                "dofile('%s')\n"
                "policy.add(policy.suffix(policy.STUB({ '127.0.0.1@%d' }), { todname('test.') }))\n"
                % (port, os.path.join(dtest.ARGS.source_root, "data", "dns", "kresd.lua"),
                   FIXTURE["nsd_port"]))
    os.makedirs(ctx.path("run"))
    serve_and_check(ctx, "kresd", ["kresd", "-n", "-c", ctx.path("kresd.conf"), ctx.path("run")],
                    port, True, False)


@test
def bind_rpz_export(ctx):
    """breachctl filter export --format rpz loaded into BIND 9.18's named
    as a response policy zone: the same feeds block the same names, the
    category allow passes through."""
    if not shutil.which("named"):
        raise dtest.Skip("bind9 not installed")
    args = ["filter", "export", "--format", "rpz", "--output", ctx.path("rpz.zone")]
    for cat, text in FEEDS.items():
        feed = ctx.path("feed-%s.txt" % cat)
        with open(feed, "w") as f:
            f.write(text)
        args += ["--input", "%s=%s" % (feed, cat)]
    r = subprocess.run([dtest.ARGS.breachctl] + args, capture_output=True, text=True)
    eq(r.returncode, 0, "filter export: " + r.stderr)
    port = dtest.free_port()
    with open(ctx.path("named.conf"), "w") as f:
        f.write('options {\n directory "%s";\n pid-file "%s/named.pid";\n'
                ' listen-on port %d { 127.0.0.1; };\n listen-on-v6 { none; };\n'
                ' recursion yes;\n allow-query { 127.0.0.1; };\n dnssec-validation no;\n'
                ' response-policy { zone "rpz.breachd"; };\n};\ncontrols { };\n'
                'zone "." { type hint; file "%s/root.hints"; };\n'
                'zone "test." { type forward; forward only; forwarders { 127.0.0.1 port %d; }; };\n'
                'zone "rpz.breachd" { type primary; file "%s/rpz.zone"; };\n'
                % (ctx.dir, ctx.dir, port, FIXTURE["dir"], FIXTURE["nsd_port"], ctx.dir))
    p = start(ctx, "named", ["named", "-g", "-c", ctx.path("named.conf")], port, {})
    for name in ("evil.test", "www.evil.test", "deep.parent.test", "phish.test", "ads.test",
                 "nodata.test", "redir.test"):
        eq(status_of(dig(port, name)), "NXDOMAIN", name + ": blocked by the exported RPZ")
    for name, addr in (("parent.test", "192.0.2.3"), ("good.evil.test", "192.0.2.2"),
                       ("www.good.evil.test", "192.0.2.2"), ("unlisted.test", "192.0.2.4")):
        out = dig(port, name)
        eq((status_of(out), answers(out)), ("NOERROR", ["A " + addr]), name + "\n" + out)
    p.terminate()
    p.wait(10)


if __name__ == "__main__":
    dtest.main(options={"--lib-dir": {"required": True}}, setup=setup, teardown=teardown)
