#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Old vs new URL canonicalization and e-mail rule, on the test suite's feed
fixtures: which URLs get other lookup expressions.

    tests/bench/url-exprs-compare.py OLD_BREACHCTL NEW_BREACHCTL [STREAM]

Feeds: every fixture of tests/integration/feedfx.py (one per input format),
data/fixtures/*.feed and data/demo/make-feeds' output. Each is built by both
(`filter build --skip-bad`: status, keys, duplicates, bad lines compared);
then every feed line, every URL feedfx says is blocked or safe and every
line of tests/fuzz/corpus/url goes through `url-expressions` of both, and
the lines whose expressions or status differ are listed (the first 40).
STREAM (one URL a line, e.g. `bench_url --emit DIR`'s stream.txt) is
compared too, by count only. Build the old breachctl from the old commit
(e.g. `git worktree add`, or a checkout of lib/url into a second build).
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import feedfx  # noqa: E402

CHUNK = 500


def feeds(out):
    """(path, format arguments) of every feed fixture, written into out."""
    feedfx.write_all(out)
    fs = [(f.path, f.format_args()) for f in feedfx.FIXTURES]
    fs += [(p, []) for p in sorted(glob.glob(SRC + "/data/fixtures/*.feed"))]
    subprocess.run([sys.executable, SRC + "/data/demo/make-feeds", out + "/demo"], check=True,
                   capture_output=True)
    return fs + [(p, []) for p in sorted(glob.glob(out + "/demo/*"))]


def build(ctl, path, args, out):
    """filter build: (status, error text, (keys, duplicates, bad lines))."""
    o = os.path.join(out, "f.bbf")
    if os.path.exists(o):
        os.unlink(o)
    r = subprocess.run([ctl, "filter", "build", "--kind", "url-sha256", "--output", o,
                        "--input", path, "--generation", "1", "--skip-bad", "--max-bad", "1000"]
                       + args, capture_output=True, text=True)
    m = re.search(r"(\d+) keys \((\d+) duplicates.*?(\d+) bad lines", r.stderr)
    return r.returncode, r.stderr.strip()[-300:] if r.returncode else "", m and m.groups()


def one(ctl, u):
    r = subprocess.run([ctl, "url-expressions", u], capture_output=True)
    return r.returncode, r.stdout


def exprs(ctl, urls):
    """Expression groups of urls, by one url-expressions run (a refused URL
    has an empty group)."""
    r = subprocess.run([ctl, "url-expressions"], input="\n".join(urls) + "\n",
                       capture_output=True, text=True)
    return r.stdout.split("\n\n")[:len(urls)]


def test_urls(fs):
    urls = []
    for path, _ in fs:
        with open(path, encoding="utf-8", errors="replace") as f:
            urls += [ln.strip().lstrip("\ufeff") for ln in f]
    urls = [u for u in urls if u and not u.startswith(("#", "!", ";"))]
    for f in feedfx.FIXTURES:
        urls += list(f.blocked) + list(f.safe)
    for p in glob.glob(SRC + "/tests/fuzz/corpus/url/*"):
        with open(p, "rb") as f:
            urls += [x for x in f.read().decode("utf-8", "replace").split("\n") if x]
    return [u for u in urls if "\0" not in u]


def compare(old, new, urls):
    """The URLs whose expressions or status differ: in chunks where the
    groups line up (printable URLs, none refused), else one by one."""
    def clean(u):
        return all(0x20 < ord(c) < 0x7f or ord(c) > 0xa0 for c in u)
    single = [u for u in urls if not clean(u)]
    batch = [u for u in urls if clean(u)]
    diff = []
    for k in range(0, len(batch), CHUNK):
        chunk = batch[k:k + CHUNK]
        go, gn = exprs(old, chunk), exprs(new, chunk)
        if len(go) == len(gn) == len(chunk) and "" not in go + gn:
            diff += [(u, a, b) for u, a, b in zip(chunk, go, gn) if a != b]
        else:
            single += chunk
    d = [(u, one(old, u), one(new, u)) for u in single]
    return diff + [x for x in d if x[1] != x[2]]


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    old, new = sys.argv[1], sys.argv[2]
    out = tempfile.mkdtemp(prefix="url-exprs-compare.")
    try:
        fs = feeds(out)
        print("== filter build per feed: status, keys, duplicates, bad lines")
        for path, args in fs:
            a, b = build(old, path, args, out), build(new, path, args, out)
            same = a[0] == b[0] and a[2] == b[2]
            print("%-32s rc %d/%d %s" % (os.path.basename(path), a[0], b[0], "same" if same else
                                         "DIFFERENT old=%r new=%r" % (a, b)), flush=True)
        urls = test_urls(fs)
        diff = compare(old, new, urls)
        print("== url-expressions: %d feed lines and test URLs, %d with other expressions or "
              "status" % (len(urls), len(diff)))
        for u, a, b in diff[:40]:
            print("  %r\n    old %r\n    new %r" % (u[:100], a, b))
        if len(sys.argv) == 4:
            with open(sys.argv[3]) as f:
                stream = [x.strip() for x in f if x.strip()]
            n = len(compare(old, new, stream))
            print("== url-expressions, %s: %d URLs, %d differ" % (sys.argv[3], len(stream), n))
    finally:
        shutil.rmtree(out)


if __name__ == "__main__":
    main()
