#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""libbreachd-dns side by side with the resolvers' own lists, one run, one
list (tests/bench/README.md, "DNS"; docs/dns.md). By hand:

    tests/bench/bench-dns.py BUILD_DIR [N_DOMAINS]   (default 1000000)

One list of N domains in two real feed formats (half a hosts file, half a
domain list) is built into an offline URL filter (ours) and exported as
RPZ and unbound local-zones (theirs). nsd on 127.0.0.1 serves test.
(a wildcard, so every query name has an answer); each resolver forwards
test. to it. Measured, each against its baseline in the same run:
  - bench_dns: ns per name in process (warm), false blocks in random names;
  - resident memory (VmRSS) of PowerDNS Recursor and unbound with the list
    through the library, through their own mechanism, and with none;
  - dnsperf queries per second on cached answers, the same three ways:
    the three instances of a resolver run at once, and BENCH_ROUNDS
    (default 3) rounds of BENCH_SECONDS (default 6) each alternate between
    them, the order rotated each round; medians and ratios are printed,
    of the rates and of the resolver's CPU time per answered query (from
    /proc: the figure that stays put on a shared machine);
  - reloads under load, PowerDNS and unbound: dnsperf -v (every answer's
    latency) on a mix of cached names and listed (blocked, so the hook
    answers every time) names, a steady run then a run during which the
    configuration switches between two N-domain filters every second,
    alternated for BENCH_ROUNDS rounds: p99 latency, lost and failed
    (SERVFAIL) queries of each, the swap's p99 against the steady one;
  - a new N-domain filter swapped in while dnsperf runs (PowerDNS): lost
    queries, the per-second rate around the swap, RSS before and during.
