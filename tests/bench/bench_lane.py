#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Benchmark (by hand): the bulk lane next to interactive checks
(docs/upstream.md "Lanes"), two scenarios of tests/integration/lanefx.py at
full size, each a real breachd in front of a local nginx mirror serving
HIBP's SHA-1 and NTLM ranges at [upstream] rate = 50 (bulk_share 50%: about
800 s each):

  audit_next_to_interactive: `breachctl audit` of a pwdump file of 20,000
      accounts (19,500 NT hashes in prefixes of their own, half pwned, half
      clean; 500 empty passwords; machine accounts and accounts without an
      NT hash), on the bulk lane it asks for itself, while interactive PW
      and NT checks in new prefixes go one at a time at 10 a second, before,
      during and after it; then the same audit again (warm cache). Reports
      the audit's wall time, accounts/s, exit status and summary line, and
      the interactive p50/p99 unloaded and during the audit, per verb.
  bulk_next_to_interactive: 20,000 PW checks in distinct prefixes sent at
      once on one LANE bulk connection, next to interactive PW checks.

Both check what the CI test checks (every answer right, no UNKNOWN, the
loaded p99 of the interactive PW checks within 2x the unloaded one plus
20 ms).

    meson test -C BUILD --benchmark --suite bench lane       # the audit
    meson test -C BUILD --benchmark --suite bench lane-pw    # PW checks
    python3 tests/bench/bench_lane.py --breachd BUILD/daemon/breachd \\
        --breachctl BUILD/client/breachctl/breachctl \\
        --faultserver BUILD/tests/integration/faultserver --source-root . \\
        [audit | bulk] [N [RATE]]

N (accounts, or bulk checks) and RATE (environment BENCH_LANE_N and
BENCH_LANE_RATE under meson) default to 20000 and 50; `audit` or `bulk` runs
one scenario only.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import dtest  # noqa: E402
import lanefx  # noqa: E402

N_BULK = int(os.environ.get("BENCH_LANE_N", "20000"))
RATE = int(os.environ.get("BENCH_LANE_RATE", "50"))


def figures(fig):
    print("figures: " + " ".join("%s=%.4g" % kv if isinstance(kv[1], float) else "%s=%s" % kv
                                 for kv in sorted(fig.items()) if kv[0] != "summary"), flush=True)


@dtest.test
def audit_next_to_interactive(ctx):
    figures(lanefx.run_audit(ctx, n_accounts=N_BULK, rate=RATE, pace=10, n_unloaded=600,
                             report=lambda s: print(s, flush=True), log_level="info",
                             control=True))


@dtest.test
def bulk_next_to_interactive(ctx):
    figures(lanefx.run(ctx, n_bulk=N_BULK, rate=RATE, pace=10, n_unloaded=300,
                       report=lambda s: print(s, flush=True)))


if __name__ == "__main__":
    # Positional N [RATE] after the harness's options.
    rest = [a for a in sys.argv[1:] if a.isdigit()]
    sys.argv = [a for a in sys.argv if not a.isdigit()]
    if rest:
        N_BULK = int(rest[0])
    if len(rest) > 1:
        RATE = int(rest[1])
    dtest.TEST_TIMEOUT_S = int(N_BULK / (RATE * 0.5) * 1.5) + 600
    dtest.main()
