#!/usr/bin/env bash
# scan_size.sh - what a recorded scan costs on disk: the SpamAssassin corpus sent
# through a private Postfix with mailsiftd as its milter, then the bytes of the
# signatures table and its indexes divided by the scans recorded. A benchmark,
# not a test: it prints the numbers and exits 0 whenever it ran (1 when setup
# failed or a message could not be sent).
#
# usage: bench/scan_size.sh [--corpus DIR] [--connections N] [--keep]
#            [--mailsiftd PATH] [--mailsift PATH]
#
#   --corpus DIR      SpamAssassin corpus (default ../shared/corpus/spamassassin);
#                     every file under it is sent
#   --connections N   parallel SMTP sessions (default 8)
#   --keep            keep the work directory (logs, queue, database)
#   --mailsiftd PATH, --mailsift PATH   the binaries (default build/src/...),
#                     e.g. an older build, to compare
#
# How: the model is learned from the corpus's spam/ and easy_ham/ (the features a
# scan records do not depend on the model; its verdicts do). mailsiftd starts on
# that database with its defaults (record_signatures = on). Postfix relays what
# it accepts to an SMTP sink. When every message is answered and the queue is
# empty, mailsiftd is stopped by PID (it writes its last scans on the way out)
# and SQLite's dbstat table gives the pages of signatures, its UNIQUE index and
# its scanned_at index. Also printed: the database file's growth per scan.
# Needs root (postfix start).
set -Eeuo pipefail
export LC_ALL=C
export PATH="$PATH:/usr/sbin:/sbin"

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$repo_root/bench/lib.sh"  # the private Postfix and mailsiftd, stop_pid
mailsiftd=$repo_root/build/src/daemon/mailsiftd
mailsift=$repo_root/build/src/cli/mailsift
corpus=$repo_root/../shared/corpus/spamassassin
send_py=$repo_root/bench/smtp_send_corpus.py
connections=8
keep=0

usage() { sed -n '8,15s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
while (($#)); do
    case $1 in
        --corpus)      corpus=${2:?--corpus needs a directory}; shift 2 ;;
        --connections) connections=${2:?--connections needs a number}; shift 2 ;;
        --keep)        keep=1; shift ;;
        --mailsiftd)   mailsiftd=${2:?--mailsiftd needs a path}; shift 2 ;;
        --mailsift)    mailsift=${2:?--mailsift needs a path}; shift 2 ;;
        -h|--help)     usage; exit 0 ;;
        *)             usage >&2; exit 2 ;;
    esac
done

