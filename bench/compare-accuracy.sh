#!/usr/bin/env bash
# compare-accuracy.sh - accuracy of mailsift, bogofilter and SpamAssassin's Bayes
# classifier alone, side by side, on the same split of the SpamAssassin public
# corpus. A benchmark, not a test: it prints a table and exits 0 whenever it ran.
#
# usage: bench/compare-accuracy.sh [--mailsift PATH] [--corpus DIR] [--jobs N] [--sa-auto-expire]

# The run_* functions are called indirectly ("run_$tool"):
# shellcheck disable=SC2317
set -euo pipefail

# Byte-order sort (the split is the same on every machine) and a '.' decimal point.
export LC_ALL=C

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=corpus_split.sh
. "$repo_root/bench/corpus_split.sh"
mailsift=$repo_root/build/src/cli/mailsift
corpus=$repo_root/../shared/corpus/spamassassin
jobs=$(nproc 2>/dev/null || echo 1)   # parallel SpamAssassin scoring processes
sa_auto_expire=0                      # 1: SpamAssassin's default token expiry at --sync
roc=$repo_root/bench/roc.py
metrics=$repo_root/bench/fnr_at_fpr.py

usage() {
    sed -n '2,6s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
    cat <<'EOF'

  --mailsift PATH     mailsift binary (default: build/src/cli/mailsift in the repository)
  --corpus DIR        corpus with easy_ham, easy_ham_2, hard_ham, spam, spam_2
                      (default: ../shared/corpus/spamassassin next to the repository)
  --jobs N            SpamAssassin scoring processes in parallel (default: nproc)
  --sa-auto-expire    train SpamAssassin with its default token expiry at sync
                      (bayes_auto_expire 1, max 150,000 tokens) instead of keeping
                      every token as mailsift and bogofilter do
EOF
}
while (($#)); do
    case $1 in
        --mailsift)       mailsift=${2:?--mailsift needs a path}; shift 2 ;;
        --corpus)         corpus=${2:?--corpus needs a directory}; shift 2 ;;
        --jobs)           jobs=${2:?--jobs needs a number}; shift 2 ;;
        --sa-auto-expire) sa_auto_expire=1; shift ;;
        -h|--help)        usage; exit 0 ;;
        *)                usage >&2; exit 2 ;;
    esac
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "--jobs needs a positive integer" >&2; exit 2; }

say() { printf '[compare-accuracy] %s\n' "$*" >&2; }
start_seconds=$SECONDS
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')

# ---------------------------------------------------------------- tools
# Plain Debian packages, installed when missing. SpamAssassin without its
# recommends: sa-compile (rule compilation with a C compiler) is not needed.
apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" ||
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"; }
}
missing=()
command -v bogofilter >/dev/null || missing+=(bogofilter)
command -v python3 >/dev/null    || missing+=(python3)
command -v perl >/dev/null       || missing+=(perl)
{ command -v sa-learn >/dev/null && perl -MMail::SpamAssassin -e 1 2>/dev/null; } || missing+=(spamassassin)
[[ -x /usr/bin/time ]]           || missing+=(time)
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    apt_install "${missing[@]}" >&2
fi

