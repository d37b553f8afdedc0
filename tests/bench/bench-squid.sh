#!/bin/bash
# SPDX-License-Identifier: MIT
# URL checks through Squid's path: breachd-squid-helper with concurrency
# (channel IDs) in front of breachd, against squidGuard 1.6 reading the same
# stream on its standard input; lines per second end to end, verdicts
# compared line by line (tests/bench/README.md, "URL checks through Squid's
# path").
#
# 1. bench_url --emit-squid: N_LIST domains (a breachctl "domains" feed and
#    a squidGuard domainlist) and a stream of N_URLS URLs, 10% on a listed
#    domain (some with "www.", "m." or "cdn." in front), the rest random
#    hosts with paths.
# 2. breachctl filter build --kind url-sha256 --ranges-dir (file:// mirror),
#    squidGuard -C all on the same list.
# 3. breachd on that filter; one unmeasured helper pass fills its range
#    cache (the 10% blocked hosts' prefixes), as a running proxy has it.
# 4. REPS times, alternating:
#    - squidGuard -c CONF < STREAM > OUT: the stream in url_rewrite format
#      ("URL 127.0.0.1/- - GET myip=127.0.0.1 myport=3128"), read as fast
#      as it goes (open loop, its best case); lines/s over its wall time
#      less its start-up (the same command on one line);
#    - helperfeed -c CONC (Squid's concurrency=CONC: channel IDs 0..CONC-1,
#      at most CONC outstanding) into breachd-squid-helper; lines/s from
#      its first answer to its last; the same at -c CONC2; and helperfeed
#      -c 0 (the whole stream at once, IDs counting up: the helper's own
#      upper bound). CPU per line of the helper, breachd and helperfeed
#      (the stand-in for Squid: its share of the two cores is ours, not
#      squidGuard's, whose stream is a file).
# 5. Verdicts of every run compared line by line with squidGuard's, and the
#    same-run ratios.
#
# Usage: tests/bench/bench-squid.sh
# Env:   BUILD (default build-squid-bench, configured --buildtype=release
#        when absent), N_URLS (300k), N_LIST (200k), CONC (64), CONC2 (256,
#        the man page's example, docs/breachd-squid-helper.8: a second
#        concurrency, 0 to skip), REPS (3),
#        BREACHD, HELPER (other binaries, e.g. a baseline build's),
#        BENCH_NO_BUILD=1, TMPDIR (scratch, default /var/tmp),
#        PROFILE=1 (instead of the timed reps: one pass at CONC2 with breachd
#        and the helper under valgrind --tool=callgrind, and their top
#        functions in instructions per line: where the time goes, whatever
#        the machine's load; valgrind hides the CPU's SHA extensions, so
#        OpenSSL's SHA-256 runs its slower AVX2 code there), PROFILE=perf
#        (the same pass natively, breachd sampled by perf record -e
#        cpu-clock: shares of its CPU time by function, SHA-NI included),
#        PROFILE=syscalls (one pass at CONC and one at CONC2, system calls
#        per line of breachd and of the helper by kind, perf stat counts).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-squid-bench}
. "$ROOT/tests/bench/bench-common.sh"

N_URLS=$(to_count "${N_URLS:-300k}")
N_LIST=$(to_count "${N_LIST:-200k}")
CONC=${CONC:-64}
CONC2=${CONC2:-256}
REPS=${REPS:-3}
PROFILE=${PROFILE:-0}
BREACHD=${BREACHD:-$BUILD/daemon/breachd}
BREACHCTL=$BUILD/client/breachctl/breachctl
HELPER=${HELPER:-$BUILD/client/squid/breachd-squid-helper}
BENCH_URL=$BUILD/tests/bench/bench_url
FEED=$BUILD/tests/bench/helperfeed

if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    if [ ! -f "$BUILD/build.ninja" ]; then
        meson setup "$BUILD" "$ROOT" --buildtype=release >/dev/null
    fi
    build_targets daemon/breachd client/breachctl/breachctl client/squid/breachd-squid-helper \
        tests/bench/bench_url tests/bench/helperfeed
fi
for p in "$BREACHD" "$BREACHCTL" "$HELPER" "$BENCH_URL" "$FEED"; do
    [ -x "$p" ] || { echo "bench-squid: $p is missing: build $BUILD first" >&2; exit 1; }
