# SPDX-License-Identifier: MIT
"""breachctl password with a typed password: run on a pseudo-terminal
(pty.fork), the password written when the prompt shows. Shared by
test_similar.py and test_banned.py; standard library only."""
import errno
import os
import pty
import select
import time

import dtest
from dtest import check


def typed(sock, password, *args):
    """breachctl password on a pty (a typed password): (output, status)."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execve(dtest.ARGS.breachctl, [dtest.ARGS.breachctl, "--socket", sock, "password"] +
                      list(args), dtest.base_env())
        finally:
            os._exit(127)
    out, end, sent = b"", time.monotonic() + 30, False
    try:
        while True:
            r, _, _ = select.select([fd], [], [], max(0, end - time.monotonic()))
            check(r, "pty: timed out: %r" % out)
            try:
                chunk = os.read(fd, 4096)
            except OSError as e:
                if e.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            out += chunk
            if not sent and b"Password: " in out:
                os.write(fd, (password + "\n").encode())
                sent = True
    finally:
        _, st = os.waitpid(pid, 0)
        os.close(fd)
    return out.decode(errors="replace"), os.WEXITSTATUS(st)
