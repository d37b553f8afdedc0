#!/bin/bash
# SPDX-License-Identifier: MIT
# URL checks: in process, through breachd, through breachd-squid-helper, and
# squidGuard on the same list and URL stream.
#
# 1. bench_url --emit: a list of N_LIST entries (70% domains, 30% URL
#    prefixes and pages) and a stream of N_URLS realistic URLs, 1% of them
#    under the list (see bench_url.c).
# 2. bench_url in process on the same data: canonicalize + expressions +
#    SHA-256 + Bloom probes, URLs/s.
# 3. breachctl filter build --kind url-sha256 from the two lists (domains
#    feed = malware, URL feed = phishing) with a file:// range mirror; the
#    squidGuard database of the same lists (a domainlist and a urllist,
#    squidGuard -C all).
# 4. breachd on that filter (scratch socket and LMDB cache), then:
#    - loadgen --urls: one full pass of the stream (cold: the 1% of maybes
#      fetch their ranges from the file:// mirror into the cache), then
#      DURATION seconds measured (CONNS connections x DEPTH);
#    - helperfeed (Squid's external ACL protocol with channel IDs) into
#      breachd-squid-helper: -c CONC (Squid's concurrency=CONC), -c 1 and
#      open loop; the helper's CPU, and breachd's CPU over the run
#      (/proc/PID/stat), per URL.
# 5. squidGuard 1.6 (Debian's) fed the same stream by helperfeed in the
#    url_rewrite protocol (squidGuard reads no channel IDs): -c 1, as Squid
#    drives it, and open loop (its upper bound); its CPU per URL.
# 6. Verdicts of the helper and of squidGuard compared URL by URL, and the
#    ratios breachd / squidGuard, from this one run.
# Every program is single-threaded; on a 2-core machine helperfeed, the
# helper and breachd (or squidGuard) share the cores.
#
# Usage: tests/bench/bench-url.sh
# Env:   BUILD (default build-url-bench, configured --buildtype=release
#        when absent), N_URLS (1M), N_LIST (1M),
#        DURATION (10), WARMUP (2), CONNS (50), DEPTH (16), CONC (64),
#        BENCH_NO_BUILD=1, TMPDIR (scratch, default /var/tmp).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-url-bench}
. "$ROOT/tests/bench/bench-common.sh"

N_URLS=$(to_count "${N_URLS:-1M}")
N_LIST=$(to_count "${N_LIST:-1M}")
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNS=${CONNS:-50}
DEPTH=${DEPTH:-16}
CONC=${CONC:-64}
BREACHD=$BUILD/daemon/breachd
HELPER=$BUILD/client/squid/breachd-squid-helper
BENCH_URL=$BUILD/tests/bench/bench_url
LOADGEN=$BUILD/tests/bench/loadgen
FEED=$BUILD/tests/bench/helperfeed

if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    if [ ! -f "$BUILD/build.ninja" ]; then
        meson setup "$BUILD" "$ROOT" --buildtype=release >/dev/null
    fi
    build_targets daemon/breachd client/breachctl/breachctl client/squid/breachd-squid-helper \
        tests/bench/bench_url tests/bench/loadgen tests/bench/helperfeed
fi
for p in "$BREACHD" "$BREACHCTL" "$HELPER" "$BENCH_URL" "$LOADGEN" "$FEED"; do
    [ -x "$p" ] || { echo "bench-url: $p is missing: build $BUILD first" >&2; exit 1; }
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
echo "# N_URLS=$N_URLS N_LIST=$N_LIST; squidGuard $("$SG" -v 2>&1 | head -1 | sed 's/^.*squidGuard[: ]*//')"
echo

# ---- 1, 2: data and in-process ----
data=$SCRATCH/data
"$BENCH_URL" --emit "$data" "$N_URLS" "$N_LIST" >"$SCRATCH/emit.log"
stream=$data/stream.txt
echo "## In process (bench_url)"
echo
echo '```'
"$BENCH_URL" "$N_URLS" "$N_LIST" | tee "$SCRATCH/inproc.log" | grep -v '^  ' | sed '/^RESULT/d'
echo '```'
inproc=$(grep '^RESULT' "$SCRATCH/inproc.log")
echo

