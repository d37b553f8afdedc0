# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034
# Shared helpers of the benchmark scripts in tests/bench (sourced,
# not run). Needs bash >= 5 (EPOCHREALTIME).

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
BREACHCTL=$BUILD/client/breachctl/breachctl
GEN=$BUILD/tests/bench/gen_hibp
GNUTIME=/usr/bin/time

# Install a Debian package when the command it provides is missing.
need_pkg() { # COMMAND PACKAGE
    command -v "$1" >/dev/null 2>&1 && return 0
    echo "installing $2 (for $1)" >&2
    local sudo=
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    if ! $sudo apt-get install -y "$2" >/dev/null; then
        $sudo apt-get update >/dev/null
        $sudo apt-get install -y "$2" >/dev/null
    fi
}

# Configure (release) and build what the scripts run, in $BUILD only.
ensure_build() {
    if [ ! -f "$BUILD/build.ninja" ]; then
        meson setup "$BUILD" "$ROOT" --buildtype=release >/dev/null
    fi
    build_targets client/breachctl/breachctl tests/bench/gen_hibp
}

# ninja TARGET...; when the tree does not build right now (someone's edit in
# progress) but the programs exist, say so and go on with them.
build_targets() {
    local t
    if ! ninja -C "$BUILD" "$@" >"${TMPDIR:-/tmp}/breachd-bench-ninja.$$.log" 2>&1; then
        for t in "$@"; do
            [ -x "$BUILD/$t" ] || {
                cat "${TMPDIR:-/tmp}/breachd-bench-ninja.$$.log" >&2
                rm -f "${TMPDIR:-/tmp}/breachd-bench-ninja.$$.log"
                return 1
            }
        done
        echo "warning: build of $* failed; using the existing binaries in $BUILD" >&2
    fi
    rm -f "${TMPDIR:-/tmp}/breachd-bench-ninja.$$.log"
}

# Unless BENCH_NO_BUILD=1: configure $BUILD (release) when it is not, and
# build TARGET....
bench_build() {
    [ "${BENCH_NO_BUILD:-0}" != 1 ] || return 0
    if [ ! -f "$BUILD/build.ninja" ]; then
        meson setup "$BUILD" "$ROOT" --buildtype=release >/dev/null
    fi
    build_targets "$@"
}

# A private scratch directory under $TMPDIR (else /var/tmp), removed on exit.
make_scratch() {
    SCRATCH=$(mktemp -d "${TMPDIR:-/var/tmp}/breachd-bench.XXXXXX")
    trap 'rm -rf "$SCRATCH"' EXIT
    trap 'exit 130' INT TERM
}

# Counts like 1M, 10M, 100M, 2500000.
to_count() {
    case $1 in
    *[kK]) echo $((${1%?} * 1000)) ;;
    *[mM]) echo $((${1%?} * 1000000)) ;;
    *[gG]) echo $((${1%?} * 1000000000)) ;;
    *) echo "$1" ;;
    esac
}

now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; } # seconds

# Fields of a `/usr/bin/time -v -o FILE` report.
tv_wall() { # seconds
    awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, a, ":"); s = 0
        for (i = 1; i <= n; i++) s = s * 60 + a[i]; printf "%.2f", s }' "$1"
}
tv_rss_mib() { awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$1"; }
tv_cpu() { awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { printf "%.2f", u + s }' "$1"; }

# calc EXPR: floating-point arithmetic through awk.
calc() { awk "BEGIN { printf \"%.${2:-1}f\", $1 }"; }

file_size() { stat -c %s "$1"; }

# Best-of-3 wall seconds of "CMD... < INPUT > /dev/null" (exit 0 or 1 accepted,
# as pwqfilter --lookup exits 1 when nothing matched).
best_of_3() { # INPUT CMD...
    local in=$1 best='' t0 t1 s rc
    shift
    for _ in 1 2 3; do
        t0=$(now)
        rc=0
        "$@" <"$in" >/dev/null || rc=$?
        t1=$(now)
        if [ "$rc" -gt 1 ]; then
            echo "failed ($rc): $*" >&2
            return 1
        fi
        s=$(elapsed "$t0" "$t1")
        if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then
            best=$s
        fi
    done
    echo "$best"
}

buildtype() {
    python3 -c 'import json, sys
print(next(o["value"] for o in json.load(open(sys.argv[1])) if o["name"] == "buildtype"))' \
        "$BUILD/meson-info/intro-buildoptions.json" 2>/dev/null || echo unknown
}

machine_line() {
    echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), load $(cut -d' ' -f1-3 /proc/loadavg), build $BUILD ($(buildtype))"
}

# make_scratch, and background processes stopped at exit: add each with
# pids+=("$pid"); at exit each gets SIGTERM and is waited for, then the
# scratch directory is removed. Also raises the open-file limit to 4096.
make_scratch_and_pids() {
    make_scratch
    pids=()
    trap stop_pids EXIT
    [ "$(ulimit -n)" -ge 4096 ] || ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)"
}
stop_pids() {
    local p
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$SCRATCH"
}

# start_breachd CONF LOG SOCKET: breachd in the foreground of a background
# job ($dpid, in pids), once it answers a PING through loadgen ($LOADGEN);
# its log on failure.
start_breachd() {
    "$BREACHD" --config "$1" --foreground 2>"$2" &
    dpid=$!
    pids+=("$dpid")
    for _ in $(seq 600); do
        "$LOADGEN" -s "$3" -c 1 -P 1 -n 1 --no-stats -q >/dev/null 2>&1 && return 0
        kill -0 "$dpid" 2>/dev/null || { cat "$2" >&2; exit 1; }
        sleep 0.1
    done
    echo "breachd did not answer on $3" >&2
    exit 1
}

# rss PID FILE: PID's resident memory in KiB, "TOTAL FILE ANON": all of it,
# the part that maps FILE (a filter), and anonymous + shared memory.
rss() {
    local total filter anon
    total=$(awk '/^Rss:/ { s += $2 } END { print s + 0 }' "/proc/$1/smaps_rollup")
    filter=$(awk -v f="$2" '/^[0-9a-f]+-[0-9a-f]+ / { m = ($NF == f) } m && /^Rss:/ { s += $2 }
        END { print s + 0 }' "/proc/$1/smaps")
    anon=$(awk '/^RssAnon:/ { a = $2 } /^RssShmem:/ { s = $2 } END { print a + s }' "/proc/$1/status")
    echo "$total $filter $anon"
}
