#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The disk fault matrix (tests/README.md, "Fault matrix", "Disk faults"):
one row per fault, each through a real breachd whose upstream is a real
nginx serving a range mirror on 127.0.0.1. Every row asserts that the
answers during the fault are right or `UNKNOWN <reason>`, that the daemon
answers PING and right checks once the fault is cleared, that it exits 0 on
SIGTERM, that no log line holds a hash or prefix that was asked (the rows
on Rig), and, for
the cache rows, that nothing wrong was cached: the cache, read whole by
mdb_dump, is consistent, and a daemon started on it with no upstream answers
every hash asked during the row right or UNKNOWN (what it answers comes
from the cache alone).

Rows (ROWS, below):
- cache_dir_unwritable: the cache directory and its files made read-only
  while breachd runs (as root, breachd runs without CAP_DAC_OVERRIDE so that
  modes apply to it);
- cache_map_full: [cache] max_size = 1M (the smallest) and many distinct
  ranges of HIBP's size, one of them larger than half the map;
- cache_fs_full: the cache on a 3 MiB tmpfs filled by a filler file (root
  only: it mounts), then the filler removed; a restart on a full
  filesystem; a start on it remounted read-only;
- cache_files_deleted: data.mdb and lock.mdb unlinked while breachd runs,
  then a restart;
- cache_file_truncated: data.mdb truncated in place while mapped (a copy
  over the live file): the SIGBUS is survived, the cache set aside, checks
  go on uncached; RELOAD reopens it once the files are removed, a start on
  a truncated file is refused naming the fix;
- filter_renamed_then_reload: a new generation renamed over the mapped
  filter, then RELOAD and SIGHUP; a truncated file renamed over it (or the
  file deleted), then RELOAD and SIGHUP: refused, the old filter serves;
- filter_truncated_in_place: the live filter truncated under the daemon
  (the row of test_hygiene.py, shared through diskfx.py).
