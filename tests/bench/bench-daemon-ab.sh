#!/bin/bash
# SPDX-License-Identifier: MIT
# Two builds of breachd side by side in the same minutes: did a change make
# the daemon's hot path slower? For a refactoring, where the machine's load
# drifts more than the change moves the figures.
#
# 1. A password filter of PW_KEYS (default 2M) random SHA-1s and a URL
#    filter from bench_url's lists (URLS: domains and URLs listed, default
#    200,000), built once with BEFORE's tools; both sections with no
#    upstream (a maybe answers UNKNOWN at once: the local path only).
# 2. ROUNDS times (default 6), BEFORE then AFTER (AFTER first in even
#    rounds, so that neither always runs first): breachd started on the
#    same config, then loadgen -c 50 -P 16 -n NPW (default 2M) random PW
#    checks, then -n NURL (default 600,000) URL checks of bench_url's
#    stream (batches of 32 lines: the batch probes of both verbs), then
#    SIGTERM.
# 3. Per run: req/s as loadgen saw it, and the daemon's CPU time per request
#    (utime + stime of /proc/PID/stat over the run, 10 ms ticks), the
#    steadier of the two on a busy machine. Then the medians and the
#    AFTER/BEFORE ratios.
# 4. Unless CG_N=0, once per build (instructions do not depend on the
#    machine's load): breachd under valgrind --tool=callgrind, collection
#    switched on around loadgen -c 50 -P 16 -n CG_N (default 100,000) PW
#    checks, then CG_N URL checks, then CG_N/100 STATS (loadgen --mix
#    0,0,0,1; the config lets the running user ask), each dumped apart:
#    instructions per request of the whole process in each lane, and
#    AFTER/BEFORE.
#
# With OFFLINE=1, one build and two kinds of filter of the same keys and
# lists instead: "before" runs on the range filters above, "after" on
# offline filters (breachctl filter build --offline) of the same keys and
# feeds; BEFORE defaults to AFTER. Random PW checks are definite-no in both
# (docs/filter-format.md, "Algorithm 4"): the ratio is the offline filter's
# cost in the daemon's hot path.
#
# Usage: BEFORE=DIR AFTER=DIR tests/bench/bench-daemon-ab.sh
#        (two build directories, each with daemon/breachd; BEFORE also with
#        breachctl, gen_hibp, bench_url and loadgen, e.g. configured
#        --buildtype=debugoptimized as bench-daemon.sh does)
#        OFFLINE=1 AFTER=DIR tests/bench/bench-daemon-ab.sh
# Env:   ROUNDS (6), NPW (2000000), NURL (600000), PW_KEYS (2000000),
#        URLS (200000), OFFLINE (0), CG_N (100000; 0 = no callgrind),
#        TMPDIR (scratch space, default /var/tmp).
set -euo pipefail
OFFLINE=${OFFLINE:-0}
[ "$OFFLINE" = 1 ] && BEFORE=${BEFORE:-${AFTER:-}}
: "${BEFORE:?BEFORE=build dir}" "${AFTER:?AFTER=build dir}"
ROUNDS=${ROUNDS:-6}
NPW=${NPW:-2000000}
NURL=${NURL:-600000}
PW_KEYS=${PW_KEYS:-2000000}
URLS=${URLS:-200000}
CG_N=${CG_N:-100000}
LOADGEN=$BEFORE/tests/bench/loadgen
CTL=$BEFORE/client/breachctl/breachctl
for p in "$BEFORE/daemon/breachd" "$AFTER/daemon/breachd" "$LOADGEN" "$CTL" \
    "$BEFORE/tests/bench/gen_hibp" "$BEFORE/tests/bench/bench_url"; do
    [ -x "$p" ] || { echo "bench-daemon-ab: $p is missing" >&2; exit 1; }