done
need_pkg squidGuard squidguard
SG=$(command -v squidGuard)

make_scratch_and_pids

field() { # field NAME "RESULT ..." -> value
    tr ' ' '\n' <<<"$2" | awk -F= -v k="$1" '$1 == k { print $2 }'
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TCK=$(getconf CLK_TCK)

machine_line
echo "# N_URLS=$N_URLS N_LIST=$N_LIST CONC=$CONC REPS=$REPS; squidGuard $("$SG" -v 2>&1 | head -1 | sed 's/^.*squidGuard[: ]*//')"
echo

# ---- 1, 2: data, breachd's filter, squidGuard's database ----
data=$SCRATCH/data
"$BENCH_URL" --emit-squid "$data" "$N_URLS" "$N_LIST" >"$SCRATCH/emit.log"
stream=$data/stream.txt
"$BREACHCTL" filter build --kind url-sha256 --output "$SCRATCH/urls.bbf" --ranges-dir "$SCRATCH/ranges" \
    --input "$data/list-domains.txt=malware" --source "bench-squid" >/dev/null 2>"$SCRATCH/build.log"
mkdir -p "$SCRATCH/sg/db/blk" "$SCRATCH/sg/log"
cp "$data/list-domains.txt" "$SCRATCH/sg/db/blk/domains"
cat >"$SCRATCH/sg/squidGuard.conf" <<EOF
dbhome $SCRATCH/sg/db
logdir $SCRATCH/sg/log
dest blk {
	domainlist blk/domains
}
acl {
	default {
		pass !blk all
		redirect http://blocked.invalid/?url=%u
	}
}
EOF
"$SG" -c "$SCRATCH/sg/squidGuard.conf" -C all >/dev/null 2>&1
sed 's|$| 127.0.0.1/- - GET myip=127.0.0.1 myport=3128|' "$stream" >"$SCRATCH/sg-in.txt"
head -1 "$SCRATCH/sg-in.txt" >"$SCRATCH/sg-one.txt"
grep -o "mean URL length [0-9.]* bytes" "$SCRATCH/emit.log" || true
echo "Data: $(wc -l <"$data/list-domains.txt") domains, $(wc -l <"$stream") URLs ($(grep -o "stream.txt ([0-9]* URLs, [0-9]* under the list" "$SCRATCH/emit.log" | sed "s/.*, //") )."
echo

# ---- 3: breachd ----
sock=$SCRATCH/breachd.sock
cat >"$SCRATCH/breachd.conf" <<EOF
[daemon]
socket = $sock
log_level = warning
[passwords]
filter =
upstream =
[urls]
filter = $SCRATCH/urls.bbf
upstream = file://$SCRATCH/ranges/{prefix}.txt
[cache]
path = $SCRATCH/cache
[upstream]
# a local file:// mirror: no need to spare it
rate = 100000
max_inflight = 64
EOF
wrap=()
[ "$PROFILE" = 1 ] && wrap=(valgrind --tool=callgrind --instr-atstart=no
    --callgrind-out-file="$SCRATCH/cg-breachd.out")
"${wrap[@]}" "$BREACHD" --config "$SCRATCH/breachd.conf" --foreground 2>"$SCRATCH/breachd.log" &
dpid=$!
pids+=("$dpid")
for _ in $(seq 200); do
    "$BREACHCTL" --socket "$sock" ping >/dev/null 2>&1 && break
    sleep 0.05
done
"$BREACHCTL" --socket "$sock" ping >/dev/null

feed_helper() { # CONC VERDICTS -> "RESULT ... daemon_cpu_s=..."
    local c0 c1 r
    c0=$(cpu_ticks "$dpid")
    r=$("$FEED" -q -c "$1" --verdicts "$2" "$stream" -- "$HELPER" --socket "$sock" --max-inflight 256 |
        grep '^RESULT')
    c1=$(cpu_ticks "$dpid")
    echo "$r daemon_cpu_s=$(calc "($c1 - $c0) / $TCK" 2)"
}
# squidGuard on stdin: "seconds cpu_s" of CMD < IN > OUT
run_sg() { # IN OUT
    local t0 t1 s
    t0=$(now)
    /usr/bin/time -f '%U %S' -o "$SCRATCH/sg-time" "$SG" -c "$SCRATCH/sg/squidGuard.conf" <"$1" >"$2"
    t1=$(now)
    s=$(elapsed "$t0" "$t1")
    echo "$s $(awk '{ print $1 + $2 }' "$SCRATCH/sg-time")"
}
need_pkg /usr/bin/time time
sg_verdicts() { # OUT VERDICTS: B for a redirect, P otherwise, one per line
    awk '{ printf "%s", (/url=/ ? "B" : "P") }' "$1" >"$2"
}
cmp_verdicts() { # A B -> "same N, differ M"
    python3 - "$1" "$2" <<'PY'
import sys
a = open(sys.argv[1]).read()
b = open(sys.argv[2]).read()
diff = sum(1 for x, y in zip(a, b) if x != y) + abs(len(a) - len(b))
print("%d differ (blocked %d / %d)" % (diff, a.count("B"), b.count("B")))
PY
}

cold=$(feed_helper "$CONC" "$SCRATCH/v-cold.txt")
echo "Cold pass (fills the range cache, not compared): $(field urls_per_s "$cold") lines/s, $(field blocked "$cold") blocked."
echo
if [ "$PROFILE" = perf ]; then
    perf record -q -e cpu-clock -F 4999 -g -o "$SCRATCH/perf.data" -p "$dpid" 2>/dev/null &
    ppid=$!
    sleep 1
    "$FEED" -q -c "$CONC2" --verdicts "$SCRATCH/v-p.txt" "$stream" -- "$HELPER" --socket "$sock" \
        --max-inflight 256 >/dev/null 2>&1
    kill -INT "$ppid"
    wait "$ppid" || true
    kill -TERM "$dpid"
    wait "$dpid" || true
    pids=()
    echo "### breachd: share of its CPU time (c=$CONC2), top functions, self and with callees"
    echo
    perf report -i "$SCRATCH/perf.data" --no-children --percent-limit 0.8 --stdio -g none 2>/dev/null |
        grep -E '^ +[0-9]' | head -30
    echo
    perf report -i "$SCRATCH/perf.data" --children --percent-limit 3 --stdio -g none 2>/dev/null |
        grep -E '^ +[0-9]' | head -30
    echo
    echo "### breachd: share of its CPU time by library (libcrypto: SHA-256 and the wipes)"
    echo
    perf report -i "$SCRATCH/perf.data" --no-children --sort dso --stdio -g none 2>/dev/null |
        grep -E '^ +[0-9]' | head -10
    exit 0
fi
if [ "$PROFILE" = syscalls ]; then
    # System calls per line of breachd and of the helper, by kind, over one
    # pass at CONC and one at CONC2 (perf stat on the syscall tracepoints:
    # counted in the kernel, without strace's stops that change batching).
    evs=syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_recvfrom
    evs+=,syscalls:sys_enter_sendto,syscalls:sys_enter_poll,syscalls:sys_enter_epoll_wait
    evs+=,syscalls:sys_enter_epoll_ctl,raw_syscalls:sys_enter
    for c in "$CONC" "$CONC2"; do
        perf stat -x, -o "$SCRATCH/ps-breachd.txt" -e "$evs" -p "$dpid" &
        ppid=$!
        sleep 0.5
        "$FEED" -q -c "$c" --verdicts "$SCRATCH/v-p.txt" "$stream" -- perf stat -x, \
            -o "$SCRATCH/ps-helper.txt" -e "$evs" "$HELPER" --socket "$sock" --max-inflight 256 \
            >/dev/null 2>&1
        kill -INT "$ppid"
        wait "$ppid" || true
        echo "### system calls per line, c=$c (${N_URLS} lines)"
        echo
        for w in breachd helper; do
            awk -F, -v n="$N_URLS" -v w="$w" '$3 ~ /sys_enter/ && $1 + 0 > 0 {
                e = $3; sub(/.*sys_enter_?/, "", e); if (e == "") e = "all"
                printf "    %-8s %-11s %7.3f\n", w, e, $1 / n }' "$SCRATCH/ps-$w.txt"
        done
        echo
    done
    kill -TERM "$dpid"
    wait "$dpid" || true
    pids=()
    exit 0
fi
if [ "$PROFILE" = 1 ]; then
    callgrind_control -i on "$dpid" >/dev/null 2>&1
    "$FEED" -q -c "$CONC2" --verdicts "$SCRATCH/v-p.txt" "$stream" -- valgrind --tool=callgrind \
        --callgrind-out-file="$SCRATCH/cg-helper.out" "$HELPER" --socket "$sock" \
        --max-inflight 256 >/dev/null 2>&1
    callgrind_control -i off "$dpid" >/dev/null 2>&1
    kill -TERM "$dpid"
    wait "$dpid" || true
    pids=()
    for w in breachd helper; do
        echo "### $w: instructions per line (c=$CONC2), top functions"
        echo
        callgrind_annotate "$SCRATCH/cg-$w.out" 2>/dev/null | awk -v n="$N_URLS" '
            /PROGRAM TOTALS/ { v = $1; gsub(",", "", v); printf "    %8.0f  all\n", v / n }
            /^ *[0-9,]+ \(/ && !/TOTALS/ && k++ < 15 { v = $1; gsub(",", "", v); f = $NF == "]" ? $(NF - 2) : $(NF - 1)
                sub(/.*\//, "", f); printf "    %8.1f  %s\n", v / n, f }'
        echo
    done
    exit 0
fi
echo "| rep | squidGuard lines/s (net of start-up) | squidGuard CPU ns/line | helper c=$CONC lines/s | ratio | helper c=$CONC2 lines/s | ratio | helper open loop lines/s | ratio | helper CPU ns/line (c=$CONC) | breachd CPU ns/line (c=$CONC) | feeder CPU ns/line (c=$CONC) | verdicts c=$CONC, c=$CONC2, open loop vs squidGuard |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
ratios=() ratios2=()
for rep in $(seq "$REPS"); do
    read -r sg0 _ <<<"$(run_sg "$SCRATCH/sg-one.txt" /dev/null)"
    read -r sgs sgcpu <<<"$(run_sg "$SCRATCH/sg-in.txt" "$SCRATCH/sg-out.txt")"
    sg_verdicts "$SCRATCH/sg-out.txt" "$SCRATCH/v-sg.txt"
    sg_lps=$(calc "$N_URLS / ($sgs - $sg0)" 0)
    h=$(feed_helper "$CONC" "$SCRATCH/v-h.txt")
    o=$(feed_helper 0 "$SCRATCH/v-o.txt")
    h2_lps=- r2=- v2=-
    if [ "$CONC2" != 0 ]; then
        h2=$(feed_helper "$CONC2" "$SCRATCH/v-h2.txt")
        h2_lps=$(field urls_per_s "$h2")
        r2=$(calc "$h2_lps / $sg_lps" 2)
        ratios2+=("$r2")
        v2=$(cmp_verdicts "$SCRATCH/v-h2.txt" "$SCRATCH/v-sg.txt")
    fi
    h_lps=$(field urls_per_s "$h")
    o_lps=$(field urls_per_s "$o")
    r=$(calc "$h_lps / $sg_lps" 2)
    ratios+=("$r")
    echo "| $rep | $sg_lps | $(calc "$sgcpu * 1e9 / $N_URLS" 0) | $h_lps | **$r** | $h2_lps | $r2 | $o_lps | $(calc "$o_lps / $sg_lps" 2) | $(calc "$(field child_cpu_s "$h") * 1e9 / $N_URLS" 0) | $(calc "$(field daemon_cpu_s "$h") * 1e9 / $N_URLS" 0) | $(calc "$(field feeder_cpu_s "$h") * 1e9 / $N_URLS" 0) | $(cmp_verdicts "$SCRATCH/v-h.txt" "$SCRATCH/v-sg.txt"); $v2; $(cmp_verdicts "$SCRATCH/v-o.txt" "$SCRATCH/v-sg.txt") |"
done
kill -TERM "$dpid"
wait "$dpid" || echo "note: breachd exited $?"
pids=()
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
target() { # CONC RATIO... -> the target line for that concurrency
    local c=$1 med
    shift
    med=$(printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    echo "Target: helper with concurrency=$c >= 3.0x squidGuard's lines/s: $(awk -v r="$med" 'BEGIN { print (r >= 3 ? "met" : "NOT met") }') (median ratio $med over $REPS runs)."
}
target "$CONC" "${ratios[@]}"
if [ "$CONC2" != 0 ]; then
    target "$CONC2" "${ratios2[@]}"
fi