The load average is printed at each step: the machine is shared.
Nothing reaches the internet; everything runs in a temp dir."""
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
N = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CTL = os.path.join(BUILD, "client", "breachctl", "breachctl")
LIBDIR = os.path.join(BUILD, "client", "dns")
D = tempfile.mkdtemp(prefix="bench-dns.")
PROCS = []
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
SECONDS = int(os.environ.get("BENCH_SECONDS", "6"))


def load():
    return os.getloadavg()[0]


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def percentile(v, q):
    s = sorted(v)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def dig_ok(port, name="warm.test"):
    r = subprocess.run(["dig", "@127.0.0.1", "-p", str(port), "+time=2", "+tries=1", name],
                       capture_output=True, text=True)
    return "status: NOERROR" in r.stdout or "status: NXDOMAIN" in r.stdout


def wait_up(p, port, what, timeout=600):
    end = time.time() + timeout
    while time.time() < end:
        if p.poll() is not None:
            raise SystemExit("%s exited: see %s" % (what, D))
        if dig_ok(port):
            return
        time.sleep(0.5)
    raise SystemExit("%s not up after %ds" % (what, timeout))


def spawn(argv, env=None, log="x.log"):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.Popen(argv, env=e, stdout=open(os.path.join(D, log), "wb"),
                         stderr=subprocess.STDOUT)
    PROCS.append(p)
    return p


def stop(p):
    p.terminate()
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def make_lists():
    rng = random.Random(1)
    names = ["d%d-%08x.bench%d.example" % (i, rng.getrandbits(32), i % 97) for i in range(N)]
    half = N // 2
    with open(os.path.join(D, "hosts.txt"), "w") as f:
        f.writelines("0.0.0.0 %s\n" % n for n in names[:half])
    with open(os.path.join(D, "domains.txt"), "w") as f:
        f.writelines("%s\n" % n for n in names[half:])
    with open(os.path.join(D, "listed.txt"), "w") as f:
        f.writelines("%s\n" % n for n in rng.sample(names, min(N, 100000)))
    with open(os.path.join(D, "unlisted.txt"), "w") as f:
        f.writelines("u%d-%08x.bench.example\n" % (i, rng.getrandbits(32)) for i in range(100000))
    with open(os.path.join(D, "queries.txt"), "w") as f:  # cached answers: 1000 names
        f.writelines("q%d.test A\n" % i for i in range(1000))
    with open(os.path.join(D, "mixed.txt"), "w") as f:  # cached, and blocked by the hook
        for i, n in enumerate(rng.sample(names, min(N, 1000))):
            f.write("q%d.test A\n%s A\n" % (i, n))
    return names


def build(out, extra=""):
    t0 = time.time()
    feeds = ["--input", os.path.join(D, "hosts.txt") + "=malware",
             "--input", os.path.join(D, "domains.txt") + "=ads"]
    subprocess.run([CTL, "filter", "build", "--kind", "url-sha256", "--offline", "--output",
                    out + ".tmp"] + feeds, check=True, capture_output=True)
    os.rename(out + ".tmp", out)
    t1 = time.time()
    for fmt in ("rpz", "unbound"):
        p = os.path.join(D, "list." + fmt)
        if not os.path.exists(p):
            subprocess.run([CTL, "filter", "export", "--format", fmt, "--output", p] + feeds,
                           check=True, capture_output=True)
    return t1 - t0


def nsd():
    port = free_port()
    with open(os.path.join(D, "test.zone"), "w") as f:
        f.write("$TTL 3600\n@ SOA ns.test. h.test. 1 3600 600 86400 300\n@ NS ns.test.\n"
                "ns A 127.0.0.1\n* A 192.0.2.1\n")
    with open(os.path.join(D, "nsd.conf"), "w") as f:
        f.write('server:\n ip-address: 127.0.0.1@%d\n zonesdir: "%s"\n database: ""\n'
                ' zonelistfile: "%s/zl"\n xfrdfile: "%s/xfrd"\n pidfile: "%s/nsd.pid"\n'
                ' username: ""\n chroot: ""\n server-count: 1\n'
                'remote-control:\n control-enable: no\nzone:\n name: test.\n zonefile: test.zone\n'
                % (port, D, D, D, D))
    with open(os.path.join(D, "root.hints"), "w") as f:
        f.write(". 3600000 NS a.root.test.\na.root.test. 3600000 A 127.0.0.1\n")
    p = spawn(["nsd", "-d", "-c", os.path.join(D, "nsd.conf")], log="nsd.log")
    wait_up(p, port, "nsd")
    return port


def conf(path, filt):
    """Written beside and renamed in, as a configuration is replaced. The
    second filter lists the same names in swapped categories: ads answer
    NODATA, so the rcode mix shows which filter answered."""
    with open(path + ".tmp", "w") as f:
        f.write("[dns]\nfilter = %s\naction.ads = nodata\n" % filt)
    os.rename(path + ".tmp", path)


def pdns(nsd_port, mode, tag, extra=()):
    """mode: none, lua, rpz. Returns (process, port)."""
    port = free_port()
    rundir = os.path.join(D, "pdns-" + tag)
    os.makedirs(rundir)
    argv = ["pdns_recursor", "--config-dir=" + rundir, "--socket-dir=" + rundir,
            "--local-address=127.0.0.1", "--local-port=%d" % port,
            "--forward-zones=test.=127.0.0.1:%d" % nsd_port,
            "--hint-file=" + os.path.join(D, "root.hints"), "--security-poll-suffix=",
            "--daemon=no", "--disable-syslog", "--threads=1", "--dnssec=off", "--loglevel=3"]
    argv += list(extra)
    if mode == "lua":
        argv.append("--lua-dns-script=" + os.path.join(SRC, "data", "dns", "pdns-recursor.lua"))
    if mode == "rpz":
        with open(os.path.join(rundir, "rpz.lua"), "w") as f:
            f.write('rpzFile("%s", {defpol=Policy.NXDOMAIN})\n' % os.path.join(D, "list.rpz"))
        argv.append("--lua-config-file=" + os.path.join(rundir, "rpz.lua"))
    p = spawn(argv, {"BREACHD_CONFIG": os.path.join(D, "dns.conf"), "LD_LIBRARY_PATH": LIBDIR,
                     "BREACHD_TRUST_OWN_FILTERS": "1",
                     "BREACHD_DNS_LUA_DIR": os.path.join(SRC, "data", "dns")},
              "pdns-%s.log" % tag)
    wait_up(p, port, "pdns " + tag)
    return p, port


def unbound(nsd_port, mode, tag, extra=()):
    del extra  # unbound runs the module only on a cache miss: blocked names miss
    port = free_port()
    path = os.path.join(D, "unbound-%s.conf" % tag)
    mods = "python iterator" if mode == "lua" else "iterator"
    with open(path, "w") as f:
        f.write('server:\n interface: 127.0.0.1@%d\n port: %d\n do-daemonize: no\n username: ""\n'
                ' chroot: ""\n directory: "%s"\n pidfile: "%s/u-%s.pid"\n use-syslog: no\n'
                ' do-not-query-localhost: no\n root-hints: "%s/root.hints"\n num-threads: 1\n'
                ' module-config: "%s"\n local-zone: "test." nodefault\n do-ip6: no\n'
                % (port, port, D, D, tag, D, mods))
        if mode == "lua":
            f.write('python:\n python-script: "%s"\n' % os.path.join(SRC, "data", "dns",
                                                                      "unbound.py"))
        if mode == "local-zone":
            f.write('include: "%s"\n' % os.path.join(D, "list.unbound"))
        f.write('remote-control:\n control-enable: no\nforward-zone:\n name: "test."\n'
                ' forward-addr: 127.0.0.1@%d\n' % nsd_port)
    p = spawn(["unbound", "-d", "-c", path],
              {"BREACHD_CONFIG": os.path.join(D, "dns.conf"), "LD_LIBRARY_PATH": LIBDIR,
               "PYTHONPATH": "/usr/lib/python3/dist-packages", "BREACHD_TRUST_OWN_FILTERS": "1"},
              "unbound-%s.log" % tag)
    wait_up(p, port, "unbound " + tag)
    return p, port


def cpu_s(pid):
    """The process's CPU time so far (user + system, all its threads), s."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def dnsperf(port, seconds=8, extra=(), queries="queries.txt", pid=None):
    """(qps, lost, average latency in us, output, the resolver's CPU us per
    answered query when pid is given: the figure the machine's other load
    moves least)."""
    cpu0 = cpu_s(pid) if pid else 0.0
    r = subprocess.run(["dnsperf", "-s", "127.0.0.1", "-p", str(port), "-d",
                        os.path.join(D, queries), "-l", str(seconds), "-c", "4", "-q", "200"]
                       + list(extra), capture_output=True, text=True)
    qps = float(re.search(r"Queries per second:\s+([\d.]+)", r.stdout).group(1))
    lost = int(re.search(r"Queries lost:\s+(\d+)", r.stdout).group(1))
    lat = re.search(r"Average Latency \(s\):\s+([\d.]+)", r.stdout)
    done = int(re.search(r"Queries completed:\s+(\d+)", r.stdout).group(1))
    cpu_us = (cpu_s(pid) - cpu0) * 1e6 / max(done, 1) if pid else 0.0
    return qps, lost, float(lat.group(1)) * 1e6 if lat else 0.0, r.stdout, cpu_us


