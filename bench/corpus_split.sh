# shellcheck shell=bash
# The SpamAssassin corpus as the benchmarks see it, shared by accuracy.sh, speed.sh
# and run.sh. Source it; it defines functions only.

# corpus_labels CORPUS OUT: every file of CORPUS, sorted (C locale), one per line as
# "PATH<TAB>spam|ham|-", the class from the top-level folder ("-": none of the five).
corpus_labels() {
    local corpus=$1 out=$2
    find "$corpus" -type f | LC_ALL=C sort | awk -v root="$corpus/" '
        { rel = substr($0, length(root) + 1); dir = rel; sub(/\/.*/, "", dir) }
        dir == "spam" || dir == "spam_2"                              { print $0 "\tspam"; next }
        dir == "easy_ham" || dir == "easy_ham_2" || dir == "hard_ham" { print $0 "\tham"; next }
        { print $0 "\t-" }   # not part of the five folders
    ' >"$out"
}

# dev_split LABELS DIR: the project's development split (line NR of the sorted list,
# every 5th is test) as DIR/train.spam, DIR/train.ham (paths) and DIR/test.labels.
dev_split() {
    local labels=$1 dir=$2
    awk -F'\t' 'NR % 5 != 0 && $2 == "spam" { print $1 }' "$labels" >"$dir/train.spam"
    awk -F'\t' 'NR % 5 != 0 && $2 == "ham"  { print $1 }' "$labels" >"$dir/train.ham"
    awk -F'\t' 'NR % 5 == 0 && $2 != "-"'                 "$labels" >"$dir/test.labels"
}
