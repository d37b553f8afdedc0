#!/bin/bash
# SPDX-License-Identifier: MIT
# Side-by-side with openwall passwdqc's pwqfilter (Debian package passwdqc) on
# the same keys in the same run: file size, build time and peak RSS, and
# end-to-end lookup rate over the same 1M-hash files.
#
#   breachctl filter build --kind password-sha1 --input - --output F [--fp-bits 32 | --arity 3]
#   pwqfilter --create=CAP --pre-hashed --output=P        (CAP = N * 1.03)
#   breachctl filter query F < QUERIES > /dev/null
#   pwqfilter --lookup --filter=P < QUERIES > /dev/null
#
# Both builds read the same generated stream: gen_hibp hibp N, ascending
# "HASH40:COUNT\r\n" lines like the real HIBP file. pwqfilter --pre-hashed
# decodes the first 32 hex digits of a line (16 bytes; its hash type is then
# "opaque": no --hash-* option applies to SHA-1) and ignores the rest of the
# line, so it takes the HIBP lines and 40-hex query lines as they are.
# Sorted input helps pwqfilter a lot (it picks buckets from the leading hash
# bits, so sorted inserts walk its table in order); the same keys in a
# scattered order (gen_hibp shuffled) are therefore also built for N <= 10M.
#
# Lookups: 1M present keys (drawn at random from the set) and 1M absent keys,
# 40-hex lines in a file in the page cache; wall time best of 3, also net of
# the startup (the same command on empty input: breachctl maps and SHA-256-
# verifies the file, pwqfilter reads it all). In-process numbers for breachd
# come from bench_pwfilter, run at the end on the same sizes (random keys of
# the same distribution).
#
# Usage: tests/bench/bench-vs-pwqfilter.sh [--no-inproc] [N...]  (default 1M 10M 100M)
# Env:   BUILD (default build-bench), TMPDIR (scratch, default /var/tmp).
set -euo pipefail
# shellcheck source=tests/bench/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

inproc=1
if [ "${1:-}" = --no-inproc ]; then
    inproc=0
    shift
fi
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1M 10M 100M)
UNSORTED_MAX=10000000
Q=1000000
need_pkg "$GNUTIME" time
need_pkg pwqfilter passwdqc
ensure_build
build_targets tests/bench/bench_pwfilter
make_scratch

machine_line
echo "# $(pwqfilter --version), breachctl from $BUILD"
echo

# build TOOL VARIANT N OUTPUT: one row of the build table; sets B_WALL B_CPU B_SIZE
build() {
    local tool=$1 variant=$2 n=$3 out=$4 mode=hibp extra=() t0 t1 tv=$SCRATCH/time.txt
    [ "${variant#unsorted}" = "$variant" ] || mode=shuffled
    t0=$(now)
    if [ "$tool" = breachctl ]; then
        case $variant in
        *32-bit*) extra=(--fp-bits 32) ;;
        *3-wise*) extra=(--arity 3) ;;
        esac
        "$GEN" "$mode" "$n" |
            "$GNUTIME" -v -o "$tv" "$BREACHCTL" filter build --kind password-sha1 --input - \
                --output "$out" --tmpdir "$SCRATCH" "${extra[@]}" 2>"$SCRATCH/build.log" || {
            cat "$SCRATCH/build.log" "$tv" >&2
            exit 1
        }
    else
        "$GEN" "$mode" "$n" |
            "$GNUTIME" -v -o "$tv" pwqfilter --create="$(calc "$n * 1.03" 0)" --pre-hashed \
                --output="$out" 2>"$SCRATCH/build.log" || {
            tr '\r' '\n' <"$SCRATCH/build.log" | tail -3 >&2
            cat "$tv" >&2
            exit 1
        }
    fi
    t1=$(now)
    B_WALL=$(elapsed "$t0" "$t1")
    B_CPU=$(tv_cpu "$tv")
    B_SIZE=$(file_size "$out")
    echo "| $n | $tool | $variant | $B_SIZE | $(calc "$B_SIZE * 8 / $n" 2) | $B_WALL | $(calc "$B_WALL * 1e9 / $n") | $B_CPU | $(calc "$B_CPU * 1e9 / $n") | $(tv_rss_mib "$tv") |"
}

