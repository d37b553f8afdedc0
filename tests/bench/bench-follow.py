#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Publishing and following (docs/fleet.md, "Publishing and following"), by
hand, on loopback:

  1. Time to every host: `breachctl publish` (cycle INTERVAL) polling a feed
     served by nginx (feed interval INTERVAL), the same nginx serving the
     publish directory, HOSTS breachd processes following it
     (follow_interval INTERVAL). A URL is added to the feed at its source,
     at the worst phase (just after the publisher polled the feed); the
     time until it is BLOCKED on every host is taken per host (p50, p99,
     max); then the same for its removal becoming SAFE; ROUNDS times.
     --once-timer runs `publish --once` every INTERVAL instead of the
     service: its manifest announces no cycle, and the hosts poll at a
     random phase (the comparison).
  2. Idle hosts: requests and bytes (request and answer, nginx's
     $request_length and $bytes_sent) per host per hour while nothing
     changes.
  3. Bytes per added URL in a delta (1, 100, 10,000 URLs added to a base of
     BASE URLs, then removed again), with --once, and the bytes of the
     NAME.gz the publisher writes beside each file (nginx gzip_static).
  4. Catch-up: 24 h of 5-minute feed changes (ADD added, ADD/5 removed each)
     published with --once; what a host away for all of it fetches (a base
     and deltas, or deltas only), and how many bytes.

Usage: tests/bench/bench-follow.py [--build DIR] [--hosts 50] [--interval 30]
       [--base 10000] [--rounds 2] [--skip-fleet] [--skip-sizes] [--once-timer]
About 5 minutes at the defaults (four events of up to 2 intervals, an
idle minute); about 1 GB of memory for 50 breachd processes."""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import dtest  # noqa: E402


def run(*argv):
    return subprocess.run(list(argv), check=True, capture_output=True, text=True)


def write_feed(path, lines):
    with open(path + ".tmp", "w") as f:
        f.write("".join(x + "\n" for x in lines))
    os.rename(path + ".tmp", path)


def start_nginx(scratch, feeds, out):
    d = os.path.join(scratch, "nginx")
    os.makedirs(os.path.join(d, "tmp"))
    port = dtest.free_port()
    server = ("    server {\n        listen 127.0.0.1:%d;\n"
              "        location /feeds/ { alias %s/; }\n        location /pub/ { alias %s/; }\n"
              "    }\n" % (port, feeds, out))
    head = "    log_format bench '$request_uri $status $request_length $bytes_sent';\n"
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(dtest.nginx_conf(d, server, connections=1024, head=head, log_format="bench"))
    p = subprocess.Popen([dtest.NGINX, "-p", d, "-e", d + "/error.log", "-c", conf],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not dtest.wait_port(port, p, 10):
        sys.exit("nginx did not start")
    return p, port, os.path.join(d, "access.log")


def ask(sock, url):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(sock)
    s.sendall(("q URL %s\n" % url).encode())
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    return data.decode().split(" ", 1)[1].strip() if data else ""


def start_hosts(a, scratch, port, pub):
    procs, socks = [], []
    env = dict(os.environ)
    trust = "no" if os.geteuid() == 0 else "yes"  # breachd.conf(5) [daemon] trust_own_filters
    for i in range(a.hosts):
        h = os.path.join(scratch, "host%d" % i)
        os.makedirs(h)
        sock = os.path.join(h, "s")
        conf = os.path.join(h, "breachd.conf")
        with open(conf, "w") as f:
            f.write("[daemon]\nsocket = %s\nlog_level = warning\ntrust_own_filters = %s\n"
                    "[passwords]\nfilter =\n"
                    "upstream =\n[ntlm]\nupstream =\n[cache]\npath = %s/cache\n[urls]\n"
                    "filter = %s/follow\npubkey = %s\nfollow = "
                    "http://127.0.0.1:%d/pub/manifest\nfollow_interval = %ds\nupstream = none\n"
                    % (sock, trust, h, h, pub, port, a.interval))
        procs.append(subprocess.Popen([a.breachd, "--config", conf, "--foreground"], env=env,
                                      stdout=subprocess.DEVNULL,
                                      stderr=open(os.path.join(h, "log"), "w")))
        socks.append(sock)
    for s in socks:
        dtest.wait_for(lambda s=s: os.path.exists(s), timeout=60, what="host socket")
    return procs, socks


def time_to_all(socks, url, want, t0, limit):
    """Per host, the seconds from t0 until url answers want."""
    done = {}
    while len(done) < len(socks) and time.monotonic() - t0 < limit:
        for s in socks:
            if s not in done and ask(s, url).startswith(want):
                done[s] = time.monotonic() - t0
        time.sleep(0.2)
    return sorted(done.values())


def pct(v, p):
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else float("nan")


def report(what, times, n):
    print("%-28s hosts %d/%d  p50 %.1f s  p99 %.1f s  max %.1f s" % (
        what, len(times), n, pct(times, 50), pct(times, 99), max(times) if times else -1))


def idle(log, socks, seconds):
    start = os.path.getsize(log)
    time.sleep(seconds)
    with open(log) as f:
        f.seek(start)
        lines = [ln.split() for ln in f if "/pub/" in ln]
    req = len(lines)
    byts = sum(int(x[2]) + int(x[3]) for x in lines)
    per_h = 3600 / seconds / len(socks)
    print("idle hosts: %.1f requests and %.0f bytes per host per hour (%d requests, %d bytes "
          "in %d s for %d hosts; %s)" % (req * per_h, byts * per_h, req, byts, seconds,
                                         len(socks), sorted({x[1] for x in lines})))


def after_feed_poll(log):
    """Returns just after the publisher's next GET of the feed."""
    start = os.path.getsize(log)
    while True:
        with open(log) as f:
            f.seek(start)
            if any("/feeds/main.txt" in ln for ln in f):
                return
        time.sleep(0.05)


