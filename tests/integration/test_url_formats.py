#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Blocklist input formats end to end.

The fixtures of feedfx.py (AdBlock, dnsmasq, unbound, RPZ, URLhaus CSV,
PhishTank CSV and JSON, generic CSV by column name and number, wildcard
domains; each with a BOM, CRLF, comments, blank lines, mixed case, its
tricky lines and one malformed line) go through `breachctl filter build|add --kind url-sha256`:

  errors:    each malformed line stops a build with FILE:LINE and the reason,
             exit 2, and the old output file is kept;
  detection: every format but generic CSV is auto-detected; skipped rules
             are reported by kind; an undetectable feed names the formats
             tried and the --format values;
  daemon:    one filter and range mirror (file://) from all of them: each
             listed URL, domain and subdomain is BLOCKED with its category
             and expression, each near miss SAFE;
  empty:     0 entries or more than --max-bad bad lines fail (exit 2, old
             output kept), --allow-empty builds an empty filter, which the
             daemon loads with a warning.
  docs:      every --format value (one list, url_feed.h) has its row in
             breachctl(1) INPUT FORMATS and README.md, and a fixture.
  compressed and mixed: every fixture gzip- or bzip2-compressed under a
             name that says nothing, each with its own format
             (--input FEED=CATEGORY:FORMAT) in one build, against a
             --format that fits none of them; the same entries as the plain
             files; a corrupt gzip feed, bzip2 on a pipe and a bad :FORMAT
             fail with a message naming the feed.

Standard library only; the harness is dtest.py.
"""
import bz2
import gzip
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import feedfx  # noqa: E402
from dtest import check, eq, test  # noqa: E402


def ctl(*args):
    return subprocess.run([dtest.ARGS.breachctl] + list(args), env=dtest.base_env(),
                          capture_output=True, text=True, timeout=120)


def fixtures(ctx):
    return feedfx.write_all(ctx.path("feeds"))


def build(ctx, out, inputs, *extra):
    args = ["filter", "build", "--kind", "url-sha256", "--output", out]
    for p, cat in inputs:
        args += ["--input", "%s=%s" % (p, cat)]
    return ctl(*(args + list(extra)))


def keep_file(ctx):
    """An existing output file, to check that a failed build keeps it."""
    src = ctx.path("keep.src")
    with open(src, "w") as f:
        f.write("http://kept.example/\n")
    out = ctx.path("keep.bbf")
    r = build(ctx, out, [(src, "malware")])
    eq(r.returncode, 0, "seed build: " + r.stderr)
    with open(out, "rb") as f:
        return out, f.read()


def still(out, data, what):
    with open(out, "rb") as f:
        check(f.read() == data, "%s: the old output file was replaced" % what)


@test
def malformed_lines_name_file_and_line(ctx):
    out, data = keep_file(ctx)
    for fx in fixtures(ctx):
        extra = fx.format_args() if not fx.detected else []
        r = build(ctx, out, [(fx.path, fx.category)], *extra)
        eq(r.returncode, 2, "%s: exit status (%s)" % (fx.name, r.stderr))
        want = "%s:%d: " % (fx.path, fx.bad[0])
        check(want in r.stderr and fx.bad[1] in r.stderr,
              "%s: want %r and %r in %r" % (fx.name, want, fx.bad[1], r.stderr))
        still(out, data, fx.name)


@test
def formats_detected_and_skips_reported(ctx):
    for fx in fixtures(ctx):
        out = ctx.path(fx.name + ".bbf")
        extra = fx.format_args() if not fx.detected else []
        r = build(ctx, out, [(fx.path, fx.category)], "--skip-bad", "--max-bad", "1", *extra)
        eq(r.returncode, 0, "%s: %s" % (fx.name, r.stderr))
        head = "%s: %s, category %s: %d entries" % (fx.path, fx.fmt, fx.category,
                                                    len(set(e for _, e in fx.blocked.values())))
        check(head in r.stderr, "%s: want %r in %r" % (fx.name, head, r.stderr))
        check("1 bad skipped" in r.stderr, "%s: bad count in %r" % (fx.name, r.stderr))
        for kind, n in fx.skipped.items():
            check("%d %s (first at %s:" % (n, kind, fx.path) in r.stderr,
                  "%s: want '%d %s (first at FILE:LINE)' in %r" % (fx.name, n, kind, r.stderr))
        # the same with the format named
        r2 = build(ctx, out, [(fx.path, fx.category)], "--skip-bad", "--max-bad", "1",
                   *fx.format_args())
        eq(r2.returncode, 0, "%s --format: %s" % (fx.name, r2.stderr))
        check(head in r2.stderr, "%s --format: %r" % (fx.name, r2.stderr))


@test
def undetectable_and_hints(ctx):
    fx = {f.name: f for f in fixtures(ctx)}
    csv = fx["export.csv"]
    r = build(ctx, ctx.path("x.bbf"), [(csv.path, "scam")], "--skip-bad")
    eq(r.returncode, 2, "undetectable CSV: " + r.stderr)
    check("%s: cannot tell the format of this feed (tried " % csv.path in r.stderr, r.stderr)
    check("--format: auto, urls, hosts, domains, adblock, dnsmasq, unbound, rpz, urlhaus, "
          "phishtank, csv, wildcard" in r.stderr, r.stderr)
    check(not os.path.exists(ctx.path("x.bbf")), "output written for an undetectable feed")
    # a CSV read as a URL list: the hint names CSV, not hosts
    r = build(ctx, ctx.path("x.bbf"), [(fx["urlhaus.csv"].path, "malware")], "--format", "urls")
    eq(r.returncode, 2, "CSV as urls")
    check("%s:8: more than one field" % fx["urlhaus.csv"].path in r.stderr, r.stderr)
    check("a CSV file? use --format csv --column N|NAME" in r.stderr, r.stderr)
    check("hosts" not in r.stderr, "hosts suggested for CSV input: " + r.stderr)
    r = build(ctx, ctx.path("x.bbf"), [(csv.path, "scam")], "--format", "csv")
    eq(r.returncode, 2, "csv without --column")
    check("--column" in r.stderr, r.stderr)
    r = build(ctx, ctx.path("x.bbf"), [(csv.path, "scam")], "--format", "csv", "--column", "nope")
    eq(r.returncode, 2, "csv with a missing column name")
    check("%s:3: the header line has no 'nope' column" % csv.path in r.stderr, r.stderr)
    # broken JSON: the line of the fault
    bad_json = ctx.path("broken.json")
    with open(bad_json, "w") as f:
        f.write('[\n {"url": "http://a.example/"},\n {"url": "http://b.example/" x}\n]\n')
    r = build(ctx, ctx.path("x.bbf"), [(bad_json, "phishing")], "--skip-bad")
    eq(r.returncode, 2, "broken JSON")
    check("%s:3: not valid JSON (" % bad_json in r.stderr, r.stderr)


@test
def blocked_and_safe_through_daemon(ctx):
    fx = fixtures(ctx)
    filt, mirror = ctx.path("urls.bbf"), ctx.path("ranges")
    auto = [(f.path, f.category) for f in fx if f.detected]
    r = build(ctx, filt, auto, "--ranges-dir", mirror, "--skip-bad", "--max-bad", "1",
              "--capacity", "1000")
    eq(r.returncode, 0, "build: " + r.stderr)
    for f in fx:
        if f.detected:
            continue
        r = ctl("filter", "add", filt, "--input", "%s=%s" % (f.path, f.category), "--ranges-dir",
                mirror, "--skip-bad", "--max-bad", "1", *f.format_args())
        eq(r.returncode, 0, "add %s: %s" % (f.name, r.stderr))
    d = ctx.daemon(ctx.config(urls={"filter": filt, "upstream": "file://%s/{prefix}.txt" % mirror}))
    cl = d.client()
    n = 0
    for f in fx:
        for url, (cat, expr) in f.blocked.items():
            n += 1
            eq(cl.ask("b%d URL %s" % (n, url)), "b%d BLOCKED %s %s" % (n, cat, expr),
               "%s: %s" % (f.name, url))
        for url in f.safe:
            n += 1
            eq(cl.ask("s%d URL %s" % (n, url)), "s%d SAFE" % n, "%s: %s" % (f.name, url))
    d.stop_ok()


@test
def no_silent_empty_filters(ctx):
    out, data = keep_file(ctx)
    comments = ctx.path("comments.txt")
    with open(comments, "w") as f:
        f.write("# nothing here\n\n   # nor here\n")
    r = build(ctx, out, [(comments, "malware")])
    eq(r.returncode, 2, "0 entries: " + r.stderr)
    check("the feeds hold no entry" in r.stderr and "--allow-empty" in r.stderr, r.stderr)
    still(out, data, "0 entries")
    # everything bad, skipped: too many bad lines (and no entry)
    junk = ctx.path("junk.txt")
    with open(junk, "w") as f:
        f.write("".join("http://bad host %d.example/\n" % i for i in range(50)))
    r = build(ctx, out, [(junk, "malware")], "--skip-bad", "--format", "urls")
    eq(r.returncode, 2, "all bad: " + r.stderr)
    check("50 of 50 entry lines are bad, more than --max-bad allows (0)" in r.stderr, r.stderr)
    still(out, data, "all bad")
    # 2 bad lines in 100: over the default 1%, under --max-bad 2 and 3%
    mixed = ctx.path("mixed.txt")
    with open(mixed, "w") as f:
        f.write("".join("http://h%d.example/\n" % i for i in range(98)))
        f.write("http://bad host.example/\nhttp://bad host2.example/\n")
    r = build(ctx, out, [(mixed, "malware")], "--skip-bad")
    eq(r.returncode, 2, "2%% bad: " + r.stderr)
    check("2 of 100 entry lines are bad, more than --max-bad allows (1)" in r.stderr, r.stderr)
    still(out, data, "2% bad")
    for lim in ("2", "3%"):
        r = build(ctx, ctx.path("m.bbf"), [(mixed, "malware")], "--max-bad", lim)
        eq(r.returncode, 0, "--max-bad %s: %s" % (lim, r.stderr))
    r = build(ctx, ctx.path("m.bbf"), [(mixed, "malware")], "--max-bad", "lots")
    eq(r.returncode, 2, "bad --max-bad")
    # filter add follows the same rules
    r = ctl("filter", "add", out, "--input", comments + "=malware")
    eq(r.returncode, 2, "add 0 entries: " + r.stderr)
    still(out, data, "add 0 entries")
    r = ctl("filter", "add", out, "--input", mixed + "=malware", "--skip-bad")
    eq(r.returncode, 2, "add 2% bad: " + r.stderr)
    still(out, data, "add 2% bad")
    r = ctl("filter", "add", out, "--input", comments + "=malware", "--allow-empty")
    eq(r.returncode, 0, "add --allow-empty: " + r.stderr)
    # --allow-empty: an empty filter, loaded with a warning
    empty = ctx.path("empty.bbf")
    r = build(ctx, empty, [(comments, "malware")], "--allow-empty")
    eq(r.returncode, 0, "--allow-empty: " + r.stderr)
    d = ctx.daemon(ctx.config(urls={"filter": empty, "upstream": "file:///nonexistent/{prefix}"}))
    eq(d.client().ask("e1 URL http://kept.example/"), "e1 SAFE", "empty filter answer")
    d.stop_ok()
    check("[urls] filter %s holds 0 keys" % empty in d.log(), "no warning: " + d.log())


@test
def compressed_and_mixed_formats(ctx):
    fx = [f for f in fixtures(ctx) if f.name != "numbered.csv"]  # one --column for the csv
    args, heads = [], []
    for i, f in enumerate(fx):
        with open(f.path, "rb") as src:
            data = src.read()
        packed = ctx.path("feed-%d.dat" % i)  # nothing in the name says what it is
        with open(packed, "wb") as out:
            out.write(gzip.compress(data) if i % 2 == 0 else bz2.compress(data))
        args += ["--input", "%s=%s:%s" % (packed, f.category, f.fmt)]
        heads.append("%s: %s, category %s: %d entries" % (
            packed, f.fmt, f.category, len(set(e for _, e in f.blocked.values()))))
    out = ctx.path("mixed.bbf")
    # --format urls fits none of them: each feed's own :FORMAT wins
    r = ctl("filter", "build", "--kind", "url-sha256", "--output", out, "--format", "urls",
            "--column", "url", "--skip-bad", "--max-bad", "1", *args)
    eq(r.returncode, 0, "mixed build: " + r.stderr)
    for h in heads:
        check(h in r.stderr, "want %r in %r" % (h, r.stderr))
    q = ctl("filter", "info", out)
    eq(q.returncode, 0, "filter info: " + q.stderr)
    # a corrupt gzip feed (cut short): the feed is named, nothing written
    bad = ctx.path("cut.dat")
    with open(bad, "wb") as f:
        z = gzip.compress("".join("http://a%d.example/\n" % i for i in range(5000)).encode())
        f.write(z[:len(z) // 2])
    r = ctl("filter", "build", "--kind", "url-sha256", "--output", ctx.path("x.bbf"), "--input",
            bad + "=malware")
    eq(r.returncode, 2, "a cut gzip feed: " + r.stderr)
    check("%s: not valid gzip data" % bad in r.stderr, r.stderr)
    check(not os.path.exists(ctx.path("x.bbf")), "output written for a corrupt feed")
    # bzip2 on a pipe cannot be told by its magic: refused, with the fix
    r = subprocess.run([dtest.ARGS.breachctl, "filter", "build", "--kind", "url-sha256",
                        "--output", ctx.path("x.bbf"), "--input", "-=malware"],
                       input=bz2.compress(b"http://a.example/\n"), capture_output=True,
                       env=dtest.base_env(), timeout=60)
    eq(r.returncode, 2, "bzip2 on stdin")
    check(b"bzip2 data cannot be read from a pipe" in r.stderr, r.stderr)
    # a format that does not exist, and --column with no csv feed
    r = ctl("filter", "build", "--kind", "url-sha256", "--output", ctx.path("x.bbf"), "--input",
            fx[0].path + "=ads:adblok")
    eq(r.returncode, 2, "a bad :FORMAT")
    check("the format after ':' must be one of auto, urls, hosts" in r.stderr, r.stderr)
    r = ctl("filter", "build", "--kind", "url-sha256", "--output", ctx.path("x.bbf"), "--input",
            fx[0].path + "=ads:adblock", "--column", "2")
    eq(r.returncode, 2, "--column without a csv feed")
    check("--column goes with --format csv" in r.stderr, r.stderr)


@test
def every_format_documented(ctx):
    """The --format values come from one list (url_feed.h); each is a row of
    breachctl(1)'s INPUT FORMATS table and of README.md's, and has a
    fixture here (but auto)."""
    r = build(ctx, ctx.path("x.bbf"), [(ctx.path("none"), "malware")], "--format", "nope")
    eq(r.returncode, 2, "--format nope: " + r.stderr)
    listed = r.stderr.split("expected ", 1)[1].strip()
    names = [n.strip() for n in listed.split(",")]
    check(len(names) >= 12 and names[0] == "auto" and "wildcard" in names, listed)
    root = dtest.ARGS.source_root
    with open(os.path.join(root, "docs", "breachctl.1")) as f:
        man = f.read()
    table = man.split('.SH "INPUT FORMATS"', 1)[1].split(".TE", 1)[0]
    with open(os.path.join(root, "README.md")) as f:
        readme = f.read()
    fixture_formats = {fx.fmt for fx in feedfx.FIXTURES}
    for n in names[1:]:
        check("\n%s\tT{" % n in table, "%s: no row in breachctl(1) INPUT FORMATS" % n)
        check("| `%s` |" % n in readme, "%s: no row in README.md's format table" % n)
        check(n in fixture_formats or n in ("urls", "hosts", "domains"),
              "%s: no fixture in feedfx.py" % n)


if __name__ == "__main__":
    dtest.main()
