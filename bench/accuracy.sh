#!/usr/bin/env bash
# accuracy.sh - the accuracy benchmark: mailsift next to bogofilter on every corpus
# in ../shared/corpus, both filters on the same messages in the same order, in one
# run, and a summary against issue 32's targets (and issue 42's, for the loop users
# run). A benchmark, not a test: markdown
# on stdout (docs/accuracy.md is regenerated from it), progress on stderr; exits 0
# whenever it ran, 2 on bad arguments.
#
# usage: bench/accuracy.sh [--protocol LIST]... [--only NAME[,NAME...]]...
#                          [--without-collection-headers] [--config FILE]
#                          [--mailsift PATH] [--mailsiftd PATH] [--corpora DIR]
#                          [--jobs N] [--costliest N]
#                          [--bogofilter-cache DIR | --no-bogofilter-cache]
#
#   --protocol LIST  stream, online, split, class-sorted, long, deployed: a comma
#                    list, or the option repeated (default: all six). deployed (the
#                    loop users run) runs on the stream and on every other corpus
#                    with an index; not on spamassassin, which has none (its sorted
#                    paths are no arrival order)
#   --only NAME      only these corpus folders (repeatable or a comma list); the
#                    long stream is then theirs, concatenated; the stream needs
#                    trec07p-first10k and trec07p-next10k
#   --without-collection-headers  both filters on copies of the corpora without
#                    Received, Delivered-To, Date and Message-ID
#                    (strip_collection_headers.py): what each filter makes of the
#                    mail rather than of where and when the corpus was collected
#   --config FILE    a mailsift configuration to measure instead of the defaults
#   --mailsift PATH  the binary (default build/src/cli/mailsift of this repository)
#   --mailsiftd PATH the daemon, for the deployed protocol (default
#                    build/src/daemon/mailsiftd of this repository)
#   --corpora DIR    the corpus folders (default ../shared/corpus)
#   --jobs N         jobs run at a time (default: the CPUs, nproc)
#   --costliest N    after each table, the N costliest messages of each of its rows
#                    (costliest.py: the misranked spam-ham pairs each is in), path
#                    relative to the corpus folders, label, score (default 0: none;
#                    not for the deployed table)
#   --bogofilter-cache DIR  where bogofilter's results are kept between runs
#                    (default ${XDG_CACHE_HOME:-~/.cache}/mailsift-bench/bogofilter):
#                    a bogofilter job whose messages (content, labels, order),
#                    bogofilter version and procedure are those of a kept result
#                    is not run again; its rows are the kept ones, marked
#   --no-bogofilter-cache  run every bogofilter job, neither reading nor writing
#                    the cache
#
# Protocols (issues 13, 21, 32 and 42); every filter starts from an empty model, with
# its built-in defaults (mailsift: an empty config file; bogofilter: -C):
#   stream        one server's stream, trec07p-first10k's index then
#                 trec07p-next10k's (20,000 messages): online on all of it, and the
#                 split of the two, first10k learned and next10k classified (as
#                 split and class-sorted below); reported first, its own table.
#   online        TREC: in index order, each message classified, then learned with
#                 its label. mailsift: evaluate --index --online (learn's own code,
#                 each message a learn command, in a temporary database; scored
#                 as classify would);
#                 bogofilter: -TT, then -s or -n, per message, every message learned.
#                 Not on spamassassin: its sorted paths are no arrival order.
#   split         arrival order: the first half of the index learned, the second
#                 half classified (spamassassin, no index: sorted paths, every 5th
#                 message tested, the rest learned in that order). mailsift: learn
#                 --index (each message with its label, in order); bogofilter:
#                 -s -b with the training spam, then -n -b with the training ham.
#   class-sorted  the same split learned class by class, the README's recipe (a Junk
#                 folder, then an inbox): mailsift learn --spam, then learn --ham.
#                 bogofilter learns every message whatever the order: its split row
#                 serves both (it is run once and reported once).
#   long          all the corpora concatenated into one online stream, in folder
#                 order (each corpus in its index order, spamassassin in sorted-path
#                 order): the online protocol on about 34,000 messages.
#   deployed      the loop users run (issue 42): the first half of the index learned
#                 class by class (learn --spam, then --ham), the rest delivered 100 at
#                 a time; after each 100 every spam in the inbox (scored ham or
#                 unsure) is moved to Junk and every ham in Junk out of it, one move a
#                 command (two-sided), or only the spam (one-sided: users never look in
#                 Junk); both variants. On the stream (trec07p-first10k learned,
#                 trec07p-next10k deployed) and on every other corpus with an index
#                 (trec07p-first10k or -next10k alone only when the stream cannot run;
#                 spamassassin never: no index). Three rows each: mailsift evaluate
#                 --deployed (in-process: the daemon's Filter, correct's Trainer; its
#                 --json also gives the same model never corrected), and from
#                 bench/deployed_loop.py --json a real mailsiftd (--mailsiftd) over the
#                 milter protocol with one mailsift correct process a move, and
#                 bogofilter (-TT a batch, -s/-n a move) beside it (deployed_loop.py
#                 --filters: the two loops are two jobs). Its own table, after
#                 the others; the summary puts its rows against issue 42's targets.
# Metrics, the same scripts for both filters (deployed: evaluate's --json and
# deployed_loop.py's own, see its table's notes): 1-ROCA% (roc.py, on mailsift's
# log-odds and bogofilter's 16-digit spamicity), the share of its misranked pairs
# that the 10 costliest messages are in (costliest.py), FNR at FPR <= 0.1% and <= 1%
# (fnr_at_fpr.py), FPR, FNR and unsure share at each filter's default thresholds,
# lam% and the calibration of the probability (calibration.py), messages learned,
# CPU seconds (user+sys, /usr/bin/time, per job), database size. The jobs (one
# filter, one corpus, one protocol) run --jobs at a time, the longest first; each
# has its own files; their wall seconds are listed on stderr at the end.
# bogofilter's jobs are most of a run's time (online: two processes a message) and
# depend on nothing mailsift does: their results are kept (--bogofilter-cache)
# under a key of everything they depend on, and the metrics computed anew from them.
# The summary (accuracy_summary.py) puts every corpus x protocol row against
# issue 32's targets, and every deployed row against issue 42's.

