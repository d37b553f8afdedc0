#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""breachd-squid-helper's protocol, without Squid.

The helper is run directly, its stdin and stdout being Squid's side, in
front of a real breachd: channel IDs echoed and answers out of order (a
range query held 3 s by faultserver's "delay" mode), every answer kind
(blocked, safe, UNKNOWN under both --on-unknown values, bad-request and
secret-class as "not checked"), requests without channel IDs, 2,000
pipelined requests, breachd stopped (BH after --timeout), restarted (no
request lost) and hung (BH, late answers ignored), EOF, usage errors.
test_squid.py runs the same helper under a real Squid.
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtest  # noqa: E402
import fakedaemon  # noqa: E402
from dtest import check, eq, test  # noqa: E402

HELPER = None


def url_filter(ctx):
    d = ctx.path("feeds")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "domains.txt"), "w") as f:
        f.write("blocked.test\nslow.test\n")
    with open(os.path.join(d, "urls.txt"), "w") as f:
        f.write("http://phish.test/login.html\n")
    filt, mirror = ctx.path("urls.bbf"), ctx.path("ranges")
    ctx.breachctl("filter", "build", "--kind", "url-sha256", "--output", filt, "--ranges-dir", mirror,
                  "--input", os.path.join(d, "domains.txt") + "=malware",
                  "--input", os.path.join(d, "urls.txt") + "=phishing")
    return filt, mirror


class Helper:
    def __init__(self, ctx, sock, *args):
        with open(ctx.path("helper.err"), "ab") as err:
            self.p = subprocess.Popen([HELPER, "--socket", sock] + list(args), env=dtest.base_env(),
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                      preexec_fn=dtest._die_with_parent)
        ctx.procs.append(self.p)  # killed at the end of the test if still running
        self.lines = []
        self.cond = threading.Condition()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for ln in self.p.stdout:
            with self.cond:
                self.lines.append(ln.decode().rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.lines.append(None)
            self.cond.notify_all()

    def send(self, text):
        self.p.stdin.write(text.encode())
        self.p.stdin.flush()

    def read(self, n, timeout=15):
        """The next n answer lines, in the order they came."""
        end = time.monotonic() + timeout
        with self.cond:
            while len(self.lines) < n:
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError("%d of %d answers after %ds: %r" % (
                        len(self.lines), n, timeout, self.lines))
                self.cond.wait(left)
            out, self.lines = self.lines[:n], self.lines[n:]
        check(None not in out, "the helper closed its output: %r" % out)
        return out

    def ask(self, line, timeout=15):
        self.send(line + "\n")
        return self.read(1, timeout)[0]

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=30)
        return rc


def daemon(ctx, name, filt, upstream):
    conf = ctx.config(name=name + ".conf", socket_path=ctx.path(name + ".sock"),
                      urls={"filter": filt, "upstream": upstream},
                      cache={"path": ctx.path("cache-" + name)})
    return ctx.daemon(conf)


@test
def answers_and_channels(ctx):
    filt, mirror = url_filter(ctx)
    d = daemon(ctx, "file", filt, "file://%s/{prefix}.txt" % mirror)
    h = Helper(ctx, d.sock)
    eq(h.ask("0 http://blocked.test/x -"), '0 OK message="blocked: malware" tag=malware')
    eq(h.ask("1 http://www.Blocked.TEST:8080/a%2Fb?c=d -"), '1 OK message="blocked: malware" tag=malware')
    eq(h.ask("2 http://phish.test/login.html -"), '2 OK message="blocked: phishing" tag=phishing')
    eq(h.ask("3 http://phish.test/other.html -"), "3 ERR")
    eq(h.ask("4 http://good.test/ - extra fields"), "4 ERR")
    eq(h.ask("5 blocked.test:443 -"), '5 OK message="blocked: malware" tag=malware')  # CONNECT
    eq(h.ask("6 http%3A%2F%2Fblocked.test%2F -"), '6 OK message="blocked: malware" tag=malware')
    # refused by breachd: not checked, the ACL does not match
    a = h.ask("7 mailto:alice@example.com -")
    check(re.fullmatch(r'7 ERR message="not checked: secret-class[^"]*"', a), a)
    a = h.ask("8 alice@example.com -")
    check(re.fullmatch(r'8 ERR message="not checked: secret-class[^"]*"', a), a)
    a = h.ask("9 javascript:alert(1) -")
    check(re.fullmatch(r'9 ERR message="not checked: bad-request[^"]*"', a), a)
    # message= values are whole (they were cut at 32 bytes), quoted as
    # Squid's helper protocol reads kv-pair values
    eq(h.ask("12 mailto:alice@example.com -"),
       '12 ERR message="not checked: secret-class e-mail addresses are never looked up"')
    eq(h.ask("13 gopher://host.example/ -"),
       '13 ERR message="not checked: bad-request scheme is not http, https, ftp, ws or wss"')
    # longer than any URL breachd takes: not checked, on its channel, and
    # the rest of the line is not read as another request
    eq(h.ask("10 http://" + "x" * 9000 + "/y -"), '10 ERR message="not checked: URL too long"')
    eq(h.ask("11 http://" + "x" * 30000 + "/ -"), '11 ERR message="not checked: URL too long"')
    eq(h.ask("12 http://blocked.test/" + "p" * 8170 + " -"),
       '12 ERR message="not checked: URL too long"')
    # without concurrency: no channel ID
    eq(h.ask("http://blocked.test/"), 'OK message="blocked: malware" tag=malware')
    eq(h.ask("http://good.test/ -"), "ERR")
    # 2,000 pipelined, channel IDs reused as Squid does; each answered once
    reqs = []
    for i in range(2000):
        u = ["http://blocked.test/%d" % i, "http://good.test/%d" % i,
             "http://phish.test/login.html?i=%d" % i][i % 3]
        reqs.append(u)
    h.send("".join("%d %s -\n" % (i, u) for i, u in enumerate(reqs)))
    got = {}
    for ln in h.read(len(reqs), timeout=60):
        cid, rest = ln.split(" ", 1)
        check(cid not in got, "two answers on channel %s" % cid)
        got[cid] = rest
    for i, u in enumerate(reqs):
        want = "ERR" if "good.test" in u else ('OK message="blocked: %s" tag=%s' % (
            ("malware",) * 2 if "blocked" in u else ("phishing",) * 2))
        eq(got[str(i)], want, u)
    eq(h.close(), 0, "exit status at EOF")
    st = d.stats()
    check(st["url_blocked"] >= 1334 and st["url_safe"] >= 666, "stats %r" % st)


