#!/bin/bash
# SPDX-License-Identifier: MIT
# The range endpoint ([http] in breachd.conf(5)) against nginx serving the
# same mirror as static files, in the same run.
#
# 1. A HIBP-style mirror of PREFIXES (default 1024) random prefixes of LINES
#    (default 1900, HIBP's size in 2026) random SHA-1 suffixes each, in
#    HIBP's spelling, in a scratch directory.
# 2. nginx (one worker, access log off, sendfile, keep-alive) serving
#    /range/XXXXX from it; breachd with [http] listen on 127.0.0.1, rate 0,
#    its password upstream the same mirror through file://. breachd's cache
#    is warmed (every prefix asked once) and checked: its bodies are nginx's.
# 3. wrk (Debian's; installed when missing): one thread, CONNS (default 50)
#    keep-alive connections asking random prefixes of the mirror, DURATION
#    (default 10) seconds after a WARMUP (default 2) second run, nginx then
#    breachd, ROUNDS (default 3) times alternating; of each, the round of
#    median CPU per request.
#    Cases: plain GET (the comparison: the same bytes from both), then
#    breachd alone with Add-Padding: true, and both with Accept-Encoding:
#    gzip (nginx gzip on, level 1, as breachd).
# 4. Prints req/s, MB/s, the server's CPU time per request (user + system
#    over the run, from /proc: the figure a busy machine moves least) and the
#    ratios breachd / nginx of both; the target is breachd's CPU per plain
#    GET at most nginx's.
# 5. With CALLGRIND=1, then breachd's user-space instructions per plain GET:
#    breachd again under valgrind --tool=callgrind (instrumentation off),
#    on the same warm cache, every prefix asked once, then instrumentation
#    on around a wrk run of CG_DURATION (default 20) seconds.
#
# On a 2-core machine wrk and the server each take about a core; other load
# on the machine moves both numbers, which is why they alternate.
#
# Usage: tests/bench/bench-http.sh
# Env:   BUILD (default build-bench, configured --buildtype=release when
#        absent), PREFIXES, LINES, CONNS, DURATION, WARMUP, ROUNDS,
#        BENCH_NO_BUILD=1 (use the binaries as they are), TMPDIR,
#        PREPARED (e.g. 256M: [http] prepared_size, with [cache]
#        partition_share = 100% since wrk is one client: every prefix's
#        body prepared once; empty: the build's defaults, for builds
#        without the key), CALLGRIND=1, CG_DURATION.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$ROOT/tests/bench/bench-common.sh"

PREFIXES=${PREFIXES:-1024}
LINES=${LINES:-1900}
CONNS=${CONNS:-50}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
ROUNDS=${ROUNDS:-3}
PREPARED=${PREPARED:-}
BREACHD=$BUILD/daemon/breachd

if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    [ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" "$ROOT" --buildtype=release >/dev/null
    build_targets daemon/breachd
fi
[ -x "$BREACHD" ] || { echo "bench-http: $BREACHD is missing: build $BUILD first" >&2; exit 1; }
need_pkg wrk wrk
need_pkg curl curl
[ -x /usr/sbin/nginx ] || need_pkg nginx nginx-light

make_scratch_and_pids

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() {
    local i
    for i in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "nothing listens on port $1" >&2
    return 1
}

machine_line
echo "# mirror: $PREFIXES prefixes x $LINES lines; wrk: 1 thread, $CONNS connections, ${DURATION}s (+${WARMUP}s warm-up), median of $ROUNDS by CPU per request"
echo

# ---- the mirror ----
mkdir -p "$SCRATCH/mirror"
python3 - "$SCRATCH/mirror" "$PREFIXES" "$LINES" >"$SCRATCH/prefixes" <<'EOF'
import os, random, sys
d, n, lines = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(2026)
prefixes = sorted({"%05X" % rng.getrandbits(20) for _ in range(n * 2)})[:n]
for p in prefixes:
    sufs = sorted({"%035X" % rng.getrandbits(140) for _ in range(lines)})
    body = "\r\n".join("%s:%d" % (s, rng.choice((1, 1, 2, 3, 7, 12, 85, 1024, 94230))) for s in sufs)
    with open(os.path.join(d, p + ".txt"), "w", newline="") as f:
        f.write(body)
    print(p)
EOF
echo "mirror: $(du -sh "$SCRATCH/mirror" | cut -f1) in $(wc -l <"$SCRATCH/prefixes") files"

# ---- nginx ----
NGPORT=$(free_port)
mkdir -p "$SCRATCH/nginx/tmp"
cat >"$SCRATCH/nginx/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $SCRATCH/nginx/nginx.pid;
error_log $SCRATCH/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    client_body_temp_path $SCRATCH/nginx/tmp/body;
    proxy_temp_path $SCRATCH/nginx/tmp/proxy;
    fastcgi_temp_path $SCRATCH/nginx/tmp/fastcgi;
    uwsgi_temp_path $SCRATCH/nginx/tmp/uwsgi;
    scgi_temp_path $SCRATCH/nginx/tmp/scgi;
    default_type text/plain;
    gzip \$GZIP;
    gzip_comp_level 1;
    gzip_types text/plain;
    gzip_min_length 0;
    server {
        listen 127.0.0.1:$NGPORT;
        location /range/ { alias $SCRATCH/mirror/; try_files \$uri.txt =404; }
    }
}
EOF
start_nginx() { # on|off
    sed "s/\\\$GZIP/$1/" "$SCRATCH/nginx/nginx.conf" >"$SCRATCH/nginx/run.conf"
    /usr/sbin/nginx -p "$SCRATCH/nginx" -e "$SCRATCH/nginx/error.log" -c "$SCRATCH/nginx/run.conf" &
    NGPID=$!
    pids+=("$NGPID")
    wait_port "$NGPORT"
}
stop_nginx() { kill -TERM "$NGPID"; wait "$NGPID" 2>/dev/null || true; }

