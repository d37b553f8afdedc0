#!/bin/bash
# SPDX-License-Identifier: MIT
# Similar passwords (lib/similar/, docs/similar.md): what the check refuses
# and what it costs, in process (bench_similar.c).
#
# 1. The popular passwords: john-data's password.lst, the list the test
#    corpus is made from (data/demo/make-corpus), comment lines dropped.
# 2. An independent tweak generator: John the Ripper's wordlist rules
#    (`john --wordlist=BASE --rules --stdout`, Debian's john 1.9.0, the
#    [List.Rules:Wordlist] section of /etc/john/john.conf) over that list;
#    and a second one: hashcat-data's best64.rule and leetspeak.rule applied
#    by hashcat_rules.py (hashcat's rule functions in Python).
# 3. bench_similar with an exact in-memory set of the list's SHA-1s standing
#    in for the offline filter of popular passwords (a filter adds false
#    positives of at most 2^-24 per key: the rates carry over): the share of
#    the tweaks refused (exact hits left out), of PASSPHRASES random
#    4-word passphrases from wamerican's /usr/share/dict/words (joined with
#    a space, then with '-') and of RANDOM12 random 12-character passwords
#    refused, and the time per password (wall and CPU), SHA-1 alone, then
#    SHA-1 + NT, and on inputs that reach the bound.
# 4. The same against a larger stand-in (the list and wamerican's lowercase
#    words, 67,000 in all), which a word near a random string is likelier
#    to be in; the random candidates refused are printed.
#
#   tests/bench/bench-similar.sh [PASSPHRASES [RANDOM12]]   (default 100000 100000)
#
# Needs john, hashcat-data and wamerican (installed when missing); about 1 minute on a
# quiet 2-core machine. BUILD (build-bench), BENCH_NO_BUILD=1 (use the
# binary as it is: `meson test --benchmark`).
set -euo pipefail
# shellcheck source=tests/bench/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

PASSPHRASES=$(to_count "${1:-100000}")
RANDOM12=$(to_count "${2:-100000}")
need_pkg john john
[ -r /usr/share/john/password.lst ] || need_pkg /usr/share/john/password.lst john-data
[ -r /usr/share/dict/words ] || need_pkg /usr/share/dict/words wamerican
[ -r /usr/share/hashcat/rules/best64.rule ] || need_pkg /usr/share/hashcat/rules/best64.rule hashcat-data
if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    if [ ! -f "$BUILD/build.ninja" ]; then
        meson setup "$BUILD" "$ROOT" --buildtype=release >/dev/null
    fi
    build_targets tests/bench/bench_similar
fi
BENCH=$BUILD/tests/bench/bench_similar
make_scratch

grep -v '^#!comment' /usr/share/john/password.lst >"$SCRATCH/base.lst"
john --wordlist="$SCRATCH/base.lst" --rules --stdout 2>/dev/null >"$SCRATCH/tweaks.txt"
echo "== $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo "== base $(wc -l <"$SCRATCH/base.lst") passwords, john --rules: $(wc -l <"$SCRATCH/tweaks.txt") tweaks"
"$BENCH" --base "$SCRATCH/base.lst" --tweaks "$SCRATCH/tweaks.txt" \
    --words /usr/share/dict/words --passphrases "$PASSPHRASES" --random12 "$RANDOM12" \
    --adversarial 20000
echo "== hashcat-data's best64.rule and leetspeak.rule over the same list (hashcat_rules.py)"
for rules in best64 leetspeak; do
    python3 "$ROOT/tests/bench/hashcat_rules.py" "$SCRATCH/base.lst" \
        "/usr/share/hashcat/rules/$rules.rule" >"$SCRATCH/$rules.txt"
    echo "-- $rules.rule"
    "$BENCH" --base "$SCRATCH/base.lst" --tweaks "$SCRATCH/$rules.txt"
done
echo "== the same, passphrases joined with '-', seed 7"
"$BENCH" --base "$SCRATCH/base.lst" --words /usr/share/dict/words \
    --passphrases "$PASSPHRASES" --sep - --seed 7
echo "== a larger stand-in: the list and wamerican's lowercase words, seed 12"
{
    cat "$SCRATCH/base.lst"
    grep -E '^[a-z]+$' /usr/share/dict/words
} >"$SCRATCH/big.lst"
"$BENCH" --base "$SCRATCH/big.lst" --tweaks "$SCRATCH/tweaks.txt" \
    --words /usr/share/dict/words --passphrases "$PASSPHRASES" --random12 "$RANDOM12" \
    --seed 12 --misses 10
echo "== SHA-1 and NT hashes of every variant"
"$BENCH" --nt --base "$SCRATCH/base.lst" --tweaks "$SCRATCH/tweaks.txt" \
    --random12 "$((RANDOM12 / 4))" --adversarial 20000