@test
def unknown_and_out_of_order(ctx):
    filt, mirror = url_filter(ctx)
    fport = ctx.faultserver()
    # every range query is held 3 s, then its body does not parse for URLs:
    # UNKNOWN upstream-error
    d = daemon(ctx, "slow", filt, "http://127.0.0.1:%d/delay/{prefix}" % fport)
    allow = Helper(ctx, d.sock)
    block = Helper(ctx, d.sock, "--on-unknown=block")
    allow.send("1 http://slow.test/a -\n2 http://good.test/ -\n")
    block.send("1 http://slow.test/b -\n2 http://good.test/ -\n")
    eq(allow.read(1, 5), ["2 ERR"], "the safe answer first")
    eq(block.read(1, 5), ["2 ERR"], "the safe answer first")
    eq(allow.read(1, 15), ['1 ERR message="unknown: upstream-error"'], "--on-unknown=allow")
    eq(block.read(1, 15), ['1 OK message="unknown: upstream-error" tag=unknown'], "--on-unknown=block")
    eq(allow.close(), 0)
    eq(block.close(), 0)
    # The URL let through unchecked is said in Squid's cache.log (stderr),
    # without the URL; the blocking helper has nothing to say.
    with open(ctx.path("helper.err")) as f:
        err = f.read()
    eq([ln for ln in err.splitlines() if "unchecked" in ln],
       ["breachd-squid-helper: 1 URL(s) allowed unchecked (--on-unknown=allow): breachd could "
        "not tell (last: upstream-error)"], "the fail-open in the helper's log")
    check("slow.test" not in err, "the URL in the helper's log: %r" % err)


