#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachd integration tests: reload, stale filters, systemd.

RELOAD and SIGHUP with a good filter, a corrupt one, a filter of the wrong
kind and a bad config (the old state keeps serving); in-flight requests
finishing on the old state; the stale-filter bypass; socket activation
(LISTEN_FDS set by the test); sd_notify messages on a test NOTIFY_SOCKET.
"""
import http.client
import os
import random
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
from dtest import check, eq, test  # noqa: E402

HIT = "00000000000000000000000000000000001"  # every faultserver range holds it: count 42


def replace_file(src, dst):
    """Put src at dst atomically (never rewrite a mapped filter in place)."""
    shutil.copyfile(src, dst + ".new")
    os.replace(dst + ".new", dst)


def filter_daemon(ctx, env=None, **pw):
    c = dtest.corpus()
    live = ctx.path("passwords.bfuse")
    shutil.copyfile(c.filter, live)  # generation 1
    conf = dict(filter=live, upstream="file://%s/{prefix}.txt" % c.mirror)
    conf.update(pw)
    return ctx.daemon(ctx.config(passwords=conf), env=env), live


@test
def reload_good_filter(ctx):
    c = dtest.corpus()
    d, live = filter_daemon(ctx)
    cl = d.client(timeout=30)
    eq(cl.stats()["filter_generation"], 1, "generation at start")
    eq(cl.ask("a PW " + c.password), "a PWNED %d" % c.counts[c.password])
    # RELOAD with generation 2.
    replace_file(ctx.build_filter(c.txt, ctx.path("g2.bfuse"), generation=2), live)
    eq(cl.ask("r1 RELOAD"), "r1 RELOADED")
    st = cl.stats()
    eq((st["filter_generation"], st["reloads"], st["reload_failures"]), (2, 1, 0), "after RELOAD")
    eq(cl.ask("b PW " + c.password), "b PWNED %d" % c.counts[c.password])
    # SIGHUP with generation 3, over keys without "password": the new filter answers.
    rng = random.Random(31)
    small = ctx.path("small.txt")
    keys = [h for h in c.present(50, rng) if h != c.password]
    with open(small, "w") as f:
        for h in keys:
            f.write("%s:%d\n" % (h, c.counts[h]))
    replace_file(ctx.build_filter(small, ctx.path("g3.bfuse"), generation=3), live)
    d.send_signal(signal.SIGHUP)
    dtest.wait_for(lambda: cl.stats()["filter_generation"] == 3, what="generation 3 after SIGHUP")
    st = cl.stats()
    eq((st["reloads"], st["filter_keys"]), (2, len(keys)), "after SIGHUP")
    # The log names what each reload put in place.
    check("password filter: generation 2, %d keys" % len(c.counts) in d.log(), "reload 1 logged")
    check("password filter: generation 3, %d keys" % len(keys) in d.log(), "reload 2 logged")
    # its build time as a date: a generation (often a Unix time) is not one
    check(re.search(r"password filter: generation 3, \d+ keys, built \d{4}-\d\d-\d\dT\d\d:"
                    r"\d\d:\d\dZ", d.log()), "the build date logged: " + d.log()[-400:])
    eq(cl.ask("c PW " + c.password), "c CLEAN", "the new filter does not hold it")
    eq(cl.ask("p PING"), "p PONG")
    cl.close()
    d.stop_ok()


@test
def reload_corrupt_filter_keeps_old(ctx):
    c = dtest.corpus()
    d, live = filter_daemon(ctx)
    cl = d.client(timeout=30)
    good = open(c.filter, "rb").read()
    bad_files = []
    flipped = bytearray(good)
    flipped[len(flipped) // 2] ^= 0x01  # a byte of the payload
    bad_files.append(("flipped payload byte", bytes(flipped)))
    flipped = bytearray(good)
    flipped[20] ^= 0x80  # a header byte
    bad_files.append(("flipped header byte", bytes(flipped)))
    bad_files.append(("truncated", good[:len(good) - 100]))
    bad_files.append(("empty", b""))
    for i, (what, data) in enumerate(bad_files):
        p = ctx.path("bad%d.bfuse" % i)
        with open(p, "wb") as f:
            f.write(data)
        replace_file(p, live)
        ans = cl.ask("r%d RELOAD" % i)
        m = re.fullmatch(r"r%d ERR reload-failed (.+)" % i, ans)
        check(m, "%s: %r" % (what, ans))
        check("filter" in m.group(1), "%s: the reason does not name the filter: %r" % (what, ans))
        st = cl.stats()
        eq((st["filter_generation"], st["filter_loaded"], st["reload_failures"], st["reloads"]),
           (1, 1, i + 1, 0), what + ": old state")
        eq(cl.ask("pw%d PW %s" % (i, c.password)), "pw%d PWNED %d" % (i, c.counts[c.password]),
           what + ": the old filter serves")
    # The same by SIGHUP: the daemon stays up and says why in the log.
    d.send_signal(signal.SIGHUP)
    dtest.wait_for(lambda: cl.stats()["reload_failures"] == len(bad_files) + 1,
                   what="the SIGHUP reload to fail")
    check("reload failed" in d.log(), "no log line for the failed reload")
    # A filter of another kind is refused by name.
    urls = ctx.path("urls.txt")
    with open(urls, "w") as f:
        f.write("http://evil.example/\n")
    r = ctx.breachctl("filter", "build", "--kind", "url-sha256", "--input", urls, "--output",
                      ctx.path("url.bf"), check_rc=False)
    if r.returncode == 0:
        replace_file(ctx.path("url.bf"), live)
        ans = cl.ask("k RELOAD")
        check(re.fullmatch(r"k ERR reload-failed .*kind.*", ans), "url filter: %r" % ans)
        eq(cl.stats()["filter_generation"], 1, "generation")
    else:
        print("    (no url-sha256 filter build: wrong-kind case not run: %s)" % r.stderr.strip())
    # A good filter afterwards loads.
    replace_file(ctx.build_filter(c.txt, ctx.path("g7.bfuse"), generation=7), live)
    eq(cl.ask("ok RELOAD"), "ok RELOADED")
    eq(cl.stats()["filter_generation"], 7, "generation after the good reload")
    cl.close()
    d.stop_ok()


@test
def reload_bad_config_keeps_old(ctx):
    c = dtest.corpus()
    d, live = filter_daemon(ctx)
    conf = d.conf
    good_text = open(conf).read()
    cl = d.client(timeout=30)
    cases = [
        ("unknown key", good_text + "bogus_key = 1\n", len(good_text.splitlines()) + 1),
        ("bad value", good_text.replace("[cache]\n", "[cache]\nttl = forever\n"),
         good_text.splitlines().index("[cache]") + 2),
        ("unknown section", "[nope]\n" + good_text, 1),
    ]
    for i, (what, text, line) in enumerate(cases):
        with open(conf + ".tmp", "w") as f:
            f.write(text)
        os.replace(conf + ".tmp", conf)
        ans = cl.ask("r%d RELOAD" % i)
        check(re.fullmatch(r"r%d ERR reload-failed .+" % i, ans), "%s: %r" % (what, ans))
        check("%s:%d" % (conf, line) in ans, "%s: %r does not name %s:%d" % (what, ans, conf, line))
        st = cl.stats()
        eq((st["filter_generation"], st["reload_failures"]), (1, i + 1), what + ": old state")
        eq(cl.ask("pw PW " + c.password), "pw PWNED %d" % c.counts[c.password], what)
    # A missing config file.
    os.rename(conf, conf + ".away")
    ans = cl.ask("m RELOAD")
    check(ans.startswith("m ERR reload-failed ") and conf in ans, "missing config: %r" % ans)
    os.rename(conf + ".away", conf)
    with open(conf, "w") as f:
        f.write(good_text)
    eq(cl.ask("g RELOAD"), "g RELOADED")
    eq(cl.stats()["reloads"], 1, "reloads")
    cl.close()
    d.stop_ok()


@test
def reload_in_flight_finish_on_old_state(ctx):
    port = ctx.faultserver()
    up = "http://127.0.0.1:%d/%%s/{prefix}" % port
    conf = ctx.config(passwords={"upstream": up % "delay"})
    d = ctx.daemon(conf)
    cl = d.client(timeout=30)
    cl.send("slow PW 1A2B3%s\n" % HIT)
    dtest.wait_for(lambda: d.stats()["requests_in_flight"] == 1, what="the request in flight")
    ctx.config(passwords={"upstream": up % "ok"})
    other = d.client(timeout=30)
    eq(other.ask("r RELOAD"), "r RELOADED")
    eq(other.ask("fast PW 4C5D6%s" % HIT), "fast PWNED 42", "the new upstream")
    eq(cl.line(timeout=20), "slow PWNED 42", "the request made on the old state")
    with open(ctx.path("fault", "requests.log")) as f:
        log = f.read().split("\n")
    check(any(ln.startswith("delay 1A2B3 ") for ln in log), "old upstream not asked: %r" % log)
    check(any(ln.startswith("ok 4C5D6 ") for ln in log), "new upstream not asked: %r" % log)
    cl.close()
    other.close()
    d.stop_ok()


@test
def stale_filter_bypassed(ctx):
    c = dtest.corpus()
    old = ctx.build_filter(c.txt, ctx.path("old.bfuse"), generation=4, epoch=1000000000)
    mirror = ctx.path("mirror")
    rng = random.Random(12)
    absent = []
    while len(absent) < 3:
        h = c.absent(rng)
        if not dtest.filter_says(ctx, old, [h])[h]:
            absent.append(h)
    # Their ranges exist (without them), and so does password's.
    entries = {h[:5] + ("F" * 35 if h[5:] != "F" * 35 else "E" * 35): 5 for h in absent}
    entries[c.password] = c.counts[c.password]
    dtest.write_range(mirror, entries)
    live = ctx.path("passwords.bfuse")
    shutil.copyfile(old, live)
    d = ctx.daemon(ctx.config(passwords={"filter": live, "max_filter_age": "1d",
                                         "upstream": "file://%s/{prefix}.txt" % mirror}))
    cl = d.client(timeout=30)
    st0 = cl.stats()
    eq((st0["filter_stale"], st0["filter_generation"]), (1, 4), "stale flag")
    check(st0["filter_age_seconds"] > 86400, "filter_age_seconds %r" % st0["filter_age_seconds"])
    for i, h in enumerate(absent):
        eq(cl.ask("s%d PW %s" % (i, h)), "s%d CLEAN" % i)
    eq(cl.ask("p PW " + c.password), "p PWNED %d" % c.counts[c.password])
    st = cl.stats()
    eq(st["pw_filter_bypassed"] - st0["pw_filter_bypassed"], 4, "pw_filter_bypassed")
    eq(st["pw_filter_no"] - st0["pw_filter_no"], 0, "pw_filter_no")
    eq(st["upstream_fetches"] - st0["upstream_fetches"], 4, "upstream_fetches")
    # A fresh filter: no longer stale, definite no answered locally again.
    replace_file(ctx.build_filter(c.txt, ctx.path("new.bfuse"), generation=5), live)
    eq(cl.ask("r RELOAD"), "r RELOADED")
    st0 = cl.stats()
    eq((st0["filter_stale"], st0["filter_generation"]), (0, 5), "after a fresh filter")
    h = c.absent(rng)
    while dtest.filter_says(ctx, live, [h])[h]:
        h = c.absent(rng)
    eq(cl.ask("n PW " + h), "n CLEAN")
    st = cl.stats()
    eq((st["pw_filter_no"] - st0["pw_filter_no"], st["upstream_fetches"] - st0["upstream_fetches"],
        st["pw_filter_bypassed"] - st0["pw_filter_bypassed"]), (1, 0, 0), "local answer")
    cl.close()
    d.stop_ok()


def lines_text(lines):
    return "\n".join(lines) + "\n"


@test
def metrics_endpoint(ctx):
    port = dtest.free_port()
    d = ctx.daemon(ctx.config(daemon={"metrics_listen": "127.0.0.1:%d" % port}))
    cl = d.client()
    eq(cl.ask("1 PING"), "1 PONG")

    def get(path, method="GET"):
        h = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        h.request(method, path)
        r = h.getresponse()
        body = r.read().decode()
        h.close()
        return r.status, r.getheader("Content-Type") or "", body

    status, ctype, body = get("/metrics")
    eq(status, 200, "GET /metrics")
    check(ctype.startswith("text/plain"), "Content-Type %r" % ctype)
    m = dict(ln.split(" ", 1) for ln in body.splitlines() if ln and not ln.startswith("#"))
    check(int(m["breachd_requests_ping_total"]) >= 2, "breachd_requests_ping_total %r" % m.get(
        "breachd_requests_ping_total"))
    for key in ("breachd_uptime_seconds", "breachd_filter_loaded", "breachd_cache_hits_total",
                "breachd_upstream_fetches_total", "breachd_circuit_state", "breachd_connections"):
        check(key in m, "no %s in /metrics" % key)
    # The exposition format: every sample has its # HELP and # TYPE, counters
    # end in _total, and promtool (when installed) finds nothing to say.
    lines = body.splitlines()
    for name in m:
        check("# HELP %s " % name in lines_text(lines), "no # HELP for %s" % name)
        typ = [ln.split()[3] for ln in lines if ln.startswith("# TYPE %s " % name)]
        eq(len(typ), 1, "# TYPE lines of %s" % name)
        check(typ[0] == "gauge" or name.endswith("_total"), "counter %s without _total" % name)
    if shutil.which("promtool"):
        r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True,
                           text=True, timeout=60)
        eq((r.returncode, r.stdout + r.stderr), (0, ""), "promtool check metrics")
    eq(get("/other")[0], 404, "another path")
    check(get("/metrics", "POST")[0] in (405, 501), "POST is refused")
    # The figures are STATS's.
    st = cl.stats()
    eq(int(get("/metrics")[2].split("\nbreachd_requests_stats_total ")[1].split()[0]),
       st["requests_stats"], "requests_stats")
    cl.close()
    d.stop_ok()


@test
def socket_file_handling(ctx):
    sock = ctx.path("breachd.sock")
    conf = ctx.config()
    # A stale socket (nobody listening) is replaced.
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(sock)
    stale.close()
    d = ctx.daemon(conf)
    eq(oct(os.stat(sock).st_mode & 0o777), "0o660", "default socket_mode")
    # A second daemon on a live socket refuses to start and leaves it alone.
    d2 = ctx.daemon(ctx.config(name="second.conf", cache={"path": ctx.path("cache2")}),
                    wait=False)
    eq(d2.proc.wait(timeout=30), 1, "second daemon's exit status")
    check("another daemon" in d2.log(), "second daemon: %r" % d2.log())
    eq(d.client().ask("1 PING"), "1 PONG", "the first daemon still answers")
    d.stop_ok()
    check(not os.path.exists(sock), "socket left behind")
    # A file that is not a socket is never replaced.
    with open(sock, "w") as f:
        f.write("precious\n")
    d3 = ctx.daemon(conf, wait=False)
    eq(d3.proc.wait(timeout=30), 1, "exit status over a regular file")
    check("not a socket" in d3.log(), "log: %r" % d3.log())
    eq(open(sock).read(), "precious\n", "the file was touched")


def peer_pid(sock_path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    pid, _, _ = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                 struct.calcsize("3i")))
    s.close()
    return pid


def start_background(ctx, conf, name):
    """Run breachd without --foreground: the starting process's status and
    stderr, which goes through a file: under valgrind the daemon would keep
    a pipe open (valgrind's own descriptor for its reports)."""
    err_path = ctx.path(name + ".stderr")
    with open(err_path, "wb") as err:
        rc = subprocess.run(dtest.breachd_argv("--config", conf), env=dtest.base_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                            timeout=60 * dtest.SLOW).returncode
    with open(err_path, "rb") as f:
        return rc, f.read()


@test
def background_start(ctx):
    conf = ctx.config()
    rc, stderr = start_background(ctx, conf, "good")
    eq(rc, 0, "the starting process's status: %r" % stderr)
    sock = ctx.path("breachd.sock")
    check(os.path.exists(sock), "the socket exists when the parent has exited")
    pid = peer_pid(sock)
    try:
        check(os.path.exists("/proc/%d" % pid), "daemon pid")
        c = dtest.Client(sock)
        eq(c.ask("1 PING"), "1 PONG")
        c.close()
        os.kill(pid, signal.SIGTERM)
        dtest.wait_for(lambda: not os.path.exists("/proc/%d" % pid) or
                       open("/proc/%d/stat" % pid).read().split()[2] == "Z",
                       timeout=30 * dtest.SLOW, what="the background daemon to exit")
        pid = None
        check(not os.path.exists(sock), "socket left behind")
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
    # A failing start is reported by the starting process.
    bad = ctx.config(name="bad.conf", passwords={"filter": ctx.path("missing.bfuse")})
    rc, stderr = start_background(ctx, bad, "bad")
    check(rc != 0 and b"missing.bfuse" in stderr, "failed start: %d %r" % (rc, stderr))


@test
def log_file_in_the_background(ctx):
    # [daemon] log_file: a daemon in the background on a host without syslog
    # keeps its lines there (time-stamped), and a reload reopens the file
    # (logrotate renames it first). A file that cannot be opened stops the
    # start, named.
    logf = ctx.path("breachd-file.log")
    conf = ctx.config(daemon={"log_file": logf})
    rc, stderr = start_background(ctx, conf, "logfile")
    eq(rc, 0, "the starting process's status: %r" % stderr)
    sock = ctx.path("breachd.sock")
    pid = peer_pid(sock)
    try:
        eq(stat.S_IMODE(os.stat(logf).st_mode) & 0o077, 0o040, "log file mode")
        with open(logf) as f:
            first = f.read()
        check(re.search(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} breachd\[%d\]: info: "
                        r"listening on " % pid, first, re.M), "log file:\n" + first)
        os.rename(logf, logf + ".1")
        c = dtest.Client(sock)
        eq(c.ask("1 RELOAD"), "1 RELOADED")
        c.close()
        dtest.wait_for(lambda: os.path.exists(logf) and "reloaded" in open(logf).read(),
                       timeout=30 * dtest.SLOW, what="the reopened log file")
        check("reloaded" not in open(logf + ".1").read(), "the old file got the new lines")
        # a FIFO planted at the path (no reader: a blocking open would wait
        # for one forever) is refused at the reload, which still answers;
        # the lines stay in the file they went to
        os.rename(logf, logf + ".2")
        os.mkfifo(logf)
        c = dtest.Client(sock, timeout=10 * dtest.SLOW)
        eq(c.ask("2 RELOAD"), "2 RELOADED", "a reload with a FIFO at log_file")
        eq(c.ask("3 PING"), "3 PONG")
        c.close()
        dtest.wait_for(lambda: "not a regular file: log lines go where they went before"
                       in open(logf + ".2").read(), timeout=30 * dtest.SLOW,
                       what="the refusal in the log file kept")
        os.unlink(logf)
        os.rename(logf + ".2", logf)
        os.kill(pid, signal.SIGTERM)
        dtest.wait_for(lambda: "stopped" in open(logf).read(), timeout=30 * dtest.SLOW,
                       what="the last line in the log file")
        pid = None
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
    bad = ctx.config(name="badlog.conf", daemon={"log_file": ctx.path("no-such-dir/b.log")})
    rc, stderr = start_background(ctx, bad, "badlog")
    check(rc != 0 and b"[daemon] log_file " in stderr and b"No such file or directory" in stderr,
          "failed start: %d %r" % (rc, stderr))


