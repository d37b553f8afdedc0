#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The systemd units: `systemd-analyze security --offline=yes` must rate
# breachd.service and breachd-update.service 2.0 or lower; the units must
# pass `systemd-analyze verify`; the update timer is daily with a random
# delay; sysusers.d + tmpfiles.d, applied to a scratch root, must give the
# breachd user and the directories with the owners and modes that
# breachd.service's *DirectoryMode= settings give them.
# Usage: systemd-security.sh BUILT_breachd.service SOURCE_systemd_DIR
#        [BUILT_breachd-update.service]
# Exit 77 (skip) only when systemd-analyze is not installed.
set -euo pipefail
service=$(realpath "$1")
srcdir=$(realpath "$2")
update=$(realpath "${3:-$(dirname "$service")/breachd-update.service}")
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "SKIP: systemd-analyze not found (Debian package systemd)"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/breachd-units.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

# --- 1. the sandbox score (threshold is on the 0..100 scale: 20 = 2.0)
for unit in "$service" "$update"; do
  name=$(basename "$unit")
  rc=0
  systemd-analyze security --offline=yes --threshold=20 --no-pager "$unit" >"$tmp/security" 2>&1 || rc=$?
  score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$tmp/security")
  if [ -z "$score" ]; then
    cat "$tmp/security" >&2
    bad "$name: no exposure level in the output of systemd-analyze security"
  else
    echo "systemd-analyze security: $name exposure $score (limit 2.0)"
    if [ "$rc" -ne 0 ] || ! awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
      grep -E '^✗' "$tmp/security" >&2 || true
      bad "$name: exposure $score is over 2.0 (exit status $rc)"
    fi
  fi
done

# --- 2. the units load cleanly (ExecStart= pointed at an existing program,
# since breachd is not installed here)
mkdir "$tmp/units"
sed 's|^ExecStart=[^ ]*|ExecStart=/bin/true|' "$service" >"$tmp/units/breachd.service"
cp "$srcdir/breachd.socket" "$srcdir/breachd-update.timer" "$tmp/units/"
sed 's|^ExecStart=[^ ]*|ExecStart=/bin/true|' "$update" >"$tmp/units/breachd-update.service"
if ! systemd-analyze verify --man=no "$tmp/units/breachd.service" "$tmp/units/breachd.socket" \
    "$tmp/units/breachd-update.service" "$tmp/units/breachd-update.timer" >"$tmp/verify" 2>&1; then
  cat "$tmp/verify" >&2
  bad "systemd-analyze verify"
fi
# The update: breachctl filter fetch over the config, daily, spread out, no
# capability but writing the filter directory.
grep -q '^ExecStart=/.*/breachctl filter fetch --config /.*/breachd/breachd.conf$' "$update" ||
  bad "breachd-update.service: ExecStart is not '<bindir>/breachctl filter fetch --config ...'"
grep -q '^Type=oneshot$' "$update" || bad "breachd-update.service: not Type=oneshot"
grep -q '^CapabilityBoundingSet=$' "$update" || bad "breachd-update.service: capabilities"
# The filters' directory is root's (tmpfiles.d), never the service's.
grep -q '^StateDirectory=' "$service" && bad "breachd.service: StateDirectory= would give /var/lib/breachd to breachd"
grep -q '^NoNewPrivileges=yes$' "$update" || bad "breachd-update.service: NoNewPrivileges"
grep -q '^ReadWritePaths=-/var/lib/breachd$' "$update" || bad "breachd-update.service: ReadWritePaths"
grep -q '^OnCalendar=daily$' "$srcdir/breachd-update.timer" || bad "breachd-update.timer: not daily"
grep -q '^RandomizedDelaySec=[1-9]' "$srcdir/breachd-update.timer" ||
  bad "breachd-update.timer: no RandomizedDelaySec (a fleet would fetch all at once)"
grep -q '^Persistent=true$' "$srcdir/breachd-update.timer" || bad "breachd-update.timer: not Persistent"
grep -q '^ExecStart=/.*/breachd --foreground$' "$service" || bad "ExecStart is not '<sbindir>/breachd --foreground'"
grep -q '^ListenStream=/run/breachd/breachd.sock$' "$srcdir/breachd.socket" || bad "socket path"
grep -q '^SocketMode=0660$' "$srcdir/breachd.socket" || bad "SocketMode"
# No core files (docs/privacy.md).
grep -q '^LimitCORE=0$' "$service" || bad "LimitCORE=0 is not set (core files would hold hashes)"
grep -q '^SocketGroup=breachd$' "$srcdir/breachd.socket" || bad "SocketGroup"

# --- 3. sysusers + tmpfiles on a scratch root (needs root for the chown)
if [ "$(id -u)" -eq 0 ] && command -v systemd-sysusers >/dev/null && command -v systemd-tmpfiles >/dev/null; then
  root=$tmp/root
  mkdir -p "$root/etc"
  # Debian's base-passwd groups the units name besides breachd's own (adm
  # owns /var/log/breachd), as every Debian host has them.
  grep '^adm:' /etc/group >"$root/etc/group" || echo 'adm:x:4:' >"$root/etc/group"
  systemd-sysusers --root="$root" "$srcdir/sysusers.d/breachd.conf" >"$tmp/sysusers" 2>&1 ||
    { cat "$tmp/sysusers" >&2; bad "systemd-sysusers failed"; }
  uid=$(awk -F: '$1 == "breachd" { print $3 }' "$root/etc/passwd" 2>/dev/null || true)
  gid=$(awk -F: '$1 == "breachd" { print $3 }' "$root/etc/group" 2>/dev/null || true)
  [ -n "$uid" ] && [ -n "$gid" ] || bad "sysusers made no breachd user and group"
  systemd-tmpfiles --root="$root" --create "$srcdir/tmpfiles.d/breachd.conf" >"$tmp/tmpfiles" 2>&1 ||
    { cat "$tmp/tmpfiles" >&2; bad "systemd-tmpfiles failed"; }
  # directory, the service setting that must agree with it
  got=$(stat -c '%a %u %g' "$root/var/lib/breachd" 2>/dev/null || echo missing)
  [ "$got" = "755 0 0" ] || bad "/var/lib/breachd: got '$got', want mode 755 owner root:root"
  adm=$(awk -F: '$1 == "adm" { print $3 }' "$root/etc/group")
  got=$(stat -c '%a %u %g' "$root/var/log/breachd" 2>/dev/null || echo missing)
  [ "$got" = "750 $uid $adm" ] || bad "/var/log/breachd: got '$got', want mode 750 owner breachd:adm"
  for pair in /var/cache/breachd:CacheDirectoryMode /run/breachd:RuntimeDirectoryMode; do
    dir=${pair%%:*}
    key=${pair#*:}
    want_mode=$(sed -n "s/^$key=0*//p" "$service")
    got=$(stat -c '%a %u %g' "$root$dir" 2>/dev/null || echo missing)
    [ "$got" = "$want_mode $uid $gid" ] ||
      bad "$dir: got '$got', want mode $want_mode owner $uid:$gid (as $key= in breachd.service)"
  done
else
  echo "note: not root: sysusers/tmpfiles check left out"
fi

[ "$fail" -eq 0 ] && echo "systemd units: OK"
exit "$fail"
