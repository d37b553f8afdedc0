# SPDX-License-Identifier: MIT
"""A fake breachd for the client-side tests (test_client_faults.py, the PAM
tests through pamtest.py): a Unix socket served by threads of the test
process, where handler(n, rid, rest, conn) is called for each request line
(n: the how-many-th on its connection, rid: its id, rest: the request) and
answers however the test wants, or not at all; returning "close" shuts the
connection. Standard library only."""

import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading


class FakeDaemon:
    def __init__(self, path, handler, backlog=16, mode=None):
        self.path = path
        self.handler = handler
        self.srv = socket.socket(socket.AF_UNIX)
        self.srv.bind(path)
        if mode is not None:
            os.chmod(path, mode)
        self.srv.listen(backlog)
        self.ids = []  # per connection: the request ids seen
        self.conns = []
        self.threads = []
        self.stopping = False
        self.t = threading.Thread(target=self.serve, daemon=True)
        self.t.start()

    def serve(self):
        while not self.stopping:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            ids = []
            self.ids.append(ids)
            self.conns.append(c)
            t = threading.Thread(target=self.conn, args=(c, ids), daemon=True)
            self.threads.append(t)
            t.start()

    def conn(self, c, ids):
        buf = b""
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    break
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    rid, _, rest = line.decode().partition(" ")
                    ids.append(rid)
                    if self.handler(len(ids), rid, rest, c) == "close":
                        c.shutdown(socket.SHUT_RDWR)
                        return
        except OSError:
            pass
        finally:
            c.close()

    def stop(self):
        """Stop accepting, end the connections still open (a client that
        was never answered), wait for the threads."""
        self.stopping = True
        try:
            self.srv.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.srv.close()
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.t.join(5)
        for t in self.threads:
            t.join(5)


def impostor(ctx, uid=65534):
    """Another user's process serving a socket where breachd's is expected
    (a socket directory writable by others, docs/privacy.md "Who answers
    the clients"): it answers every PW and NT check CLEAN and every URL
    SAFE. Needs root (to become uid); returns the socket's path."""
    import dtest
    if os.getuid() != 0:
        raise dtest.Skip("needs root to serve a socket as another uid")
    # the test's directory is its own (0700): one the other uid can enter
    d = tempfile.mkdtemp(prefix="breachd-impostor.")
    atexit.register(shutil.rmtree, d, True)
    os.chmod(d, 0o777)
    path = os.path.join(d, "breachd.sock")
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), path, str(uid)],
                         stdout=subprocess.PIPE, preexec_fn=dtest._die_with_parent)
    if hasattr(ctx, "procs"):
        ctx.procs.append(p)  # a dtest context: killed at the end of the test
    else:
        atexit.register(p.kill)
    if p.stdout.readline().strip() != b"ready":
        raise AssertionError("the impostor did not start")
    return path


def _impostor_main(path, uid):
    """The impostor's process: become uid, then serve path (listen()
    records that uid: what SO_PEERCRED tells a client)."""
    import time
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    answer = {"PW": "CLEAN", "NT": "CLEAN", "URL": "SAFE", "PING": "PONG"}

    def handler(n, rid, rest, conn):
        verb = rest.split(" ")[0]
        conn.sendall(("%s %s\n" % (rid, answer.get(verb, "ERR unknown-verb"))).encode())

    FakeDaemon(path, handler)
    print("ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    _impostor_main(sys.argv[1], int(sys.argv[2]))
