#!/usr/bin/env bash
# Builds the libFuzzer harnesses (CMake preset "fuzz", clang, build-fuzz/) when
# needed and runs each for a while on a working copy of its seed corpus.
#
#   scripts/fuzz.sh [--time SECONDS] [--jobs N] [--keep-going] [HARNESS...]
#
#   --time SECONDS  how long each harness runs (default 60)
#   --jobs N        harnesses run at once (default 1)
#   --keep-going    do not stop at the first crash: libFuzzer's fork mode
#                   (-fork=1 -ignore_crashes=1 ...) saves every crash and goes on
#   HARNESS         fuzz_milter, fuzz_mime_features, fuzz_config, fuzz_import, fuzz_log,
#                   fuzz_correction_wire (default: all)
#
# Seeds are read from fuzz/corpus/HARNESS/ and never written: each harness works
# in build-fuzz/fuzz-work/HARNESS/corpus/ (kept between runs, so coverage
# accumulates), and crashes, leaks and timeouts land in build-fuzz/fuzz-work/HARNESS/.
# Prints per harness: runs, coverage (cov:), corpus size and new inputs, and
# every new crash file with the first line of its report (distinct reports
# once each); exits 1 when a harness crashed or failed an invariant.
#
# Extra libFuzzer flags: FUZZ_FLAGS="-only_ascii=1 ...". Checks of known open
# bugs can be tolerated while fuzzing for others: MAILSIFT_FUZZ_ALLOW=id1,id2
# (the id printed in "INVARIANT FAILED [id]").
# Reproduce a crash: build-fuzz/fuzz/HARNESS CRASH_FILE
# Minimise it:       build-fuzz/fuzz/HARNESS -minimize_crash=1 -runs=100000 CRASH_FILE
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

all=(fuzz_milter fuzz_mime_features fuzz_config fuzz_import fuzz_log fuzz_correction_wire)
time_s=60
jobs=1
keep_going=0
harnesses=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --time) time_s=${2:?--time needs SECONDS}; shift 2 ;;
    --time=*) time_s=${1#--time=}; shift ;;
    --jobs) jobs=${2:?--jobs needs N}; shift 2 ;;
    --jobs=*) jobs=${1#--jobs=}; shift ;;
    --keep-going) keep_going=1; shift ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) harnesses+=("$1"); shift ;;
  esac
done
[[ ${#harnesses[@]} -gt 0 ]] || harnesses=("${all[@]}")
[[ $time_s =~ ^[0-9]+$ && $time_s -gt 0 ]] || { echo "fuzz.sh: --time wants a positive number of seconds" >&2; exit 2; }
[[ $jobs =~ ^[0-9]+$ && $jobs -gt 0 ]] || { echo "fuzz.sh: --jobs wants a positive number" >&2; exit 2; }
for h in "${harnesses[@]}"; do
  [[ " ${all[*]} " == *" $h "* ]] || { echo "fuzz.sh: unknown harness '$h' (have: ${all[*]})" >&2; exit 2; }
done

max_len() {
  case "$1" in
    fuzz_milter) echo $((256 * 1024)) ;;
    fuzz_mime_features) echo $((1024 * 1024)) ;;
    fuzz_config) echo $((64 * 1024)) ;;
    fuzz_import) echo $((128 * 1024)) ;;
    fuzz_log) echo $((16 * 1024)) ;;
    fuzz_correction_wire) echo $((64 * 1024)) ;;
  esac
}

build=build-fuzz
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake --preset fuzz >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target "${harnesses[@]}" >/dev/null

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# The first line of what a crash input makes the harness report.
first_report_line() {
  "$build/fuzz/$1" "$2" 2>&1 |
    grep -m1 -E 'INVARIANT FAILED|ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error|ERROR: libFuzzer' |
    sed -E 's/==[0-9]+==/==/; s/ at pc 0x[0-9a-f]+.*//' || true
}

run_one() {
  local h=$1
  local work=$build/fuzz-work/$h
  mkdir -p "$work/corpus"
  cp -n fuzz/corpus/"$h"/* "$work/corpus/" 2>/dev/null || true
  local before
  before=$(find "$work/corpus" -type f | wc -l)
  local flags=(-max_total_time="$time_s" -max_len="$(max_len "$h")" -timeout=30 -rss_limit_mb=2560
               -print_final_stats=1 -artifact_prefix="$work/")
  [[ -f fuzz/dict/$h.dict ]] && flags+=(-dict="fuzz/dict/$h.dict")
  [[ $keep_going -eq 1 ]] && flags+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  local log=$work/last-run.log
  local marker=$work/.started
  touch "$marker"
  local start
  start=$(date +%s)
  local status=0
  # shellcheck disable=SC2086
  "$build/fuzz/$h" "${flags[@]}" ${FUZZ_FLAGS:-} "$work/corpus" >"$log" 2>&1 || status=$?
  local elapsed=$(( $(date +%s) - start ))
  local runs cov after
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [[ -n $runs ]] || runs=$( (grep -oE '^#[0-9]+' "$log" || true) | tail -1 | tr -d '#')
  cov=$( (grep -oE 'cov: [0-9]+' "$log" || true) | tail -1 | cut -d' ' -f2)
  after=$(find "$work/corpus" -type f | wc -l)
  local artifacts=()
  mapfile -t artifacts < <(find "$work" -maxdepth 1 -type f -newer "$marker" \
    \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
  {
    printf '%-20s %6ss  runs %-10s cov %-6s corpus %s (+%s new)' "$h" "$elapsed" "${runs:-?}" "${cov:-?}" "$after" \
      "$((after - before))"
    if [[ $status -ne 0 || ${#artifacts[@]} -gt 0 ]]; then
      printf '  CRASH (exit %s, %s file(s))\n' "$status" "${#artifacts[@]}"
      local seen="" a line
      for a in "${artifacts[@]}"; do
        line=$(first_report_line "$h" "$a")
        if [[ $seen != *"|$line|"* ]]; then
          seen+="|$line|"
          printf '    %s\n      %s\n' "$a" "${line:-(no report line; see the log)}"
        fi
      done
      echo "    log: $log"
      [[ $status -ne 0 ]] || status=1
    else
      printf '  no crash\n'
    fi
  } >"$work/summary"
  return "$status"
}

echo "fuzzing ${harnesses[*]} for ${time_s}s each, $jobs at a time (logs in $build/fuzz-work/)"
failed=0
pids=()
names=()
wait_one() {
  local pid=${pids[0]} name=${names[0]}
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
  wait "$pid" || failed=1
  cat "$build/fuzz-work/$name/summary"
}
for h in "${harnesses[@]}"; do
  if [[ ${#pids[@]} -ge $jobs ]]; then wait_one; fi
  run_one "$h" &
  pids+=($!)
  names+=("$h")
done
while [[ ${#pids[@]} -gt 0 ]]; do wait_one; done

if [[ $failed -ne 0 ]]; then
  echo "fuzz.sh: a harness crashed or failed an invariant (see above)" >&2
  exit 1
fi
