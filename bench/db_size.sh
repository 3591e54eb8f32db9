#!/usr/bin/env bash
# db_size.sh - what a learned message costs on disk, part by part (issue 32,
# item 5): mailsift learns an index into a fresh SQLite file, bogofilter learns
# the same messages (-s -b, then -n -b) into its own database, and the bytes of
# each part of mailsift's file (SQLite's dbstat: the tables and their indexes)
# are divided by the messages learned. A benchmark: markdown on stdout.
#
# usage: bench/db_size.sh [--mailsift PATH] [INDEX...]
#   INDEX  TREC index files ("spam|ham PATH", paths relative to the index),
#          learned in the order given (default: ../shared/corpus's
#          trec07p-first10k and trec07p-next10k, one server's 20,000 messages)
set -euo pipefail
export LC_ALL=C
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mailsift=$repo_root/build/src/cli/mailsift
indexes=()
while (($#)); do
    case $1 in
        --mailsift) mailsift=$2; shift 2 ;;
        -h|--help) sed -n '2,11s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) indexes+=("$1"); shift ;;
    esac
done
if ((${#indexes[@]} == 0)); then
    corpora=$repo_root/../shared/corpus
    indexes=("$corpora/trec07p-first10k/index" "$corpora/trec07p-next10k/index")
fi
for f in "${indexes[@]}"; do [[ -f $f ]] || { echo "db_size: no index at $f" >&2; exit 2; }; done
command -v bogofilter >/dev/null || { echo "db_size: bogofilter is not installed (scripts/deps.sh --bench)" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "db_size: sqlite3 is not installed" >&2; exit 2; }

tmp=$(mktemp -d -t mailsift-dbsize.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/empty.conf"
# One index of absolute paths, in the order given.
for f in "${indexes[@]}"; do
    d=$(cd "$(dirname "$f")" && pwd)
    awk -v d="$d" '{ print $1, d "/" $2 }' "$f"
done >"$tmp/index"
n=$(wc -l <"$tmp/index")
"$mailsift" --config "$tmp/empty.conf" --db "$tmp/m.db" learn --index "$tmp/index" >/dev/null
awk '$1 == "spam" { print $2 }' "$tmp/index" | bogofilter -C -d "$tmp/bf" -s -b
awk '$1 == "ham" { print $2 }' "$tmp/index" | bogofilter -C -d "$tmp/bf" -n -b

# Each table with its indexes: dbstat's name is the table's or an index's.
part_of() {
    case $1 in
        features|classes|model_changes|sqlite_autoindex_features*) echo "counts (naive Bayes)" ;;
        linear_pages|linear_state|linear_pages_seq) echo "weights (linear scorer)" ;;
        messages|linear_messages|sqlite_autoindex_messages*|sqlite_autoindex_linear_messages*) echo "learned-message records (digests, features: unlearn and moves)" ;;
        linear_samples|sqlite_autoindex_linear_samples*) echo "rehearsal samples (views, compressed)" ;;
        *) echo "other (contacts, schema, counters)" ;;
    esac
}
sqlite3 "$tmp/m.db" "SELECT name, sum(pgsize) FROM dbstat GROUP BY name" | while IFS='|' read -r name bytes; do
    printf '%s\t%s\n' "$(part_of "$name")" "$bytes"
done | awk -F'\t' -v n="$n" '
    { b[$1] += $2; total += $2 }
    END {
        for (p in b) printf "| %s | %.1f MB | %.0f |\n", p, b[p] / 1e6, b[p] / n | "sort"
        close("sort")
        printf "| all of mailsift.db | %.1f MB | %.0f |\n", total / 1e6, total / n
    }' >"$tmp/rows"
bf=$(du -sb "$tmp/bf" | awk '{ print $1 }')
echo "| part | size | bytes per learned message |"
echo "|---|---|---|"
cat "$tmp/rows"
printf '| bogofilter wordlist.db, same messages | %.1f MB | %.0f |\n' "$(echo "$bf / 1000000" | bc -l)" "$((bf / n))"
echo
echo "$n messages learned ($(awk '$1 == "spam"' "$tmp/index" | wc -l) spam) in index order with \`mailsift learn --index\`, built-in defaults; $("$mailsift" --version | head -n 1)."
