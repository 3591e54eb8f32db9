#!/usr/bin/env bash
# speed.sh - batch speed of mailsift next to bogofilter on the SpamAssassin public
# corpus, in the same run: learn the whole corpus into a fresh database, then
# classify every message, each filter with its built-in defaults, median of 3
# runs. Messages per CPU second, the database size for the same training, and the
# ratios to bogofilter. (Accuracy is bench/accuracy.sh's job.) A benchmark, not a
# test: markdown on stdout, progress on stderr; exits 0 whenever it ran, 2 on bad
# arguments.
#
# usage: bench/speed.sh [--mailsift PATH] [--corpus DIR] [--config FILE] [--reps N]
#   --mailsift PATH  the binary (default build/src/cli/mailsift of this repository)
#   --corpus DIR     the corpus (default ../shared/corpus/spamassassin)
#   --config FILE    a mailsift configuration to measure instead of the defaults
#   --reps N         runs of learn + classify; the median is reported (default 3)
set -euo pipefail

# Byte-order sort and a '.' decimal point for awk/printf.
export LC_ALL=C

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=corpus_split.sh
. "$repo_root/bench/corpus_split.sh"
mailsift=$repo_root/build/src/cli/mailsift
corpus=$repo_root/../shared/corpus/spamassassin
config=
reps=3

# The targets (bench/targets.sh): the same figures run.sh's batch section reports.
# shellcheck source-path=SCRIPTDIR source=targets.sh
. "$repo_root/bench/targets.sh"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$repo_root/bench/lib.sh"

usage() { sed -n '2,14s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
bad_usage() { echo "speed: $*" >&2; usage >&2; exit 2; }
command_line="bench/speed.sh${*:+ $*}"
while (($#)); do
    case $1 in
        --mailsift) [[ -n ${2:-} ]] || bad_usage "--mailsift needs a path"; mailsift=$2; shift 2 ;;
        --corpus)   [[ -n ${2:-} ]] || bad_usage "--corpus needs a directory"; corpus=$2; shift 2 ;;
        --config)   [[ -n ${2:-} ]] || bad_usage "--config needs a file"; config=$2; shift 2 ;;
        --reps)     [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || bad_usage "--reps needs a positive integer"; reps=$2; shift 2 ;;
        -h|--help)  usage; exit 0 ;;
        *)          bad_usage "unknown argument '$1'" ;;
    esac
done

