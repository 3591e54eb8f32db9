#!/usr/bin/env bash
# Installs the Debian 12 packages mailsift needs, when missing.
#   scripts/deps.sh          what building and running need
#   scripts/deps.sh --test   also what the test suite drives for real: a Postfix
#                            (left unconfigured and stopped), miltertest, Dovecot
#                            (dovecot-imapd, dovecot-sieve, dovecot-lmtpd; not started), PostgreSQL's
#                            server (the tests initdb and start a private one), Prometheus
#                            (the fleet test runs a private one; not started), nginx-light
#                            (the proxy test runs a private one; not started), the man-page
#                            linters and systemd-analyze; clang with its runtimes
#                            for the libFuzzer harnesses; ccache, through which
#                            scripts/test.sh compiles, and dpkg-dev, whose
#                            dpkg-buildflags give its release build the package's
#                            flags. Installing them here, once,
#                            keeps parallel tests from racing for the dpkg lock.
#   scripts/deps.sh --package  also what building the Debian package needs
#                            (debhelper, dpkg-dev) and lintian (scripts/package.sh).
#   scripts/deps.sh --bench  also what the benchmarks use: Google Benchmark (for
#                            mailsift-bench-micro), bogofilter and time (for
#                            bench/accuracy.sh and bench/speed.sh).
set -euo pipefail
packages=(cmake g++ make pkg-config libboost-dev libsqlite3-dev libmimetic-dev libzstd-dev libcli11-dev nlohmann-json3-dev libpq-dev libsodium-dev libssl-dev catch2 util-linux python3)
if [ "${1:-}" = "--test" ]; then
  packages+=(postfix miltertest dovecot-imapd dovecot-sieve dovecot-lmtpd postgresql prometheus mandoc groff-base systemd sasl2-bin libsasl2-modules clang libclang-rt-14-dev chromium chromium-driver python3-selenium fail2ban openssl nginx-light curl ccache dpkg-dev)
fi
if [ "${1:-}" = "--package" ]; then
  packages+=(debhelper dpkg-dev lintian)
fi
if [ "${1:-}" = "--bench" ]; then
  packages+=(libbenchmark-dev bogofilter time)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  # Postfix must not ask questions or configure the system's own instance.
  echo "postfix postfix/main_mailer_type select No configuration" | $SUDO debconf-set-selections
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    -o DPkg::Lock::Timeout=300 "${missing[@]}"
fi
