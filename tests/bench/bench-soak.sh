#!/bin/bash
# SPDX-License-Identifier: MIT
# A soak, by hand: TOTAL (default 100 million) mixed requests through one
# breachd, its memory sampled every 10 s. Half the requests run with a cold
# cache, half with a hot one, each on a fresh breachd:
#
#   cold: [cache] ttl = 1 s, max_stale = 0: a range is refetched (revalidated)
#         once it is a second old, so the cache is written, expired and
#         purged all the time;
#   hot:  the default ttl, every range fetched once by a first pass that is
#         not counted, then only cache hits.
#
# The load: loadgen --mix PW,URL,PING,STATS (default 50,40,9,1), CONNS
# connections x DEPTH outstanding. PW hashes come in turn from a file of
# 1,000,000: the KEYS keys of the password filter (filter "maybe", so they
# go through the range cache) and random hashes (filter "no"), shuffled. URLs
# come in turn from a 1M-URL stream (bench_url --emit) against a
# 20,000-entry URL filter (about 1% of the stream is a filter "maybe").
# Ranges come from file:// mirrors written for both filters (no network).
#
# Output: per phase, a table of samples (seconds, requests answered so far
# is not known mid-run, so: VmRSS, RssAnon, RssFile, VmHWM, open fds, CPU
# seconds) and loadgen's RESULT line; then a summary (RSS at 10% of the run
# and at its end, the largest, the slope).
#
# Usage: tests/bench/bench-soak.sh    (TOTAL=100000000: about 10 to 30 minutes on 2 cores)
# Env:   TOTAL, MIX, CONNS (50), DEPTH (16), KEYS (100000), BUILD (build-bench,
#        release), TMPDIR (scratch, about 1 GB), INTERVAL (10, seconds between samples).
set -euo pipefail
# shellcheck source=tests/bench/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

TOTAL=$(to_count "${TOTAL:-100000000}")
MIX=${MIX:-50,40,9,1}
CONNS=${CONNS:-50}
DEPTH=${DEPTH:-16}
KEYS=$(to_count "${KEYS:-100000}")
INTERVAL=${INTERVAL:-10}
BREACHD=$BUILD/daemon/breachd
LOADGEN=$BUILD/tests/bench/loadgen
BENCH_URL=$BUILD/tests/bench/bench_url

ensure_build
build_targets daemon/breachd tests/bench/loadgen tests/bench/bench_url
make_scratch_and_pids

machine_line
echo "# TOTAL=$TOTAL MIX=$MIX (PW,URL,PING,STATS) CONNS=$CONNS DEPTH=$DEPTH KEYS=$KEYS"
echo

# ---- data ----
"$GEN" hibp "$KEYS" >"$SCRATCH/keys.txt"
"$BREACHCTL" filter build --kind password-sha1 --input "$SCRATCH/keys.txt" \
    --output "$SCRATCH/pw.bfuse" --source "bench-soak" >/dev/null 2>"$SCRATCH/build.log" ||
    { cat "$SCRATCH/build.log" >&2; exit 1; }
python3 - "$SCRATCH" <<'EOF'
import os, random, sys
d = sys.argv[1]
mirror = os.path.join(d, "pwranges")
os.mkdir(mirror)
by_prefix, present = {}, []
for line in open(os.path.join(d, "keys.txt"), newline=""):
    h, count = line.strip().split(":")
    by_prefix.setdefault(h[:5], []).append("%s:%s\r\n" % (h[5:], count))
    present.append(h)
for p, lines in by_prefix.items():
    with open(os.path.join(mirror, p), "w", newline="") as f:
        f.writelines(lines)
rng = random.Random(2026)
hashes = present + ["%040X" % rng.getrandbits(160) for _ in range(1000000 - len(present))]
rng.shuffle(hashes)
with open(os.path.join(d, "hashes.txt"), "w") as f:
    f.write("\n".join(hashes) + "\n")
