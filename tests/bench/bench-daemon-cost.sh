#!/bin/bash
# SPDX-License-Identifier: MIT
# What one definite-no PW check costs the daemon, in the figures a shared
# machine blurs least, for two builds and Redis side by side.
#
# 1. A password filter of KEYS (default 1M) random SHA-1s (gen_hibp hibp,
#    BEFORE's tools), no upstream; when redis-server and redis-benchmark
#    are installed, Redis on a Unix socket with the same KEYS hashes as
#    40-hex members of one set (SADD through redis-cli --pipe).
# 2. ROUNDS times (default 3), the sides in turn (the order rotated each
#    round, so that none always goes first): BEFORE's breachd, AFTER's
#    breachd, Redis. Each: loadgen (redis-benchmark for Redis: SISMEMBER of
#    random absent members) -c 50 -P 16 -n N (default 2M) for req/s and the
#    server's CPU ns per request (utime + stime of /proc/PID/stat, 10 ms
#    ticks), then N/4 more requests under `perf stat -e
#    raw_syscalls:sys_enter` and the tracepoints of the calls that matter,
#    attached to the server: system calls per request.
# 3. Once per build (instructions do not depend on the machine's load):
#    breachd under valgrind --tool=callgrind, collection switched on with
#    callgrind_control around loadgen -c 50 -P 16 -n CG_N (default 200,000):
#    instructions per request, the whole process (event loop, kernel entry
#    stubs, libevent, framing, parsing, the filter, the answer).
# Prints one row per run, then the medians and AFTER/BEFORE, Redis/AFTER.
#
# Usage: BEFORE=DIR AFTER=DIR tests/bench/bench-daemon-cost.sh
#        (build directories with daemon/breachd; BEFORE also with breachctl,
#        gen_hibp and loadgen, e.g. --buildtype=debugoptimized)
# Env:   ROUNDS (3), N (2000000), KEYS (1000000), CG_N (200000; 0 = no
#        callgrind), REDIS (1; 0 = without Redis), TMPDIR (default /var/tmp).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/bench-common.sh"
: "${BEFORE:?BEFORE=build dir}" "${AFTER:?AFTER=build dir}"
ROUNDS=${ROUNDS:-3}
N=${N:-2000000}
KEYS=${KEYS:-1000000}
CG_N=${CG_N:-200000}
REDIS=${REDIS:-1}
LOADGEN=$BEFORE/tests/bench/loadgen
CTL=$BEFORE/client/breachctl/breachctl
GEN=$BEFORE/tests/bench/gen_hibp
for p in "$BEFORE/daemon/breachd" "$AFTER/daemon/breachd" "$LOADGEN" "$CTL" "$GEN"; do
    [ -x "$p" ] || { echo "bench-daemon-cost: $p is missing" >&2; exit 1; }
done
command -v perf >/dev/null || { echo "bench-daemon-cost: needs perf (linux-perf)" >&2; exit 1; }
if [ "$REDIS" = 1 ] && ! command -v redis-benchmark >/dev/null; then
    echo "# Redis skipped: apt-get install redis-server redis-tools" >&2
    REDIS=0
fi
S=$(mktemp -d "${TMPDIR:-/var/tmp}/breachd-cost.XXXXXX")
rpid=
cleanup() {
    [ -z "$rpid" ] || kill -TERM "$rpid" 2>/dev/null || true
    rm -rf "$S"
}
trap cleanup EXIT
ulimit -n 4096 2>/dev/null || true
TCK=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rps() { grep '^RESULT' | tr ' ' '\n' | sed -n 's/^rps=//p'; }
echo "# $(date -u +%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"

"$GEN" hibp "$KEYS" | "$CTL" filter build --kind password-sha1 --input - --output "$S/pw.bfuse" \
    >/dev/null 2>&1
cat >"$S/breachd.conf" <<EOF
[daemon]
socket = $S/breachd.sock
socket_mode = 0600
log_level = notice
[passwords]
filter = $S/pw.bfuse
upstream =
[cache]
path = $S/cache
EOF

if [ "$REDIS" = 1 ]; then
    redis-server --port 0 --unixsocket "$S/redis.sock" --unixsocketperm 700 --save '' \
        --appendonly no --dir "$S" --daemonize no --loglevel warning >"$S/redis.log" 2>&1 &
    rpid=$!
    for _ in $(seq 100); do
        redis-cli -s "$S/redis.sock" ping >/dev/null 2>&1 && break
        sleep 0.1
    done
    "$GEN" plain "$KEYS" | awk '
        function flush() { if (k) { printf "*%d\r\n$4\r\nSADD\r\n$5\r\nbench\r\n%s", k + 2, buf; buf = ""; k = 0 } }
        { buf = buf "$40\r\n" $1 "\r\n"; if (++k == 1000) flush() }
        END { flush() }' | redis-cli -s "$S/redis.sock" --pipe >/dev/null
    echo "# Redis $(redis-server --version | cut -d' ' -f3 | tr -d 'v='): $(redis-cli -s "$S/redis.sock" scard bench) members"
fi

pids=()
BREACHD_WRAP=()
# breachd of BUILD [under WRAPPER...]: sets bpid (bench-common.sh's start)
start_side() { # BUILD [WRAPPER...]
    BREACHD=$1/daemon/breachd
    BREACHD_WRAP=("${@:2}")
    start_breachd "$S/breachd.conf" "$S/breachd.log" "$S/breachd.sock"
    bpid=$dpid
}

