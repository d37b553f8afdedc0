# SPDX-License-Identifier: MIT
"""Fixtures of the upstream fault matrix (test_faults_upstream.py): the
known range body, the filter over it, the nginx mirror (plain HTTP and four
TLS certificates), the certificates themselves, a DNS server on a loopback
address, and breachd in a private mount namespace whose resolver knows only
that server. Standard library only; dtest.py is the harness.

The universe: every prefix P holds the two entries the fault server's "ok"
mode serves (faultserver.c), P + 0...01 seen 42 times and P + ABCDEF...ABC
seen 7 times, and nothing else. The nginx mirror serves that same body for
every prefix, so every answer is known in advance (expect()).
"""
import os
import random
import socket
import struct
import subprocess
import threading
import time

import dtest
from dtest import check

SUF42 = "0" * 34 + "1"
SUF7 = "ABCDEF0123456789ABCDEF0123456789ABC"
BODY = "%s:42\r\n%s:7\r\n" % (SUF42, SUF7)
NT_SUF42 = "0" * 26 + "1"  # the NT hash ranges ([ntlm]): P + 0...01 seen 42 times
NT_BODY = "%s:42\r\n" % NT_SUF42


def expect(h):
    """The correct answer to PW h (40 hex digits) or NT h (32) in the universe."""
    if len(h) == 32:
        return "PWNED 42" if h[5:] == NT_SUF42 else "CLEAN"
    return {SUF42: "PWNED 42", SUF7: "PWNED 7"}.get(h[5:], "CLEAN")


def is_correct_or_unknown(h, answer):
    return answer == expect(h) or answer.startswith("UNKNOWN ")


class RowCtx(dtest.Ctx):
    """A row's own directory and processes. Rows run in threads: no
    preexec_fn (not safe with threads); every process is stopped by the row
    or by cleanup()."""

    def spawn(self, argv, env=None, stdout=None, stderr=None, **kw):
        p = subprocess.Popen(argv, env=dtest.base_env(env), stdin=subprocess.DEVNULL,
                             stdout=stdout, stderr=stderr, **kw)
        self.procs.append(p)
        return p

    def faultserver_proc(self):
        """A fault server: (port, its state directory, its process)."""
        port = self.faultserver()
        return port, self.path("fault"), self.procs[-1]


# ---- the filter --------------------------------------------------------------------------

class Universe:
    """prefixes: corpus prefixes (both entries in the filter, maybes);
    fps: filter false positives outside the corpus (maybes, CLEAN)."""

    def __init__(self, ctx, n_prefixes, seed=2026):
        rng = random.Random(seed)
        prefixes = set()
        while len(prefixes) < n_prefixes:
            prefixes.add(rng.getrandbits(20))
        self.prefixes = ["%05X" % p for p in sorted(prefixes)]
        rng.shuffle(self.prefixes)
        inp = ctx.path("corpus.txt")
        with open(inp, "w") as f:
            for p in self.prefixes:
                f.write("%s%s:42\n%s%s:7\n" % (p, SUF42, p, SUF7))
        self.filter = ctx.build_filter(inp, ctx.path("universe.bfuse"), fp_bits=8)
        cands = [dtest.rand_hash(rng) for _ in range(6000)]
        says = dtest.filter_says(ctx, self.filter, cands + [self.prefixes[0] + SUF42])
        check(says[self.prefixes[0] + SUF42], "a corpus hash is not a maybe")
        taken = set(self.prefixes)
        self.fps = []
        for h in cands:  # each in a prefix of its own
            if says[h] and h[5:] not in (SUF42, SUF7) and h[:5] not in taken:
                taken.add(h[:5])
                self.fps.append(h)
        check(len(self.fps) >= 8, "only %d false positives" % len(self.fps))
        self._next = 0
        self._next_fp = 0
        self._lock = threading.Lock()

    def take(self, n):
        """n fresh corpus prefixes (never given out twice)."""
        with self._lock:
            out = self.prefixes[self._next:self._next + n]
            self._next += n
        check(len(out) == n, "out of prefixes")
        return out

    def take_fp(self):
        """A fresh false positive, or None when they ran out."""
        with self._lock:
            if self._next_fp >= len(self.fps):
                return None
            self._next_fp += 1
            return self.fps[self._next_fp - 1]


def hashes_of(prefixes):
    """Both corpus hashes of each prefix (coalesced into one fetch each)."""
    return [p + s for p in prefixes for s in (SUF42, SUF7)]


def nt_hashes_of(prefixes):
    """Two NT hashes of each prefix, one in its range, one not (no NT
    filter: both go to the [ntlm] upstream)."""
    return [p + s for p in prefixes for s in (NT_SUF42, "F" * 27)]


