# SPDX-License-Identifier: MIT
# Shared by scripts/demo and scripts/test: install what is missing, build.
# Sourced, not run.

# Debian 12 packages the build, the tests and the demo need.
BREACHD_PACKAGES=(
  build-essential meson ninja-build pkg-config python3
  ccache  # meson compiles through it when present: the README path, the demo and repeated runs
  libssl-dev libevent-dev liblmdb-dev libcurl4-openssl-dev libcmocka-dev
  libpam0g-dev libinih-dev libidn2-dev libunistring-dev libsystemd-dev zlib1g-dev libjson-c-dev
  libbz2-dev  # bzip2 corpus input (lib/filter/hibp_input_decomp.c)
  libbrotli-dev  # brotli answers of the range endpoint (daemon/http_range.c)
  john-data nginx-light
  systemd  # systemd-analyze, -sysusers, -tmpfiles: tests/integration/systemd-security.sh
  pamtester libpam-wrapper libpam-pwquality libnss-wrapper  # tests/integration/test_pam*.py
  cracklib-runtime  # the dictionary of pam_pwquality in the packaged PAM stack: tests/package/
  squid curl  # tests/integration/test_squid.py
  openssl  # signed crafted manifests (gap, wrong kind): tests/integration/test_follow.py
  lmdb-utils  # mdb_dump: tests/integration/test_hygiene.py, test_faults_disk.py
  prometheus  # promtool: /metrics (test_daemon_lifecycle.py), alerting rules (test_health.py)
  debhelper lintian  # dpkg-buildpackage of debian/ and its checks: tests/package/
  # directory servers (tests/integration/test_directory_*.py, suite directory)
  krb5-kdc krb5-admin-server krb5-user libkrb5-dev slapd ldap-utils
  samba samba-ad-provision samba-vfs-modules python3-samba
  # resolvers around libbreachd-dns, an authoritative nsd, dig: tests/integration/test_dns_resolvers.py
  pdns-recursor unbound python3-unbound dnsdist knot-resolver nsd bind9-dnsutils
  bind9  # named loading `breachctl filter export --format rpz`: the same test
  samba-dsdb-modules  # the samba_secrets LDB module of provisioning: test_directory_samba.py
)

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing missing packages: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# build_dir DIR [meson setup options...]: configure once, then build.
build_dir() {
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    log "configuring $dir $*"
    meson setup "$dir" "$@" >/dev/null
  fi
  log "building $dir"
  ninja -C "$dir"
}
