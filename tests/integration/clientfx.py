# SPDX-License-Identifier: MIT
"""Shared fixture of the breachctl / client library tests:
test_client.py, test_client_password.py, test_client_faults.py.

Built once per test program under dtest.ROOT (its own mkdtemp() directory):
a small password filter with --fp-bits 32 over KNOWN and a few "lost"
passwords, a file:// mirror with the ranges of KNOWN only (so the lost ones
are UNKNOWN upstream-error), a URL filter with its range mirror minus the
range of one URL. start() runs a real breachd on them in the test's
directory; ctl() runs breachctl and rejects sanitizer reports; the check
helpers below are shared. Standard library only; dtest.py is the harness.
"""
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, sha1hex  # noqa: E402

# Passwords of the test corpus and their counts; "Tr0ub4dor&3" is the one
# typed at the terminal.
KNOWN = {"password": 3861493, "123456": 37359195, "Tr0ub4dor&3": 4242, "letmein": 577,
         "hunter2": 23}
KNOWN.update({"pwned-%04d" % i: i + 1 for i in range(300)})
HIT = "00000000000000000000000000000000001"  # in every faultserver range: count 42
_FX = {}


class Fixture:
    """Built once: pw.bfuse (every KNOWN and LOST password), a mirror with
    the ranges of KNOWN only (so LOST ones are UNKNOWN upstream-error), a URL
    filter with its range mirror minus the range of LOST_URL."""

    def __init__(self, d):
        os.makedirs(d)
        self.dir = d
        rng = random.Random(6)
        self.lost = dtest.passwords_in_new_ranges(KNOWN, "lost-range", 3)
        corpus = os.path.join(d, "corpus.txt")
        with open(corpus, "w") as f:
            for p, n in KNOWN.items():
                f.write("%s:%d\n" % (sha1hex(p), n))
            for p in self.lost:
                f.write("%s:%d\n" % (sha1hex(p), 99))
        self.mirror = os.path.join(d, "mirror")
        dtest.write_range(self.mirror, {sha1hex(p): n for p, n in KNOWN.items()})
        self.filter = os.path.join(d, "pw.bfuse")
        run_ok([dtest.ARGS.breachctl, "filter", "build", "--kind", "password-sha1", "--input",
                corpus, "--output", self.filter, "--fp-bits", "32"])
        # Clean passwords: random, not in the corpus (a 2^-32 false positive aside).
        self.clean = ["clean-%016x" % rng.getrandbits(64) for _ in range(50)]
        # URLs.
        self.url_blocked = {"http://evil.example.com/login": ("phishing", "evil.example.com/login"),
                            "http://malware.example/dl/x.exe": ("malware", "malware.example/")}
        self.url_lost = "http://lost.example.net/x"
        feeds = []
        for name, lines, cat in [("phish.txt", ["http://evil.example.com/login"], "phishing"),
                                 ("mal.txt", ["malware.example"], "malware"),
                                 ("lost.txt", ["http://lost.example.net/x"], "lost")]:
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            feeds += ["--input", "%s=%s" % (path, cat)]
        self.url_filter = os.path.join(d, "url.bbf")
        self.url_ranges = os.path.join(d, "url-ranges")
        run_ok([dtest.ARGS.breachctl, "filter", "build", "--kind", "url-sha256", "--output",
                self.url_filter, "--ranges-dir", self.url_ranges, "--fpr", "1e-9"] + feeds)
        import hashlib
        lost_key = hashlib.sha256(b"lost.example.net/x").hexdigest().upper()
        others = {hashlib.sha256(e.encode()).hexdigest().upper()[:5]
                  for e in ("evil.example.com/login", "malware.example/")}
        check(lost_key[:5] not in others, "unlucky: URL range prefixes collide")
        os.unlink(os.path.join(self.url_ranges, lost_key[:5] + ".txt"))


def run_ok(argv):
    r = subprocess.run(argv, env=dtest.base_env(), capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "%s: exit %d: %s" % (" ".join(argv), r.returncode, r.stderr))
    return r


def fx():
    if "fx" not in _FX:
        _FX["fx"] = Fixture(os.path.join(dtest.ROOT, "fixture"))
    return _FX["fx"]


def start(ctx, upstream=None, env=None, name="breachd.conf", sock=None, **sections):
    f = fx()
    pw = {"filter": f.filter, "upstream": upstream or "file://%s/{prefix}.txt" % f.mirror}
    pw.update(sections.pop("passwords", {}))
    urls = {"filter": f.url_filter, "upstream": "file://%s/{prefix}.txt" % f.url_ranges}
    urls.update(sections.pop("urls", {}))
    cache = {"path": ctx.path(name + ".cache")}
    # The default rate (50 fetches a second) would make the big batch, with
    # its hundreds of ranges, take seconds.
    sections.setdefault("upstream", {}).setdefault("rate", 100000)
    conf = ctx.config(name=name, socket_path=sock, passwords=pw, urls=urls, cache=cache,
                      **sections)
    return ctx.daemon(conf, env=env)


class Run:
    def __init__(self, r, secs):
        self.rc = r.returncode
        self.out = r.stdout
        self.err = r.stderr
        self.lines = r.stdout.splitlines()
        self.secs = secs

    def __repr__(self):
        return "exit %d after %.2fs\n--- stdout:\n%s--- stderr:\n%s" % (
            self.rc, self.secs, self.out[:3000], self.err[:3000])


def ctl(*args, sock=None, stdin=None, env=None, prefix=(), timeout=60):
    """Run breachctl; sock goes in $BREACHD_SOCKET."""
    e = dict(env or {})
    if sock:
        e["BREACHD_SOCKET"] = sock
    t0 = time.monotonic()
    r = subprocess.run(list(prefix) + [dtest.ARGS.breachctl] + list(args), env=dtest.base_env(e),
                       input=stdin if stdin is not None else "", capture_output=True, text=True,
                       timeout=timeout)
    run = Run(r, time.monotonic() - t0)
    no_sanitizer_report(run.err)
    return run


def no_sanitizer_report(err):
    """A sanitizer build reports on stderr; an exit status alone could pass
    (ASan exits 1, which is also "pwned")."""
    check("Sanitizer" not in err and "runtime error:" not in err, "sanitizer report:\n" + err)


def want_rc(r, rc, what):
    check(r.rc == rc, "%s: want exit %d, got %r" % (what, rc, r))


def no_leak(r, secrets):
    for s in secrets:
        check(s not in r.out and s not in r.err, "password %r leaked: %r" % (s, r))


def one_stderr_line(r, *needles):
    lines = r.err.splitlines()
    check(len(lines) == 1, "want one line on stderr: %r" % r)
    for n in needles:
        check(n in lines[0], "%r not in %r" % (n, lines[0]))
    return lines[0]


def expected(pw):
    f = fx()
    if pw in KNOWN:
        return "PWNED %d" % KNOWN[pw]
    if pw in f.lost:
        return "UNKNOWN upstream-error"
    return "CLEAN"