"""
import os
import random
import re
import shutil
import signal
import stat
import subprocess

import diskfx
import dtest
from dtest import check, eq, wait_for

# The synthetic mirror: ranges of HIBP's size (about 800 suffixes a prefix).
PREFIXES = 160
ENTRIES = 700
BIG_ENTRIES = 26000  # one range over half of a 1 MiB map (22 bytes an entry)
MIRROR = None


class Mirror:
    """PREFIXES range files of ENTRIES suffixes each, and one BIG range.
    probes[i] = (present, absent): a hash of range i with its count, and a
    hash of the same range that it does not hold."""

    def __init__(self, d):
        self.dir = d
        rng = random.Random(2028)
        prefixes = set()
        while len(prefixes) < PREFIXES + 1:
            prefixes.add("%05X" % rng.getrandbits(20))
        prefixes = sorted(prefixes)
        self.big_prefix = prefixes.pop(rng.randrange(len(prefixes)))
        self.want = {}
        self.probes = []
        os.makedirs(d)
        for p in prefixes:
            present, absent = self._write(rng, p, ENTRIES)
            self.probes.append((present, absent))
        self.big = self._write(rng, self.big_prefix, BIG_ENTRIES)

    def _write(self, rng, prefix, n):
        suffixes = set()
        while len(suffixes) < n + 1:
            suffixes.add("%035X" % rng.getrandbits(140))
        suffixes = sorted(suffixes)
        absent = prefix + suffixes.pop(rng.randrange(len(suffixes)))
        lines = ["%s:%d" % (s, rng.randint(1, 999999)) for s in suffixes]
        with open(os.path.join(self.dir, prefix + ".txt"), "w", newline="") as f:
            f.write("\r\n".join(lines) + "\r\n")
        pick = lines[rng.randrange(len(lines))]
        present = prefix + pick.split(":")[0]
        self.want[present] = "PWNED " + pick.split(":")[1]
        self.want[absent] = "CLEAN"
        return present, absent

    def hashes(self, lo, hi):
        return [h for pair in self.probes[lo:hi] for h in pair]


def setup():
    global MIRROR
    MIRROR = Mirror(os.path.join(dtest.ROOT, "mirror"))


# ---- the rig: a daemon, its answers and the end of every row -----------------

def spawn_daemon(ctx, conf, prefix=(), wait=True):
    """A breachd of ctx, its command line behind prefix (setpriv)."""
    if not prefix:
        return ctx.daemon(conf, wait=wait)
    d = dtest.Daemon.__new__(dtest.Daemon)
    d.ctx, d.conf, d.sock = ctx, conf, dtest.conf_socket(conf)
    d.log_path = ctx.path("breachd-%d.log" % len(ctx.daemons))
    d._log = open(d.log_path, "wb")
    d.proc = ctx.spawn(list(prefix) + dtest.breachd_argv("--config", conf, "--foreground"),
                       stdout=d._log, stderr=subprocess.STDOUT)
    d.pid = d.proc.pid
    ctx.daemons.append(d)
    if wait:
        d.wait_ready()
    return d


class Rig:
    """One row's nginx (the mirror), config, daemon and the hashes asked."""

    def __init__(self, ctx, prefix=(), cache_path=None, mirror=None, **sections):
        self.ctx = ctx
        self.prefix = list(prefix)
        self.cache = cache_path or ctx.path("cache")
        self.port = ctx.nginx(mirror or MIRROR.dir)
        self.upstream = "http://127.0.0.1:%d/range/{prefix}" % self.port
        pw = {"upstream": self.upstream}
        pw.update(sections.pop("passwords", {}))
        cache = {"path": self.cache}
        cache.update(sections.pop("cache", {}))
        self.conf = ctx.config(passwords=pw, cache=cache, **sections)
        self.asked = set()
        self.d = None
        self.n = 0

    def start(self, wait=True):
        self.d = spawn_daemon(self.ctx, self.conf, self.prefix, wait)
        return self.d

    def ask(self, hashes, d=None):
        """Ask every hash, pipelined on one connection, 64 at a time: yields
        (hash, answer without its id)."""
        d = d or self.d
        cl = d.client(timeout=60 * dtest.SLOW)
        ids = {}
        try:
            for i in range(0, len(hashes), 64):
                part = hashes[i:i + 64]
                for h in part:
                    self.n += 1
                    ids["q%d" % self.n] = h
                    cl.send("q%d PW %s\n" % (self.n, h))
                got = {}
                for ln in cl.lines(len(part)):
                    qid, ans = ln.split(" ", 1)
                    got[ids.pop(qid)] = ans
                yield from got.items()
        finally:
            cl.close()

    def ask_one(self, req):
        """One request (without its id) on a connection of its own: the
        answer without its id."""
        cl = self.d.client(timeout=60 * dtest.SLOW)
        try:
            self.n += 1
            if req.startswith("PW "):
                self.asked.add(req[3:])
            qid = "o%d" % self.n
            ans = cl.ask("%s %s" % (qid, req))
            check(ans.startswith(qid + " "), "answer %r" % ans)
            return ans[len(qid) + 1:]
        finally:
            cl.close()

    def check(self, hashes, strict=True, d=None, what=""):
        """Every answer right, or (strict False) right or UNKNOWN. Returns the
        number of right answers."""
        right = 0
        for h, ans in self.ask(list(hashes), d):
            self.asked.add(h)
            if ans == MIRROR.want.get(h) or ans == self.want(h):
                right += 1
            elif strict or not re.fullmatch(r"UNKNOWN [a-z-]+", ans):
                raise AssertionError("%s: %s answered %r, want %r" % (
                    what or "check", "a hash", ans, self.want(h)))
        return right

    def want(self, h):
        return MIRROR.want.get(h)

    def stats(self):
        return self.d.stats()

    def reload(self, tag="r"):
        cl = self.d.client(timeout=60 * dtest.SLOW)
        try:
            return cl.ask("%s RELOAD" % tag)
        finally:
            cl.close()

    def on_disk(self, n):
        """Wait for n committed entries (the resolver flushes within
        milliseconds of a fetch)."""
        wait_for(lambda: self.stats()["cache_entries"] >= n, 20 * dtest.SLOW,
                 "%d entries in the cache" % n)

    def serving(self, d=None):
        d = d or self.d
        cl = d.client()
        try:
            eq(cl.ask("p PING"), "p PONG", "PING")
        finally:
            cl.close()

    def stop(self):
        """SIGTERM: exit 0, and no log line names what was asked."""
        self.d.stop_ok()
        log_holds_nothing_asked(self.ctx, self.asked)

    def audit(self):
        """Nothing wrong cached: the stopped daemon's cache read whole by
        mdb_dump, then a daemon on it with no upstream asked every hash of the
        row: right or UNKNOWN. Returns how many it answered (from the cache)."""
        entries = diskfx.cache_consistent(self.cache)
        empty = self.ctx.path("no-upstream")
        os.makedirs(empty, exist_ok=True)
        conf = self.ctx.config(name="audit.conf", passwords={
            "upstream": "file://%s/{prefix}.txt" % empty}, cache={"path": self.cache})
        d = spawn_daemon(self.ctx, conf, self.prefix)
        right = self.check(sorted(self.asked), strict=False, d=d, what="from the cache alone")
        check(right <= 2 * entries, "%d answers from %d cached ranges" % (right, entries))
        d.stop_ok()
        log_holds_nothing_asked(self.ctx, self.asked)
        return right