declare -A size_b size_p wall_b wall_p cpu_b cpu_p wallu_b wallu_p size_3 wall_3
echo "## Build (same keys, piped from gen_hibp; wall = pipeline, CPU and RSS = the tool alone)"
echo
echo "| keys | tool | variant | file bytes | bits/key | wall s | ns/key | CPU s | CPU ns/key | peak RSS MiB |"
echo "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"
for s in "${sizes[@]}"; do
    n=$(to_count "$s")
    build breachctl "16-bit (default)" "$n" "$SCRATCH/b$n.brf"
    size_b[$n]=$B_SIZE wall_b[$n]=$B_WALL cpu_b[$n]=$B_CPU
    build breachctl "16-bit, 3-wise (the default before 2026-12-01)" "$n" "$SCRATCH/b3.brf"
    size_3[$n]=$B_SIZE wall_3[$n]=$B_WALL
    rm -f "$SCRATCH/b3.brf"
    build breachctl "32-bit" "$n" "$SCRATCH/b32.brf"
    rm -f "$SCRATCH/b32.brf"
    build pwqfilter "default" "$n" "$SCRATCH/p$n.pwq"
    size_p[$n]=$B_SIZE wall_p[$n]=$B_WALL cpu_p[$n]=$B_CPU
    if [ "$n" -le "$UNSORTED_MAX" ]; then
        build breachctl "16-bit, unsorted input" "$n" "$SCRATCH/u.brf"
        wallu_b[$n]=$B_WALL
        build pwqfilter "unsorted input" "$n" "$SCRATCH/u.pwq"
        wallu_p[$n]=$B_WALL
        rm -f "$SCRATCH/u.brf" "$SCRATCH/u.pwq"
    fi
done
echo
echo "Nominal false-positive rates: breachctl 16-bit 2^-16 = 1.5e-5, 32-bit 2^-32 = 2.3e-10;"
echo "pwqfilter (cuckoo filter, at least 33-bit fingerprints in buckets of 4) under 1e-9 (its man page)."
echo

"$GEN" absent "$Q" >"$SCRATCH/absent.txt"
declare -A look_b look_p
echo "## Lookups: $Q queries per file, end to end (best of 3 wall s; ns/op = (wall - startup) / $Q)"
echo
echo "| keys | tool | startup s | present s | absent s | ns/op present | ns/op absent | present found | absent false positives |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|"
for s in "${sizes[@]}"; do
    n=$(to_count "$s")
    "$GEN" present "$Q" "$n" >"$SCRATCH/present.txt"
    for tool in breachctl pwqfilter; do
        if [ $tool = breachctl ]; then
            cmd=("$BREACHCTL" filter query "$SCRATCH/b$n.brf")
            found=$("${cmd[@]}" <"$SCRATCH/present.txt" | grep -c maybe || true)
            fps=$("${cmd[@]}" <"$SCRATCH/absent.txt" | grep -c maybe || true)
        else
            cmd=(pwqfilter --lookup --filter="$SCRATCH/p$n.pwq")
            found=$("${cmd[@]}" -c <"$SCRATCH/present.txt" || true)
            fps=$("${cmd[@]}" -c <"$SCRATCH/absent.txt" || true)
        fi
        t_0=$(best_of_3 /dev/null "${cmd[@]}")
        t_p=$(best_of_3 "$SCRATCH/present.txt" "${cmd[@]}")
        t_a=$(best_of_3 "$SCRATCH/absent.txt" "${cmd[@]}")
        np=$(calc "($t_p - $t_0) * 1e9 / $Q")
        na=$(calc "($t_a - $t_0) * 1e9 / $Q")
        if [ $tool = breachctl ]; then look_b[$n]="$t_p $t_a $np $na"; else look_p[$n]="$t_p $t_a $np $na"; fi
        echo "| $n | $tool | $t_0 | $t_p | $t_a | $np | $na | $found | $fps |"
    done
    rm -f "$SCRATCH/b$n.brf" "$SCRATCH/p$n.pwq"
done
echo

echo "## Ratios pwqfilter / breachctl (16-bit), same run (> 1: breachctl smaller or faster)"
echo
echo "| keys | file size | build wall (sorted) | build CPU (sorted) | build wall (unsorted) | lookup wall present | lookup wall absent | lookup ns/op present (net) | lookup ns/op absent (net) | file size, 3-wise | build wall, 3-wise |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for s in "${sizes[@]}"; do
    n=$(to_count "$s")
    read -r bp ba bnp bna <<<"${look_b[$n]}"
    read -r pp pa pnp pna <<<"${look_p[$n]}"
    unsorted=-
    [ -z "${wallu_b[$n]:-}" ] || unsorted=$(calc "${wallu_p[$n]} / ${wallu_b[$n]}" 2)
    echo "| $n | $(calc "${size_p[$n]} / ${size_b[$n]}" 2) | $(calc "${wall_p[$n]} / ${wall_b[$n]}" 2) | $(calc "${cpu_p[$n]} / (${cpu_b[$n]} > 0 ? ${cpu_b[$n]} : 0.01)" 2) | $unsorted | $(calc "$pp / $bp" 2) | $(calc "$pa / $ba" 2) | $(calc "$pnp / $bnp" 2) | $(calc "$pna / $bna" 2) | $(calc "${size_p[$n]} / ${size_3[$n]}" 2) | $(calc "${wall_p[$n]} / ${wall_3[$n]}" 2) |"
done

if [ $inproc = 1 ]; then
    echo
    echo "## In process (bench_pwfilter; breachd only: pwqfilter has no library lookup of pre-hashed keys)"
    echo
    TMPDIR=$SCRATCH "$BUILD/tests/bench/bench_pwfilter" "${sizes[@]}"
fi