# cleanup runs from a trap (and the job functions, in bench/accuracy/, indirectly:
# start_job "$func"):
# shellcheck disable=SC2317
set -euo pipefail
export LC_ALL=C

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench=$repo_root/bench
# shellcheck source-path=SCRIPTDIR source=corpus_split.sh
. "$bench/corpus_split.sh"
mailsift=$repo_root/build/src/cli/mailsift
mailsiftd=$repo_root/build/src/daemon/mailsiftd
corpora=$repo_root/../shared/corpus
config=
only=()
protocols=()
strip_collection=0
max_jobs=$(nproc 2>/dev/null || echo 1)
costliest=0
bf_cache=${XDG_CACHE_HOME:-$HOME/.cache}/mailsift-bench/bogofilter
all_protocols=(stream online split class-sorted long deployed)

# The comment above, from its second line to the protocols.
usage() { sed -n '2,/^# Protocols/{/^# Protocols/d; s/^# \{0,1\}//p;}' "${BASH_SOURCE[0]}"; }
bad_usage() { echo "accuracy: $*" >&2; usage >&2; exit 2; }
command_line="bench/accuracy.sh${*:+ $*}"
while (($#)); do
    case $1 in
        --mailsift) [[ -n ${2:-} ]] || bad_usage "--mailsift needs a path"; mailsift=$2; shift 2 ;;
        --mailsiftd) [[ -n ${2:-} ]] || bad_usage "--mailsiftd needs a path"; mailsiftd=$2; shift 2 ;;
        --corpora)  [[ -n ${2:-} ]] || bad_usage "--corpora needs a directory"; corpora=$2; shift 2 ;;
        --only)     [[ -n ${2:-} ]] || bad_usage "--only needs a corpus name"
                    IFS=, read -ra names_ <<<"$2"; only+=("${names_[@]}"); shift 2 ;;
        --config)   [[ -n ${2:-} ]] || bad_usage "--config needs a file"; config=$2; shift 2 ;;
        --protocol) [[ -n ${2:-} ]] || bad_usage "--protocol needs a list"
                    IFS=, read -ra protos_ <<<"$2"
                    for p in "${protos_[@]}"; do
                        case $p in stream|online|split|class-sorted|long|deployed) protocols+=("$p") ;;
                                   *) bad_usage "unknown protocol '$p' (stream, online, split, class-sorted, long, deployed)" ;; esac
                    done
                    shift 2 ;;
        --jobs)     [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || bad_usage "--jobs needs a positive integer"; max_jobs=$2; shift 2 ;;
        --costliest) [[ ${2:-} =~ ^[0-9]+$ ]] || bad_usage "--costliest needs a number"; costliest=$2; shift 2 ;;
        --without-collection-headers) strip_collection=1; shift ;;
        --bogofilter-cache) [[ -n ${2:-} ]] || bad_usage "--bogofilter-cache needs a directory"; bf_cache=$2; shift 2 ;;
        --no-bogofilter-cache) bf_cache=; shift ;;
        -h|--help)  usage; exit 0 ;;
        *)          bad_usage "unknown argument '$1'" ;;
    esac
