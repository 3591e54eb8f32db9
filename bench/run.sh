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
#                  daemon, memory, refresh, scale, postfix, scans
#   --long N       also run the memory section: N messages over 16 connections
#                  against one daemon, sampling its VmRSS (off by default;
#                  1000000 takes about two minutes)
#   --long-connections C   the memory section's connections (default 16;
#                  512 is issue 7's load test)
#   --corpus DIR   the SpamAssassin corpus (default ../shared/corpus/spamassassin,
#                  relative to the repository root)
#   --no-postfix   skip the two sections that need Postfix (postfix, scans)
#
# Sections: micro (mailsift-bench-micro), batch (speed.sh),
# daemon (mailsiftd under mailsift-loadgen at 1/16/128/512 connections), memory
# (--long), refresh (latency while the daemon reloads a large model), scale
# (mailsift-bench-scale), postfix (postfix_throughput.sh), scans (scan_size.sh).
# See bench/README.md.
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
all_sections=(micro batch daemon memory refresh scale postfix scans)
quick=0 long=0 long_connections=16 no_postfix=0 only=

# The performance targets (docs/performance.md). Rows without one are reported
# as measured ("-" in the target column).
target_postfix_ratio=0.90     # delivered msg/s with mailsiftd >= 0.90 x without
target_refresh_ratio=2.0      # no interval p99 during a reload above 2 x the run's p99
target_classify_ratio=5       # batch classify msgs/s >= 5 x bogofilter's, same run
target_learn_ratio=3          # batch learn msgs/s >= 3 x bogofilter's, same run
target_daemon_rate=5000       # msgs/s at 16 connections ...
target_daemon_p99=5           # ... with p99 <= 5 ms
target_scale_ratio=2          # classifying with 10^7 features within 2 x of 10^5
target_scan_bytes=1024        # a recorded scan on disk, indexes included, SpamAssassin through Postfix

# "met" or "not met" for the leading number of VALUE against TARGET; "-" when there is none.
at_least() { awk -v v="$1" -v t="$2" 'BEGIN { if (v !~ /^[0-9.]/) print "-"; else print (v + 0 >= t) ? "met" : "not met" }'; }
at_most() { awk -v v="$1" -v t="$2" 'BEGIN { if (v !~ /^[0-9.]/) print "-"; else print (v + 0 <= t) ? "met" : "not met" }'; }