# ---- systemd ----

def activated_daemon(ctx, conf, listen_fds="1", own_pid=True, ls=None, env=None):
    """breachd with a listening socket as fd 3 and LISTEN_FDS/LISTEN_PID: a
    new one, or ls (a socket an earlier instance had, as systemd keeps it)."""
    path = ctx.path("activated.sock")
    if ls is None:
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ls.bind(path)
        ls.listen(64)
    fd = ls.fileno()

    def to_fd3():
        if fd != 3:
            os.dup2(fd, 3)
        os.set_inheritable(3, True)  # every other fd stays close-on-exec
        dtest._die_with_parent()

    # LISTEN_PID must be breachd's pid: sh sets it to its own ($$), then execs.
    pid_expr = "$$" if own_pid else "1"
    argv = ["/bin/sh", "-c", "LISTEN_PID=%s; export LISTEN_PID; exec \"$@\"" % pid_expr, "sh"]
    argv += dtest.breachd_argv("--config", conf, "--foreground")
    log_path = ctx.path("activated.log")
    log = open(log_path, "wb")
    p = subprocess.Popen(argv, env=dtest.base_env(dict(env or {}, LISTEN_FDS=listen_fds)),
                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                         close_fds=False, preexec_fn=to_fd3)
    log.close()
    ctx.procs.append(p)
    d = dtest.Daemon.__new__(dtest.Daemon)
    d.ctx, d.conf, d.sock, d.log_path, d.proc, d.pid = ctx, conf, path, log_path, p, p.pid
    d._log = log
    ctx.daemons.append(d)
    return d, ls


