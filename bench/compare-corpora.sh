#!/usr/bin/env bash
# compare-corpora.sh - accuracy of mailsift next to bogofilter on every corpus in
# ../shared/corpus, in both protocols, same messages, same order, same run.
# A benchmark, not a test: it prints one table per corpus and exits 0 whenever
# it ran (2 on bad arguments or a missing corpus folder).
#
# usage: bench/compare-corpora.sh [--mailsift PATH] [--corpora DIR] [--only NAME]...
#                                 [--config FILE] [--protocol split|online]
#                                 [--without-collection-headers] [--class-sorted]
#
# Protocols (issue 13):
#   split   chronological: the first half of the corpus's index is learned, the
#           second half classified (spamassassin, which has no index: sorted
#           paths, every 5th message tested, the rest learned). Each filter learns
#           with its own batch command: mailsift learn --index, the training half
#           in its order (--class-sorted: learn --spam, then learn --ham, as
#           before 2026-11-25); bogofilter -s -b, then -n -b, which learns every
#           message whatever the order. Each classifies the test list in one process.
#   online  TREC: in index order, each message is classified, then learned with
#           its true label, from an empty model; each filter in its own default
#           training regime. Not run on spamassassin: its sorted paths are no
#           arrival order (all ham, then all spam). mailsift: `mailsift evaluate --online` (the same
#           model code as the daemon, learning in memory); bogofilter: -TT then
#           -s or -n per message, every message learned.
# Metrics (the same scripts for both filters): 1-ROCA% (bench/roc.py, on
# mailsift's log-odds and bogofilter's 16-digit spamicity), FNR at FPR <= 0.1%
# and <= 1% (fnr_at_fpr.py), FPR, FNR and unsure share at each
# filter's default thresholds, lam%, calibration of the probability: expected
# calibration error over 10 bins and the worst bin of at least 30 messages
# (calibration.py); messages learned, learn and classify CPU seconds (user+sys),
# database size.
# --without-collection-headers runs both filters on copies of the corpora whose
# Received, Delivered-To, Date and Message-ID fields are removed
# (strip_collection_headers.py): what each filter makes of the mail rather than
# of where and when the corpus was collected.
set -euo pipefail
export LC_ALL=C

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mailsift=$repo_root/build/src/cli/mailsift
corpora=$repo_root/../shared/corpus
config=
only=()
protocols=(split online)
strip_collection=0
class_sorted=0

usage() { sed -n '2,36s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
command_line="bench/compare-corpora.sh${*:+ $*}"
while (($#)); do
    case $1 in
        --mailsift) mailsift=${2:?--mailsift needs a path}; shift 2 ;;
        --corpora)  corpora=${2:?--corpora needs a directory}; shift 2 ;;
        --only)     only+=("${2:?--only needs a corpus name}"); shift 2 ;;
        --config)   config=${2:?--config needs a file}; shift 2 ;;
        --without-collection-headers) strip_collection=1; shift ;;
        --class-sorted) class_sorted=1; shift ;;
        --protocol) case ${2:-} in split|online) protocols=("$2") ;; *) usage >&2; exit 2 ;; esac; shift 2 ;;
        -h|--help)  usage; exit 0 ;;
        *)          usage >&2; exit 2 ;;
    esac
