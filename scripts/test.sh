#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test, four ways:
#   1. the suite on the release build (build/), real Postfix and miltertest included;
#   2. the same suite built with AddressSanitizer + UBSan (preset asan, build-asan/);
#   3. each libFuzzer harness for 60 s on its seed corpus (preset fuzz, build-fuzz/);
#   4. the Debian package: built, linted, installed, run with a real Postfix,
#      upgraded, removed and purged on this machine (build-deb/), last, because
#      it installs mailsift system-wide (and purges it when it ends).
# Any failure, sanitizer report or fuzzer crash fails the command. At its end it
# prints each step's wall time and the ten slowest tests (also when a step failed).
#
#   scripts/test.sh                 all four (what CI runs, .ci/run)
#   scripts/test.sh --release-only  step 1 only
#   scripts/test.sh --quick         the loop after each change: the release build,
#                                   then every test but those labelled slow
#                                   (ctest -LE slow: the browser, MTA, IMAP,
#                                   fleet and package-sized runs)
#
# Compiles go through ccache when it is installed (scripts/deps.sh --test installs
# it; the cache is the user's, ~/.cache/ccache): a run after an earlier one on the
# same machine recompiles only what changed, in any clone (CCACHE_BASEDIR is the
# clone). MAILSIFT_NO_CCACHE=1 compiles everything afresh.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=all
case "${1:-}" in
    "") ;;
    --release-only) mode=release ;;
    --quick) mode=quick ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
esac
root=$PWD

# ---------------------------------------------------------------- where the time goes
steps=()      # "SECONDS<TAB>STATUS<TAB>NAME", in the order they ran
run_started=$SECONDS
# step NAME CMD...: runs CMD as one timed step; its status is the step's.
step() {
    local name=$1 t0=$SECONDS rc=0
    shift
    echo "== $name"
    "$@" || rc=$?
    steps+=("$((SECONDS - t0))"$'\t'"$([ $rc -eq 0 ] && echo ok || echo "FAILED ($rc)")"$'\t'"$name")
    return $rc
}
# At exit: the command's status stays that of the steps (set -e and pipefail are off
# here: head closing its pipe early is no failure).
report() {
    local rc=$? line s
    set +e +o pipefail
    echo
    echo "== where the time went (scripts/test.sh${mode:+ $mode}, $(nproc) CPUs)"
    for line in "${steps[@]}"; do
        IFS=$'\t' read -r s status name <<<"$line"
        printf '%7s  %-10s %s\n' "$(printf '%d:%02d' $((s / 60)) $((s % 60)))" "$status" "$name"
    done
    s=$((SECONDS - run_started))
    printf '%7s  %-10s %s\n' "$(printf '%d:%02d' $((s / 60)) $((s % 60)))" "$([ $rc -eq 0 ] && echo ok || echo failed)" "the whole command"
    # The ten slowest tests of the suites that ran: ctest prints "Test #N: NAME .... Passed 12.34 sec".
    local logs=()
    for d in build build-asan; do [ -f "$d/ctest-run.log" ] && logs+=("$d/ctest-run.log"); done
    if [ ${#logs[@]} -gt 0 ]; then
        echo "== the ten slowest tests"
        for d in "${logs[@]}"; do
            sed -nE "s|^ *[0-9]+/[0-9]+ Test +#[0-9]+: (.*[^ .]) \.+ *[^0-9]*([0-9.]+) sec\$|\2\t${d%%/*}: \1|p" "$d"
        done | sort -t$'\t' -k1,1 -rn | head -n 10 | awk -F'\t' '{ printf "%7.1f s  %s\n", $1, $2 }'
    fi
    if [ -n "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ]; then
        echo "== ccache: $(ccache --print-stats 2>/dev/null | awk -F'\t' '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 } $1 == "cache_miss" { m = $2 } END { printf "%d hits, %d misses this run", h, m }')"
    fi
    exit "$rc"
}
rm -f build/ctest-run.log build-asan/ctest-run.log   # this run's only
trap report EXIT

# ---------------------------------------------------------------- the steps
deps() { ./scripts/deps.sh --test; }
step "install what is missing (scripts/deps.sh --test)" deps

if [ -z "${MAILSIFT_NO_CCACHE:-}" ] && command -v ccache >/dev/null; then
    export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
    # Paths under the clone are hashed relative to it, and the build directory is
    # not hashed (it only names the directory in the debug info), so that a fresh
    # clone elsewhere finds what an earlier one compiled.
    export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=true
    # A miss costs the compile alone: the compiler's own list of headers (-MD) keys
    # the result, instead of a second pass of the preprocessor.
    export CCACHE_DEPEND=true
    # Four builds (release, sanitizers, fuzzers, the package) with debug info. The
    # directory named, since debhelper gives the package build a HOME of its own.
    export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-10G}
    CCACHE_DIR=$(ccache -k cache_dir)
    export CCACHE_DIR
    ccache --zero-stats >/dev/null
fi
launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-}")
# Tests at a time: the CPUs. The suite is bound by computing, not waiting: on 2
# cores the release suite's tests add up to 799 s and it takes 401 s at -j2, 387 s
# at -j4 (the console tests in Chromium then take 259 s instead of 150 s).
jobs=$(nproc)

# suite BUILD_DIR CTEST_ARGS...: runs ctest on BUILD_DIR's tests (its output also in
# BUILD_DIR/ctest-run.log); when one fails, repeats the failing checks last (a CI log
# may keep only the head and the tail of a long run).
suite() {
    local dir=$1 rc=0
    shift
    ctest "$@" 2>&1 | tee "$dir/ctest-run.log" || rc=$?
    if [ "$rc" -eq 0 ]; then return 0; fi
    echo "== what failed in $dir (from Testing/Temporary/LastTest.log)"
    grep -hE '^(not ok - |.*: FAILED:|[0-9]+ passed, [1-9][0-9]* failed)' "$dir"/Testing/Temporary/LastTest*.log | tail -n 80 || true
    return 1
}

# The release build is compiled as the Debian package compiles mailsift (debhelper's
# CMake build: build type None, dpkg-buildflags with debian/rules' hardening=+all, its
# CPPFLAGS after its CXXFLAGS), so that the suite tests the code that ships, asserts
# included, and the package build (step 4) finds every object it shares with this
# one in the compiler cache: the same commands, once paths are taken relative.
release_build() {
    local cxxflags
    cxxflags="$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get CXXFLAGS) $(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get CPPFLAGS)"
    cmake -S . -B build -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="$cxxflags" \
        -DCMAKE_EXE_LINKER_FLAGS="$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get LDFLAGS)" \
        -DMAILSIFT_BUILD_TESTS=ON "${launcher[@]}"
    cmake --build build -j"$(nproc)"
}
step "release build (build/)" release_build
if [ "$mode" = quick ]; then
    step "release suite without the slow tests (ctest -LE slow)" suite build --test-dir build --output-on-failure -j"$jobs" -LE slow
    exit 0
fi
step "release suite" suite build --test-dir build --output-on-failure -j"$jobs"
[ "$mode" = release ] && exit 0

asan_build() {
    cmake --preset asan "${launcher[@]}" >/dev/null
    cmake --build build-asan -j"$(nproc)"
}
step "sanitizer build (build-asan/)" asan_build
step "the suite under AddressSanitizer + UBSan" suite build-asan --preset asan -j"$jobs"

step "each fuzz harness for 60 s on its seed corpus (build-fuzz/)" ./scripts/fuzz.sh --time 60 --jobs "$(nproc)"

step "the Debian package: build, lint, install, upgrade, remove, purge (build-deb/)" ./tests/integration/package_test.sh
