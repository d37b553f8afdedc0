# SPDX-License-Identifier: MIT
# Shared by scripts/demo and scripts/test: install what is missing, build.
# Sourced, not run.

# Debian 12 packages the build, the tests and the demo need.
BREACHD_PACKAGES=(
  build-essential meson ninja-build pkg-config python3
  ccache  # meson compiles through it when present: the README path, the demo and repeated runs
  clang-format  # Debian 12: clang-format-14; scripts/check-format, the clang-format test
  libssl-dev libevent-dev liblmdb-dev libcurl4-openssl-dev libcmocka-dev
  libpam0g-dev libinih-dev libidn2-dev libunistring-dev libsystemd-dev zlib1g-dev libjson-c-dev
  libbz2-dev  # bzip2 corpus input (lib/filter/hibp_input_decomp.c)
  libbrotli-dev  # brotli answers of the range endpoint (daemon/http_range.c)
  libxxhash-dev  # XXH3, header-only: the offline URL filter's quick filter (lib/core/hash.c)
  john-data nginx-light
  systemd  # systemd-analyze, -sysusers, -tmpfiles: tests/integration/systemd-security.sh
  pamtester libpam-wrapper libpam-pwquality libnss-wrapper  # tests/integration/test_pam*.py
  cracklib-runtime  # the dictionary of pam_pwquality in the packaged PAM stack: tests/package/
  squid curl  # tests/integration/test_squid.py
  openssl  # signed crafted manifests (gap, wrong kind): tests/integration/test_follow.py
  lmdb-utils  # mdb_dump: tests/integration/test_hygiene.py, test_faults_disk.py
  strace  # no socket but Unix ones: tests/integration/test_offline_host.py; kills: test_faults_process.py
  prometheus  # promtool: /metrics (test_daemon_lifecycle.py), alerting rules (test_health.py)
  debhelper lintian  # dpkg-buildpackage of debian/ and its checks: tests/package/
  chromium  # renders breachctl audit --html: tests/integration/test_audit.py (html_report)
  # directory servers (tests/integration/test_directory_*.py, suite directory)
  krb5-kdc krb5-admin-server krb5-user libkrb5-dev slapd ldap-utils
  samba samba-ad-provision samba-vfs-modules python3-samba
  # resolvers around libbreachd-dns, an authoritative nsd, dig: tests/integration/test_dns_resolvers.py
  pdns-recursor unbound python3-unbound dnsdist knot-resolver nsd bind9-dnsutils
  bind9  # named loading `breachctl filter export --format rpz`: the same test
  samba-dsdb-modules  # the samba_secrets LDB module of provisioning: test_directory_samba.py
)

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# apt-get waits this long (seconds) for the dpkg lock that another apt-get,
# unattended-upgrades or a package manager holds, instead of failing at once.
APT_LOCK_TIMEOUT=${APT_LOCK_TIMEOUT:-900}

ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing missing packages: ${missing[*]}"
  local sudo=() alog
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  alog=$(mktemp "${TMPDIR:-/tmp}/breachd-apt.XXXXXX.log")
  echo "  (apt-get's output: $alog; waiting up to ${APT_LOCK_TIMEOUT} s for the dpkg lock)" >&2
  if ! { "${sudo[@]}" apt-get -o DPkg::Lock::Timeout="$APT_LOCK_TIMEOUT" update -qq &&
    "${sudo[@]}" apt-get -o DPkg::Lock::Timeout="$APT_LOCK_TIMEOUT" install -y -qq \
      --no-install-recommends "${missing[@]}"; } >"$alog" 2>&1; then
    tail -n 30 "$alog" >&2
    log "apt-get failed (its whole output: $alog)"
    return 1
  fi
}

# progress LOG: ninja's output (stdin) into LOG; on a terminal, its latest
# "[n/m] ..." step on one line that is rewritten in place, else nothing.
progress() {
  local line cols=80
  if [ -t 2 ]; then
    cols=$(tput cols 2>/dev/null || echo 80)
    while IFS= read -r line; do
      case $line in
      \[*/*\]*) printf '\r\033[K  %s' "${line:0:$((cols - 3))}" >&2 ;;
      esac
    done < <(tee "$1")
    printf '\r\033[K' >&2
  else
    cat >"$1"
  fi
}

# build_dir DIR [meson setup options...]: configure once, then build. The
# terminal shows one progress line and then a summary; meson's and ninja's
# whole output goes to DIR/meson-logs/setup-output.log and build-output.log
# (the lines that are not steps, the errors, are shown when the build fails).
build_dir() {
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    log "configuring $dir $*"
    local slog
    slog=$(mktemp "${TMPDIR:-/tmp}/breachd-setup.XXXXXX.log")
    if ! meson setup "$dir" "$@" >"$slog" 2>&1; then
      tail -n 40 "$slog" >&2
      log "meson setup $dir failed (its whole output: $slog)"
      return 1
    fi
    mv "$slog" "$dir/meson-logs/setup-output.log"
  fi
  local blog=$dir/meson-logs/build-output.log start=$SECONDS rc=0
  log "building $dir (full log: $blog)"
  ninja -C "$dir" 2>&1 | progress "$blog" || rc=$?
  if [ $rc -ne 0 ]; then
    grep -v '^\[[0-9]*/[0-9]*\] ' "$blog" | tail -n 60 >&2
    log "building $dir failed (the whole log: $blog)"
    return $rc
  fi
  local steps
  steps=$(grep -c '^\[[0-9]*/[0-9]*\] ' "$blog" || true)
  if [ "$steps" -eq 0 ]; then
    echo "  $dir is up to date" >&2
  else
    echo "  $dir: $steps build steps in $((SECONDS - start)) s" >&2
  fi
}
