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

# The job functions run indirectly (start_job "$func"), cleanup from a trap:
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

# ---------------------------------------------------------------- helpers
# In a job, cpuf is the job's own file of /usr/bin/time lines.
# cpu CMD...: runs CMD, appends its user+sys seconds to $cpuf.
cpu() { /usr/bin/time -f '%U %S' -a -o "$cpuf" "$@"; }
# cpu_total: the seconds in $cpuf since the last call.
cpu_total() { awk 'NF == 2 && $1 ~ /^[0-9.]+$/ { c += $1 + $2 } END { printf "%.1f", c }' "$cpuf"; : >"$cpuf"; }
size_of() { du -sb "$@" 2>/dev/null | awk '{ s += $1 } END { printf "%.1f MB", s / 1e6 }'; }

# metrics DIR: DIR/scores = LABEL SCORE VERDICT PROBABILITY PATH (tabs) -> DIR/m, "key
# value" lines.
metrics() {
    local d=$1
    cut -f1-3 "$d/scores" >"$d/rank"
    awk -F'\t' -v OFS='\t' '{ print $1, $4, $3 }' "$d/scores" >"$d/prob"
    {
        python3 "$bench/roc.py" "$d/rank"
        python3 "$bench/fnr_at_fpr.py" --fpr 0.1 --fpr 1 "$d/rank"
        python3 "$bench/calibration.py" "$d/prob"
        python3 "$bench/costliest.py" "$d/scores"
    } >"$d/m"
}
get() { awk -v k="$2" '$1 == k { $1 = ""; print substr($0, 2); f = 1; exit } END { if (!f) print "n/a" }' "$1/m" 2>/dev/null || echo n/a; }
put() { printf '%s %s\n' "$2" "$3" >>"$1/m"; }
# exit_note DIR WHAT RC: exit 1 of mailsift means "some input unusable" (the rest was
# used); anything else is worth a look. Noted in the job's log and on stderr.
exit_note() {
    (($3 == 0)) && return 0
    printf '%s exited %s\n' "$2" "$3" >>"$1/log"
    say "note: $2 exited $3 ($(basename "$(dirname "$1")")/$(basename "$1"))"
}

# ---------------------------------------------------------------- lists
# split_lists DIR: from DIR/train and DIR/test (LABEL PATH), train.spam, train.ham
# (paths) and test.list.
split_lists() {
    awk '$1 == "spam" { print $2 }' "$1/train" >"$1/train.spam"
    awk '$1 == "ham" { print $2 }' "$1/train" >"$1/train.ham"
    cut -d' ' -f2 "$1/test" >"$1/test.list"
}

# make_lists NAME SRC: $tmp/c/NAME/index, lines "LABEL ABSOLUTE_PATH" in the corpus's
# order; train (LABEL PATH), train.spam, train.ham (paths), test (LABEL PATH), test.list.
make_lists() {
    local name=$1 src=$2 t=$tmp/c/$1 n
    mkdir -p "$t"
    if [[ -f $src/index ]]; then
        awk -v d="$src" '{ print $1, d "/" $2 }' "$src/index" >"$t/index"
    else  # spamassassin: sorted paths, the class from the top folder
        corpus_labels "$src" "$t/labels"
        awk -F'\t' '$2 != "-" { print $2, $1 }' "$t/labels" >"$t/index"
    fi
    n=$(wc -l <"$t/index")
    if [[ -f $src/index ]]; then
        awk -v h=$((n / 2)) 'NR <= h' "$t/index" >"$t/train"
        awk -v h=$((n / 2)) 'NR > h' "$t/index" >"$t/test"
    else
        awk 'NR % 5 != 0' "$t/index" >"$t/train"
        awk 'NR % 5 == 0' "$t/index" >"$t/test"
    fi
    split_lists "$t"
}

# ---------------------------------------------------------------- mailsift jobs
# ms_split LIST MODE: MODE index (learn --index, arrival order) or class (learn
# --spam, then learn --ham); then classify the test list in one process.
ms_split() {
    local t=$tmp/c/$1 d cls rc=0
    if [[ $2 == index ]]; then d=$tmp/r/$1/ms-split; else d=$tmp/r/$1/ms-class; fi
    local cpuf=$d/cpu
    mkdir -p "$d"; : >"$cpuf"
    if [[ $2 == index ]]; then  # the training half in its order, each message with its label
        cpu "$mailsift" --config "$config" --db "$d/m.db" learn --index "$t/train" >>"$d/log" 2>&1 || rc=$?
        exit_note "$d" "mailsift learn --index" "$rc"
    else
        for cls in spam ham; do
            rc=0
            cpu "$mailsift" --config "$config" --db "$d/m.db" learn "--$cls" --files-from "$t/train.$cls" >>"$d/log" 2>&1 || rc=$?
            exit_note "$d" "mailsift learn --$cls" "$rc"
        done
    fi
    local learn_cpu; learn_cpu=$(cpu_total)
    rc=0
    cpu "$mailsift" --config "$config" --db "$d/m.db" classify --files-from "$t/test.list" >"$d/out" 2>>"$d/log" || rc=$?
    exit_note "$d" "mailsift classify" "$rc"
    # PATH VERDICT P LOG_ODDS -> LABEL LOG_ODDS VERDICT P PATH, joined by path.
    awk -F'\t' -v OFS='\t' 'NR == FNR { split($0, a, " "); label[a[2]] = a[1]; next }
        ($1 in label) { print label[$1], $4, $2, $3, $1 }' "$t/test" "$d/out" >"$d/scores"
    metrics "$d"
    put "$d" learn_cpu "$learn_cpu"
    put "$d" classify_cpu "$(cpu_total)"
    put "$d" learned "$("$mailsift" --config "$config" --db "$d/m.db" stats --json |
        python3 -c 'import json,sys; m = json.load(sys.stdin)["messages"]; print(m["spam"] + m["ham"])')"
    put "$d" db "$(size_of "$d/m.db"*)"
}

