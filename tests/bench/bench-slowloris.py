#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Benchmark (by hand): slowloris next to a well-behaved client. The
scenario is tests/integration/loadfx.py's (the daemon-load test runs it at
CI size without asserting the ratio): a real breachd on a filter and an
nginx mirror; a well-behaved client sends PING, PW (filter no) and PW
(cached range) checks one at a time, 5 ms apart, alone; then 1,000 clients
connect that send request bytes one a second each (spread over the second)
and 10 that pipeline PINGs until breachd stops reading them (max_unread),
none reading a reply, and the well-behaved client goes on in alternating
2-second windows with the slow clients sending ("loaded") and paused
("held": connections open, nothing sent); then alone again. Reports the
unloaded p99 (alone, before and after), the held and loaded p99s and the
ratios; the claim (tests/bench/README.md "Load") is a loaded p99 within 2x
of the unloaded one. Fails only on a wrong answer, or on a ratio over 2
when --assert-ratio is given.

    meson test -C BUILD --benchmark --suite bench slowloris
    python3 tests/bench/bench-slowloris.py --breachd BUILD/daemon/breachd \\
        --breachctl BUILD/client/breachctl/breachctl --source-root . \\
        [--seconds 30] [--slow 1000] [--pipe 10] [--runs 3] [--assert-ratio]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import dtest  # noqa: E402
import loadfx  # noqa: E402

OPTIONS = {
    "--seconds": dict(type=float, default=30.0, help="loaded seconds per run"),
    "--slow": dict(type=int, default=1000, help="byte-a-second clients"),
    "--pipe": dict(type=int, default=10, help="clients pipelining without reading"),
    "--runs": dict(type=int, default=3, help="runs, each with its own daemon"),
    "--assert-ratio": dict(action="store_true", help="fail when a loaded p99 is over 2x"),
}


@dtest.test
def slowloris_next_to_well_behaved(ctx):
    a = dtest.ARGS
    ratios, held = [], []
    for run in range(a.runs):
        rctx = dtest.Ctx("%s-%d" % (ctx.name, run), dirname="run%d" % run)
        try:
            with open("/proc/loadavg") as f:
                load = " ".join(f.read().split()[:3])
            print("run %d (load average %s):" % (run + 1, load), flush=True)
            d, fig, _ = loadfx.slowloris(rctx, n_slow=a.slow, n_pipe=a.pipe, seconds=a.seconds,
                                         n_unloaded=2000,
                                         report=lambda t: print("  " + t, flush=True))
            d.stop_ok()
            ratios.append(fig["p99_ratio"])
            held.append(fig["p99_ratio_held"])
        finally:
            rctx.cleanup()
    print("p99 ratios, loaded / unloaded: %s; loaded / held: %s" % (
        " ".join("%.2f" % r for r in ratios), " ".join("%.2f" % r for r in held)), flush=True)
    if a.assert_ratio:
        dtest.check(max(ratios) <= 2.0, "a loaded p99 over 2x the unloaded one")


if __name__ == "__main__":
    dtest.TEST_TIMEOUT_S = 3600
    dtest.main(options=OPTIONS)