@test
def socket_activation(ctx):
    c = dtest.corpus()
    own = ctx.path("configured.sock")
    conf = ctx.config(socket_path=own, passwords={"filter": c.filter,
                                                  "upstream": "file://%s/{prefix}.txt" % c.mirror})
    d, ls = activated_daemon(ctx, conf)
    d.wait_ready()
    cl = d.client()
    eq(cl.ask("1 PING"), "1 PONG")
    eq(cl.ask("2 PW " + c.password), "2 PWNED %d" % c.counts[c.password])
    check(cl.stats()["connections"] >= 1, "STATS")
    check(not os.path.exists(own), "breachd created its configured socket too")
    check("passed by systemd" in d.log(), "the log does not say the socket was passed")
    cl.close()
    d.stop_ok()
    check(os.path.exists(d.sock), "breachd removed the socket systemd owns")
    ls.close()
    os.unlink(d.sock)
    # LISTEN_PID of another process: the variables are not for breachd.
    d, ls = activated_daemon(ctx, conf, own_pid=False)
    dtest.wait_for(lambda: os.path.exists(own), what="the configured socket")
    d.sock = own
    d.wait_ready()
    d.stop_ok()
    ls.close()
    os.unlink(ctx.path("activated.sock"))
    # Two sockets passed: refused at start.
    d, ls = activated_daemon(ctx, conf, listen_fds="2")
    rc = d.proc.wait(timeout=30)
    check(rc != 0, "started with LISTEN_FDS=2")
    check("socket activation" in d.log(), "log: %r" % d.log())
    ls.close()


