#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian package (debian/): on a fresh copy of the tree,
#   1. `dpkg-buildpackage -us -uc -b` (as the README says; it runs the unit
#      suite with Debian's compiler flags), timed;
#   2. the changelog's version is meson.build's;
#   3. lintian: no error and no warning (infos are printed);
#   4. the three packages' file lists, conffiles, dependencies, the
#      pam-auth-update profile and the maintainer scripts;
#   5. as root, with overlayfs: install-checks.sh installs, uses, upgrades
#      in place, removes and purges the packages with dpkg in a throwaway
#      root (an overlay of this system, private to a mount namespace, so the
#      packages' dependencies are there and nothing reaches the host).
#
# usage: debian-package.sh SOURCE_ROOT
# Exit 0 passed, 1 failed, 77 skipped: the packaging tools are missing, or
# (after 1-4 passed) step 5 cannot run (not root, no overlayfs). Minutes.
set -euo pipefail
src=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

for t in dpkg-buildpackage dh dh_installsysusers lintian dpkg-deb; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is missing (debhelper, lintian, dpkg-dev)"; exit 77; }
done

tmp=$(mktemp -d /tmp/bd-pkg.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }
die() { echo "FAIL: $*" >&2; exit 1; }
step() { printf '== %s\n' "$*"; }

step "a fresh copy of the tree (tracked and new files, no build directories)"
tree=$tmp/src
mkdir "$tree"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z --cached --others --exclude-standard | \
    xargs -0 tar -cf - --no-recursion) | tar -xf - -C "$tree"
else
  (cd "$src" && tar -cf - --exclude='./build*' --exclude='./obj-*' --exclude='./debian/tmp' .) |
    tar -xf - -C "$tree"
fi

# what the tree holds before the build: the build's own files are the rest
(cd "$tree" && find . debian -mindepth 1 -maxdepth 1 | sed 's|^\./||' | sort) >"$tmp/before.list"

step "dpkg-buildpackage -us -uc -b"
start=$(date +%s)
# Without parallel=N debhelper builds and runs the unit suite one job at a
# time (MESON_TESTTHREADS=1); a builder that says nothing gets the cores.
case " ${DEB_BUILD_OPTIONS:-} " in
  *" parallel="*) ;;
  *) export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }parallel=$(nproc)" ;;
