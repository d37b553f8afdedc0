#!/bin/bash
# SPDX-License-Identifier: MIT
# breachd under load, side by side with Redis.
#
# 1. A password filter from KEYS (default 10M) random SHA-1s (gen_hibp hibp |
#    breachctl filter build --input -).
# 2. breachd on it, on a socket in a scratch directory, with no upstream:
#    random hashes are filter "definitely not" 65,535 times in 65,536 (a
#    maybe answers UNKNOWN at once; loadgen reports how many there were).
# 3. When redis-server, redis-cli and redis-benchmark are installed: Redis on
#    a Unix socket in the scratch directory (no persistence), loaded with a set
#    of the same KEYS hashes (SADD through redis-cli --pipe). Skipped with a
#    note otherwise.
# 4. loadgen: N=50 connections at pipeline depth P=16 (random hashes, then
#    --absent: definite-no only), then P=1, DURATION seconds each after WARMUP
#    seconds, one loadgen thread (on a 2-core machine the load generator and
#    the single-threaded daemon each need about a core). Each breachd run is
#    followed at once by redis-benchmark -c 50 -P 16 (or 1) SISMEMBER with as
#    many requests as breachd answered: random absent members (__rand_int__)
#    and, at P=16, one fixed absent member (the issue's command line).
#    Reported for both servers: req/s, p50/p99/p99.9, CPU % of a core and CPU
#    ns per request, and how long they waited for a CPU (run-queue delay).
# 5. The daemon's RSS not counting the mapped filter (Rss minus the Rss of the
#    filter file's mapping in /proc/PID/smaps; RssAnon too) when started, after
#    the load, and with 1,000 idle connections open (loadgen --idle).
# 6. SIGTERM to breachd (exit status reported), Redis shut down.
# Prints Markdown tables and the verdict on the issue's targets.
#
# Usage: tests/bench/bench-daemon.sh
# Env:   BUILD (default build-lg, configured --buildtype=debugoptimized when
#        absent: a release build of daemon/server.c trips GCC 12's
#        -Wuse-after-free false positive today), KEYS (10M), DURATION (10),
#        WARMUP (2), CONNS (50), IDLE_CONNS (1000), LOADGEN_THREADS (1),
#        BENCH_NO_BUILD=1 (use the binaries as they are: `meson test --benchmark`),
#        TMPDIR (scratch space, default /var/tmp).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-lg}
. "$ROOT/tests/bench/bench-common.sh"

KEYS=$(to_count "${KEYS:-10M}")
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNS=${CONNS:-50}
IDLE_CONNS=${IDLE_CONNS:-1000}
LOADGEN_THREADS=${LOADGEN_THREADS:-1}
BREACHD=$BUILD/daemon/breachd
LOADGEN=$BUILD/tests/bench/loadgen

if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    if [ ! -f "$BUILD/build.ninja" ]; then
        meson setup "$BUILD" "$ROOT" --buildtype=debugoptimized >/dev/null
    fi
    build_targets daemon/breachd client/breachctl/breachctl tests/bench/gen_hibp tests/bench/loadgen
fi
for p in "$BREACHD" "$BREACHCTL" "$GEN" "$LOADGEN"; do
    [ -x "$p" ] || { echo "bench-daemon: $p is missing: build $BUILD first" >&2; exit 1; }
done
make_scratch_and_pids
# (make_scratch_and_pids raised the open-file limit: breachd needs a
# descriptor per connection, 1,000 idle ones + a few.)

machine_line
echo "# $(nproc) CPUs shared by breachd (one event-loop thread), loadgen ($LOADGEN_THREADS thread(s)) and whatever else runs on the machine"
echo

# ---- the filter ----
filter=$SCRATCH/passwords.bfuse
t0=$(now)
"$GEN" hibp "$KEYS" | "$BREACHCTL" filter build --kind password-sha1 --input - --output "$filter" \
    --source "bench-daemon: $KEYS random keys" >/dev/null 2>"$SCRATCH/build.log" ||
    { cat "$SCRATCH/build.log" >&2; exit 1; }