@test
def socket_activation_drain_and_handover(ctx):
    """SIGTERM with a systemd socket: the request in flight is answered, a
    client that connects during the drain waits in the backlog (systemd's
    socket is not accepted from, so it is not refused) and the next instance
    on the same socket answers it: a restart loses no request."""
    port = ctx.faultserver()
    conf = ctx.config(socket_path=ctx.path("configured.sock"),
                      passwords={"filter": "",
                                 "upstream": "http://127.0.0.1:%d/delay/{prefix}" % port},
                      limits={"drain_timeout": "8s"})
    d, ls = activated_daemon(ctx, conf)
    d.wait_ready()
    pending = d.client(timeout=30)
    pending.send("1 PW 12ABC%s\n" % HIT)
    dtest.wait_for(lambda: d.stats()["requests_in_flight"] == 1, what="the request in flight")
    d.send_signal(signal.SIGTERM)
    dtest.wait_for(lambda: "stopping" in d.log(), what="the drain to start")
    late = dtest.Client(d.sock, timeout=30)  # connects: the kernel queues it
    late.send("7 PING\n")
    eq(pending.line(timeout=20), "1 PWNED 42", "the request in flight is answered")
    pending.expect_eof()
    eq(d.proc.wait(timeout=15), 0, "exit status")
    check(os.path.exists(d.sock), "breachd removed the socket systemd owns")
    try:
        got = late.line(timeout=0.5)
    except dtest.Timeout:
        got = None
    check(got is None, "a connection made during the drain was answered by the old "
          "instance: %r" % got)
    d2, _ = activated_daemon(ctx, conf, ls=ls)
    eq(late.line(timeout=20), "7 PONG", "the queued connection, served by the next instance")
    late.close()
    d2.wait_ready()
    d2.stop_ok()
    ls.close()


