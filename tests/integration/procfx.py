# SPDX-License-Identifier: MIT
"""Fixtures of the process fault matrix (test_faults_process.py): a mirror
of per-prefix ranges served by nginx and the answers it makes right, filter
generations over it, a daemon config for it, system calls of breachd cut or
held with strace (-e inject), and what /proc, mdb_stat and mdb_dump tell of
a running daemon and its cache. Standard library only, on dtest.py."""
import os
import random
import re
import shutil
import subprocess
import time

import dtest
from dtest import check, eq


# ---- the mirror ------------------------------------------------------------


class Mirror:
    """Per-prefix range files (sorted SUFFIX:COUNT lines, each prefix its own
    suffixes) served by nginx; checks() says what the right answers are."""

    def __init__(self, ctx, n_prefixes, per_range, seed, url_dir=None):
        rng = random.Random(seed)
        self.dir = ctx.path("mirror")
        os.makedirs(self.dir)
        picked = set()
        while len(picked) < n_prefixes:
            picked.add("%05X" % rng.getrandbits(20))
        self.prefixes = sorted(picked)
        rng.shuffle(self.prefixes)
        self.hit = {}  # prefix -> (hash, count) of one entry
        for p in self.prefixes:
            lines = []
            for i in range(per_range):
                h = dtest.sha1hex("%s/%d" % (p, i))
                lines.append((h[5:], 1 + int(h[:4], 16) % 9999))
            lines.sort()
            with open(os.path.join(self.dir, p + ".txt"), "w", newline="") as f:
                f.write("".join("%s:%d\r\n" % sc for sc in lines))
            s, c = lines[len(lines) // 2]
            self.hit[p] = (p + s, c)
        # url_dir: a URL range mirror, served at /url/PREFIX.
        loc = "location /range/ { alias %s/; try_files $uri.txt =404; }" % self.dir
        if url_dir:
            loc += " location /url/ { alias %s/; try_files $uri.txt =404; }" % url_dir
        self.port = ctx.nginx(self.dir, location=loc)
        self.upstream = "http://127.0.0.1:%d/range/{prefix}" % self.port
        self.url_upstream = "http://127.0.0.1:%d/url/{prefix}" % self.port

    def absent(self, p):
        """A hash of prefix p that its range does not hold."""
        return p + "0" * 35

    def checks(self, prefixes):
        """[(hash, the answer's status text)]: a hit and a miss per prefix."""
        out = []
        for p in prefixes:
            h, c = self.hit[p]
            out.append((h, "PWNED %d" % c))
            out.append((self.absent(p), "CLEAN"))
        return out


def daemon_conf(ctx, m, filt=None, **sections):
    pw = {"upstream": m.upstream}
    if filt:
        pw["filter"] = filt
    sections.setdefault("upstream", {}).update({"rate": 100000, "max_inflight": 64,
                                                "timeout": "30s"})
    sections.setdefault("limits", {}).setdefault("max_inflight", 65536)
    return ctx.config(passwords=pw, **sections)


def ask_all(d, checks, tag, allow_unknown=False, timeout=60):
    """Pipeline checks [(hash, want)] on one connection; fail on any answer
    but want (or UNKNOWN when allowed). Returns how many were UNKNOWN."""
    cl = d.client(timeout=timeout)
    cl.send("".join("%s%d PW %s\n" % (tag, i, h) for i, (h, _) in enumerate(checks)))
    unknown = 0
    seen = set()
    for ln in cl.lines(len(checks)):
        rid, ans = ln.split(" ", 1)
        i = int(rid[len(tag):])
        check(i not in seen, "answered twice: %r" % ln)
        seen.add(i)
        if allow_unknown and ans.startswith("UNKNOWN "):
            unknown += 1
            continue
        eq(ans, checks[i][1], "answer to %s (%s)" % (rid, checks[i][0][:5]))
    cl.close()
    return unknown


def replace_file(src, dst):
    shutil.copyfile(src, dst + ".new")
    os.replace(dst + ".new", dst)


# ---- watching the daemon through /proc and strace ---------------------------

def inject(ctx, pid, syscall, n, action, path=None, log="/dev/null"):
    """Attach strace to every thread of pid, to inject action ("signal=KILL",
    "delay_enter=US") at the entry of the n-th call of syscall by a thread
    (strace(1), -e inject; with path, only calls on that file; each call
    traced to log). Returns the strace process once attached, or None when
    it cannot (no strace, under valgrind, ptrace refused)."""
    tool = shutil.which("strace")
    if not tool or dtest.WRAPPER:
        return None
    argv = [tool, "-qq", "-f", "-o", log, "-e", "trace=" + syscall,
            "-e", "inject=%s:%s:when=%d" % (syscall, action, n)]
    if path:
        argv += ["-P", path]
    p = ctx.spawn(argv + ["-p", str(pid)], stderr=subprocess.DEVNULL)

    def attached():
        with open("/proc/%d/status" % pid) as f:
            return any(ln.startswith("TracerPid:") and ln.split()[1] != "0" for ln in f)
    dtest.wait_for(lambda: attached() or p.poll() is not None, 20 * dtest.SLOW, "strace")
    if p.poll() is not None:
        return None
    return p


def kill_at_syscall(ctx, pid, syscall, n, path=None, log="/dev/null"):
    return inject(ctx, pid, syscall, n, "signal=KILL", path, log)


def quiet(proc, log):
    """Wait until proc is dead or log has not grown for half a second (its
    commits are over: the range answers are written before their commit);
    True when dead."""
    last, since = -1, time.monotonic()
    while proc.poll() is None and time.monotonic() - since < 0.5 * dtest.SLOW:
        size = os.path.getsize(log)
        if size != last:
            last, since = size, time.monotonic()
        time.sleep(0.02)
    return proc.poll() is not None


def _held_threads(pid):
    held = set()
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                if int(tid) != pid and f.read().rsplit(")", 1)[1].split()[0] == "t":
                    held.add(tid)
        except OSError:
            pass
    return held


def thread_held(pid):
    """True when a thread of pid other than the main one is held by its
    tracer (a delay_enter of inject()): stopped now and still 50 ms later,
    longer than the stop of any system call strace only looks at."""
    held = _held_threads(pid)
    if not held:
        return False
    time.sleep(0.05)
    return bool(held & _held_threads(pid))


def descriptors(pid):
    """What pid holds open: {"files": its files, pipes and the like, sorted;
    "pairs": Unix sockets with no name (socketpairs); "clients": accepted
    connections (named after the listener); "tcp": other sockets}."""
    unix = {}
    with open("/proc/%d/net/unix" % pid) as f:
        next(f)
        for ln in f:
            parts = ln.split()
            listening = int(parts[3], 16) & 0x10000
            unix[parts[6]] = "listener" if listening else "clients" if len(parts) > 7 else "pairs"
    out = {"files": [], "pairs": 0, "clients": 0, "listener": 0, "tcp": 0}
    for link in dtest.fd_links(pid).values():
        if link.startswith("socket:["):
            out[unix.get(link[8:-1], "tcp")] += 1
        else:
            out["files"].append(re.sub(r"\[\d+\]$", "", link))  # pipe:[N] -> pipe:
    out["files"].sort()
    return out


def no_clients(pid):
    """descriptors(pid) once no client connection is open, else None."""
    fds = descriptors(pid)
    return fds if fds["clients"] == 0 else None


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1])
    raise AssertionError("no VmRSS")


