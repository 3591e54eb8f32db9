#!/usr/bin/env bash
# compare_bogofilter.sh - speed and accuracy of mailsift next to bogofilter on
# the SpamAssassin public corpus. A benchmark, not a test: it prints a table and
# exits 0 whenever it ran, whatever the numbers are.
#
# usage: bench/compare_bogofilter.sh [--mailsift PATH_TO_BINARY] [--corpus DIR] [--speed-only]
#   --speed-only   run the speed half only (no accuracy split, no ACCURACY table)
set -euo pipefail

# Byte-order sort (so the train/test split is the same on every machine) and
# a '.' decimal point for awk/printf.
export LC_ALL=C

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=corpus_split.sh
. "$repo_root/bench/corpus_split.sh"
mailsift=$repo_root/build/src/cli/mailsift
corpus=$repo_root/../shared/corpus/spamassassin
reps=3                       # learn+classify repetitions; the median is reported
roc=$repo_root/bench/roc.py
speed_only=0

usage() { sed -n '2,7s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
while (($#)); do
    case $1 in
        --mailsift) mailsift=${2:?--mailsift needs a path}; shift 2 ;;
        --corpus)   corpus=${2:?--corpus needs a directory}; shift 2 ;;
        --speed-only) speed_only=1; shift ;;
        -h|--help)  usage; exit 0 ;;
        *)          usage >&2; exit 2 ;;
    esac
done

say() { printf '[bench] %s\n' "$*" >&2; }
start_seconds=$SECONDS

# ---------------------------------------------------------------- tools
# Install what is missing; all of these are plain Debian packages.
command -v bogofilter >/dev/null || apt-get install -y bogofilter
command -v python3 >/dev/null    || apt-get install -y python3
[[ -x /usr/bin/time ]]           || apt-get install -y time   # bash's `time` has no peak RSS