done
[[ -d $corpora ]] || { echo "compare-corpora: no corpus folder at $corpora" >&2; exit 2; }
corpora=$(cd "$corpora" && pwd)
[[ $mailsift == /* ]] || mailsift=$PWD/$mailsift
[[ -x $mailsift ]] || { echo "compare-corpora: $mailsift is not an executable (build first)" >&2; exit 2; }
[[ -z $config ]] || config=$(cd "$(dirname "$config")" && pwd)/$(basename "$config")

say() { printf '[compare-corpora] %s\n' "$*" >&2; }
missing=()
command -v bogofilter >/dev/null || missing+=(bogofilter)
command -v python3 >/dev/null || missing+=(python3)
[[ -x /usr/bin/time ]] || missing+=(time)
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    SUDO=; [[ $(id -u) -eq 0 ]] || SUDO=sudo
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

tmp=$(mktemp -d -t mailsift-corpora.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
unset MAILSIFT_DB MAILSIFT_CONFIG BOGOFILTER_DIR
if [[ -z $config ]]; then config=$tmp/empty.conf; : >"$config"; fi
bench=$repo_root/bench
started=$SECONDS

# cpu CMD...: runs CMD, appends its user+sys seconds to $tmp/cpu.
cpu() { /usr/bin/time -f '%U %S' -a -o "$tmp/cpu" "$@"; }
cpu_total() { awk 'NF == 2 && $1 ~ /^[0-9.]+$/ { c += $1 + $2 } END { printf "%.1f", c }' "$tmp/cpu"; : >"$tmp/cpu"; }
size_of() { du -sb "$@" 2>/dev/null | awk '{ s += $1 } END { printf "%.1f MB", s / 1e6 }'; }

# metrics DIR: DIR/scores = LABEL SCORE VERDICT PROBABILITY (tabs) -> DIR/m key value lines.
metrics() {
    local d=$1
    cut -f1-3 "$d/scores" >"$d/rank"
    cut -f1,4,3 "$d/scores" | awk -F'\t' -v OFS='\t' '{ print $1, $3, $2 }' >"$d/prob"
    {
        python3 "$bench/roc.py" "$d/rank"
        python3 "$bench/fnr_at_fpr.py" --fpr 0.1 --fpr 1 "$d/rank"
        python3 "$bench/calibration.py" "$d/prob"
    } >"$d/m"
}
get() { awk -v k="$2" '$1 == k { $1 = ""; print substr($0, 2); f = 1; exit } END { if (!f) print "n/a" }' "$1/m" 2>/dev/null || echo n/a; }
put() { printf '%s %s\n' "$2" "$3" >>"$1/m"; }

# ---------------------------------------------------------------- corpora
# index NAME: $tmp/NAME/index, lines "LABEL ABSOLUTE_PATH" in the protocol's order.
make_index() {
    local name=$1 dir=$corpora/$1 out=$tmp/$1/index
    mkdir -p "$tmp/$name"
    if [[ -f $dir/index ]]; then
        awk -v d="$dir" '{ print $1, d "/" $2 }' "$dir/index" >"$out"
    else  # spamassassin: sorted paths, the label from the top folder
        (cd "$dir" && find . -type f | sed 's|^\./||' | sort) |
            awk -v d="$dir" '{ print ($0 ~ /^spam/ ? "spam" : "ham"), d "/" $0 }' >"$out"
    fi
}
# split NAME: train.spam, train.ham (paths), test (LABEL PATH), in $tmp/NAME.
make_split() {
    local t=$tmp/$1 n
    n=$(wc -l <"$t/index")
    if [[ -f $corpora/$1/index ]]; then
        awk -v h=$((n / 2)) 'NR <= h' "$t/index" >"$t/train"
        awk -v h=$((n / 2)) 'NR > h' "$t/index" >"$t/test"
    else
        awk 'NR % 5 != 0' "$t/index" >"$t/train"
        awk 'NR % 5 == 0' "$t/index" >"$t/test"
    fi
    awk '$1 == "spam" { print $2 }' "$t/train" >"$t/train.spam"
    awk '$1 == "ham" { print $2 }' "$t/train" >"$t/train.ham"
    cut -d' ' -f2 "$t/test" >"$t/test.list"
}

# ---------------------------------------------------------------- mailsift
ms_split() {
    local t=$tmp/$1 d=$tmp/$1/ms-split cls
    mkdir -p "$d"; : >"$tmp/cpu"
    if ((class_sorted)); then
        for cls in spam ham; do
            cpu "$mailsift" --config "$config" --db "$d/m.db" learn "--$cls" --files-from "$t/train.$cls" >>"$d/log" 2>&1 || true
        done
    else  # the training half in its order, each message with its label
        cpu "$mailsift" --config "$config" --db "$d/m.db" learn --index "$t/train" >>"$d/log" 2>&1 || true
    fi
    local learn_cpu; learn_cpu=$(cpu_total)
    cpu "$mailsift" --config "$config" --db "$d/m.db" classify --files-from "$t/test.list" >"$d/out" 2>>"$d/log" || true
    # PATH VERDICT P LOG_ODDS -> LABEL LOG_ODDS VERDICT P, joined by path.
    awk -F'\t' -v OFS='\t' 'NR == FNR { split($0, a, " "); label[a[2]] = a[1]; next }
        ($1 in label) { print label[$1], $4, $2, $3 }' "$t/test" "$d/out" >"$d/scores"
    metrics "$d"
    put "$d" learn_cpu "$learn_cpu"
    put "$d" classify_cpu "$(cpu_total)"
    put "$d" learned "$("$mailsift" --config "$config" --db "$d/m.db" stats --json |
        python3 -c 'import json,sys; m = json.load(sys.stdin)["messages"]; print(m["spam"] + m["ham"])')"
    put "$d" db "$(size_of "$d/m.db")"
}

ms_online() {
    local t=$tmp/$1 d=$tmp/$1/ms-online
    mkdir -p "$d"; : >"$tmp/cpu"
    awk '{ print $1, $2 }' "$t/index" >"$d/index"
    cpu "$mailsift" --config "$config" evaluate --index "$d/index" --online --json --scores "$d/raw" >"$d/json" 2>>"$d/log" || true
    # PATH LABEL VERDICT P LOG_ODDS -> LABEL LOG_ODDS VERDICT P
    awk -F'\t' -v OFS='\t' '{ print $2, $5, $3, $4 }' "$d/raw" >"$d/scores"
    metrics "$d"
    local total; total=$(cpu_total)
    put "$d" learned "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trained"])' "$d/json")"
    put "$d" cpu_total "$total"
    put "$d" db "in memory"
}

# ---------------------------------------------------------------- bogofilter
# Verdicts from -TT's exit status: 0 spam, 1 ham, 2 unsure (cutoffs 0.99 / 0.45).
bf_split() {
    local t=$tmp/$1 d=$tmp/$1/bf-split
    mkdir -p "$d/db"; : >"$tmp/cpu"
    cpu bogofilter -C -d "$d/db" -s -b <"$t/train.spam" >>"$d/log" 2>&1 || true
    cpu bogofilter -C -d "$d/db" -n -b <"$t/train.ham" >>"$d/log" 2>&1 || true
    local learn_cpu; learn_cpu=$(cpu_total)
    cpu bogofilter -C -d "$d/db" -TT -b <"$t/test.list" >"$d/out" 2>>"$d/log" || true
    # -b -TT prints "PATH SPAMICITY"; the verdict from the default cutoffs.
    awk -v OFS='\t' 'NR == FNR { label[$2] = $1; next }
        ($1 in label) { p = $NF; v = p >= 0.99 ? "spam" : p < 0.45 ? "ham" : "unsure"; print label[$1], p, v, p }' \
        "$t/test" "$d/out" >"$d/scores"
    metrics "$d"
    put "$d" learn_cpu "$learn_cpu"
    put "$d" classify_cpu "$(cpu_total)"
    put "$d" learned "$(wc -l <"$t/train" | tr -d ' ')"
    put "$d" db "$(size_of "$d/db")"
}

bf_online() {
    local t=$tmp/$1 d=$tmp/$1/bf-online label path p rc
    mkdir -p "$d/db"; : >"$tmp/cpu"; : >"$d/scores"
    /usr/bin/time -f '%U %S' -o "$tmp/cpu" bash -c '
        db=$1; index=$2; out=$3
        while read -r label path; do
            rc=0; p=$(bogofilter -C -d "$db" -TT -I "$path" 2>/dev/null) || rc=$?
            # 3: no wordlist yet (before the first message is learned): 0.5, unsure.
            case $rc in 0) v=spam ;; 1) v=ham ;; 2) v=unsure ;; *) p=0.5; v=unsure ;; esac
            printf "%s\t%s\t%s\t%s\n" "$label" "$p" "$v" "$p" >>"$out"
            if [[ $label == spam ]]; then bogofilter -C -d "$db" -s -I "$path"; else bogofilter -C -d "$db" -n -I "$path"; fi
        done <"$index"' _ "$d/db" "$t/index" "$d/scores" 2>>"$d/log" || true
    metrics "$d"
    put "$d" cpu_total "$(cpu_total)"
    put "$d" learned "$(wc -l <"$d/scores" | tr -d ' ')"
    put "$d" db "$(size_of "$d/db")"
}

# ---------------------------------------------------------------- report
pct_of() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", 100 * a / b; else print "n/a" }'; }
report_row() {  # report_row LABEL DIR
    local d=$2 n_ham n_spam n
    n_ham=$(get "$d" n_ham); n_spam=$(get "$d" n_spam); n=$((n_ham + n_spam))
    local cpu
    if [[ $(get "$d" cpu_total) != n/a ]]; then cpu="$(get "$d" cpu_total) (both)"; else cpu="$(get "$d" learn_cpu) / $(get "$d" classify_cpu)"; fi
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s (%s: %s, n=%s) | %s | %s | %s |\n' "$1" \
        "$(get "$d" one_minus_roca_pct)" "$(get "$d" fnr_at_fpr_0.1_pct)" "$(get "$d" fnr_at_fpr_1_pct)" \
        "$(get "$d" fp_pct)" "$(get "$d" fn_pct)" \
        "$(pct_of "$(( $(get "$d" unsure_spam) + $(get "$d" unsure_ham) ))" "$n")" \
        "$(get "$d" lam_pct)" "$(get "$d" ece)" "$(get "$d" worst_bin)" "$(get "$d" worst_bin_gap)" "$(get "$d" worst_bin_n)" \
        "$(get "$d" learned)" "$cpu" "$(get "$d" db)"
}

names=()
for dir in "$corpora"/*/; do
    name=$(basename "$dir")
    if ((${#only[@]})); then
        keep=0; for o in "${only[@]}"; do [[ $o == "$name" ]] && keep=1; done
        ((keep)) || continue
    fi
    names+=("$name")
done
((${#names[@]})) || { echo "compare-corpora: no corpus to run" >&2; exit 2; }
if ((strip_collection)); then
    for name in "${names[@]}"; do
        say "$name: copying without Received, Delivered-To, Date and Message-ID"
        python3 "$bench/strip_collection_headers.py" "$corpora/$name" "$tmp/stripped/$name"
    done
    corpora=$tmp/stripped
fi

for name in "${names[@]}"; do
    make_index "$name"
    make_split "$name"
    for proto in "${protocols[@]}"; do
        [[ $proto == online && ! -f $corpora/$name/index ]] && continue
        say "$name: $proto (mailsift, then bogofilter)"
        "ms_$proto" "$name"
        "bf_$proto" "$name"
    done
done

echo "# mailsift vs bogofilter on every corpus, both protocols"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) CPUs, $(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "- mailsift: $("$mailsift" --version 2>/dev/null | head -n 1) ($(git -C "$repo_root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo_root" diff --quiet 2>/dev/null || echo '+changes')), config: $([[ -s $config ]] && echo "$config" || echo 'built-in defaults')"
echo "- bogofilter: $(bogofilter -V 2>&1 | head -n 1) (Debian $(dpkg-query -W -f '${Version}' bogofilter 2>/dev/null || echo '?')), defaults (-C), cutoffs 0.99 / 0.45"
echo "- command: $command_line"
((strip_collection)) && echo "- corpora: copies without the Received, Delivered-To, Date and Message-ID fields"
((class_sorted)) && echo "- split: mailsift learns all training spam, then all training ham (--class-sorted)"
echo
for name in "${names[@]}"; do
    echo "## $name"
    echo
    echo "| filter, protocol | 1-ROCA% | FNR% at FPR<=0.1% | FNR% at FPR<=1% | FPR% | FNR% | unsure% | lam% | ECE (worst bin >= 30: gap, n) | learned | CPU s learn / classify | database |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    for proto in "${protocols[@]}"; do
        [[ -d $tmp/$name/ms-$proto ]] || continue
        report_row "mailsift, $proto" "$tmp/$name/ms-$proto"
        report_row "bogofilter, $proto" "$tmp/$name/bf-$proto"
    done
    echo
    t=$tmp/$name
    echo "split: $(wc -l <"$t/train") to learn ($(wc -l <"$t/train.spam") spam), $(wc -l <"$t/test") tested; online: $(wc -l <"$t/index") messages"
    echo
done
echo "FPR/FNR/unsure: at each filter's own thresholds (mailsift's configured ones; bogofilter spam >= 0.99,"
echo "ham < 0.45); unsure is neither. Online, CPU is the whole run (classify and learn together): mailsift"
echo "learns in memory in one process (evaluate --online), bogofilter runs two processes per message, so the"
echo "online CPU columns are not comparable; the split columns are."
echo "ECE: expected calibration error of the probability over 10 equal bins; the worst bin holding at least"
echo "30 messages, with its |mean predicted - observed spam share|."
echo "total runtime: $((SECONDS - started)) s"
