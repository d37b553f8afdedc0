#!/bin/bash
# SPDX-License-Identifier: MIT
# breachctl download: prefixes per second against a local
# nginx mirror of the whole 1,048,576-prefix space with small generated files,
# side by side in the same run with `curl --parallel --parallel-max 150`
# fetching the same URLs into files.
#
# 1. A mirror of PREFIXES (default all 1,048,576) files XXXXX.txt of 1 to 3
#    HIBP-style lines (uppercase, CRLF, no final CRLF; ~80 bytes) under a
#    scratch directory in $TMPDIR (default /var/tmp): ~4 GB of 4 KiB blocks.
#    Every file is then read once and everything synced, so that neither
#    tool pays for the first read (page cache, relatime atime updates).
# 2. nginx on 127.0.0.1 (NGINX_WORKERS workers, default 1; access log off,
#    keepalive_requests 10M, gzip on as in the tests; TLS=1: HTTPS + HTTP/2).
#    Both clients ask for compressed bodies.
# 3. Six runs, each into a fresh directory, in the order b1 c1 B1 B2 c2 b2 so
#    that neither tool always goes first. FRESH_FS=1 (the default as root):
#    each output directory, and the mirror, is a new ext4 filesystem on a
#    sparse image in the scratch directory (loop device with direct I/O),
#    unmounted and deleted after its run. Without it, a run that follows the
#    deletion of many files (an earlier run's cleanup) pays ext4 for skipping
#    recently deleted inodes on every file it creates: 2-3x the system time of
#    a run on a quiet filesystem, for either tool. Runs:
#      b: breachctl download --out DIR --upstream URL/{prefix}   (--parallel 64, its default)
#      B: the same with --parallel 150, curl's number of transfers in flight
#      c: curl -s --compressed --parallel --parallel-max 150 -K CONFIG
#    (CONFIG: one `url` and one `output` line per prefix). Before each run
#    `sync`; after a curl run, a timed `sync` too: breachctl's files are
#    durable when it exits (syncfs per batch), curl's are only in the page
#    cache, so "curl+sync" is the like-for-like figure.
# 4. Each run is checked: all files there, 2,000 random ones byte-for-byte
#    equal to the mirror; breachctl must exit 0.
# 5. Report: wall, prefixes/s, user/sys CPU and peak RSS of the client, CPU of
#    the nginx workers, and the ratios of the means of the two runs of each
#    (breachctl / curl), for both breachctl settings.
#    Then the best run of each tool, and client CPU per 1M prefixes.
#    The scratch directory is removed at the end (with FRESH_FS=0, deleting
#    ~5M files takes several minutes).
#
# Usage: tests/bench/bench-download.sh
# Env:   BUILD (default build-bench), PREFIXES (1048576), PARALLEL (the "B"
#        runs' --parallel, default 150), CURL_PARALLEL (150), NGINX_WORKERS (1),
#        TLS (0), TMPDIR (/var/tmp), BENCH_NO_BUILD=1 (use the binaries as they
#        are: `meson test --benchmark`), FRESH_FS (1 as root with losetup and
#        mkfs.ext4, else 0). Needs ~22 GB free (FRESH_FS=0: and ~5.3M inodes;
#        FRESH_FS=1: ~10 GB, one run's output at a time).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$ROOT/tests/bench/bench-common.sh"

PREFIXES=${PREFIXES:-1048576}
CURL_PARALLEL=${CURL_PARALLEL:-150}
NGINX_WORKERS=${NGINX_WORKERS:-1}
TLS=${TLS:-0}
PARALLEL=${PARALLEL:-150}
if [ -z "${FRESH_FS:-}" ]; then
    FRESH_FS=0
    [ "$(id -u)" = 0 ] && command -v losetup >/dev/null && command -v mkfs.ext4 >/dev/null && FRESH_FS=1
fi

need_pkg nginx nginx-light
need_pkg curl curl
need_pkg "$GNUTIME" time
if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    if [ ! -f "$BUILD/build.ninja" ]; then
        meson setup "$BUILD" "$ROOT" --buildtype=release >/dev/null
    fi
    build_targets client/breachctl/breachctl
