# SPDX-License-Identifier: MIT
"""Disk fixtures shared by test_hygiene.py and test_faults_disk.py: the
range cache as mdb_dump (Debian lmdb-utils) sees it, and the filter
truncated in place under a running breachd (docs/privacy.md: the SIGBUS
handler maps zero pages, marks the filter damaged, and every check of it goes
to the range API).
"""
import os
import random
import shutil
import subprocess

import dtest
from dtest import check, eq, wait_for


def mdb_dump_tool():
    tool = shutil.which("mdb_dump")
    if not tool:
        raise dtest.Skip("mdb_dump is missing (Debian package lmdb-utils)")
    return tool


def mdb_records(cache_dir):
    """{database name: number of records} of every named database, read with
    mdb_dump -a (what someone with the disk sees)."""
    r = subprocess.run([mdb_dump_tool(), "-a", cache_dir], capture_output=True, text=True,
                       timeout=30)
    check(r.returncode == 0, "mdb_dump: " + r.stderr)
    out, name, in_data = {}, None, False
    for line in r.stdout.splitlines():
        if line.startswith("database="):
            name = line.split("=", 1)[1]
            out[name] = 0
        elif line == "HEADER=END":
            in_data = True
        elif line == "DATA=END":
            in_data = False
        elif in_data and line.startswith(" "):
            out[name] = out.get(name, 0) + 1
    return {k: v // 2 for k, v in out.items()}  # a key line and a value line each


def cache_consistent(cache_dir):
    """The cache of a stopped daemon read whole by mdb_dump: every database
    readable, one eviction-order key per entry. Returns the number of
    entries."""
    r = mdb_records(cache_dir)
    check({"ranges", "age", "meta"} <= set(r), "the cache's databases: %r" % r)
    eq(r["age"], r["ranges"], "age keys and entries (%r)" % r)
    return r["ranges"]


def filter_truncated_in_place(ctx, upstream, unreachable):
    """The live password filter (a copy of the demo filter) truncated in place
    while breachd maps it: the daemon lives, never answers CLEAN from the
    damaged filter (hashes the filter says "no" for, in prefixes for which
    unreachable(prefix) is true, so that only the filter could call them
    CLEAN), logs the damage once, answers a breached password through the
    range API (upstream: [passwords] upstream), and a good file renamed over
    the path and RELOAD restore it. Returns the daemon, still running."""
    c = dtest.corpus()
    live = ctx.path("live.bfuse")
    shutil.copyfile(c.filter, live)
    conf = ctx.config(passwords={"filter": live, "upstream": upstream},
                      cache={"ttl": "1s", "max_stale": "1s"})
    d = ctx.daemon(conf)
    cl = d.client()
    rng = random.Random(77)
    says = dtest.filter_says(ctx, c.filter, [c.absent(rng) for _ in range(300)])
    clean = [h for h, maybe in says.items() if not maybe and unreachable(h[:5])][:50]
    check(len(clean) >= 20, "not enough test hashes")
    for i, h in enumerate(clean[:5]):
        eq(cl.ask("a%d PW %s" % (i, h)), "a%d CLEAN" % i, "before the truncation")
    # The operator's mistake: rewriting the live file in place.
    os.truncate(live, 4096)
    for i, h in enumerate(clean):
        ans = cl.ask("b%d PW %s" % (i, h))
        check(d.proc.poll() is None, "breachd died: exit %r" % d.proc.poll())
        check(ans.startswith("b%d UNKNOWN " % i), "a damaged filter answered %r" % ans)
    eq(cl.ask("pw PW %s" % c.password), "pw PWNED %d" % c.counts[c.password], "via the range API")
    eq(cl.ask("p PING"), "p PONG", "still serving")
    wait_for(lambda: "truncated or rewritten in place" in d.log(), 15, "the damage in the log")
    check(d.log().count("truncated or rewritten in place") == 1, "logged once")
    # The supported way: a good file renamed over the path, then RELOAD.
    shutil.copyfile(c.filter, live + ".new")
    os.rename(live + ".new", live)
    eq(cl.ask("r RELOAD", timeout=60), "r RELOADED", "reload")
    for i, h in enumerate(clean[:5]):
        eq(cl.ask("c%d PW %s" % (i, h)), "c%d CLEAN" % i, "after the reload")
    cl.close()
    return d
