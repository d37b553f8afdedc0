#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layering of lib/ and the daemon, and the module map, checked over the
source tree:

* lib/ folders include each other's headers only along the edges of the
  layer table, libbreach_layers in lib/meson.build (which links each folder
  with the folders below it; read here, not copied): the folder graph is a
  DAG, and a new edge is a decision written down there, not an accident;
* the modules of daemon/ (scripts/daemon-modules: a module includes
  another's header or names a function it defines) depend on each other
  only along the edges of DAEMON_LAYERS below (docs/architecture.md, "The
  daemon, top-down"): the connection layer calls the verbs through
  dispatch.h, the verbs answer through conn.h and never call back into
  the server;
* every C source under lib/, daemon/ and client/ opens with a comment
  saying what it is for, and docs/modules.md is what scripts/module-map
  makes of those comments and the meson files (scripts/module-map --check);
* across lib/ folders headers are included by path ("range/range.h");
* each lib/ folder's outside libraries (FOLDER_ext_deps in its
  meson.build, the one place they are written) are those whose headers its
  files include;
* product code reads the time only through lib/core/clock.h (no time(),
  clock_gettime(), gettimeofday() elsewhere), so that a test build can
  drive it, and wakes its loop with event_active(EV, 0, ...), never with
  EV_TIMEOUT, which the test build would take for a timer whose timeout
  libevent never set (tests/README.md, "Driven time");
* no function is over 80 lines (scripts/long-functions), and the scripts
  it runs answer --help.

    test_layering.py SOURCE_ROOT"""
import importlib.machinery
import importlib.util
import os
import re
import subprocess
import sys

# folder -> the lib folders it may include from (besides itself): read from
# lib/meson.build's libbreach_layers, the one place the layer graph is
# written (it links each folder with the folders below it)
LAYERS = {}
LAYER_ROW = re.compile(r"\[\s*'(\w+)'\s*,\s*\[([^\]]*)\]\s*\]")


def meson_layers(root):
    with open(os.path.join(root, "lib", "meson.build"), encoding="utf-8") as fh:
        text = fh.read()
    m = re.search(r"^libbreach_layers = \[(.*?)^\]", text, re.M | re.S)
    if not m:
        raise SystemExit("FAIL: lib/meson.build has no libbreach_layers table")
    return {name: set(re.findall(r"'(\w+)'", below))
            for name, below in LAYER_ROW.findall(m.group(1))}


# daemon module -> the modules it may include or call (besides itself), from
# the top (main) down
DAEMON_LAYERS = {
    "main": {"server", "canary", "housekeeping", "startup", "notify", "state", "follow", "conf",
             "log", "testclock"},
    # the connection layer: sockets, framing, life cycle
    "server": {"dispatch", "http", "stats", "conn", "conn_out", "server_types", "state", "conf",
               "accept_pause", "startup", "notify", "log"},
    # the verbs: the table, then each verb's handler
    "dispatch": {"pw_check", "url_check", "url_prep", "similar_verb", "banned_verb", "stats", "conn",
                 "server_types", "state", "conf"},
    "pw_check": {"conn", "stats", "server_types", "state", "kinds", "offline", "log"},
    "similar_verb": {"conn", "server_types", "state"},
    "banned_verb": {"conn", "server_types", "state"},
    "url_check": {"url_prep", "conn", "stats", "server_types", "state", "offline", "log"},
    "url_prep": {"server_types", "state", "offline"},
    # the range endpoint, the figures, the timers
    "http": {"conn", "server_types", "state", "conf", "accept_pause", "log"},
    "stats": {"server_types", "state", "kinds", "accept_pause", "log"},
    "canary": {"server_types", "state", "kinds", "offline", "log"},
    "housekeeping": {"server_types", "state", "kinds", "log"},
    # answering and the connection's life; its output
    "conn": {"conn_out", "server_types", "state", "accept_pause", "log"},
    "conn_out": {"server_types"},
    # data: the server, connections, waiters and counters
    "server_types": {"accept_pause", "counters", "state"},
    "counters": {"kinds"},
    "state": {"kinds", "offline", "follow", "conf", "log"},
    # the filter kinds as a table: below the state indexed by it
    "kinds": {"conf"},
    # [urls], [passwords], [ntlm] follow: the threads that install a
    # publisher's files (one per followed kind), and what they installed,
    # read by the state that loads them
    "follow": {"conf", "kinds", "log"},
    # offline filters and upstream = none: below the state that loads them
    "offline": {"kinds", "conf", "log"},
    "accept_pause": {"log"},
    "conf": set(),
    "startup": set(),
    # the test build's driven clock (testclock_hook.c; the installed one: testclock.c)
    "testclock": {"log"},
    "notify": set(),
    "log": {"conf"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def lib_edges(root):
    libdir = os.path.join(root, "lib")
    home = {}
    for d in sorted(os.listdir(libdir)):
        if os.path.isdir(os.path.join(libdir, d)):
            for f in os.listdir(os.path.join(libdir, d)):
                if f.endswith(".h"):
                    home[f] = d
    edges = {}
    for d in sorted(set(home.values()) | set(LAYERS)):
        path = os.path.join(libdir, d)
        if not os.path.isdir(path):
            continue
        for f in sorted(os.listdir(path)):
            if not f.endswith((".c", ".h")):
                continue
            with open(os.path.join(path, f), encoding="utf-8") as fh:
                text = fh.read()
            for inc in INCLUDE.findall(text):
                t = home.get(os.path.basename(inc))
                if t and t != d:
                    edges.setdefault((d, t), []).append("lib/%s/%s" % (d, f))
    return edges


def check_layers(root):
    bad = 0
    for (a, b), files in sorted(lib_edges(root).items()):
        if a not in LAYERS:
            print("FAIL: lib/%s is not in the layer table (lib/meson.build, "
                  "libbreach_layers)" % a)
            bad += 1
        elif b not in LAYERS[a]:
            print("FAIL: lib/%s includes lib/%s (%s): not a layer edge" % (a, b, ", ".join(files)))
            bad += 1
    return bad + check_graph(LAYERS, "layer table")


def check_graph(table, dag_name):
    """The table itself must be a DAG."""
    seen, stack = set(), set()

    def visit(n):
        if n in stack:
            return False
        if n in seen:
            return True
        stack.add(n)
        ok = all(visit(m) for m in table.get(n, ()))
        stack.discard(n)
        seen.add(n)
        return ok

    if all(visit(n) for n in table):
        return 0
    print("FAIL: the %s has a cycle" % dag_name)
    return 1


def daemon_edges(root):
    loader = importlib.machinery.SourceFileLoader(
        "daemon_modules", os.path.join(root, "scripts", "daemon-modules"))
    spec = importlib.util.spec_from_loader("daemon_modules", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod.edges(root)


def check_daemon_layers(root):
    bad = 0
    for (a, b), why in sorted(daemon_edges(root).items()):
        if a not in DAEMON_LAYERS:
            print("FAIL: daemon module %s is not in DAEMON_LAYERS (test_layering.py, "
                  "docs/architecture.md)" % a)
            bad += 1
        elif b not in DAEMON_LAYERS[a]:
            print("FAIL: daemon/ %s -> %s is not a layer edge (%s)" % (a, b, "; ".join(sorted(why))))
            bad += 1
    return bad + check_graph(DAEMON_LAYERS, "daemon layer table")


def check_module_map(root):
    r = subprocess.run([sys.executable, os.path.join(root, "scripts", "module-map"), "--check",
                        root])
    return 1 if r.returncode else 0


# an outside library: the header prefixes that use it
EXT_HEADERS = {
    "crypto": ("openssl/",), "thread": ("pthread.h",), "idn2": ("idn2.h",),
    "unistring": ("uninorm.h", "unistr.h", "unicase.h", "uniconv.h"), "jsonc": ("json-c/",),
    "zlib": ("zlib.h",), "bz2": ("bzlib.h",), "m": ("math.h",), "libcurl": ("curl/",),
    "libevent": ("event2/",), "lmdb": ("lmdb.h",), "xxhash": ("xxhash.h",),
}
SYS_INCLUDE = re.compile(r'^\s*#\s*include\s+<([^>]+)>', re.M)


def check_includes_by_path(root):
    """Across lib/ folders a header is included by its path ("range/range.h"),
    as the include directory is lib/ itself."""
    libdir = os.path.join(root, "lib")
    home = {}
    for d in os.listdir(libdir):
        if os.path.isdir(os.path.join(libdir, d)):
            for f in os.listdir(os.path.join(libdir, d)):
                if f.endswith(".h"):
                    home[f] = d
    bad = 0
    for top in ("lib", "daemon", "client", "tests"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                    text = fh.read()
                for inc in INCLUDE.findall(text):
                    d = home.get(inc)
                    if d and not os.path.exists(os.path.join(dirpath, inc)):
                        print('FAIL: %s includes "%s": write "%s/%s"'
                              % (os.path.relpath(os.path.join(dirpath, f), root), inc, d, inc))
                        bad += 1
    return bad


def check_ext_deps(root):
    """Each lib/ folder's FOLDER_ext_deps (its meson.build) names the
    libraries whose headers its files include."""
    bad = 0
    for d in sorted(LAYERS):
        folder = os.path.join(root, "lib", d)
        with open(os.path.join(folder, "meson.build"), encoding="utf-8") as fh:
            m = re.search(r"^%s_ext_deps = \[([^\]]*)\]" % d, fh.read(), re.M)
        declared = set(re.findall(r"(\w+)_dep", m.group(1))) if m else None
        used = set()
        for f in os.listdir(folder):
            if f.endswith((".c", ".h")):
                with open(os.path.join(folder, f), encoding="utf-8") as fh:
                    for h in SYS_INCLUDE.findall(fh.read()):
                        used |= {k for k, v in EXT_HEADERS.items() if h.startswith(v)}
        if declared is None:
            print("FAIL: lib/%s/meson.build declares no %s_ext_deps" % (d, d))
            bad += 1
        elif declared != used:
            print("FAIL: lib/%s declares %s but its files use %s"
                  % (d, sorted(declared), sorted(used)))
            bad += 1
    return bad


# a direct read of the system's clocks
TIME_READ = re.compile(r"\b(time\s*\(\s*(NULL|0)?\s*\)|clock_gettime|gettimeofday|"
                       r"event_base_gettimeofday_cached)\s*\(?")
# a wake-up passing EV_TIMEOUT as its result: to the driven clock it looks
# like a timer, and its unset timeout is read
WAKE_AS_TIMEOUT = re.compile(r"\bevent_active\s*\([^;]*\bEV_TIMEOUT\b")
# the files that may read them: the clock itself, the test build's driver,
# and absolute deadlines for pthread_cond_timedwait() (the system's clock)
TIME_READERS = {"lib/core/clock.c", "daemon/testclock_hook.c", "lib/download/download_writer.c",
                "daemon/follow.c"}


def check_one_clock(root):
    bad = 0
    for top in ("lib", "daemon", "client"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                if not f.endswith((".c", ".h")) or rel in TIME_READERS:
                    continue
                with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        code = line.split("//")[0]
                        if TIME_READ.search(code) and not code.lstrip().startswith(("/*", "*")):
                            print("FAIL: %s:%d reads the time directly: use lib/core/clock.h"
                                  % (rel, n))
                            bad += 1
                        if WAKE_AS_TIMEOUT.search(code):
                            print("FAIL: %s:%d wakes the loop with EV_TIMEOUT: pass res 0"
                                  % (rel, n))
                            bad += 1
    return bad


def check_script_help(root):
    """The checking scripts answer --help with their usage (exit 0)."""
    bad = 0
    for name in ("daemon-modules", "long-functions", "module-map"):
        r = subprocess.run([sys.executable, os.path.join(root, "scripts", name), "--help"],
                           capture_output=True, text=True)
        if r.returncode != 0 or not r.stdout.startswith("usage: " + name):
            print("FAIL: scripts/%s --help: exit %d, %r" % (name, r.returncode,
                                                          (r.stdout + r.stderr)[-300:]))
            bad += 1
    return bad


def main():
    root = sys.argv[1]
    LAYERS.update(meson_layers(root))
    bad = check_layers(root) + check_daemon_layers(root) + check_module_map(root)
    bad += check_includes_by_path(root) + check_ext_deps(root) + check_one_clock(root)
    bad += check_script_help(root)
    r = subprocess.run([sys.executable, os.path.join(root, "scripts", "long-functions"),
                        os.path.join(root, "lib"), os.path.join(root, "daemon"),
                        os.path.join(root, "client")])
    if r.returncode != 0:
        print("FAIL: functions over 80 lines (above)")
        bad += 1
    print("layering: %d problems" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
