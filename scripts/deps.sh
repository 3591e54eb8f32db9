#!/usr/bin/env bash
# Installs the Debian 12 packages mailsift needs to build and test, when missing.
set -euo pipefail
packages=(cmake g++ make pkg-config libboost-dev libsqlite3-dev libmimetic-dev catch2 util-linux python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