def resolver_rows(nsd_port, start, modes, label):
    rows = []
    for mode in modes:
        p, port = start(nsd_port, mode, mode)
        dnsperf(port, 2)  # warm the cache
        rss = rss_kb(p.pid)
        qps, lost, lat, _, _ = dnsperf(port)
        rows.append((label, mode, rss, qps, lost, lat))
        print("%-8s %-11s RSS %8.1f MB  %9.0f qps  lost %d  avg %5.0f us"
              % (label, mode, rss / 1024, qps, lost, lat), flush=True)
        stop(p)
    return rows


def qps_rounds(nsd_port, start, modes, label):
    """The instances of modes at once; ROUNDS rounds alternate between them."""
    procs = {m: start(nsd_port, m, "q-" + m) for m in modes}
    for m in modes:
        dnsperf(procs[m][1], 2)  # warm the cache
    rss = {m: rss_kb(procs[m][0].pid) for m in modes}
    qps = {m: [] for m in modes}
    cpu = {m: [] for m in modes}
    lost = {m: 0 for m in modes}
    for r in range(ROUNDS):
        order = modes[r % len(modes):] + modes[:r % len(modes)]
        for m in order:
            q, lo, lat, _, c = dnsperf(procs[m][1], SECONDS, pid=procs[m][0].pid)
            qps[m].append(q)
            cpu[m].append(c)
            lost[m] += lo
            print("%-8s round %d %-11s %9.0f qps  %6.2f us CPU/query  lost %d  avg %5.0f us"
                  "  load %.1f" % (label, r + 1, m, q, c, lo, lat, load()), flush=True)
    for m in modes:
        stop(procs[m][0])
    med = {m: median(qps[m]) for m in modes}
    mcpu = {m: median(cpu[m]) for m in modes}
    for m in modes:
        print("%-8s %-11s RSS %7.1f MB  median %9.0f qps (%s)  %.2f us CPU/query (%s)  lost %d"
              % (label, m, rss[m] / 1024, med[m], " ".join("%.0f" % q for q in qps[m]), mcpu[m],
                 " ".join("%.2f" % c for c in cpu[m]), lost[m]), flush=True)
    print("%-8s ratios of medians: qps lua/none %.3f, lua/%s %.3f; CPU per query none/lua %.3f,"
          " %s/lua %.3f (as qps ratios: above 1 is better)" % (
              label, med["lua"] / med["none"], modes[2], med["lua"] / med[modes[2]],
              mcpu["none"] / mcpu["lua"], modes[2], mcpu[modes[2]] / mcpu["lua"]), flush=True)


