#!/bin/bash
# SPDX-License-Identifier: MIT
# Similar passwords end to end through breachd (docs/similar.md, "Measured"):
# the time per password of what a client does at change time, the exact
# check (PW) then the similarity check (its variants hashed and sent with
# SIMILAR, 128 a request), on one connection to a running breachd whose
# filters are offline: [passwords] filter the whole demo corpus
# (data/demo/make-corpus: john-data's password.lst with made-up counts and
# RANDOM_HASHES random hashes) and similar_filter the same with
# --min-count 100. The passwords: TWEAKS of John the Ripper's wordlist
# rules over password.lst (shuffled, seed 27) and RANDOM12 random
# 12-character passwords. bench_similar_daemon.c prints p50/p90/p99/max.
#
#   tests/bench/bench-similar-daemon.sh [TWEAKS [RANDOM12]]   (default 20000 5000)
#
# Needs john and john-data (installed when missing). BUILD (build-bench),
# BENCH_NO_BUILD=1 (use the binaries as they are).
set -euo pipefail
# shellcheck source=tests/bench/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

TWEAKS=$(to_count "${1:-20000}")
RANDOM12=$(to_count "${2:-5000}")
RANDOM_HASHES=200000
need_pkg john john
[ -r /usr/share/john/password.lst ] || need_pkg /usr/share/john/password.lst john-data
if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    if [ ! -f "$BUILD/build.ninja" ]; then
        meson setup "$BUILD" "$ROOT" --buildtype=release >/dev/null
    fi
    build_targets daemon/breachd client/breachctl/breachctl tests/bench/bench_similar_daemon
fi
BREACHD=$BUILD/daemon/breachd
BENCH=$BUILD/tests/bench/bench_similar_daemon
make_scratch_and_pids

"$ROOT/data/demo/make-corpus" "$SCRATCH/corpus" --random "$RANDOM_HASHES" 2>/dev/null
"$BREACHCTL" filter build --kind password-sha1 --offline --input "$SCRATCH/corpus/corpus.txt" \
    --output "$SCRATCH/full.bfuse" >/dev/null 2>&1
"$BREACHCTL" filter build --kind password-sha1 --offline --min-count 100 \
    --input "$SCRATCH/corpus/corpus.txt" --output "$SCRATCH/popular.bfuse" >/dev/null 2>&1
SOCK=$SCRATCH/breachd.sock
cat >"$SCRATCH/breachd.conf" <<CONF
[daemon]
socket = $SOCK
log_level = warning
[passwords]
filter = $SCRATCH/full.bfuse
similar_filter = $SCRATCH/popular.bfuse
upstream = none
[ntlm]
upstream =
[cache]
path = $SCRATCH/cache
CONF
"$BREACHD" --config "$SCRATCH/breachd.conf" --foreground 2>"$SCRATCH/breachd.log" &
pids+=("$!")
for _ in $(seq 300); do
    "$BREACHCTL" --socket "$SOCK" ping >/dev/null 2>&1 && break
    sleep 0.1
done
"$BREACHCTL" --socket "$SOCK" ping >/dev/null || { cat "$SCRATCH/breachd.log" >&2; exit 1; }

grep -v '^#!comment' /usr/share/john/password.lst >"$SCRATCH/base.lst"
john --wordlist="$SCRATCH/base.lst" --rules --stdout 2>/dev/null |
    shuf -n "$TWEAKS" --random-source=<(yes 27) >"$SCRATCH/tweaks.txt"
python3 -c '
import random, string, sys
rng = random.Random(12)
chars = string.ascii_letters + string.digits + string.punctuation
for _ in range(int(sys.argv[1])):
    print("".join(rng.choice(chars) for _ in range(12)))' "$RANDOM12" >"$SCRATCH/random12.txt"

machine_line
echo "== popular filter: $(file_size "$SCRATCH/popular.bfuse") bytes," \
    "full: $(file_size "$SCRATCH/full.bfuse") bytes"
echo "== $TWEAKS of john --rules' tweaks of password.lst (min count 1000)"
"$BENCH" "$SOCK" "$SCRATCH/tweaks.txt" 1000
echo "== the same tweaks, min count 100 (every word of password.lst counts)"
"$BENCH" "$SOCK" "$SCRATCH/tweaks.txt" 100
echo "== $RANDOM12 random 12-character passwords (min count 1000)"
"$BENCH" "$SOCK" "$SCRATCH/random12.txt" 1000
