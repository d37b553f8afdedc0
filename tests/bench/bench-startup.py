#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Start-up time of breachd with a large filter: from exec to the first
answer of a PW check, with and without a verification record
(docs/filter-format.md, "Start-up: verification records"), with the page
cache cold (echo 3 > /proc/sys/vm/drop_caches: needs root) and warm.

    tests/bench/bench-startup.py --build BUILD FILTER [--runs N] [--upstream none|URL]

FILTER must belong to root, mode 0644 (breachd refuses others). Its
FILTER.verified is removed and rewritten by the runs. Prints one line per
run and a summary table (median of the runs), with the bytes breachd had
read from the disk by its first answer (read_bytes of /proc/PID/io: the
block-layer reads, independent of how fast the disk is; in a VM whose host
caches the disk image, "cold" times understate a real cold disk and these
bytes are the measure to extrapolate from)."""
import argparse
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def warm(path):
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


def ask(sock_path, deadline):
    """The first answer to a PW check of a random (absent) hash, once the
    socket accepts; None past the deadline."""
    line = "1 PW %s\n" % secrets.token_hex(20).upper()
    while time.monotonic() < deadline:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(max(0.1, deadline - time.monotonic()))
            s.connect(sock_path)
        except OSError:
            s.close()
            time.sleep(0.005)
            continue
        try:
            s.sendall(line.encode())
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            if data.endswith(b"\n"):
                return data.decode().strip()
        except OSError:
            pass
        finally:
            s.close()
        time.sleep(0.005)
    return None


def one_run(args, tmp, conf, cold):
    if cold:
        drop_caches()
    else:
        warm(args.filter)
    log = open(os.path.join(tmp, "breachd.log"), "ab")
    t0 = time.monotonic()
    p = subprocess.Popen([args.breachd, "--config", conf, "--foreground"], stdout=log,
                         stderr=subprocess.STDOUT)
    try:
        ans = ask(os.path.join(tmp, "s.sock"), t0 + args.timeout)
        t = time.monotonic() - t0
        read = io_read_bytes(p.pid)
    finally:
        p.terminate()
        p.wait()
        log.close()
    if ans is None:
        sys.exit("no answer within %ds; see %s/breachd.log" % (args.timeout, tmp))
    return t, ans, read


def io_read_bytes(pid):
    with open("/proc/%d/io" % pid) as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    return -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--upstream", default="none")
    ap.add_argument("filter")
    args = ap.parse_args()
    args.breachd = os.path.join(args.build, "daemon", "breachd")
    ctl = os.path.join(args.build, "client", "breachctl", "breachctl")
    tmp = tempfile.mkdtemp(prefix="bench-startup.")
    conf = os.path.join(tmp, "breachd.conf")
    with open(conf, "w") as f:
        f.write("[daemon]\nsocket = %s/s.sock\nlog_level = info\n"
                "[passwords]\nfilter = %s\nupstream = %s\n[ntlm]\nupstream = none\n"
                "[cache]\npath = %s/cache\n" % (tmp, os.path.abspath(args.filter),
                                               args.upstream, tmp))
    record = args.filter + ".verified"
    size = os.path.getsize(args.filter)
    print("filter %s: %d bytes" % (args.filter, size))
    results = {}
    for with_record in (False, True):
        if with_record:
            drop_caches()
            t0 = time.monotonic()
            subprocess.run([ctl, "filter", "verify", args.filter], check=True,
                           stdout=subprocess.DEVNULL)
            print("breachctl filter verify (cold, writes the record): %.2f s"
                  % (time.monotonic() - t0))
        elif os.path.exists(record):
            os.unlink(record)
        for cold in (True, False):
            key = ("record" if with_record else "no record", "cold" if cold else "warm")
            for i in range(args.runs):
                t, ans, read = one_run(args, tmp, conf, cold)
                results.setdefault(key, []).append((t, read))
                print("%-9s %-4s run %d: %.3f s to the first answer (%s), %d bytes read from "
                      "disk" % (key + (i + 1, t, ans, read)))
    print("\n| record | page cache | median s | min s | max s | disk read MB (median) |\n"
          "|---|---|---:|---:|---:|---:|")
    for key, runs in results.items():
        ts = [t for t, _ in runs]
        mb = statistics.median([r for _, r in runs]) / 1e6
        print("| %s | %s | %.3f | %.3f | %.3f | %.2f |" % (key + (statistics.median(ts), min(ts),
                                                                   max(ts), mb)))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