t1=$(now)
echo "filter: $KEYS keys, $(file_size "$filter") bytes, built in $(elapsed "$t0" "$t1") s"

# ---- breachd ----
sock=$SCRATCH/breachd.sock
cat >"$SCRATCH/breachd.conf" <<EOF
[daemon]
socket = $sock
socket_mode = 0600
log_level = notice
[passwords]
filter = $filter
upstream =
[cache]
path = $SCRATCH/cache
EOF
"$BREACHD" --config "$SCRATCH/breachd.conf" --foreground 2>"$SCRATCH/breachd.log" &
dpid=$!
pids+=("$dpid")
for _ in $(seq 200); do
    "$LOADGEN" -s "$sock" -c 1 -P 1 -n 1 --no-stats -q >/dev/null 2>&1 && break
    kill -0 "$dpid" 2>/dev/null || { cat "$SCRATCH/breachd.log" >&2; exit 1; }
    sleep 0.1
done

# (rss PID FILE is in bench-common.sh)
rss_rows=()
rss_row() { # LABEL
    local r
    read -r -a r <<<"$(rss "$dpid" "$filter")"
    rss_rows+=("| $1 | $(calc "${r[0]} / 1024") | $(calc "${r[1]} / 1024") | $(calc "(${r[0]} - ${r[1]}) / 1024") | $(calc "${r[2]} / 1024") |")
    last_rss_nofilter=$(((r[0] - r[1]) / 1024))
}
rss_row "started, no client"

# ---- Redis (started and loaded before the runs, so that each breachd run is
# followed at once by its Redis counterpart: the machine's load drifts) ----
have_redis=0
redis_note=
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null; then
    have_redis=1
    rsock=$SCRATCH/redis.sock
    redis-server --port 0 --unixsocket "$rsock" --unixsocketperm 700 --save '' --appendonly no \
        --dir "$SCRATCH" --daemonize no --loglevel warning >"$SCRATCH/redis.log" 2>&1 &
    rpid=$!
    pids+=("$rpid")
    for _ in $(seq 100); do
        redis-cli -s "$rsock" ping >/dev/null 2>&1 && break
        sleep 0.1
    done
    t0=$(now)
    # SADD bench <1000 members> per command, in the Redis protocol, for --pipe.
    "$GEN" plain "$KEYS" | awk '
        function flush() { if (k) { printf "*%d\r\n$4\r\nSADD\r\n$5\r\nbench\r\n%s", k + 2, buf; buf = ""; k = 0 } }
        { buf = buf "$40\r\n" $1 "\r\n"; if (++k == 1000) flush() }
        END { flush() }' | redis-cli -s "$rsock" --pipe >"$SCRATCH/redis-load.log"
    t1=$(now)
    card=$(redis-cli -s "$rsock" scard bench)
    rmem=$(redis-cli -s "$rsock" info memory | sed -n 's/^used_memory_human:\([^\r]*\).*/\1/p')
    rver=$(redis-server --version | cut -d' ' -f3 | tr -d 'v=')
    echo "redis $rver: set of $card members (the same hashes, 40-hex strings) loaded in $(elapsed "$t0" "$t1") s, used_memory $rmem"
else
    redis_note="Redis part skipped: redis-server / redis-benchmark not installed (apt-get install redis-server redis-tools)."
fi
echo

