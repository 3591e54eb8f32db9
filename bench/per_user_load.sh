#!/usr/bin/env bash
# per_user_load.sh - what per_user costs mailsiftd (issue 44, item 5): its
# throughput and memory with per_user = recipient against per_user = off, the
# same model, the same messages, each message to one of N distinct recipients.
# A benchmark, not a test: it prints a table and exits 0 whenever it ran.
#
# usage: bench/per_user_load.sh [--users N] [--seconds S] [--reps R]
#            [--connections "16 512"] [--corpus DIR] [--db FILE] [--keep]
#            [--mailsiftd PATH] [--mailsift PATH] [--loadgen PATH]
#
#   --users N        distinct recipients, one per message in turn (default 10000)
#   --seconds S      each run's length (default 5)
#   --reps R         runs per row, alternating off and recipient (default 3)
#   --connections L  the milter connections of each row (default "16 512")
#   --corpus DIR     SpamAssassin corpus: its spam and easy_ham are learned
#                    (without --db) and replayed (default ../shared/corpus/spamassassin)
#   --db FILE        a trained model to copy instead of learning one
#   --keep           keep the work directory
#
# How: two mailsiftd, one per setting, on copies of one model, both running
# while the runs alternate between them (off, recipient, recipient, off, ...).
# mailsift-loadgen --recipients N replays the corpus; msgs/s is its figure, RSS
# the daemon's VmHWM (peak resident set) after all its runs. A user's layer is
# hashed into the linear scorer's fixed table, so no number of users or of
# their corrections changes what the daemon holds; the corrections' undo
# records, on disk, are stated in docs/performance.md.
set -Eeuo pipefail
export LC_ALL=C

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
users=10000 seconds=5 reps=3 connections="16 512" keep=0 db=''
corpus=$repo/../shared/corpus/spamassassin
mailsift=$repo/build/src/cli/mailsift
mailsiftd=$repo/build/src/daemon/mailsiftd
loadgen=$repo/build/bench/mailsift-loadgen
die() { echo "per_user_load.sh: $*" >&2; exit 1; }
say() { echo "# $*" >&2; }
while (($#)); do
    case $1 in
        --users) users=$2; shift ;;
        --seconds) seconds=$2; shift ;;
        --reps) reps=$2; shift ;;
        --connections) connections=$2; shift ;;
        --corpus) corpus=$2; shift ;;
        --db) db=$2; shift ;;
        --keep) keep=1 ;;
        --mailsiftd) mailsiftd=$2; shift ;;
        --mailsift) mailsift=$2; shift ;;
        --loadgen) loadgen=$2; shift ;;
        -h | --help) sed -n '2,/^set -E/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
[[ $users =~ ^[1-9][0-9]*$ ]] || die "--users: a whole number above 0"
for b in "$mailsift" "$mailsiftd" "$loadgen"; do [[ -x $b ]] || die "$b: not built"; done
[[ -d $corpus/spam && -d $corpus/easy_ham ]] || die "$corpus: no spam/ and easy_ham/ there"

work=$(mktemp -d /tmp/mailsift-per-user-load.XXXXXX)
# shellcheck source=lib.sh
. "$repo/bench/lib.sh"
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do stop_pid "$p" 10 "$work"; done
    ((keep)) && say "kept $work" || rm -rf "$work"
}
trap cleanup EXIT

find "$corpus/spam" "$corpus/easy_ham" -type f ! -name cmds | sort >"$work/messages"
if [[ -n $db ]]; then
    cp "$db" "$work/model.db"
else
    say "learning $(wc -l <"$work/messages") messages of $corpus"
    "$mailsift" --config /dev/null --db "$work/model.db" learn --spam "$corpus/spam" >"$work/learn.log" 2>&1
    "$mailsift" --config /dev/null --db "$work/model.db" learn --ham "$corpus/easy_ham" >>"$work/learn.log" 2>&1
fi

declare -A port pid
for mode in off recipient; do
    cp "$work/model.db" "$work/$mode.db"
    printf 'per_user = %s\nhistory = off\n' "$mode" >"$work/$mode.conf"
    port[$mode]=$(free_port)
    "$mailsiftd" --foreground --config "$work/$mode.conf" --db "$work/$mode.db" \
        --listen "inet:127.0.0.1:${port[$mode]}" >"$work/$mode.log" 2>&1 &
    pid[$mode]=$!
    pids+=("${pid[$mode]}")
    wait_for 60 port_open "${port[$mode]}" || die "mailsiftd ($mode) did not listen (see $work/$mode.log)"
    wait_for 60 grep -q 'loaded model' "$work/$mode.log" || die "mailsiftd ($mode) did not load its model"
    "$loadgen" --connect "127.0.0.1:${port[$mode]}" --files-from "$work/messages" --connections 16 --duration 1 \
        --recipients "$users" >/dev/null 2>>"$work/loadgen.err" || true   # warm-up
done

kv() { awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' <<<"$1"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
say "users $users, runs of $seconds s, $reps per row"
printf '%-11s %-12s %-12s %-9s %s\n' connections "off msgs/s" "recipient" ratio "errors (off/recipient)"
for c in $connections; do
    : >"$work/off.$c"
    : >"$work/recipient.$c"
    for ((r = 1; r <= reps; r++)); do
        order=(off recipient)
        ((r % 2 == 0)) && order=(recipient off)
        for mode in "${order[@]}"; do
            line=$("$loadgen" --connect "127.0.0.1:${port[$mode]}" --files-from "$work/messages" --connections "$c" \
                --duration "$seconds" --recipients "$users" 2>>"$work/loadgen.err" || true)
            echo "$(kv "$line" msgs/s) $(kv "$line" errors)" >>"$work/$mode.$c"
        done
    done
    off=$(cut -d' ' -f1 "$work/off.$c" | median)
    rcpt=$(cut -d' ' -f1 "$work/recipient.$c" | median)
    printf '%-11s %-12s %-12s %-9s %s/%s\n' "$c" "$off" "$rcpt" \
        "$(awk -v a="$rcpt" -v b="$off" 'BEGIN { printf "%.3f", b ? a / b : 0 }')" \
        "$(awk '{ s += $2 } END { print s + 0 }' "$work/off.$c")" "$(awk '{ s += $2 } END { print s + 0 }' "$work/recipient.$c")"
done
for mode in off recipient; do
    printf 'mailsiftd per_user = %-9s peak RSS %s kB, now %s kB\n' "$mode" \
        "$(awk '/^VmHWM/ { print $2 }' "/proc/${pid[$mode]}/status")" "$(awk '/^VmRSS/ { print $2 }' "/proc/${pid[$mode]}/status")"
done
echo "(msgs/s: median of $reps runs; ratio: recipient / off; target >= 0.9, and <= 150 MB RSS at 512 connections)"
