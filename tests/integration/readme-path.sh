#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's commands, in order, on a fresh copy of the tree: scripts/demo
# (its NTLM audit and its short STATS summary checked), build/ configured as scripts/test leaves it (for /usr/local), the install
# (the README's own line, meson setup build-install --prefix=/usr, ninja,
# install into a DESTDIR: it must land in /usr all the same), the README's
# trial with the demo's data (its sed line on a copy of the example
# configuration), then breachd started as the breachd user without systemd
# (a relative --config, --pidfile, the socket's directory made by the
# daemon), and ping, stats, a password check and a reload (RELOAD and
# SIGHUP) through the installed breachctl. The breachd user is removed at
# the end when this test created it.
#
# usage: readme-path.sh SOURCE_ROOT
# Exit 0 passed, 1 failed, 77 skipped (not root: the breachd user and
# runuser need it). Builds the project twice (demo and install): minutes.
set -euo pipefail
src=$(cd "$1" && pwd)

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: not root (the breachd user, runuser)"
  exit 77
fi
for t in git runuser systemd-sysusers; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is missing"; exit 77; }
done

# A short path: the demo's socket must fit a Unix socket address.
tmp=$(mktemp -d /tmp/bd-readme.XXXXXX)
pid=
had_user=no
getent passwd breachd >/dev/null && had_user=yes
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  # The breachd system user is the host's; it goes only if this test made it.
  if [ "$had_user" = no ] && getent passwd breachd >/dev/null; then
    if userdel breachd 2>/dev/null; then
      echo "readme-path: removed the breachd user it created"
    else
      echo "readme-path: could not remove the breachd user it created (userdel breachd)" >&2
    fi
    if getent group breachd >/dev/null; then groupdel breachd 2>/dev/null || true; fi
  elif [ "$had_user" = yes ]; then
    echo "readme-path: the breachd user was there before this test: kept"
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
chmod 0755 "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { printf '== %s\n' "$*"; }

step "a fresh copy of the tree (tracked and new files, no build directories)"
tree=$tmp/src
mkdir "$tree"
(cd "$src" && git ls-files -z --cached --others --exclude-standard | \
  xargs -0 tar -cf - --no-recursion) | tar -xf - -C "$tree"

step "scripts/demo"
(cd "$tree" && scripts/demo) >"$tmp/demo.log" 2>&1 || { tail -n 40 "$tmp/demo.log"; fail "scripts/demo"; }
[ -f "$tree/build-demo/demo/passwords.bfuse" ] || fail "the demo made no filter"
[ -f "$tree/build-demo/demo/ntlm.bfuse" ] || fail "the demo made no NTLM filter"
# its audit: NT hashes from breachctl password --print-hash --ntlm, checked
for want in "alice PWNED " "bob PWNED " "Guest EMPTY" "shared: carol, dave" \
  "summary: accounts=6 pwned=2 clean=3 unknown=0 empty=1 errors=0 machines_skipped=1"; do
  grep -qF "  $want" "$tmp/demo.log" || fail "the demo's audit printed no '$want'"
done
# its STATS: a few explained counters, not the wall of all of them
n=$(sed -n '/STATS: what explains/,/==> stopping/p' "$tmp/demo.log" | wc -l)
[ "$n" -le 14 ] || fail "the demo's STATS part is $n lines"
grep -q 'counters in all' "$tmp/demo.log" || fail "the demo does not say how to see every counter"
# one screen after the build: the commands' own output is in demo.log
n=$(sed -n '/making the demo data/,$p' "$tmp/demo.log" | wc -l)
[ "$n" -le 50 ] || fail "the demo prints $n lines after the build, more than a screen"
grep -q '^ninja: \|^\[[0-9]*/[0-9]*\] ' "$tmp/demo.log" && fail "the demo shows ninja's lines"
[ -s "$tree/build-demo/meson-logs/build-output.log" ] || fail "no build log where the demo says"
[ ! -e "$tree/build" ] || fail "the demo configured build/, which the install needs"

step "build/ configured as scripts/test leaves it (meson's default prefix, /usr/local)"
(cd "$tree" && meson setup build >/dev/null) || fail "meson setup build"

step "the README's install line, into a DESTDIR"
line=$(grep -x 'meson setup build-install --prefix=/usr && ninja -C build-install && sudo ninja -C build-install install' \
  "$tree/README.md") || fail "the README's install line changed: update this test"
root=$tmp/root
# (its sudo dropped: this runs as root; DESTDIR for the install's root)
(cd "$tree" && export DESTDIR=$root && eval "${line//sudo /}" >/dev/null) || fail "the README's install commands"
[ -z "$(find "$root" -path '*/usr/local/*' -print -quit)" ] ||
  fail "installed under /usr/local: $(find "$root" -path '*/usr/local/*' -print -quit)"