# run_redis LABEL DEPTH REQUESTS MEMBER: redis-benchmark (one thread, like
# loadgen), plus redis-server's CPU time and run-queue delay over the run.
# MEMBER __rand_int__: a random 12-digit member, never in the set of 40-hex
# members (the definite-no case); "member": one fixed absent member, the same
# hash-table slot every time (cache-hot; the issue's command line).
run_redis() {
    [ "$have_redis" = 1 ] || return 0
    local label=$1 depth=$2 n=$3 member=$4 out c0 c1 w0 w1 t0 t1 rps p50 p99 p999 cpu ns runq
    c0=$(awk '{ print $14 + $15 }' "/proc/$rpid/stat")
    w0=$(awk '{ print $2 }' "/proc/$rpid/schedstat")
    t0=$(now)
    out=$(redis-benchmark -s "$rsock" -c "$CONNS" -P "$depth" -n "$n" -r 1000000000000 \
        SISMEMBER bench "$member" 2>&1 | tr '\r' '\n')
    t1=$(now)
    c1=$(awk '{ print $14 + $15 }' "/proc/$rpid/stat")
    w1=$(awk '{ print $2 }' "/proc/$rpid/schedstat")
    rps=$(sed -n 's/.*throughput summary: \([0-9.]*\) requests.*/\1/p' <<<"$out")
    # "99.902% <= 1.543 milliseconds (cumulative count ...)": the first line at or past a percentile
    pct() { awk -v q="$1" '/^Latency by percentile/ { on = 1; next } /^Cumulative/ { on = 0 }
        on && $2 == "<=" { p = $1; sub(/%/, "", p); if (p + 0 >= q) { print $3; exit } }' <<<"$out"; }
    p50=$(pct 50)
    p99=$(pct 99)
    p999=$(pct 99.9)
    cpu=$(calc "($c1 - $c0) / $(getconf CLK_TCK) / ($t1 - $t0) * 100" 0)
    ns=$(calc "($c1 - $c0) / $(getconf CLK_TCK) * 1e9 / $n" 0)
    runq=$(calc "($w1 - $w0) / 1e9 / ($t1 - $t0) * 100" 0)
    echo "    redis-benchmark -c $CONNS -P $depth -n $n SISMEMBER bench $member:"
    echo "      ${rps%.*} req/s, p50 $p50 ms, p99 $p99 ms, p99.9 $p999 ms; redis-server ${cpu}% of a core, $ns ns per request, waited for a CPU ${runq}% of the time"
    res[redis.$label.rps]=$rps
    res[redis.$label.ns]=$ns
    rows+=("| Redis $rver SISMEMBER ($label) | $CONNS | $depth | ${rps%.*} | $p50 | $p99 | $p999 | $cpu | $ns | $runq | $n requests (as many as breachd answered); set of $card ($rmem) |")
}

# field NAME LINE: a key=value field of a RESULT line
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
rows=()
declare -A res
run_loadgen() { # LABEL DEPTH [loadgen options...]
    local label=$1 depth=$2 out r
    shift 2
    out=$("$LOADGEN" -s "$sock" -c "$CONNS" -P "$depth" -d "$DURATION" -w "$WARMUP" -t "$LOADGEN_THREADS" "$@")
    sed 's/^/    /' <<<"$out" | grep -v RESULT
    r=$(grep '^RESULT' <<<"$out")
    res[$label.rps]=$(field rps "$r")
    res[$label.p99]=$(field p99_us "$r")
    res[$label.ns]=$(field daemon_ns_per_req "$r")
    res[$label.runq]=$(field daemon_runq_pct "$r")
    rows+=("| breachd ($label) | $CONNS | $depth | $(field rps "$r") | $(calc "$(field p50_us "$r") / 1000" 3) | $(calc "$(field p99_us "$r") / 1000" 3) | $(calc "$(field p999_us "$r") / 1000" 3) | $(field daemon_cpu_pct "$r") | $(field daemon_ns_per_req "$r") | $(field daemon_runq_pct "$r") | $(field answered "$r") answered, filter maybes $(field maybes "$r"), ERR $(field err "$r"); loadgen $(field loadgen_cpu_pct "$r")% of a core |")
}
echo "loadgen against breachd ($DURATION s each after $WARMUP s warm-up), each followed by redis-benchmark with as many requests:"
run_loadgen "random, P16" 16
n16=$(calc "${res[random, P16.rps]} * $DURATION" 0)
run_redis "random, P16" 16 "$n16" __rand_int__
run_redis "fixed member, P16" 16 "$n16" member
run_loadgen "definite-no, P16" 16 --absent "$filter"
run_loadgen "random, P1" 1
n1=$(calc "${res[random, P1.rps]} * $DURATION" 0)
run_redis "random, P1" 1 "$n1" __rand_int__
rss_row "after the load runs, no client"

"$LOADGEN" -s "$sock" --idle -c "$IDLE_CONNS" --ready-file "$SCRATCH/idle.ready" -q &
lpid=$!
pids+=("$lpid")
for _ in $(seq 300); do
    [ -e "$SCRATCH/idle.ready" ] && break
    kill -0 "$lpid" 2>/dev/null || { echo "bench-daemon: loadgen --idle failed" >&2; exit 1; }
    sleep 0.1
done
[ -e "$SCRATCH/idle.ready" ] || { echo "bench-daemon: the idle connections did not open" >&2; exit 1; }
rss_row "$IDLE_CONNS idle connections"
idle_rss=$last_rss_nofilter
kill -TERM "$lpid"
wait "$lpid" || true

kill -TERM "$dpid"
drc=0
wait "$dpid" || drc=$?
[ "$drc" -eq 0 ] || { echo "bench-daemon: breachd exited with status $drc" >&2; cat "$SCRATCH/breachd.log" >&2; }

if [ "$have_redis" = 1 ]; then
    redis-cli -s "$rsock" shutdown nosave >/dev/null 2>&1 || kill -TERM "$rpid"
    wait "$rpid" 2>/dev/null || true
fi

# ---- tables ----
echo
echo "| server (requests) | N | P | req/s | p50 ms | p99 ms | p99.9 ms | server CPU, % of a core | server CPU ns/req | server waited for a CPU, % of the time | notes |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
printf '%s\n' "${rows[@]}"
[ -z "$redis_note" ] || echo "$redis_note"
echo
echo "breachd RSS (MiB; \"without filter\" = Rss minus the Rss of the filter file's mapping):"
echo
echo "| state | Rss | filter mapping Rss | Rss without filter | RssAnon+RssShmem |"
echo "|---|---:|---:|---:|---:|"
printf '%s\n' "${rss_rows[@]}"
echo
verdict() { awk -v ok="$1" 'BEGIN { print (ok ? "met" : "MISSED") }'; }
if [ -n "${res[redis.random, P16.rps]:-}" ]; then
    ratio=$(calc "${res[random, P16.rps]} / ${res[redis.random, P16.rps]}" 2)
    ratiof=$(calc "${res[random, P16.rps]} / ${res[redis.fixed member, P16.rps]}" 2)
    ratio1=$(calc "${res[random, P1.rps]} / ${res[redis.random, P1.rps]}" 2)
    echo "- N=$CONNS P=16: breachd ${res[random, P16.rps]} req/s, Redis ${res[redis.random, P16.rps]%.*} req/s (random members): ratio $ratio (target >= 1): $(verdict "$(calc "($ratio >= 1)" 0)"); against one fixed member (${res[redis.fixed member, P16.rps]%.*} req/s): ratio $ratiof"
    echo "- N=$CONNS P=1: breachd/Redis req/s ratio $ratio1 (no target)"
    echo "- server CPU per request at P=16 (what a shared machine cannot blur): breachd ${res[random, P16.ns]} ns, Redis ${res[redis.random, P16.ns]} ns (random members), ${res[redis.fixed member, P16.ns]} ns (fixed member)"
else
    echo "- N=$CONNS P=16: breachd ${res[random, P16.rps]} req/s (target: at least Redis, about 0.9M/s here): $(verdict "$(calc "(${res[random, P16.rps]} >= 900000)" 0)") against 0.9M/s"
fi
echo "- N=$CONNS P=1: p99 $(calc "${res[random, P1.p99]} / 1000" 3) ms (target <= 1 ms): $(verdict "$(calc "(${res[random, P1.p99]} <= 1000)" 0)"); breachd's loop thread waited for a CPU ${res[random, P1.runq]}% of that run"
echo "- RSS without the filter, $IDLE_CONNS idle connections: $idle_rss MiB (target <= 32 MiB): $(verdict "$(calc "($idle_rss <= 32)" 0)")"
echo "- breachd exit status after SIGTERM: $drc"
