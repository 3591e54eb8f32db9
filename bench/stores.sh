#!/usr/bin/env bash
# mailsift-bench stores — SQLite next to PostgreSQL, and a fleet of two daemons.
#
# usage: bench/stores.sh [--corpus DIR] [--features N] [--build DIR]
#
#   DIR        a corpus with an index file (TREC "spam PATH" lines; default
#              ../shared/corpus/trec07p-first10k), else the fixtures of tests/data
#   N          size of the large model for the refresh measure (default 1000000)
#
# Prints, for each store:
#   learn      the index learned in its order (train_margin = 0): msgs/s
#   classify   the whole corpus classified in one batch: msgs/s
#   load       mailsiftd's first load of a model of ~N features (the time it logs)
#   refresh    after a learn of 500 messages against that model: the time from
#              the learn's end to the daemon's "reloaded model" line (includes
#              up to refresh_interval, 1 s, of polling), and the refresh itself
#              as the daemon logs it, with the features it applied
# and for PostgreSQL two daemons on one database under load (mailsift-loadgen,
# 8 connections each) while a learner commits batches of 200 messages:
# msgs/s and p99 of each, and how long each took to take in each batch.
# A benchmark, not a test: it prints numbers. Needs PostgreSQL's server
# (scripts/deps.sh --test); runs a private one on loopback, stopped at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"  # synthetic_export, free_port, stop_pid
corpus=$root/../shared/corpus/trec07p-first10k
features=1000000
build=$root/build
while [ $# -gt 0 ]; do
    case "$1" in
        --corpus) corpus=$2; shift 2 ;;
        --features) features=$2; shift 2 ;;
        --build) build=$2; shift 2 ;;
        *) echo "usage: $0 [--corpus DIR] [--features N] [--build DIR]" >&2; exit 2 ;;
    esac
done
mailsift=$build/src/cli/mailsift
mailsiftd=$build/src/daemon/mailsiftd
loadgen=$build/bench/mailsift-loadgen
for b in "$mailsift" "$mailsiftd" "$loadgen"; do [ -x "$b" ] || { echo "$0: build first ($b missing)" >&2; exit 1; }; done

