#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian packages in a throwaway root, with dpkg and their real
# maintainer scripts (run by debian-package.sh):
#   install: the breachd user (systemd-sysusers), the directories
#     (systemd-tmpfiles), the units enabled, /etc/breachd/breachd.conf valid
#     as shipped, the PAM profile registered but not in the stack;
#   use: an admin's filter, file:// mirrors and config; the packaged daemon
#     answers breachctl and the Squid helper; `pam-auth-update --enable
#     breachd` puts pam_breachd into common-password, and passwd's stack
#     (pamtester, run as passwd runs) refuses a breached password, also when
#     it is typed after pam_pwquality asked again, and accepts a clean one;
#   reinstall: the admin's config and the enabled profile stay;
#   without systemd: /etc/init.d/breachd makes /run/breachd, starts the
#     daemon as breachd, reports its status, reloads and stops it;
#     `pam-auth-update --enable breachd-login` puts the login check into
#     common-auth and common-account, --disable takes it out;
#   remove: pam_breachd leaves the stacks before the module goes;
#   purge: the cache and the config go, the filters in /var/lib/breachd stay.
#
# usage (as root, in a private mount and PID namespace: unshare --mount
# --pid --fork): install-checks.sh WORKDIR DEBDIR
# WORKDIR gets a tmpfs holding an overlay of / (the throwaway root); the
# script then runs itself chrooted there with --inside. Nothing is written
# to the host: every change lands in the tmpfs and goes with the namespace.
set -euo pipefail

