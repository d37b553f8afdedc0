#!/bin/bash
# SPDX-License-Identifier: MIT
# The whole corpus, by hand: a password filter of N keys (default
# 2,070,000,000, the size of Have I Been Pwned's SHA-1 corpus) built from
# HIBP-format text on a pipe, then served by breachd.
#
#   gen_hibp hibp N | breachctl filter build --kind password-sha1 --input - ...
#
# Build, once per ARITIES entry ("default" = no --arity option): wall time of
# the pipeline, CPU time and peak RSS of breachctl (GNU time), the largest
# size the spill directory (--tmpdir) reached (sampled every 2 s with du),
# the file size and bits per key. Only the first filter is kept for serving
# (the disk holds one at a time).
#
# Serve: breachd on that filter, no upstream (a filter "maybe", 1 in 65,536
# random hashes, answers UNKNOWN: counted, not timed apart), loadgen with
# random hashes:
#   - single checks (1 connection, 1 request at a time), cold page cache: the
#     filter's pages dropped with posix_fadvise(DONTNEED) just before, each
#     check then faults in the few pages its key maps to;
#   - the same, warm: the whole file read into the page cache first;
#   - throughput at CONNS connections x DEPTH requests outstanding;
#   - breachd's RSS: all of it, the filter mapping's part, the rest.
#
# Usage: tests/bench/bench-fullscale.sh            (about 30 minutes on 2 cores)
# Env:   N (default 2070000000; counts like 100M work), ARITIES (default
#        "default 4"), BUILD (default build-bench, release), TMPDIR (scratch:
#        ~17 GB of spill plus the 4.7 GB filter at the default N),
#        SINGLE (single checks per cold/warm run, default 20000),
#        DURATION (throughput seconds, default 10), CONNS (50), DEPTH (16),
#        SERVE (default 1; 0: the builds only).
set -euo pipefail
# shellcheck source=tests/bench/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

N=$(to_count "${N:-2070000000}")
read -r -a arities <<<"${ARITIES:-default 4}"
SINGLE=${SINGLE:-20000}
DURATION=${DURATION:-10}
CONNS=${CONNS:-50}
DEPTH=${DEPTH:-16}
BREACHD=$BUILD/daemon/breachd
LOADGEN=$BUILD/tests/bench/loadgen

need_pkg "$GNUTIME" time
ensure_build
build_targets daemon/breachd tests/bench/loadgen
make_scratch_and_pids

machine_line
echo "# gen_hibp hibp $N | breachctl filter build --kind password-sha1 --input - --tmpdir SPILL [--arity A]"
echo
echo "| arity | keys | wall s | CPU s | CPU ns/key | peak RSS MiB | peak spill MiB | file bytes | bits/key | load before/after |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"

# spill_watch DIR OUT: the largest `du` of DIR every 2 s, into OUT, until killed.
spill_watch() {
    local max=0 cur
    while :; do
        cur=$(du -sbx "$1" 2>/dev/null | cut -f1) || cur=0
        [ "${cur:-0}" -gt "$max" ] && { max=$cur; echo "$max" >"$2"; }
        sleep 2
    done
}

serve_filter=
for a in "${arities[@]}"; do
    out=$SCRATCH/filter-$a.bfuse
    spill=$SCRATCH/spill
    mkdir -p "$spill"
    echo 0 >"$SCRATCH/spill.max"
    spill_watch "$spill" "$SCRATCH/spill.max" &
    wpid=$!
    opt=()
    [ "$a" = default ] || opt=(--arity "$a")
    load0=$(cut -d' ' -f1 /proc/loadavg)
    t0=$(now)
    "$GEN" hibp "$N" |
        "$GNUTIME" -v -o "$SCRATCH/time.txt" "$BREACHCTL" filter build --kind password-sha1 \
            --input - --output "$out" --tmpdir "$spill" --source "bench-fullscale $N" "${opt[@]}" \
            2>"$SCRATCH/build.log" || { cat "$SCRATCH/build.log" "$SCRATCH/time.txt" >&2; exit 1; }
    t1=$(now)
    kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null || true
    load1=$(cut -d' ' -f1 /proc/loadavg)
    size=$(file_size "$out")
    cpu=$(tv_cpu "$SCRATCH/time.txt")
    echo "| $a | $N | $(elapsed "$t0" "$t1") | $cpu | $(calc "$cpu * 1e9 / $N" 0) | $(tv_rss_mib "$SCRATCH/time.txt") | $(calc "$(cat "$SCRATCH/spill.max") / 1048576" 0) | $size | $(calc "$size * 8 / $N" 3) | $load0 / $load1 |"
    rm -rf "$spill"
    if [ -z "$serve_filter" ]; then serve_filter=$out; else rm -f "$out"; fi