[[ -d $corpus ]] || { echo "corpus directory not found: $corpus" >&2; exit 2; }
corpus=$(cd "$corpus" && pwd)
[[ $mailsift == /* ]] || mailsift=$PWD/$mailsift

# A missing or broken mailsift must not stop the bogofilter half (the table
# then shows n/a), so it is probed once here and disabled on failure.
ms_ok=1 ms_problem=
if ! ms_version=$("$mailsift" --version 2>&1); then
    say "WARNING: mailsift at $mailsift does not run (${ms_version:-missing}); reporting bogofilter only"
    ms_ok=0
    ms_version="n/a ($mailsift unusable)"
    ms_problem="mailsift did not run: every mailsift figure is n/a"
fi
# After a later failure mailsift is skipped for the rest of the run.
ms_disable() {
    ms_ok=0
    ms_problem="mailsift failed during $1 (see above): its figures are n/a or partial"
}
bf_version=$(bogofilter -V 2>&1 | head -n 1)

tmp=$(mktemp -d -t mailsift-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT      # make sure the EXIT trap also runs on ^C / kill
trap 'exit 143' TERM
log=$tmp/log             # tool chatter; shown only when something fails

# Both filters run with their built-in defaults: mailsift gets an empty config
# file (so neither /etc/mailsift/mailsift.conf nor $MAILSIFT_CONFIG applies),
# bogofilter gets -C (no /etc/bogofilter.cf or ~/.bogofilter.cf). Each run
# uses a fresh database given explicitly (--db / -d).
unset MAILSIFT_DB MAILSIFT_CONFIG BOGOFILTER_DIR
: >"$tmp/empty.conf"
timefmt='%e %U %S %M'    # wall s, user s, sys s, peak RSS KiB

# ---------------------------------------------------------------- corpus lists
# One labelled list of every file; the class comes from the top-level folder.
corpus_labels "$corpus" "$tmp/all.labels"
if awk -F'\t' '$1 ~ /[[:space:]]/ { bad = 1 } END { exit !bad }' "$tmp/all.labels"; then
    echo "corpus paths with white space are not supported (bogofilter output is space separated)" >&2
    exit 2
fi
skipped=$(awk -F'\t' '$2 == "-"' "$tmp/all.labels" | wc -l)
((skipped == 0)) || say "note: $skipped files outside spam, spam_2, easy_ham, easy_ham_2, hard_ham are ignored"

# Whole corpus (speed): all spam, all ham, and everything for classify.
awk -F'\t' '$2 == "spam" { print $1 }' "$tmp/all.labels" >"$tmp/all.spam"
awk -F'\t' '$2 == "ham"  { print $1 }' "$tmp/all.labels" >"$tmp/all.ham"
cat "$tmp/all.spam" "$tmp/all.ham" >"$tmp/all.list"
# Development split (accuracy): line NR of `find | sort`, every 5th is test.
dev_split "$tmp/all.labels" "$tmp"
cut -f1 "$tmp/test.labels" >"$tmp/test.list"

n_all=$(wc -l <"$tmp/all.list")
n_train=$(cat "$tmp/train.spam" "$tmp/train.ham" | wc -l)
n_test=$(wc -l <"$tmp/test.list")
((n_all > 0)) || { echo "no messages found under $corpus" >&2; exit 2; }
say "corpus $corpus: $n_all messages ($(wc -l <"$tmp/all.spam") spam); split $n_train train / $n_test test"

# ---------------------------------------------------------------- adapters
# Every adapter returns non-zero on a real failure. They are called from
# `if`/`||` contexts where set -e is off, hence the explicit `|| return`.

# Sum the per-command lines of a /usr/bin/time file into one phase line:
# wall (sum), cpu = user+sys (sum), peak RSS KiB (max). time(1) also writes
# "Command exited with non-zero status N" lines; only numeric lines count.
phase_total() {
    awk 'NF == 4 && $1 ~ /^[0-9.]+$/ { w += $1; c += $2 + $3; if ($4 > r) r = $4 }
         END { printf "%.2f %.2f %d\n", w, c, r }' "$1"
}

# Sum of file sizes in a database directory (db plus journal/WAL side files).
dir_bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

# fail TOOL WHAT RC: report a failure with the tail of the tool output.
fail() { say "ERROR: $1 $2 failed (exit $3); last output:"; tail -n 5 "$log" >&2; return 1; }

# ms_learn DB PREFIX TIMES: learn PREFIX.spam as spam, then PREFIX.ham as ham.
# Exit 1 ("some input unusable") is a warning: the rest was learned.
ms_learn() {
    local db=$1 prefix=$2 times=$3 cls rc
    for cls in spam ham; do
        rc=0
        /usr/bin/time -f "$timefmt" -a -o "$times" \
            "$mailsift" --config "$tmp/empty.conf" --db "$db" learn "--$cls" --files-from "$prefix.$cls" \
            >>"$log" 2>&1 || rc=$?
        ((rc <= 1)) || { fail mailsift "learn --$cls" "$rc"; return 1; }
        ((rc == 0)) || say "warning: mailsift learn --$cls: some input unusable (exit 1)"
    done
}

# ms_classify DB LIST OUT [TIMES]: raw classify output to OUT.
ms_classify() {
    local db=$1 list=$2 out=$3 times=${4:-/dev/null} rc=0
    /usr/bin/time -f "$timefmt" -a -o "$times" \
        "$mailsift" --config "$tmp/empty.conf" --db "$db" classify --files-from "$list" \
        >"$out" 2>>"$log" || rc=$?
    ((rc <= 1)) || { fail mailsift classify "$rc"; return 1; }
    ((rc == 0)) || say "warning: mailsift classify: some input unusable (exit 1)"
}

# bf_learn DIR PREFIX TIMES: register PREFIX.spam (-s) then PREFIX.ham (-n).
# -b reads the file names from stdin: one process for the whole list, so no
# xargs chunking to account for (the same shape as mailsift --files-from).
bf_learn() {
    local dir=$1 prefix=$2 times=$3 cls flag rc
    for cls in spam ham; do
        case $cls in spam) flag=-s ;; ham) flag=-n ;; esac
        rc=0
        /usr/bin/time -f "$timefmt" -a -o "$times" \
            bogofilter -C -d "$dir" "$flag" -b <"$prefix.$cls" >>"$log" 2>&1 || rc=$?
        ((rc == 0)) || { fail bogofilter "learn $flag" "$rc"; return 1; }
    done
}

# bf_classify DIR LIST OUT MODE [TIMES]: MODE -T gives "PATH S|H|U spamicity"
# (spamicity rounded to about 6 digits), -TT gives "PATH spamicity" to 16 digits.
# The exit status is that of the last message: 0 spam, 1 ham, 2 unsure, 3 error.
bf_classify() {
    local dir=$1 list=$2 out=$3 mode=$4 times=${5:-/dev/null} rc=0
    /usr/bin/time -f "$timefmt" -a -o "$times" \
        bogofilter -C -d "$dir" "$mode" -b <"$list" >"$out" 2>>"$log" || rc=$?
    ((rc <= 2)) || { fail bogofilter "classify $mode" "$rc"; return 1; }
}

# check_count WHAT FILE N: classify must print one line per message.
check_count() {
    local got; got=$(wc -l <"$2")
    ((got == $3)) || say "warning: $1 printed $got lines for $3 messages"
}

# ---------------------------------------------------------------- speed
# Warm the page cache once so neither filter pays for the first disk read.
xargs -d '\n' cat <"$tmp/all.list" >/dev/null

# results/<tool>.<phase>: one "wall cpu rss" line per repetition;
# results/<tool>.dbsize: database bytes after each learn.
mkdir -p "$tmp/results"
for ((rep = 1; rep <= reps; rep++)); do
    say "speed run $rep/$reps"
    # The filters alternate within each repetition so that slow drift of the
    # machine (thermal, other load) hits both alike.
    if ((ms_ok)); then
        d=$tmp/ms.$rep; mkdir "$d"; : >"$tmp/t"
        if ms_learn "$d/mailsift.db" "$tmp/all" "$tmp/t"; then
            phase_total "$tmp/t" >>"$tmp/results/ms.learn"
            dir_bytes "$d" >>"$tmp/results/ms.dbsize"
            : >"$tmp/t"
            if ms_classify "$d/mailsift.db" "$tmp/all.list" "$tmp/out" "$tmp/t"; then
                phase_total "$tmp/t" >>"$tmp/results/ms.classify"
                check_count "mailsift classify" "$tmp/out" "$n_all"
            else ms_disable "classify, speed run $rep"; fi
        else ms_disable "learn, speed run $rep"; fi
        rm -rf "$d"
    fi

    d=$tmp/bf.$rep; mkdir "$d"; : >"$tmp/t"
    bf_learn "$d" "$tmp/all" "$tmp/t"
    phase_total "$tmp/t" >>"$tmp/results/bf.learn"
    dir_bytes "$d" >>"$tmp/results/bf.dbsize"
    : >"$tmp/t"
    bf_classify "$d" "$tmp/all.list" "$tmp/out" -T "$tmp/t"
    phase_total "$tmp/t" >>"$tmp/results/bf.classify"
    check_count "bogofilter classify" "$tmp/out" "$n_all"
    rm -rf "$d"
done

# ---------------------------------------------------------------- accuracy
# Per filter: test.<tool>.tsv = LABEL<TAB>SCORE<TAB>VERDICT for roc.py.
# to_roc_input PREDICTIONS OUT: PREDICTIONS is PATH<TAB>VERDICT<TAB>SCORE; join
# it with the test labels by path (order-independent, and missing paths show).
to_roc_input() {
    awk -F'\t' -v OFS='\t' 'NR == FNR { label[$1] = $2; next }
        ($1 in label) { print label[$1], $3, $2 }' "$tmp/test.labels" "$1" >"$2"
    check_count "$3 (test set, after matching paths)" "$2" "$n_test"
}

if ((speed_only)); then
    say "accuracy half skipped (--speed-only)"
else
    say "accuracy: train on $n_train, classify $n_test"
    if ((ms_ok)); then
        d=$tmp/ms.acc; mkdir "$d"; : >"$tmp/t"
        if ms_learn "$d/mailsift.db" "$tmp/train" "$tmp/t" &&
           ms_classify "$d/mailsift.db" "$tmp/test.list" "$tmp/ms.test.raw"; then
            # mailsift: PATH VERDICT PROBABILITY LOG_ODDS. Rank by log-odds: the
            # probability saturates at 0/1 long before the log-odds do.
            cut -f1,2,4 "$tmp/ms.test.raw" >"$tmp/ms.test.pred"
            to_roc_input "$tmp/ms.test.pred" "$tmp/ms.test.tsv" mailsift
            "$roc" "$tmp/ms.test.tsv" >"$tmp/results/ms.roc"
        else ms_disable "the accuracy run"; fi
    fi

    d=$tmp/bf.acc; mkdir "$d"; : >"$tmp/t"
    bf_learn "$d" "$tmp/train" "$tmp/t"
    # Verdicts from -T; scores from -TT, whose 16 digits break more ties than the
    # rounded value -T prints (a second, untimed pass; classification is read-only).
    bf_classify "$d" "$tmp/test.list" "$tmp/bf.test.T" -T
    bf_classify "$d" "$tmp/test.list" "$tmp/bf.test.TT" -TT
    # Paths may not contain white space (checked above), so fields are simple.
    awk -v OFS='\t' 'NR == FNR { score[$1] = $NF; next }
        { v = $(NF - 1); v = (v == "S" ? "spam" : v == "H" ? "ham" : v == "U" ? "unsure" : "?")
          print $1, v, ($1 in score ? score[$1] : $NF) }' \
        "$tmp/bf.test.TT" "$tmp/bf.test.T" >"$tmp/bf.test.pred"
    to_roc_input "$tmp/bf.test.pred" "$tmp/bf.test.tsv" bogofilter
    "$roc" "$tmp/bf.test.tsv" >"$tmp/results/bf.roc"
fi

# ---------------------------------------------------------------- report
# median FILE COLUMN: median over the repetitions (n/a when absent).
median() {
    [[ -s $1 ]] || { echo n/a; return; }
    cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1 }
        END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
# calc EXPR-with-a-and-b A B: arithmetic on table cells, n/a propagates.
calc() {
    [[ $2 != n/a && $3 != n/a ]] || { echo n/a; return; }
    awk -v a="$2" -v b="$3" "BEGIN { if ($4) printf \"$1\n\", $5; else print \"n/a\" }"
}
ratio() { calc '%.2f' "$1" "$2" 'b > 0' 'a / b'; }
rate()  { calc '%.0f' "$1" "$2" 'b > 0' 'a / b'; }      # messages / seconds
mib()   { calc '%.1f' "$1" "$2" 'b > 0' 'a / b'; }     # KiB or bytes -> MiB

row() {   # row LABEL MAILSIFT BOGOFILTER [RATIO]
    if [[ -n ${4:-} ]]; then printf '%-40s %16s %16s %8s\n' "$@"
    else printf '%-40s %16s %16s\n' "$1" "$2" "$3"; fi
}

# Speed cells for one tool: learn/classify wall, cpu, rss, rate; db size.
declare -A cell
for t in ms bf; do
    for phase in learn classify; do
        f=$tmp/results/$t.$phase
        [[ -e $f ]] || : >"$f"
        cell[$t.$phase.wall]=$(median "$f" 1)
        cell[$t.$phase.cpu]=$(median "$f" 2)
        kib=$(median "$f" 3)
        cell[$t.$phase.rss]=$(mib "$kib" 1024)
        cell[$t.$phase.rate]=$(rate "$n_all" "${cell[$t.$phase.wall]}")
    done
    f=$tmp/results/$t.dbsize; [[ -e $f ]] || : >"$f"
    cell[$t.db]=$(mib "$(median "$f" 1)" 1048576)
    # roc.py "key value" lines
    if [[ -s $tmp/results/$t.roc ]]; then
        while read -r k v; do cell[$t.roc.$k]=$v; done <"$tmp/results/$t.roc"
    fi
done
roc_cell() {   # roc_cell TOOL KEY [PCT_KEY]: "value" or "count (pct%)"
    local v=${cell[$1.roc.$2]:-n/a}
    [[ -z ${3:-} || $v == n/a ]] || v="$v (${cell[$1.roc.$3]}%)"
    echo "$v"
}
speed_row() {  # speed_row LABEL KEY
    row "$1" "${cell[ms.$2]}" "${cell[bf.$2]}" "$(ratio "${cell[ms.$2]}" "${cell[bf.$2]}")"
}
acc_row() {    # acc_row LABEL KEY [PCT_KEY]
    row "$1" "$(roc_cell ms "$2" "${3:-}")" "$(roc_cell bf "$2" "${3:-}")" ""
}

cpu_model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
echo
echo "mailsift vs bogofilter  $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine:    $(nproc) CPUs, ${cpu_model:-unknown CPU}, $(uname -sr)"
echo "mailsift:   $ms_version ($mailsift)"
echo "bogofilter: $bf_version (defaults: -C, fresh -d dir, tristate cutoffs 0.45/0.99)"
echo "corpus:     $corpus ($n_all messages)"
echo
row "SPEED, whole corpus (median of $reps)" mailsift bogofilter ratio
row "----------------------------------------" "----------------" "----------------" "--------"
speed_row "learn: wall s" learn.wall
speed_row "learn: CPU s (user+sys)" learn.cpu
speed_row "learn: msgs/s" learn.rate
speed_row "learn: peak RSS MiB" learn.rss
speed_row "database size on disk MiB" db
speed_row "classify: wall s" classify.wall
speed_row "classify: CPU s (user+sys)" classify.cpu
speed_row "classify: msgs/s" classify.rate
speed_row "classify: peak RSS MiB" classify.rss
if ((!speed_only)); then
    echo
    row "ACCURACY, split: every 5th file is test" mailsift bogofilter ""
    row "----------------------------------------" "----------------" "----------------" ""
    row "train / test messages" "$n_train / $n_test" "$n_train / $n_test" ""
    acc_row "test spam" n_spam
    acc_row "test ham" n_ham
    row "score used for ranking" "log-odds" "spamicity (-TT)" ""
    acc_row "AUC" auc
    acc_row "1-ROCA %" one_minus_roca_pct
    acc_row "false positives (ham -> spam)" fp fp_pct
    acc_row "false negatives (spam -> ham)" fn fn_pct
    acc_row "unsure spam" unsure_spam unsure_spam_pct
    acc_row "unsure ham" unsure_ham unsure_ham_pct
    acc_row "tied spam/ham score pairs (count 1/2)" tied_pairs tied_pairs_pct
    acc_row "messages at the lowest score" at_min
    acc_row "messages at the highest score" at_max
fi
echo
echo "ratio = mailsift / bogofilter (msgs/s: >1 means mailsift is faster). Each learn"
echo "run starts from an empty database; wall, CPU and RSS are medians over $reps runs"
echo "(learn = the spam pass plus the ham pass; RSS = the larger of the two)."
echo "Database size counts every file of the database (mailsift: db + WAL + shm)."
[[ -z $ms_problem ]] || echo "NOTE: $ms_problem"
echo "total runtime: $((SECONDS - start_seconds)) s"