def filter_mappings(pid, directory):
    """The filter files under directory that pid maps (a replaced one as
    "PATH (deleted)")."""
    out = set()
    with open("/proc/%d/maps" % pid) as f:
        for ln in f:
            parts = ln.split(None, 5)
            if len(parts) == 6 and parts[5].startswith(directory) and ".bfuse" in parts[5]:
                out.add(parts[5].strip())
    return sorted(out)


def _mdb_records(dump, cache, db):
    r = subprocess.run([dump, "-s", db, cache], capture_output=True, text=True, timeout=60)
    eq(r.returncode, 0, "mdb_dump -s %s: %s" % (db, r.stderr))
    body = r.stdout.split("HEADER=END\n", 1)
    check(len(body) == 2 and body[1].endswith("DATA=END\n"), "mdb_dump output is cut short")
    rows = [ln for ln in body[1].splitlines() if ln.startswith(" ")]
    eq(len(rows) % 2, 0, "mdb_dump -s %s: a key without a value" % db)
    return len(rows) // 2


def mdb_check(cache):
    """mdb_stat and mdb_dump read the cache, and its eviction index ("age")
    has one record per range; the number of ranges (None without
    lmdb-utils)."""
    stat, dump = shutil.which("mdb_stat"), shutil.which("mdb_dump")
    if not stat or not dump:
        print("    (lmdb-utils not installed: mdb_stat / mdb_dump checks not run)")
        return None
    r = subprocess.run([stat, "-a", "-e", "-f", "-r", cache], capture_output=True, text=True,
                       timeout=60)
    eq(r.returncode, 0, "mdb_stat: %s" % r.stderr)
    ranges = _mdb_records(dump, cache, "ranges")
    eq(_mdb_records(dump, cache, "age"), ranges, "records of the age index, one per range")
    return ranges


def build_generations(ctx, m, gens, extra_keys):
    """Filters of generations gens over the mirror's hits and extra_keys
    random keys (to make loading take a moment): {generation: path}."""
    inp = ctx.path("keys.txt")
    rng = random.Random(77)
    with open(inp, "w") as f:
        for h, c in m.hit.values():
            f.write("%s:%d\n" % (h, c))
        for _ in range(extra_keys):
            f.write("%040X:1\n" % rng.getrandbits(160))
    return {g: ctx.build_filter(inp, ctx.path("g%d.bfuse" % g), generation=g) for g in gens}