def log_holds_nothing_asked(ctx, asked):
    """No daemon log of ctx names a hash or prefix that was asked
    (docs/privacy.md); prefixes with a letter only, the digits-only ones
    could be anything."""
    needles = set()
    for h in asked:
        needles.add(h)
        if re.search("[A-F]", h[:5]):
            needles.add(h[:5])
    for d in ctx.daemons:
        log = d.log()
        for n in needles:
            check(n not in log and n.lower() not in log,
                  "%s names a hash or prefix that was asked" % d.log_path)


def no_dac_override():
    """As root: a command prefix that drops the capabilities that let root
    ignore file modes (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), keeping uid 0
    (and CAP_SYS_PTRACE, which the sanitizers' leak check needs on a process
    that is not dumpable). Not root: nothing to drop."""
    if os.geteuid() != 0:
        return []
    sp = shutil.which("setpriv")
    if not sp:
        raise dtest.Skip("setpriv is missing (util-linux)")
    return [sp, "--bounding-set=-dac_override,-dac_read_search"]


# ---- the rows --------------------------------------------------------------

def cache_dir_unwritable(ctx):
    rig = Rig(ctx, prefix=no_dac_override())
    rig.start()
    eq(rig.check(MIRROR.hashes(0, 20)), 40, "before the fault")
    rig.on_disk(20)
    files = [os.path.join(rig.cache, n) for n in ("data.mdb", "lock.mdb")]
    for f in files:
        os.chmod(f, 0o400)
    os.chmod(rig.cache, 0o500)
    try:
        # The open descriptors keep working: cached and new ranges alike.
        rig.check(MIRROR.hashes(0, 40), what="during the fault")
        eq(rig.reload(), "r RELOADED", "RELOAD keeps the open cache")
        rig.check(MIRROR.hashes(30, 50), what="after the reload")
        rig.on_disk(50)
        rig.stop()
        # A start on the unwritable cache is refused, naming the path.
        d = rig.start(wait=False)
        rc = d.proc.wait(timeout=60 * dtest.SLOW)
        check(rc != 0, "breachd started on a read-only cache")
        check(rig.cache in d.log() and "ermission denied" in d.log() and "fix: " in d.log(),
              "the refusal names the path, the error and the fix:\n" + d.log())
    finally:
        os.chmod(rig.cache, 0o700)
        for f in files:
            os.chmod(f, 0o600)
    rig.start()
    rig.check(MIRROR.hashes(50, 60), what="after the fault")
    rig.serving()
    rig.stop()
    eq(rig.audit(), 120, "every range asked is in the cache")


def cache_map_full(ctx):
    rig = Rig(ctx, cache={"max_size": "1M"})
    rig.start()
    # Every range, twice over, and the big one in each pass: answers come
    # from the fetched range whether or not it fits in the cache.
    for what in ("first pass", "second pass"):
        rig.check(MIRROR.hashes(0, PREFIXES), what=what)
        rig.check(list(MIRROR.big), what=what + ": a range over half the map")
    st = rig.stats()
    check(st["cache_evicted"] > 0, "nothing evicted: %r" % st)
    check(st["cache_max_bytes"] <= 1 << 20, "map size %d" % st["cache_max_bytes"])
    check(os.path.getsize(os.path.join(rig.cache, "data.mdb")) <= (1 << 20) + (64 << 10),
          "data.mdb outgrew max_size and its headroom")
    check(st["cache_errors"] >= 2, "the oversized range was not counted twice: %r" % st)
    # Said once, not at each fetch of the range.
    eq(rig.d.log().count("File too large") + rig.d.log().count("larger than half"), 1,
       "log lines about the oversized range")
    # The newest ranges are cached and served.
    rig.on_disk(10)
    rig.check(MIRROR.hashes(PREFIXES - 5, PREFIXES), what="after eviction")
    rig.serving()
    rig.stop()
    right = rig.audit()
    check(0 < right < 2 * PREFIXES + 2, "from the cache alone: %d" % right)


