#!/bin/bash
# SPDX-License-Identifier: MIT
# What one small file costs the kernel (ext4), by the way it is put in place:
# the floor under any corpus downloader ("Corpus download" in
# tests/bench/RESULTS.md). For each mode, N files of 80 bytes are written into
# a new ext4 filesystem on a sparse loop image (direct I/O), then one
# syncfs(); it prints wall, user and system seconds and system us per file.
#   create   open(O_CREAT|O_EXCL) + write + close     (curl: not atomic)
#   tmpfile  open(O_TMPFILE) + write + fstat + linkat  (breachctl download)
#            + close
#   rename   open(".tmp" name) + write + fstat + close + rename
#   subdir   the same with the temp file in a sibling directory
#
# Usage: tests/bench/bench-file-create.sh [MODE...]   (default: all four)
# Env:   N (200000), TMPDIR (/var/tmp). Needs root (mount), ~1 GB of scratch.
set -euo pipefail
N=${N:-200000}
[ "$(id -u)" = 0 ] || { echo "bench-file-create: needs root (loop mount)" >&2; exit 1; }
[ $# -gt 0 ] || set -- create tmpfile rename subdir
S=$(mktemp -d "${TMPDIR:-/var/tmp}/breachd-bench-fc.XXXXXX")
DEV=
cleanup() {
    mountpoint -q "$S/mnt" && umount "$S/mnt"
    [ -n "$DEV" ] && losetup -d "$DEV" 2>/dev/null
    rm -rf "$S"
}
trap cleanup EXIT
cat >"$S/fc.py" <<'PY'
import os, resource, sys, time
mode, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
data = b'0123456789ABCDEF0123456789ABCDEF012:123\r\n' * 2
r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.time()
for p in range(n):
    name = '%05X.txt' % p
    if mode == 'create':
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dfd)
        os.write(fd, data)
        os.close(fd)
    elif mode == 'tmpfile':
        fd = os.open('.', os.O_WRONLY | os.O_TMPFILE, 0o644, dir_fd=dfd)
        os.write(fd, data)
        os.fstat(fd)
        os.link('/proc/self/fd/%d' % fd, name, dst_dir_fd=dfd, follow_symlinks=True)
        os.close(fd)
    else:
        tmp = ('.tmp/' + name) if mode == 'subdir' else ('.dl-' + name + '.tmp')
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=dfd)
        os.write(fd, data)
        os.fstat(fd)
        os.close(fd)
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
os.syncfs(dfd) if hasattr(os, 'syncfs') else os.sync()
r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.time()
sys_s = r1.ru_stime - r0.ru_stime
print('%-8s N=%d  wall %6.2f s  user %5.2f s  sys %5.2f s  sys %5.1f us/file'
      % (mode, n, t1 - t0, r1.ru_utime - r0.ru_utime, sys_s, 1e6 * sys_s / n))
PY
for mode in "$@"; do
    truncate -s 4G "$S/img"
    mkfs.ext4 -q -F -N $((N * 5 / 4 + 1024)) -E lazy_itable_init=0,lazy_journal_init=0 "$S/img"
    DEV=$(losetup --find --show --direct-io=on "$S/img")
    mkdir -p "$S/mnt"
    mount "$DEV" "$S/mnt"
    mkdir "$S/mnt/.tmp"
    sync
    python3 "$S/fc.py" "$mode" "$S/mnt" "$N"
    umount "$S/mnt"
    losetup -d "$DEV"
    DEV=
    rm -f "$S/img"
done