done
S=$(mktemp -d "${TMPDIR:-/var/tmp}/breachd-ab.XXXXXX")
trap 'rm -rf "$S"' EXIT
ulimit -n 4096 2>/dev/null || true
TCK=$(getconf CLK_TCK)

"$BEFORE/tests/bench/gen_hibp" hibp "$PW_KEYS" |
    "$CTL" filter build --kind password-sha1 --input - --output "$S/pw.bfuse" >/dev/null 2>&1
"$BEFORE/tests/bench/bench_url" --emit "$S/data" "$URLS" "$URLS" >/dev/null
"$CTL" filter build --kind url-sha256 --output "$S/urls.bbf" \
    --input "$S/data/list-domains.txt=malware" --input "$S/data/list-urls.txt=phishing" >/dev/null 2>&1
pw_after=$S/pw.bfuse
urls_after=$S/urls.bbf
if [ "$OFFLINE" = 1 ]; then
    pw_after=$S/pw-offline.bfuse
    urls_after=$S/urls-offline.bfuse
    "$BEFORE/tests/bench/gen_hibp" hibp "$PW_KEYS" |
        "$CTL" filter build --kind password-sha1 --offline --input - --output "$pw_after" \
            >/dev/null 2>&1
    "$CTL" filter build --kind url-sha256 --offline --output "$urls_after" \
        --input "$S/data/list-domains.txt=malware" --input "$S/data/list-urls.txt=phishing" \
        >/dev/null 2>&1
    echo "# OFFLINE=1: before = range filters, after = offline filters of the same keys and lists; breachd of $AFTER"
fi
conf() { # SIDE PW_FILTER URL_FILTER
    cat >"$S/$1.conf" <<EOF
[daemon]
socket = $S/breachd.sock
socket_mode = 0600
log_level = notice
admin_users = $(id -u)
[passwords]
filter = $2
upstream =
[urls]
filter = $3
upstream =
[cache]
path = $S/cache
EOF
}
conf before "$S/pw.bfuse" "$S/urls.bbf"
conf after "$pw_after" "$urls_after"

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rps() { grep '^RESULT' | tr ' ' '\n' | sed -n 's/^rps=//p'; }

# run BUILD SIDE: prints "pw_rps pw_ns url_rps url_ns"
run() {
    "$1/daemon/breachd" --config "$S/$2.conf" --foreground 2>"$S/breachd.log" &
    local pid=$! t0 t1 t2 pw url
    for _ in $(seq 100); do
        "$LOADGEN" -s "$S/breachd.sock" -c 1 -P 1 -n 1 --no-stats -q >/dev/null 2>&1 && break
        kill -0 "$pid" 2>/dev/null || { cat "$S/breachd.log" >&2; exit 1; }
        sleep 0.1
    done
    t0=$(ticks "$pid")
    pw=$("$LOADGEN" -s "$S/breachd.sock" -c 50 -P 16 -n "$NPW" -w 0 --no-stats -q | rps)
    t1=$(ticks "$pid")
    url=$("$LOADGEN" -s "$S/breachd.sock" -c 50 -P 16 -n "$NURL" -w 0 --urls "$S/data/stream.txt" \
        --no-stats -q | rps)
    t2=$(ticks "$pid")
    kill -TERM "$pid"
    wait "$pid" || true
    echo "$pw $(((t1 - t0) * 1000000000 / TCK / NPW)) $url $(((t2 - t1) * 1000000000 / TCK / NURL))"
}

echo "| round | build | PW req/s | PW CPU ns/req | URL req/s | URL CPU ns/req |"
echo "|---:|---|---:|---:|---:|---:|"
for r in $(seq "$ROUNDS"); do
    order="before after"
    [ $((r % 2)) -eq 0 ] && order="after before" # ABBA: neither always goes first
    for side in $order; do
        dir=$BEFORE
        [ "$side" = after ] && dir=$AFTER
        read -r a b c d <<<"$(run "$dir" "$side")"
        echo "$side $a $b $c $d" >>"$S/runs"
        echo "| $r | $side | $a | $b | $c | $d |"
    done