esac
if ! (cd "$tree" && dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1; then
  tail -n 60 "$tmp/build.log"
  die "dpkg-buildpackage (the log's end is above)"
fi
echo "package build: $(($(date +%s) - start)) s wall"
grep -E '^(Ok|Fail|Skipped): ' "$tmp/build.log" | sed 's/^/  unit suite: /' || true
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
version=$(dpkg-parsechangelog -l "$tree/debian/changelog" -S Version)
deb() { echo "$tmp/${1}_${version}_$arch.deb"; }
pkgs="breachd libpam-breachd breachd-squid-helper krb5-breachd slapd-breachd breachd-dns"
for p in $pkgs; do
  [ -f "$(deb "$p")" ] || die "no $(basename "$(deb "$p")")"
done

step "the build's own files in the tree are ignored by git (.gitignore)"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  while IFS= read -r rel; do
    [ -d "$tree/$rel" ] && rel=$rel/ # a directory pattern (debian/tmp/) names directories only
    git -C "$src" check-ignore -q --no-index "$rel" || fail "the build leaves $rel, which .gitignore does not name"
  done < <(cd "$tree" && find . debian -mindepth 1 -maxdepth 1 | sed 's|^\./||' | sort | comm -13 "$tmp/before.list" -)
fi

step "version: debian/changelog and meson.build"
meson_version=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$tree/meson.build" | head -n 1)
[ "${version%%-*}" = "$meson_version" ] ||
  fail "debian/changelog says $version, meson.build says $meson_version"

step "lintian (no error, no warning)"
if ! lintian --fail-on error,warning -I --tag-display-limit 0 "$tmp/breachd_${version}_$arch.changes" \
    >"$tmp/lintian.log" 2>&1; then
  fail "lintian reports errors or warnings"
fi
grep -v 'running with root privileges' "$tmp/lintian.log" || echo "(lintian: nothing to report)"

step "file lists"
list() { dpkg-deb -c "$(deb "$1")" | awk '{ print $6 }' | sed 's|^\./|/|; s|/$||' | grep -v '^$' | sort; }
for p in $pkgs; do list "$p" >"$tmp/$p.list"; done
expect() { # PACKAGE PATH...: each must be in the package
  local p=$1 f
  shift
  for f in "$@"; do grep -qxF "$f" "$tmp/$p.list" || fail "$p does not ship $f"; done
}
expect breachd /usr/sbin/breachd /usr/bin/breachctl \
  /lib/systemd/system/breachd.service /lib/systemd/system/breachd.socket \
  /usr/lib/sysusers.d/breachd.conf /usr/lib/tmpfiles.d/breachd.conf \
  /etc/breachd /etc/breachd/breachd.conf \
  /usr/share/doc/breachd/breachd.conf.example /usr/share/doc/breachd/copyright \
  /usr/share/doc/breachd/README.md /usr/share/doc/breachd/privacy.md \
  /usr/libexec/breachd/check-password /usr/libexec/breachd/samba-check-password \
  /usr/share/man/man1/breachctl.1.gz /usr/share/man/man5/breachd.conf.5.gz \
  /usr/share/man/man8/breachd.8.gz /etc/init.d/breachd /etc/logrotate.d/breachd
expect libpam-breachd "/lib/$multiarch/security/pam_breachd.so" \
  /usr/share/pam-configs/breachd /usr/share/pam-configs/breachd-login \
  /usr/share/man/man8/pam_breachd.8.gz
expect breachd-squid-helper /usr/libexec/breachd-squid-helper \
  /usr/share/man/man8/breachd-squid-helper.8.gz
expect breachd /usr/share/man/man7/breachd-directories.7.gz
expect krb5-breachd "/usr/lib/$multiarch/krb5/plugins/pwqual/breachd.so"
expect slapd-breachd /usr/lib/ldap/breachd_ppolicy.so
expect breachd-dns "/usr/lib/$multiarch/libbreachd-dns.so.1" "/usr/lib/$multiarch/libbreachd-dns.so" \
  "/usr/lib/$multiarch/pkgconfig/breachd-dns.pc" /usr/include/breachd-dns.h \
  /usr/share/breachd/dns/pdns-recursor.lua /usr/share/breachd/dns/unbound.py \
  /usr/share/breachd/dns/dnsdist.lua /usr/share/breachd/dns/kresd.lua \
  /usr/share/breachd/dns/breachd-dns-ffi.lua \
  /usr/share/man/man3/libbreachd-dns.3.gz
# Every document the man pages name by path is there, uncompressed; so are
# the alert rules and the Grafana dashboard (Prometheus and Grafana load
# them as they are: dh_compress -X.yml -X.json).
for f in "$tree"/docs/*.md; do expect breachd "/usr/share/doc/breachd/$(basename "$f")"; done
expect breachd /usr/share/doc/breachd/prometheus/breachd-alerts.yml \
  /usr/share/doc/breachd/grafana/breachd-dashboard.json
allowed='^/(etc/breachd/|etc/init\.d/breachd$|etc/logrotate\.d/breachd$|lib/systemd/system/|lib/'"$multiarch"'/security/|usr/(bin|sbin|libexec)/|usr/share/(doc|man|pam-configs|lintian/overrides)/|usr/lib/(sysusers|tmpfiles)\.d/|usr/lib/'"$multiarch"'/krb5/plugins/pwqual/breachd\.so$|usr/lib/ldap/breachd_ppolicy\.so$|usr/lib/'"$multiarch"'/(libbreachd-dns\.so|pkgconfig/breachd-dns\.pc$)|usr/include/breachd-dns\.h$|usr/share/breachd/dns/)'
odd=$(for p in $pkgs; do
  dpkg-deb -c "$(deb "$p")" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\.||'; done | grep -Ev "$allowed" || true)
[ -z "$odd" ] || fail "files outside the expected directories: $odd"
# Directories may be shared; files may not.
dups=$(for p in $pkgs; do
  dpkg-deb -c "$(deb "$p")" | awk '$1 !~ /^d/ { print $6 }'; done | sort | uniq -d)
[ -z "$dups" ] || fail "files in two packages: $dups"
grep -q '^/usr/lib/systemd' "$tmp/breachd.list" &&
  fail "units under /usr/lib/systemd: Debian 12's dh_installsystemd handles /lib/systemd/system only"
grep -E '/(test_|fuzz_|bench_|faultserver)' "$tmp"/*.list && fail "a test program is packaged"
bad_owner=$(for p in $pkgs; do
  dpkg-deb -c "$(deb "$p")" | awk '$2 != "root/root" { print $6 }'; done)
[ -z "$bad_owner" ] || fail "not root/root: $bad_owner"

step "control data: conffiles, dependencies, the PAM profile, maintainer scripts"
ctl=$tmp/ctl
for p in breachd libpam-breachd breachd-squid-helper; do
  mkdir -p "$ctl/$p"
  dpkg-deb -e "$(deb "$p")" "$ctl/$p"
  dpkg-deb -x "$(deb "$p")" "$tmp/x-$p"
done
[ "$(sort "$ctl/breachd/conffiles" | tr '\n' ' ')" = "/etc/breachd/breachd.conf /etc/init.d/breachd /etc/logrotate.d/breachd " ] ||
  fail "breachd's conffiles: $(cat "$ctl/breachd/conffiles" 2>/dev/null)"
cmp -s "$tmp/x-breachd/etc/breachd/breachd.conf" "$tree/data/breachd.conf.example" ||
  fail "/etc/breachd/breachd.conf is not data/breachd.conf.example"
for p in libpam-breachd breachd-squid-helper; do
  [ ! -e "$ctl/$p/conffiles" ] || fail "$p has conffiles"
done
dpkg-deb -f "$(deb breachd)" Depends | grep -q 'systemd-sysusers' ||
  fail "breachd does not depend on systemd-sysusers (its postinst runs it)"
dpkg-deb -f "$(deb libpam-breachd)" Depends | grep -q 'libpam-runtime' ||
  fail "libpam-breachd does not depend on libpam-runtime (pam-auth-update)"
[ "$(dpkg-deb -f "$(deb libpam-breachd)" Multi-Arch)" = same ] || fail "libpam-breachd is not Multi-Arch: same"
profile=$tmp/x-libpam-breachd/usr/share/pam-configs/breachd
grep -qx 'Default: no' "$profile" || fail "the pam-auth-update profile is not off by default"
grep -qx 'Password-Type: Primary' "$profile" || fail "the profile is not in the Primary password block"
# Every profile has what pam-auth-update needs to list and order it.
for p in breachd breachd-login; do
  for field in Name Default Priority; do
    grep -q "^$field: ." "$tmp/x-libpam-breachd/usr/share/pam-configs/$p" || fail "profile $p has no $field:"
  done
done
# pam_breachd(8) quotes both profiles as shipped (a file, not a pipe into
# grep -q: under pipefail a sed killed by SIGPIPE would fail the check).
sed 's/\\-/-/g' "$tree/docs/pam_breachd.8" >"$tmp/pam_breachd.8.txt"
for p in breachd breachd-login; do
  while IFS= read -r l; do
    grep -qxF "$l" "$tmp/pam_breachd.8.txt" || fail "pam_breachd(8) does not quote '$l' of profile $p"
  done <"$tmp/x-libpam-breachd/usr/share/pam-configs/$p"
done
login=$tmp/x-libpam-breachd/usr/share/pam-configs/breachd-login
grep -qx 'Default: no' "$login" || fail "the login profile is not off by default"
grep -qx 'Auth-Type: Additional' "$login" && grep -qx 'Account-Type: Additional' "$login" ||
  fail "the login profile is not in the Additional auth and account blocks"
# The System V init script: executable, LSB header, registered by postinst.
init=$tmp/x-breachd/etc/init.d/breachd
[ -x "$init" ] && sh -n "$init" || fail "/etc/init.d/breachd: not an executable shell script"
grep -q '^### BEGIN INIT INFO' "$init" || fail "/etc/init.d/breachd has no LSB header"
grep -q 'update-rc.d breachd defaults' "$ctl/breachd/postinst" || fail "postinst does not register the init script"
grep -q 'invoke-rc.d --skip-systemd-native breachd' "$ctl/breachd/postinst" ||
  fail "postinst does not start the daemon through the init script where systemd is not PID 1"
for s in "$ctl"/*/preinst "$ctl"/*/postinst "$ctl"/*/prerm "$ctl"/*/postrm; do
  [ -e "$s" ] || continue
  sh -n "$s" || fail "$s: shell syntax"
  [ -x "$s" ] || fail "$s is not executable"
done
grep -q 'systemd-sysusers .*breachd.conf' "$ctl/breachd/postinst" || fail "postinst does not run systemd-sysusers"
grep -q 'systemd-tmpfiles .*--create breachd.conf' "$ctl/breachd/postinst" || fail "postinst does not run systemd-tmpfiles"
grep -q "deb-systemd-helper enable 'breachd.socket'" "$ctl/breachd/postinst" || fail "postinst does not enable breachd.socket"
# The socket unit is never restarted (a running service holds it).
grep -q "restart.*breachd.socket\|_dh_action 'breachd.socket'" "$ctl/breachd/postinst" &&
  fail "postinst restarts breachd.socket on upgrade"
grep -q 'rm -rf "${DPKG_ROOT:-}/var/cache/breachd"' "$ctl/breachd/postrm" || fail "postrm does not purge the cache"
grep -E '(rm|rmdir|find)[^#]*var/lib/breachd/' "$ctl/breachd/postrm" &&
  fail "postrm removes something inside /var/lib/breachd (the admin's filters)"
grep -q 'pam-auth-update --package --remove breachd breachd-login' "$ctl/libpam-breachd/prerm" ||
  fail "libpam-breachd's prerm does not take the module out of the PAM stack"
grep -q 'pam-auth-update --package' "$ctl/libpam-breachd/postinst" ||
  fail "libpam-breachd's postinst does not register the profile"

[ "$failed" -eq 0 ] || exit 1

step "install, use, upgrade in place, remove and purge in a throwaway root"
why=
if [ "$(id -u)" -ne 0 ]; then
  why="not root"
elif ! command -v unshare >/dev/null; then
  why="no unshare(1)"
elif ! unshare --mount --propagation private sh -c "mkdir '$tmp/probe' &&
    mount -t tmpfs tmpfs '$tmp/probe' && mkdir '$tmp/probe/u' '$tmp/probe/w' '$tmp/probe/m' &&
    mount -t overlay overlay -o 'lowerdir=/,upperdir=$tmp/probe/u,workdir=$tmp/probe/w' '$tmp/probe/m'" \
    2>"$tmp/probe.err"; then
  why="no overlayfs here: $(cat "$tmp/probe.err")"
fi
if [ -n "$why" ]; then
  echo "SKIP: the install checks need root and an overlayfs mount ($why); steps 1-4 passed"
  exit 77
fi
mkdir -p "$tmp/debs"
cp "$(deb breachd)" "$(deb libpam-breachd)" "$(deb breachd-squid-helper)" "$tmp/debs/"
rc=0
timeout --kill-after=10 600 unshare --mount --pid --fork --propagation private bash "$here/install-checks.sh" "$tmp/root" "$tmp/debs" "$here" || rc=$?
[ "$rc" -eq 0 ] || die "install checks (exit status $rc)"
echo "all package checks passed"
