#!/bin/bash
# SPDX-License-Identifier: MIT
# Banned terms (lib/banned/, docs/banned.md): what the check refuses and
# what it costs, in process (bench_banned.c).
#
# 1. Terms: 100 words of 5..10 letters drawn from wamerican's lowercase
#    words (seed 37), as a banned_terms file; the tweaks an attacker tries
#    first: John the Ripper's wordlist rules (`john --wordlist=TERMS
#    --rules --stdout`, Debian's john 1.9.0, [List.Rules:Wordlist]) over
#    them. The share refused (the aim: at least 95%).
# 2. The users' own names: 100 users, a first and a last name drawn from
#    wamerican's capitalised words (seed 38); for each, john's rules over
#    first, last, firstlast and the initial + last, checked against that
#    user's names alone (--name "First Last", --name flast). The share
#    refused over all users (the aim: at least 95%).
# 3. Strong passwords: PASSPHRASES random 4-word passphrases (wamerican's
#    lowercase words, joined with a space, then with '-') and RANDOM12
#    random 12-character passwords (printable ASCII), checked against the
#    100 terms with one user's names, and against 1,000 terms. The share
#    refused (the aim: at most 0.1%).
# 4. Cost per check, p50 and p99 (wall time around each check): the
#    tweaks of 1. against 1,000 and 10,000 terms drawn from wamerican
#    (the aim: at most 1 ms p99 at 1,000 terms).
#
#   tests/bench/bench-banned.sh [PASSPHRASES [RANDOM12]]   (default 100000 100000)
#
# Needs john and wamerican (installed when missing); about a minute on a
# quiet 2-core machine. BUILD (build-bench), BENCH_NO_BUILD=1 (use the
# binary as it is).
set -euo pipefail
# shellcheck source=tests/bench/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

PASSPHRASES=$(to_count "${1:-100000}")
RANDOM12=$(to_count "${2:-100000}")
need_pkg john john
[ -r /usr/share/dict/words ] || need_pkg /usr/share/dict/words wamerican
bench_build tests/bench/bench_banned
BENCH=$BUILD/tests/bench/bench_banned
make_scratch
cd "$SCRATCH"

python3 - "$PASSPHRASES" "$RANDOM12" <<'EOF'
import random, re, string, sys
words = [w.strip() for w in open("/usr/share/dict/words")]
lower = sorted({w for w in words if re.fullmatch(r"[a-z]{4,12}", w)})
rng = random.Random(37)
open("terms100.txt", "w").write("\n".join(rng.sample(sorted(
    w for w in lower if 5 <= len(w) <= 10), 100)) + "\n")
rng = random.Random(41)
for n in (1000, 10000):
    open("terms%d.txt" % n, "w").write("\n".join(rng.sample(lower, n)) + "\n")
names = sorted({w for w in words if re.fullmatch(r"[A-Z][a-z]{3,8}", w)})
rng = random.Random(38)
with open("users.txt", "w") as f:
    for _ in range(100):
        f.write("%s %s\n" % (rng.choice(names), rng.choice(names)))
rng = random.Random(39)
with open("passphrases.txt", "w") as f:
    for i in range(int(sys.argv[1])):
        f.write((" " if i % 2 else "-").join(rng.choice(lower) for _ in range(4)) + "\n")
alphabet = string.ascii_letters + string.digits + string.punctuation
with open("random12.txt", "w") as f:
    for _ in range(int(sys.argv[2])):
        f.write("".join(rng.choice(alphabet) for _ in range(12)) + "\n")
EOF
: >empty.txt

echo "== $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
john --wordlist=terms100.txt --rules --stdout 2>/dev/null >tweaks.txt
echo "== 1. 100 terms, john --rules: $(wc -l <tweaks.txt) tweaks"
"$BENCH" --terms terms100.txt --time <tweaks.txt

echo "== 2. 100 users' own names, john --rules over each user's names"
total=0 refused=0
while read -r first last; do
    f=${first,,} l=${last,,}
    printf '%s\n' "$f" "$l" "$f$l" "${f:0:1}$l" >names.txt
    john --wordlist=names.txt --rules --stdout 2>/dev/null >user-tweaks.txt
    read -r _ n _ r _ < <("$BENCH" --terms empty.txt --name "$first $last" \
        --name "${f:0:1}$l" <user-tweaks.txt)
    total=$((total + n))
    refused=$((refused + r))
done <users.txt
awk -v t="$total" -v r="$refused" \
    'BEGIN { printf "candidates %d refused %d (%.3f%%)\n", t, r, 100 * r / t }'

echo "== 3. strong passwords, against the 100 terms and one user's names"
read -r first last <users.txt
for set in passphrases random12; do
    echo "-- $set"
    "$BENCH" --terms terms100.txt --name "$first $last" --show 5 <"$set.txt"
    echo "-- $set, against 1,000 terms"
    "$BENCH" --terms terms1000.txt --show 5 <"$set.txt"
done

echo "== 4. cost per check (the tweaks of 1.)"
for n in 1000 10000; do
    "$BENCH" --terms "terms$n.txt" --time <tweaks.txt
done
