#!/usr/bin/env bash
# one_message.sh - what one message costs a command that handles it alone, as
# the IMAPSieve recipe runs `mailsift correct` once per moved message and a
# sieve or procmail recipe runs `mailsift classify` once per delivered one
# (issue 33): classify, correct to spam and correct back to ham of one
# message, mailsift beside bogofilter (its defaults, -C) doing the same
# (-B; -s; -Sn), on a model learned from one server's 20,000 messages; and
# mailsift again on that model grown ten times with synthetic feature rows:
# the cost should follow the message, not the model. mailsift is timed twice:
# alone on its database, and with another connection holding the database
# open, as a running mailsiftd does (then a command that writes is not the
# last to close it, and leaves the log's checkpoint to SQLite's automatic
# one instead of paying for it at every exit). Each figure is the
# median over RUNS different held-out messages (the SpamAssassin corpus) of
# one whole process: wall ms, CPU ms (user + system), peak RSS in MB, timed
# by mailsift-bench-proc. The corrections are timed a third way (issue 44,
# item 3): handed to a mailsiftd that owns the database, on its correction
# socket (correct_socket), as the README's IMAPSieve recipe does; beside the
# command's own CPU, the CPU mailsiftd spent applying them (from
# /proc/PID/stat, its refresh interval long enough that no refit falls in
# the runs: a refit follows any correction, however made). A benchmark:
# markdown on stdout.
#
# usage: bench/one_message.sh [--mailsift PATH] [--mailsiftd PATH] [--runs N] [--scale K] [--summary FILE]
#   --runs N   messages (and runs) per figure (default 21)
#   --scale K  the grown model holds K times the features (default 10)
#   --summary FILE  also append bench/run.sh's summary lines to FILE
set -euo pipefail
export LC_ALL=C
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=targets.sh
. "$repo_root/bench/targets.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$repo_root/bench/lib.sh"
mailsift=$repo_root/build/src/cli/mailsift
mailsiftd=$repo_root/build/src/daemon/mailsiftd
proc=$repo_root/build/bench/mailsift-bench-proc
runs=21
scale=10
summary_file=
while (($#)); do
    case $1 in
        --mailsift) mailsift=$2; shift 2 ;;
        --mailsiftd) mailsiftd=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --scale) scale=$2; shift 2 ;;
        --summary) summary_file=$2; shift 2 ;;
        -h|--help) sed -n '2,28s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "one_message: unknown argument $1" >&2; exit 2 ;;
    esac
done
corpora=$repo_root/../shared/corpus
for f in "$corpora/trec07p-first10k/index" "$corpora/trec07p-next10k/index"; do
    [[ -f $f ]] || { echo "one_message: no index at $f" >&2; exit 2; }
done
[[ -d $corpora/spamassassin ]] || { echo "one_message: no SpamAssassin corpus at $corpora/spamassassin" >&2; exit 2; }
[[ -x $proc ]] || { echo "one_message: build $proc first (cmake --build build --target mailsift-bench-proc)" >&2; exit 2; }
command -v bogofilter >/dev/null || { echo "one_message: bogofilter is not installed (scripts/deps.sh --bench)" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "one_message: sqlite3 is not installed" >&2; exit 2; }

tmp=$(mktemp -d -t mailsift-one.XXXXXX)
dpid=
trap 'if [[ -n $dpid ]]; then kill "$dpid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT
: >"$tmp/empty.conf"
for f in trec07p-first10k trec07p-next10k; do
    awk -v d="$corpora/$f" '{ print $1, d "/" $2 }' "$corpora/$f/index"
done >"$tmp/index"
"$mailsift" --config "$tmp/empty.conf" --db "$tmp/m.db" learn --index "$tmp/index" >/dev/null
mkdir -p "$tmp/bf"
awk '$1 == "spam" { print $2 }' "$tmp/index" | bogofilter -C -d "$tmp/bf" -s -b
awk '$1 == "ham" { print $2 }' "$tmp/index" | bogofilter -C -d "$tmp/bf" -n -b
# The grown model: (K - 1) times the vocabulary again in synthetic rows (random
# ids, small counts), the class totals raised to match.
vocabulary=$(sqlite3 "$tmp/m.db" "SELECT features FROM vocabulary")
extra=$(( (scale - 1) * vocabulary ))
cp "$tmp/m.db" "$tmp/m$scale.db"
sqlite3 "$tmp/m$scale.db" <<SQL
BEGIN;
CREATE TEMP TABLE grown AS
  WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $extra)
  SELECT random() AS id, 1 + abs(random() % 3) AS s, abs(random() % 2) AS h, i FROM n;
INSERT OR IGNORE INTO features (id, spam_occurrences, ham_occurrences, spam_presences, ham_presences, last_seen, text)
  SELECT id, s, h, s, h, 0, 'synthetic:' || i FROM grown;