# ---- 3: breachd's filter, squidGuard's database ----
t0=$(now)
"$BREACHCTL" filter build --kind url-sha256 --output "$SCRATCH/urls.bbf" --ranges-dir "$SCRATCH/ranges" \
    --input "$data/list-domains.txt=malware" --input "$data/list-urls.txt=phishing" \
    --source "bench-url" >/dev/null 2>"$SCRATCH/build.log"
t1=$(now)
build_s=$(elapsed "$t0" "$t1")
keys=$(grep -o 'wrote [^:]*: [0-9]* keys' "$SCRATCH/build.log" | awk '{ print $(NF-1) }')
mkdir -p "$SCRATCH/sg/db/blk" "$SCRATCH/sg/log"
cp "$data/list-domains.txt" "$SCRATCH/sg/db/blk/domains"
cp "$data/list-urls.txt" "$SCRATCH/sg/db/blk/urls"
cat >"$SCRATCH/sg/squidGuard.conf" <<EOF
dbhome $SCRATCH/sg/db
logdir $SCRATCH/sg/log
dest blk {
	domainlist blk/domains
	urllist blk/urls
}
acl {
	default {
		pass !blk all
		redirect http://blocked.invalid/?url=%u
	}
}
EOF
t0=$(now)
"$SG" -c "$SCRATCH/sg/squidGuard.conf" -C all >/dev/null 2>&1
t1=$(now)
sg_build_s=$(elapsed "$t0" "$t1")
sg_bytes=$(($(file_size "$SCRATCH/sg/db/blk/domains.db") + $(file_size "$SCRATCH/sg/db/blk/urls.db")))
echo "## Lists"
echo
echo "| | entries | build s | bytes |"
echo "|---|---:|---:|---:|"
echo "| breachctl filter build (url-sha256, + $(find "$SCRATCH/ranges" -name '*.txt' | wc -l) mirror files) | $keys | $build_s | $(file_size "$SCRATCH/urls.bbf") |"
echo "| squidGuard -C all (domains.db + urls.db) | $N_LIST | $sg_build_s | $sg_bytes |"
echo

# ---- 4: breachd ----
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
# a local file:// mirror: no need to spare it (the default 50/s would turn
# the cold pass's range fetches into timeouts)
rate = 100000
max_inflight = 64
EOF
"$BREACHD" --config "$SCRATCH/breachd.conf" --foreground 2>"$SCRATCH/breachd.log" &
dpid=$!
pids+=("$dpid")
for _ in $(seq 200); do
    "$BREACHCTL" --socket "$sock" ping >/dev/null 2>&1 && break
    sleep 0.05
done
"$BREACHCTL" --socket "$sock" ping >/dev/null

echo "## Through breachd (loadgen --urls, $CONNS connections x depth $DEPTH)"
echo
cold=$("$LOADGEN" --socket "$sock" --urls "$stream" -c "$CONNS" -P "$DEPTH" -n "$N_URLS" -q | grep '^RESULT')
warm=$("$LOADGEN" --socket "$sock" --urls "$stream" -c "$CONNS" -P "$DEPTH" -d "$DURATION" -w "$WARMUP" -q |
    grep '^RESULT')
echo "| run | URLs | s | URLs/s | p50 us | p99 us | SAFE | BLOCKED | UNKNOWN | ERR | filter maybes | breachd CPU % | breachd CPU ns/URL |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for r in cold warm; do
    v=${!r}
    echo "| $r | $(field answered "$v") | $(field seconds "$v") | $(field rps "$v") | $(field p50_us "$v") | $(field p99_us "$v") | $(field clean "$v") | $(field pwned "$v") | $(field unknown "$v") | $(field err "$v") | $(field maybes "$v") | $(field daemon_cpu_pct "$v") | $(field daemon_ns_per_req "$v") |"
done
echo
echo "(cold: one pass over the whole stream, ranges fetched from the file:// mirror into the empty cache; warm: $DURATION s after $WARMUP s)"
echo

