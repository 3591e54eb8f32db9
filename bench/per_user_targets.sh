#!/usr/bin/env bash
# per_user_targets.sh - issues 44's and 58's per-user targets in one run, at
# one commit, on one machine. A benchmark, not a test: it prints markdown and exits 0 whenever it
# ran, whatever the numbers.
#
#   1. Gray mail: the graymail.py stream (one newsletter, three users who
#      disagree about it), the deployed loop (evaluate --deployed --split
#      head:0.5, users = the copies' recipients) with per_user = off and
#      recipient; each user's moves and copies on the wrong side after their
#      5th move (target: none for alice and bob, carol as the site model).
#   2. No loss where users agree: the same loop, off and recipient, on one
#      server's 20,000-message stream and on every other corpus with an
#      arrival order (csdmc2010, trec06c-sample): ham in Junk, FNR at FPR
#      <= 0.1% and the users' moves no worse with recipient.
#   3. A correction through mailsiftd's correction socket, beside bogofilter
#      (one_message.sh), and the 200-message IMAPSieve move (imapsieve_move.sh).
#   4. Scale: throughput and peak RSS with 10,000 recipients (per_user_load.sh).
#   5. Issue 58, gray mail as users disagree: two users correcting one sender's
#      newsletter opposite ways through a real mailsiftd's correction socket,
#      at once and after the scans are written, a third never (disagreement.py).
#   6. Issue 58, abuse: the correction socket held by user nobody (socket_hold.py).
#
# usage: bench/per_user_targets.sh [--mailsift PATH] [--mailsiftd PATH] [--skip LIST]
#   --skip LIST   leave out sections, comma separated: gray, agree, speed, scale,
#                 disagree, abuse
# Needs the corpora in ../shared/corpus; root, Dovecot and bogofilter for the
# move (scripts/deps.sh --test --bench).
set -euo pipefail
export LC_ALL=C
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench=$repo_root/bench
corpora=$repo_root/../shared/corpus
mailsift=$repo_root/build/src/cli/mailsift
mailsiftd=$repo_root/build/src/daemon/mailsiftd
skip=,
while (($#)); do
    case $1 in
        --mailsift) mailsift=$2; shift 2 ;;
        --mailsiftd) mailsiftd=$2; shift 2 ;;
        --skip) skip=",$2,"; shift 2 ;;
        -h|--help) sed -n '2,28s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "per_user_targets: unknown argument $1" >&2; exit 2 ;;
    esac
