# SPDX-License-Identifier: MIT
"""The bulk-lane scenario of docs/upstream.md "Lanes", shared by
test_daemon_lane.py (a CI-sized run) and tests/bench/bench_lane.py (the
20,000-account run): a real breachd in front of an nginx mirror, a bulk
client sending N checks in distinct prefixes at once on one connection, and
interactive checks in new prefixes, one at a time at a steady pace, before
(unloaded), during (loaded) and after (unloaded) the bulk run. Every answer
is checked against the mirror; latencies are measured in the same run.

The mirror serves one range body for every prefix (nginx try_files), so the
answers are known: a hash whose suffix is in the body is PWNED with its
count, any other one CLEAN.
"""
import os
import random
import threading
import time

import dtest
from dtest import check, eq

SUFFIXES = 64  # lines in the mirror's range body


def percentile(xs, q):
    """The q-quantile (0..1) of xs, nearest rank."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(q * len(s) + 0.5)) - 1))
    return s[k]


class Mirror:
    def __init__(self, ctx, seed=2026):
        rng = random.Random(seed)
        self.counts = {}
        while len(self.counts) < SUFFIXES:
            self.counts["%035X" % rng.getrandbits(140)] = rng.randint(1, 100000)
        d = ctx.path("mirror")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "range.txt"), "w", newline="") as f:
            f.write("".join("%s:%d\r\n" % kv for kv in self.counts.items()))
        self.port = ctx.nginx(d, location="location /range/ { root %s; try_files /range.txt =404; }"
                              % d)
        self.suffixes = sorted(self.counts)
        self.rng = rng

    def hashes(self, prefixes):
        """One hash per prefix, half of them in the range (PWNED), and the
        answer each must get."""
        out = []
        for i, p in enumerate(prefixes):
            if i % 2 == 0:
                suf = self.suffixes[i % len(self.suffixes)]
                out.append(("%05X%s" % (p, suf), "PWNED %d" % self.counts[suf]))
            else:
                while True:
                    suf = "%035X" % self.rng.getrandbits(140)
                    if suf not in self.counts:
                        break
                out.append(("%05X%s" % (p, suf), "CLEAN"))
        return out


class Bulk(threading.Thread):
    """One bulk connection: LANE bulk, then every check at once; answers
    collected by id."""

    def __init__(self, daemon, checks, timeout):
        super().__init__(daemon=True)
        self.cl = daemon.client(timeout=timeout)
        self.checks = checks
        self.answers = {}
        self.error = None
        self.t0 = self.t1 = None

    def run(self):
        try:
            eq(self.cl.ask("lane LANE bulk"), "lane OK", "LANE bulk")
            self.t0 = time.monotonic()
            self.cl.send("".join("b%d PW %s\n" % (i, h) for i, (h, _) in enumerate(self.checks)))
            while len(self.answers) < len(self.checks):
                ln = self.cl.line()
                check(ln is not None, "bulk connection closed after %d answers" % len(self.answers))
                rid, _, rest = ln.partition(" ")
                self.answers[rid] = rest
            self.t1 = time.monotonic()
        except BaseException as e:  # noqa: B902 - reported by the main thread
            self.error = e
        finally:
            self.cl.close()

    def verify(self):
        if self.error:
            raise self.error
        unknown = sum(1 for a in self.answers.values() if a.startswith("UNKNOWN"))
        eq(unknown, 0, "bulk checks answered UNKNOWN")
        for i, (_, want) in enumerate(self.checks):
            eq(self.answers.get("b%d" % i), want, "bulk check %d" % i)


class Prober:
    """Interactive checks, one at a time, at most pace per second."""

    def __init__(self, daemon, checks, pace):
        self.cl = daemon.client(timeout=30)
        self.checks = iter(checks)
        self.gap = 1.0 / pace
        self.n = 0

    def probe(self, samples):
        h, want = next(self.checks)
        rid = "i%d" % self.n
        self.n += 1
        t0 = time.monotonic()
        ans = self.cl.ask("%s PW %s" % (rid, h))
        dt = time.monotonic() - t0
        eq(ans, "%s %s" % (rid, want), "interactive check")
        samples.append(dt)
        time.sleep(max(0.0, self.gap - dt))

    def run(self, samples, n=None, until=None):
        while (n is None or len(samples) < n) and (until is None or not until()):
            self.probe(samples)


def run(ctx, n_bulk, rate, pace, n_unloaded, slack_s=0.020, report=print):
    """The scenario; returns its figures. Asserts: the bulk run ends with
    every answer right and none UNKNOWN, no faster than bulk_share allows;
    no interactive check answers UNKNOWN or wrong; the loaded p99 is within
    2x the unloaded p99 (plus slack_s of noise on a shared machine)."""
    m = Mirror(ctx)
    conf = ctx.config(
        daemon={"log_level": "notice"},
        passwords={"filter": "", "upstream": "http://127.0.0.1:%d/range/{prefix}" % m.port},
        upstream={"rate": str(rate)})
    d = ctx.daemon(conf)
    rng = random.Random(16)
    prefixes = rng.sample(range(1 << 20), n_bulk + 2 * n_unloaded + int(pace * n_bulk / rate * 4)
                          + 100)
    bulk_checks = m.hashes(prefixes[:n_bulk])
    probe_checks = m.hashes(prefixes[n_bulk:])
    prober = Prober(d, probe_checks, pace)

    before, loaded, after = [], [], []
    prober.run([], n=5)  # warm up: nginx's keep-alive connection, the cache's first writes
    prober.run(before, n=n_unloaded)
    bulk = Bulk(d, bulk_checks, timeout=600)
    bulk.start()
    prober.run(loaded, until=lambda: not bulk.is_alive())
    bulk.join()
    bulk.verify()
    prober.run(after, n=max(1, n_unloaded // 2))

    # the same accounts again: every answer from the cache
    warm = Bulk(d, bulk_checks, timeout=600)
    warm.start()
    warm.join()
    warm.verify()

    st = d.stats()
    eq(st["pw_unknown"], 0, "pw_unknown")
    eq(st["bulk_queue_depth"], 0, "bulk_queue_depth")
    eq(st["upstream_promoted"], 0, "upstream_promoted (no prefix is shared)")
    eq(st["upstream_rate_limited"], 0, "upstream_rate_limited")
    prober.cl.close()
    d.stop_ok()

    took = bulk.t1 - bulk.t0
    share = 0.5
    bulk_rate = n_bulk / took
    base = before + after
    fig = {
        "bulk": n_bulk, "rate": rate, "bulk_seconds": took, "bulk_per_s": bulk_rate,
        "warm_per_s": n_bulk / (warm.t1 - warm.t0),
        "unloaded_n": len(base), "loaded_n": len(loaded),
        "unloaded_p50_ms": 1e3 * percentile(base, 0.5), "unloaded_p99_ms": 1e3 * percentile(base, 0.99),
        "loaded_p50_ms": 1e3 * percentile(loaded, 0.5), "loaded_p99_ms": 1e3 * percentile(loaded, 0.99),
        "loaded_max_ms": 1e3 * max(loaded) if loaded else float("nan"),
    }
    fig["p99_ratio"] = fig["loaded_p99_ms"] / fig["unloaded_p99_ms"]
    report("bulk: %(bulk)d checks at rate=%(rate)d in %(bulk_seconds).1f s = %(bulk_per_s).1f/s "
           "(cold cache); %(warm_per_s).0f/s warm" % fig)
    report("interactive: unloaded p50 %(unloaded_p50_ms).2f ms p99 %(unloaded_p99_ms).2f ms "
           "(n=%(unloaded_n)d); during bulk p50 %(loaded_p50_ms).2f ms p99 %(loaded_p99_ms).2f ms "
           "max %(loaded_max_ms).2f ms (n=%(loaded_n)d); p99 ratio %(p99_ratio).2f" % fig)

    # bulk_share of the rate, no more (its bucket starts with burst * share tokens)
    burst = min(16, rate)
    floor_s = (n_bulk - burst * share) / (rate * share)
    check(took >= 0.9 * floor_s, "the bulk run took %.1f s, under its share's %.1f s" % (took,
                                                                                        floor_s))
    check(len(loaded) >= 20, "only %d interactive checks during the bulk run" % len(loaded))
    p99_u, p99_l = percentile(base, 0.99), percentile(loaded, 0.99)
    check(p99_l <= 2 * p99_u + slack_s,
          "interactive p99 %.2f ms during the bulk run, unloaded %.2f ms: over 2x + %.0f ms" % (
              1e3 * p99_l, 1e3 * p99_u, 1e3 * slack_s))
    return fig