print("password mirror: %d prefix files, %d keys; hashes file: %d lines" % (len(by_prefix), len(present), len(hashes)))
EOF
"$BENCH_URL" --emit "$SCRATCH/url" 1000000 20000 >"$SCRATCH/emit.log"
"$BREACHCTL" filter build --kind url-sha256 --output "$SCRATCH/urls.bbf" --ranges-dir "$SCRATCH/urlranges" \
    --input "$SCRATCH/url/list-domains.txt=malware" --input "$SCRATCH/url/list-urls.txt=phishing" \
    --source "bench-soak" >/dev/null 2>"$SCRATCH/build.log" || { cat "$SCRATCH/build.log" >&2; exit 1; }
echo "URL filter: $(file_size "$SCRATCH/urls.bbf") bytes, $(find "$SCRATCH/urlranges" -name '*.txt' | wc -l) mirror files"
echo

sample() { # PID T0 -> one table row
    local st fds cpu
    st=$(awk '/^VmRSS:/ { r = $2 } /^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 } /^VmHWM:/ { h = $2 }
        END { printf "%.1f | %.1f | %.1f | %.1f", r / 1024, a / 1024, f / 1024, h / 1024 }' "/proc/$1/status")
    fds=$(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    cpu=$(awk -v t="$(getconf CLK_TCK)" '{ printf "%.0f", ($14 + $15) / t }' "/proc/$1/stat")
    echo "| $(elapsed "$2" "$(now)") | $st | $fds | $cpu |"
}

# phase NAME TTL REQUESTS WARM(0|1)
phase() {
    local name=$1 ttl=$2 n=$3 warm=$4 sock=$SCRATCH/breachd-$1.sock lpid t0 res
    cat >"$SCRATCH/breachd-$name.conf" <<EOF
[daemon]
socket = $sock
socket_mode = 0600
log_level = warning
[passwords]
filter = $SCRATCH/pw.bfuse
upstream = file://$SCRATCH/pwranges/{prefix}
[urls]
filter = $SCRATCH/urls.bbf
upstream = file://$SCRATCH/urlranges/{prefix}.txt
[cache]
path = $SCRATCH/cache-$name
ttl = $ttl
max_stale = 0
[upstream]
rate = 100000
max_inflight = 64
[limits]
max_connections = 4096
EOF
    start_breachd "$SCRATCH/breachd-$name.conf" "$SCRATCH/breachd-$name.log" "$sock"
    if [ "$warm" = 1 ]; then
        "$LOADGEN" -s "$sock" -c "$CONNS" -P "$DEPTH" -n 1000000 --hashes "$SCRATCH/hashes.txt" \
            --mix 1,0,0,0 -q >/dev/null
        "$LOADGEN" -s "$sock" -c "$CONNS" -P "$DEPTH" -n 1000000 --urls "$SCRATCH/url/stream.txt" -q >/dev/null
        echo "hot cache: one pass over the 1M hashes and the 1M URLs done before the measured run"
    fi
    echo "### $name cache ($n requests)"
    echo
    echo "| s | VmRSS MiB | RssAnon MiB | RssFile MiB | VmHWM MiB | fds | CPU s |"
    echo "|---:|---:|---:|---:|---:|---:|---:|"
    t0=$(now)
    "$LOADGEN" -s "$sock" -c "$CONNS" -P "$DEPTH" -n "$n" --mix "$MIX" --hashes "$SCRATCH/hashes.txt" \
        --urls "$SCRATCH/url/stream.txt" -q >"$SCRATCH/loadgen-$name.out" 2>&1 &
    lpid=$!
    sample "$dpid" "$t0"
    while kill -0 "$lpid" 2>/dev/null; do
        sleep "$INTERVAL" &
        wait $! || true
        kill -0 "$lpid" 2>/dev/null && sample "$dpid" "$t0"
    done
    wait "$lpid" || { cat "$SCRATCH/loadgen-$name.out" >&2; exit 1; }
    sample "$dpid" "$t0"
    echo
    res=$(grep '^RESULT' "$SCRATCH/loadgen-$name.out")
    echo "    $res"
    echo "    breachd log lines at warning and above: $(wc -l <"$SCRATCH/breachd-$name.log")"
    echo
    kill -TERM "$dpid"
    wait "$dpid" || { echo "breachd ($name) exited $?" >&2; exit 1; }
}

phase cold 1 $((TOTAL / 2)) 0
phase hot 1d $((TOTAL - TOTAL / 2)) 1
machine_line