fi
[ -x "$BREACHCTL" ] || { echo "bench-download: $BREACHCTL is missing: build $BUILD first" >&2; exit 1; }

SCRATCH=$(mktemp -d "${TMPDIR:-/var/tmp}/breachd-bench-dl.XXXXXX")
chmod 755 "$SCRATCH" # nginx workers run as an unprivileged user
NGINX_PID=
MOUNTS=()
cleanup() {
    [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null
    local m
    for m in "${MOUNTS[@]}"; do umount_fs "$m"; done
    [ "$FRESH_FS" = 1 ] || echo "removing $SCRATCH (several minutes for ~5M files)" >&2
    rm -rf "$SCRATCH"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

machine_line
echo "# $PREFIXES prefixes, nginx $NGINX_WORKERS worker(s), TLS=$TLS, curl --parallel-max $CURL_PARALLEL, breachctl --parallel 64 (b) and $PARALLEL (B), FRESH_FS=$FRESH_FS"

# fresh_fs DIR: make DIR a new, empty ext4 filesystem (FRESH_FS=1) or a new
# directory. Its image is sparse: 1.25M inodes, 4 KiB per small file.
fresh_fs() {
    mkdir -p "$1"
    [ "$FRESH_FS" = 1 ] || return 0
    truncate -s 12G "$1.img"
    mkfs.ext4 -q -F -N $((PREFIXES + PREFIXES / 4 + 1024)) -E lazy_itable_init=0,lazy_journal_init=0 "$1.img"
    local dev
    dev=$(losetup --find --show --direct-io=on "$1.img")
    mount "$dev" "$1"
    MOUNTS+=("$1")
}
umount_fs() { # DIR: unmount, detach and delete what fresh_fs made
    local dev
    dev=$(findmnt -n -o SOURCE "$1" 2>/dev/null) || return 0
    umount "$1" && losetup -d "$dev" 2>/dev/null
    rm -f "$1.img"
}

# ---- 1. the mirror -----------------------------------------------------------
fresh_fs "$SCRATCH/www"
mkdir -p "$SCRATCH/www/range" "$SCRATCH/tmp" "$SCRATCH/logs"
chmod 755 "$SCRATCH/www"
t0=$(now)
python3 - "$SCRATCH/www/range" "$PREFIXES" <<'EOF'
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
for p in range(n):
    lines = sorted('%035X:%d' % (rng.getrandbits(140), 1 + rng.getrandbits(10))
                   for _ in range(1 + p % 3))
    fd = os.open('%s/%05X.txt' % (d, p), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, '\r\n'.join(lines).encode())
    os.close(fd)
EOF
find "$SCRATCH/www/range" -name '*.txt' -print0 | xargs -0 cat >/dev/null
sync
echo "# mirror generated and read once in $(elapsed "$t0" "$(now)") s"

# ---- 2. nginx ----------------------------------------------------------------
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
if [ "$TLS" = 1 ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -days 2 \
        -keyout "$SCRATCH/key.pem" -out "$SCRATCH/cert.pem" 2>/dev/null
    LISTEN="listen 127.0.0.1:$PORT ssl http2; ssl_certificate $SCRATCH/cert.pem;
        ssl_certificate_key $SCRATCH/key.pem; http2_max_requests 100000000;
        http2_max_concurrent_streams 256;"
    BASE=https://127.0.0.1:$PORT/range
    CA_B=(--ca-file "$SCRATCH/cert.pem")
    CA_C=(--cacert "$SCRATCH/cert.pem")
else
    LISTEN="listen 127.0.0.1:$PORT;"
    BASE=http://127.0.0.1:$PORT/range
    CA_B=()
    CA_C=()
fi
cat >"$SCRATCH/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes $NGINX_WORKERS;
pid $SCRATCH/nginx.pid;
error_log $SCRATCH/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $SCRATCH/tmp;
    proxy_temp_path $SCRATCH/tmp;
    fastcgi_temp_path $SCRATCH/tmp;
    uwsgi_temp_path $SCRATCH/tmp;
    scgi_temp_path $SCRATCH/tmp;
    default_type text/plain;
    keepalive_requests 10000000;
    keepalive_timeout 60s;
    etag on;
    gzip on;
    gzip_types text/plain;
    gzip_min_length 64;
    server {
        $LISTEN
        root $SCRATCH/www;
        location /range/ { try_files \$uri.txt =404; }
    }
}
EOF
/usr/sbin/nginx -p "$SCRATCH" -e "$SCRATCH/logs/error.log" -c "$SCRATCH/nginx.conf" &
NGINX_PID=$!
for _ in $(seq 100); do
    curl -s -o /dev/null "${CA_C[@]}" "$BASE/00000" && break
    sleep 0.05
done

nginx_cpu() { # seconds of CPU used by the workers so far
    local t=0 w
    for w in $(pgrep -P "$NGINX_PID"); do
        t=$(awk -v t="$t" '{ printf "%.2f", t + ($14 + $15) / 100 }' "/proc/$w/stat")
    done
    echo "$t"
}

check_dir() { # DIR: all files there, 2000 random ones equal to the mirror
    local n
    n=$(find "$1" -maxdepth 1 -name '?????.txt' | wc -l)
    [ "$n" -eq "$PREFIXES" ] || { echo "$1: $n files, want $PREFIXES" >&2; return 1; }
    python3 - "$SCRATCH/www/range" "$1" "$PREFIXES" <<'EOF'
import random, sys
m, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for p in random.sample(range(n), min(2000, n)):
    a = open('%s/%05X.txt' % (m, p), 'rb').read()
    b = open('%s/%05X.txt' % (d, p), 'rb').read()
    if a != b:
        sys.exit('%s/%05X.txt differs from the mirror' % (d, p))
EOF
}

# ---- 3. the runs -------------------------------------------------------------
python3 - "$BASE" "$SCRATCH" "$PREFIXES" <<'EOF'
import sys
base, s, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for run in ('c1', 'c2'):
    with open('%s/curl-%s.cfg' % (s, run), 'w') as f:
        for p in range(n):
            f.write('url = "%s/%05X"\noutput = "%s/out-%s/%05X.txt"\n' % (base, p, s, run, p))
EOF
LAST=$(printf '%05X' $((PREFIXES - 1)))
RESULTS=()

run_one() { # b1|b2|B1|B2|c1|c2
    local run=$1 out=$SCRATCH/out-$1 t0 t1 n0 n1 s0 s1 sync_s=- rc=0 par=()
    [ "${run:0:1}" = B ] && par=(--parallel "$PARALLEL")
    fresh_fs "$out"
    sync
    sleep 2
    n0=$(nginx_cpu)
    t0=$(now)
    if [ "${run:0:1}" != c ]; then
        "$GNUTIME" -f '%U %S %M' -o "$SCRATCH/time-$run" "$BREACHCTL" download --out "$out" \
            --upstream "$BASE/{prefix}" --range "00000-$LAST" "${par[@]}" \
            "${CA_B[@]}" >"$SCRATCH/log-$run" 2>&1 || rc=$?
    else
        mkdir -p "$out"
        "$GNUTIME" -f '%U %S %M' -o "$SCRATCH/time-$run" curl -s --no-progress-meter --compressed \
            "${CA_C[@]}" --parallel --parallel-max "$CURL_PARALLEL" -K "$SCRATCH/curl-$run.cfg" \
            >"$SCRATCH/log-$run" 2>&1 || rc=$?
    fi
    t1=$(now)
    n1=$(nginx_cpu)
    if [ "${run:0:1}" = c ]; then
        s0=$(now)
        sync
        s1=$(now)
        sync_s=$(elapsed "$s0" "$s1")
    fi
    if [ "$rc" -ne 0 ]; then
        echo "run $run failed ($rc):" >&2
        cat "$SCRATCH/log-$run" >&2
        exit 1
    fi
    check_dir "$out"
    [ "$FRESH_FS" = 1 ] && umount_fs "$out"
    local wall user sys rss
    wall=$(elapsed "$t0" "$t1")
    read -r user sys rss <"$SCRATCH/time-$run"
    RESULTS+=("$run $wall $sync_s $user $sys $((rss / 1024)) $(calc "$n1 - $n0" 2)")
    echo "  $run: $wall s$([ "$sync_s" != - ] && echo " + sync $sync_s s")" >&2
}

for r in b1 c1 B1 B2 c2 b2; do
    run_one "$r"
done

# ---- 4. report ---------------------------------------------------------------
echo
echo "| run | client | wall s | prefixes/s | + sync s | prefixes/s incl. sync | user s | sys s | peak RSS MiB | nginx CPU s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for line in "${RESULTS[@]}"; do
    read -r run wall sync_s user sys rss ncpu <<<"$line"
    client="breachctl (64)"
    [ "${run:0:1}" = B ] && client="breachctl ($PARALLEL)"
    [ "${run:0:1}" = c ] && client="curl ($CURL_PARALLEL)"
    rate=$(calc "$PREFIXES / $wall" 0)
    if [ "$sync_s" = - ]; then
        srate=$rate
        sync_s="0 (synced)"
    else
        srate=$(calc "$PREFIXES / ($wall + $sync_s)" 0)
    fi
    echo "| $run | $client | $wall | $rate | $sync_s | $srate | $user | $sys | $rss | $ncpu |"
done
mean2() { calc "($1 + $2) / 2" 3; } # seconds: the mean of a tool's two runs
field() { local r; for r in "${RESULTS[@]}"; do [ "${r%% *}" = "$1" ] && echo "$r" | cut -d' ' -f"$2"; done; }
b=$(mean2 "$(field b1 2)" "$(field b2 2)")
B=$(mean2 "$(field B1 2)" "$(field B2 2)")
c=$(mean2 "$(field c1 2)" "$(field c2 2)")
cs=$(mean2 "$(calc "$(field c1 2) + $(field c1 3)" 3)" "$(calc "$(field c2 2) + $(field c2 3)" 3)")
echo
echo "breachctl $(calc "$PREFIXES / $b" 0) prefixes/s (--parallel 64), $(calc "$PREFIXES / $B" 0) (--parallel $PARALLEL);" \
    "curl $(calc "$PREFIXES / $c" 0) prefixes/s ($(calc "$PREFIXES / $cs" 0) with its final sync)"
echo "ratio breachctl / curl: $(calc "$c / $b" 2)x at --parallel 64, $(calc "$c / $B" 2)x at --parallel $PARALLEL" \
    "(target >= 1.5x); against curl+sync: $(calc "$cs / $b" 2)x and $(calc "$cs / $B" 2)x"
# One slowed run (other load on the machine, ext4 scanning recently deleted
# inodes) moves a mean a lot: also the best run of each, and CPU per prefix.
min2() { calc "($1 < $2) ? $1 : $2" 3; }
cpu() { calc "$(field "$1" 4) + $(field "$1" 5)" 2; }
bb=$(min2 "$(field b1 2)" "$(field b2 2)")
BB=$(min2 "$(field B1 2)" "$(field B2 2)")
cb=$(min2 "$(field c1 2)" "$(field c2 2)")
echo "best runs: breachctl $(calc "$PREFIXES / $bb" 0) and $(calc "$PREFIXES / $BB" 0) prefixes/s, curl $(calc "$PREFIXES / $cb" 0):" \
    "ratio $(calc "$cb / $bb" 2)x and $(calc "$cb / $BB" 2)x"
cb_cpu=$(min2 "$(cpu c1)" "$(cpu c2)")
echo "client CPU (user+sys, best run) per 1M prefixes: breachctl $(calc "1048576 * $(min2 "$(cpu b1)" "$(cpu b2)") / $PREFIXES" 1) s," \
    "$(calc "1048576 * $(min2 "$(cpu B1)" "$(cpu B2)") / $PREFIXES" 1) s; curl $(calc "1048576 * $cb_cpu / $PREFIXES" 1) s"
