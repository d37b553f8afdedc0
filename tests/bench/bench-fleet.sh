#!/bin/bash
# SPDX-License-Identifier: MIT
# Fleet updates (docs/fleet.md): the size of a delta for a 1% growth of an
# N-key password base, and the time one host takes to fetch and activate it.
#
#   1. base: gen_hibp hibp N (seed 1) | breachctl filter build --input -
#   2. delta: the same N keys plus N/100 new ones (gen_hibp hibp N/100, seed
#      2) | breachctl filter build --input - --base base
#   3. a host with breachd running on base + an (almost) empty delta; nginx
#      on 127.0.0.1 publishes base and the new delta, signed; the timed
#      command is what breachd-update.service runs, `breachctl filter fetch
#      --config` (conditional GETs, download, verification of the delta and
#      of the set, install, RELOAD, which verifies the set again in
#      breachd); then the same run with nothing new (two 304s per file).
#
# Usage: tests/bench/bench-fleet.sh [N]     (default 100M; about 3 minutes at
#        100M on 2 cores, ~2 GB of scratch for the builds' spill and files)
# Env:   BUILD (default build-bench), TMPDIR (scratch, default /var/tmp),
#        BENCH_NO_BUILD=1 (use the binaries as they are: `meson test --benchmark`).
set -euo pipefail
# shellcheck source=tests/bench/bench-common.sh
. "$(dirname "$0")/bench-common.sh"

n=$(to_count "${1:-100M}")
growth=$((n / 100))
need_pkg "$GNUTIME" time
[ -x /usr/sbin/nginx ] || need_pkg /usr/sbin/nginx nginx-light
if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    ensure_build
    build_targets daemon/breachd
fi
BREACHD=$BUILD/daemon/breachd
for p in "$BREACHD" "$BREACHCTL" "$GEN"; do
    [ -x "$p" ] || { echo "bench-fleet: $p is missing: build $BUILD first" >&2; exit 1; }
done
make_scratch
trap 'kill "$nginx_pid" "$breachd_pid" 2>/dev/null || true; rm -rf "$SCRATCH"' EXIT

pub=$SCRATCH/www/filters
host=$SCRATCH/host
mkdir -p "$pub" "$host/lib" "$SCRATCH/nginx/tmp" "$SCRATCH/build"
b=$SCRATCH/build

timed() { # LABEL CMD... : GNU time of CMD into $SCRATCH/LABEL.time
    "$GNUTIME" -v -o "$SCRATCH/$1.time" "${@:2}"
}

machine_line
echo "# N = $n keys, growth = $growth keys (1%), 16-bit 3-wise (the defaults)"
"$BREACHCTL" key generate --secret "$b/pub.key" --public "$b/pub.pub" >/dev/null

"$GEN" hibp "$n" 1 | timed base "$BREACHCTL" filter build --kind password-sha1 --input - \
    --output "$b/passwords.bfuse" --tmpdir "$SCRATCH" --generation 1 2>"$b/base.log"
{ "$GEN" hibp "$n" 1; "$GEN" hibp "$growth" 2; } |
    timed delta "$BREACHCTL" filter build --kind password-sha1 --input - \
        --base "$b/passwords.bfuse" --output "$b/delta.bfuse" --tmpdir "$SCRATCH" \
        --generation 3 2>"$b/delta.log"
"$GEN" hibp 1 3 | "$BREACHCTL" filter build --kind password-sha1 --input - \
    --base "$b/passwords.bfuse" --output "$b/delta0.bfuse" --generation 2 2>/dev/null
for f in passwords.bfuse delta.bfuse delta0.bfuse; do
    "$BREACHCTL" filter sign --key "$b/pub.key" "$b/$f" >/dev/null
done
base_bytes=$(file_size "$b/passwords.bfuse")
delta_bytes=$(file_size "$b/delta.bfuse")
delta_keys=$("$BREACHCTL" filter info "$b/delta.bfuse" | awk '/^keys:/ { print $2 }')

echo
echo "| file | keys | bytes | bits/key | build wall s | build CPU s | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|---:|---:|"
echo "| base | $n | $base_bytes | $(calc "8 * $base_bytes / $n" 2) | $(tv_wall "$SCRATCH/base.time") | $(tv_cpu "$SCRATCH/base.time") | $(tv_rss_mib "$SCRATCH/base.time") |"
echo "| delta (1% growth) | $delta_keys | $delta_bytes | $(calc "8 * $delta_bytes / $delta_keys" 2) | $(tv_wall "$SCRATCH/delta.time") | $(tv_cpu "$SCRATCH/delta.time") | $(tv_rss_mib "$SCRATCH/delta.time") |"
echo
echo "delta / base: $(calc "100 * $delta_bytes / $base_bytes" 2)% of the bytes; $((n + growth - delta_keys)) of the $((n + growth)) input keys were already a maybe of the base (the base's $n and its false positives)"

