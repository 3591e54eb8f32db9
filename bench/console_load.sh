#!/usr/bin/env bash
# What a flood on the web console costs the milter path: mailsiftd under
# mailsift-loadgen (C connections, S seconds), first alone, then with 50
# console clients requesting as fast as the console answers (status polls,
# scans, failed sign-ins: mailsift-console-flood), alternating R times.
# Prints the loadgen line of every run, the CPU the daemon's console thread and
# the rest of the daemon used in it, and the median p99 of each condition.
#
# usage: bench/console_load.sh [--build DIR] [--corpus DIR] [--connections C]
#                              [--seconds S] [--reps R] [--clients N] [--client-nice K]
#                              [--kinds status,scan,history,signin]
#   --corpus  a directory of messages, one per file (default: the SpamAssassin
#             corpus in ../shared/corpus, else tests/data/corpus); the model
#             learns every other one and loadgen replays the rest.
#   --kinds   which requests the console clients make (default all four:
#             status polls, scans, history searches, failed sign-ins), to tell
#             their costs apart.
#   --client-nice  run the console clients (on this same machine) at this
#             nice value, to tell their own CPU use from the console's.
# A benchmark: it prints numbers and fails only when a part does not start.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$repo/bench/lib.sh"  # free_port
build=$repo/build
corpus=""
connections=16 seconds=20 reps=3 clients=50 client_nice=0 kinds=status,scan,history,signin
while [ $# -gt 0 ]; do
    case $1 in
        --build) build=$2; shift 2 ;;
        --corpus) corpus=$2; shift 2 ;;
        --connections) connections=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --clients) clients=$2; shift 2 ;;
        --client-nice) client_nice=$2; shift 2 ;;
        --kinds) kinds=$2; shift 2 ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "console_load.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ -z "$corpus" ]; then
    corpus=$repo/../shared/corpus/spamassassin
    [ -d "$corpus" ] || corpus=$repo/tests/data/corpus
fi
mailsift=$build/src/cli/mailsift
mailsiftd=$build/src/daemon/mailsiftd
loadgen=$build/bench/mailsift-loadgen
flood=$build/bench/mailsift-console-flood
for b in "$mailsift" "$mailsiftd" "$loadgen" "$flood"; do [ -x "$b" ] || { echo "missing $b (build first)" >&2; exit 2; }; done

tmp=$(mktemp -d -t mailsift-console-load.XXXXXX)
dpid=""
cleanup() {
    if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then kill -TERM "$dpid"; wait "$dpid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT

find "$corpus" -type f ! -name index ! -name README ! -name '*.md' | sort >"$tmp/all"
awk 'NR % 2 == 1' "$tmp/all" >"$tmp/train"
awk 'NR % 2 == 0' "$tmp/all" >"$tmp/test"
grep -i spam "$tmp/train" >"$tmp/train.spam" || true
grep -vi spam "$tmp/train" >"$tmp/train.ham" || true
"$mailsift" --db "$tmp/model.db" learn --spam --files-from "$tmp/train.spam" >/dev/null
"$mailsift" --db "$tmp/model.db" learn --ham --files-from "$tmp/train.ham" >/dev/null
milter=$(free_port) console=$(free_port)
cat >"$tmp/mailsift.conf" <<EOF
database = $tmp/model.db
listen = inet:127.0.0.1:$milter
console_listen = 127.0.0.1:$console
console_users = $tmp/users
record_signatures = off
EOF
password="bench-$RANDOM$RANDOM"
printf '%s\n' "$password" | "$mailsift" --config "$tmp/mailsift.conf" console-user add bench --role admin --password-stdin >/dev/null
"$mailsiftd" --foreground --config "$tmp/mailsift.conf" >"$tmp/mailsiftd.log" 2>&1 &
dpid=$!
for _ in $(seq 100); do grep -q "loaded model" "$tmp/mailsiftd.log" && break; sleep 0.2; done
grep -q "loaded model" "$tmp/mailsiftd.log" || { cat "$tmp/mailsiftd.log" >&2; exit 1; }
echo "# $(nproc) cores; corpus $corpus: $(wc -l <"$tmp/train") learned, $(wc -l <"$tmp/test") replayed; loadgen $connections connections, $seconds s a run"

# cpu_ticks: "console REST", the clock ticks the daemon's console thread and
# all its other threads have used so far (utime + stime, /proc/PID/task).
cpu_ticks() {
    local console=0 rest=0 t name ticks
    for t in /proc/"$dpid"/task/*; do
        name=$(cat "$t/comm" 2>/dev/null) || continue
        ticks=$(sed 's/.*) //' "$t/stat" 2>/dev/null | awk '{ print $12 + $13 }') || continue
        if [ "$name" = console ]; then console=$((console + ticks)); else rest=$((rest + ticks)); fi
    done
    echo "$console $rest"
}
hz=$(getconf CLK_TCK)

run() {  # run LABEL: one loadgen run, with or without console clients
    local cpid="" before after
    if [ "$1" = with ]; then
        nice -n "$client_nice" "$flood" "127.0.0.1:$console" bench "$password" \
            "$(sed -n 1p "$tmp/test")" "$clients" "$((seconds + 2))" "$kinds" >"$tmp/clients.out" 2>"$tmp/clients.err" &
        cpid=$!
        for _ in $(seq 100); do grep -q ready "$tmp/clients.err" 2>/dev/null && break; sleep 0.1; done
    fi
    local line
    before=$(cpu_ticks)
    line=$("$loadgen" --connect "127.0.0.1:$milter" --connections "$connections" --duration "$seconds" \
        --files-from "$tmp/test" 2>>"$tmp/loadgen.err" | tail -n 1)
    after=$(cpu_ticks)
    echo "$1 console load: $line"
    awk -v b="$before" -v a="$after" -v hz="$hz" -v s="$seconds" 'BEGIN {
        split(b, x, " "); split(a, y, " ");
        printf "   daemon CPU: console thread %.2f s, the rest %.2f s, in %s s\n", (y[1] - x[1]) / hz, (y[2] - x[2]) / hz, s }'
    echo "$1 $(sed -n 's/.* p99 \([0-9.]*\).*/\1/p' <<<"$line")" >>"$tmp/p99"
    if [ -n "$cpid" ]; then wait "$cpid" || true; echo "   $(cat "$tmp/clients.out")"; fi
}
for _ in $(seq "$reps"); do run without; run with; done
for c in without with; do
    printf '%-8s console load: median milter p99 %s ms over %s runs\n' "$c" \
        "$(awk -v c="$c" '$1 == c { print $2 }' "$tmp/p99" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')" "$reps"
done