def fill(path):
    """Write path until the filesystem is full (ENOSPC)."""
    chunk = b"\0" * (64 << 10)
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError as e:
            check(e.errno == 28, "filler: %s" % e)  # ENOSPC


def cache_fs_full(ctx):
    if os.geteuid() != 0:
        raise dtest.Skip("not root: cannot mount a tmpfs")
    mnt = ctx.path("mnt")
    os.mkdir(mnt, 0o700)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs", mnt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise dtest.Skip("cannot mount a tmpfs: " + r.stderr.strip())
    try:
        rig = Rig(ctx, cache_path=os.path.join(mnt, "cache"), cache={"max_size": "64M"})
        rig.start()
        rig.check(MIRROR.hashes(0, 20), what="before the fault")
        rig.on_disk(20)
        filler = os.path.join(mnt, "filler")
        fill(filler)
        rig.check(MIRROR.hashes(0, 60), what="on a full filesystem")
        rig.serving()
        os.unlink(filler)
        entries = rig.stats()["cache_entries"]
        rig.check(MIRROR.hashes(60, 80), what="after the fault")
        rig.on_disk(entries + 20)
        wait_for(lambda: "range cache writes succeed again" in rig.d.log(), 20 * dtest.SLOW,
                 "the recovery in the log")
        # A restart on a full filesystem: the cache opens, its entries serve,
        # new ranges are answered (stored or not: the failed writes of before
        # may have left room in data.mdb).
        fill(filler)
        rig.stop()
        rig.start()
        rig.check(MIRROR.hashes(0, 20) + MIRROR.hashes(60, 100), what="restarted, full")
        rig.serving()
        rig.stop()
        # The failure is said once (not at each flush), with its error: a
        # full disk is not also flooded with log lines.
        first = ctx.daemons[0].log().split("range cache writes succeed again")[0]
        eq(first.count("No space left on device"), 1, "failures logged before the recovery")
        check(ctx.daemons[1].log().count("No space left on device") <= 1, "failures logged")
        right = rig.audit()
        check(right >= 80, "from the cache alone: %d (ranges 0-19 and 60-79 at least)" % right)
        # The filesystem remounted read-only (possible once no file is open
        # for writing): a start is refused, naming the path and the fix.
        r = subprocess.run(["mount", "-o", "remount,ro", mnt], capture_output=True, text=True)
        check(r.returncode == 0, "remount ro: " + r.stderr)
        d = rig.start(wait=False)
        eq(d.proc.wait(timeout=60 * dtest.SLOW), 1, "exit status on a read-only cache")
        check(rig.cache in d.log() and "Read-only file system; fix: " in d.log(),
              "the refusal names the path, the error and the fix:\n" + d.log())
        r = subprocess.run(["mount", "-o", "remount,rw", mnt], capture_output=True, text=True)
        check(r.returncode == 0, "remount rw: " + r.stderr)
        rig.start()
        rig.check(MIRROR.hashes(0, 20) + MIRROR.hashes(60, 80), what="read-write again")
        rig.stop()
    finally:
        for d in ctx.daemons:
            d.stop()
        r = subprocess.run(["umount", mnt], capture_output=True, text=True)
        check(r.returncode == 0, "umount: " + r.stderr)