usage() { sed -n '2,25s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
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

# ours PID: the PID is still a process this run started (its command line
# names our work directory: the daemon's --db, loadgen's --files-from), so that a
# PID the system has since reused for someone else's process is never signalled.
ours() {
    local cmd
    cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline") || return 1
    [[ $cmd == *"$tmp/"* ]]
}
# stop_pid PID: TERM, up to 40 s (mailsiftd drains for at most 30 s), then KILL.
stop_pid() {
    local pid=$1 i
    ours "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 400; i++)); do
        ours "$pid" || return 0      # gone (or a zombie, whose command line is empty)
        sleep 0.1
    done
    ours "$pid" && kill -KILL "$pid" 2>/dev/null
    return 0
}
# shellcheck disable=SC2317  # (called from the EXIT traps)
stop_all() {
    local pid
    while read -r pid; do [[ -n $pid ]] && stop_pid "$pid"; done <"$tmp/pids"
    return 0
}
# shellcheck disable=SC2317  # (the EXIT trap)
cleanup() {
    set +e
    stop_all
    wait 2>/dev/null
    rm -rf "$tmp"
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
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
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

# ---------------------------------------------------------------- a. micro
sec_micro() {
    section "micro: one message through each stage (mailsift-bench-micro, ${micro_args[*]})"
    if [[ ! -x $micro ]]; then
        echo "skipped: $micro is not built (needs Google Benchmark: scripts/deps.sh --bench, then rebuild)"
        summary micro "full/p50 us per message" - "not built" -
        return 0
    fi
    "$micro" --corpus "$corpus" --benchmark_format=csv "${micro_args[@]}" >"$tmp/micro.csv" 2>"$tmp/micro.err" ||
        { tail -n 5 "$tmp/micro.err" >&2; return 1; }
    # Per benchmark: the repetitions' rows (not the _mean/_median/... aggregates).
    # Fields: name, CPU ns per message, bytes/s, items/s, features, message bytes.
    awk -F, 'NR > 1 { n = $1; gsub(/"/, "", n)
                 if (n ~ /_(mean|median|stddev|cv)$/) next
                 f = ($5 == "us") ? 1e3 : ($5 == "ms") ? 1e6 : ($5 == "s") ? 1e9 : 1
                 print n, $4 * f, $6, $7, $(NF - 1), $NF }' "$tmp/micro.csv" >"$tmp/micro.rows"
    printf '%-22s %9s %9s  %-24s %12s %12s\n' benchmark bytes features "us/msg median (min-max)" "MiB/s" "msgs/s"
    table_rule 94
    local name us m lo hi
    while read -r name; do
        read -r m lo hi < <(awk -v n="$name" '$1 == n { print $2 / 1000 }' "$tmp/micro.rows" | stats)
        us=$(fmt_range '%.2f' "$m" "$lo" "$hi")
        awk -v n="$name" -v us="$us" '$1 == n { c++; b += $3; it += $4; f = $5; s = $6 }
            END { printf "%-22s %9d %9d  %-24s %12.1f %12.0f\n", n, s, f, us, b / c / 1048576, it / c }' "$tmp/micro.rows"
        if [[ $name == full/p50* ]]; then summary micro "one median message, parse+extract+score, us" - "$us" -; fi
    done < <(awk '!seen[$1]++ { print $1 }' "$tmp/micro.rows")
    echo "(CPU time per message; MiB/s and msgs/s: means over the repetitions; the messages are the corpus"
    echo " files at the 10th, 50th and 99th size percentile, size in the name; stages: see bench/README.md)"
}

# ---------------------------------------------------------------- b. batch
sec_batch() {
    section "batch: learn and classify the whole corpus, mailsift vs bogofilter (speed.sh)"
    if ! command -v bogofilter >/dev/null || [[ ! -x /usr/bin/time ]]; then
        echo "skipped: bogofilter or /usr/bin/time is missing (scripts/deps.sh --bench installs them)"
        summary batch "learn / classify msgs/s ratio" - "skipped" -
        return 0
    fi
    "$repo_root/bench/speed.sh" --mailsift "$mailsift" --corpus "$corpus" \
        >"$tmp/batch.out" 2>"$tmp/batch.err" || { cat "$tmp/batch.out"; tail -n 5 "$tmp/batch.err" >&2; return 1; }
    # Its table and notes, without its header lines (machine, versions: printed above).
    sed -n '/^| whole corpus/,/^total runtime/p' "$tmp/batch.out"
    local learn classify
    # Markdown rows: | LABEL | MAILSIFT | BOGOFILTER | RATIO |
    learn=$(awk -F' *[|] *' '$2 == "learn: msgs/s" { print $3 " vs " $4 " msgs/s, ratio " $5 }' "$tmp/batch.out")
    classify=$(awk -F' *[|] *' '$2 == "classify: msgs/s" { print $3 " vs " $4 " msgs/s, ratio " $5 }' "$tmp/batch.out")
    summary batch "learn corpus, mailsift vs bogofilter" ">= ${target_learn_ratio}x" "${learn:-n/a}" \
        "$(at_least "${learn##*ratio }" "$target_learn_ratio")"
    summary batch "classify corpus, mailsift vs bogofilter" ">= ${target_classify_ratio}x" "${classify:-n/a}" \
        "$(at_least "${classify##*ratio }" "$target_classify_ratio")"
}

# ---------------------------------------------------------------- c. daemon (and d. memory)
# The daemon database: the training part of the development split.
daemon_db() {
    [[ -f $tmp/daemon.db ]] && return 0
    say "training the daemon's model on $n_train messages (held out: $n_test)"
    ms_learn "$tmp/daemon.db" "$tmp/train"
}

sec_daemon() {
    section "daemon: mailsiftd under mailsift-loadgen, $n_test held-out messages replayed, ${daemon_seconds} s per run, $daemon_reps run(s) per row"
    daemon_db
    start_daemon daemon "$tmp/daemon.db"
    lg --connections 16 --duration 1 >/dev/null     # warm-up, not reported
    local c r line c0 c1 m lo hi
    for c in "${daemon_connections[@]}"; do
        : >"$tmp/daemon.$c"
        for ((r = 1; r <= daemon_reps; r++)); do
            c0=$(cpu_ticks "$DPID")
            line=$(lg --connections "$c" --duration "$daemon_seconds")
            c1=$(cpu_ticks "$DPID")
            say "  $line"
            # msgs/s p50 p90 p99 max errors daemon-CPU-ms-per-message
            echo "$(kv "$line" msgs/s) $(kv "$line" p50) $(kv "$line" p90) $(kv "$line" p99) $(kv "$line" max)" \
                "$(kv "$line" errors)" \
                "$(awk -v d=$((c1 - c0)) -v hz="$clk_tck" -v n="$(kv "$line" messages)" 'BEGIN { printf "%.3f", n ? 1000 * d / hz / n : 0 }')" \
                >>"$tmp/daemon.$c"
        done
    done
    printf '%-11s %-20s %-22s %-22s %-22s %-22s %6s %9s\n' connections "msgs/s" "p50 ms" "p90 ms" "p99 ms" "max ms" errors "CPU ms/msg"
    table_rule 143
    local col fmt cells errors cpu
    for c in "${daemon_connections[@]}"; do
        cells=()
        for col in 1 2 3 4 5; do
            fmt='%.3f'; ((col == 1)) && fmt='%.0f'
            read -r m lo hi < <(cut -d' ' -f"$col" "$tmp/daemon.$c" | stats)
            cells+=("$(fmt_range "$fmt" "$m" "$lo" "$hi")")
        done
        errors=$(awk '{ s += $6 } END { print s + 0 }' "$tmp/daemon.$c")
        cpu=$(cut -d' ' -f7 "$tmp/daemon.$c" | stats | cut -d' ' -f1)
        printf '%-11s %-20s %-22s %-22s %-22s %-22s %6s %9s\n' "$c" "${cells[@]}" "$errors" "$cpu"
        if ((c == 16)); then
            summary daemon "$c connections: msgs/s" ">= $target_daemon_rate" "${cells[0]}" \
                "$(at_least "${cells[0]}" "$target_daemon_rate")"
            summary daemon "$c connections: p99 ms" "<= $target_daemon_p99" "${cells[3]}" \
                "$(at_most "${cells[3]}" "$target_daemon_p99")"
        elif ((c == 512)); then
            summary daemon "$c connections: msgs/s" - "${cells[0]}" -
            summary daemon "$c connections: p99 ms" - "${cells[3]}" -
        fi
    done
    echo "(median of the runs, (min-max) when they differ; latency from end of body to the final reply;"
    echo " CPU ms/msg: mailsiftd's user+sys CPU per message; model: $(grep -m1 'loaded model' "$DLOG" | sed 's/.*: //'))"
    if [[ -s $tmp/loadgen.err ]]; then say "loadgen said: $(awk '!seen[$0]++ && n++ < 3' "$tmp/loadgen.err" | tr '\n' ' ')"; fi

    if [[ -n ${run_section[memory]:-} ]]; then
        if ((long > 0)); then sec_memory; else echo "(memory: skipped, it needs --long N)"; fi
    fi
    stop_pid "$DPID"
}

# d. memory over a long run against the daemon of sec_daemon (or its own).
sec_memory() {
    section "memory: $long messages over $long_connections connections, mailsiftd VmRSS every $rss_every s"
    if [[ -z ${DPID:-} ]] || ! kill -0 "$DPID" 2>/dev/null; then
        daemon_db
        start_daemon memory "$tmp/daemon.db"
    fi
    local before lgpid t0 now line samples first_t first max max_t last_t last warm first_label
    local dropped0 messages0 dropped1 messages1 sent i
    before=$(rss_kib "$DPID")
    # The daemon's counters as mailsift stats shows them (written every stats_interval).
    dropped0=$(ms_counter "$tmp/daemon.db" scans_dropped) messages0=$(ms_counter "$tmp/daemon.db" messages)
    : >"$tmp/rss"
    "$loadgen" --connect "127.0.0.1:$DPORT" --files-from "$tmp/test.list" --connections "$long_connections" \
        --messages "$long" >"$tmp/long.out" 2>"$tmp/long.err" &
    lgpid=$!
    echo "$lgpid" >>"$tmp/pids"
    t0=$EPOCHREALTIME
    while kill -0 "$lgpid" 2>/dev/null; do
        now=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
        echo "$now $(rss_kib "$DPID")" >>"$tmp/rss"
        sleep "$rss_every"
    done
    wait "$lgpid" || true
    sleep 1
    line=$(grep '^connections' "$tmp/long.out" || echo "no summary line")
    # Until the recorder has written the run's counters (stats_interval, 5 s), at most 30 s.
    sent=$(kv "$line" messages); [[ $sent =~ ^[0-9]+$ ]] || sent=0
    for ((i = 0; i < 60; i++)); do
        messages1=$(ms_counter "$tmp/daemon.db" messages)
        ((messages1 - messages0 >= sent)) && break
        sleep 0.5
    done
    dropped1=$(ms_counter "$tmp/daemon.db" scans_dropped)
    samples=$(wc -l <"$tmp/rss")
    # first sample after the warm-up (or the first when the run was shorter), max, last
    read -r first_t first max max_t last_t last warm < <(awk -v w="$warmup_seconds" '
        NR == 1 { f0 = $2; ft0 = $1 }
        $1 >= w && !have { f = $2; ft = $1; have = 1 }
        $2 > m { m = $2; mt = $1 }
        { l = $2; lt = $1 }
        END { if (!have) { f = f0; ft = ft0 } print ft, f, m, mt, lt, l, have + 0 }' "$tmp/rss")
    printf '%-44s %s\n' "messages, errors, seconds" "$(kv "$line" messages), $(kv "$line" errors), $(kv "$line" seconds)"
    printf '%-44s %s\n' "msgs/s, latency p50 / p99 / max ms" "$(kv "$line" msgs/s), $(kv "$line" p50) / $(kv "$line" p99) / $(kv "$line" max)"
    printf '%-44s %s\n' "VmRSS before the run" "$(mib "$before") MiB"
    first_label="VmRSS first sample after ${warmup_seconds} s warm-up"
    ((warm)) || first_label="VmRSS first sample (run shorter than ${warmup_seconds} s)"
    printf '%-44s %s\n' "$first_label" "$(mib "$first") MiB (at ${first_t} s)"
    printf '%-44s %s\n' "VmRSS max" "$(mib "$max") MiB (at ${max_t} s)"
    printf '%-44s %s\n' "VmRSS last sample" "$(mib "$last") MiB (at ${last_t} s; $samples samples)"
    printf '%-44s %s\n' "VmRSS 1 s after the run, VmHWM" "$(mib "$(rss_kib "$DPID")") MiB, $(mib "$(hwm_kib "$DPID")") MiB"
    printf '%-44s %s\n' "VmRSS max per tenth of the run, MiB" "$(awk '
        { t[NR] = $1; r[NR] = $2 } END {
            if (NR == 0) exit; span = t[NR] > 0 ? t[NR] : 1
            for (i = 1; i <= NR; i++) { b = int(10 * t[i] / span); if (b > 9) b = 9; if (r[i] > m[b]) m[b] = r[i] }
            for (b = 0; b < 10; b++) printf "%s%s", (b ? " " : ""), (b in m) ? int(m[b] / 1024) : "-"
        }' "$tmp/rss")"
    printf '%-44s %s\n' "growth last - first after warm-up" "$(awk -v a="$first" -v b="$last" 'BEGIN { printf "%+.1f MiB (%+.1f%%)", (b - a) / 1024, a ? 100 * (b - a) / a : 0 }')"
    printf '%-44s %s\n' "loadgen errors" "$(kv "$line" errors)$( [[ -s $tmp/long.err ]] && printf ' (%s)' "$(head -n 1 "$tmp/long.err")")"
    printf '%-44s %s\n' "mailsiftd warnings/errors in its log" "$(grep -c '^<[34]>' "$DLOG" || true)"
    printf '%-44s %s\n' "scans dropped (mailsift stats)" \
        "$((dropped1 - dropped0)) (messages counted meanwhile: $((messages1 - messages0)))"
    summary memory "VmRSS first after warm-up -> max -> last, MiB" - "$(mib "$first") -> $(mib "$max") -> $(mib "$last")" -
    summary memory "scans dropped, $long_connections connections" 0 "$((dropped1 - dropped0))" \
        "$(at_most "$((dropped1 - dropped0))" 0)"
    summary memory "loadgen errors over $long messages" - "$(kv "$line" errors)" -
}

# ---------------------------------------------------------------- e. refresh under load
sec_refresh() {
    local n=$refresh_features
    section "refresh: p99 per ${refresh_interval} s while mailsiftd reloads a model of ~$n features ($refresh_connections connections)"
    # A synthetic export (mailsift(1), FORMAT): N features with random ids, in
    # ascending id order as SQLite stores them, small counts, each seen in one
    # class (no learned messages). Then the corpus training part
    # is learned on top, so the real features score as usual.
    say "generating and importing $n synthetic features"
    awk -v n="$n" -v now="$(date +%s)" 'BEGIN {
        srand(20240601); OFS = "\t"
        print "mailsift-model", 1
        for (k = 0; k < n; k++) {
            hi = (2147483648 + int(k * 4294967296 / n)) % 4294967296   # ascending as signed 64-bit
            lo = int(rand() * 4294967296)
            c = 1 + int(rand() * rand() * 4)
            spam = (rand() < 0.5)
            if (spam) { so += c; sp++ } else { ho += c; hp++ }
            printf "feature\t%08x%08x\t%d\t%d\t%d\t%d\t%d\tw:synthetic%d\n", hi, lo, spam ? c : 0, spam ? 0 : c, spam, 1 - spam, now, k
        }
        print "class", "spam", 0, so + 0, sp + 0
        print "class", "ham", 0, ho + 0, hp + 0
        print "end", n, 0, 0
    }' >"$tmp/synthetic.export"
    local db=$tmp/refresh.db t
    t=$SECONDS
    "$mailsift" --config "$tmp/empty.conf" --db "$db" import "$tmp/synthetic.export" >>"$tmp/learn.log" 2>&1 ||
        { tail -n 3 "$tmp/learn.log" >&2; return 1; }
    rm -f "$tmp/synthetic.export"
    ms_learn "$db" "$tmp/train"
    say "model ready in $((SECONDS - t)) s ($(du -m "$db" | cut -f1) MiB on disk)"

    start_daemon refresh "$db"
    local load=$DLOAD rss_loaded hwm_loaded
    rss_loaded=$(rss_kib "$DPID")
    hwm_loaded=$(hwm_kib "$DPID")
    lg --connections "$refresh_connections" --duration 1 >/dev/null    # warm-up
    # Long enough for the learn, a reload that takes up to four times the idle
    # load time under load (the refresher shares 2 CPUs with the scoring threads
    # and the load generator), and some intervals after it.
    local duration
    duration=$(awk -v l="$load" -v a="$refresh_learn_at" -v m="$refresh_min_seconds" 'BEGIN {
        r = 4 * l; if (r < 10) r = 10; d = a + r + 10; if (d < m) d = m; printf "%d", d + 0.999 }')
    say "loadgen for $duration s, learning $(wc -l <"$tmp/refresh.ham") held-out ham at ${refresh_learn_at} s"
    local offset lgpid t_start t_learn0 t_learn1 t_reload='' hwm_peak
    offset=$(stat -c %s "$DLOG")
    "$loadgen" --connect "127.0.0.1:$DPORT" --files-from "$tmp/test.list" --connections "$refresh_connections" \
        --duration "$duration" --interval "$refresh_interval" >"$tmp/refresh.out" 2>"$tmp/refresh.err" &
    lgpid=$!
    echo "$lgpid" >>"$tmp/pids"
    t_start=$EPOCHREALTIME
    sleep "$refresh_learn_at"
    t_learn0=$EPOCHREALTIME
    "$mailsift" --config "$tmp/empty.conf" --db "$db" learn --ham --files-from "$tmp/refresh.ham" >>"$tmp/learn.log" 2>&1 ||
        say "warning: mailsift learn of the refresh batch exited with $?"
    t_learn1=$EPOCHREALTIME
    # Wait for the daemon's "reloaded model" line (only the log written since
    # the learn started is read each time).
    local size
    while kill -0 "$lgpid" 2>/dev/null; do
        size=$(stat -c %s "$DLOG")
        # (no grep -q: under pipefail, tail's SIGPIPE would count as a failure)
        if tail -c +$((offset + 1)) "$DLOG" | grep 'reloaded model' >/dev/null; then t_reload=$EPOCHREALTIME; break; fi
        offset=$((size > offset + 200 ? size - 200 : offset))   # overlap: a line may be half written
        sleep 0.1
    done
    wait "$lgpid" || true
    hwm_peak=$(hwm_kib "$DPID")

    local line w0 w1 learn_s reload_s
    line=$(grep '^connections' "$tmp/refresh.out" || echo "no summary line")
    w0=$(seconds_between "$t_start" "$t_learn0")
    learn_s=$(seconds_between "$t_learn0" "$t_learn1")
    if [[ -n $t_reload ]]; then
        w1=$(seconds_between "$t_start" "$t_reload")
        reload_s=$(seconds_between "$t_learn1" "$t_reload")
    else
        w1=$duration reload_s="not seen during the run"
    fi
    # Interval lines overlapping the window [learn start, reload logged]: the
    # line at elapsed E covers (E - interval, E].
    local overall_p99 in_max in_at out_max rate_in rate_out ratio status
    overall_p99=$(kv "$line" p99)
    # Interval line: interval elapsed E messages N msgs/s R latency ms p50 A p99 B max C
    # ($3 = E, $5 = N, $7 = R, $13 = B); intervals without messages have no p99.
    # Outside the window: the highest interval p99, and the medians of the
    # intervals' p99 and msgs/s (the baseline without a reload).
    read -r in_max in_at out_max out_p99 rate_in rate_out < <(awk -v w0="$w0" -v w1="$w1" -v iv="$refresh_interval" '
        function median(v, n,   i, j, t) {
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
            return n ? v[int((n + 1) / 2)] : 0
        }
        $1 != "interval" { next }
        $3 > w0 && $3 - iv < w1 + 0.1 {            # overlaps the window
            if (!nin++ || $7 < ri) ri = $7
            if ($5 > 0 && $13 + 0 > im) { im = $13 + 0; at = $3 }
            next
        }
        { ro[++n] = $7 + 0; if ($5 > 0) { po[++np] = $13 + 0; if ($13 + 0 > om) om = $13 + 0 } }
        END { print im + 0, at + 0, om + 0, median(po, np), ri + 0, median(ro, n) }' "$tmp/refresh.out")
    ratio=$(awk -v a="$in_max" -v b="$overall_p99" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }')
    status=$(awk -v r="$ratio" -v t="$target_refresh_ratio" 'BEGIN { print (r <= t) ? "met" : "not met" }')

    printf '%-52s %s\n' "model" "$(grep -m1 'loaded model' "$DLOG" | sed 's/.*: //')"
    printf '%-52s %s\n' "initial load, idle (start -> 'loaded model')" "$load s; VmRSS $(mib "$rss_loaded") MiB, VmHWM $(mib "$hwm_loaded") MiB"
    printf '%-52s %s\n' "run: messages, errors, msgs/s" "$(kv "$line" messages), $(kv "$line" errors), $(kv "$line" msgs/s) over $(kv "$line" seconds) s"
    printf '%-52s %s\n' "learn of $(wc -l <"$tmp/refresh.ham") held-out ham during the run" "at ${w0} s, took $learn_s s"
    printf '%-52s %s\n' "reload: learn end -> 'reloaded model' in the log" "$reload_s s (includes up to refresh_interval, 1 s)"
    printf '%-52s %s\n' "reload itself, as the daemon logs it" "$(grep 'reloaded model' "$DLOG" | tail -n 1 | sed -n 's/.* in \([0-9]*\) ms$/\1 ms/p')"
    printf '%-52s %s\n' "refresh window (learn start -> reload logged)" "${w0} s -> ${w1} s"
    printf '%-52s %s\n' "overall p50 / p99 / max ms" "$(kv "$line" p50) / $overall_p99 / $(kv "$line" max)"
    printf '%-52s %s\n' "max interval p99 in the window, ms" "$in_max (interval ending at $in_at s)"
    printf '%-52s %s\n' "interval p99 outside the window: median, max, ms" "$out_p99, $out_max"
    printf '%-52s %s\n' "ratio: max window p99 / overall p99" "$ratio (target <= $target_refresh_ratio: $status)"
    printf '%-52s %s\n' "ratio: max window p99 / median outside p99" "$(awk -v a="$in_max" -v b="$out_p99" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }')"
    printf '%-52s %s\n' "msgs/s per interval: lowest in window, median outside" "$rate_in, $rate_out"
    printf '%-52s %s\n' "VmHWM after the run (old + new model at once)" "$(mib "$hwm_peak") MiB"
    echo "intervals around the start and the end of the window (elapsed = end of the interval; * = in the window):"
    awk -v w0="$w0" -v w1="$w1" -v iv="$refresh_interval" '
        function show(   mark) {
            mark = ($3 > w0 && $3 - iv < w1 + 0.1) ? "*" : " "
            printf "  %s %7s s %7s msgs %8s msgs/s   p50 %8s  p99 %8s  max %8s ms\n", mark, $3, $5, $7, $11, $13, $15
        }
        function flush() {
            if (skipped) printf "  * ... %d intervals: p99 %s to %s ms, msgs/s %s to %s ...\n", skipped, lo, hi, rlo, rhi
            skipped = 0; lo = hi = ""
        }
        $1 != "interval" { next }
        ($3 > w0 - 2 && $3 < w0 + 3) || ($3 > w1 - 2 && $3 - iv < w1 + 2) { flush(); show(); next }
        $3 >= w0 + 3 && $3 <= w1 - 2 {              # the middle of the window, summarised
            if (!skipped++) { rlo = rhi = $7 }
            if ($7 + 0 < rlo + 0) rlo = $7; if ($7 + 0 > rhi + 0) rhi = $7
            if ($5 > 0) {                           # (an empty interval has no p99)
                if (lo == "" || $13 + 0 < lo + 0) lo = $13
                if (hi == "" || $13 + 0 > hi + 0) hi = $13
            }
        }
        END { flush() }' "$tmp/refresh.out"
    summary refresh "max interval p99 during reload / overall p99" "<= $target_refresh_ratio" "$ratio ($in_max / $overall_p99 ms)" "$status"
    summary refresh "reload, $(awk -v n="$n" 'BEGIN { l = log(n) / log(10); k = int(l + 0.5); print (k >= 1 && l - k < 1e-9 && k - l < 1e-9) ? "10^" k : n }') features: learn end -> logged" - "$reload_s s (idle load $load s)" -
    stop_pid "$DPID"
}

# ---------------------------------------------------------------- f. scale
sec_scale() {
    section "scale: model size and message size (mailsift-bench-scale; ~12 s, peaks near 1 GB)"
    "$scale" --corpus "$corpus" >"$tmp/scale.out" 2>"$tmp/scale.err" || { cat "$tmp/scale.out"; tail -n 5 "$tmp/scale.err" >&2; return 1; }
    cat "$tmp/scale.out"
    local r
    r=$(sed -n 's/.*10^7 vs 10^5 features: //p' "$tmp/scale.out")
    local mean_ratio=${r#mean }
    mean_ratio=${mean_ratio%%x*}
    summary scale "classify a message, 10^7 vs 10^5 features" "<= ${target_scale_ratio}x" "${r:-n/a}" \
        "$(at_most "$mean_ratio" "$target_scale_ratio")"
}

# ---------------------------------------------------------------- g. postfix
sec_postfix() {
    section "postfix: end-to-end SMTP through a private Postfix, without and with mailsiftd (postfix_throughput.sh ${postfix_args[*]})"
    export PATH="$PATH:/usr/sbin:/sbin"
    if [[ $(id -u) -ne 0 ]] || ! command -v postfix >/dev/null || ! command -v smtp-source >/dev/null; then
        echo "skipped: needs root and Postfix with smtp-source installed (scripts/deps.sh --test)"
        summary postfix "delivered msg/s with / without mailsiftd" ">= $target_postfix_ratio" "skipped" -
        return 0
    fi
    local rc=0
    "$repo_root/bench/postfix_throughput.sh" "${postfix_args[@]}" --corpus "$corpus" \
        --mailsiftd "$mailsiftd" --mailsift "$mailsift" >"$tmp/postfix.out" 2>"$tmp/postfix.err" || rc=$?
    sed -n '/^mailsift: end-to-end/,$p' "$tmp/postfix.out"
    if ((rc != 0)); then
        echo "postfix_throughput.sh exited with $rc; its last messages:"
        tail -n 8 "$tmp/postfix.err"
        summary postfix "delivered msg/s with / without mailsiftd" ">= $target_postfix_ratio" "failed (status $rc)" -
        return 0
    fi
    local ratio status
    ratio=$(awk '/^delivered to sink/ { print $NF }' "$tmp/postfix.out")
    status=$(awk -v r="${ratio:-0}" -v t="$target_postfix_ratio" 'BEGIN { print (r >= t) ? "met" : "not met" }')
    summary postfix "delivered msg/s with / without mailsiftd" ">= $target_postfix_ratio" "${ratio:-n/a}" "$status"
}

# ---------------------------------------------------------------- h. scans
sec_scans() {
    section "scans: bytes per recorded scan on disk, the corpus sent through Postfix and mailsiftd (scan_size.sh)"
    export PATH="$PATH:/usr/sbin:/sbin"
    if [[ $(id -u) -ne 0 ]] || ! command -v postfix >/dev/null; then
        echo "skipped: needs root and Postfix (scripts/deps.sh --test)"
        summary scans "bytes per recorded scan" "<= $target_scan_bytes" "skipped" -
        return 0
    fi
    local rc=0
    "$repo_root/bench/scan_size.sh" --corpus "$corpus" --mailsiftd "$mailsiftd" --mailsift "$mailsift" \
        >"$tmp/scans.out" 2>"$tmp/scans.err" || rc=$?
    cat "$tmp/scans.out"
    if ((rc != 0)); then
        echo "scan_size.sh exited with $rc; its last messages:"
        tail -n 8 "$tmp/scans.err"
        summary scans "bytes per recorded scan" "<= $target_scan_bytes" "failed (status $rc)" -
        return 0
    fi
    local bytes
    bytes=$(awk -F': *' '/^bytes per scan/ { gsub(/,/, "", $2); print $2 + 0 }' "$tmp/scans.out")
    summary scans "bytes per recorded scan" "<= $target_scan_bytes" "${bytes:-n/a}" "$(at_most "${bytes:-x}" "$target_scan_bytes")"
}

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
printf '%-8s %-48s %-8s %-48s %s\n' section measure target measured status
table_rule 120
while IFS=$'\t' read -r s m t v st; do
    printf '%-8s %-48s %-8s %-48s %s\n' "$s" "$m" "$t" "$v" "$st"
done <"$tmp/summary"
echo "(only the targets the issue states are checked; '-' = reported, no target. Numbers on a shared"
echo " machine vary run to run: compare ratios from one run rather than absolute rates.)"
((no_postfix)) && echo "postfix: skipped (--no-postfix)"
if [[ -s $tmp/notes ]]; then sed 's/^/note: /' "$tmp/notes"; fi
echo "total run time: $((SECONDS - start_seconds)) s"
exit 0