# ---- certificates --------------------------------------------------------------------------

OPENSSL = "/usr/bin/openssl"

CA_CNF = """[ca]
default_ca = tca
[tca]
database = %(d)s/index.txt
new_certs_dir = %(d)s/newcerts
serial = %(d)s/serial
default_md = sha256
policy = pol
unique_subject = no
copy_extensions = copy
[pol]
commonName = supplied
"""


def _openssl(*args):
    r = subprocess.run([OPENSSL] + list(args), capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "openssl %s: %s" % (args[0], r.stderr.strip()))


def _asn1_time(t):
    return time.strftime("%Y%m%d%H%M%SZ", time.gmtime(t))


class Certs:
    """A test CA (ca.pem) and leaves: good (IP 127.0.0.1, by the CA),
    wronghost (by the CA, for mirror.example.org only), expired (IP
    127.0.0.1, by the CA, expired yesterday) and selfsigned (IP 127.0.0.1,
    signed by itself). Each leaf is NAME.pem with its key NAME.key."""

    EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def __init__(self, d):
        if not os.access(OPENSSL, os.X_OK):
            raise dtest.Skip("no openssl command")
        self.dir = d
        os.makedirs(os.path.join(d, "newcerts"))
        with open(os.path.join(d, "index.txt"), "w"):
            pass
        with open(os.path.join(d, "serial"), "w") as f:
            f.write("1000\n")
        with open(os.path.join(d, "ca.cnf"), "w") as f:
            f.write(CA_CNF % {"d": d})
        self.ca = self.path("ca.pem")
        _openssl("req", "-x509", *self.EC, "-subj", "/CN=breachd fault matrix CA", "-days", "3",
                 "-keyout", self.path("ca.key"), "-out", self.ca)
        now = time.time()
        day = 86400
        self._leaf("good", "IP:127.0.0.1", now - day, now + 3 * day)
        self._leaf("wronghost", "DNS:mirror.example.org", now - day, now + 3 * day)
        self._leaf("expired", "IP:127.0.0.1", now - 30 * day, now - day)
        _openssl("req", "-x509", *self.EC, "-subj", "/CN=127.0.0.1", "-addext",
                 "subjectAltName=IP:127.0.0.1", "-days", "3",
                 "-keyout", self.path("selfsigned.key"), "-out", self.path("selfsigned.pem"))

    def path(self, name):
        return os.path.join(self.dir, name)

    def _leaf(self, name, san, start, end):
        cn = san.split(":", 1)[1]
        _openssl("req", "-new", *self.EC, "-subj", "/CN=" + cn, "-addext", "subjectAltName=" + san,
                 "-keyout", self.path(name + ".key"), "-out", self.path(name + ".csr"))
        _openssl("ca", "-batch", "-config", self.path("ca.cnf"), "-cert", self.ca, "-keyfile",
                 self.path("ca.key"), "-in", self.path(name + ".csr"), "-out",
                 self.path(name + ".pem"), "-notext", "-startdate", _asn1_time(start),
                 "-enddate", _asn1_time(end))


# ---- the mirror: one nginx, a plain port and a TLS port per certificate ----------------------

SERVER = """    server {
        listen 127.0.0.1:%(port)d%(ssl)s;
        %(certs)s
        location /range/ { root %(www)s; try_files /range.txt =404; }
        location /ntlm/ { root %(www)s; try_files /ntlm.txt =404; }
    }
"""


