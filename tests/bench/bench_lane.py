#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Benchmark (by hand): an audit of 20,000 accounts on the bulk lane next to
interactive checks (docs/upstream.md "Lanes"). The scenario is
tests/integration/lanefx.py's, at full size: a real breachd in front of a
local nginx mirror at [upstream] rate = 50 (bulk_share 50%: about 800 s), a
bulk client sending 20,000 PW checks in distinct prefixes at once, and
interactive PW checks in new prefixes, one at a time at 10 a second,
before, during and after it. It checks what the CI test checks (every answer
right, no UNKNOWN, the loaded p99 within 2x the unloaded one) and reports
the bulk throughput with a cold and a warm cache and the interactive
latencies.

    meson test -C BUILD --benchmark --suite bench lane
    python3 tests/bench/bench_lane.py --breachd BUILD/daemon/breachd \\
        --breachctl BUILD/client/breachctl/breachctl \\
        --faultserver BUILD/tests/integration/faultserver --source-root . \\
        [N_BULK [RATE]]

N_BULK and RATE (environment BENCH_LANE_N and BENCH_LANE_RATE under meson)
default to 20000 and 50.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import dtest  # noqa: E402
import lanefx  # noqa: E402

N_BULK = int(os.environ.get("BENCH_LANE_N", "20000"))
RATE = int(os.environ.get("BENCH_LANE_RATE", "50"))


@dtest.test
def audit_next_to_interactive(ctx):
    fig = lanefx.run(ctx, n_bulk=N_BULK, rate=RATE, pace=10, n_unloaded=300,
                     report=lambda s: print(s, flush=True))
    print("figures: " + " ".join("%s=%.3g" % kv if isinstance(kv[1], float) else "%s=%s" % kv
                                 for kv in sorted(fig.items())), flush=True)


if __name__ == "__main__":
    # Positional N_BULK [RATE] after the harness's options.
    rest = [a for a in sys.argv[1:] if a.isdigit()]
    sys.argv = [a for a in sys.argv if not a.isdigit()]
    if rest:
        N_BULK = int(rest[0])
    if len(rest) > 1:
        RATE = int(rest[1])
    dtest.TEST_TIMEOUT_S = int(N_BULK / (RATE * 0.5) * 1.5) + 300
    dtest.main()