UPDATE classes SET occurrences = occurrences + (SELECT sum(s) FROM grown), presences = presences + (SELECT sum(s) FROM grown) WHERE class = 1;
UPDATE classes SET occurrences = occurrences + (SELECT sum(h) FROM grown), presences = presences + (SELECT sum(h) FROM grown) WHERE class = 0;
INSERT INTO model_changes (committed_at, features) VALUES (0, NULL);
COMMIT;
SQL
grown=$(sqlite3 "$tmp/m$scale.db" "SELECT features FROM vocabulary")

# Held-out messages: every 200th of the SpamAssassin corpus, RUNS of them.
find "$corpora/spamassassin" -type f ! -name 'cmds' | sort | awk 'NR % 200 == 0' | head -n "$runs" >"$tmp/messages"
n=$(wc -l <"$tmp/messages")

# time NAME COMMAND...: one run per message ({} is the message), "wall cpu peak" lines to $tmp/NAME.
time_each() {
    local name=$1; shift
    : >"$tmp/$name"
    while read -r m; do
        local args=()
        for a in "$@"; do args+=("${a//\{\}/$m}"); done
        "$proc" -- "${args[@]}" >>"$tmp/$name"
    done <"$tmp/messages"
}
cp "$tmp/m.db" "$tmp/held.db"
cp "$tmp/m.db" "$tmp/d.db"  # mailsiftd's, for the corrections through it: the model before any is timed
for db in m "m$scale" held; do
    holder=
    if [[ $db == held ]]; then
        # Another connection, open for the whole run, as mailsiftd keeps one.
        python3 -c 'import sqlite3, sys, time
c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
c.execute("SELECT count(*) FROM classes").fetchall()
time.sleep(3600)' "$tmp/held.db" &
        holder=$!
        sleep 0.5
    fi
    time_each "classify-$db" "$mailsift" --config "$tmp/empty.conf" --db "$tmp/$db.db" classify '{}'
    time_each "spam-$db" "$mailsift" --config "$tmp/empty.conf" --db "$tmp/$db.db" correct --spam '{}'
    time_each "ham-$db" "$mailsift" --config "$tmp/empty.conf" --db "$tmp/$db.db" correct --ham '{}'
    if [[ -n $holder ]]; then kill "$holder"; wait "$holder" 2>/dev/null || true; fi
done
# Through mailsiftd's correction socket: the daemon owns its copy of the model.
cat >"$tmp/d.conf" <<CONF
database = $tmp/d.db
listen = unix:$tmp/milter.sock
correct_socket = $tmp/correct.sock
refresh_interval = 3600000
CONF
"$mailsiftd" --foreground --config "$tmp/d.conf" 2>"$tmp/d.log" &
dpid=$!
d_ready() { [[ -S $tmp/correct.sock ]] && grep -q 'loaded model' "$tmp/d.log"; }
wait_for 60 d_ready || { tail -n 5 "$tmp/d.log" >&2; echo "one_message: mailsiftd did not start" >&2; exit 2; }
# One correction first, of a message not timed: the daemon's first write of
# the day (its expiry pass, its scan dictionary) is not a correction's cost.
"$mailsift" --config "$tmp/d.conf" correct --ham "$repo_root/tests/data/messages/ham_meeting_notes.eml" >/dev/null
ticks=$(getconf CLK_TCK)
daemon_ms() { awk -v t="$ticks" '{ printf "%.3f", 1000 * ($14 + $15) / t }' "/proc/$dpid/stat"; }
for op in spam ham; do
    before=$(daemon_ms)
    time_each "$op-sock" "$mailsift" --config "$tmp/d.conf" correct --"$op" '{}'
    sleep 1  # the daemon copies its log into the database after answering: counted too
    after=$(daemon_ms)
    awk -v a="$after" -v b="$before" -v n="$n" 'BEGIN { printf "%.2f", (a - b) / n }' >"$tmp/$op-sock-daemon"
done
kill "$dpid"; wait "$dpid" 2>/dev/null || true
dpid=
time_each classify-bf bogofilter -C -d "$tmp/bf" -B '{}'
time_each spam-bf bogofilter -C -d "$tmp/bf" -s -B '{}'
time_each ham-bf bogofilter -C -d "$tmp/bf" -Sn -B '{}'

