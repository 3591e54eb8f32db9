#!/usr/bin/env bash
# invariance.sh - does a message score the same as a file and as a Junk folder
# holds it after delivery? (issue 32, item 1). A model is learned from a
# corpus less every 40th message; each held-out message is then classified
# twice with `mailsift classify`: as the file itself, and as a delivered copy
# the way an IMAP server's Junk folder keeps it: Return-Path, Delivered-To and
# the receiving host's Received in front, mailsiftd's X-Mailsift-Status and
# X-Mailsift-Signature at the end of the header block, CRLF line ends. Prints
# the absolute differences of the log-odds (median, 90th percentile, largest)
# and how many messages differ at all. A benchmark: markdown on stdout.
#
# usage: bench/invariance.sh [--mailsift PATH] [--every N] [--model linear|naive_bayes] [CORPUS_DIR]
#   CORPUS_DIR  a folder of raw messages in class folders or with a TREC index
#               (default ../shared/corpus/spamassassin, its files in path order)
set -euo pipefail
export LC_ALL=C
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mailsift=$repo_root/build/src/cli/mailsift
every=40
model=linear
corpus=$repo_root/../shared/corpus/spamassassin
while (($#)); do
    case $1 in
        --mailsift) mailsift=$2; shift 2 ;;
        --every) every=$2; shift 2 ;;
        --model) model=$2; shift 2 ;;
        -h|--help) sed -n '2,14s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        -*) echo "invariance: unknown option $1" >&2; exit 2 ;;
        *) corpus=$1; shift ;;
    esac
done
[[ -d $corpus ]] || { echo "invariance: no corpus at $corpus" >&2; exit 2; }
corpus=$(cd "$corpus" && pwd)

tmp=$(mktemp -d -t mailsift-invariance.XXXXXX)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$tmp"' EXIT
printf 'model = %s\n' "$model" >"$tmp/m.conf"
# "spam|ham PATH" for every message: the index, or the class from the path
# (the SpamAssassin corpus: spam and spam_2 are spam, the rest ham).
if [[ -f $corpus/index ]]; then
    awk -v d="$corpus" '{ print $1, d "/" $2 }' "$corpus/index"
else
    find "$corpus" -type f ! -name 'cmds' ! -name 'README*' | sort |
        awk '{ print ($0 ~ /\/spam(_2)?\// ? "spam" : "ham"), $0 }'
fi >"$tmp/all"
awk -v n="$every" 'NR % n != 0' "$tmp/all" >"$tmp/train"
awk -v n="$every" 'NR % n == 0' "$tmp/all" >"$tmp/test"
"$mailsift" --config "$tmp/m.conf" --db "$tmp/m.db" learn --index "$tmp/train" >/dev/null

# The delivered copies, one file each, in the test list's order.
mkdir -p "$tmp/plain" "$tmp/junk"
python3 - "$tmp/test" "$tmp/plain" "$tmp/junk" <<'EOF'
import hashlib, sys
test, plain_dir, junk_dir = sys.argv[1:]
for i, line in enumerate(open(test, encoding="utf-8")):
    label, path = line.rstrip("\n").split(" ", 1)
    raw = open(path, "rb").read()
    open(f"{plain_dir}/{i:05d}.eml", "wb").write(raw)
    body = raw
    if body.startswith(b"From "):  # an mbox envelope line is not part of the message
        body = body.split(b"\n", 1)[1] if b"\n" in body else b""
    lf = body.replace(b"\r\n", b"\n")
    end = lf.find(b"\n\n")
    head, rest = (lf, b"") if end < 0 else (lf[: end + 1], lf[end + 1 :])
    verdict = b"Yes" if label == "spam" else b"No"
    sig = hashlib.md5(raw).hexdigest().encode()
    front = (b"Return-Path: <sender@example.net>\n"
             b"Delivered-To: user@example.org\n"
             b"Received: from mx.example.org (mx.example.org [192.0.2.25])\n"
             b"\tby imap.example.org (Postfix) with ESMTP id 4Q1XyZ2kLmz9sT\n"
             b"\tfor <user@example.org>; Fri, 27 Nov 2026 08:00:00 +0000 (UTC)\n")
    ours = (b"X-Mailsift-Status: " + verdict + b", score=0.9990, uncalibrated-log-odds=3.45\n"
            b"X-Mailsift-Signature: " + sig + b"\n")
    copy = (front + head + ours + rest).replace(b"\n", b"\r\n")
    open(f"{junk_dir}/{i:05d}.eml", "wb").write(copy)
EOF
n=$(wc -l <"$tmp/test")
"$mailsift" --config "$tmp/m.conf" --db "$tmp/m.db" classify "$tmp/plain" | sort >"$tmp/plain.out"
"$mailsift" --config "$tmp/m.conf" --db "$tmp/m.db" classify "$tmp/junk" | sort >"$tmp/junk.out"
echo "## A message as a file and as a Junk folder holds it ($model, $(basename "$corpus"), every ${every}th of $(wc -l <"$tmp/all") held out: $n)"
echo
echo "| messages | differ | median abs. difference | 90th percentile | largest | verdicts changed |"
echo "|---|---|---|---|---|---|"
paste "$tmp/plain.out" "$tmp/junk.out" | awk -F'\t' '
    { d = $4 - $8; if (d < 0) d = -d; print d, ($2 != $6) }' | sort -g | awk -v n="$n" '
    { d[NR] = $1; if ($1 > 1e-9) differ++; changed += $2 }
    END {
        printf "| %d | %d | %.4f | %.4f | %.4f | %d |\n", NR, differ, d[int((NR + 1) / 2)], d[int(NR * 0.9 + 0.999)], d[NR], changed
        if (NR != n) { print "invariance: classified " NR " of " n > "/dev/stderr"; exit 1 }
    }'
