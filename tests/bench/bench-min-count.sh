#!/bin/bash
# SPDX-License-Identifier: MIT
# The offline filter of popular passwords (docs/similar.md) built from a
# real corpus at several --min-count thresholds: its size, and what the
# similar-password check refuses against it.
#
#   tests/bench/bench-min-count.sh INPUT [PASSPHRASES [RANDOM12]]
#
# INPUT is what `breachctl filter build --input` reads: the downloaded
# HIBP corpus (a directory of range files from `breachctl download`, or the
# single ordered-by-hash file, plain or compressed). For each N of
# THRESHOLDS (default "100 1000 10000"):
#
# 1. `breachctl filter build --kind password-sha1 --offline --min-count N`
#    (wall time, peak RSS), then the key count, the file's bytes and bits
#    per key (`filter info`);
# 2. bench_similar --filter against that file with --min-count N (a hit
#    counts from N, as breachd's answer with the client's
#    --similar-min-count N): the share refused of John the Ripper's
#    wordlist-rule tweaks of john-data's password.lst (exact hits counted
#    apart), of PASSPHRASES random 4-word passphrases (wamerican) and of
#    RANDOM12 random 12-character passwords: the false refusals a real
#    filter gives, which the password.lst stand-in of bench-similar.sh
#    cannot show.
#
# Needs disk for the filters (about 4.5 bytes a key kept) and --tmpdir room
# for the build's spill (16 bytes a key of INPUT) under TMPDIR (default
# /var/tmp). BUILD (build-bench). The full corpus takes about 8 minutes a
# threshold on 2 cores (the corpus is read each time).
set -euo pipefail
# shellcheck source=tests/bench/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

[ $# -ge 1 ] || { sed -n '3,28p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
INPUT=$1
PASSPHRASES=$(to_count "${2:-100000}")
RANDOM12=$(to_count "${3:-100000}")
THRESHOLDS=${THRESHOLDS:-100 1000 10000}
[ -e "$INPUT" ] || { echo "bench-min-count: $INPUT: no such file or directory" >&2; exit 2; }
need_pkg john john
[ -r /usr/share/john/password.lst ] || need_pkg /usr/share/john/password.lst john-data
[ -r /usr/share/dict/words ] || need_pkg /usr/share/dict/words wamerican
ensure_build
build_targets tests/bench/bench_similar
make_scratch

grep -v '^#!comment' /usr/share/john/password.lst >"$SCRATCH/base.lst"
john --wordlist="$SCRATCH/base.lst" --rules --stdout 2>/dev/null >"$SCRATCH/tweaks.txt"
echo "== $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo "== input $INPUT; tweaks: john --rules over password.lst, $(wc -l <"$SCRATCH/tweaks.txt") lines"
summary=()
for n in $THRESHOLDS; do
    f=$SCRATCH/popular-$n.bfuse
    echo "== --min-count $n"
    $GNUTIME -f "build: %e s wall, %M KiB peak RSS" "$BREACHCTL" filter build --kind password-sha1 \
        --offline --min-count "$n" --tmpdir "$SCRATCH" --input "$INPUT" --output "$f" 2>&1 |
        sed 's/^/  /'
    keys=$("$BREACHCTL" filter info "$f" | sed -n 's/^keys: *\([0-9]*\).*/\1/p' | head -n 1)
    bytes=$(stat -c %s "$f")
    echo "  keys $keys, $bytes bytes, $(awk -v b="$bytes" -v k="$keys" \
        'BEGIN { printf "%.2f", k ? 8 * b / k : 0 }') bits/key"
    out=$("$BUILD/tests/bench/bench_similar" --filter "$f" --min-count "$n" \
        --tweaks "$SCRATCH/tweaks.txt" --words /usr/share/dict/words \
        --passphrases "$PASSPHRASES" --random12 "$RANDOM12" --misses 5)
    printf '%s\n' "$out" | sed 's/^/  /'
    summary+=("$n $keys $bytes")
    rm -f "$f"
done
echo "== summary: min-count, keys, bytes"
printf '  %s\n' "${summary[@]}"
