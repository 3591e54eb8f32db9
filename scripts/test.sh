#!/usr/bin/env bash
# Installs what is missing, builds from scratch, and runs every test, three ways:
#   1. the suite on the release build (build/), real Postfix and miltertest included;
#   2. the same suite built with AddressSanitizer + UBSan (preset asan, build-asan/);
#   3. each libFuzzer harness for 60 s on its seed corpus (preset fuzz, build-fuzz/);
#   4. the Debian package: built, linted, installed, run with a real Postfix,
#      upgraded, removed and purged on this machine (build-deb/), last, because
#      it installs mailsift system-wide (and purges it when it ends).
# Any failure, sanitizer report or fuzzer crash fails the command.
#   scripts/test.sh --release-only   only step 1 (the quick loop while developing)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh --test

# suite BUILD_DIR CTEST_ARGS...: runs ctest on BUILD_DIR's tests; when one fails, repeats
# the failing checks last (a CI log may keep only the head and the tail of a long run).
suite() {
    local dir=$1
    shift
    if ctest "$@"; then return 0; fi
    echo "== what failed in $dir (from Testing/Temporary/LastTest.log)"
    grep -hE '^(not ok - |.*: FAILED:|[0-9]+ passed, [1-9][0-9]* failed)' "$dir"/Testing/Temporary/LastTest*.log | tail -n 80 || true
    return 1
}

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMAILSIFT_BUILD_TESTS=ON
cmake --build build -j"$(nproc)"
suite build --test-dir build --output-on-failure -j"$(nproc)"
[ "${1:-}" = "--release-only" ] && exit 0

echo "== the suite under AddressSanitizer + UBSan (build-asan/)"
cmake --preset asan >/dev/null
cmake --build build-asan -j"$(nproc)"
suite build-asan --preset asan -j"$(nproc)"

echo "== each fuzz harness for 60 s on its seed corpus (build-fuzz/)"
./scripts/fuzz.sh --time 60 --jobs "$(nproc)"

echo "== the Debian package: build, lint, install, upgrade, remove, purge (build-deb/)"
./tests/integration/package_test.sh