# evaluate_report DIR: the metrics of a mailsift evaluate run that wrote DIR/raw
# (--scores: PATH LABEL VERDICT P LOG_ODDS) and DIR/json, in its temporary database.
evaluate_report() {
    local d=$1
    # PATH LABEL VERDICT P LOG_ODDS -> LABEL LOG_ODDS VERDICT P PATH
    awk -F'\t' -v OFS='\t' '{ print $2, $5, $3, $4, $1 }' "$d/raw" >"$d/scores"
    metrics "$d"
    put "$d" cpu_total "$(cpu_total)"
    put "$d" learned "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trained"])' "$d/json")"
    put "$d" db "temporary"
}

# ms_online LIST: evaluate --online on the list's index.
ms_online() {
    local t=$tmp/c/$1 d=$tmp/r/$1/ms-online rc=0
    local cpuf=$d/cpu
    mkdir -p "$d"; : >"$cpuf"
    cpu "$mailsift" --config "$config" evaluate --index "$t/index" --online --json --scores "$d/raw" >"$d/json" 2>>"$d/log" || rc=$?
    exit_note "$d" "mailsift evaluate --online" "$rc"
    evaluate_report "$d"
}

# ---------------------------------------------------------------- bogofilter jobs
# A bogofilter job is its run (bf_*_run LIST DIR: bogofilter's scores, or
# deployed_loop.py's JSON, and DIR/m with what only the run knows: CPU seconds,
# database size) and its report (the metrics, from the scores, every time). The run
# depends only on the messages (content, labels, order, stripped or not), bogofilter's
# version and the procedure below: bf_job takes it from the cache when those are the
# key of a kept run, and keeps it otherwise.

# bf_split_run LIST DIR: -s -b with the training spam, -n -b with the training ham,
# then -TT -b of the test list.
bf_split_run() {
    local t=$tmp/c/$1 d=$2
    local cpuf=$d/cpu
    mkdir -p "$d/db"; : >"$cpuf"
    cpu bogofilter -C -d "$d/db" -s -b <"$t/train.spam" >>"$d/log" 2>&1 || true
    cpu bogofilter -C -d "$d/db" -n -b <"$t/train.ham" >>"$d/log" 2>&1 || true
    local learn_cpu; learn_cpu=$(cpu_total)
    cpu bogofilter -C -d "$d/db" -TT -b <"$t/test.list" >"$d/out" 2>>"$d/log" || true
    # -b -TT prints "PATH SPAMICITY"; the verdict from the default cutoffs.
    awk -v OFS='\t' 'NR == FNR { label[$2] = $1; next }
        ($1 in label) { p = $NF; v = p >= 0.99 ? "spam" : p < 0.45 ? "ham" : "unsure"; print label[$1], p, v, p, $1 }' \
        "$t/test" "$d/out" >"$d/scores"
    put "$d" learn_cpu "$learn_cpu"
    put "$d" classify_cpu "$(cpu_total)"
    put "$d" learned "$(wc -l <"$t/train" | tr -d ' ')"
    put "$d" db "$(size_of "$d/db")"
}

# bf_online_run LIST DIR: -TT then -s|-n per message. Verdicts from -TT's exit status:
# 0 spam, 1 ham, 2 unsure (cutoffs 0.99 / 0.45).
bf_online_run() {
    local t=$tmp/c/$1 d=$2
    local cpuf=$d/cpu
    mkdir -p "$d/db"; : >"$cpuf"; : >"$d/scores"
    # shellcheck disable=SC2016  # the script's own variables, expanded by its bash
    cpu bash -c '
        db=$1; index=$2; out=$3
        while read -r label path; do
            rc=0; p=$(bogofilter -C -d "$db" -TT -I "$path" 2>/dev/null) || rc=$?
            # 3: no wordlist yet (before the first message is learned): 0.5, unsure.
            case $rc in 0) v=spam ;; 1) v=ham ;; 2) v=unsure ;; *) p=0.5; v=unsure ;; esac
            printf "%s\t%s\t%s\t%s\t%s\n" "$label" "$p" "$v" "$p" "$path" >>"$out"
            if [[ $label == spam ]]; then bogofilter -C -d "$db" -s -I "$path"; else bogofilter -C -d "$db" -n -I "$path"; fi
        done <"$index"' _ "$d/db" "$t/index" "$d/scores" 2>>"$d/log" || true
    put "$d" cpu_total "$(cpu_total)"
    put "$d" learned "$(wc -l <"$d/scores" | tr -d ' ')"
    put "$d" db "$(size_of "$d/db")"
}

# bf_deployed_run LIST DIR FEEDBACK: bogofilter's loop of deployed_loop.py alone (the
# real daemon's is dl_deployed, another job), its JSON in DIR/json.
bf_deployed_run() {
    local t=$tmp/c/$1 d=$2 one=()
    if [[ $3 == one-sided ]]; then one=(--one-sided); fi
    python3 "$bench/deployed_loop.py" --filters bogofilter --index "$t/index" --split 0.5 --batch 100 "${one[@]}" \
        --work "$d/work" --json >"$d/json" 2>>"$d/log"
    rm -rf "$d/work"
}

# bf_procedure KIND: the text of what makes a KIND job's run, the key's "procedure".
bf_procedure() {
    case $1 in
        bf-split)  declare -f bf_split_run cpu cpu_total size_of put ;;
        bf-online) declare -f bf_online_run cpu cpu_total size_of put ;;
        bf-deployed-*)
            declare -f bf_deployed_run
            echo "deployed_loop.py bogofilter $(python3 "$bench/deployed_loop.py" --procedure-digest bogofilter)" ;;
    esac
}