done
((${#protocols[@]})) || protocols=("${all_protocols[@]}")
# has PROTOCOL: whether it was asked for.
has() { local p; for p in "${protocols[@]}"; do [[ $p == "$1" ]] && return 0; done; return 1; }
[[ -d $corpora ]] || bad_usage "no corpus folder at $corpora"
corpora=$(cd "$corpora" && pwd)
[[ $mailsift == /* ]] || mailsift=$PWD/$mailsift
[[ -x $mailsift ]] || bad_usage "$mailsift is not an executable (build first)"
if has deployed; then
    [[ $mailsiftd == /* ]] || mailsiftd=$PWD/$mailsiftd
    [[ -x $mailsiftd ]] || bad_usage "$mailsiftd is not an executable (build first, or --mailsiftd PATH)"
fi
if [[ -n $bf_cache ]]; then
    mkdir -p "$bf_cache" 2>/dev/null || bad_usage "cannot make the bogofilter cache $bf_cache"
    bf_cache=$(cd "$bf_cache" && pwd)
fi
if [[ -n $config ]]; then
    [[ -f $config ]] || bad_usage "no configuration file at $config"
    config=$(cd "$(dirname "$config")" && pwd)/$(basename "$config")
fi

say() { printf '[accuracy %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
missing=()
command -v bogofilter >/dev/null || missing+=(bogofilter)
command -v python3 >/dev/null || missing+=(python3)
[[ -x /usr/bin/time ]] || missing+=(time)
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    SUDO=; [[ $(id -u) -eq 0 ]] || SUDO=sudo
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

tmp=$(mktemp -d -t mailsift-accuracy.XXXXXX)
job_pids=()
# Stop the jobs this run started (by PID, with their children), then remove the files.
kill_tree() {
    local child
    for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$child"; done
    kill "$1" 2>/dev/null || true
}
cleanup() {
    local pid
    for pid in "${job_pids[@]}"; do kill_tree "$pid"; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
unset MAILSIFT_DB MAILSIFT_CONFIG BOGOFILTER_DIR
if [[ -z $config ]]; then config=$tmp/empty.conf; : >"$config"; fi
started=$SECONDS
mkdir -p "$tmp/c" "$tmp/r" "$tmp/logs"

# ---------------------------------------------------------------- the functions
# A file each in bench/accuracy/: helpers.sh (helpers, the job pool), corpora.sh
# (the lists, the streams), mailsift_jobs.sh, bogofilter_jobs.sh (with the
# bogofilter cache), deployed_jobs.sh, report.sh (the tables, the summary).
# shellcheck source-path=SCRIPTDIR source=accuracy/helpers.sh
. "$bench/accuracy/helpers.sh"
# shellcheck source-path=SCRIPTDIR source=accuracy/corpora.sh
. "$bench/accuracy/corpora.sh"
# shellcheck source-path=SCRIPTDIR source=accuracy/mailsift_jobs.sh
. "$bench/accuracy/mailsift_jobs.sh"
# shellcheck source-path=SCRIPTDIR source=accuracy/bogofilter_jobs.sh
. "$bench/accuracy/bogofilter_jobs.sh"
# shellcheck source-path=SCRIPTDIR source=accuracy/deployed_jobs.sh
. "$bench/accuracy/deployed_jobs.sh"
# shellcheck source-path=SCRIPTDIR source=accuracy/report.sh
. "$bench/accuracy/report.sh"

# ---------------------------------------------------------------- corpora
prepare_corpora
prepare_streams
warm_corpora

# ---------------------------------------------------------------- jobs

# The jobs, longest first (bogofilter online runs two processes per message), so
# that the short ones fill in beside them: "COST ID FUNCTION LIST [MODE]", COST about
# the milliseconds a job took on the 2-core VM (per message of the list's index, from
# the wall seconds a run lists at its end), with another job beside it. A bogofilter
# job the cache holds costs its metrics only.
{
    for name in "${names[@]}"; do
        n=$(wc -l <"$tmp/c/$name/index")
        if has online && [[ -f $src/$name/index ]]; then
            echo "$(bf_cost "$name/bf-online" bf-online "$name" $((n * 120))) $name/bf-online bf_online $name"
            echo "$((n * 6)) $name/ms-online ms_online $name"
        fi
        if has split || has class-sorted; then
            echo "$(bf_cost "$name/bf-split" bf-split "$name" $((n * 8))) $name/bf-split bf_split $name"
        fi
        if has split; then echo "$((n * 8)) $name/ms-split ms_split $name index"; fi
        if has class-sorted; then echo "$((n * 8)) $name/ms-class ms_split $name class"; fi
    done
    if ((run_long)); then
        n=$(wc -l <"$tmp/c/long/index")
        echo "$(bf_cost long/bf-online bf-online long $((n * 120))) long/bf-online bf_online long"
        echo "$((n * 6)) long/ms-online ms_online long"
    fi
    if ((run_stream)); then
        n=$(wc -l <"$tmp/c/stream/index")
        echo "$(bf_cost stream/bf-online bf-online stream $((n * 120))) stream/bf-online bf_online stream"
        echo "$((n * 6)) stream/ms-online ms_online stream"
        echo "$(bf_cost stream/bf-split bf-split stream $((n * 8))) stream/bf-split bf_split stream"
        echo "$((n * 8)) stream/ms-split ms_split stream index"
        echo "$((n * 8)) stream/ms-class ms_split stream class"
    fi
    # The real daemon's loop, twice (two-sided and one-sided); bogofilter's, a batch at a
    # time, much less.
    for list in "${deployed_lists[@]}"; do
        n=$(wc -l <"$tmp/c/$list/index")
        for feedback in two-sided one-sided; do
            echo "$((n * 12)) $list/dl-deployed-$feedback dl_deployed $list $feedback"
            echo "$(bf_cost "$list/bf-deployed-$feedback" "bf-deployed-$feedback" "$list" $((n * 6))) $list/bf-deployed-$feedback bf_deployed $list $feedback"
            echo "$((n * 4)) $list/ms-deployed-$feedback ms_deployed $list $feedback"
        done
    done
} | sort -k1,1nr -s >"$tmp/jobs"
mapfile -t job_lines <"$tmp/jobs"
long_note=
((run_long)) && long_note="; long stream of $(wc -l <"$tmp/c/long/index") messages"
((run_stream || deployed_stream)) && long_note+="; one server's stream of $(wc -l <"$tmp/c/stream/index") messages"
((${#deployed_lists[@]})) && long_note+="; deployed on ${deployed_lists[*]}"
say "${#job_lines[@]} jobs, $max_jobs at a time: ${names[*]}$long_note"
for line in "${job_lines[@]}"; do
    read -r _ id func list mode <<<"$line"
    while (($(jobs -rp | wc -l) >= max_jobs)); do wait -n || true; done
    # shellcheck disable=SC2086  # mode is empty or one word
    start_job "$id" "$func" "$list" $mode
done
wait
job_pids=()

# ---------------------------------------------------------------- report
report_header
report_tables
report_deployed
report_summary
echo
if [[ -s $tmp/failed ]]; then
    echo "NOTE: these jobs failed, their rows show n/a: $(tr '\n' ' ' <"$tmp/failed")"
    echo
fi
echo "total runtime: $((SECONDS - started)) s"
# Where the time went: every job's wall seconds, longest first.
if [[ -s $tmp/times ]]; then
    say "jobs' wall seconds, longest first (sum $(awk '{ s += $1 } END { print s }' "$tmp/times") s over $max_jobs at a time):"
    sort -k1,1nr "$tmp/times" | awk '{ t = $1; $1 = ""; printf "  %6d s %s\n", t, $0 }' >&2
fi
exit 0
