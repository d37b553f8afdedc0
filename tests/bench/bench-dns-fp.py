#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""False blocks of libbreachd-dns against an offline URL filter of N domains
(tests/bench/README.md, "DNS"; docs/dns.md, "False blocks"). By hand:

    tests/bench/bench-dns-fp.py BUILD_DIR [N_DOMAINS] [N_RANDOM] [check|sha256|nocheck]...

N domains (default 1000000) in 255 domain lists, one category each: the
worst case, where every category code a fingerprint can read blocks. The
filter is built with check filters (check: what filter build writes, key
encoding v6, keyed by XXH3; sha256: --sha256-keys, v5) and without
(nocheck, --no-check-filter, the layout before them); bench_dns then looks
up N_RANDOM random names (default 10^8, three random labels each) through
each and prints its false blocks, the CPU time, and the file's bytes per
domain. Nothing reaches the internet; everything runs in a temp dir."""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
N = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
NR = int(sys.argv[3]) if len(sys.argv) > 3 else 100000000
MODES = sys.argv[4:] or ["check", "nocheck"]
CTL = os.path.join(BUILD, "client", "breachctl", "breachctl")
BENCH = os.path.join(BUILD, "tests", "bench", "bench_dns")
NCAT = 255


def make_lists(d):
    rng = random.Random(1)
    names = ["d%d-%08x.bench%d.example" % (i, rng.getrandbits(32), i % 97) for i in range(N)]
    feeds = []
    for c in range(NCAT):
        path = os.path.join(d, "c%d.txt" % c)
        with open(path, "w") as f:
            f.writelines("%s\n" % n for n in names[c::NCAT])
        feeds += ["--input", "%s=c%d:domains" % (path, c)]
    with open(os.path.join(d, "listed.txt"), "w") as f:
        f.writelines("%s\n" % n for n in rng.sample(names, min(N, 100000)))
    with open(os.path.join(d, "unlisted.txt"), "w") as f:
        f.writelines("u%d-%08x.bench.example\n" % (i, rng.getrandbits(32)) for i in range(100000))
    return feeds


def main():
    d = tempfile.mkdtemp(prefix="bench-dns-fp.")
    try:
        feeds = make_lists(d)
        for mode in MODES:
            out = os.path.join(d, mode + ".bfuse")
            extra = {"nocheck": ["--no-check-filter"], "sha256": ["--sha256-keys"]}.get(mode, [])
            t0 = time.time()
            subprocess.run([CTL, "filter", "build", "--kind", "url-sha256", "--offline",
                            "--output", out] + extra + feeds, check=True, capture_output=True)
            built = time.time() - t0
            conf = os.path.join(d, mode + ".conf")
            with open(conf, "w") as f:
                f.write("[dns]\nfilter = %s\n" % out)
            size = os.path.getsize(out)
            print("== %s: %d domains, %d categories, built in %.1f s, %d bytes = %.2f bytes/domain"
                  % (mode, N, NCAT, built, size, size / N), flush=True)
            t0 = time.time()
            r = subprocess.run([BENCH, conf, os.path.join(d, "listed.txt"),
                                os.path.join(d, "unlisted.txt"), str(NR)],
                               env=dict(os.environ, BREACHD_TRUST_OWN_FILTERS="1"),
                               capture_output=True, text=True)
            print("\n".join(l for l in r.stdout.splitlines() if not l.startswith("blocked_")))
            if r.returncode:
                print(r.stderr.strip())
            print("wall %.0f s" % (time.time() - t0), flush=True)
    finally:
        shutil.rmtree(d)


main()