@test
def daemon_down_restarted_and_hung(ctx):
    filt, mirror = url_filter(ctx)
    d = daemon(ctx, "file", filt, "file://%s/{prefix}.txt" % mirror)
    h = Helper(ctx, d.sock, "--timeout", "1500")
    eq(h.ask("0 http://blocked.test/ -"), '0 OK message="blocked: malware" tag=malware')
    d.stop_ok()
    # down: BH after --timeout, not before
    t0 = time.monotonic()
    eq(h.ask("1 http://good.test/ -", timeout=10), '1 BH message="breachd unavailable"')
    dt = time.monotonic() - t0
    check(1.4 <= dt < 3.0, "BH after %.2fs" % dt)
    # asked while down, breachd back within the timeout: right answers
    h.send("2 http://blocked.test/ -\n3 http://good.test/ -\n")
    time.sleep(0.3)
    d2 = ctx.daemon(ctx.config(name="file.conf", socket_path=d.sock,
                               urls={"filter": filt, "upstream": "file://%s/{prefix}.txt" % mirror},
                               cache={"path": ctx.path("cache-file")}))
    got = sorted(h.read(2, 10))
    eq(got, ['2 OK message="blocked: malware" tag=malware', "3 ERR"], "answers after the restart")
    # hung: requests sent to it get BH after the timeout; its late answers
    # are dropped, and later requests are answered normally
    d2.send_signal(signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        eq(h.ask("4 http://blocked.test/ -", timeout=10), '4 BH message="breachd did not answer in time"')
        dt = time.monotonic() - t0
    finally:
        d2.send_signal(signal.SIGCONT)
    check(1.4 <= dt < 3.0, "BH after %.2fs" % dt)
    eq(h.ask("5 http://good.test/ -"), "5 ERR")
    eq(h.ask("6 http://blocked.test/y -"), '6 OK message="blocked: malware" tag=malware')
    # EOF with breachd gone: pending requests are answered (BH), then exit 0
    d2.stop_ok()
    h.send("7 http://good.test/ -\n")
    h.p.stdin.close()
    eq(h.read(1, 10), ['7 BH message="breachd unavailable"'])
    eq(h.p.wait(timeout=10), 0, "exit status")
    err = open(ctx.path("helper.err")).read()
    for want in ("closed the connection", "reconnected", "did not answer within"):
        check(want in err, "the helper's stderr lacks %r: %r" % (want, err))
    for host in ("blocked.test", "good.test"):
        check(host not in err, "the helper's stderr holds %s" % host)


@test
def usage_errors(ctx):
    for args in (["--on-unknown=maybe"], ["--max-inflight", "0"], ["--max-inflight", "70000"],
                 ["--timeout", "0"], ["--bogus"]):
        r = subprocess.run([HELPER] + args, capture_output=True, text=True, timeout=10,
                           stdin=subprocess.DEVNULL)
        eq(r.returncode, 2, "exit status of %r" % args)
    r = subprocess.run([HELPER, "--version"], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0 and r.stdout.startswith("breachd-squid-helper "), r.stdout)


@test
def batches_with_secret_class(ctx):
    """Many requests in one write go to breachd in batches and come back in
    batches: every answer on its own channel, across the daemon's batches of
    32 lines; secret-class URLs inside a batch are answered by the helper
    and never sent, a URL holding an address only in its query is checked
    through its other expressions."""
    filt, mirror = url_filter(ctx)
    d = daemon(ctx, "file", filt, "file://%s/{prefix}.txt" % mirror)
    h = Helper(ctx, d.sock, "--max-inflight", "200")
    secret = ["mailto:alice@example.com", "alice%40example.com", "ALICE@EXAMPLE.COM",
              "alice\uff20example.com"]
    kinds = []
    for i in range(300):
        k = i % 7
        if k == 0:
            kinds.append(("http://blocked.test/%d" % i, 'OK message="blocked: malware" tag=malware'))
        elif k == 1:
            kinds.append((secret[(i // 7) % len(secret)], "secret"))
        elif k == 2:
            kinds.append(("http://www.blocked.test/?to=bob@example.com&i=%d" % i,
                          'OK message="blocked: malware" tag=malware'))
        elif k == 3:
            kinds.append(("http://phish.test/login.html", 'OK message="blocked: phishing" tag=phishing'))
        else:
            kinds.append(("https://good%d.test/a/b.html?q=%d" % (i, i), "ERR"))
    h.send("".join("%d %s -\n" % (i, u) for i, (u, _) in enumerate(kinds)))
    got = {}
    for ln in h.read(len(kinds), timeout=60):
        cid, rest = ln.split(" ", 1)
        check(cid not in got, "two answers on channel %s" % cid)
        got[cid] = rest
    for i, (u, want) in enumerate(kinds):
        if want == "secret":
            check(re.fullmatch(r'ERR message="not checked: secret-class[^"]*"', got[str(i)]),
                  "%s: %r" % (u, got[str(i)]))
        else:
            eq(got[str(i)], want, u)
    eq(h.close(), 0, "exit status at EOF")
    st = d.stats()
    # the helper answered the secret-class URLs itself: breachd never saw one
    eq(st["errors_secret_class"], 0, "errors_secret_class")
    eq(st["url_blocked"] + st["url_safe"], len([k for k in kinds if k[1] != "secret"]), "URLs checked")


def _setup():
    global HELPER
    HELPER = os.path.abspath(dtest.ARGS.helper)


@test
def impostor_socket_refused(ctx):
    """Another uid serves the socket (fakedaemon.impostor, answering every
    URL SAFE): the helper refuses it as it would a socket nobody serves
    (BH breachd unavailable, not the impostor's ERR), and says why once on
    stderr (Squid's cache.log), naming the uid."""
    sock = fakedaemon.impostor(ctx)
    h = Helper(ctx, sock, "--timeout", "1000")
    eq(h.ask("0 http://blocked.test/ -", timeout=10), '0 BH message="breachd unavailable"')
    h.p.stdin.close()
    eq(h.p.wait(timeout=10), 0, "exit status")
    err = open(ctx.path("helper.err")).read()
    check("is served by uid 65534" in err and err.count("65534") == 1, err)


if __name__ == "__main__":
    dtest.main(options={"--helper": dict(required=True, help="breachd-squid-helper")},
               setup=_setup)