# median FILE COLUMN
median() { awk -v c="$2" '{ print $c }' "$1" | sort -g | awk '{ v[NR] = $1 } END { printf "%.1f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mb() { awk -v k="$(median "$1" 3)" 'BEGIN { printf "%.1f", k / 1024 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
# bogofilter -B exits 0, 1 or 2 for spam, ham and unsure; the others exit 0 when they worked.
failed=$(cat "$tmp"/classify-m* "$tmp"/spam-{m,m"$scale",held,bf,sock} "$tmp"/ham-{m,m"$scale",held,bf,sock} | awk '$4 != 0' | wc -l)

echo "## One message, one process ($n held-out SpamAssassin messages, medians)"
echo
echo "Models: one server's 20,000 messages ($vocabulary features; bogofilter's database beside it), and the same grown to $grown features (x$scale)."
echo
echo "| operation | mailsift alone: wall / CPU ms, peak MB | with the database held open | bogofilter | alone / bogofilter (wall, CPU, peak) | held / bogofilter (wall, CPU) | mailsift alone, x$scale model | x$scale / 20,000 (wall, CPU) |"
echo "|---|---|---|---|---|---|---|---|"
for op in classify spam ham; do
    case $op in
        classify) what="classify (bogofilter -B)" ;;
        spam) what="correct --spam (bogofilter -s)" ;;
        ham) what="correct --ham, the undo (bogofilter -Sn)" ;;
    esac
    mw=$(median "$tmp/$op-m" 1) mc=$(median "$tmp/$op-m" 2) mp=$(mb "$tmp/$op-m")
    hw=$(median "$tmp/$op-held" 1) hc=$(median "$tmp/$op-held" 2) hp=$(mb "$tmp/$op-held")
    bw=$(median "$tmp/$op-bf" 1) bc=$(median "$tmp/$op-bf" 2) bp=$(mb "$tmp/$op-bf")
    gw=$(median "$tmp/$op-m$scale" 1) gc=$(median "$tmp/$op-m$scale" 2) gp=$(mb "$tmp/$op-m$scale")
    echo "| $what | $mw / $mc, $mp | $hw / $hc, $hp | $bw / $bc, $bp | $(ratio "$mw" "$bw"), $(ratio "$mc" "$bc"), $(ratio "$mp" "$bp") | $(ratio "$hw" "$bw"), $(ratio "$hc" "$bc") | $gw / $gc, $gp | $(ratio "$gw" "$mw"), $(ratio "$gc" "$mc") |"
    if [[ -n $summary_file ]]; then
        worst=$(printf '%s\n' "$(ratio "$mw" "$bw")" "$(ratio "$mc" "$bc")" | sort -g | tail -n 1)
        printf 'one message\t%s / bogofilter (wall, CPU)\t%s\t%s, %s\t%s\n' "${what%% (*}" "$(shown '<=' "$target_one_message_ratio" x)" \
            "$(ratio "$mw" "$bw")" "$(ratio "$mc" "$bc")" "$(at_most "$worst" "$target_one_message_ratio")" >>"$summary_file"
        printf 'one message\t%s: peak RSS / bogofilter\t%s\t%s\t%s\n' "${what%% (*}" "$(shown '<=' "$target_one_message_ratio" x)" \
            "$(ratio "$mp" "$bp")" "$(at_most "$(ratio "$mp" "$bp")" "$target_one_message_ratio")" >>"$summary_file"
        worst=$(printf '%s\n' "$(ratio "$gw" "$mw")" "$(ratio "$gc" "$mc")" | sort -g | tail -n 1)
        printf 'one message\t%s: x%s model / 20,000 (wall, CPU)\t%s\t%s, %s\t%s\n' "${what%% (*}" "$scale" "$(shown '<=' "$target_one_message_scale" x)" \
            "$(ratio "$gw" "$mw")" "$(ratio "$gc" "$mc")" "$(at_most "$worst" "$target_one_message_scale")" >>"$summary_file"
    fi
done
echo
echo "Corrections handed to mailsiftd on its correction socket (issue 44), the same messages, the same 20,000-message model:"
echo
echo "| operation | wall ms | mailsift CPU ms | mailsiftd CPU ms a correction | peak MB | bogofilter wall / CPU ms | wall / bogofilter | CPU (both processes) / bogofilter |"
echo "|---|---|---|---|---|---|---|---|"
for op in spam ham; do
    case $op in
        spam) what="correct --spam (bogofilter -s)" ;;
        ham) what="correct --ham, the undo (bogofilter -Sn)" ;;
    esac
    sw=$(median "$tmp/$op-sock" 1) sc=$(median "$tmp/$op-sock" 2) sp=$(mb "$tmp/$op-sock") sd=$(cat "$tmp/$op-sock-daemon")
    bw=$(median "$tmp/$op-bf" 1) bc=$(median "$tmp/$op-bf" 2)
    both=$(awk -v a="$sc" -v b="$sd" 'BEGIN { printf "%.2f", a + b }')
    echo "| $what | $sw | $sc | $sd | $sp | $bw / $bc | $(ratio "$sw" "$bw") | $(ratio "$both" "$bc") |"
    if [[ -n $summary_file ]]; then
        worst=$(printf '%s\n' "$(ratio "$sw" "$bw")" "$(ratio "$both" "$bc")" | sort -g | tail -n 1)
        printf 'one message\t%s through mailsiftd / bogofilter (wall, CPU of both)\t%s\t%s, %s\t%s\n' "${what%% (*}" \
            "$(shown '<=' "$target_one_message_ratio" x)" "$(ratio "$sw" "$bw")" "$(ratio "$both" "$bc")" \
            "$(at_most "$worst" "$target_one_message_ratio")" >>"$summary_file"
    fi
done
echo
echo "Targets (bench/targets.sh): classify and correct at most ${target_one_message_ratio}x bogofilter's wall and CPU, peak at most ${target_one_message_ratio}x; the x$scale model within ${target_one_message_scale}x of the 20,000-message figures; a correction through mailsiftd at most ${target_one_message_ratio}x bogofilter's wall and CPU (issue 44)."
((failed == 0)) || echo "one_message: $failed runs exited non-zero" >&2