done
echo
awk '
    function median(arr, n,    i, j, t) {
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && arr[j - 1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j - 1]; arr[j - 1] = t }
        return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
    }
    { n[$1]++; for (k = 2; k <= 5; k++) v[$1, k, n[$1]] = $k }
    END {
        split("PW req/s,PW CPU ns/req,URL req/s,URL CPU ns/req", name, ",")
        print "| median | before | after | after/before |"
        print "|---|---:|---:|---:|"
        for (k = 2; k <= 5; k++) {
            for (i = 1; i <= n["before"]; i++) b[i] = v["before", k, i]
            for (i = 1; i <= n["after"]; i++) a[i] = v["after", k, i]
            mb = median(b, n["before"]); ma = median(a, n["after"])
            printf "| %s | %.0f | %.0f | %.3f |\n", name[k - 1], mb, ma, mb ? ma / mb : 0
        }
    }' "$S/runs"

# callgrind: instructions per request of each build's whole process, per lane.
cg() { # BUILD SIDE: prints "pw url stats" instructions per request
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$S/cg.out" \
        "$1/daemon/breachd" --config "$S/$2.conf" --foreground 2>"$S/breachd.log" &
    local pid=$! lane
    for _ in $(seq 300); do
        "$LOADGEN" -s "$S/breachd.sock" -c 1 -P 1 -n 1 --no-stats -q >/dev/null 2>&1 && break
        kill -0 "$pid" 2>/dev/null || { cat "$S/breachd.log" >&2; exit 1; }
        sleep 0.1
    done
    callgrind_control -z "$pid" >/dev/null 2>&1
    callgrind_control -i on "$pid" >/dev/null 2>&1
    "$LOADGEN" -s "$S/breachd.sock" -c 50 -P 16 -n "$CG_N" -w 0 --no-stats -q >/dev/null
    callgrind_control -d pw "$pid" >/dev/null 2>&1
    "$LOADGEN" -s "$S/breachd.sock" -c 50 -P 16 -n "$CG_N" -w 0 --urls "$S/data/stream.txt" \
        --no-stats -q >/dev/null
    callgrind_control -d url "$pid" >/dev/null 2>&1
    "$LOADGEN" -s "$S/breachd.sock" -c 1 -P 1 -n $((CG_N / 100)) -w 0 --mix 0,0,0,1 \
        --no-stats -q >/dev/null
    callgrind_control -d stats "$pid" >/dev/null 2>&1
    callgrind_control -i off "$pid" >/dev/null 2>&1
    kill -TERM "$pid"
    wait "$pid" || true
    local i=0
    for lane in pw url stats; do # the dumps, in order: cg.out.1, .2, .3
        i=$((i + 1))
        awk -v n="$([ $lane = stats ] && echo $((CG_N / 100)) || echo "$CG_N")" \
            '/^(summary|totals):/ { t = $2 } END { printf "%.0f ", t / n }' "$S/cg.out.$i"
    done
    rm -f "$S"/cg.out*
}
if [ "$CG_N" -gt 0 ] && command -v valgrind >/dev/null; then
    read -r bpw burl bstats <<<"$(cg "$BEFORE" before)"
    read -r apw aurl astats <<<"$(cg "$AFTER" after)"
    echo
    echo "| instructions/req (callgrind) | before | after | after/before |"
    echo "|---|---:|---:|---:|"
    awk -v b="$bpw" -v a="$apw" 'BEGIN { printf "| PW | %s | %s | %.4f |\n", b, a, a / b }'
    awk -v b="$burl" -v a="$aurl" 'BEGIN { printf "| URL | %s | %s | %.4f |\n", b, a, a / b }'
    awk -v b="$bstats" -v a="$astats" 'BEGIN { printf "| STATS | %s | %s | %.4f |\n", b, a, a / b }'
fi
