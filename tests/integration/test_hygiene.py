#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Retention and process hygiene of breachd (docs/privacy.md), each shown the
way an adversary would look:

- purge_idle_cache: a cache left idle past ttl + max_stale holds nothing
  (read with mdb_dump, Debian lmdb-utils).
- cache_dir_*: the daemon refuses a cache directory or file that another user
  owns or may write, or a symbolic link, naming the path and the fix.
- not_dumpable: another process of breachd's user cannot read its memory
  (/proc/PID/environ and mem are root's for a non-dumpable process).
- request_lines_wiped: after answering, the daemon's memory holds no copy of
  the hashes it was asked (root: reads /proc/PID/mem).
- filter_truncated_in_place: a filter truncated under the running daemon does
  not kill it and never answers CLEAN from the damaged filter; a reload of a
  good file (replaced by rename) restores it.
- breachctl_stdin: `breachctl sha1` and `breachctl url` read their inputs
  from stdin when given no arguments (arguments are visible in /proc).
"""
import os
import random
import re
import shutil
import signal
import subprocess
import time

import diskfx
import dtest
from diskfx import mdb_records
from dtest import check, eq, test, wait_for


@test
def purge_idle_cache(ctx):
    """On driven time (breachd-testclock): ttl 1 h, max_stale 1 h; an hour
    later the entries are kept (stale, not past the horizon), two hours and
    a second later the next purge tick has removed them."""
    c = dtest.corpus()
    conf = ctx.config(passwords={"upstream": "file://%s/{prefix}.txt" % c.mirror},
                      cache={"ttl": "1h", "max_stale": "1h"}, daemon={"canary": "0"})
    clock = dtest.Clock(ctx)
    d = ctx.daemon(conf, clock=clock)
    cl = d.client()
    hashes = c.present(5)
    for i, h in enumerate(hashes):
        eq(cl.ask("p%d PW %s" % (i, h)), "p%d PWNED %d" % (i, c.counts[h]), "answer")
    cl.close()
    cache = ctx.path("cache")
    # The entries reach the disk (the resolver flushes within milliseconds).
    wait_for(lambda: mdb_records(cache).get("ranges", 0) == 5, 10, "the entries on disk")
    clock.advance(3600)  # a purge tick ran: past ttl, within ttl + max_stale
    eq(mdb_records(cache).get("ranges", 0), 5, "entries within ttl + max_stale")
    clock.advance(3601)  # and past it
    left = wait_for(lambda: (lambda r: r if r.get("ranges", 0) == 0 and r.get("age", 0) == 0
                             else None)(mdb_records(cache)), 20, "the purge of expired entries")
    check(set(left) >= {"ranges", "age"}, "mdb_dump shows the cache's databases: %r" % left)
    d.stop_ok()
    # And still nothing after the daemon's exit flush.
    r = mdb_records(cache)
    eq((r.get("ranges"), r.get("age")), (0, 0), "records after exit")


def refused(ctx, conf, *words):
    d = ctx.daemon(conf, wait=False)
    rc = d.proc.wait(timeout=30)
    check(rc != 0, "breachd started on a bad cache directory")
    log = d.log()
    for w in words:
        check(w in log, "the refusal should say %r:\n%s" % (w, log))


@test
def cache_dir_writable_by_others(ctx):
    cache = ctx.path("cache")
    os.mkdir(cache)
    os.chmod(cache, 0o777)
    refused(ctx, ctx.config(), cache, "chmod go-w", "writable")
    os.chmod(cache, 0o700)
    d = ctx.daemon(ctx.config())
    d.stop_ok()
    data = os.path.join(cache, "data.mdb")
    os.chmod(data, 0o666)
    refused(ctx, ctx.config(), data, "chmod go-w")


@test
def cache_dir_symlink(ctx):
    real = ctx.path("real-cache")
    os.mkdir(real, 0o700)
    os.symlink(real, ctx.path("cache"))
    refused(ctx, ctx.config(), ctx.path("cache"), "symbolic link")
    check(not os.path.exists(os.path.join(real, "data.mdb")), "the link was followed")
    # A data file planted as a link to another user's file.
    os.unlink(ctx.path("cache"))
    os.mkdir(ctx.path("cache"), 0o700)
    target = ctx.path("victim")
    with open(target, "wb") as f:
        f.write(b"not yours\n")
    os.symlink(target, ctx.path("cache", "data.mdb"))
    refused(ctx, ctx.config(), ctx.path("cache", "data.mdb"), "symbolic link")
    with open(target, "rb") as f:
        eq(f.read(), b"not yours\n", "the link target")


@test
def cache_dir_other_owner(ctx):
    if os.geteuid() != 0:
        raise dtest.Skip("not root: cannot give the directory to another user")
    cache = ctx.path("cache")
    os.mkdir(cache, 0o700)
    os.chown(cache, 65534, 65534)
    refused(ctx, ctx.config(), cache, "chown 0 ", "belongs to uid 65534")


def setpriv_nobody():
    sp = shutil.which("setpriv")
    if not sp:
        raise dtest.Skip("setpriv is missing (util-linux)")
    return [sp, "--reuid=65534", "--regid=65534", "--clear-groups"]


@test
def not_dumpable(ctx):
    if os.geteuid() == 0:
        # As uid 65534: a dumpable process's /proc files would be its own.
        os.chmod(dtest.ROOT, 0o711)
        os.chmod(ctx.dir, 0o711)
        home = ctx.path("nobody")
        os.mkdir(home, 0o755)
        os.chown(home, 65534, 65534)
        conf = ctx.config(socket_path=os.path.join(home, "s.sock"),
                          daemon={"admin_users": "root"}, cache={"path": os.path.join(home, "cache")})
        os.chmod(conf, 0o644)
        p = ctx.spawn(setpriv_nobody() + dtest.breachd_argv("--config", conf, "--foreground"),
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: os.path.exists(os.path.join(home, "s.sock")) or p.poll() is not None, 20,
                 "the daemon's socket")
        check(p.poll() is None, "breachd as uid 65534 exited %r" % p.poll())
        with open("/proc/%d/status" % p.pid) as f:
            uid_line = [ln for ln in f if ln.startswith("Uid:")][0]
        eq(uid_line.split()[1], "65534", "the daemon's uid")
        for name in ("environ", "mem", "maps"):
            st = os.stat("/proc/%d/%s" % (p.pid, name))
            eq(st.st_uid, 0, "owner of /proc/PID/%s (root when not dumpable)" % name)
        # And uid 65534 itself cannot read them.
        r = subprocess.run(setpriv_nobody() + ["cat", "/proc/%d/environ" % p.pid],
                           capture_output=True, timeout=30)
        check(r.returncode != 0, "uid 65534 read breachd's environment")
    else:
        d = ctx.daemon(ctx.config())
        try:
            open("/proc/%d/environ" % d.pid, "rb").read()
            raise AssertionError("a process of the same user read breachd's environment")
        except PermissionError:
            pass
        d.stop_ok()


def heap_regions(pid):
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            addr, perms = parts[0], parts[1]
            path = parts[5] if len(parts) > 5 else ""
            if "r" not in perms or "w" not in perms:
                continue
            if path and path not in ("[heap]", "[stack]"):
                continue
            lo, hi = (int(x, 16) for x in addr.split("-"))
            yield lo, hi


def memory_holds(pid, needles):
    """Which of needles (bytes) occur in the writable anonymous memory of pid."""
    found = set()
    with open("/proc/%d/mem" % pid, "rb", buffering=0) as mem:
        for lo, hi in heap_regions(pid):
            if hi - lo > (1 << 30):
                continue
            try:
                mem.seek(lo)
                blob = mem.read(hi - lo)
            except OSError:
                continue
            for n in needles:
                if n in blob:
                    found.add(n)
    return found


@test
def request_lines_wiped(ctx):
    if os.geteuid() != 0:
        raise dtest.Skip("not root: cannot read a non-dumpable process's memory")
    if dtest.is_asan():
        raise dtest.Skip("ASan keeps freed memory in quarantine, poisoned but unwiped by design")
    c = dtest.corpus()
    conf = ctx.config(passwords={"filter": c.filter,
                                 "upstream": "file://%s/{prefix}.txt" % c.mirror})
    d = ctx.daemon(conf)
    rng = random.Random(4242)
    asked = [c.absent(rng) for _ in range(40)] + c.present(10, random.Random(99))
    cl = d.client()
    # Pipelined, in pieces, as a client that writes slowly would.
    for i, h in enumerate(asked):
        line = ("q%d PW %s\n" % (i, h)).encode()
        cl.send(line[:9])
        time.sleep(0.001)
        cl.send(line[9:])
    answers = cl.lines(len(asked))
    check(all(" CLEAN" in a or " PWNED " in a for a in answers), "answers: %r" % answers[:5])
    time.sleep(0.3)  # the resolver's waiters are freed once answered
    needles = [h.encode() for h in asked] + [h.lower().encode() for h in asked] + \
        [bytes.fromhex(h) for h in asked[:40]]  # the binary hashes of the absent ones
    found = memory_holds(d.pid, needles)
    cl.close()
    d.stop_ok()
    eq(len(found), 0, "hashes left in breachd's memory after answering (%d of %d)" % (
        len(found), len(needles)))


@test
def filter_truncated_in_place(ctx):
    c = dtest.corpus()
    mirrored = {h[:5] for h in c.mirrored}
    d = diskfx.filter_truncated_in_place(ctx, "file://%s/{prefix}.txt" % c.mirror,
                                         lambda prefix: prefix not in mirrored)
    d.stop_ok()


@test
def breachctl_stdin(ctx):
    c = dtest.corpus()
    conf = ctx.config(passwords={"filter": c.filter,
                                 "upstream": "file://%s/{prefix}.txt" % c.mirror})
    d = ctx.daemon(conf)
    env = {"BREACHD_SOCKET": d.sock}
    h = c.password
    r = subprocess.run([dtest.ARGS.breachctl, "sha1"], input="%s\n%s\n" % (h, dtest.sha1hex("x-9q")),
                       capture_output=True, text=True, env=dtest.base_env(env), timeout=60)
    eq(r.returncode, 1, "sha1 from stdin: exit status (%s)" % r.stderr)
    check("PWNED" in r.stdout, "sha1 from stdin: " + r.stdout)
    eq(len(r.stdout.strip().splitlines()), 2, "one answer per line")
    r = subprocess.run([dtest.ARGS.breachctl, "url"], input="http://example.org/a\r\n",
                       capture_output=True, text=True, env=dtest.base_env(env), timeout=60)
    eq(r.returncode, 3, "url from stdin without a URL filter: UNKNOWN (%s)" % r.stderr)
    check("UNKNOWN" in r.stdout, "url from stdin: " + r.stdout)
    # Nothing on stdin is an error, never a clean answer.
    r = subprocess.run([dtest.ARGS.breachctl, "sha1"], input="", capture_output=True, text=True,
                       env=dtest.base_env(env), timeout=60)
    eq(r.returncode, 2, "sha1 with empty stdin")
    d.stop_ok()


if __name__ == "__main__":
    dtest.main()