@test
def journal_stream_prefixes(ctx):
    """With stderr the stream JOURNAL_STREAM names, each line carries the
    syslog level as "<N>" for journald; with any other stderr it does not."""
    conf = ctx.config()
    for matching in (True, False):
        # The Daemon's log file: made here first to learn its inode (the
        # Daemon opens the same path again, which keeps the inode).
        log_path = ctx.path("breachd-%d.log" % len(ctx.daemons))
        with open(log_path, "wb") as f:
            st = os.fstat(f.fileno())
        js = "%d:%d" % (st.st_dev, st.st_ino if matching else st.st_ino + 1)
        d = ctx.daemon(conf, env={"JOURNAL_STREAM": js})
        eq(d.log_path, log_path, "log path")
        d.stop_ok()
        lines = [ln for ln in open(log_path).read().splitlines() if ln]
        check(lines, "no log lines")
        prefixed = [ln for ln in lines if re.match(r"<[0-7]>", ln)]
        if matching:
            eq(len(prefixed), len(lines), "lines without a <N> prefix: %r" % lines)
            check(any(ln.startswith("<6>") for ln in lines), "no info line <6>: %r" % lines)
        else:
            eq(prefixed, [], "prefixes on a stderr that is not the journal")


def recv_notify(ns, timeout=10):
    ns.settimeout(timeout)
    try:
        return ns.recv(4096).decode()
    except socket.timeout:
        raise AssertionError("no sd_notify message within %ds" % timeout)