# ---- 4, 5: the helpers ----
feed_breachd() { # CONC VERDICTS -> "RESULT ... daemon_cpu_s=..."
    local c0 c1 r
    c0=$(cpu_ticks "$dpid")
    r=$("$FEED" -q -c "$1" --verdicts "$2" "$stream" -- "$HELPER" --socket "$sock" --max-inflight 256 | grep '^RESULT')
    c1=$(cpu_ticks "$dpid")
    echo "$r daemon_cpu_s=$(calc "($c1 - $c0) / $TCK" 2)"
}
feed_sg() { # CONC VERDICTS
    "$FEED" -q --format rewrite -c "$1" --verdicts "$2" "$stream" -- "$SG" -c "$SCRATCH/sg/squidGuard.conf" |
        grep '^RESULT'
}
h_conc=$(feed_breachd "$CONC" "$SCRATCH/v-helper.txt")
h_one=$(feed_breachd 1 "$SCRATCH/v-helper1.txt")
h_open=$(feed_breachd 0 "$SCRATCH/v-helper0.txt")
s_one=$(feed_sg 1 "$SCRATCH/v-sg.txt")
s_open=$(feed_sg 0 "$SCRATCH/v-sg0.txt")
kill -TERM "$dpid"
wait "$dpid" || echo "note: breachd exited $?"
pids=()

echo "## Squid helper protocol (helperfeed), the same $N_URLS URLs"
echo
echo "| helper | Squid config it stands for | URLs/s | blocked | passed | BH | helper CPU ns/URL | breachd CPU ns/URL | total CPU ns/URL |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
row() { # NAME CONFIG RESULT
    local n cpu dcpu
    n=$(field urls "$3")
    cpu=$(field child_cpu_s "$3")
    dcpu=$(field daemon_cpu_s "$3")
    [ -n "$dcpu" ] || dcpu=0
    echo "| $1 | $2 | $(field urls_per_s "$3") | $(field blocked "$3") | $(field passed "$3") | $(field bh "$3") | $(calc "$cpu * 1e9 / $n" 0) | $([ "$dcpu" = 0 ] && echo - || calc "$dcpu * 1e9 / $n" 0) | $(calc "($cpu + $dcpu) * 1e9 / $n" 0) |"
}
row "breachd-squid-helper + breachd" "external_acl_type concurrency=$CONC" "$h_conc"
row "breachd-squid-helper + breachd" "external_acl_type (no concurrency)" "$h_one"
row "breachd-squid-helper + breachd" "open loop (upper bound)" "$h_open"
row "squidGuard" "url_rewrite_program (no concurrency: squidGuard reads no channel ID)" "$s_one"
row "squidGuard" "open loop (upper bound)" "$s_open"
echo

# ---- 6: verdicts and ratios ----
cmp_verdicts() {
    python3 - "$1" "$2" <<'PY'
import sys
a = open(sys.argv[1]).read()
b = open(sys.argv[2]).read()
both = sum(1 for x, y in zip(a, b) if x == "B" and y == "B")
only_a = sum(1 for x, y in zip(a, b) if x == "B" and y != "B")
only_b = sum(1 for x, y in zip(a, b) if x != "B" and y == "B")
print("both block %d, only breachd %d, only squidGuard %d" % (both, only_a, only_b))
PY
}
echo "Verdicts, URL by URL: $(cmp_verdicts "$SCRATCH/v-helper.txt" "$SCRATCH/v-sg.txt")."
echo
r_conc=$(calc "$(field urls_per_s "$h_conc") / $(field urls_per_s "$s_one")" 2)
r_one=$(calc "$(field urls_per_s "$h_one") / $(field urls_per_s "$s_one")" 2)
r_open=$(calc "$(field urls_per_s "$h_open") / $(field urls_per_s "$s_open")" 2)
cpu_h=$(calc "($(field child_cpu_s "$h_conc") + $(field daemon_cpu_s "$h_conc")) / $(field child_cpu_s "$s_one")" 2)
r_inproc=$(calc "$(field urls_per_s "$inproc") / $(field urls_per_s "$s_open")" 1)
echo "## Ratios breachd / squidGuard (same run, same list, same stream)"
echo
echo "| comparison | ratio |"
echo "|---|---:|"
echo "| helper concurrency=$CONC vs squidGuard (each as Squid drives it) | $r_conc |"
echo "| helper without concurrency vs squidGuard (both one request at a time) | $r_one |"
echo "| open loop vs open loop | $r_open |"
echo "| CPU per URL: squidGuard / (helper + breachd), at concurrency=$CONC | $(calc "1 / $cpu_h" 2) |"
echo "| in process (bench_url) vs squidGuard open loop | $r_inproc |"
echo
echo "Target: breachd >= 2x squidGuard's throughput: $(awk -v r="$r_conc" 'BEGIN { print (r >= 2 ? "met" : "NOT met") }') ($r_conc x as Squid drives each; $r_open x open loop)."