# ---- breachd ----
BDPORT=$(free_port)
mkdir -p "$SCRATCH/cache"
cat >"$SCRATCH/breachd.conf" <<EOF
[daemon]
socket = $SCRATCH/breachd.sock
log_level = warning
[passwords]
upstream = file://$SCRATCH/mirror/{prefix}.txt
[cache]
path = $SCRATCH/cache
$([ -z "$PREPARED" ] || echo "partition_share = 100%")
[upstream]
rate = 100000
max_inflight = 64
[http]
listen = 127.0.0.1:$BDPORT
rate = 0
max_connections = 4096
max_connections_per_client = 4096
$([ -z "$PREPARED" ] || echo "prepared_size = $PREPARED")
EOF
"$BREACHD" --config "$SCRATCH/breachd.conf" --foreground 2>"$SCRATCH/breachd.log" &
BDPID=$!
pids+=("$BDPID")
wait_port "$BDPORT"

ask_all() { # PORT: every prefix once
    local p
    while read -r p; do curl -s "http://127.0.0.1:$1/range/$p" >/dev/null; done <"$SCRATCH/prefixes"
}

# Warm breachd's cache and check its bodies against nginx's (and the files).
start_nginx off
bad=0
while read -r p; do
    a=$(curl -s "http://127.0.0.1:$BDPORT/range/$p" | md5sum)
    b=$(curl -s "http://127.0.0.1:$NGPORT/range/$p" | md5sum)
    [ "$a" = "$b" ] || bad=$((bad + 1))
done <"$SCRATCH/prefixes"
[ "$bad" -eq 0 ] || { echo "bench-http: $bad bodies differ from nginx's" >&2; exit 1; }
echo "breachd's cache warmed; its $PREFIXES bodies are nginx's, byte for byte"
stop_nginx

