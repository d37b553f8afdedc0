# SPDX-License-Identifier: MIT
"""A client of breachd's socket protocol for the Python integration tests
(docs/protocol.md): request lines out, answer lines back with a deadline,
STATS parsed. dtest.py (the harness) re-exports Client, Timeout and
parse_stats. Standard library only."""
import socket
import time


class Timeout(Exception):
    """No answer line within the deadline."""


class Client:
    """A protocol client with line buffering."""

    def __init__(self, path=None, timeout=10, sock=None):
        if sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            try:
                sock.connect(path)
            except OSError:
                sock.close()
                raise
        self.s = sock
        self.timeout = timeout
        self.buf = b""

    def close(self):
        self.s.close()

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.s.sendall(data)

    def line(self, timeout=None):
        """The next response line (str, without LF); None at EOF."""
        end = time.monotonic() + (timeout or self.timeout)
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                raise Timeout("no response line within %.1fs (have %r)" % (
                    timeout or self.timeout, self.buf[:200]))
            self.s.settimeout(left)
            try:
                chunk = self.s.recv(65536)
            except socket.timeout:
                continue
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                if self.buf:
                    raise AssertionError("EOF after a partial line %r" % self.buf[:200])
                return None
            self.buf += chunk
        ln, self.buf = self.buf.split(b"\n", 1)
        return ln.decode(errors="replace")

    def lines(self, n, timeout=None):
        out = []
        for _ in range(n):
            ln = self.line(timeout)
            if ln is None:
                raise AssertionError("EOF after %d of %d lines: %r" % (len(out), n, out))
            out.append(ln)
        return out

    def ask(self, req, timeout=None):
        """Send one request line and return its (only) answer."""
        self.send(req + "\n")
        ln = self.line(timeout)
        if ln is None:
            raise AssertionError("EOF instead of an answer to %r" % req)
        return ln

    def expect_eof(self, timeout=5):
        ln = self.line(timeout)
        if ln is not None:
            raise AssertionError("expected EOF, got %r" % ln)

    def stats(self):
        ln = self.ask("st STATS")
        if not ln.startswith("st STATS "):
            raise AssertionError("bad STATS answer %r" % ln)
        return parse_stats(ln[len("st STATS "):])


def parse_stats(text):
    out = {}
    for kv in text.split():
        k, v = kv.split("=", 1)
        out[k] = int(v) if v.isdigit() else v
    return out
