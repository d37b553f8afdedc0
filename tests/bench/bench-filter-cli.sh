#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end filter build through the CLI, as an operator runs it: synthetic
# HIBP-format input ("HASH40:COUNT\r\n", ascending like the real corpus) is
# generated on the fly into a pipe (nothing big on disk) and read by
#   breachctl filter build --kind password-sha1 --input - --output FILE
# under GNU time (/usr/bin/time -v): wall time, CPU time, peak RSS. Then
# `breachctl filter verify` (open = SHA-256 of the whole file + every check).
#
# A second table shows how the peak RSS grows with --threads (each build
# thread holds one shard's working memory): the largest N with
# --threads 1 2 4 8 (RSS_THREADS), and 16777216 keys (the most the keyset holds in
# memory before it spills, the worst case for RSS) with 1, 2 and 4 threads.
# Extra threads on a 2-core machine still hold their shard at once, so the
# RSS is what a machine with that many cores would see.
#
# Usage: tests/bench/bench-filter-cli.sh [N...]     (default: 1M 10M 100M)
# Env:   BUILD (default build-bench, configured --buildtype=release if absent),
#        TMPDIR (scratch and keyset spill space, default /var/tmp),
#        RSS_THREADS (default "1 2 4 8"; empty: skip the second table).
# Query speed is not measured here (a CLI query per stdin line is I/O-bound):
# see bench_pwfilter for in-process ns/op, bench-vs-pwqfilter.sh for
# end-to-end lookups.
set -euo pipefail
# shellcheck source=tests/bench/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1M 10M 100M)
need_pkg "$GNUTIME" time
ensure_build
make_scratch

machine_line
echo "# input: gen_hibp hibp N (sorted HASH40:COUNT CRLF lines) | breachctl filter build --input - (default threads, 16-bit, 3-wise)"
echo "# wall = the pipeline (bash EPOCHREALTIME); wall(time -v), CPU (user+sys) and peak RSS from GNU time of breachctl alone"
echo
echo "| keys | input MiB | gen alone s | wall s | wall (time -v) s | ns/key | CPU s | CPU ns/key | peak RSS MiB | spilled MiB | file bytes | bits/key (file) | verify s |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for s in "${sizes[@]}"; do
    n=$(to_count "$s")
    out=$SCRATCH/filter.brf
    tv=$SCRATCH/time.txt
    # How long the generator alone takes, and how much it writes.
    t0=$(now)
    bytes=$("$GEN" hibp "$n" | wc -c)
    t1=$(now)
    gen_s=$(elapsed "$t0" "$t1")

    t0=$(now)
    "$GEN" hibp "$n" |
        "$GNUTIME" -v -o "$tv" "$BREACHCTL" filter build --kind password-sha1 --input - \
            --output "$out" --tmpdir "$SCRATCH" --source "bench $s" 2>"$SCRATCH/build.log" || {
        cat "$SCRATCH/build.log" "$tv" >&2
        exit 1
    }
    t1=$(now)
    wall=$(elapsed "$t0" "$t1")
    size=$(file_size "$out")
    # keys past the in-memory budget (16M) go to spill files: 8 bytes each
    spilled=$(calc "($n > 16777216 ? $n * 8 : 0) / 1048576" 0)

    t0=$(now)
    "$BREACHCTL" filter verify "$out" >/dev/null
    t1=$(now)
    verify_s=$(elapsed "$t0" "$t1")

    echo "| $n | $(calc "$bytes / 1048576" 0) | $gen_s | $wall | $(tv_wall "$tv") | $(calc "$wall * 1e9 / $n") | $(tv_cpu "$tv") | $(calc "$(tv_cpu "$tv") * 1e9 / $n") | $(tv_rss_mib "$tv") | $spilled | $size | $(calc "$size * 8 / $n" 3) | $verify_s |"
    rm -f "$out"
done

# build_rss N THREADS: one row of the RSS-vs-threads table.
build_rss() {
    local n=$1 t=$2 t0 t1 tv=$SCRATCH/time.txt
    t0=$(now)
    "$GEN" hibp "$n" |
        "$GNUTIME" -v -o "$tv" "$BREACHCTL" filter build --kind password-sha1 --input - \
            --output "$SCRATCH/filter.brf" --tmpdir "$SCRATCH" --threads "$t" 2>/dev/null
    t1=$(now)
    echo "| $n | $t | $(elapsed "$t0" "$t1") | $(tv_cpu "$tv") | $(tv_rss_mib "$tv") |"
    rm -f "$SCRATCH/filter.brf"
}
RSS_THREADS=${RSS_THREADS-1 2 4 8}
if [ -n "$RSS_THREADS" ]; then
    echo
    echo "# peak RSS against --threads (one shard's working memory per thread)"
    echo
    echo "| keys | --threads | wall s | CPU s | peak RSS MiB |"
    echo "|---:|---:|---:|---:|---:|"
    last=$(to_count "${sizes[-1]}")
    for t in $RSS_THREADS; do build_rss "$last" "$t"; done
    for t in 1 2 4; do build_rss 16777216 "$t"; done
fi
echo
echo "# ns/key = pipeline wall / N, including HIBP-line parsing; CPU ns/key = breachctl user+sys / N (build threads: min(CPUs, shards))."