done
runs() { [[ $skip != *",$1,"* ]]; }
tmp=$(mktemp -d -t mailsift-peruser.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for mode in off recipient; do printf 'per_user = %s\n' "$mode" >"$tmp/$mode.conf"; done

# deployed INDEX NAME MODE: the deployed loop's JSON in $tmp/NAME-MODE.json, its scores beside.
deployed() {
    "$mailsift" --config "$tmp/$3.conf" evaluate --index "$1" --deployed --split head:0.5 --json \
        --scores "$tmp/$2-$3.scores" >"$tmp/$2-$3.json"
}
# row NAME MODE: one table row of a deployed run.
row() {
    python3 - "$tmp/$1-$2.json" "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
c, d = j["confusion"], j["deployed"]
print(f"| {sys.argv[2]} | {sys.argv[3]} | {j['one_minus_roca_percent']:.4f} | {j['fnr_at_fpr_0.1_percent']:.3f} "
      f"| {c['ham']['spam']} | {d['moved_to_junk']} + {d['moved_from_junk']} |")
PY
}
# no_loss NAME: recipient no worse than off on ham in Junk, FNR at FPR <= 0.1% and moves.
no_loss() {
    python3 - "$tmp/$1-off.json" "$tmp/$1-recipient.json" "$1" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def m(j):
    d = j["deployed"]
    return (j["confusion"]["ham"]["spam"], j["fnr_at_fpr_0.1_percent"], d["moved_to_junk"] + d["moved_from_junk"])
names = ("ham in Junk", "FNR at FPR <= 0.1%", "moves")
worse = [f"{n} {x} -> {y}" for n, x, y in zip(names, m(a), m(b)) if y > x + 1e-9]
print(f"- {sys.argv[3]}: " + ("met" if not worse else "NOT met: " + ", ".join(worse)))
PY
}

echo "# Issues 44's and 58's per-user targets in one run ($(git -C "$repo_root" rev-parse --short HEAD), $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs)"
if runs gray; then
    echo
    echo "## 1. Gray mail (graymail.py; evaluate --deployed --split head:0.5)"
    python3 "$bench/graymail.py" build --out "$tmp/gray" --corpora "$corpora" >/dev/null
    for mode in off recipient; do deployed "$tmp/gray/index" gray "$mode"; done
    echo
    echo "| stream | per_user | 1-ROCA% | FNR% at FPR <= 0.1% | ham in Junk | moves (to Junk + out of Junk) |"
    echo "|---|---|---|---|---|---|"
    for mode in off recipient; do row gray "$mode"; done
    for mode in off recipient; do
        echo
        echo "per_user = $mode:"
        echo
        python3 "$bench/graymail.py" report --out "$tmp/gray" --scores "$tmp/gray-$mode.scores"
    done
    echo
    echo "Target: with recipient, after at most 5 moves each, none of alice's and bob's later copies on the wrong side; carol's as the site model's."
fi
if runs agree; then
    echo
    echo "## 2. No loss where users agree (the same loop, per_user = off and recipient)"
    for f in trec07p-first10k trec07p-next10k; do
        awk -v d="$corpora/$f" '{ print $1, d "/" $2 }' "$corpora/$f/index"
    done >"$tmp/stream.index"
    names=(stream)
    indexes=("$tmp/stream.index")
    for c in csdmc2010 trec06c-sample; do
        if [[ -f $corpora/$c/index ]]; then names+=("$c"); indexes+=("$corpora/$c/index"); fi
    done
    for i in "${!names[@]}"; do
        for mode in off recipient; do deployed "${indexes[$i]}" "${names[$i]}" "$mode"; done
    done
    echo
    echo "| corpus | per_user | 1-ROCA% | FNR% at FPR <= 0.1% | ham in Junk | moves (to Junk + out of Junk) |"
    echo "|---|---|---|---|---|---|"
    for n in "${names[@]}"; do for mode in off recipient; do row "$n" "$mode"; done; done
    echo
    echo "Target: recipient no worse than off on each corpus:"
    for n in "${names[@]}"; do no_loss "$n"; done
fi
if runs speed; then
    echo
    echo "## 3. A correction through mailsiftd, and the IMAPSieve move"
    echo
    "$bench/one_message.sh" --mailsift "$mailsift" --mailsiftd "$mailsiftd" |
        awk '/^Corrections handed to mailsiftd/ { on = 1 } on && !/^Targets/'
    echo
    "$bench/imapsieve_move.sh" --mailsift "$mailsift" --mailsiftd "$mailsiftd" --messages 200 --rounds 3 2>/dev/null |
        awk '/^## / { on = 1 } on'
fi
if runs scale; then
    echo
    echo "## 4. Scale: 10,000 recipients (per_user_load.sh)"
    echo
    echo '```'
    "$bench/per_user_load.sh" --mailsift "$mailsift" --mailsiftd "$mailsiftd"
    echo '```'
fi
if runs disagree; then
    echo
    python3 "$bench/disagreement.py" --mailsift "$mailsift" --mailsiftd "$mailsiftd" --corpora "$corpora" |
        sed 's/^## /## 5. /'
fi
if runs abuse; then
    echo
    python3 "$bench/socket_hold.py" --mailsift "$mailsift" --mailsiftd "$mailsiftd" | sed 's/^## /## 6. /'
fi