def cache_files_deleted(ctx):
    rig = Rig(ctx)
    rig.start()
    rig.check(MIRROR.hashes(0, 20), what="before the fault")
    rig.on_disk(20)
    files = [os.path.join(rig.cache, n) for n in ("data.mdb", "lock.mdb")]
    for f in files:
        os.unlink(f)
    # The daemon keeps its (unlinked) files: cached and new ranges alike.
    rig.check(MIRROR.hashes(0, 40), what="files deleted")
    eq(rig.reload(), "r RELOADED", "RELOAD")
    rig.check(MIRROR.hashes(30, 40), what="after the reload")
    rig.serving()
    rig.stop()
    check(not any(os.path.exists(f) for f in files), "a cache file came back at exit")
    # A restart makes a new, empty cache with the files' modes.
    rig.start()
    eq(rig.stats()["cache_entries"], 0, "entries in the new cache")
    for f in files:
        eq(stat.S_IMODE(os.stat(f).st_mode), 0o600, "mode of " + os.path.basename(f))
    rig.check(MIRROR.hashes(0, 10) + MIRROR.hashes(40, 50), what="after the restart")
    rig.on_disk(20)
    rig.serving()
    rig.stop()
    eq(rig.audit(), 40, "from the cache alone: the ranges asked since the restart")


def cache_file_truncated(ctx):
    # ttl 30s, max_stale 0: the housekeeping tick (a tenth of the horizon)
    # reports the damage within 3 s.
    rig = Rig(ctx, cache={"ttl": "30s", "max_stale": "0s"})
    rig.start()
    rig.check(MIRROR.hashes(0, 20), what="before the fault")
    rig.on_disk(20)
    data = os.path.join(rig.cache, "data.mdb")
    # The mistake: a copy over the live file (cp truncates it in place).
    # Its two meta pages stay: they point past the new end.
    os.truncate(data, 8192)
    rig.check(MIRROR.hashes(0, 40), what="truncated")  # uncached, from the upstream
    check(rig.d.proc.poll() is None, "breachd died: exit %r" % rig.d.proc.poll())
    rig.serving()
    wait_for(lambda: "truncated or rewritten in place" in rig.d.log(), 20 * dtest.SLOW,
             "the damage in the log")
    eq(rig.d.log().count("truncated or rewritten in place"), 1, "damage logged once")
    # A reload reopens the cache: refused while the file is the truncated
    # one, the old state serving on; taken once the files are removed.
    ans = rig.reload("r1")
    check(re.fullmatch(r"r1 ERR reload-failed .*data\.mdb.*remove.*", ans), "reload: %r" % ans)
    rig.check(MIRROR.hashes(40, 45), what="after the refused reload")
    for n in ("data.mdb", "lock.mdb"):
        os.unlink(os.path.join(rig.cache, n))
    eq(rig.reload("r2"), "r2 RELOADED", "reload with the files removed")
    eq(rig.stats()["cache_entries"], 0, "entries in the new cache")
    rig.check(MIRROR.hashes(0, 10) + MIRROR.hashes(50, 60), what="after the reload")
    rig.on_disk(20)
    rig.stop()
    # A start on a truncated cache is refused, naming the path and the fix.
    shutil.copyfile(data, ctx.path("data.mdb.bak"))
    os.truncate(data, 8192)
    d = rig.start(wait=False)
    eq(d.proc.wait(timeout=60 * dtest.SLOW), 1, "exit status on a truncated cache")
    check(rig.cache in d.log() and "remove data.mdb and lock.mdb" in d.log(),
          "the refusal names the path and the fix:\n" + d.log())
    shutil.copyfile(ctx.path("data.mdb.bak"), data)
    rig.start()
    rig.check(MIRROR.hashes(60, 65), what="restarted")
    rig.serving()
    rig.stop()
    eq(rig.audit(), 50, "from the cache alone: the ranges asked since the second reload")


def replace(ctx, data_or_path, live):
    """A new file written beside live, then renamed over it."""
    tmp = live + ".tmp"
    if isinstance(data_or_path, bytes):
        with open(tmp, "wb") as f:
            f.write(data_or_path)
    else:
        shutil.copyfile(data_or_path, tmp)
    os.rename(tmp, live)