[[ -d $corpus ]] || { echo "corpus directory not found: $corpus" >&2; exit 2; }
corpus=$(cd "$corpus" && pwd)
[[ $mailsift == /* ]] || mailsift=$PWD/$mailsift

tmp=$(mktemp -d -t mailsift-accuracy.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT      # make sure the EXIT trap also runs on ^C / kill
trap 'exit 143' TERM

# Every filter runs with its built-in defaults and a fresh database given
# explicitly: mailsift gets an empty config file (neither /etc/mailsift nor
# $MAILSIFT_CONFIG applies), bogofilter gets -C, SpamAssassin gets a private
# site config directory, an empty user_prefs and its own HOME (below).
unset MAILSIFT_DB MAILSIFT_CONFIG BOGOFILTER_DIR
: >"$tmp/empty.conf"
mkdir -p "$tmp/res"

# ---------------------------------------------------------------- corpus split
# The project's development split: line NR of `find | sort`, every 5th is test.
corpus_labels "$corpus" "$tmp/all.labels"
if awk -F'\t' '$1 ~ /[[:space:]:*?[]/ { bad = 1 } END { exit !bad }' "$tmp/all.labels"; then
    # bogofilter's output is space separated; sa-learn globs its folder names.
    echo "corpus paths with white space or any of : * ? [ are not supported" >&2
    exit 2
fi
skipped=$(awk -F'\t' '$2 == "-"' "$tmp/all.labels" | wc -l)
((skipped == 0)) || say "note: $skipped files outside spam, spam_2, easy_ham, easy_ham_2, hard_ham are ignored"
dev_split "$tmp/all.labels" "$tmp"
cut -f1 "$tmp/test.labels" >"$tmp/test.list"
n_train_spam=$(wc -l <"$tmp/train.spam")
n_train_ham=$(wc -l <"$tmp/train.ham")
n_test_spam=$(awk -F'\t' '$2 == "spam"' "$tmp/test.labels" | wc -l)
n_test_ham=$(awk -F'\t' '$2 == "ham"' "$tmp/test.labels" | wc -l)
n_test=$((n_test_spam + n_test_ham))
((n_test > 0 && n_train_spam > 0 && n_train_ham > 0)) ||
    { echo "no usable split under $corpus" >&2; exit 2; }
say "split: train $n_train_spam spam + $n_train_ham ham, test $n_test_spam spam + $n_test_ham ham"

# Warm the page cache so that no filter pays for the first disk read.
cut -f1 "$tmp/all.labels" | xargs -d '\n' cat >/dev/null

# ---------------------------------------------------------------- helpers
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# cpu_sum FILE: user+sys seconds summed over the lines /usr/bin/time -f '%U %S' wrote.
cpu_sum() { awk 'NF == 2 && $1 ~ /^[0-9.]+$/ { c += $1 + $2 } END { printf "%.1f", c }' "$1"; }
timed() { /usr/bin/time -f '%U %S' -a -o "$cpu" "$@"; }   # appends to $cpu

# to_roc_input TOOL PREDICTIONS: PREDICTIONS is PATH<TAB>VERDICT<TAB>SCORE; join
# with the test labels by path into res/TOOL.tsv = LABEL<TAB>SCORE<TAB>VERDICT.
to_roc_input() {
    local tool=$1 pred=$2 got
    awk -F'\t' -v OFS='\t' 'NR == FNR { label[$1] = $2; next }
        ($1 in label) && !seen[$1]++ { print label[$1], $3, $2 }' \
        "$tmp/test.labels" "$pred" >"$tmp/res/$tool.tsv"
    got=$(wc -l <"$tmp/res/$tool.tsv")
    ((got == n_test)) || say "warning: $tool scored $got of the $n_test test messages"
}

# record TOOL TRAIN_WALL TRAIN_CPU SCORE_WALL SCORE_CPU, then the metrics.
record() {
    local tool=$1
    printf 'train_wall %s\ntrain_cpu %s\nscore_wall %s\nscore_cpu %s\n' "$2" "$3" "$4" "$5" \
        >"$tmp/res/$tool.time"
    "$roc" "$tmp/res/$tool.tsv" >"$tmp/res/$tool.roc"
    "$metrics" --fpr 0.1 --fpr 1 --threshold 0.9 "$tmp/res/$tool.tsv" >"$tmp/res/$tool.metrics"
}

# ---------------------------------------------------------------- mailsift
run_mailsift() {
    local d=$tmp/ms cls rc t0 t1 t2 cpu
    mkdir "$d"; cpu=$d/cpu; : >"$cpu"
    t0=$(now)
    for cls in spam ham; do
        rc=0
        timed "$mailsift" --config "$tmp/empty.conf" --db "$d/m.db" \
            learn "--$cls" --files-from "$tmp/train.$cls" >>"$d/log" 2>&1 || rc=$?
        # Exit 1 means "some input unusable": the rest was learned.
        ((rc <= 1)) || { tail -n 5 "$d/log" >&2; return 1; }
        ((rc == 0)) || say "warning: mailsift learn --$cls: some input unusable (exit 1)"
    done
    t1=$(now); local train_cpu; train_cpu=$(cpu_sum "$cpu"); : >"$cpu"
    rc=0
    timed "$mailsift" --config "$tmp/empty.conf" --db "$d/m.db" \
        classify --files-from "$tmp/test.list" >"$d/out" 2>>"$d/log" || rc=$?
    t2=$(now)
    ((rc <= 1)) || { tail -n 5 "$d/log" >&2; return 1; }
    ((rc == 0)) || say "warning: mailsift classify: some input unusable (exit 1)"
    # PATH VERDICT PROBABILITY LOG_ODDS: rank by the log-odds, which keep
    # separating messages long after the probability has saturated at 0 or 1.
    cut -f1,2,4 "$d/out" >"$d/pred"
    to_roc_input mailsift "$d/pred"
    record mailsift "$(elapsed "$t0" "$t1")" "$train_cpu" "$(elapsed "$t1" "$t2")" "$(cpu_sum "$cpu")"
}

# ---------------------------------------------------------------- bogofilter
run_bogofilter() {
    local d=$tmp/bf flag cls rc t0 t1 t2 cpu
    mkdir -p "$d/db"; cpu=$d/cpu; : >"$cpu"
    t0=$(now)
    # -b reads the file names from stdin: one process per class.
    for cls in spam ham; do
        case $cls in spam) flag=-s ;; ham) flag=-n ;; esac
        timed bogofilter -C -d "$d/db" "$flag" -b <"$tmp/train.$cls" >>"$d/log" 2>&1 ||
            { tail -n 5 "$d/log" >&2; return 1; }
    done
    t1=$(now); local train_cpu; train_cpu=$(cpu_sum "$cpu"); : >"$cpu"
    # Verdicts from -T (PATH S|H|U spamicity). Exit status is that of the last
    # message: 0 spam, 1 ham, 2 unsure, 3 error.
    rc=0; timed bogofilter -C -d "$d/db" -T -b <"$tmp/test.list" >"$d/T" 2>>"$d/log" || rc=$?
    t2=$(now)
    ((rc <= 2)) || { tail -n 5 "$d/log" >&2; return 1; }
    # Scores from -TT (16 digits instead of -T's 6): a second, untimed pass.
    rc=0; bogofilter -C -d "$d/db" -TT -b <"$tmp/test.list" >"$d/TT" 2>>"$d/log" || rc=$?
    ((rc <= 2)) || { tail -n 5 "$d/log" >&2; return 1; }
    awk -v OFS='\t' 'NR == FNR { score[$1] = $NF; next }
        { v = $(NF - 1); v = (v == "S" ? "spam" : v == "H" ? "ham" : v == "U" ? "unsure" : "?")
          print $1, v, ($1 in score ? score[$1] : $NF) }' "$d/TT" "$d/T" >"$d/pred"
    to_roc_input bogofilter "$d/pred"
    record bogofilter "$(elapsed "$t0" "$t1")" "$train_cpu" "$(elapsed "$t1" "$t2")" "$(cpu_sum "$cpu")"
}

# ---------------------------------------------------------------- SpamAssassin
# Bayes alone: every other rule still runs (the Bayes tokenizer's stop words
# come from the default rule set, so the default rules are loaded), but only
# the Bayes probability is used. Network tests are off (-L / local_tests_only,
# dns_available no, skip_rbl_checks 1); the site config is a private copy of
# the Debian plugin list (*.pre) without /etc/spamassassin/local.cf.
sa_scorer=$(cat <<'PERL'
# sa-score SITEDIR PREFS BAYES_PATH HOME LIST: one line per message,
# PATH<TAB>P<TAB>TAG, P = the Bayes probability at full precision ("undef" when
# Bayes did not score the message), TAG = what _BAYES_ would show (%.4f).
use strict;
use warnings;
use Mail::SpamAssassin;
my ($site, $prefs, $bayes_path, $home, $list) = @ARGV;
my $sa = Mail::SpamAssassin->new({
    site_rules_filename => $site,
    userprefs_filename  => $prefs,
    local_tests_only    => 1,        # spamassassin -L
    home_dir_for_helpers => $home,   # state files here, not in ~root/.spamassassin
    dont_copy_prefs     => 1,
    require_rules       => 1,
    # Scoring must leave the database alone: no auto-learn, no expiry, no
    # journal sync of token access times (each worker has its own copy anyway).
    post_config_text    => "bayes_path $bayes_path\nbayes_auto_learn 0\n"
                         . "bayes_auto_expire 0\nbayes_journal_max_size 0\n",
});
$sa->init(1);
open my $lf, '<', $list or die "$list: $!\n";
while (my $path = <$lf>) {
    chomp $path;
    open my $fh, '<', $path or die "$path: $!\n";
    binmode $fh;
    my $text = do { local $/; <$fh> };
    close $fh;
    my $mail = $sa->parse($text);
    my $status = $sa->check($mail);
    my $p = $status->{bayes_score};
    printf "%s\t%s\t%s\n", $path, defined $p ? sprintf('%.17g', $p) : 'undef',
        $status->get_tag('BAYES');
    $status->finish;
    $mail->finish;
}
$sa->finish;
PERL
)

run_spamassassin() {
    local d=$tmp/sa t0 t1 t2 cpu i pids=() rc
    mkdir -p "$d/site" "$d/home" "$d/bayes"; cpu=$d/cpu; : >"$cpu"
    cp /etc/spamassassin/*.pre "$d/site/"
    cat >"$d/site/local.cf" <<EOF
use_bayes 1
use_bayes_rules 1
bayes_path $d/bayes/bayes
bayes_auto_learn 0
bayes_auto_expire $sa_auto_expire
dns_available no
skip_rbl_checks 1
add_header all Bayes _BAYES_
EOF
    : >"$d/prefs"
    printf '%s\n' "$sa_scorer" >"$d/sa-score.pl"
    local -a sa=(--siteconfigpath "$d/site" -p "$d/prefs" -L)
    sed 's/^/spam:file:/' "$tmp/train.spam" >"$d/train.spam"
    sed 's/^/ham:file:/'  "$tmp/train.ham"  >"$d/train.ham"
    # SpamAssassin creates ~/.spamassassin: keep it private. (sa-learn still
    # probes the passwd home's .spamassassin for its global_state_dir: it
    # creates that directory if missing and a test file it removes at once.)
    export HOME=$d/home

    t0=$(now)
    timed sa-learn "${sa[@]}" --no-sync --spam -f "$d/train.spam" >>"$d/log" 2>&1 || { tail -n 5 "$d/log" >&2; return 1; }
    timed sa-learn "${sa[@]}" --no-sync --ham  -f "$d/train.ham"  >>"$d/log" 2>&1 || { tail -n 5 "$d/log" >&2; return 1; }
    timed sa-learn "${sa[@]}" --sync >>"$d/log" 2>&1 || { tail -n 5 "$d/log" >&2; return 1; }
    t1=$(now); local train_cpu; train_cpu=$(cpu_sum "$cpu"); : >"$cpu"
    sa-learn "${sa[@]}" --dump magic >"$d/magic" 2>>"$d/log" || true
    awk '/non-token data: nspam/ { s = $3 } /non-token data: nham/ { h = $3 }
         /non-token data: ntokens/ { t = $3 }
         END { printf "learned_spam %s\nlearned_ham %s\ntokens %s\n", s, h, t }' \
        "$d/magic" >"$tmp/res/sa.db"

    # Score in $jobs processes, each on its own copy of the trained database.
    awk -v n="$jobs" -v dir="$d" '{ print > (dir "/part." (NR - 1) % n) }' "$tmp/test.list"
    for ((i = 0; i < jobs; i++)); do
        [[ -s $d/part.$i ]] || continue
        cp -a "$d/bayes" "$d/bayes.$i"
        timed perl "$d/sa-score.pl" "$d/site" "$d/prefs" "$d/bayes.$i/bayes" "$d/home" "$d/part.$i" \
            >"$d/out.$i" 2>"$d/log.$i" &
        pids+=($!)
    done
    rc=0
    for i in "${pids[@]}"; do wait "$i" || rc=$?; done
    t2=$(now)
    ((rc == 0)) || { tail -n 5 "$d"/log.* >&2; return 1; }
    # A message Bayes did not score gets 0.5, what _BAYES_ shows then.
    # Verdict: spam when p >= 0.5 (Bayes alone has no verdict of its own).
    cat "$d"/out.* | awk -F'\t' -v OFS='\t' -v u="$tmp/res/sa.unscored" '
        { p = $2; if (p == "undef") { p = 0.5; n++ } print $1, (p >= 0.5 ? "spam" : "ham"), p }
        END { print n + 0 > u }' >"$d/pred"
    to_roc_input sa "$d/pred"
    record sa "$(elapsed "$t0" "$t1")" "$train_cpu" "$(elapsed "$t1" "$t2")" "$(cpu_sum "$cpu")"
}

# ---------------------------------------------------------------- run
# Each filter in a subshell with set -e in force; a failure leaves n/a in its
# row and the others still run.
problems=()
for tool in mailsift bogofilter spamassassin; do
    say "$tool: train on $((n_train_spam + n_train_ham)), score $n_test"
    set +e
    ( set -e; "run_$tool" )
    rc=$?
    set -e
    ((rc == 0)) || { say "ERROR: $tool failed (exit $rc); its row shows n/a"; problems+=("$tool failed (exit $rc)"); }
done

# ---------------------------------------------------------------- report
# get TOOL FILE KEY: a value from res/TOOL.FILE "key value" lines, else n/a.
get() {
    local f=$tmp/res/$1.$2
    [[ -s $f ]] || { echo n/a; return; }
    awk -v k="$3" '$1 == k { print $2; found = 1; exit } END { if (!found) print "n/a" }' "$f"
}
row() { printf '%-22s %8s %10s %9s %5s %5s %7s %8s %8s %9s\n' "$@"; }
unsure() {     # unsure TOOL: "spam/ham" counts of unsure verdicts
    local s h; s=$(get "$1" roc unsure_spam); h=$(get "$1" roc unsure_ham)
    if [[ $s == n/a ]]; then echo n/a; else echo "$s/$h"; fi
}
tool_row() {   # tool_row KEY LABEL
    local t=$1
    row "$2" "$(get "$t" roc one_minus_roca_pct)" \
        "$(get "$t" metrics fnr_at_fpr_0.1_pct)" "$(get "$t" metrics fnr_at_fpr_1_pct)" \
        "$(get "$t" roc fp)" "$(get "$t" roc fn)" \
        "$(unsure "$t")" \
        "$(get "$t" time train_wall)" "$(get "$t" time score_wall)" "$(get "$t" time score_cpu)"
}

cpu_model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
mem=$(awk '/^MemTotal/ { printf "%.1f GiB RAM", $2 / 1048576 }' /proc/meminfo 2>/dev/null || true)
ms_version=$("$mailsift" --version 2>/dev/null | head -n 1 || true)
bf_version=$(bogofilter -V 2>&1 | head -n 1 || true)
# (with HOME in $tmp: even -V creates ~/.spamassassin)
sa_version=$(HOME=$tmp spamassassin -V 2>&1 | head -n 1 || true)
sa_pkg=$(dpkg-query -W -f '${Version}' spamassassin 2>/dev/null || echo '?')
bf_pkg=$(dpkg-query -W -f '${Version}' bogofilter 2>/dev/null || echo '?')
sa_rules=/usr/share/spamassassin
for f in /var/lib/spamassassin/[0-9]*/updates_spamassassin_org.cf; do
    [[ -e $f ]] && sa_rules="$(dirname "$f") (sa-update)"
done

echo
echo "accuracy: mailsift vs bogofilter vs SpamAssassin Bayes  $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine:      $(nproc) CPUs, ${cpu_model:-unknown CPU}, ${mem:-?}, $(uname -sr)"
echo "load average: $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?) at the end"
ms_built=$(date -u -r "$mailsift" '+%Y-%m-%d %H:%M:%S UTC' 2>/dev/null || echo '?')
echo "mailsift:     ${ms_version:-n/a (does not run)} ($mailsift, built $ms_built; empty config)"
echo "bogofilter:   ${bf_version:-?} (Debian $bf_pkg; -C, fresh -d dir, cutoffs 0.45/0.99)"
echo "spamassassin: ${sa_version:-?} (Debian $sa_pkg; rules $sa_rules; $(perl -e 'printf "perl %vd", $^V'))"
echo "python3:      $(python3 --version 2>&1)"
echo "corpus:       $corpus"
echo "split:        find | LC_ALL=C sort, every 5th file is test"
echo "              train $((n_train_spam + n_train_ham)) ($n_train_spam spam, $n_train_ham ham)," \
     "test $n_test ($n_test_spam spam, $n_test_ham ham)"
if [[ -s $tmp/res/sa.db ]]; then
    echo "              sa-learn learned $(get sa db learned_spam) spam + $(get sa db learned_ham) ham;" \
         "Bayes DB holds $(get sa db tokens) tokens"
fi
echo
row filter "1-ROCA%" "FNR%@0.1%" "FNR%@1%" FP FN "unsure" "train s" "score s" "score CPU"
row "----------------------" "--------" "----------" "---------" "-----" "-----" "-------" "--------" "--------" "---------"
tool_row mailsift "mailsift (log-odds)"
tool_row bogofilter "bogofilter (-TT)"
tool_row sa "SpamAssassin Bayes"
echo
echo "1-ROCA%: 100 x area above the ROC curve (Mann-Whitney, tied spam/ham pairs count 1/2)."
echo "FNR%@x%: spam not strictly above the threshold that lets at most floor(x% x $n_test_ham)"
echo "  ham score strictly above it (0.1%: $(get mailsift metrics fp_at_fpr_0.1)/$(get bogofilter metrics fp_at_fpr_0.1)/$(get sa metrics fp_at_fpr_0.1) ham above," \
     "1%: $(get mailsift metrics fp_at_fpr_1)/$(get bogofilter metrics fp_at_fpr_1)/$(get sa metrics fp_at_fpr_1); spam tied with it count as missed)."
echo "FP / FN / unsure (spam/ham): at each filter's own verdicts. mailsift: its verdict column;"
echo "  bogofilter: -T S/H/U (spam >= 0.99, ham < 0.45, unsure between: neither FP nor FN);"
echo "  SpamAssassin Bayes alone has no verdict: spam when p >= 0.5. At p >= 0.9 instead:" \
     "FP $(get sa metrics fp_at_ge_0.9), FN $(get sa metrics fn_at_ge_0.9) ($(get sa metrics fn_at_ge_0.9_pct)%)."
echo "Ranking scores: mailsift log-odds; bogofilter -TT spamicity (16 digits); SpamAssassin"
echo "  Bayes probability at full precision (_BAYES_ shows 4 digits). Tied spam/ham pairs:"
echo "  $(get mailsift roc tied_pairs) / $(get bogofilter roc tied_pairs) / $(get sa roc tied_pairs);" \
     "messages at the lowest/highest score: $(get mailsift roc at_min)+$(get mailsift roc at_max) /" \
     "$(get bogofilter roc at_min)+$(get bogofilter roc at_max) / $(get sa roc at_min)+$(get sa roc at_max)."
if ((sa_auto_expire)); then
    echo "SpamAssassin trained with its default auto-expiry at sync (--sa-auto-expire)."
else
    echo "SpamAssassin trained with bayes_auto_expire 0 (keeps every token, like the other two;"
    echo "  its default would expire tokens at sync above 150,000: try --sa-auto-expire)."
fi
echo "SpamAssassin: sa-learn --no-sync per class then --sync; scored in-process through"
echo "  Mail::SpamAssassin (what spamassassin -L -t does) in $jobs parallel processes, all local"
echo "  rules included; Bayes left $(cat "$tmp/res/sa.unscored" 2>/dev/null || echo n/a) messages unscored (p = 0.5)."
echo "Times: wall seconds (train = learn spam + learn ham [+ sync]; score = classifying the test"
echo "  set, one process for mailsift and bogofilter); score CPU = user+sys seconds."
for p in "${problems[@]}"; do echo "NOTE: $p"; done
echo "total runtime: $((SECONDS - start_seconds)) s"
exit 0
