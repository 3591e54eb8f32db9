#!/usr/bin/env bash
# run.sh - every mailsift benchmark in one command, one table per section and a
# summary against the targets. A benchmark, not a test: it prints numbers and
# exits 0 whenever it ran, however slow the numbers are.
#
# usage: bench/run.sh [--quick] [--only SECTION[,SECTION...]] [--long N]
#                     [--long-connections C] [--corpus DIR] [--no-postfix]
#
#   --quick        fewer repetitions, shorter runs, a 10^6-feature model for
#                  the refresh test: a fast check that everything runs
#   --only LIST    run only these sections (comma separated): micro, batch,
#                  one, imapsieve, daemon, memory, refresh, scale, postfix, scans
#   --long N       also run the memory section: N messages over 16 connections
#                  against one daemon, sampling its VmRSS (off by default;
#                  1000000 takes about two minutes)
#   --long-connections C   the memory section's connections (default 16;
#                  512 is issue 7's load test)
#   --corpus DIR   the SpamAssassin corpus (default ../shared/corpus/spamassassin,
#                  relative to the repository root)
#   --no-postfix   skip the two sections that need Postfix (postfix, scans)
#                  (imapsieve, which needs Dovecot, runs unless left out of --only)
#   KEEP=1 in the environment keeps the work directory (logs, databases)
#
# Sections: micro (mailsift-bench-micro), batch (speed.sh), one (one message,
# one process: one_message.sh), imapsieve (messages moved through Dovecot:
# imapsieve_move.sh), daemon (mailsiftd under mailsift-loadgen at
# 1/16/128/512 connections), memory (--long), refresh (latency while the daemon
# reloads a large model), scale (mailsift-bench-scale), postfix
# (postfix_throughput.sh), scans (scan_size.sh).
# See bench/README.md.
# The settings below are read by the sections (bench/sections/), sourced at the end.
# shellcheck disable=SC2034,SC2317  # (and its helpers are called from them)
set -euo pipefail
export LC_ALL=C

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$repo_root/build
mailsift=$build/src/cli/mailsift
mailsiftd=$build/src/daemon/mailsiftd
loadgen=$build/bench/mailsift-loadgen
micro=$build/bench/mailsift-bench-micro
scale=$build/bench/mailsift-bench-scale
corpus=$repo_root/../shared/corpus/spamassassin
all_sections=(micro batch one imapsieve daemon memory refresh scale postfix scans)
quick=0 long=0 long_connections=16 no_postfix=0 only=

# The targets (bench/targets.sh) and the helpers every benchmark shares (bench/lib.sh).
# shellcheck source-path=SCRIPTDIR source=targets.sh
. "$repo_root/bench/targets.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$repo_root/bench/lib.sh"

usage() { sed -n '2,30s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
while (($#)); do
    case $1 in
        --quick)      quick=1; shift ;;
        --only)       only=${2:?--only needs a list of sections}; shift 2 ;;
        --long)       long=${2:?--long needs a number of messages}; shift 2 ;;
        --long-connections) long_connections=${2:?--long-connections needs a number}; shift 2 ;;
        --corpus)     corpus=${2:?--corpus needs a directory}; shift 2 ;;
        --no-postfix) no_postfix=1; shift ;;
        -h|--help)    usage; exit 0 ;;
        *)            usage >&2; exit 2 ;;
    esac
done
[[ $long =~ ^(0|[1-9][0-9]*)$ ]] || { echo "--long must be a number of messages" >&2; exit 2; }
[[ $long_connections =~ ^[1-9][0-9]*$ ]] || { echo "--long-connections must be a positive number" >&2; exit 2; }

declare -A run_section=()
if [[ -n $only ]]; then
    IFS=, read -r -a wanted <<<"$only"
    for s in "${wanted[@]}"; do
        [[ " ${all_sections[*]} " == *" $s "* ]] || { echo "unknown section '$s' (sections: ${all_sections[*]})" >&2; exit 2; }
        run_section[$s]=1
    done
else
    for s in "${all_sections[@]}"; do run_section[$s]=1; done
fi
# The memory run is the --long option: with it, it goes with the daemon section.
if ((long > 0)) && [[ -n ${run_section[daemon]:-} ]]; then run_section[memory]=1; fi
((no_postfix)) && unset 'run_section[postfix]' 'run_section[scans]'

# Sizes of the runs: full, or --quick.
if ((quick)); then
    micro_args=(--benchmark_repetitions=1 --benchmark_min_time=0.1)
    daemon_seconds=2 daemon_reps=1
    refresh_features=1000000 refresh_min_seconds=12 refresh_learn_at=3
    postfix_args=(--messages 500 --reps 1)
else
    micro_args=(--benchmark_repetitions=3)
    daemon_seconds=5 daemon_reps=3
    refresh_features=10000000 refresh_min_seconds=20 refresh_learn_at=5
    postfix_args=(--messages 2000 --sessions 16 --reps 5)
fi
daemon_connections=(1 16 128 512)
refresh_connections=16 refresh_interval=0.5 refresh_batch=500
rss_every=3 warmup_seconds=10