say() { printf '[scan-size] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; show_logs; exit 1; }
start_seconds=$SECONDS

work=''
show_logs() { show_bench_logs mailsiftd.log postfix.log postfix-cmd.log sink.log send.log; }
cleanup() {
    set +e
    stop_bench_parts
    wait 2>/dev/null
    if [[ -n $work && -d $work ]]; then
        if ((keep)); then say "kept $work"; else rm -rf "$work"; fi
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[[ $(id -u) -eq 0 ]] || die "a private Postfix instance (postfix start, chown) needs root"
command -v postfix >/dev/null || die "postfix not found (scripts/deps.sh --test installs it)"
[[ -x $mailsiftd && -x $mailsift ]] || die "build first: $mailsiftd, $mailsift"
mailsiftd=$(realpath "$mailsiftd") mailsift=$(realpath "$mailsift")
[[ -d $corpus/spam && -d $corpus/easy_ham ]] || die "corpus not found: $corpus (needs spam/ and easy_ham/)"
corpus=$(realpath "$corpus")

work=$(realpath "$(mktemp -d "${TMPDIR:-/tmp}/mailsift-scansize.XXXXXX")")
chmod 755 "$work"
distinct_ports 3
smtpd_port=${ports[0]} milter_port=${ports[1]} sink_port=${ports[2]}

db=$work/model.db
say "learning $corpus/spam and $corpus/easy_ham"
learn_corpus_model "$db" "$corpus"
bytes_before=$(stat -c %s "$db")
start_mailsiftd "$db" "$milter_port" /dev/null
start_bench_sink "$sink_port" "$work/sink"

pfetc=$work/etc queue=$work/queue
mkdir -p "$pfetc"
{
    echo "# Private Postfix instance for bench/scan_size.sh: nothing here refers to /etc/postfix."
    postfix_base_main_cf "$work" "$queue" "$sink_port" mailsift-scan-size
    echo "smtpd_milters = inet:127.0.0.1:$milter_port"
    echo "message_size_limit = 0"
} >"$pfetc/main.cf"
{
    echo "127.0.0.1:$smtpd_port inet n - n - $((connections + 4)) smtpd"
    postfix_base_services
} >"$pfetc/master.cf"
start_bench_postfix "$smtpd_port"

say "sending every message under $corpus over $connections sessions"
t=$SECONDS
sent=$(python3 "$send_py" 127.0.0.1 "$smtpd_port" "$connections" "$corpus" 2>"$work/send.log") ||
    die "sending failed: $sent"
send_seconds=$((SECONDS - t))
queue_empty() { postqueue -c "$pfetc" -p 2>/dev/null | grep -q 'Mail queue is empty'; }
wait_for 300 queue_empty || die "the Postfix queue did not empty within 300 s"
stop_pid "$dpid"
dpid=''

python3 - "$db" "$bytes_before" "$sent" "$send_seconds" <<'PY'
import os, sqlite3, sys
db, before, sent, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
c = sqlite3.connect(db)
scans = c.execute("SELECT count(*) FROM signatures").fetchone()[0]
payload = c.execute("SELECT coalesce(avg(length(features)), 0) FROM signatures").fetchone()[0]
pages = dict(c.execute("SELECT name, sum(pgsize) FROM dbstat WHERE name IN "
                       "(SELECT name FROM sqlite_schema WHERE tbl_name = 'signatures') GROUP BY name"))
version = c.execute("PRAGMA user_version").fetchone()[0]
c.close()
after = os.path.getsize(db)
table = pages.get("signatures", 0)
indexes = sum(v for k, v in pages.items() if k != "signatures")
per = lambda b: f"{b / scans:,.0f}" if scans else "-"
print(f"messages          : {sent}")
print(f"schema version    : {version}")
print(f"scans recorded    : {scans:,} (sent in {secs} s)")
print(f"features column   : {payload:,.0f} B per scan on average")
print(f"signatures table  : {table:,} B, {per(table)} B per scan")
print(f"its two indexes   : {indexes:,} B, {per(indexes)} B per scan")
print(f"bytes per scan    : {per(table + indexes)} (table and indexes, on disk)")
print(f"file growth       : {after - before:,} B, {per(after - before)} B per scan")
# The console's history (issue 41: a line and its signature together <= 2 KB):
# its table and each of its indexes apart, so that an index shows what it costs.
c = sqlite3.connect(db)
lines = c.execute("SELECT count(*) FROM history").fetchone()[0]
objects = c.execute("SELECT name, sum(pgsize) FROM dbstat WHERE name IN "
                    "(SELECT name FROM sqlite_schema WHERE tbl_name = 'history') GROUP BY name ORDER BY 2 DESC").fetchall()
widths = c.execute("SELECT avg(length(explanation)), avg(length(subject) + length(sender) + length(recipients) + "
                   "length(from_header) + length(to_header) + length(message_id) + length(queue_id) + "
                   "length(client_address) + length(helo) + length(action) + length(reason)) FROM history").fetchone()
c.close()
hist = sum(v for _, v in objects)
perl = lambda b: f"{b / lines:,.0f}" if lines else "-"
print(f"history lines     : {lines:,}; explanation {widths[0] or 0:,.0f} B, text fields {widths[1] or 0:,.0f} B per line on average")
for name, size in objects:
    print(f"  {name:<22}: {size:,} B, {perl(size)} B per line")
print(f"history per line  : {perl(hist)} B (table and indexes, on disk)")
print(f"line + signature  : {per(table + indexes) if scans else '-'} + {perl(hist)} B")
PY
echo "run time $((SECONDS - start_seconds)) s"