def perf_latencies(port, seconds):
    """dnsperf -v on the mix at RATE queries a second (below saturation, so
    that latency is the resolver's work, not a queue): (latencies in us,
    lost, SERVFAIL, rcode counts)."""
    r = subprocess.run(["dnsperf", "-s", "127.0.0.1", "-p", str(port), "-d",
                        os.path.join(D, "mixed.txt"), "-l", str(seconds), "-c", "4", "-q", "100",
                        "-Q", os.environ.get("BENCH_RATE", "3000"), "-v"],
                       capture_output=True, text=True)
    lat, rcodes = [], {}
    for m in re.finditer(r"^> (\w+) \S+ \S+ ([\d.]+)$", r.stdout, re.M):
        rcodes[m.group(1)] = rcodes.get(m.group(1), 0) + 1
        lat.append(float(m.group(2)) * 1e6)
    lost = int(re.search(r"Queries lost:\s+(\d+)", r.stdout).group(1))
    return lat, lost, rcodes.get("SERVFAIL", 0), rcodes


def rcode(port, name):
    r = subprocess.run(["dig", "@127.0.0.1", "-p", str(port), "+time=2", "+tries=1", name],
                       capture_output=True, text=True)
    m = re.search(r"status: (\w+)", r.stdout)
    return m.group(1) if m else "none"


def switch_seen(port):
    """A name of the hosts half: malware (NXDOMAIN) in urls.bf, ads (NODATA)
    in urls2.bf. True when the answer follows [dns] filter both ways."""
    with open(os.path.join(D, "hosts.txt")) as f:
        name = f.readline().split()[1]
    seen = []
    for path, want in (("urls2.bf", "NOERROR"), ("urls.bf", "NXDOMAIN")):
        conf(os.path.join(D, "dns.conf"), os.path.join(D, path))
        time.sleep(1.5)
        seen.append(rcode(port, name) == want)
    return all(seen)


def swap_rounds(nsd_port, start, label, extra=()):
    """Steady runs and runs with a filter switch every second, alternated."""
    a, b = os.path.join(D, "urls.bf"), os.path.join(D, "urls2.bf")
    p, port = start(nsd_port, "lua", "swap-" + label, extra)
    for _ in range(10):  # warm: every cached name resolved once (a first one may time out)
        if perf_latencies(port, 2)[2] == 0:
            break
    ratios = []
    for r in range(ROUNDS):
        row = {}
        for kind in ("steady", "swap"):
            done = threading.Event()
            switches = [0]

            def switch():
                while not done.wait(1.0):
                    switches[0] += 1
                    conf(os.path.join(D, "dns.conf"), b if switches[0] % 2 else a)

            t = threading.Thread(target=switch)
            if kind == "swap":
                t.start()
            lat, lost, fails, rcodes = perf_latencies(port, SECONDS)
            done.set()
            if kind == "swap":
                t.join()
            conf(os.path.join(D, "dns.conf"), a)
            row[kind] = percentile(lat, 0.99)
            print("%-8s round %d %-6s p99 %6.0f us  p50 %5.0f us  %d answers  lost %d  "
                  "SERVFAIL %d  rcodes %s  switches %d  load %.1f"
                  % (label, r + 1, kind, row[kind], percentile(lat, 0.5), len(lat), lost, fails,
                     rcodes, switches[0] if kind == "swap" else 0, load()), flush=True)
            time.sleep(1.5)  # the switch back to a is loaded before the next run
        ratios.append(row["swap"] / row["steady"])
    seen = switch_seen(port)
    stop(p)
    print("%-8s p99 during switches / steady: median %.2f (%s); switches followed: %s"
          % (label, median(ratios), " ".join("%.2f" % x for x in ratios),
             "yes" if seen else "NO"), flush=True)