# The publisher and the host.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$SCRATCH/nginx/nginx.conf" <<EOF
daemon off; master_process off; worker_processes 1;
pid $SCRATCH/nginx/nginx.pid; error_log $SCRATCH/nginx/error.log warn;
events { worker_connections 64; }
http {
    access_log $SCRATCH/nginx/access.log;
    client_body_temp_path $SCRATCH/nginx/tmp/body; proxy_temp_path $SCRATCH/nginx/tmp/proxy;
    fastcgi_temp_path $SCRATCH/nginx/tmp/fastcgi; uwsgi_temp_path $SCRATCH/nginx/tmp/uwsgi;
    scgi_temp_path $SCRATCH/nginx/tmp/scgi;
    server { listen 127.0.0.1:$port; location /filters/ { alias $pub/; } }
}
EOF
/usr/sbin/nginx -p "$SCRATCH/nginx" -e "$SCRATCH/nginx/error.log" -c "$SCRATCH/nginx/nginx.conf" &
nginx_pid=$!
publish() { # SRC NAME
    cp "$1" "$pub/.$2.tmp" && mv "$pub/.$2.tmp" "$pub/$2"
    cp "$1.sig" "$pub/.$2.sig.tmp" && mv "$pub/.$2.sig.tmp" "$pub/$2.sig"
    touch -d "@$(($(date +%s) + ${3:-0}))" "$pub/$2" "$pub/$2.sig"
}
publish "$b/passwords.bfuse" passwords.bfuse
publish "$b/delta0.bfuse" passwords-delta.bfuse
cat >"$host/breachd.conf" <<EOF
[daemon]
socket = $host/breachd.sock
admin_users = $(id -u)
[passwords]
filter = $host/lib/passwords.bfuse, $host/lib/passwords-delta.bfuse
filter_url = http://127.0.0.1:$port/filters/passwords.bfuse, http://127.0.0.1:$port/filters/passwords-delta.bfuse
pubkey = $b/pub.pub
upstream =
[cache]
path = $host/cache
EOF
for _ in $(seq 50); do curl -fsI "http://127.0.0.1:$port/filters/passwords.bfuse" >/dev/null && break; sleep 0.1; done
t0=$(now)
"$BREACHCTL" filter fetch --config "$host/breachd.conf" >/dev/null 2>&1
first=$(elapsed "$t0" "$(now)")
"$BREACHD" --config "$host/breachd.conf" --foreground >"$SCRATCH/breachd.log" 2>&1 &
breachd_pid=$!
for _ in $(seq 300); do "$BREACHCTL" --socket "$host/breachd.sock" ping >/dev/null 2>&1 && break; sleep 0.1; done

# The month's delta: fetch and activate, timed as the timer runs it.
publish "$b/delta.bfuse" passwords-delta.bfuse 2
t0=$(now)
"$BREACHCTL" filter fetch --config "$host/breachd.conf" >"$SCRATCH/fetch.out" 2>&1
update=$(elapsed "$t0" "$(now)")
grep -q 'passwords-delta.bfuse: updated' "$SCRATCH/fetch.out" || { cat "$SCRATCH/fetch.out" >&2; exit 1; }
gen=$("$BREACHCTL" --socket "$host/breachd.sock" stats | tr ' ' '\n' | sed -n 's/^filter_generation=//p')
[ "$gen" = 3 ] || { echo "breachd serves generation $gen, not 3" >&2; exit 1; }
t0=$(now)
"$BREACHCTL" --socket "$host/breachd.sock" reload >/dev/null
reload=$(elapsed "$t0" "$(now)")
t0=$(now)
"$BREACHCTL" filter fetch --config "$host/breachd.conf" >"$SCRATCH/fetch2.out" 2>&1
nothing=$(elapsed "$t0" "$(now)")
grep -q '^unchanged$' "$SCRATCH/fetch2.out" || { cat "$SCRATCH/fetch2.out" >&2; exit 1; }

echo
echo "| host step | s |"
echo "|---|---:|"
echo "| first fetch of base + delta (no daemon) | $first |"
echo "| fetch and activate the 1% delta (filter fetch --config, RELOAD included) | $update |"
echo "| of which a RELOAD alone (breachd verifies base + delta) | $reload |"
echo "| daily run, nothing new (304s) | $nothing |"