say() { printf '[run] %s\n' "$*" >&2; }
start_seconds=$SECONDS

# ---------------------------------------------------------------- work directory, cleanup
tmp=$(mktemp -d -t mailsift-run.XXXXXX)
: >"$tmp/pids"        # every process started in the background, one PID per line
: >"$tmp/summary"     # SECTION<TAB>MEASURE<TAB>TARGET<TAB>MEASURED<TAB>STATUS
: >"$tmp/notes"

# Only processes whose command line names the work directory (the daemon's
# --db, loadgen's --files-from) are signalled; mailsiftd drains for at most 30 s.
# shellcheck disable=SC2317  # (called from the EXIT traps)
stop_ours() { stop_pid "$1" 40 "$tmp/"; }
# shellcheck disable=SC2317  # (called from the EXIT traps)
stop_all() {
    local pid
    while read -r pid; do [[ -n $pid ]] && stop_ours "$pid"; done <"$tmp/pids"
    return 0
}
# shellcheck disable=SC2317  # (the EXIT trap)
cleanup() {
    set +e
    stop_all
    wait 2>/dev/null
    if [[ -n ${KEEP:-} ]]; then say "kept $tmp (KEEP)"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

note() { printf '%s\n' "$*" >>"$tmp/notes"; say "note: $*"; }
summary() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$tmp/summary"; }

# ---------------------------------------------------------------- build, corpus
if [[ ! -f $build/CMakeCache.txt ]]; then
    say "no build directory: configuring and building a Release build"
    (cd "$repo_root" && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >&2 && cmake --build build -j2 >&2)
fi
missing_targets=()
for t in mailsift:"$mailsift" mailsiftd:"$mailsiftd" mailsift-loadgen:"$loadgen" mailsift-bench-scale:"$scale"; do
    [[ -x ${t#*:} ]] || missing_targets+=("${t%%:*}")
done
if ((${#missing_targets[@]})); then
    say "building ${missing_targets[*]}"
    cmake --build "$build" -j2 --target "${missing_targets[@]}" >&2
fi

[[ -d $corpus/spam && -d $corpus/easy_ham ]] || { echo "corpus not found: $corpus (needs spam/ and easy_ham/)" >&2; exit 2; }
corpus=$(cd "$corpus" && pwd)
# shellcheck source-path=SCRIPTDIR source=corpus_split.sh
. "$repo_root/bench/corpus_split.sh"
corpus_labels "$corpus" "$tmp/all.labels"
dev_split "$tmp/all.labels" "$tmp"
cut -f1 "$tmp/test.labels" >"$tmp/test.list"
# The refresh batch: held-out ham the model has not learned yet.
awk -F'\t' -v n="$refresh_batch" '$2 == "ham" && k++ < n { print $1 }' "$tmp/test.labels" >"$tmp/refresh.ham"
n_train=$(cat "$tmp/train.spam" "$tmp/train.ham" | wc -l)
n_test=$(wc -l <"$tmp/test.list")
: >"$tmp/empty.conf"     # built-in defaults for mailsift and mailsiftd
unset MAILSIFT_DB MAILSIFT_CONFIG

cpu_model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
echo "mailsift benchmarks  $(date -u '+%Y-%m-%d %H:%M:%S UTC')$( ((quick)) && echo '  (--quick)')"
echo "machine : $(nproc) CPUs, ${cpu_model:-unknown CPU}, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "mailsift: $("$mailsift" --version 2>&1 | head -n 1), $(git -C "$repo_root" describe --always --dirty 2>/dev/null || echo 'no git')"
echo "corpus  : $corpus ($((n_train + n_test)) messages; daemon split: $n_train train, $n_test held out)"

# ---------------------------------------------------------------- helpers
section() { printf '\n== %s\n' "$*"; }
table_rule() { printf '%s\n' "$(printf '%*s' "$1" '' | tr ' ' -)"; }
# kv LINE KEY: the word after KEY in a "key value key value" line.
kv() { awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' <<<"$1"; }
# stats: "median min max" of the numbers on stdin (n/a when none).
stats() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "n/a n/a n/a"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        print m, v[1], v[NR] }'
}
# fmt_range FORMAT MEDIAN MIN MAX: "median" or "median (min-max)" when they differ.
fmt_range() {
    awk -v f="$1" -v m="$2" -v a="$3" -v b="$4" 'BEGIN {
        if (m == "n/a") { print "n/a"; exit }
        s = sprintf(f, m); lo = sprintf(f, a); hi = sprintf(f, b)
        print (lo == hi) ? s : s " (" lo "-" hi ")" }'
}
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
clk_tck=$(getconf CLK_TCK)
rss_kib() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
hwm_kib() { awk '$1 == "VmHWM:" { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }
# seconds_between T0 T1 ($EPOCHREALTIME values): T1 - T0 in seconds.
seconds_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# ms_learn DB PREFIX: learn PREFIX.spam as spam and PREFIX.ham as ham.
# Exit status 1 (some input unusable) is only a warning.
ms_learn() {
    local cls rc
    for cls in spam ham; do
        rc=0
        "$mailsift" --config "$tmp/empty.conf" --db "$1" learn "--$cls" --files-from "$2.$cls" >>"$tmp/learn.log" 2>&1 || rc=$?
        ((rc <= 1)) || { say "mailsift learn --$cls failed ($rc)"; tail -n 5 "$tmp/learn.log" >&2; return 1; }
    done
}

# ms_counter DB NAME: a mailsiftd counter from mailsift stats (0 when not there yet).
ms_counter() {
    "$mailsift" --config "$tmp/empty.conf" --db "$1" stats 2>/dev/null |
        awk -v n="$2" '$1 == n && $2 ~ /^[0-9]+$/ { v = $2 } END { print v + 0 }'
}

# start_daemon NAME DB: start mailsiftd on a free port with built-in defaults.
# Sets DPID, DPORT, DLOG and DLOAD (seconds from the start to "loaded model").
start_daemon() {
    local name=$1 db=$2 t0 deadline
    DPORT=$(free_port)
    DLOG=$tmp/$name.mailsiftd.log
    t0=$EPOCHREALTIME
    (exec "$mailsiftd" --foreground --config "$tmp/empty.conf" --db "$db" --listen "inet:127.0.0.1:$DPORT" 2>"$DLOG") &
    DPID=$!
    echo "$DPID" >>"$tmp/pids"
    deadline=$((SECONDS + 300))
    until grep -q 'loaded model' "$DLOG" 2>/dev/null; do
        if ! kill -0 "$DPID" 2>/dev/null || ((SECONDS > deadline)); then
            say "mailsiftd ($name) did not load its model; last log lines:"
            tail -n 5 "$DLOG" >&2
            return 1
        fi
        sleep 0.05
    done
    DLOAD=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    until port_open "$DPORT"; do
        ((SECONDS <= deadline)) || { say "mailsiftd ($name) does not listen on $DPORT"; return 1; }
        sleep 0.05
    done
    say "mailsiftd ($name) pid $DPID on 127.0.0.1:$DPORT: $(grep -m1 'loaded model' "$DLOG" | sed 's/^<[0-9]>//')"
}

# lg ARGS...: mailsift-loadgen against the daemon, output to stdout; never
# fails (errors are counted in its summary line).
lg() {
    "$loadgen" --connect "127.0.0.1:$DPORT" --files-from "$tmp/test.list" "$@" 2>>"$tmp/loadgen.err" || true
}

# ---------------------------------------------------------------- the sections
# One file each in bench/sections/, defining sec_NAME (the daemon's file also
# sec_memory, which runs with the same daemon).
for f in "$repo_root"/bench/sections/*.sh; do
    # shellcheck source=/dev/null
    . "$f"
done

# ---------------------------------------------------------------- run the sections
# Each in a subshell with errexit on (not inside an if or || list, where bash
# would turn errexit off) that stops its background processes when it ends; a
# failed section is noted and the next one runs.
if [[ -n ${run_section[memory]:-} && -z ${run_section[daemon]:-} ]] && ((long == 0)); then
    note "memory: needs --long N"
    unset 'run_section[memory]'
fi
for name in "${all_sections[@]}"; do
    [[ -n ${run_section[$name]:-} ]] || continue
    # With the daemon section, the memory run happens inside it (same daemon).
    [[ $name == memory && -n ${run_section[daemon]:-} ]] && continue
    say "section $name"
    t0=$SECONDS
    set +e
    (
        set -e
        trap stop_all EXIT
        case $name in
            micro)   sec_micro ;;
            batch)   sec_batch ;;
            one)     sec_one ;;
            imapsieve) sec_imapsieve ;;
            daemon)  sec_daemon ;;
            memory)  sec_memory ;;
            refresh) sec_refresh ;;
            scale)   sec_scale ;;
            postfix) sec_postfix ;;
            scans)   sec_scans ;;
        esac
    )
    rc=$?
    set -e
    if ((rc != 0)); then
        note "section $name stopped early (status $rc), see the messages above"
        summary "$name" "(section stopped early)" - "status $rc" -
    fi
    say "section $name took $((SECONDS - t0)) s"
done

# ---------------------------------------------------------------- summary
section "summary"
printf '%-11s %-56s %-8s %-40s %s\n' section measure target measured status
table_rule 120
while IFS=$'\t' read -r s m t v st; do
    printf '%-11s %-56s %-8s %-40s %s\n' "$s" "$m" "$t" "$v" "$st"
done <"$tmp/summary"
echo "(only the targets the issue states are checked; '-' = reported, no target. Numbers on a shared"
echo " machine vary run to run: compare ratios from one run rather than absolute rates.)"
((no_postfix)) && echo "postfix: skipped (--no-postfix)"
if [[ -s $tmp/notes ]]; then sed 's/^/note: /' "$tmp/notes"; fi
echo "total run time: $((SECONDS - start_seconds)) s"
exit 0
