#!/bin/bash
# SPDX-License-Identifier: MIT
# Delta size for a 1% growth, offline filters next to range filters of the
# same keys, in the same run (docs/fleet.md, "Filters: a base and a
# cumulative delta"; docs/filter-format.md, "Sets"):
#
#   password-sha1, for each N: base = gen_hibp hibp N (seed 1); delta =
#     the same N keys plus N/100 new ones (gen_hibp hibp N/100, seed 2)
#     built with --base base; once as range filters (16-bit, the default),
#     once with --offline.
#   url-sha256, for U expressions: base = U hosts in two feeds (90%
#     malware, 10% phishing); delta = the same feeds plus U/100 new hosts
#     (half malware, half a new category), with --base; once as Bloom
#     (range) filters at the default --fpr, once with --offline.
#
# Prints one table row per build: keys in the delta, bytes, and delta
# bytes / base bytes.
#
# Usage: tests/bench/bench-delta.sh [N...]   (default 1M 10M; about 2 minutes
#        on 2 cores; URL_KEYS=U, default 1M, 0 to skip the URL rows)
# Env:   BUILD (default build-bench), TMPDIR (scratch, default /var/tmp),
#        BENCH_NO_BUILD=1 (use the binaries as they are).
set -euo pipefail
# shellcheck source=tests/bench/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1M 10M)
url_keys=$(to_count "${URL_KEYS:-1M}")
need_pkg "$GNUTIME" time
[ "${BENCH_NO_BUILD:-0}" = 1 ] || ensure_build
for p in "$BREACHCTL" "$GEN"; do
    [ -x "$p" ] || { echo "bench-delta: $p is missing: build $BUILD first" >&2; exit 1; }
done
make_scratch
s=$SCRATCH

keys_of() { "$BREACHCTL" filter info "$1" | awk '/^keys:/ { print $2 }'; }

row() { # KIND MODE N BASE DELTA DELTA_TIME
    local bb db dk
    bb=$(file_size "$4")
    db=$(file_size "$5")
    dk=$(keys_of "$5")
    echo "| $1 | $2 | $3 | $bb | $dk | $db | $(calc "100 * $db / $bb" 2)% | $(calc "8 * $db / ($dk > 0 ? $dk : 1)" 2) | $(tv_wall "$6") |"
}

machine_line
echo
echo "| kind | filter | base keys | base bytes | delta keys | delta bytes | delta / base | delta bits/key | delta build wall s |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for size in "${sizes[@]}"; do
    n=$(to_count "$size")
    g=$((n / 100))
    for mode in range offline; do
        off=()
        [ "$mode" = offline ] && off=(--offline)
        "$GEN" hibp "$n" 1 | "$BREACHCTL" filter build --kind password-sha1 --input - \
            --output "$s/pw-$mode.base" --tmpdir "$s" "${off[@]}" 2>/dev/null
        { "$GEN" hibp "$n" 1; "$GEN" hibp "$g" 2; } |
            "$GNUTIME" -v -o "$s/pw.time" "$BREACHCTL" filter build --kind password-sha1 \
                --input - --base "$s/pw-$mode.base" --output "$s/pw-$mode.delta" --tmpdir "$s" \
                "${off[@]}" 2>/dev/null
        row password-sha1 "$mode" "$n" "$s/pw-$mode.base" "$s/pw-$mode.delta" "$s/pw.time"
        rm -f "$s/pw-$mode.base" "$s/pw-$mode.delta"
    done
done

if [ "$url_keys" -gt 0 ]; then
    u=$url_keys
    g=$((u / 100))
    awk -v n="$u" 'BEGIN { for (i = 0; i < n * 0.9; i++) printf "h%d.bench.example\n", i }' >"$s/malware.txt"
    awk -v n="$u" 'BEGIN { for (i = int(n * 0.9); i < n; i++) printf "http://h%d.bench.example/login\n", i }' >"$s/phishing.txt"
    awk -v n="$u" -v g="$g" 'BEGIN { for (i = 0; i < g / 2; i++) printf "new%d.bench.example\n", i }' >"$s/malware-new.txt"
    awk -v n="$u" -v g="$g" 'BEGIN { for (i = int(g / 2); i < g; i++) printf "new%d.bench.example\n", i }' >"$s/ads.txt"
    base_in=(--input "$s/malware.txt=malware" --input "$s/phishing.txt=phishing")
    grown_in=("${base_in[@]}" --input "$s/malware-new.txt=malware" --input "$s/ads.txt=ads")
    for mode in range offline; do
        off=()
        [ "$mode" = offline ] && off=(--offline)
        "$BREACHCTL" filter build --kind url-sha256 "${base_in[@]}" --output "$s/url-$mode.base" \
            "${off[@]}" 2>/dev/null
        "$GNUTIME" -v -o "$s/url.time" "$BREACHCTL" filter build --kind url-sha256 \
            "${grown_in[@]}" --base "$s/url-$mode.base" --output "$s/url-$mode.delta" \
            "${off[@]}" 2>/dev/null
        row url-sha256 "$mode" "$u" "$s/url-$mode.base" "$s/url-$mode.delta" "$s/url.time"
    done
fi