def swap_during_dnsperf(nsd_port):
    p, port = pdns(nsd_port, "lua", "swap")
    dnsperf(port, 2)
    steady = rss_kb(p.pid)
    samples = []
    done = threading.Event()

    def sample():
        while not done.is_set():
            samples.append(rss_kb(p.pid))
            time.sleep(0.05)

    t = threading.Thread(target=sample)
    t.start()
    out = {}

    def run():
        out["r"] = dnsperf(port, 12, ["-S", "1"])

    perf = threading.Thread(target=run)
    perf.start()
    time.sleep(4)
    shutil.copy(os.path.join(D, "urls2.bf"), os.path.join(D, "urls.bf.new"))
    os.rename(os.path.join(D, "urls.bf.new"), os.path.join(D, "urls.bf"))
    perf.join()
    done.set()
    t.join()
    qps, lost, lat, text, _ = out["r"]
    # -S 1 lines: "TIMESTAMP: QPS"
    rates = re.findall(r"^\d+\.\d+: ([\d.]+)", text, re.M)
    print("swap     lua         steady RSS %.1f MB, during the swap max %.1f MB (%.2fx); "
          "%d lost; avg %.0f us; per-second qps: %s"
          % (steady / 1024, max(samples) / 1024, max(samples) / steady, lost, lat,
             " ".join(x.split(".")[0] for x in rates)), flush=True)
    stop(p)


def main():
    for prog in ("nsd", "dnsperf", "pdns_recursor", "unbound", "dig"):
        if not shutil.which(prog):
            raise SystemExit("%s not installed" % prog)
    print("temp dir %s, %d domains" % (D, N), flush=True)
    make_lists()
    t = build(os.path.join(D, "urls.bf"))
    print("filter build: %.1f s, %d bytes (%.2f bytes/domain)"
          % (t, os.path.getsize(os.path.join(D, "urls.bf")),
             os.path.getsize(os.path.join(D, "urls.bf")) / N), flush=True)
    shutil.copy(os.path.join(D, "urls.bf"), os.path.join(D, "urls2.bf"))
    subprocess.run([CTL, "filter", "build", "--kind", "url-sha256", "--offline", "--output",
                    os.path.join(D, "urls2.bf"), "--generation", str(int(time.time()) + 100),
                    "--input", os.path.join(D, "domains.txt") + "=malware",
                    "--input", os.path.join(D, "hosts.txt") + "=ads"], check=True,
                   capture_output=True)
    conf(os.path.join(D, "dns.conf"), os.path.join(D, "urls.bf"))
    env = dict(os.environ, BREACHD_TRUST_OWN_FILTERS="1", LD_LIBRARY_PATH=LIBDIR)
    r = subprocess.run([os.path.join(BUILD, "tests", "bench", "bench_dns"),
                        os.path.join(D, "dns.conf"), os.path.join(D, "listed.txt"),
                        os.path.join(D, "unlisted.txt"), os.environ.get("BENCH_RANDOM",
                                                                        "10000000")],
                       env=env, capture_output=True, text=True)
    print(r.stdout + r.stderr, flush=True)
    nsd_port = nsd()
    print("load average %.1f" % load(), flush=True)
    only = os.environ.get("BENCH_ONLY", "qps,swap,rss").split(",")
    if "qps" in only:
        qps_rounds(nsd_port, pdns, ("none", "lua", "rpz"), "pdns")
        qps_rounds(nsd_port, unbound, ("none", "lua", "local-zone"), "unbound")
    if "swap" in only:
        # no packet cache: PowerDNS runs the hook for every query
        swap_rounds(nsd_port, pdns, "pdns", ["--disable-packetcache"])
        swap_rounds(nsd_port, unbound, "unbound")
    if "rss" in only:
        resolver_rows(nsd_port, pdns, ("none", "lua", "rpz"), "pdns")
        resolver_rows(nsd_port, unbound, ("none", "lua", "local-zone"), "unbound")
        swap_during_dnsperf(nsd_port)


if __name__ == "__main__":
    try:
        main()
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.kill()
        if os.environ.get("BENCH_KEEP") != "1":
            shutil.rmtree(D, ignore_errors=True)