def filter_renamed_then_reload(ctx):
    c = dtest.corpus()
    live = ctx.path("live.bfuse")
    shutil.copyfile(c.filter, live)  # generation 1: the whole corpus
    # Generation 2 holds 50 hashes of the corpus, without "password".
    keys = [h for h in c.present(50, random.Random(5)) if h != c.password]
    small = ctx.path("small.txt")
    with open(small, "w") as f:
        f.writelines("%s:%d\n" % (h, c.counts[h]) for h in keys)
    g2 = ctx.build_filter(small, ctx.path("g2.bfuse"), generation=2)
    rig = Rig(ctx, mirror=c.mirror, passwords={"filter": live})
    rig.want = lambda h: ("PWNED %d" % c.counts[h]) if h in c.counts else "CLEAN"
    d = rig.start()
    sample = keys[:10] + [c.absent(random.Random(i)) for i in range(40)]
    g1_says = dtest.filter_says(ctx, c.filter, [c.password] + sample)
    check(g1_says[c.password], "generation 1 holds 'password'")
    rig.check([c.password] + keys[:10], what="generation 1")
    replace(ctx, g2, live)
    # Renamed over but not reloaded: the mapped generation 1 answers.
    eq(rig.stats()["filter_generation"], 1, "generation before the reload")
    rig.check([c.password] + sample, strict=False, what="renamed, not reloaded")
    eq(rig.ask_one("PW " + c.password), "PWNED %d" % c.counts[c.password], "old filter")
    eq(rig.reload(), "r RELOADED", "RELOAD of generation 2")
    eq(rig.stats()["filter_generation"], 2, "generation after the reload")
    eq(rig.ask_one("PW " + c.password), "CLEAN", "generation 2 does not hold it")
    rig.check(keys, what="generation 2")
    # A broken file renamed over the path: RELOAD and SIGHUP refuse it.
    good = open(g2, "rb").read()
    for i, bad in enumerate((good[:len(good) // 2], good[:64], b"")):
        replace(ctx, bad, live)
        ans = rig.reload("b%d" % i)
        check(re.fullmatch(r"b%d ERR reload-failed .*filter.*" % i, ans), "refused: %r" % ans)
        eq(rig.stats()["filter_generation"], 2, "generation after a refused reload")
        eq(rig.ask_one("PW " + c.password), "CLEAN", "generation 2 still answers")
        rig.check(keys[:10], what="after a refused reload")
    # The filter deleted: refused the same way, the mapped one serving.
    os.unlink(live)
    ans = rig.reload("gone")
    check(re.fullmatch(r"gone ERR reload-failed .*filter.*", ans), "refused: %r" % ans)
    eq(rig.ask_one("PW " + c.password), "CLEAN", "generation 2 still answers")
    replace(ctx, good[:len(good) // 3], live)
    before = rig.stats()["reload_failures"]
    d.send_signal(signal.SIGHUP)
    wait_for(lambda: rig.stats()["reload_failures"] == before + 1, 30 * dtest.SLOW,
             "the SIGHUP reload to fail")
    rig.check(keys[:10], what="after a refused SIGHUP")
    # A good file again: SIGHUP takes it.
    replace(ctx, ctx.build_filter(c.txt, ctx.path("g3.bfuse"), generation=3), live)
    d.send_signal(signal.SIGHUP)
    wait_for(lambda: rig.stats()["filter_generation"] == 3, 30 * dtest.SLOW, "generation 3")
    eq(rig.ask_one("PW " + c.password), "PWNED %d" % c.counts[c.password], "generation 3")
    rig.serving()
    rig.stop()


def filter_truncated_in_place(ctx):
    c = dtest.corpus()
    mirrored = {h[:5] for h in c.mirrored}
    port = ctx.nginx(c.mirror)
    d = diskfx.filter_truncated_in_place(ctx, "http://127.0.0.1:%d/range/{prefix}" % port,
                                         lambda prefix: prefix not in mirrored)
    d.stop_ok()


# name, the fault, root only (skipped by name otherwise)
ROWS = [
    (cache_dir_unwritable, "cache directory and files made read-only while running", False),
    (cache_map_full, "LMDB map full: max_size 1M, 160 ranges and one over half the map", False),
    (cache_fs_full, "filesystem full: the cache on a 3 MiB tmpfs filled by a filler", True),
    (cache_files_deleted, "data.mdb and lock.mdb unlinked while running, then a restart", False),
    (cache_file_truncated, "data.mdb truncated in place while mapped; reload, restart", False),
    (filter_renamed_then_reload, "a new filter renamed over the mapped one; broken ones", False),
    (filter_truncated_in_place, "the mapped filter truncated in place (diskfx.py)", False),
]
for _fn, _what, _root in ROWS:
    dtest.test(_fn)

if __name__ == "__main__":
    dtest.main(setup=setup)