# bf_key ID KIND LIST: writes $tmp/keys/ID, what the run of job ID depends
# on (kept beside the result, to read); its SHA-256 is the cache key. The lists the
# run reads as LABEL PATH CONTENT_SHA256 lines, paths relative to the corpus folders
# (the cache stays valid wherever they are, and for the stripped copies in a new
# temporary folder). No key (an empty file) when a message could not be read.
bf_key() {
    local id=$1 kind=$2 list=$3 f lists
    local out=$tmp/keys/${id//\//.}
    case $kind in bf-split) lists=(train test) ;; *) lists=(index) ;; esac
    {
        echo "mailsift-bench bogofilter cache, version 1"
        echo "bogofilter: $bf_version"
        echo "job: $kind (${#lists[@]} list(s): ${lists[*]})"
        echo "environment: LC_ALL=$LC_ALL"
        if ((strip_collection)); then echo "collection headers: stripped (strip_collection_headers.py $(sha256sum <"$bench/strip_collection_headers.py" | cut -c1-64))"
        else echo "collection headers: kept"; fi
        echo "procedure: $(bf_procedure "$kind" | sha256sum | cut -c1-64)"
        for f in "${lists[@]}"; do
            echo "list $f: $(wc -l <"$tmp/c/$list/$f" | tr -d ' ') messages, $(list_digest "$tmp/c/$list/$f")"
        done
    } >"$out.txt"
    if grep -q '^list .*, none$' "$out.txt"; then
        : >"$out"
    else
        sha256sum <"$out.txt" | cut -c1-64 >"$out"
    fi
}

# list_digest FILE: the SHA-256 of FILE's LABEL PATH lines as LABEL RELATIVE_PATH
# CONTENT_SHA256 lines, from $tmp/c/sums; none when a message has no digest.
list_digest() {
    awk -v p="$src/" '
        FILENAME == ARGV[1] { i = index($0, "\t"); sha[substr($0, 1, i - 1)] = substr($0, i + 1); next }
        { path = substr($0, length($1) + 2)
          if (!(path in sha)) { missing = 1; exit }
          print $1, (index(path, p) == 1 ? substr(path, length(p) + 1) : path), sha[path] }
        END { if (missing) print "missing" }' "$tmp/c/sums" "$1" >"$1.digest"
    if [[ $(tail -n 1 "$1.digest") == missing ]]; then echo none; else sha256sum <"$1.digest" | cut -c1-64; fi
    rm -f "$1.digest"
}

# bf_entry ID: the cache entry that holds job ID's run, when there is one.
bf_entry() {
    local keyf=$tmp/keys/${1//\//.}
    [[ -n $bf_cache && -s $keyf ]] || return 1
    local e; e=$bf_cache/$(cat "$keyf")
    [[ -f $e/done ]] && cmp -s "$keyf.txt" "$e/key" || return 1
    echo "$e"
}

# bf_job ID KIND DIR RUN LIST [ARG]: RUN LIST DIR [ARG], or its result from the cache;
# then the report. What is kept: the scores, their paths relative to the corpus
# folders, and m (online, split), or the JSON (deployed).
bf_job() {
    local id=$1 kind=$2 d=$3 run=$4; shift 4
    local e key new
    mkdir -p "$d"
    if e=$(bf_entry "$id"); then
        say "cached $id: key $(basename "$e"), computed $(cat "$e/done")"
        if [[ -f $e/scores ]]; then
            awk -F'\t' -v OFS='\t' -v p="$src/" '{ if (substr($5, 1, 1) != "/") $5 = p $5; print }' "$e/scores" >"$d/scores"
            cp "$e/m" "$d/run.m"
        else
            cp "$e/json" "$d/json"
        fi
        cat "$e/done" >"$d/cached"
        printf '%s\t%s\t%s\n' "$id" "$(basename "$e")" "$(cat "$e/done")" >>"$tmp/cache-used"
    else
        local t0=$SECONDS
        "$run" "$1" "$d" "${@:2}"
        if [[ -f $d/m ]]; then mv "$d/m" "$d/run.m"; fi
        # Kept only when whole: a score for every message the run was to score.
        key=$(cat "$tmp/keys/${id//\//.}" 2>/dev/null || true)
        if [[ -n $bf_cache && -n $key ]] && bf_whole "$kind" "$1" "$d"; then
            new=$(mktemp -d "$bf_cache/.new.XXXXXX")
            cp "$tmp/keys/${id//\//.}.txt" "$new/key"
            if [[ -f $d/json ]]; then cp "$d/json" "$new/json"
            else
                awk -F'\t' -v OFS='\t' -v p="$src/" '{ if (index($5, p) == 1) $5 = substr($5, length(p) + 1); print }' \
                    "$d/scores" >"$new/scores"
                cp "$d/run.m" "$new/m"
            fi
            echo "wall $((SECONDS - t0)) s, by $command_line" >"$new/run"
            date -u '+%Y-%m-%d %H:%M UTC' >"$new/done"
            # Another run may have kept the same key meanwhile: either is the same result.
            mv -T "$new" "$bf_cache/$key" 2>/dev/null || rm -rf "$new"
            printf '%s\t%s\n' "$id" "$key" >>"$tmp/cache-stored"
        elif [[ -n $bf_cache ]]; then
            say "note: $id not kept in the cache (no key, or not a score for every message)"
        fi
    fi
    if [[ $kind == bf-deployed-* ]]; then
        deployed_m "$d/json" "$d" bogofilter
    else
        metrics "$d"
        cat "$d/run.m" >>"$d/m"
    fi
}

# bf_whole KIND LIST DIR: whether the run scored every message it was to score.
bf_whole() {
    local t=$tmp/c/$2 d=$3
    case $1 in
        bf-split)  [[ $(wc -l <"$d/scores") -eq $(wc -l <"$t/test") ]] ;;
        bf-online) [[ $(wc -l <"$d/scores") -eq $(wc -l <"$t/index") ]] ;;
        *) python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(not (len(j["filters"]) == 1 and j["filters"][0]["messages"] == j["deployed"] > 0))' "$d/json" ;;
    esac
}