class Mirror:
    """nginx serving BODY for every prefix at /range/PREFIX (and NT_BODY at
    /ntlm/PREFIX): over plain HTTP
    (port["plain"]) and over TLS with each leaf of certs (port[leaf])."""

    NAMES = ("plain", "good", "wronghost", "expired", "selfsigned")

    def __init__(self, ctx, certs):
        if not os.path.exists(dtest.NGINX):
            raise dtest.Skip("nginx is not installed")
        self.dir = ctx.path("nginx")
        www = os.path.join(self.dir, "www")
        os.makedirs(os.path.join(self.dir, "tmp"))
        os.makedirs(www)
        with open(os.path.join(www, "range.txt"), "w", newline="") as f:
            f.write(BODY)
        with open(os.path.join(www, "ntlm.txt"), "w", newline="") as f:
            f.write(NT_BODY)
        self.access_log = os.path.join(self.dir, "access.log")
        for _ in range(5):  # a port taken between free_port() and nginx
            self.port = {n: dtest.free_port() for n in self.NAMES}
            servers = ""
            for n in self.NAMES:
                tls = n != "plain"
                servers += SERVER % dict(
                    port=self.port[n], ssl=" ssl" if tls else "", www=www,
                    certs="ssl_certificate %s; ssl_certificate_key %s;" % (
                        certs.path(n + ".pem"), certs.path(n + ".key")) if tls else "")
            conf = os.path.join(self.dir, "nginx.conf")
            with open(conf, "w") as f:
                f.write(dtest.nginx_conf(self.dir, servers, connections=512))
            p = ctx.spawn([dtest.NGINX, "-p", self.dir, "-e", self.dir + "/error.log", "-c", conf],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if all(dtest.wait_port(self.port[n], p, 5) for n in self.NAMES):
                return
            p.kill()
            p.wait()
        raise AssertionError("nginx did not start (see %s/error.log)" % self.dir)

    def url(self, name="plain", host="127.0.0.1"):
        scheme = "http" if name == "plain" else "https"
        return "%s://%s:%d/range/{prefix}" % (scheme, host, self.port[name])

    def requests_for(self, prefixes):
        """Access log lines that ask for one of prefixes."""
        want = ["/%s/%s " % (k, p) for p in prefixes for k in ("range", "ntlm")]
        with open(self.access_log) as f:
            return [ln for ln in f if any(w in ln for w in want)]


# ---- DNS: a server on a loopback address, breachd in a mount namespace that knows only it -----

NAME = "range.breachd-fault.invalid"  # RFC 2606: never a real name


class FakeDns:
    """A DNS server on UDP ADDR:53, ADDR a random 127/8 address (all of
    127/8 is the loopback). mode: "servfail", "nxdomain" or "answer" (NAME
    A 127.0.0.1; AAAA: no data; other names NXDOMAIN) or "drop" (never
    answers: a dead resolver, a firewall). queries: (name, qtype)
    of every query received. close() stops it: then nothing listens there and
    a query is refused by the kernel at once (ICMP port unreachable)."""

    def __init__(self):
        rng = random.Random()
        for _ in range(20):
            self.addr = "127.%d.%d.%d" % (rng.randint(64, 250), rng.randint(1, 250),
                                          rng.randint(2, 250))
            self.mode = "servfail"
            self.queries, self.held = [], []
            try:
                self._open()
                break
            except OSError:
                continue
        else:
            raise AssertionError("no loopback address free for a DNS server")

    def _open(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.bind((self.addr, 53))
        except OSError:
            s.close()
            raise
        s.settimeout(0.05)
        self.sock = s
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def reopen(self):
        self._open()

    def close(self):
        if self.sock:
            self._stop = True
            self.thread.join()
            self.sock.close()
            self.sock = None

    def _serve(self):
        while not self._stop:
            try:
                data, peer = self.sock.recvfrom(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            reply = self._answer(data)
            if self.mode == "drop":
                self.held.append((data, peer))
            elif reply:
                self.sock.sendto(reply, peer)

    def answer_held(self):
        """Mode "answer", and the queries dropped so far answered now (the
        lookups still waiting for them end)."""
        self.mode = "answer"
        held, self.held = self.held, []
        for data, peer in held:
            reply = self._answer(data, record=False)
            if reply:
                self.sock.sendto(reply, peer)

    def _answer(self, q, record=True):
        if len(q) < 17:
            return None
        qid, flags = struct.unpack(">HH", q[:4])
        i, labels = 12, []
        while i < len(q) and q[i]:
            labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace"))
            i += 1 + q[i]
        if i + 5 > len(q):
            return None
        qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
        name = ".".join(labels).lower()
        if record:
            self.queries.append((name, qtype))
        rcode, answer = {"servfail": 2, "nxdomain": 3}.get(self.mode, 0), b""
        if self.mode == "answer" and name != NAME:
            rcode = 3
        elif self.mode == "answer" and qtype == 1:
            answer = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 5, 4) + socket.inet_aton("127.0.0.1")
        head = struct.pack(">HHHHHH", qid, 0x8080 | (flags & 0x0100) | rcode, 1,
                           1 if answer else 0, 0, 0)
        return head + q[12:i + 5] + answer


NS_SCRIPT = ('mount --bind "$1" /etc/resolv.conf && mount --bind "$2" /etc/nsswitch.conf && '
             'mount --bind "$3" /etc/hosts && { [ -z "$4" ] || mount --bind "$4" /run/nscd; } && '
             'shift 4 && exec "$@"')


def private_resolver_argv(ctx, dns_addr, options="timeout:1 attempts:1"):
    """The command prefix that runs a program in a private mount namespace
    where /etc/resolv.conf names only dns_addr, /etc/nsswitch.conf resolves
    host names by files and DNS only (no systemd-resolved, mDNS or other
    module that could ask the network) and /etc/hosts knows only localhost
    (nscd's socket directory, if any, is hidden). The program keeps the host's
    network namespace (it reaches 127.0.0.1), so a name lookup can only go
    to dns_addr, on the loopback. Skips when the namespace cannot be made
    (not root, no unshare)."""
    d = ctx.path("resolver")
    os.makedirs(d, exist_ok=True)
    files = {"resolv.conf": "nameserver %s\noptions %s\n" % (dns_addr, options),
             "nsswitch.conf": "hosts: files dns\n",
             "hosts": "127.0.0.1 localhost\n::1 localhost\n"}
    for name, text in files.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    nscd = ""
    if os.path.isdir("/run/nscd"):
        nscd = os.path.join(d, "no-nscd")
        os.makedirs(nscd, exist_ok=True)
    prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c", NS_SCRIPT, "sh",
              os.path.join(d, "resolv.conf"), os.path.join(d, "nsswitch.conf"),
              os.path.join(d, "hosts"), nscd]
    try:
        r = subprocess.run(prefix + ["cat", "/etc/resolv.conf"], capture_output=True, text=True,
                           timeout=30)
    except OSError as e:
        raise dtest.Skip("no unshare: %s" % e)
    if r.returncode != 0 or r.stdout != files["resolv.conf"]:
        raise dtest.Skip("cannot make a private mount namespace: %s" % r.stderr.strip())
    return prefix


class PrefixedDaemon(dtest.Daemon):
    """dtest.Daemon whose breachd runs behind a command prefix (the private
    resolver above); the prefix execs, so the pid is breachd's."""

    def __init__(self, ctx, conf, prefix):
        self.ctx = ctx
        self.conf = conf
        self.sock = dtest.conf_socket(conf)
        self.log_path = ctx.path("breachd-%d.log" % len(ctx.daemons))
        self._log = open(self.log_path, "wb")
        argv = prefix + dtest.breachd_argv("--config", conf, "--foreground")
        self.proc = ctx.spawn(argv, stdout=self._log, stderr=subprocess.STDOUT)
        self.pid = self.proc.pid
        ctx.daemons.append(self)
        self.wait_ready()


# ---- asking, counting ------------------------------------------------------------------------

def ask_all(d, hashes, conns=1, timeout=60):
    """Send PW (NT for an NT hash) for every hash, pipelined over conns connections at once;
    returns the answers (without ids) in the order of hashes."""
    out = [None] * len(hashes)
    errors = []

    def one(part):
        try:
            cl = d.client(timeout=timeout * dtest.SLOW)
            try:
                cl.send("".join("%d %s %s\n" % (i, "NT" if len(hashes[i]) == 32 else "PW",
                                                  hashes[i]) for i in part))
                for ln in cl.lines(len(part)):
                    rid, ans = ln.split(" ", 1)
                    out[int(rid)] = ans
            finally:
                cl.close()
        except Exception as e:  # noqa: B902 - reported below
            errors.append(e)

    parts = [list(range(k, len(hashes), conns)) for k in range(conns)]
    threads = [threading.Thread(target=one, args=(p,)) for p in parts if p]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def settled_fds(pid):
    """The descriptor count once it is the same twice 100 ms apart."""
    a = fd_count(pid)
    time.sleep(0.1)
    return a if fd_count(pid) == a else None


def tcp_conns(pid, port, local=False):
    """pid's TCP sockets whose remote (local=True: local) port is port."""
    inodes = {link[8:-1] for link in dtest.fd_links(pid).values() if link.startswith("socket:[")}
    n = 0
    for table in ("tcp", "tcp6"):
        try:
            with open("/proc/%d/net/%s" % (pid, table)) as f:
                rows = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for r in rows:
            cols = r.split()
            addr = cols[1] if local else cols[2]
            if cols[9] in inodes and int(addr.split(":")[1], 16) == port and cols[3] != "0A":
                n += 1
    return n


# ---- the fault server's files -------------------------------------------------------------

def fs_requests(state, mode, prefixes):
    """requests.log lines of the fault server in mode for one of prefixes."""
    try:
        with open(os.path.join(state, "requests.log")) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    return [ln for ln in lines if ln.split()[0] == mode and ln.split()[1] in prefixes]


def control(state, name, text=None):
    """Write (or, text None, remove) a control file of the fault server."""
    path = os.path.join(state, name)
    if text is None:
        if os.path.exists(path):
            os.unlink(path)
        return
    with open(path + ".tmp", "w") as f:
        f.write(text + "\n")
    os.replace(path + ".tmp", path)


def tally(answers):
    """"N x ANSWER" phrases, most frequent first."""
    counts = {}
    for a in answers:
        counts[a] = counts.get(a, 0) + 1
    return ", ".join("%d x %s" % (n, a) for a, n in sorted(counts.items(), key=lambda kv: -kv[1]))