multiarch=$(cc -print-multiarch 2>/dev/null || gcc -print-multiarch)
pam=$root/usr/lib/$multiarch/security/pam_breachd.so
[ -f "$pam" ] || fail "pam_breachd.so is not in Debian's PAM module directory: $(find "$root" -name pam_breachd.so)"
for f in usr/sbin/breachd usr/bin/breachctl usr/libexec/breachd-squid-helper \
  usr/libexec/breachd/check-password usr/share/doc/breachd/breachd.conf.example \
  usr/share/doc/breachd/corpus.md usr/share/man/man8/breachd.8; do
  [ -e "$root/$f" ] || fail "not installed: /$f"
done
if grep -l '@[A-Z_][A-Z_]*@' "$root"/usr/share/man/man*/* >/dev/null; then
  fail "an installed man page keeps a placeholder"
fi
grep -q '/etc/breachd/breachd.conf' "$root/usr/share/man/man8/breachd.8" ||
  fail "breachd(8) does not name /etc/breachd/breachd.conf"

step "the breachd user (systemd-sysusers, as the README says)"
systemd-sysusers "$root/usr/lib/sysusers.d/breachd.conf" >/dev/null
id breachd >/dev/null || fail "no breachd user after systemd-sysusers"

step "breachd as the breachd user, without systemd"
demo=$tree/build-demo/demo
etc=$tmp/etc
mkdir -p "$etc"
install -d -o breachd -g breachd -m 0700 "$tmp/cache"
install -d -o breachd -g breachd -m 0755 "$tmp/run"
sock=$tmp/run/breachd/breachd.sock # its directory does not exist yet
# The README's trial: the demo's filter and mirror copied to
# /var/lib/breachd/demo (here under $tmp) and its sed line on the example.
lib=$tmp/var/lib/breachd/demo
install -d "$lib"
cp -r "$demo/passwords.bfuse" "$demo/mirror" "$lib/"
trial=$(grep -F "sudo sed -i '/^\\[passwords\\]/" "$tree/README.md") || fail "no trial sed line in the README"
trial=${trial#sudo }
trial=${trial//\/var\/lib\/breachd\/demo/$lib}
trial=${trial//\/etc\/breachd\/breachd.conf/$etc/breachd.conf}
cp "$root/usr/share/doc/breachd/breachd.conf.example" "$etc/breachd.conf"
eval "$trial" || fail "the README's trial sed line"
grep -qx "filter = $lib/passwords.bfuse" "$etc/breachd.conf" || fail "the trial line set no filter"
grep -qx "upstream = file://$lib/mirror/{prefix}.txt" "$etc/breachd.conf" || fail "the trial line set no upstream"
sed -i -e "s|^socket = .*|socket = $sock|" -e 's|^socket_mode = .*|socket_mode = 0666|' \
  -e "/^\[cache\]/,/^\[/s|^path = .*|path = $tmp/cache|" "$etc/breachd.conf"
chmod -R a+rX "$tmp/var" "$etc"
ctl() { "$root/usr/bin/breachctl" --socket "$sock" "$@"; }
(cd "$etc" && runuser -u breachd -- "$root/usr/sbin/breachd" --config breachd.conf \
  --pidfile "$tmp/run/breachd.pid") || fail "breachd did not start"
pid=$(cat "$tmp/run/breachd.pid") || fail "no pid file"
[ "$(stat -c %U "/proc/$pid")" = breachd ] || fail "breachd runs as $(stat -c %U "/proc/$pid")"
[ "$(stat -c '%a %U' "$tmp/run/breachd")" = "755 breachd" ] ||
  fail "socket directory: $(stat -c '%a %U' "$tmp/run/breachd")"

step "ping, stats, a password check, a reload"
[ "$(ctl ping)" = PONG ] || fail "ping"
ctl stats | grep -q 'requests' || fail "stats"
set +e
out=$(printf 'password\n' | ctl password)
rc=$?
set -e
[ $rc -eq 1 ] && [[ $out == PWNED* ]] || fail "password check: rc=$rc $out"
[ "$(ctl reload)" = RELOADED ] || fail "RELOAD"
kill -HUP "$pid"
for _ in $(seq 100); do
  [ "$(ctl stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["reloads"])')" = 2 ] && break
  sleep 0.1
done
[ "$(ctl stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["reloads"])')" = 2 ] ||
  fail "SIGHUP reload (the relative --config must still resolve)"

step "SIGTERM: the daemon stops and removes its pid file"
kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "breachd still runs after SIGTERM"
pid=
[ ! -e "$tmp/run/breachd.pid" ] || fail "the pid file is left behind"
echo "PASS"
