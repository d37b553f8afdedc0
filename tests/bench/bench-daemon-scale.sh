#!/bin/bash
# SPDX-License-Identifier: MIT
# What more than one core would buy the socket protocol: the upper bound of
# worker threads ([daemon] threads, not built), measured with K breachd
# processes that share nothing but the filter's pages (one mmap'ed file in
# the page cache), as threads with one event loop each would.
#
# 1. A password filter of KEYS (default 1M) random SHA-1s, no upstream: every
#    random PW check is a definite no (the local path only).
# 2. ROUNDS times (default 3), for each K of KS (default "1 2"; the order
#    rotated each round): K breachd on their own sockets, each loaded at the
#    same time by its own loadgen -c 50/K -P 16 -n N/K (N default 2M).
# 3. Per run: the total req/s (N over the slowest loadgen's time) and the
#    daemons' CPU ns per request (utime + stime of /proc/PID/stat summed
#    over the K processes, 10 ms ticks). Then the medians per K.
#
# On a machine with fewer free cores than K plus the clients' needs, req/s
# only shows the machine; CPU per request shows what sharing the caches and
# memory bus costs each process.
#
# Usage: BUILD=DIR tests/bench/bench-daemon-scale.sh (a build directory with
#        daemon/breachd, breachctl, gen_hibp and loadgen)
# Env:   ROUNDS (3), N (2000000), KEYS (1000000), KS ("1 2"), TMPDIR.
set -euo pipefail
: "${BUILD:?BUILD=build dir}"
ROUNDS=${ROUNDS:-3}
N=${N:-2000000}
KEYS=${KEYS:-1000000}
KS=${KS:-1 2}
LOADGEN=$BUILD/tests/bench/loadgen
for p in "$BUILD/daemon/breachd" "$LOADGEN" "$BUILD/client/breachctl/breachctl" \
    "$BUILD/tests/bench/gen_hibp"; do
    [ -x "$p" ] || { echo "bench-daemon-scale: $p is missing" >&2; exit 1; }
done
S=$(mktemp -d "${TMPDIR:-/var/tmp}/breachd-scale.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$S"' EXIT
TCK=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
echo "# $(date -u +%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
"$BUILD/tests/bench/gen_hibp" hibp "$KEYS" |
    "$BUILD/client/breachctl/breachctl" filter build --kind password-sha1 --input - \
        --output "$S/pw.bfuse" >/dev/null 2>&1

# run K: "req/s cpu_ns"
run() {
    local k=$1 i pids=() lg=() t0=0 t1=0 per=$((N / $1)) c=$((50 / $1))
    for i in $(seq "$k"); do
        printf '[daemon]\nsocket = %s\nsocket_mode = 0600\nlog_level = notice\n[passwords]\nfilter = %s\nupstream =\n[cache]\npath = %s\n' \
            "$S/d$i.sock" "$S/pw.bfuse" "$S/cache$i" >"$S/d$i.conf"
        "$BUILD/daemon/breachd" --config "$S/d$i.conf" --foreground 2>"$S/d$i.log" &
        pids+=($!)
    done
    for i in $(seq "$k"); do
        for _ in $(seq 300); do
            "$LOADGEN" -s "$S/d$i.sock" -c 1 -P 1 -n 1 --no-stats -q >/dev/null 2>&1 && break
            sleep 0.1
        done
    done
    for p in "${pids[@]}"; do t0=$((t0 + $(ticks "$p"))); done
    local start=$EPOCHREALTIME
    for i in $(seq "$k"); do
        "$LOADGEN" -s "$S/d$i.sock" -c "$c" -P 16 -n "$per" -w 0 --no-stats -q >/dev/null &
        lg[i]=$!
    done
    for i in $(seq "$k"); do wait "${lg[$i]}"; done
    local end=$EPOCHREALTIME
    for p in "${pids[@]}"; do t1=$((t1 + $(ticks "$p"))); done
    kill -TERM "${pids[@]}"
    wait "${pids[@]}" 2>/dev/null || true
    awk -v n="$((per * k))" -v a="$start" -v b="$end" -v t="$((t1 - t0))" -v tck="$TCK" \
        'BEGIN { printf "%.0f %.0f", n / (b - a), t * 1e9 / tck / n }'
}

echo "| round | K | req/s | CPU ns/req |"
echo "|---:|---:|---:|---:|"
for r in $(seq "$ROUNDS"); do
    # shellcheck disable=SC2086
    set -- $KS
    for _ in $(seq $(((r - 1) % $#))); do set -- "${@:2}" "$1"; done
    for k in "$@"; do
        row=$(run "$k")
        echo "$k $row" >>"$S/runs"
        echo "| $r | $k | ${row// / | } |"
    done
done
echo
awk '
    function median(arr, n,    i, j, t) {
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && arr[j - 1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j - 1]; arr[j - 1] = t }
        return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
    }
    { n[$1]++; q[$1, n[$1]] = $2; c[$1, n[$1]] = $3 }
    END {
        print "| K | median req/s | median CPU ns/req |"
        print "|---:|---:|---:|"
        for (k in n) {
            for (i = 1; i <= n[k]; i++) { a[i] = q[k, i]; b[i] = c[k, i] }
            printf "| %s | %.0f | %.0f |\n", k, median(a, n[k]), median(b, n[k])
        }
    }' "$S/runs"