# The load of one side: COUNT requests, prints req/s.
load() { # SIDE COUNT
    if [ "$1" = redis ]; then
        redis-benchmark -s "$S/redis.sock" -c 50 -P 16 -n "$2" -r 1000000000000 --csv \
            SISMEMBER bench __rand_int__ | awk -F'"' 'NR == 2 { print $4 }'
    else
        "$LOADGEN" -s "$S/breachd.sock" -c 50 -P 16 -n "$2" -w 0 --no-stats -q | rps
    fi
}

EVENTS=raw_syscalls:sys_enter
for s in read write writev readv ioctl epoll_wait epoll_ctl; do
    EVENTS+=,syscalls:sys_enter_$s
done
# run SIDE: "rps cpu_ns syscalls/req read write writev readv ioctl epoll_wait epoll_ctl"
run() {
    local pid t0 t1 r m=$((N / 4))
    if [ "$1" = redis ]; then
        pid=$rpid
    else
        local dir=$BEFORE
        [ "$1" = after ] && dir=$AFTER
        start_side "$dir"
        pid=$bpid
    fi
    t0=$(ticks "$pid")
    r=$(load "$1" "$N")
    t1=$(ticks "$pid")
    perf stat -x, -e "$EVENTS" -p "$pid" -o "$S/perf.txt" &
    local ppid=$!
    sleep 0.5
    load "$1" "$m" >/dev/null
    kill -INT "$ppid"
    wait "$ppid" || true
    [ "$1" = redis ] || { kill -TERM "$pid"; wait "$pid" || true; }
    echo "$r $(((t1 - t0) * 1000000000 / TCK / N)) $(awk -F, -v m="$m" '
        $3 ~ /sys_enter/ { v[$3] = $1 / m }
        END {
            printf "%.3f", v["raw_syscalls:sys_enter"]
            n = split("read write writev readv ioctl epoll_wait epoll_ctl", s, " ")
            for (i = 1; i <= n; i++) printf " %.3f", v["syscalls:sys_enter_" s[i]]
        }' "$S/perf.txt")"
}

sides="before after"
[ "$REDIS" = 1 ] && sides="before after redis"
echo "| round | side | req/s | CPU ns/req | syscalls/req | read | write | writev | readv | ioctl | epoll_wait | epoll_ctl |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for r in $(seq "$ROUNDS"); do
    set -- $sides
    for _ in $(seq $(((r - 1) % $#))); do # rotate: each side goes first in turn
        set -- "${@:2}" "$1"
    done
    for side in "$@"; do
        row=$(run "$side")
        echo "$side $row" >>"$S/runs"
        echo "| $r | $side | ${row// / | } |"
    done
done

# callgrind: instructions per request of each build's whole process.
cg() { # BUILD: prints instructions per request
    start_side "$1" valgrind --tool=callgrind --instr-atstart=no \
        --callgrind-out-file="$S/cg.out"
    callgrind_control -i on "$bpid" >/dev/null 2>&1
    "$LOADGEN" -s "$S/breachd.sock" -c 50 -P 16 -n "$CG_N" -w 0 --no-stats -q >/dev/null
    callgrind_control -i off "$bpid" >/dev/null 2>&1
    kill -TERM "$bpid"
    wait "$bpid" || true
    awk -v n="$CG_N" '/^(summary|totals):/ { t = $2 } END { printf "%.0f", t / n }' "$S/cg.out"
    rm -f "$S"/cg.out*
}
cg_before=- cg_after=-
if [ "$CG_N" -gt 0 ] && command -v valgrind >/dev/null; then
    cg_before=$(cg "$BEFORE")
    cg_after=$(cg "$AFTER")
fi

echo
awk -v cgb="$cg_before" -v cga="$cg_after" '
    function median(arr, n,    i, j, t) {
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && arr[j - 1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j - 1]; arr[j - 1] = t }
        return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
    }
    { n[$1]++; for (k = 2; k <= NF; k++) v[$1, k, n[$1]] = $k; nf = NF }
    END {
        split("req/s,CPU ns/req,syscalls/req,read/req,write/req,writev/req,readv/req,ioctl/req,epoll_wait/req,epoll_ctl/req", name, ",")
        redis = n["redis"] > 0
        printf "| median of %d | before | after | after/before%s |\n", n["before"], redis ? " | Redis | after/Redis" : ""
        print "|---|---:|---:|---:" (redis ? "|---:|---:|" : "|")
        for (k = 2; k <= nf; k++) {
            for (s in n) { for (i = 1; i <= n[s]; i++) a[i] = v[s, k, i]; m[s] = median(a, n[s]) }
            f = k <= 3 ? "%.0f" : "%.3f"
            printf "| %s | " f " | " f " | %.3f", name[k - 1], m["before"], m["after"], m["before"] ? m["after"] / m["before"] : 0
            if (redis) printf " | " f " | %.3f", m["redis"], m["redis"] ? m["after"] / m["redis"] : 0
            print " |"
        }
        if (cgb != "-")
            printf "| instructions/req (callgrind) | %s | %s | %.3f%s |\n", cgb, cga, cga / cgb, redis ? " | | " : ""
    }' "$S/runs"