done
echo

# --- serving ---
if [ "${SERVE:-1}" = 0 ]; then
    machine_line
    exit 0
fi
sock=$SCRATCH/breachd.sock
cat >"$SCRATCH/breachd.conf" <<EOF
[daemon]
socket = $sock
socket_mode = 0600
log_level = notice
[passwords]
filter = $serve_filter
upstream =
[cache]
path = $SCRATCH/cache
EOF
t0=$(now)
start_breachd "$SCRATCH/breachd.conf" "$SCRATCH/breachd.log" "$sock"
echo "breachd ready in $(elapsed "$t0" "$(now)") s on $(basename "$serve_filter") ($(file_size "$serve_filter") bytes)"

drop_cache() { # PID FILE: FILE's pages out of PID's mapping and the page cache
    # posix_fadvise(DONTNEED) leaves pages that a process maps; breachd maps
    # the filter, so its mappings of FILE are paged out first with
    # process_madvise(MADV_PAGEOUT) (Linux 5.10; root or CAP_SYS_NICE).
    python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid, path = int(sys.argv[1]), sys.argv[2]
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
pidfd = libc.syscall(434, pid, 0)                      # pidfd_open
if pidfd < 0: sys.exit("pidfd_open: " + os.strerror(ctypes.get_errno()))
for line in open("/proc/%d/maps" % pid):
    f = line.split()
    if len(f) >= 6 and f[5] == path:
        a, b = (int(x, 16) for x in f[0].split("-"))
        step = 1 << 30
        for s in range(a, b, step):
            v = iovec(s, min(step, b - s))
            if libc.syscall(440, pidfd, ctypes.byref(v), 1, 21, 0) < 0:   # process_madvise PAGEOUT
                sys.exit("process_madvise: " + os.strerror(ctypes.get_errno()))
fd = os.open(path, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)' "$1" "$2"
}
cached_mib() { # FILE: how much of it is in the page cache (mincore through a mapping)
    python3 -c 'import ctypes, mmap, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDONLY); size = os.fstat(fd).st_size
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
p = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
pages = (size + 4095) // 4096
vec = (ctypes.c_ubyte * pages)()
libc.mincore(ctypes.c_void_p(p), ctypes.c_size_t(size), vec)
print(round(sum(b & 1 for b in vec) * 4096 / 1048576))' "$1"
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
rows=()
row() { # LABEL RESULT-LINE
    rows+=("| $1 | $(field answered "$2") | $(field rps "$2") | $(field p50_us "$2") | $(field p99_us "$2") | $(field p999_us "$2") | $(field max_us "$2") | $(field unknown "$2") | $(field daemon_ns_per_req "$2") |")
}

read -r -a r0 <<<"$(rss "$dpid" "$serve_filter")"
drop_cache "$dpid" "$serve_filter"
echo "page cache before the cold run: $(cached_mib "$serve_filter") MiB of the filter"
res=$("$LOADGEN" -s "$sock" -c 1 -P 1 -n "$SINGLE" -w 0 -q)
row "single checks, cold page cache ($SINGLE)" "$res"
echo "page cache after it: $(cached_mib "$serve_filter") MiB"
cat "$serve_filter" >/dev/null
echo "page cache after reading the file: $(cached_mib "$serve_filter") MiB"
res=$("$LOADGEN" -s "$sock" -c 1 -P 1 -n "$SINGLE" -w 0 -q)
row "single checks, warm page cache ($SINGLE)" "$res"
res=$("$LOADGEN" -s "$sock" -c "$CONNS" -P "$DEPTH" -d "$DURATION" -w 2 -q)
row "throughput, $CONNS conns x $DEPTH, warm (${DURATION} s)" "$res"
read -r -a r1 <<<"$(rss "$dpid" "$serve_filter")"

echo
echo "| run | answered | req/s | p50 us | p99 us | p99.9 us | max us | UNKNOWN (filter maybes, no upstream) | breachd CPU ns/req |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
echo
echo "| breachd RSS | total MiB | filter mapping MiB | without the filter MiB | anon+shmem MiB |"
echo "|---|---:|---:|---:|---:|"
echo "| after start | $(calc "${r0[0]} / 1024") | $(calc "${r0[1]} / 1024") | $(calc "(${r0[0]} - ${r0[1]}) / 1024") | $(calc "${r0[2]} / 1024") |"
echo "| after the runs | $(calc "${r1[0]} / 1024") | $(calc "${r1[1]} / 1024") | $(calc "(${r1[0]} - ${r1[1]}) / 1024") | $(calc "${r1[2]} / 1024") |"
machine_line