say() { printf '[speed %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
start_seconds=$SECONDS

# ---------------------------------------------------------------- tools
missing=()
command -v bogofilter >/dev/null || missing+=(bogofilter)
command -v python3 >/dev/null || missing+=(python3)
[[ -x /usr/bin/time ]] || missing+=(time)   # bash's `time` has no peak RSS
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    SUDO=; [[ $(id -u) -eq 0 ]] || SUDO=sudo
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

[[ -d $corpus ]] || bad_usage "corpus directory not found: $corpus"
corpus=$(cd "$corpus" && pwd)
[[ $mailsift == /* ]] || mailsift=$PWD/$mailsift
if [[ -n $config ]]; then
    [[ -f $config ]] || bad_usage "no configuration file at $config"
    config=$(cd "$(dirname "$config")" && pwd)/$(basename "$config")
fi

# A missing or broken mailsift must not stop the bogofilter half (the table then
# shows n/a), so it is probed once here and disabled on failure.
ms_ok=1 ms_problem=
if ! ms_version=$("$mailsift" --version 2>&1); then
    say "WARNING: mailsift at $mailsift does not run (${ms_version:-missing}); reporting bogofilter only"
    ms_ok=0
    ms_version="n/a ($mailsift unusable)"
    ms_problem="mailsift did not run: every mailsift figure is n/a"
fi
ms_disable() {
    ms_ok=0
    ms_problem="mailsift failed during $1 (see stderr): its figures are n/a or partial"
}
bf_version=$(bogofilter -V 2>&1 | head -n 1)

tmp=$(mktemp -d -t mailsift-speed.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT      # make sure the EXIT trap also runs on ^C / kill
trap 'exit 143' TERM
log=$tmp/log             # tool chatter; shown only when something fails

# Both filters with their built-in defaults and a fresh database given explicitly:
# mailsift an empty config file (neither /etc/mailsift/mailsift.conf nor
# $MAILSIFT_CONFIG applies) unless --config, bogofilter -C.
unset MAILSIFT_DB MAILSIFT_CONFIG BOGOFILTER_DIR
if [[ -z $config ]]; then config=$tmp/empty.conf; : >"$config"; fi
timefmt='%e %U %S %M'    # wall s, user s, sys s, peak RSS KiB

# ---------------------------------------------------------------- corpus lists
corpus_labels "$corpus" "$tmp/all.labels"
if awk -F'\t' '$1 ~ /[[:space:]]/ { bad = 1 } END { exit !bad }' "$tmp/all.labels"; then
    bad_usage "corpus paths with white space are not supported (bogofilter's output is space separated)"
fi
skipped=$(awk -F'\t' '$2 == "-"' "$tmp/all.labels" | wc -l)
((skipped == 0)) || say "note: $skipped files outside spam, spam_2, easy_ham, easy_ham_2, hard_ham are ignored"
awk -F'\t' '$2 == "spam" { print $1 }' "$tmp/all.labels" >"$tmp/all.spam"
awk -F'\t' '$2 == "ham"  { print $1 }' "$tmp/all.labels" >"$tmp/all.ham"
cat "$tmp/all.spam" "$tmp/all.ham" >"$tmp/all.list"
n_all=$(wc -l <"$tmp/all.list")
((n_all > 0)) || bad_usage "no messages found under $corpus"
say "corpus $corpus: $n_all messages ($(wc -l <"$tmp/all.spam") spam)"

# ---------------------------------------------------------------- adapters
# phase_total FILE: the /usr/bin/time lines of a phase as one "wall cpu rss" line:
# wall and cpu = user+sys summed, peak RSS KiB the largest. time(1) also writes
# "Command exited with non-zero status N" lines; only numeric lines count.
phase_total() {
    awk 'NF == 4 && $1 ~ /^[0-9.]+$/ { w += $1; c += $2 + $3; if ($4 > r) r = $4 }
         END { printf "%.2f %.2f %d\n", w, c, r }' "$1"
}
# Sum of file sizes in a database directory (db plus journal/WAL side files).
dir_bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
fail() { say "ERROR: $1 $2 failed (exit $3); last output:"; tail -n 5 "$log" >&2; return 1; }

# ms_learn DB TIMES: learn all.spam as spam, then all.ham as ham (mailsift's own
# training regime decides what it keeps). Exit 1 ("some input unusable") is a
# warning: the rest was learned.
ms_learn() {
    local db=$1 times=$2 cls rc
    for cls in spam ham; do
        rc=0
        /usr/bin/time -f "$timefmt" -a -o "$times" \
            "$mailsift" --config "$config" --db "$db" learn "--$cls" --files-from "$tmp/all.$cls" \
            >>"$log" 2>&1 || rc=$?
        ((rc <= 1)) || { fail mailsift "learn --$cls" "$rc"; return 1; }
        ((rc == 0)) || say "warning: mailsift learn --$cls: some input unusable (exit 1)"
    done
}
ms_classify() {
    local db=$1 times=$2 rc=0
    /usr/bin/time -f "$timefmt" -a -o "$times" \
        "$mailsift" --config "$config" --db "$db" classify --files-from "$tmp/all.list" \
        >"$tmp/out" 2>>"$log" || rc=$?
    ((rc <= 1)) || { fail mailsift classify "$rc"; return 1; }
    ((rc == 0)) || say "warning: mailsift classify: some input unusable (exit 1)"
}
ms_learned() {
    "$mailsift" --config "$config" --db "$1" stats --json 2>>"$log" |
        python3 -c 'import json,sys; m = json.load(sys.stdin)["messages"]; print(m["spam"] + m["ham"])' 2>>"$log" || echo n/a
}
# bogofilter -b reads the file names from stdin: one process per class, the same
# shape as mailsift --files-from.
bf_learn() {
    local dir=$1 times=$2 cls flag rc
    for cls in spam ham; do
        case $cls in spam) flag=-s ;; ham) flag=-n ;; esac
        rc=0
        /usr/bin/time -f "$timefmt" -a -o "$times" \
            bogofilter -C -d "$dir" "$flag" -b <"$tmp/all.$cls" >>"$log" 2>&1 || rc=$?
        ((rc == 0)) || { fail bogofilter "learn $flag" "$rc"; return 1; }
    done
}
# -T: "PATH S|H|U spamicity"; the exit status is that of the last message (0 spam,
# 1 ham, 2 unsure, 3 error).
bf_classify() {
    local dir=$1 times=$2 rc=0
    /usr/bin/time -f "$timefmt" -a -o "$times" \
        bogofilter -C -d "$dir" -T -b <"$tmp/all.list" >"$tmp/out" 2>>"$log" || rc=$?
    ((rc <= 2)) || { fail bogofilter "classify -T" "$rc"; return 1; }
}
check_count() {
    local got; got=$(wc -l <"$2")
    ((got == $3)) || say "warning: $1 printed $got lines for $3 messages"
}

# ---------------------------------------------------------------- runs
# Warm the page cache once so neither filter pays for the first disk read.
xargs -d '\n' cat <"$tmp/all.list" >/dev/null
# results/<tool>.<phase>: one "wall cpu rss" line per run; <tool>.dbsize: bytes
# after each learn; <tool>.learned: messages the database holds.
mkdir -p "$tmp/results"
for ((rep = 1; rep <= reps; rep++)); do
    say "run $rep/$reps"
    # The filters alternate within each run so that slow drift of the machine
    # (thermal, other load) hits both alike.
    if ((ms_ok)); then
        d=$tmp/ms.$rep; mkdir "$d"; : >"$tmp/t"
        if ms_learn "$d/mailsift.db" "$tmp/t"; then
            phase_total "$tmp/t" >>"$tmp/results/ms.learn"
            dir_bytes "$d" >>"$tmp/results/ms.dbsize"
            ms_learned "$d/mailsift.db" >>"$tmp/results/ms.learned"
            : >"$tmp/t"
            if ms_classify "$d/mailsift.db" "$tmp/t"; then
                phase_total "$tmp/t" >>"$tmp/results/ms.classify"
                check_count "mailsift classify" "$tmp/out" "$n_all"
            else ms_disable "classify, run $rep"; fi
        else ms_disable "learn, run $rep"; fi
        rm -rf "$d"
    fi

    d=$tmp/bf.$rep; mkdir "$d"; : >"$tmp/t"
    if bf_learn "$d" "$tmp/t"; then
        phase_total "$tmp/t" >>"$tmp/results/bf.learn"
        dir_bytes "$d" >>"$tmp/results/bf.dbsize"
        echo "$n_all" >>"$tmp/results/bf.learned"
        : >"$tmp/t"
        if bf_classify "$d" "$tmp/t"; then
            phase_total "$tmp/t" >>"$tmp/results/bf.classify"
            check_count "bogofilter classify" "$tmp/out" "$n_all"
        fi
    fi
    rm -rf "$d"
done

# ---------------------------------------------------------------- report
# median FILE COLUMN: median over the runs (n/a when absent).
median() {
    [[ -s $1 ]] || { echo n/a; return; }
    cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1 }
        END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
# calc FORMAT A B CONDITION EXPRESSION: arithmetic on cells, n/a propagates.
calc() {
    [[ $2 =~ ^[0-9.]+$ && $3 =~ ^[0-9.]+$ ]] || { echo n/a; return; }
    awk -v a="$2" -v b="$3" "BEGIN { if ($4) printf \"$1\n\", $5; else print \"n/a\" }"
}
ratio() { calc '%.2f' "$1" "$2" 'b > 0' 'a / b'; }
rate()  { calc '%.0f' "$1" "$2" 'b > 0' 'a / b'; }      # messages / seconds
mib()   { calc '%.1f' "$1" "$2" 'b > 0' 'a / b'; }      # KiB or bytes -> MiB
declare -A cell
for t in ms bf; do
    for phase in learn classify; do
        f=$tmp/results/$t.$phase
        [[ -e $f ]] || : >"$f"
        cell[$t.$phase.wall]=$(median "$f" 1)
        cell[$t.$phase.cpu]=$(median "$f" 2)
        cell[$t.$phase.rss]=$(mib "$(median "$f" 3)" 1024)
        cell[$t.$phase.rate]=$(rate "$n_all" "${cell[$t.$phase.wall]}")
        cell[$t.$phase.cpurate]=$(rate "$n_all" "${cell[$t.$phase.cpu]}")
    done
    f=$tmp/results/$t.dbsize; [[ -e $f ]] || : >"$f"
    cell[$t.db]=$(mib "$(median "$f" 1)" 1048576)
    f=$tmp/results/$t.learned; [[ -e $f ]] || : >"$f"
    cell[$t.learned]=$(median "$f" 1)
done
row() { printf '| %s | %s | %s | %s |\n' "$@"; }
speed_row() {  # speed_row LABEL KEY
    row "$1" "${cell[ms.$2]}" "${cell[bf.$2]}" "$(ratio "${cell[ms.$2]}" "${cell[bf.$2]}")"
}

classify_ratio=$(ratio "${cell[ms.classify.cpurate]}" "${cell[bf.classify.cpurate]}")
learn_ratio=$(ratio "${cell[ms.learn.cpurate]}" "${cell[bf.learn.cpurate]}")
db_ratio=$(ratio "${cell[ms.db]}" "${cell[bf.db]}")
echo "# mailsift vs bogofilter: speed"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) CPUs, $(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(uname -sr)"
echo "- mailsift: $ms_version ($(git -C "$repo_root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo_root" diff --quiet HEAD -- src include 2>/dev/null || echo '+changes')), config: $([[ $config != "$tmp/empty.conf" ]] && echo "$config" || echo 'built-in defaults')"
echo "- bogofilter: $bf_version (Debian $(dpkg-query -W -f '${Version}' bogofilter 2>/dev/null || echo '?')), defaults (-C), fresh -d directory"
echo "- corpus: $corpus ($n_all messages: learned spam then ham, then all classified)"
echo "- command: \`$command_line\`"
echo
echo "| whole corpus, median of $reps run(s) | mailsift | bogofilter | mailsift / bogofilter |"
echo "|---|---|---|---|"
speed_row "learn: msgs per CPU s" learn.cpurate
speed_row "learn: CPU s (user+sys)" learn.cpu
speed_row "learn: wall s" learn.wall
speed_row "learn: msgs/s" learn.rate
speed_row "learn: peak RSS MiB" learn.rss
speed_row "messages learned" learned
speed_row "database size on disk MiB" db
speed_row "classify: msgs per CPU s" classify.cpurate
speed_row "classify: CPU s (user+sys)" classify.cpu
speed_row "classify: wall s" classify.wall
speed_row "classify: msgs/s" classify.rate
speed_row "classify: peak RSS MiB" classify.rss
echo
echo "Against the targets (bench/targets.sh; same run as bogofilter):"
echo
echo "- classify messages per CPU second, $(shown ">=" "$target_classify_ratio" "x") bogofilter's: ${classify_ratio}x, $(at_least "$classify_ratio" "$target_classify_ratio")"
echo "- learn messages per CPU second over bogofilter's: ${learn_ratio}x (target: $(shown ">=" "$target_learn_ratio" "x"), $(at_least "$learn_ratio" "$target_learn_ratio"))"
echo "- database over bogofilter's for the same training: ${db_ratio}x (target: $(shown "<=" "$target_db_ratio" "x"), $(at_most "$db_ratio" "$target_db_ratio"))"
echo
echo "Ratio: mailsift / bogofilter (msgs per second: above 1, mailsift is faster; sizes: below 1,"
echo "smaller). Each learn starts from an empty database; CPU = user+sys from /usr/bin/time; learn is"
echo "the spam pass plus the ham pass (RSS: the larger). mailsift learns in its own training regime"
echo "(messages learned: those its database counts), bogofilter every message. The database size counts"
echo "every file of the database (mailsift: db + WAL + shm)."
[[ -z $ms_problem ]] || echo "NOTE: $ms_problem"
echo "total runtime: $((SECONDS - start_seconds)) s"
exit 0