def fleet(a, scratch):
    feeds, out = os.path.join(scratch, "feeds"), os.path.join(scratch, "out")
    os.makedirs(feeds)
    os.makedirs(out)
    base = ["b%d.example" % i for i in range(a.base)]
    write_feed(os.path.join(feeds, "main.txt"), base)
    ngx, port, log = start_nginx(scratch, feeds, out)
    conf = os.path.join(scratch, "publish.conf")
    with open(conf, "w") as f:
        f.write("[publish]\noutput = %s\nkey = %s/sec.pem\ninterval = %ds\n\n[feed main]\n"
                "url = http://127.0.0.1:%d/feeds/main.txt\ncategory = malware\ninterval = %ds\n"
                % (out, scratch, a.interval, port, a.interval))
    argv = [a.breachctl, "publish", "--config", conf]
    if a.once_timer:  # a timer running --once: no cycle announced, hosts at a random phase
        argv = ["sh", "-c", "while :; do \"$@\" --once; sleep %d; done" % a.interval, "sh"] + argv
    pub = subprocess.Popen(argv, stderr=open(os.path.join(scratch, "publish.log"), "w"),
                           start_new_session=True)
    procs, socks = start_hosts(a, scratch, port, os.path.join(scratch, "pub.pem"))
    try:
        dtest.wait_for(lambda: all(ask(s, "http://b1.example/").startswith("BLOCKED")
                                   for s in socks), timeout=6 * a.interval, what="the base")
        print("# %d hosts, publish cycle, feed poll and follow_interval %d s, base %d URLs%s" % (
            a.hosts, a.interval, a.base, " (--once from a timer)" if a.once_timer else ""))
        worst = []
        for r in range(a.rounds):
            for what, lines, want in (("addition BLOCKED", base + ["fresh.example"], "BLOCKED"),
                                      ("removal SAFE", base, "SAFE")):
                after_feed_poll(log)  # the worst phase: the change just missed a poll
                write_feed(os.path.join(feeds, "main.txt"), lines)
                t0 = time.monotonic()
                times = time_to_all(socks, "http://fresh.example/", want, t0, 6 * a.interval)
                report("%s everywhere (%d)" % (what, r + 1), times, len(socks))
                worst += times
        report("all events, every host", sorted(worst), len(worst))
        idle(log, socks, max(60, 2 * a.interval))
    finally:
        os.killpg(pub.pid, 15)
        for p in procs + [ngx]:
            p.terminate()
        for p in procs + [pub, ngx]:
            p.wait()


def once(a, conf):
    return subprocess.run([a.breachctl, "publish", "--config", conf, "--once"],
                          capture_output=True, text=True, check=True).stderr


def once_setup(scratch, name):
    """A publisher of one file:// feed in scratch/name: (dir, feed, conf)."""
    d = os.path.join(scratch, name)
    os.makedirs(os.path.join(d, "out"))
    feed = os.path.join(d, "feed.txt")
    conf = os.path.join(d, "publish.conf")
    with open(conf, "w") as f:
        f.write("[publish]\noutput = %s/out\nkey = %s/sec.pem\n[feed main]\nurl = file://%s\n"
                "category = malware\n" % (d, scratch, feed))
    return d, feed, conf


