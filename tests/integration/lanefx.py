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
count, any other one CLEAN. It serves HIBP's two corpora at one path, as
HIBP does: /range/PREFIX a SHA-1 body, /range/PREFIX?mode=ntlm an NT hash
body (27-digit suffixes).

run_audit() is the same scenario with `breachctl audit` as the bulk client:
a pwdump file of accounts, each with an NT hash in a prefix of its own (half
in the range, half not), some with the empty password, some machine
accounts and some without an NT hash; the audit asks for the bulk lane
itself (docs/audit.md). The interactive checks alternate PW (the SHA-1
upstream) and NT (the audit's own upstream, where the lanes share the rate
and the slots) in new prefixes.
"""
import json
import os
import random
import subprocess
import threading
import time

import dtest
from dtest import check, eq
from ntfx import EMPTY_NT

LM_EMPTY = "aad3b435b51404eeaad3b435b51404ee"
NO_PW = "NO PASSWORD*********************"

SUFFIXES = 64  # lines in the mirror's range body


percentile = dtest.percentile


class Mirror:
    def __init__(self, ctx, seed=2026, name="mirror", nginx_name="nginx"):
        rng = random.Random(seed)
        self.counts = {}  # SHA-1 suffix (35 hex digits): count
        while len(self.counts) < SUFFIXES:
            self.counts["%035X" % rng.getrandbits(140)] = rng.randint(1, 100000)
        self.nt_counts = {}  # NT hash suffix (27 hex digits): count
        while len(self.nt_counts) < SUFFIXES:
            self.nt_counts["%027X" % rng.getrandbits(108)] = rng.randint(1, 100000)
        d = ctx.path(name)
        os.makedirs(d, exist_ok=True)
        for fn, counts in (("range.txt", self.counts), ("rangentlm.txt", self.nt_counts)):
            with open(os.path.join(d, fn), "w", newline="") as f:
                f.write("".join("%s:%d\r\n" % kv for kv in counts.items()))
        # /range/P: range.txt; /range/P?mode=ntlm: rangentlm.txt
        self.port = dtest.nginx(ctx, nginx_name, "location /range/ { root %s; "
                                "try_files /range$arg_mode.txt =404; }" % d)
        self.suffixes = sorted(self.counts)
        self.nt_suffixes = sorted(self.nt_counts)
        self.rng = rng

    def hashes(self, prefixes, nt=False):
        """One hash per prefix (a SHA-1, or an NT hash with nt), half of them
        in the range (PWNED), and the answer each must get."""
        counts, suffixes = (self.nt_counts, self.nt_suffixes) if nt else (self.counts,
                                                                         self.suffixes)
        bits = 108 if nt else 140
        out = []
        for i, p in enumerate(prefixes):
            if i % 2 == 0:
                suf = suffixes[i % len(suffixes)]
                out.append(("%05X%s" % (p, suf), "PWNED %d" % counts[suf]))
            else:
                while True:
                    suf = "%0*X" % (bits // 4, self.rng.getrandbits(bits))
                    if suf not in counts:
                        break
                out.append(("%05X%s" % (p, suf), "CLEAN"))
        return out

    def audit_file(self, path, n_accounts, prefixes, empty_every=40, machine_every=100,
                   nohash_every=500):
        """A pwdump file of n_accounts accounts: one in empty_every with the
        empty password, the others (n_accounts - n_accounts // empty_every of
        them, the length of prefixes) with an NT hash in a prefix of its own;
        plus a machine account after every machine_every accounts and one
        without an NT hash after every nohash_every. Returns the report
        breachctl audit must print (its lines, the summary)."""
        checks = self.hashes(prefixes, nt=True)
        check(len(checks) == n_accounts - n_accounts // empty_every, "prefixes for the accounts")
        lines, want = [], []
        n = {"pwned": 0, "clean": 0, "empty": 0, "machines": 0, "no_hash": 0}
        for i in range(n_accounts):
            name = "user%05d" % i
            if i % empty_every == empty_every - 1:
                h, ans = EMPTY_NT, "EMPTY"
            else:
                h, ans = checks.pop()
            lines.append("%s:%d:%s:%s:::" % (name, 1000 + i, LM_EMPTY, h))
            want.append("%s %s" % (name, ans))
            n[ans.split()[0].lower()] += 1
            if (i + 1) % machine_every == 0:
                lines.append("WS%05d$:%d:%s:%032X:::" % (i, 500000 + i, LM_EMPTY,
                                                         self.rng.getrandbits(128)))
                n["machines"] += 1
            if (i + 1) % nohash_every == 0:
                lines.append("svc%05d:%d:%s:%s:::" % (i, 700000 + i, NO_PW, NO_PW))
                n["no_hash"] += 1
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        want.append("summary: accounts=%d pwned=%d clean=%d unknown=0 empty=%d errors=0 "
                    "machines_skipped=%d no_hash=%d" % (n_accounts, n["pwned"], n["clean"],
                                                        n["empty"], n["machines"], n["no_hash"]))
        return want


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
    """Interactive checks, one at a time, at most pace per second: PW for a
    SHA-1, NT for an NT hash. Each latency goes into the samples list and
    into by_verb[VERB] (when the caller passes the dict)."""

    def __init__(self, daemon, checks, pace, keep_going=False):
        self.cl = daemon.client(timeout=30)
        self.checks = iter(checks)
        self.gap = 1.0 / pace
        self.n = 0
        self.keep_going = keep_going  # count wrong answers (verify()) instead of failing at once
        self.unknown = {}  # verb: UNKNOWN answers
        self.wrong = []  # (request id, answer, wanted)
        self.log = []  # (start, verb, seconds), start in time.monotonic()

    def probe(self, samples, by_verb=None):
        h, want = next(self.checks)
        verb = "NT" if len(h) == 32 else "PW"
        rid = "i%d" % self.n
        self.n += 1
        t0 = time.monotonic()
        ans = self.cl.ask("%s %s %s" % (rid, verb, h))
        dt = time.monotonic() - t0
        if ans != "%s %s" % (rid, want):
            if not self.keep_going:
                eq(ans, "%s %s" % (rid, want), "interactive %s check" % verb)
            self.wrong.append((rid, ans, want))
            if ans.startswith(rid + " UNKNOWN"):
                self.unknown[verb] = self.unknown.get(verb, 0) + 1
        samples.append(dt)
        self.log.append((t0, verb, dt))
        if by_verb is not None:
            by_verb.setdefault(verb, []).append(dt)
        time.sleep(max(0.0, self.gap - dt))

    def run(self, samples, n=None, until=None, by_verb=None):
        while (n is None or len(samples) < n) and (until is None or not until()):
            self.probe(samples, by_verb)

    def verify(self):
        check(not self.wrong, "%d interactive answers wrong (UNKNOWN: %r), the first %r"
              % (len(self.wrong), self.unknown, self.wrong[:5]))


class Audit(threading.Thread):
    """breachctl audit of a pwdump file through the daemon's socket (it asks
    for the bulk lane itself); its report and messages go to files."""

    def __init__(self, ctx, daemon, path, name, timeout):
        super().__init__(daemon=True)
        self.argv = [dtest.ARGS.breachctl, "--socket", daemon.sock, "audit", "--format", "pwdump",
                     path]
        self.out, self.err = ctx.path(name + ".out"), ctx.path(name + ".err")
        self.timeout = timeout
        self.rc = self.error = self.t0 = self.t1 = None

    def run(self):
        try:
            with open(self.out, "w") as out, open(self.err, "w") as err:
                self.t0 = time.monotonic()
                self.rc = subprocess.run(self.argv, stdout=out, stderr=err, env=dtest.base_env(),
                                         timeout=self.timeout).returncode
                self.t1 = time.monotonic()
        except BaseException as e:  # noqa: B902 - reported by the main thread
            self.error = e

    def seconds(self):
        return self.t1 - self.t0

    def lines(self):
        with open(self.out) as f:
            return f.read().splitlines()

    def verify(self, want):
        """Every line of the report as wanted (no UNKNOWN), exit status 1
        (pwned and empty accounts), nothing on standard error (so the bulk
        lane was accepted); returns the summary line."""
        if self.error:
            raise self.error
        got = self.lines()
        with open(self.err) as f:
            err = f.read()
        unknown = sum(1 for ln in got if " UNKNOWN " in ln or ln.endswith(" UNKNOWN"))
        eq(unknown, 0, "audit lines UNKNOWN")
        bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
        check(not bad, "audit report: %d lines differ, the first %r" % (len(bad), bad[:3]))
        eq(len(got), len(want), "lines of the audit report")
        eq(self.rc, 1, "audit exit status (stderr %r)" % err[-500:])
        eq(err, "", "audit standard error")
        return got[-1]


def run(ctx, n_bulk, rate, pace, n_unloaded, assert_p99=True, slack_s=0.020, report=print):
    """The scenario; returns its figures. Asserts: the bulk run ends with
    every answer right and none UNKNOWN, no faster than bulk_share allows;
    no interactive check answers UNKNOWN or wrong (were bulk checks served
    first, interactive ones would wait behind the whole bulk queue and time
    out); with assert_p99 (benchmarks), the loaded p99 is within 2x the
    unloaded p99 (plus slack_s of noise on a shared machine)."""
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
    if assert_p99:
        check(p99_l <= 2 * p99_u + slack_s,
              "interactive p99 %.2f ms during the bulk run, unloaded %.2f ms: over 2x + %.0f ms" % (
                  1e3 * p99_l, 1e3 * p99_u, 1e3 * slack_s))
    return fig


def run_audit(ctx, n_accounts, rate, pace, n_unloaded, assert_p99=True, slack_s=0.020,
              report=print, log_level="notice", control=False):
    """The scenario with breachctl audit as the bulk client: n_accounts
    accounts (one in 40 with the empty password, the others each in a range
    of its own) plus machine accounts and accounts without an NT hash;
    interactive PW and NT checks in new prefixes, alternating, one at a
    time at pace per second, before, during and after the audit. Then the
    same audit again (warm cache). Returns the figures. Asserts: both audits
    report every account right, none UNKNOWN, exit status 1; no interactive
    check answers UNKNOWN or wrong; no faster than bulk_share allows; with
    assert_p99, the loaded p99 of the PW checks within 2x the unloaded one
    (plus slack_s). Wrong interactive answers are counted, reported and
    fail the run at its end.

    control: a second, idle breachd with its own nginx, probed the same way
    at the same time as the audit runs: the machine's own noise in the same
    minutes (reported, not asserted). Every probe's start and latency go to
    ctx's probes.json."""
    m = Mirror(ctx)
    conf = ctx.config(
        daemon={"log_level": log_level},
        passwords={"filter": "", "upstream": "http://127.0.0.1:%d/range/{prefix}" % m.port},
        ntlm={"filter": "", "upstream": "http://127.0.0.1:%d/range/{prefix}?mode=ntlm" % m.port},
        upstream={"rate": str(rate)})
    d = ctx.daemon(conf)
    rng = random.Random(17)
    n_fetch = n_accounts - n_accounts // 40
    # enough for the unloaded runs and an audit three times (SLOW: valgrind) as
    # long as its share of the rate allows
    n_probe = 2 * n_unloaded + int(pace * n_fetch / (rate * 0.5) * 3 * dtest.SLOW) + 200
    prefixes = rng.sample(range(1 << 20), n_fetch)
    nt_probe = m.hashes(rng.sample(range(1 << 20), n_probe // 2 + 1), nt=True)
    pw_probe = m.hashes(rng.sample(range(1 << 20), n_probe // 2 + 1))
    # NT probe prefixes must be new to the audit too (its prefixes are cached)
    taken = set(prefixes)
    nt_probe = [c for c in nt_probe if int(c[0][:5], 16) not in taken]
    probe_checks = [c for pair in zip(pw_probe, nt_probe) for c in pair]
    path = ctx.path("accounts.pwdump")
    want = m.audit_file(path, n_accounts, prefixes)
    prober = Prober(d, probe_checks, pace, keep_going=True)

    before, loaded, after = [], [], []
    vb_before, vb_loaded, vb_after = {}, {}, {}
    prober.run([], n=6)  # warm up: nginx's keep-alive connections, the cache's first writes
    prober.run(before, n=n_unloaded, by_verb=vb_before)
    st0 = d.stats()
    ctl_prober, ctl_samples, vb_ctl, ctl_thread = None, [], {}, None
    if control:
        cm = Mirror(ctx, seed=2027, name="mirror-control", nginx_name="nginx-control")
        cconf = ctx.config(
            name="control.conf", socket_path=ctx.path("control.sock"),
            daemon={"log_level": log_level},
            passwords={"filter": "", "upstream": "http://127.0.0.1:%d/range/{prefix}" % cm.port},
            ntlm={"filter": "",
                  "upstream": "http://127.0.0.1:%d/range/{prefix}?mode=ntlm" % cm.port},
            cache={"path": ctx.path("control-cache")}, upstream={"rate": str(rate)})
        cd = ctx.daemon(cconf)
        crng = random.Random(18)
        n_c = int(pace * n_fetch / (rate * 0.5) * 3 * dtest.SLOW) + 200
        cchecks = [c for pair in zip(cm.hashes(crng.sample(range(1 << 20), n_c)),
                                     cm.hashes(crng.sample(range(1 << 20), n_c), nt=True))
                   for c in pair]
        ctl_prober = Prober(cd, cchecks, pace, keep_going=True)
        ctl_prober.run([], n=6)
    cold = Audit(ctx, d, path, "cold", timeout=n_fetch / (rate * 0.5) * 3 + 120)
    cold.start()
    if control:
        ctl_thread = threading.Thread(target=ctl_prober.run, args=(ctl_samples,), daemon=True,
                                      kwargs={"until": lambda: not cold.is_alive(),
                                              "by_verb": vb_ctl})
        ctl_thread.start()
    prober.run(loaded, until=lambda: not cold.is_alive(), by_verb=vb_loaded)
    cold.join()
    if ctl_thread:
        ctl_thread.join()
        ctl_prober.cl.close()
    st1 = d.stats()
    prober.run(after, n=max(2, n_unloaded // 2), by_verb=vb_after)
    warm = Audit(ctx, d, path, "warm", timeout=600)  # the same accounts: every range cached
    warm.start()
    warm.join()
    st = d.stats()
    prober.cl.close()
    d.stop_ok()

    with open(ctx.path("probes.json"), "w") as f:
        json.dump({"audit": [cold.t0, cold.t1], "probes": prober.log,
                   "control": ctl_prober.log if control else []}, f)

    # the figures first, then the checks
    got = cold.lines()
    fig = {
        "accounts": n_accounts, "fetches": n_fetch, "rate": rate,
        "audit_seconds": cold.seconds(), "audit_per_s": n_accounts / cold.seconds(),
        "warm_seconds": warm.seconds(), "warm_per_s": n_accounts / warm.seconds(),
        "audit_rc": cold.rc, "summary": got[-1] if got else "",
        "audit_unknown": sum(1 for ln in got if " UNKNOWN" in ln and not ln.startswith("summary")),
        "pw_unknown": prober.unknown.get("PW", 0), "nt_unknown": prober.unknown.get("NT", 0),
        "interactive_wrong": len(prober.wrong),
    }
    for verb in ("PW", "NT"):
        b = vb_before.get(verb, []) + vb_after.get(verb, [])
        ld = vb_loaded.get(verb, [])
        v = verb.lower()
        fig.update({
            v + "_unloaded_n": len(b), v + "_loaded_n": len(ld),
            v + "_unloaded_p50_ms": 1e3 * percentile(b, 0.5),
            v + "_unloaded_p99_ms": 1e3 * percentile(b, 0.99),
            v + "_loaded_p50_ms": 1e3 * percentile(ld, 0.5),
            v + "_loaded_p99_ms": 1e3 * percentile(ld, 0.99),
            v + "_loaded_max_ms": 1e3 * max(ld) if ld else float("nan"),
        })
        fig[v + "_p99_ratio"] = fig[v + "_loaded_p99_ms"] / fig[v + "_unloaded_p99_ms"]
    if control:
        for verb in ("PW", "NT"):
            c = vb_ctl.get(verb, [])
            v = "control_" + verb.lower()
            fig.update({v + "_n": len(c), v + "_p50_ms": 1e3 * percentile(c, 0.5),
                        v + "_p99_ms": 1e3 * percentile(c, 0.99),
                        v + "_max_ms": 1e3 * max(c) if c else float("nan"),
                        v + "_unknown": ctl_prober.unknown.get(verb, 0)})
            fig[verb.lower() + "_p99_ratio_control"] = (fig[verb.lower() + "_loaded_p99_ms"]
                                                        / fig[v + "_p99_ms"])
            report(("control %s (an idle breachd, the same minutes): p50 %%(%s_p50_ms).2f ms "
                    "p99 %%(%s_p99_ms).2f ms max %%(%s_max_ms).2f ms (n=%%(%s_n)d), "
                    "%%(%s_unknown)d UNKNOWN; during the audit / control p99 %%(%s)0.2f")
                   % (verb, v, v, v, v, v, verb.lower() + "_p99_ratio_control") % fig)
    report("interactive answers wrong: %d (UNKNOWN: PW %d, NT %d)%s" % (
        len(prober.wrong), fig["pw_unknown"], fig["nt_unknown"],
        "".join("; %s %s, want %s" % w for w in prober.wrong[:10])))
    report("audit: %(accounts)d accounts (%(fetches)d ranges) at rate=%(rate)d in "
           "%(audit_seconds).1f s = %(audit_per_s).1f accounts/s (cold cache), exit %(audit_rc)s; "
           "warm: %(warm_seconds).2f s = %(warm_per_s).0f accounts/s" % fig)
    report("audit: %(audit_unknown)d UNKNOWN; %(summary)s" % fig)
    for v in ("pw", "nt"):
        report(("interactive %s: unloaded p50 %%(%s_unloaded_p50_ms).2f ms p99 "
                "%%(%s_unloaded_p99_ms).2f ms (n=%%(%s_unloaded_n)d); during the audit p50 "
                "%%(%s_loaded_p50_ms).2f ms p99 %%(%s_loaded_p99_ms).2f ms max "
                "%%(%s_loaded_max_ms).2f ms (n=%%(%s_loaded_n)d); p99 ratio %%(%s_p99_ratio).2f; "
                "%%(%s_unknown)d UNKNOWN") % ((v.upper(),) + (v,) * 9) % fig)

    summary = cold.verify(want)
    prober.verify()
    eq(warm.verify(want), summary, "summary of the warm audit")
    eq(st["pw_unknown"], 0, "pw_unknown")
    eq(st["nt_unknown"], 0, "nt_unknown")
    eq(st["bulk_queue_depth"], 0, "bulk_queue_depth")
    eq(st["upstream_promoted"], 0, "upstream_promoted (no prefix is shared)")
    eq(st["upstream_rate_limited"], 0, "upstream_rate_limited")
    eq(st1["nt_upstream_fetches"] - st0["nt_upstream_fetches"],
       n_fetch + len(vb_loaded.get("NT", ())), "NT range fetches during the audit")
    burst = min(16, rate)
    floor_s = (n_fetch - burst * 0.5) / (rate * 0.5)
    check(cold.seconds() >= 0.9 * floor_s, "the audit took %.1f s, under its share's %.1f s"
          % (cold.seconds(), floor_s))
    check(len(loaded) >= 20, "only %d interactive checks during the audit" % len(loaded))
    if assert_p99:
        p99_u = percentile(vb_before["PW"] + vb_after["PW"], 0.99)
        p99_l = percentile(vb_loaded["PW"], 0.99)
        check(p99_l <= 2 * p99_u + slack_s,
              "interactive PW p99 %.2f ms during the audit, unloaded %.2f ms: over 2x + %.0f ms"
              % (1e3 * p99_l, 1e3 * p99_u, 1e3 * slack_s))
    return fig