@test
def sd_notify_messages(ctx):
    path = ctx.path("notify.sock")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(path)
    d, live = filter_daemon(ctx, env={"NOTIFY_SOCKET": path})
    m = recv_notify(ns)
    fields = dict(kv.split("=", 1) for kv in m.splitlines() if "=" in kv)
    eq(fields.get("READY"), "1", "first message %r" % m)
    eq(fields.get("MAINPID"), str(d.pid), "MAINPID")
    check("STATUS" in fields, "no STATUS in %r" % m)
    cl = d.client(timeout=30)
    eq(cl.ask("r RELOAD"), "r RELOADED")
    m1, m2 = recv_notify(ns), recv_notify(ns)
    check("RELOADING=1" in m1.splitlines(), "reload: first %r" % m1)
    check("READY=1" in m2.splitlines(), "reload: then %r" % m2)
    d.send_signal(signal.SIGHUP)
    m1, m2 = recv_notify(ns), recv_notify(ns)
    check("RELOADING=1" in m1.splitlines() and "READY=1" in m2.splitlines(),
          "SIGHUP: %r, %r" % (m1, m2))
    # A failed reload is also followed by READY=1, with the reason in STATUS.
    with open(ctx.path("bad.bfuse"), "wb") as f:
        f.write(b"not a filter")
    replace_file(ctx.path("bad.bfuse"), live)
    check(cl.ask("f RELOAD").startswith("f ERR reload-failed "), "failed reload")
    m1, m2 = recv_notify(ns), recv_notify(ns)
    check("RELOADING=1" in m1.splitlines() and "READY=1" in m2.splitlines(),
          "failed reload: %r, %r" % (m1, m2))
    check("STATUS=reload failed" in m2, "no reason in %r" % m2)
    cl.close()
    d.send_signal(signal.SIGTERM)
    m = recv_notify(ns)
    check("STOPPING=1" in m.splitlines(), "SIGTERM: %r" % m)
    eq(d.proc.wait(timeout=30), 0, "exit status")
    ns.close()


if __name__ == "__main__":
    dtest.main()