def gz_size(d, line):
    """The NAME.gz the publisher wrote beside the file of its log line."""
    name = line.split(": ")[2].split(",")[0]
    gz = os.path.join(d, "out", name + ".gz")
    if not os.path.exists(gz):
        return "no .gz (gzip does not make it smaller)"
    plain = os.path.getsize(os.path.join(d, "out", name))
    return "its .gz %d bytes (%.0f%% saved)" % (os.path.getsize(gz),
                                                 100 - 100.0 * os.path.getsize(gz) / plain)


def delta_sizes(a, scratch):
    d, feed, conf = once_setup(scratch, "sizes")
    base = ["b%d.example/p/%d" % (i, i) for i in range(a.base)]
    write_feed(feed, base)
    line = [ln for ln in once(a, conf).splitlines() if "generation" in ln][-1]
    print("base of %d URLs: %s" % (a.base, gz_size(d, line)))
    for k in (1, 100, 10000):
        write_feed(feed, base + ["n%d-%d.example/x" % (k, i) for i in range(k)])
        os.utime(feed, (time.time() + k, time.time() + k))
        err = once(a, conf)
        line = [ln for ln in err.splitlines() if "generation" in ln][-1]
        byts = int(line.split(", ")[-1].split()[0])
        kind = "base" if "base-" in line else "delta"
        print("%5d URLs added: a %s of %d bytes, %.1f bytes per URL; %s" % (
            k, kind, byts, byts / k, gz_size(d, line)))
        write_feed(feed, base)
        os.utime(feed, (time.time() + k + 1, time.time() + k + 1))
        line = [ln for ln in once(a, conf).splitlines() if "generation" in ln][-1]
        print("%5d URLs removed: a %s of %s bytes; %s" % (
            k, "base" if "base-" in line else "delta", line.split(", ")[-1].split()[0],
            gz_size(d, line)))


def catch_up(a, scratch):
    d, feed, conf = once_setup(scratch, "day")
    cur = ["b%d.example" % i for i in range(a.base)]
    write_feed(feed, cur)
    once(a, conf)
    start = open(os.path.join(d, "out", "manifest")).read()
    start_base = [ln for ln in start.splitlines() if ln.startswith("base ")][0].split()[3]
    t = time.time()
    for c in range(288):  # 24 h of 5-minute changes
        cur = cur[a.add // 5:] + ["c%d-%d.example" % (c, i) for i in range(a.add)]
        write_feed(feed, cur)
        os.utime(feed, (t + c + 1, t + c + 1))
        once(a, conf)
    m = open(os.path.join(d, "out", "manifest")).read().splitlines()
    files = [ln.split() for ln in m if ln.startswith(("base ", "delta "))]
    new_base = files[0][3] != start_base
    fetch = files if new_base else files[1:]
    print("catch-up after 288 cycles (+%d -%d URLs each, base %d): %s, %d files, %d bytes "
          "(the base alone %s bytes)" % (
              a.add, a.add // 5, a.base,
              "one base and %d deltas" % (len(fetch) - 1) if new_base else
              "%d deltas" % len(fetch), len(fetch), sum(int(x[4]) for x in fetch), files[0][4]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--hosts", type=int, default=50)
    ap.add_argument("--interval", type=int, default=30)
    ap.add_argument("--base", type=int, default=10000)
    ap.add_argument("--add", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--skip-fleet", action="store_true")
    ap.add_argument("--skip-sizes", action="store_true")
    ap.add_argument("--once-timer", action="store_true",
                    help="publish with --once every interval (no cycle in the manifest)")
    a = ap.parse_args()
    a.breachd = os.path.abspath(os.path.join(a.build, "daemon", "breachd"))
    a.breachctl = os.path.abspath(os.path.join(a.build, "client", "breachctl", "breachctl"))
    scratch = tempfile.mkdtemp(prefix="bench-follow.", dir=os.environ.get("TMPDIR", "/var/tmp"))
    try:
        run(a.breachctl, "key", "generate", "--secret", os.path.join(scratch, "sec.pem"),
            "--public", os.path.join(scratch, "pub.pem"))
        print("# %s, %d CPUs" % (os.uname().release, os.cpu_count()))
        if not a.skip_sizes:
            delta_sizes(a, scratch)
            catch_up(a, scratch)
        if not a.skip_fleet:
            fleet(a, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
