#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachctl audit throughput (accounts/s) against a local nginx mirror of
NTLM ranges, through a real breachd:

  1. ACCOUNTS accounts (default 20,000), each its own password (a third in
     the corpus, the rest clean in a served range), as NAME:NTHASH lines;
  2. [upstream] rate = 100000 (the mirror is not throttled): a cold cache
     (every account's range fetched), then the same audit again (warm: every
     range in the LMDB cache);
  3. the same cold, with an [ntlm] filter over the corpus (the clean
     accounts are answered on the host);
  4. the default rate = 50 requests/s, cold, on RATE_ACCOUNTS accounts
     (default 1,000): what an audit costs against HIBP's pace.
Prints one Markdown table. Each audit's output is checked (every line, the
exit status), so the figures are those of correct runs.

Usage: bench-audit.py --breachd B --breachctl C --faultserver F --source-root S
Env: ACCOUNTS, RATE_ACCOUNTS, TMPDIR."""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

ROOT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT_DIR, "tests", "integration"))
import dtest  # noqa: E402
from ntfx import nginx_location, nthash, write_ntlm_range  # noqa: E402


def corpus(d, n):
    """n accounts; the mirror holds a third of their hashes (with counts)
    and a neighbour in every other account's range. Returns the accounts
    file, the corpus as HASH:COUNT lines (for a filter) and the report."""
    rng = random.Random(2026)
    accounts, entries, want = [], {}, []
    for i in range(n):
        h = nthash("bench-%d-%x" % (i, rng.getrandbits(32)))
        name = "user%06d" % i
        accounts.append("%s:%s" % (name, h))
        if i % 3 == 0:
            entries[h] = i + 1
            want.append("%s PWNED %d" % (name, i + 1))
        else:
            entries[h[:5] + ("0" * 27 if h[5:] != "0" * 27 else "1" * 27)] = 1
            want.append("%s CLEAN" % name)
    write_ntlm_range(os.path.join(d, "ntlm"), entries, padding=2)
    path = os.path.join(d, "accounts-%d.txt" % n)
    with open(path, "w") as f:
        f.write("\n".join(accounts) + "\n")
    pwned = os.path.join(d, "corpus-%d.txt" % n)  # every hash of the mirror
    with open(pwned, "w") as f:
        f.write("".join("%s:%d\n" % (h, c) for h, c in entries.items()))
    return path, pwned, want


def run_audit(sock, path, want):
    t0 = time.monotonic()
    r = subprocess.run([dtest.ARGS.breachctl, "audit", path],
                       env=dtest.base_env({"BREACHD_SOCKET": sock}), capture_output=True,
                       text=True, timeout=3600)
    secs = time.monotonic() - t0
    lines = r.stdout.splitlines()
    bad = [(g, w) for g, w in zip(lines, want) if g != w]
    if bad or len(lines) < len(want) or r.returncode != 1:
        raise SystemExit("audit output is wrong (exit %d, %d lines, first differences %r): %s"
                         % (r.returncode, len(lines), bad[:3], r.stderr[-2000:]))
    return secs


def daemon(ctx, name, port, rate, ntlm_filter=""):
    conf = ctx.config(name=name + ".conf", socket_path=ctx.path(name + ".sock"),
                      passwords={"filter": "", "upstream": ""},
                      ntlm={"filter": ntlm_filter,
                            "upstream": "http://127.0.0.1:%d/range/{prefix}?mode=ntlm" % port},
                      cache={"path": ctx.path(name + ".cache")}, upstream={"rate": rate},
                      daemon={"log_level": "warning"})
    return ctx.daemon(conf)


def main():
    import argparse
    ap = argparse.ArgumentParser()
    for a in ("--breachd", "--breachctl", "--faultserver", "--source-root"):
        ap.add_argument(a, required=a != "--faultserver")
    dtest.ARGS = ap.parse_args()
    n = int(os.environ.get("ACCOUNTS", "20000"))
    n_rate = int(os.environ.get("RATE_ACCOUNTS", "1000"))
    dtest.ROOT = tempfile.mkdtemp(prefix="breachd-bench-audit.", dir=os.environ.get("TMPDIR"))
    ctx = dtest.Ctx("bench")
    rows = []
    try:
        mirror = ctx.path("mirror")
        path, pwned, want = corpus(mirror, n)
        port = ctx.nginx(mirror, location=nginx_location(mirror))
        d = daemon(ctx, "fast", port, 100000)
        cold = run_audit(d.sock, path, want)
        s0 = d.stats()
        warm = run_audit(d.sock, path, want)
        s = d.stats()
        d.stop_ok()
        rows.append(("cold cache, rate 100000", n, cold,
                     "%d range fetches" % s0["nt_upstream_fetches"]))
        rows.append(("warm cache, rate 100000", n, warm, "%d cache hits, %d fetches" % (
            s["cache_hits"] - s0["cache_hits"],
            s["nt_upstream_fetches"] - s0["nt_upstream_fetches"])))
        filt = ctx.path("nt.bfuse")
        ctx.breachctl("filter", "build", "--kind", "password-ntlm", "--input", pwned, "--output",
                      filt)
        d = daemon(ctx, "filter", port, 100000, filt)
        secs = run_audit(d.sock, path, want)
        s = d.stats()
        d.stop_ok()
        rows.append(("cold cache, [ntlm] filter, rate 100000", n, secs,
                     "%d answered by the filter" % s["nt_filter_no"]))
        small = os.path.join(mirror, "small.txt")
        with open(path) as f, open(small, "w") as g:
            g.write("".join(f.readlines()[:n_rate]))
        d = daemon(ctx, "rate50", port, 50)
        secs = run_audit(d.sock, small, want[:n_rate])
        d.stop_ok()
        rows.append(("cold cache, rate 50 (the default)", n_rate, secs, ""))
    finally:
        ctx.cleanup()
        shutil.rmtree(dtest.ROOT, ignore_errors=True)
    print("| audit of NAME:NTHASH lines | accounts | seconds | accounts/s | |")
    print("| --- | ---: | ---: | ---: | --- |")
    for what, k, secs, note in rows:
        print("| %s | %d | %.2f | %.0f | %s |" % (what, k, secs, k / secs, note))


if __name__ == "__main__":
    main()