tmp=$(mktemp -d /tmp/mailsift-bench-stores.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    "$root/tests/support/postgres.sh" stop "$tmp/pg" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT

if [ ! -f "$corpus/index" ]; then
    echo "# no $corpus/index: using the fixtures of tests/data/corpus"
    corpus=$root/tests/data/corpus
fi
printf 'train_margin = 0\n' >"$tmp/all.conf"
awk -v d="$corpus" '{ print d "/" $2 }' "$corpus/index" >"$tmp/all.list"
total=$(wc -l <"$tmp/all.list")
# The index's first 90% to learn, the rest held out (for the refresh batches).
keep=$((total * 9 / 10))
head -n "$keep" "$corpus/index" >"$tmp/train.index"
tail -n +"$((keep + 1))" "$corpus/index" | awk -v d="$corpus" '{ print d "/" $2 }' >"$tmp/held.list"
sed -i "s#^\([a-z]*\) #\1 $corpus/#" "$tmp/train.index"
echo "# corpus $corpus: $total messages ($keep learned, $((total - keep)) held out); large model ~$features features"

"$root/tests/support/postgres.sh" start "$tmp/pg" >"$tmp/pg.log" 2>&1 || { cat "$tmp/pg.log"; exit 1; }
admin=$(cat "$tmp/pg/uri")
echo "# $(head -n 1 "$tmp/pg.log")"
pgdb() {  # pgdb NAME: a new empty database, its URI
    psql "$admin" -qc "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" >/dev/null 2>&1
    echo "${admin%/*}/$1"
}
now() { date +%s.%N; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }

synthetic_export "$features" >"$tmp/synthetic.export"
head -n 500 "$tmp/held.list" >"$tmp/batch.list"

start_daemon() {  # start_daemon NAME DB [CONF-LINES]: DPID, DPORT, DLOG
    DPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    DLOG=$tmp/$1.log
    printf 'listen = inet:127.0.0.1:%s\ndatabase = %s\nthreads = 2\n%s\n' "$DPORT" "$2" "${3:-}" >"$tmp/$1.conf"
    "$mailsiftd" --foreground --config "$tmp/$1.conf" 2>"$DLOG" &
    DPID=$!
    pids+=("$DPID")
    for _ in $(seq 600); do grep -q 'loaded model' "$DLOG" && return 0; sleep 0.1; done
    echo "mailsiftd did not load its model: $(tail -n 3 "$DLOG")" >&2
    return 1
}

# The time from t0 until LOG has one more "reloaded model" line than it had (COUNT); prints seconds.
wait_reload() {  # wait_reload LOG COUNT T0
    while [ "$(grep -c 'reloaded model' "$1" || true)" -le "$2" ]; do sleep 0.02; done
    awk -v a="$3" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'
}

printf '\n%-12s %-10s %s\n' store measure result
for store in sqlite postgresql; do
    if [ "$store" = sqlite ]; then db=$tmp/learn.db; big=$tmp/big.db; else db=$(pgdb learn); big=$(pgdb big); fi
    t0=$(now)
    "$mailsift" --config "$tmp/all.conf" --db "$db" learn --index "$tmp/train.index" >/dev/null
    t1=$(now)
    printf '%-12s %-10s %s msgs/s (%d messages)\n' "$store" learn "$(rate "$keep" "$t0" "$t1")" "$keep"
    t0=$(now)
    "$mailsift" --db "$db" classify --files-from "$tmp/all.list" >/dev/null 2>&1 || true
    t1=$(now)
    printf '%-12s %-10s %s msgs/s (%d messages)\n' "$store" classify "$(rate "$total" "$t0" "$t1")" "$total"

    "$mailsift" --db "$big" import "$tmp/synthetic.export" >/dev/null
    "$mailsift" --config "$tmp/all.conf" --db "$big" learn --index "$tmp/train.index" >/dev/null
    start_daemon "refresh-$store" "$big"
    printf '%-12s %-10s %s\n' "$store" load "$(grep -o 'loaded model.*' "$DLOG" | head -n 1 | sed 's/.*: //')"
    for round in 1 2; do
        count=$(grep -c 'reloaded model' "$DLOG" || true)
        "$mailsift" --config "$tmp/all.conf" --db "$big" learn --ham --files-from <(sed -n "$(( (round - 1) * 250 + 1 )),$(( round * 250 ))p" "$tmp/batch.list") >/dev/null 2>&1
        t0=$(now)
        latency=$(wait_reload "$DLOG" "$count" "$t0")
        printf '%-12s %-10s %s s from the learn to the daemon; %s\n' "$store" refresh "$latency" \
            "$(grep -o 'reloaded model.*' "$DLOG" | tail -n 1 | sed 's/reloaded model //')"
    done
    kill "$DPID"; wait "$DPID" 2>/dev/null || true
done

# ---------------------------------------------------------------- two daemons, one PostgreSQL, under load
fleet=$(pgdb fleet)
"$mailsift" --config "$tmp/all.conf" --db "$fleet" learn --index "$tmp/train.index" >/dev/null
start_daemon fleet-a "$fleet"; pa=$DPORT; la=$DLOG
start_daemon fleet-b "$fleet"; pb=$DPORT; lb=$DLOG
head -n 2000 "$tmp/all.list" >"$tmp/load.list"
"$loadgen" --connect "127.0.0.1:$pa" --connections 8 --duration 20 --files-from "$tmp/load.list" >"$tmp/lg-a.out" 2>&1 &
lga=$!
"$loadgen" --connect "127.0.0.1:$pb" --connections 8 --duration 20 --files-from "$tmp/load.list" >"$tmp/lg-b.out" 2>&1 &
lgb=$!
pids+=("$lga" "$lgb")
sleep 3
lat_a=() lat_b=()
for round in 1 2 3; do
    ca=$(grep -c 'reloaded model' "$la" || true)
    cb=$(grep -c 'reloaded model' "$lb" || true)
    "$mailsift" --config "$tmp/all.conf" --db "$fleet" learn --ham --files-from <(sed -n "$(( (round - 1) * 200 + 1 )),$(( round * 200 ))p" "$tmp/held.list") >/dev/null 2>&1
    t0=$(now)
    lat_a+=("$(wait_reload "$la" "$ca" "$t0")")
    lat_b+=("$(wait_reload "$lb" "$cb" "$t0")")
    sleep 2
done
wait "$lga" "$lgb" || true
printf '%-12s %-10s daemon a: %s\n' postgresql fleet "$(tail -n 1 "$tmp/lg-a.out")"
printf '%-12s %-10s daemon b: %s\n' postgresql fleet "$(tail -n 1 "$tmp/lg-b.out")"
printf '%-12s %-10s batches of 200 learned during the load reached daemon a in %s s, daemon b in %s s\n' \
    postgresql fleet "${lat_a[*]}" "${lat_b[*]}"