# ---- load ----
cat >"$SCRATCH/random.lua" <<EOF
local prefixes = {}
for line in io.lines("$SCRATCH/prefixes") do prefixes[#prefixes + 1] = line end
math.randomseed(os.time())
request = function()
    return wrk.format("GET", "/range/" .. prefixes[math.random(#prefixes)])
end
EOF

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # user + system, in clock ticks

# run PORT PID HEADER... -> "req/s MB/s CPU-us/req" (wrk's figures; the
# server's CPU time over the run divided by the requests it answered)
run() {
    local port=$1 pid=$2
    shift 2
    local hdr=() h c0 c1
    for h in "$@"; do hdr+=(-H "$h"); done
    wrk -t1 -c"$CONNS" -d"${WARMUP}s" -s "$SCRATCH/random.lua" "${hdr[@]}" \
        "http://127.0.0.1:$port" >/dev/null
    c0=$(cpu_ticks "$pid")
    wrk -t1 -c"$CONNS" -d"${DURATION}s" -s "$SCRATCH/random.lua" "${hdr[@]}" \
        "http://127.0.0.1:$port" >"$SCRATCH/wrk.out"
    c1=$(cpu_ticks "$pid")
    if grep -q "Non-2xx" "$SCRATCH/wrk.out"; then
        cat "$SCRATCH/wrk.out" >&2
        echo "bench-http: errors during the run" >&2
        exit 1
    fi
    awk -v ticks=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" '
        / requests in / { n = $1 } /^Requests\/sec/ { r = $2 } /^Transfer\/sec/ { t = $2 } END {
        if (t ~ /GB$/) m = t * 1024; else if (t ~ /MB$/) m = t * 1; else if (t ~ /KB$/) m = t / 1024; else m = t / 1048576
        printf "%.0f %.1f %.1f", r, m, n ? ticks / hz * 1e6 / n : 0 }' "$SCRATCH/wrk.out"
}

best() { # "req/s MB/s CPU" lines on stdin -> the round of median CPU per request
    sort -k3,3n | awk '{ l[NR] = $0 } END { print l[int((NR + 1) / 2)] }'
}

declare -A result
case_run() { # NAME NGINX_GZIP(on|off|-) HEADER...
    local name=$1 gz=$2
    shift 2
    local i ng=() bd=()
    for i in $(seq "$ROUNDS"); do
        if [ "$gz" != - ]; then
            start_nginx "$gz"
            ng+=("$(run "$NGPORT" "$NGPID" "$@")")
            stop_nginx
        fi
        bd+=("$(run "$BDPORT" "$BDPID" "$@")")
    done
    result[$name.bd]=$(printf '%s\n' "${bd[@]}" | best)
    [ "$gz" = - ] || result[$name.ng]=$(printf '%s\n' "${ng[@]}" | best)
}

case_run plain off
case_run padded - "Add-Padding: true"
case_run gzip on "Accept-Encoding: gzip"
case_run gzip_padded - "Accept-Encoding: gzip" "Add-Padding: true"

echo
echo "| case | nginx req/s | MB/s | CPU us/req | breachd req/s | MB/s | CPU us/req | breachd / nginx req/s | nginx / breachd CPU |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
row() { # NAME LABEL
    local ng=${result[$1.ng]:-} bd=${result[$1.bd]}
    local bdr bdm bdc ngr ngm ngc
    read -r bdr bdm bdc <<<"$bd"
    if [ -n "$ng" ]; then
        read -r ngr ngm ngc <<<"$ng"
        echo "| $2 | $ngr | $ngm | $ngc | $bdr | $bdm | $bdc | $(calc "$bdr / $ngr" 2) | $(calc "$ngc / $bdc" 2) |"
    else
        echo "| $2 | (cannot pad) | | | $bdr | $bdm | $bdc | | |"
    fi
}
row plain "GET /range/XXXXX"
row padded "with Add-Padding: true"
row gzip "Accept-Encoding: gzip"
row gzip_padded "gzip and Add-Padding"
echo
ratio=$(calc "${result[plain.bd]##* } / ${result[plain.ng]##* }" 2)
if awk -v r="$ratio" 'BEGIN { exit !(r <= 1.0) }'; then
    echo "target breachd CPU per request <= nginx's (plain GET, warm cache): met ($ratio)"
else
    echo "target breachd CPU per request <= nginx's (plain GET, warm cache): NOT met ($ratio)"
fi
kill -TERM "$BDPID"
wait "$BDPID" || { echo "breachd exited $?" >&2; exit 1; }
pids=()
[ "${CALLGRIND:-0}" = 1 ] || exit 0

# ---- instructions per request ----
need_pkg valgrind valgrind
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$SCRATCH/cg.out" \
    "$BREACHD" --config "$SCRATCH/breachd.conf" --foreground 2>"$SCRATCH/breachd-cg.log" &
BDPID=$!
pids+=("$BDPID")
wait_port "$BDPORT"
ask_all "$BDPORT" # the prepared bodies, uninstrumented
callgrind_control -i on "$BDPID" >/dev/null
wrk -t1 -c"$CONNS" -d"${CG_DURATION:-20}s" -s "$SCRATCH/random.lua" \
    "http://127.0.0.1:$BDPORT" >"$SCRATCH/wrk.out"
callgrind_control -i off "$BDPID" >/dev/null
kill -TERM "$BDPID"
wait "$BDPID" || true
pids=()
n=$(awk '/ requests in / { print $1 }' "$SCRATCH/wrk.out")
ir=$(awk '/^(summary|totals):/ { t = $2 } END { print t }' "$SCRATCH"/cg.out*)
echo "breachd user-space instructions per plain GET (callgrind, $n requests): $((ir / n))"