bf_split() { bf_job "$1/bf-split" bf-split "$tmp/r/$1/bf-split" bf_split_run "$1"; }
bf_online() { bf_job "$1/bf-online" bf-online "$tmp/r/$1/bf-online" bf_online_run "$1"; }
# bf_deployed LIST FEEDBACK: its row in the dl_deployed job's folder, DIR/bogofilter.
bf_deployed() {
    bf_job "$1/bf-deployed-$2" "bf-deployed-$2" "$tmp/r/$1/dl-deployed-$2/bogofilter" bf_deployed_run "$1" "$2"
}

# ---------------------------------------------------------------- deployed jobs
# The loop users run (issue 42) on a list's index: its first half learned class by
# class, the rest deployed; FEEDBACK two-sided or one-sided.

# deployed_m JSON DIR KIND: the figures of a deployed run as DIR/m "key value" lines.
# KIND evaluate: mailsift evaluate --deployed --json (with deployed.uncorrected, the
# same model never corrected, as unc_* keys); mailsift or bogofilter: that filter of
# deployed_loop.py --json.
deployed_m() {
    python3 - "$@" <<'PY'
import json, sys
path, d, kind = sys.argv[1:4]
with open(path) as f:
    j = json.load(f)
if kind == "evaluate":
    c, dep = j["confusion"], j["deployed"]
    unc = dep["uncorrected"]
    m = {"n_spam": j["spam"], "n_ham": j["ham"],
         "one_minus_roca_pct": j["one_minus_roca_percent"], "fnr_at_fpr_0.1_pct": j["fnr_at_fpr_0.1_percent"],
         "ham_in_junk": c["ham"]["spam"], "spam_in_inbox": c["spam"]["ham"] + c["spam"]["unsure"],
         "unsure_pct": j["unsure_percent"], "moves_spam": dep["moved_to_junk"], "moves_ham": dep["moved_from_junk"],
         "ece": j["expected_calibration_error"], "worst": j.get("worst_bin"),
         "unc_ham_in_junk": unc["ham_in_junk"], "unc_spam_in_inbox": unc["spam_in_inbox"],
         "unc_unsure_pct": unc["unsure_percent"]}
else:
    (r,) = [r for r in j["filters"] if r["filter"] == kind]
    m = {"n_spam": r["spam"], "n_ham": r["ham"],
         "one_minus_roca_pct": r["one_minus_roca_percent"], "fnr_at_fpr_0.1_pct": r["fnr_at_fpr_0.1_percent"],
         "ham_in_junk": r["ham_in_junk"], "spam_in_inbox": r["spam_in_inbox"], "unsure_pct": r["unsure_percent"],
         "moves_spam": r["moved_to_junk"], "moves_ham": r["moved_from_junk"],
         "ece": r["expected_calibration_error"], "worst": r.get("worst_bin"), "seconds": r["seconds"]}
# The worst reliability bin of >= 30 messages, in the keys the other tables use.
w = m.pop("worst")
if w:
    m.update({"worst_bin": f"{w['low']:.1f}-{w['high']:.1f}", "worst_bin_gap": w["gap"], "worst_bin_n": w["messages"]})
with open(d + "/m", "a") as f:
    for k, v in m.items():
        if v is not None:  # a missing key reads n/a
            f.write(f"{k} {v}\n")
PY
}

# ms_deployed LIST FEEDBACK: mailsift evaluate --deployed, in-process, in a temporary
# database.
ms_deployed() {
    local t=$tmp/c/$1 d=$tmp/r/$1/ms-deployed-$2 rc=0 one=()
    local cpuf=$d/cpu
    mkdir -p "$d"; : >"$cpuf"
    if [[ $2 == one-sided ]]; then one=(--one-sided); fi
    cpu "$mailsift" --config "$config" evaluate --index "$t/index" --deployed --split head:0.5 "${one[@]}" \
        --json --scores "$d/raw" >"$d/json" 2>>"$d/log" || rc=$?
    exit_note "$d" "mailsift evaluate --deployed" "$rc"
    deployed_m "$d/json" "$d" evaluate
    put "$d" cpu_total "$(cpu_total)"
}

# dl_deployed LIST FEEDBACK: bench/deployed_loop.py --filters mailsift --json, a real
# mailsiftd on a loopback port and mailsift correct; its row in DIR/mailsiftd.
# bogofilter's loop is another job (bf_deployed), its row in DIR/bogofilter. Its
# databases are removed when it ends.
dl_deployed() {
    local t=$tmp/c/$1 d=$tmp/r/$1/dl-deployed-$2 one=()
    mkdir -p "$d"
    if [[ $2 == one-sided ]]; then one=(--one-sided); fi
    python3 "$bench/deployed_loop.py" --filters mailsift --index "$t/index" --split 0.5 "${one[@]}" \
        --mailsift "$mailsift" --mailsiftd "$mailsiftd" --config "$config" --work "$d/work" --json \
        >"$d/json" 2>>"$d/log"
    rm -rf "$d/work"
    mkdir -p "$d/mailsiftd"
    deployed_m "$d/json" "$d/mailsiftd" mailsift
}