if [ "${1:-}" != --inside ]; then
  work=$1 debs=$2
  mkdir -p "$work"
  mount -t tmpfs -o mode=0755 tmpfs "$work"
  mkdir "$work/upper" "$work/work" "$work/root"
  r=$work/root
  mount -t overlay overlay -o "lowerdir=/,upperdir=$work/upper,workdir=$work/work" "$r"
  mount -t proc proc "$r/proc"
  mount --rbind /dev "$r/dev"
  # An empty /run: no /run/systemd/system, so the maintainer scripts do not
  # talk to a systemd (they would reach the host's); a fresh /tmp.
  mount -t tmpfs -o mode=0755 tmpfs "$r/run"
  mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
  mkdir "$r/tmp/pkgtest"
  cp "$debs"/*.deb "$r/tmp/pkgtest/"
  cp "$0" "$r/tmp/pkgtest/install-checks.sh"
  exec chroot "$r" /bin/bash /tmp/pkgtest/install-checks.sh --inside
fi

# ---- inside the throwaway root ----------------------------------------------
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
cd /tmp/pkgtest
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { printf '== %s\n' "$*"; }
deb() { echo /tmp/pkgtest/${1}_*.deb; }
quiet() { "$@" >/tmp/pkgtest/cmd.log 2>&1 || { cat /tmp/pkgtest/cmd.log >&2; fail "$*"; }; }
daemon=
stop_daemon() {
  if [ -n "$daemon" ]; then
    kill "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
    daemon=
  fi
}
trap stop_daemon EXIT
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
stack=/etc/pam.d/common-password
# Whatever a script tries, no service starts in here.
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
chmod 0755 /usr/sbin/policy-rc.d

step "a system without breachd"
quiet dpkg --purge breachd libpam-breachd breachd-squid-helper
for u in pkgtest breachd; do userdel -r "$u" >/dev/null 2>&1 || true; done
groupdel breachd >/dev/null 2>&1 || true
rm -rf /etc/breachd /var/lib/breachd /var/cache/breachd
! getent passwd breachd >/dev/null || fail "cannot remove the breachd user from the throwaway root"
! grep -q pam_breachd "$stack" || fail "$stack already names pam_breachd"
cp "$stack" /tmp/pkgtest/stack.before
useradd -m pkgtest
echo 'pkgtest:Old-pass-4821' | chpasswd
hash_of() { getent shadow pkgtest | cut -d: -f2; }

step "dpkg -i breachd libpam-breachd breachd-squid-helper"
quiet dpkg -i "$(deb breachd)" "$(deb libpam-breachd)" "$(deb breachd-squid-helper)"
for p in breachd libpam-breachd breachd-squid-helper; do
  [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p")" = "ii " ] || fail "$p is not installed"
done
quiet dpkg --verify breachd libpam-breachd breachd-squid-helper

step "the breachd user and its directories (systemd-sysusers, systemd-tmpfiles)"
IFS=: read -r _ _ uid _ _ home shell < <(getent passwd breachd) || fail "no breachd user"
[ "$uid" -lt 1000 ] || fail "breachd is not a system user (uid $uid)"
[ "$home" = /var/lib/breachd ] && [ "$shell" = /usr/sbin/nologin ] || fail "breachd: home $home, shell $shell"
getent group breachd >/dev/null || fail "no breachd group"
expect_dir() { # PATH MODE OWNER:GROUP
  [ "$(stat -c '%a %U:%G' "$1" 2>/dev/null)" = "$2 $3" ] ||
    fail "$1: $(stat -c '%a %U:%G' "$1" 2>&1), expected $2 $3"
}
expect_dir /var/lib/breachd 755 root:root
expect_dir /var/cache/breachd 700 breachd:breachd
expect_dir /run/breachd 755 breachd:breachd
expect_dir /var/log/breachd 750 breachd:adm
expect_dir /etc/breachd 755 root:root
expect_dir /etc/breachd/breachd.conf 644 root:root

step "the units are enabled (breachd.socket, breachd.service)"
[ "$(readlink /etc/systemd/system/sockets.target.wants/breachd.socket)" = /lib/systemd/system/breachd.socket ] ||
  fail "breachd.socket is not enabled"
[ "$(readlink /etc/systemd/system/multi-user.target.wants/breachd.service)" = /lib/systemd/system/breachd.service ] ||
  fail "breachd.service is not enabled"

step "the PAM profile is registered and off"
grep -qx breachd /var/lib/pam/seen || fail "pam-auth-update has not seen the breachd profile"
grep -qx breachd-login /var/lib/pam/seen || fail "pam-auth-update has not seen the breachd-login profile"
for f in common-auth common-account; do
  ! grep -q pam_breachd "/etc/pam.d/$f" || fail "installing libpam-breachd put pam_breachd in $f"
done
cmp -s /tmp/pkgtest/stack.before "$stack" || fail "installing libpam-breachd changed $stack"

step "the installed programs run; the shipped config is valid"
quiet breachd --version
quiet breachctl --help
quiet /usr/libexec/breachd-squid-helper --help
[ "$(breachd --check-config 2>&1 | head -n 1)" = "/etc/breachd/breachd.conf: OK" ] || fail "breachd --check-config: $(breachd --check-config 2>&1 | head -n 3)"

step "an admin's setup: filters, file:// mirrors, /etc/breachd/breachd.conf edited"
bad='Tr0ub4dor&3horse'  # in the test corpus; long and varied enough for pam_pwquality
# A fresh clean password each run, one that pam_pwquality's dictionary
# check (cracklib) accepts, with the "Other-" one changed to below: random
# hex now and then runs into its "too simplistic/systematic" rule.
for _ in $(seq 50); do
  good="Clean-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
  command -v cracklib-check >/dev/null || break
  printf '%s\nOther-%s\n' "$good" "$good" | cracklib-check | grep -vq ': OK$' || break
done
h=$(printf %s "$bad" | sha1sum | awk '{ print toupper($1) }')
mkdir /var/lib/breachd/mirror /var/lib/breachd/url-mirror
printf '%s:4242\n' "$h" >/tmp/pkgtest/corpus.txt
printf '%s:4242\r\n' "${h:5}" >"/var/lib/breachd/mirror/${h:0:5}.txt"
quiet breachctl filter build --kind password-sha1 --output /var/lib/breachd/passwords.bfuse \
  --input /tmp/pkgtest/corpus.txt
printf 'http://phish.example.test/login\n' >/tmp/pkgtest/feed.txt
quiet breachctl filter build --kind url-sha256 --output /var/lib/breachd/urls.bbf \
  --ranges-dir /var/lib/breachd/url-mirror --input /tmp/pkgtest/feed.txt=phishing
sed -i -e '/^\[passwords\]/,/^\[/{s|^filter =$|filter = /var/lib/breachd/passwords.bfuse|;s|^upstream = .*|upstream = file:///var/lib/breachd/mirror/{prefix}.txt|}' \
  -e '/^\[urls\]/,/^\[/{s|^filter =$|filter = /var/lib/breachd/urls.bbf|;s|^upstream =.*|upstream = file:///var/lib/breachd/url-mirror/{prefix}.txt|}' \
  /etc/breachd/breachd.conf
[ "$(grep -c '^filter = /var/lib/breachd/' /etc/breachd/breachd.conf)" = 2 ] || fail "editing the config"
quiet breachd --check-config

step "the packaged daemon, as the breachd user, answers breachctl and the Squid helper"
runuser -u breachd -- breachd --foreground >/tmp/pkgtest/breachd.log 2>&1 &
daemon=$!
for _ in $(seq 100); do [ -S /run/breachd/breachd.sock ] && break; sleep 0.1; done
[ -S /run/breachd/breachd.sock ] || { cat /tmp/pkgtest/breachd.log >&2; fail "breachd made no socket"; }
[ "$(breachctl ping)" = PONG ] || fail "breachctl ping"
rc=0; out=$(printf '%s\n' "$bad" | breachctl password) || rc=$?
[ "$rc" = 1 ] && [ "$out" = "PWNED 4242" ] || fail "breached password: exit $rc, $out"
rc=0; out=$(printf '%s\n' "$good" | breachctl password) || rc=$?
[ "$rc" = 0 ] && [ "$out" = CLEAN ] || fail "clean password: exit $rc, $out"
[ -n "$(ls -A /var/cache/breachd)" ] || fail "nothing in the range cache /var/cache/breachd"
out=$(printf '7 http://phish.example.test/login\n8 http://fine.example.test/\n' |
  timeout 20 /usr/libexec/breachd-squid-helper | sort)
printf '%s\n' "$out" | grep -q '^7 OK' || fail "the Squid helper does not match a listed URL: $out"
printf '%s\n' "$out" | grep -q '^8 ERR' || fail "the Squid helper matches an unlisted URL: $out"

step "pam-auth-update --enable breachd: the password stack"
quiet pam-auth-update --enable breachd
line_of() { grep -n "^password.*$1" "$stack" | head -n 1 | cut -d: -f1; }
b=$(line_of pam_breachd.so) u=$(line_of pam_unix.so) q=$(line_of pam_pwquality.so)
[ -n "$b" ] || fail "pam_breachd is not in $stack"
[ -n "$u" ] && [ "$b" -lt "$u" ] || fail "pam_breachd is not before pam_unix in $stack"
if [ -n "$q" ]; then
  [ "$q" -lt "$b" ] || fail "pam_breachd is before pam_pwquality (which would ask again unchecked)"
fi
grep -q '^password.*pam_breachd.so retry=3' "$stack" || fail "pam_breachd without retry=3"
! grep -q '^password.*pam_breachd.so.*use_authtok' "$stack" ||
  fail "pam_breachd with use_authtok (a refusal would end the change, no new prompt)"

grep '^password' "$stack"

# passwd(1) runs the stack with the user's real uid and effective uid 0
# (set-user-ID root): pamtester is run the same way here.
passwd_as_pkgtest() { # ANSWER... (one per prompt)
  printf '%s\n' "$@" | python3 -c 'import os, sys
os.setresuid(int(sys.argv[1]), 0, 0)
os.execvp("pamtester", ["pamtester", "passwd", "pkgtest", "chauthtok"])' "$(id -u pkgtest)" 2>&1
}
if command -v pamtester >/dev/null; then
  step "passwd's stack (pamtester): breached refused, clean accepted"
  before=$(hash_of)
  rc=0; out=$(passwd_as_pkgtest Old-pass-4821 "$bad" "$bad") || rc=$?
  [ "$rc" != 0 ] && grep -q 'data breaches' <<<"$out" || fail "a breached password was not refused: $out"
  [ "$(hash_of)" = "$before" ] || fail "a breached password was stored"
  if [ -n "$q" ]; then
    # pam_pwquality refuses the short one and asks again itself: the
    # password typed then must still go through pam_breachd.
    rc=0; out=$(passwd_as_pkgtest Old-pass-4821 'Xy1!' 'Xy1!' "$bad" "$bad") || rc=$?
    [ "$rc" != 0 ] && grep -q 'data breaches' <<<"$out" ||
      fail "a breached password typed after pam_pwquality asked again was not refused: $out"
    [ "$(hash_of)" = "$before" ] || fail "a breached password was stored after pam_pwquality asked again"
  fi
  # A breached password, then a clean one, in one session (pam_pwquality,
  # when present, asks first: new, retype; then pam_breachd asks again).
  rc=0; out=$(passwd_as_pkgtest Old-pass-4821 "$bad" "$bad" "$good" "$good") || rc=$?
  [ "$rc" = 0 ] || fail "a breached, then a clean password in one session: $out"
  grep -q 'data breaches' <<<"$out" || fail "the breached password's reason was not shown: $out"
  [ "$(hash_of)" != "$before" ] || fail "the clean password was not stored"
  old=$good
else
  echo "(pamtester is not installed: the stack is not run)"
fi

step "reinstall: the admin's config and the enabled profile stay"
cp /etc/breachd/breachd.conf /tmp/pkgtest/conf.admin
quiet dpkg -i "$(deb breachd)" "$(deb libpam-breachd)"
cmp -s /tmp/pkgtest/conf.admin /etc/breachd/breachd.conf || fail "the reinstall changed /etc/breachd/breachd.conf"
grep -q '^password.*pam_breachd.so' "$stack" || fail "the reinstall took pam_breachd out of $stack"
stop_daemon

step "without systemd: /etc/init.d/breachd start, status, reload, stop; log_file and logrotate"
rm -rf /run/breachd /var/log/breachd # a boot: /run is empty; no log directory yet
chown breachd:breachd /var/lib/breachd # as an older init script left it
sed -i 's|^log_file =$|log_file = /var/log/breachd/breachd.log|' /etc/breachd/breachd.conf
quiet /etc/init.d/breachd start
expect_dir /run/breachd 755 breachd:breachd
expect_dir /var/lib/breachd 755 root:root
expect_dir /var/log/breachd 750 breachd:adm
grep -q 'breachd\[[0-9]*\]: info: ' /var/log/breachd/breachd.log || fail "nothing in log_file /var/log/breachd/breachd.log"
pid=$(cat /run/breachd/breachd.pid) || fail "no pid file"
[ "$(stat -c %U "/proc/$pid")" = breachd ] || fail "breachd runs as $(stat -c %U "/proc/$pid")"
[ "$(breachctl ping)" = PONG ] || fail "breachctl ping (init script)"
quiet /etc/init.d/breachd status
quiet /etc/init.d/breachd start # already running: fine, no second daemon
[ "$(cat /run/breachd/breachd.pid)" = "$pid" ] || fail "a second start replaced the daemon"
quiet /etc/init.d/breachd reload
for _ in $(seq 100); do
  [ "$(breachctl stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["reloads"])')" = 1 ] && break
  sleep 0.1
done
[ "$(breachctl stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["reloads"])')" = 1 ] ||
  fail "/etc/init.d/breachd reload did not reload"
if command -v logrotate >/dev/null; then
  # policy-rc.d stops the postrotate's invoke-rc.d in here: reload by hand
  logrotate --force --state /tmp/pkgtest/logrotate.state /etc/logrotate.d/breachd ||
    fail "logrotate /etc/logrotate.d/breachd"
  [ -s /var/log/breachd/breachd.log.1 ] || fail "logrotate did not rotate /var/log/breachd/breachd.log"
  quiet /etc/init.d/breachd reload
  for _ in $(seq 100); do [ -s /var/log/breachd/breachd.log ] && break; sleep 0.1; done
  [ -s /var/log/breachd/breachd.log ] || fail "no new log_file after logrotate and a reload"
  [ "$(stat -c '%a %U:%G' /var/log/breachd/breachd.log)" = "640 breachd:adm" ] ||
    fail "the rotated log_file: $(stat -c '%a %U:%G' /var/log/breachd/breachd.log)"
fi
sed -i 's|^log_file = .*|log_file =|' /etc/breachd/breachd.conf
quiet /etc/init.d/breachd stop
! kill -0 "$pid" 2>/dev/null || fail "breachd still runs after /etc/init.d/breachd stop"
[ ! -e /run/breachd/breachd.pid ] || fail "the pid file is left behind"
rc=0; /etc/init.d/breachd status >/dev/null 2>&1 || rc=$?
[ "$rc" = 3 ] || fail "status of a stopped daemon: exit $rc, want 3"

step "pam-auth-update --enable breachd-login: the login check in common-auth and common-account"
quiet pam-auth-update --enable breachd-login
grep -q '^auth.*pam_breachd.so' /etc/pam.d/common-auth || fail "pam_breachd is not in common-auth"
grep -q '^account.*required.*pam_breachd.so' /etc/pam.d/common-account || fail "pam_breachd is not in common-account"
quiet pam-auth-update --disable breachd-login
for f in common-auth common-account; do
  ! grep -q pam_breachd "/etc/pam.d/$f" || fail "--disable breachd-login left pam_breachd in $f"
done
quiet pam-auth-update --enable breachd-login

step "remove libpam-breachd: the module leaves the stack"
quiet dpkg -r libpam-breachd
for f in "$stack" /etc/pam.d/common-auth /etc/pam.d/common-account; do
  ! grep -q pam_breachd "$f" || fail "pam_breachd is still in $f"
done
[ ! -e "/lib/$multiarch/security/pam_breachd.so" ] || fail "pam_breachd.so is still there"
if command -v pamtester >/dev/null; then
  rc=0; out=$(passwd_as_pkgtest "$old" "Other-$good" "Other-$good") || rc=$?
  [ "$rc" = 0 ] || fail "password changes fail after libpam-breachd was removed: $out"
fi

step "remove breachd-squid-helper"
quiet dpkg -r breachd-squid-helper
[ ! -e /usr/libexec/breachd-squid-helper ] || fail "the helper is still there"

step "remove breachd: config, cache and filters stay"
quiet dpkg -r breachd
[ ! -e /usr/sbin/breachd ] || fail "/usr/sbin/breachd is still there"
[ -f /etc/breachd/breachd.conf ] || fail "remove took the config"
[ -n "$(ls -A /var/cache/breachd)" ] || fail "remove emptied the cache"
[ "$(dpkg-query -W -f='${db:Status-Abbrev}' breachd)" = "rc " ] || fail "breachd is not in state rc"

step "purge breachd: the cache and the config go, the filters stay"
dpkg --purge breachd >/tmp/pkgtest/purge.log 2>&1 || { cat /tmp/pkgtest/purge.log >&2; fail "dpkg --purge breachd"; }
[ ! -e /var/cache/breachd ] || fail "purge left /var/cache/breachd"
[ ! -e /etc/breachd/breachd.conf ] || fail "purge left /etc/breachd/breachd.conf"
[ -f /var/lib/breachd/passwords.bfuse ] && [ -f /var/lib/breachd/urls.bbf ] &&
  [ -f "/var/lib/breachd/mirror/${h:0:5}.txt" ] || fail "purge removed the admin's filters or mirror"
grep -q 'kept /var/lib/breachd' /tmp/pkgtest/purge.log || fail "purge does not say it kept /var/lib/breachd"
[ ! -e /etc/systemd/system/sockets.target.wants/breachd.socket ] &&
  [ ! -e /etc/systemd/system/multi-user.target.wants/breachd.service ] || fail "purge left the unit symlinks"
[ -z "$(dpkg-query -W -f='${db:Status-Abbrev}' breachd 2>/dev/null)" ] ||
  [ "$(dpkg-query -W -f='${db:Status-Abbrev}' breachd)" = "pn " ] || fail "breachd is still known to dpkg"
echo "install checks passed"