# ---------------------------------------------------------------- job pool
# start_job ID FUNCTION ARGS...: in the background, its output in $tmp/logs. A job
# that fails leaves n/a in its row; the others go on.
start_job() {
    local id=$1; shift
    say "start $id"
    {
        set +e
        t0=$SECONDS from=
        ( set -e; "$@" ) >>"$tmp/logs/${id//\//.}" 2>&1
        rc=$?
        if ((rc)); then
            say "FAILED: $id (exit $rc); its row shows n/a. Last lines of its log:"
            tail -n 5 "$tmp/logs/${id//\//.}" >&2
            echo "$id" >>"$tmp/failed"
        else
            from=$(awk -F'\t' -v id="$id" '$1 == id { printf ", from the bogofilter cache: key %s, computed %s", $2, $3 }' \
                "$tmp/cache-used" 2>/dev/null)
            say "done  $id ($((SECONDS - t0)) s$from)"
        fi
        printf '%s %s%s\n' "$((SECONDS - t0))" "$id" "${from:+ (cached)}" >>"$tmp/times"
    } &
    job_pids+=($!)
}

# ---------------------------------------------------------------- corpora
names=()
for dir in "$corpora"/*/; do
    name=$(basename "$dir")
    if ((${#only[@]})); then
        keep=0; for o in "${only[@]}"; do [[ $o == "$name" ]] && keep=1; done
        ((keep)) || continue
    fi
    names+=("$name")
done
((${#names[@]})) || bad_usage "no corpus to run in $corpora${only[*]:+ (--only ${only[*]})}"
for o in "${only[@]}"; do
    [[ -d $corpora/$o ]] || bad_usage "no corpus folder $corpora/$o"
done
src=$corpora
if ((strip_collection)); then
    for name in "${names[@]}"; do
        say "$name: copying without Received, Delivered-To, Date and Message-ID"
        python3 "$bench/strip_collection_headers.py" "$corpora/$name" "$tmp/stripped/$name"
    done
    src=$tmp/stripped
fi
long_names=()
for name in "${names[@]}"; do
    make_lists "$name" "$src/$name"
    long_names+=("$name")
done
# The long stream: every corpus's index in folder order (the order of names).
run_long=0
if has long; then
    if ((${#long_names[@]} >= 2)); then
        run_long=1
        mkdir -p "$tmp/c/long"
        for name in "${long_names[@]}"; do cat "$tmp/c/$name/index"; done >"$tmp/c/long/index"
    else
        say "long stream skipped: it needs at least two corpora (--only)"
    fi
fi
# One server's stream: trec07p-first10k's index, then trec07p-next10k's; its split
# learns the first and classifies the second.
stream_first=trec07p-first10k stream_next=trec07p-next10k
run_stream=0 deployed_stream=0
if has stream || has deployed; then
    if [[ -f $tmp/c/$stream_first/index && -f $tmp/c/$stream_next/index ]]; then
        if has stream; then run_stream=1; fi
        if has deployed; then deployed_stream=1; fi
        mkdir -p "$tmp/c/stream"
        cp "$tmp/c/$stream_first/index" "$tmp/c/stream/train"
        cp "$tmp/c/$stream_next/index" "$tmp/c/stream/test"
        cat "$tmp/c/stream/train" "$tmp/c/stream/test" >"$tmp/c/stream/index"
        split_lists "$tmp/c/stream"
    else
        say "stream skipped: it needs $stream_first and $stream_next (--only)"
    fi
fi
# The deployed loop: on the stream, and on every other corpus with an index (the
# stream's two halves alone only when the stream cannot run).
deployed_lists=()
if has deployed; then
    if ((deployed_stream)); then deployed_lists+=(stream); fi
    for name in "${names[@]}"; do
        if [[ ! -f $src/$name/index ]]; then
            say "deployed: $name skipped (no index: no arrival order)"
        elif ((deployed_stream)) && [[ $name == "$stream_first" || $name == "$stream_next" ]]; then
            continue  # the stream's own halves
        else
            deployed_lists+=("$name")
        fi
    done
fi
# Warm the page cache so that no job pays for the first read of a file; with the
# cache, the reading is the digest of every message (PATH<TAB>SHA256 lines), which
# the keys of the bogofilter jobs are made of.
bf_version="$(bogofilter -V 2>&1 | head -n 1) (Debian $(dpkg-query -W -f '${Version}' bogofilter 2>/dev/null || echo '?'))"
mkdir -p "$tmp/keys"
if [[ -n $bf_cache ]]; then
    for name in "${names[@]}"; do cut -d' ' -f2 "$tmp/c/$name/index"; done | xargs -d '\n' sha256sum |
        awk 'length($1) == 64 && substr($0, 65, 2) == "  " { print substr($0, 67) "\t" $1 }' >"$tmp/c/sums"
else
    for name in "${names[@]}"; do cut -d' ' -f2 "$tmp/c/$name/index"; done | xargs -d '\n' cat >/dev/null
fi
# bf_cost ID KIND LIST COST: COST, or that of taking the job's run from the cache when it
# holds it (the metrics: about 3 ms a message). The key is made here, before the jobs start.
bf_cost() {
    local cost=$4
    if [[ -n $bf_cache ]]; then
        bf_key "$1" "$2" "$3"
        if bf_entry "$1" >/dev/null; then cost=$(($(wc -l <"$tmp/c/$3/index") * 3)); fi
    fi
    echo "$cost"
}

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
pct_of() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", 100 * a / b; else print "n/a" }'; }
report_row() {  # report_row LABEL DIR
    local d=$2 n_ham n_spam n unsure cpu
    [[ -s $d/m ]] || { printf '| %s | n/a (the job failed) ||||||||||||\n' "$1"; return; }
    n_ham=$(get "$d" n_ham); n_spam=$(get "$d" n_spam); n=$((n_ham + n_spam))
    unsure=$(( $(get "$d" unsure_spam) + $(get "$d" unsure_ham) ))
    if [[ $(get "$d" cpu_total) != n/a ]]; then cpu="$(get "$d" cpu_total) (both)"; else cpu="$(get "$d" learn_cpu) / $(get "$d" classify_cpu)"; fi
    # A cached run's CPU is that of the run that filled the cache: said so, with its date.
    if [[ -f $d/cached ]]; then cpu+=", cached $(cat "$d/cached")"; fi
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s (%s: %s, n=%s) | %s | %s | %s |\n' "$1" \
        "$(get "$d" one_minus_roca_pct)" "$(get "$d" top10_share)" "$(get "$d" fnr_at_fpr_0.1_pct)" "$(get "$d" fnr_at_fpr_1_pct)" \
        "$(get "$d" fp_pct)" "$(get "$d" fn_pct)" "$(pct_of "$unsure" "$n")" \
        "$(get "$d" lam_pct)" "$(get "$d" ece)" "$(get "$d" worst_bin)" "$(get "$d" worst_bin_gap)" "$(get "$d" worst_bin_n)" \
        "$(get "$d" learned)" "$cpu" "$(get "$d" db)"
}
table_head() {
    echo "| filter, protocol | 1-ROCA% | 10 costliest: share of misranked pairs | FNR% at FPR<=0.1% | FNR% at FPR<=1% | FPR% | FNR% | unsure% | lam% | ECE (worst bin >= 30: gap, n) | learned | CPU s learn / classify | database |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
}
# report_table LABEL DIR [LABEL DIR]...: a table of the rows whose DIR exists.
report_table() {
    table_head
    while (($#)); do
        if [[ -d $2 ]]; then report_row "$1" "$2"; fi
        shift 2
    done
    echo
}
# report_costliest LABEL DIR [LABEL DIR]...: with --costliest N, each row's N costliest
# messages (costliest.py --list), paths relative to the corpus folders.
report_costliest() {
    ((costliest)) || return 0
    while (($#)); do
        if [[ -s $2/scores ]]; then
            echo "$1: the $costliest costliest messages (the misranked spam-ham pairs each is in, ties half)"
            echo
            python3 "$bench/costliest.py" --list "$costliest" --relative-to "$src" "$2/scores" || echo "(costliest.py failed)"
            echo
        fi
        shift 2
    done
}
# thousands N: N with a comma every three digits.
thousands() { sed -E ':a; s/([0-9])([0-9]{3})($|,)/\1,\2\3/; ta' <<<"$1"; }
count() { awk -v l="$2" '$1 == l' "$1" | wc -l | tr -d ' '; }

echo "# mailsift vs bogofilter: accuracy on every corpus"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) CPUs, $(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "- mailsift: $("$mailsift" --version 2>/dev/null | head -n 1) ($(git -C "$repo_root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo_root" diff --quiet HEAD -- src include 2>/dev/null || echo '+changes')), config: $([[ $config != "$tmp/empty.conf" ]] && echo "$config" || echo 'built-in defaults')"
if has deployed; then echo "- mailsiftd (deployed, real-daemon rows): $mailsiftd, $("$mailsiftd" --version 2>/dev/null | head -n 1)"; fi
echo "- bogofilter: $(bogofilter -V 2>&1 | head -n 1) (Debian $(dpkg-query -W -f '${Version}' bogofilter 2>/dev/null || echo '?')), defaults (-C), cutoffs 0.99 / 0.45"
if [[ -z $bf_cache ]]; then
    echo "- bogofilter cache: off (--no-bogofilter-cache): every bogofilter row computed in this run"
else
    cached_rows=$(if [[ -s $tmp/cache-used ]]; then sort "$tmp/cache-used" | awk -F'\t' '{ printf "%s%s (%s, key %.12s)", (NR > 1 ? ", " : ""), $1, $3, $2 }'; fi)
    stored_rows=$(if [[ -s $tmp/cache-stored ]]; then sort "$tmp/cache-stored" | awk -F'\t' '{ printf "%s%s", (NR > 1 ? ", " : ""), $1 }'; fi)
    echo "- bogofilter cache: $bf_cache; rows from it (their runs' figures, CPU included, of the date said): ${cached_rows:-none}; computed in this run and kept: ${stored_rows:-none}"
fi
echo "- command: \`$command_line\`; protocols: ${protocols[*]}; $max_jobs jobs at a time"
echo "- corpora: $corpora$( ((strip_collection)) && echo ', copies without the Received, Delivered-To, Date and Message-ID fields')"
echo
# Whether any of the tables before the deployed one is printed.
classic=0
if has stream || has online || has split || has class-sorted || has long; then classic=1; fi
if ((classic)); then
echo "Rows: online = TREC online protocol (mailsift \`evaluate --online\`, bogofilter \`-TT\` then \`-s\`/\`-n\`"
echo "per message); split = first half of the index learned, second half classified (spamassassin: sorted"
echo "paths, every 5th tested), mailsift in arrival order (\`learn --index\`) or class by class (\`learn --spam\`,"
echo "then \`learn --ham\`); bogofilter learns every message (\`-s -b\`, \`-n -b\`), so its one split row serves both."
if ((run_stream)); then
    echo "One server's stream: $stream_first's index, then $stream_next's, online, and split: $stream_first"
    echo "learned, $stream_next classified."
fi
echo "10 costliest: the share of the row's misranked spam-ham pairs (a ham scored above a spam, ties half:"
echo "what 1-ROCA% counts) that involve one of its 10 costliest messages."
echo
fi
if ((run_stream)); then
    r=$tmp/r/stream t=$tmp/c/stream
    echo "## one server's stream: $stream_first then $stream_next ($(thousands "$(wc -l <"$t/index")") messages)"
    echo
    rows=("mailsift, online" "$r/ms-online"
          "bogofilter, online" "$r/bf-online"
          "mailsift, split first10k -> next10k, arrival order (learn --index)" "$r/ms-split"
          "mailsift, split first10k -> next10k, class by class (learn --spam, then --ham)" "$r/ms-class"
          "bogofilter, split first10k -> next10k" "$r/bf-split")
    report_table "${rows[@]}"
    echo "online: $(wc -l <"$t/index") messages ($(count "$t/index" spam) spam), $stream_first's index then $stream_next's;" \
        "split: $(wc -l <"$t/train") learned ($(wc -l <"$t/train.spam") spam), $(wc -l <"$t/test") tested ($(count "$t/test" spam) spam)"
    echo
    report_costliest "${rows[@]}"
elif has stream; then
    echo "(one server's stream skipped: it needs $stream_first and $stream_next among the corpora)"
    echo
fi
for name in "${names[@]}"; do
    has online || has split || has class-sorted || break
    r=$tmp/r/$name t=$tmp/c/$name
    echo "## $name"
    echo
    rows=("mailsift, online" "$r/ms-online"
          "bogofilter, online" "$r/bf-online"
          "mailsift, split, arrival order (learn --index)" "$r/ms-split"
          "mailsift, split, class by class (learn --spam, then --ham)" "$r/ms-class"
          "bogofilter, split (either order: the same model)" "$r/bf-split")
    report_table "${rows[@]}"
    notes=()
    if [[ -d $r/bf-split ]]; then notes+=("split: $(wc -l <"$t/train") to learn ($(wc -l <"$t/train.spam") spam), $(wc -l <"$t/test") tested"); fi
    if [[ -d $r/ms-online ]]; then notes+=("online: $(wc -l <"$t/index") messages")
    elif has online; then notes+=("no online run (sorted paths are no arrival order)"); fi
    note=$(printf '%s; ' "${notes[@]}")
    echo "${note%; }"
    echo
    report_costliest "${rows[@]}"
done
if ((run_long)); then
    echo "## long stream: every corpus, one online stream"
    echo
    rows=("mailsift, online" "$tmp/r/long/ms-online" "bogofilter, online" "$tmp/r/long/bf-online")
    report_table "${rows[@]}"
    first=1 parts=()
    for name in "${long_names[@]}"; do
        n=$(wc -l <"$tmp/c/$name/index")
        parts+=("$name $first-$((first + n - 1)) ($(count "$tmp/c/$name/index" spam) spam)")
        first=$((first + n))
    done
    order=$(printf '%s; ' "${parts[@]}")
    echo "$((first - 1)) messages ($(count "$tmp/c/long/index" spam) spam), in this order: ${order%; }"
    echo "(each corpus in its index order, spamassassin in sorted-path order: all its ham, then all its spam)."
    echo
    report_costliest "${rows[@]}"
fi
if ((classic)); then
echo "FPR/FNR/unsure: at each filter's own thresholds (mailsift's configured ones; bogofilter spam >= 0.99,"
echo "ham < 0.45); unsure is neither. Online, CPU is the whole run (classify and learn together): mailsift"
echo "learns in one process (evaluate --online), bogofilter runs two processes per message, so the"
echo "online CPU columns are not comparable; the split columns are. CPU is user+sys per job; $max_jobs jobs ran at"
echo "a time, so they shared the machine. A bogofilter row \"cached DATE\" is the run of that date, taken from"
echo "the bogofilter cache (same messages, bogofilter and procedure), its CPU that run's."
echo "ECE: expected calibration error of the probability over 10 equal bins; the worst bin holding at least"
echo "30 messages, with its |mean predicted - observed spam share|."
echo
fi
# ---------------------------------------------------------------- the deployed table
# fmt_num VALUE DECIMALS: VALUE rounded, or n/a.
fmt_num() { if [[ $1 =~ ^-?[0-9.]+([eE][-+]?[0-9]+)?$ ]]; then printf "%.$2f" "$1"; else echo n/a; fi; }
# deployed_row CORPUS FEEDBACK LABEL DIR UNCORRECTED_DIR [NOTE]: one row; UNCORRECTED_DIR
# holds the unc_* keys (evaluate's), or - for none.
deployed_row() {
    local d=$4 u=$5 note=${6:-} unc=—
    if [[ ! -s $d/m ]]; then printf '| %s | %s | %s | n/a (the job failed) ||||||||\n' "$1" "$2" "$3"; return; fi
    if [[ $u != - ]]; then
        unc="$(get "$u" unc_ham_in_junk) / $(get "$u" unc_spam_in_inbox) / $(fmt_num "$(get "$u" unc_unsure_pct)" 2)$note"
    fi
    local worst=""
    [[ $(get "$d" worst_bin) != n/a ]] &&
        worst=" ($(get "$d" worst_bin): $(fmt_num "$(get "$d" worst_bin_gap)" 3), n=$(get "$d" worst_bin_n))"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s + %s | %s%s | %s |\n' "$1" "$2" "$3" \
        "$(fmt_num "$(get "$d" one_minus_roca_pct)" 4)" "$(fmt_num "$(get "$d" fnr_at_fpr_0.1_pct)" 3)" \
        "$(get "$d" ham_in_junk)" "$(get "$d" spam_in_inbox)" "$(fmt_num "$(get "$d" unsure_pct)" 2)" \
        "$(get "$d" moves_spam)" "$(get "$d" moves_ham)" "$(fmt_num "$(get "$d" ece)" 4)" "$worst" "$unc"
}
# deployed_name LIST: the corpus column.
deployed_name() { if [[ $1 == stream ]]; then echo "one server's stream"; else echo "$1"; fi; }
if ((${#deployed_lists[@]})); then
    echo "## the loop users run (issue 42): half learned class by class, the rest deployed, corrected after each 100"
    echo
    echo "| corpus | feedback | filter, loop | 1-ROCA% | FNR% at FPR<=0.1% | ham in Junk | spam in the inbox | unsure% | users' moves (spam + ham) | ECE (worst bin >= 30: gap, n) | same model never corrected: ham in Junk / spam in the inbox / unsure% |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    for list in "${deployed_lists[@]}"; do
        for feedback in two-sided one-sided; do
            e=$tmp/r/$list/ms-deployed-$feedback l=$tmp/r/$list/dl-deployed-$feedback
            deployed_row "$(deployed_name "$list")" "$feedback" "mailsift, evaluate --deployed" "$e" "$e"
            deployed_row "$(deployed_name "$list")" "$feedback" "mailsift, mailsiftd + mailsift correct" "$l/mailsiftd" "$e" " (a)"
            deployed_row "$(deployed_name "$list")" "$feedback" "bogofilter" "$l/bogofilter" -
        done
    done
    echo
    parts=()
    for list in "${deployed_lists[@]}"; do
        t=$tmp/c/$list n=$(wc -l <"$tmp/c/$list/index")
        awk -v h=$((n / 2)) 'NR <= h' "$t/index" >"$t/deployed.learned"
        awk -v h=$((n / 2)) 'NR > h' "$t/index" >"$t/deployed.deployed"
        part="$(deployed_name "$list"):"
        if [[ $list == stream ]]; then part="$(deployed_name "$list") ($stream_first learned, $stream_next deployed):"; fi
        part+=" $(wc -l <"$t/deployed.learned") learned ($(count "$t/deployed.learned" spam) spam),"
        part+=" $(wc -l <"$t/deployed.deployed") deployed ($(count "$t/deployed.deployed" spam) spam, $(count "$t/deployed.deployed" ham) ham)"
        parts+=("$part")
    done
    note=$(printf '%s; ' "${parts[@]}")
    echo "${note%; }. Not on spamassassin (no index: its sorted paths are no arrival order)$( ((deployed_stream)) && echo "; $stream_first and $stream_next alone are the stream's halves")."
    echo
    echo "The loop: the first half of the index learned class by class (\`learn --spam\`, then \`--ham\`), the rest"
    echo "scored 100 at a time; after each 100, every spam in the inbox (scored ham or unsure) moved to Junk"
    echo "and, two-sided, every ham in Junk moved out, one command a move (mailsift: \`correct\` of the delivered"
    echo "copy; bogofilter: \`-s\`/\`-n\`); one-sided: users never look in Junk. Unsure ham stays in the inbox."
    echo "evaluate --deployed runs it in one process (the daemon's Filter, correct's Trainer) and reports the"
    echo "same model never corrected on the same messages; bench/deployed_loop.py runs it through a real"
    echo "mailsiftd (\`--mailsiftd\`) over the milter protocol on a loopback port, one \`mailsift correct\` process"
    echo "a move, and bogofilter (\`-C\`, cutoffs 0.99 / 0.45: Junk at >= 0.99) beside it."
    echo "The figures of the evaluate rows are evaluate's own (\`--json\`); those of the other rows are"
    echo "deployed_loop.py's (\`--json\`): the real daemon's 1-ROCA% and FNR from the X-Mailsift-Status header's"
    echo "two-decimal uncalibrated-log-odds (ties count half), its ECE from the header's score; bogofilter's"
    echo "from its spamicity, taken as the probability as in the other protocols' tables. Moves: spam moved to Junk +"
    echo "ham moved out of it."
    echo "(a) deployed_loop.py does not measure the model never corrected: these are the evaluate row's"
    echo "figures, of the same model (the same half learned class by class by the same \`learn\`) on the same"
    echo "messages."
    echo
fi

# The summary: one manifest line per corpus x protocol row.
# CORPUS PROTOCOL MAILSIFT_DIR BOGOFILTER_DIR ARRIVAL_DIR (tabs; see accuracy_summary.py).
: >"$tmp/manifest"
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$tmp/manifest"; }
if ((run_stream)); then
    r=$tmp/r/stream
    row stream online "$r/ms-online" "$r/bf-online" -
    row stream split "$r/ms-split" "$r/bf-split" -
    row stream class-sorted "$r/ms-class" "$r/bf-split" "$r/ms-split"
fi
for name in "${names[@]}"; do
    r=$tmp/r/$name arrival=-
    [[ -d $r/ms-split ]] && arrival=$r/ms-split
    if [[ -d $r/ms-online ]]; then row "$name" online "$r/ms-online" "$r/bf-online" -; fi
    if [[ -d $r/ms-split ]]; then row "$name" split "$r/ms-split" "$r/bf-split" -; fi
    if [[ -d $r/ms-class ]]; then row "$name" class-sorted "$r/ms-class" "$r/bf-split" "$arrival"; fi
done
if ((run_long)); then row "long stream" long "$tmp/r/long/ms-online" "$tmp/r/long/bf-online" -; fi
# Deployed rows: deployed CORPUS FEEDBACK LOOP MAILSIFT_DIR BOGOFILTER_DIR UNCORRECTED_DIR.
for list in "${deployed_lists[@]}"; do
    for feedback in two-sided one-sided; do
        e=$tmp/r/$list/ms-deployed-$feedback l=$tmp/r/$list/dl-deployed-$feedback
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' deployed "$(deployed_name "$list")" "$feedback" \
            "evaluate --deployed" "$e" "$l/bogofilter" "$e" >>"$tmp/manifest"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' deployed "$(deployed_name "$list")" "$feedback" \
            "mailsiftd + mailsift correct" "$l/mailsiftd" "$l/bogofilter" "$e" >>"$tmp/manifest"
    done
done
python3 "$bench/accuracy_summary.py" "$tmp/manifest" || echo "(the summary failed: see stderr)"
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
