#!/usr/bin/env bash
# imapsieve_move.sh - the move a user makes (issue 33, item 3): a private
# Dovecot from Debian, configured with the README's IMAPSieve recipe as written
# (dovecot.conf lines, sieve scripts, pipe programs; only their paths
# replaced), serves a maildir of N messages; an IMAP client selects them all in
# the inbox and moves them into Junk with one UID MOVE (each runs the recipe's
# `mailsift correct --spam`), then moves them all back (`correct --ham`). The
# same with the pipe programs calling `bogofilter -s` and `bogofilter -Sn`
# instead. The database (and bogofilter's) holds one server's 20,000 messages,
# copied fresh for every round; the messages are held-out SpamAssassin mail
# without mailsiftd's signature, so each is learned as it is. mailsift runs
# twice: as the README deploys it, each `mailsift correct` handing its message
# to mailsiftd on its correction socket (the daemon, here root, owns the
# database; the mail user may not read it); and with mailsiftd stopped, each
# `mailsift correct` falling back to the database, which the mail user may
# then write. Rounds alternate the three; medians of the wall seconds of each
# MOVE command (it returns when the last pipe program has). A benchmark:
# markdown on stdout.
# Needs root (a mail user, Dovecot) and dovecot-imapd, dovecot-sieve,
# bogofilter (scripts/deps.sh --test --bench).
#
# usage: bench/imapsieve_move.sh [--mailsift PATH] [--mailsiftd PATH] [--messages N] [--rounds R] [--summary FILE]
#   --summary FILE  also append bench/run.sh's summary lines to FILE
set -euo pipefail
export LC_ALL=C
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$repo_root/bench/lib.sh"
# shellcheck source-path=SCRIPTDIR source=targets.sh
. "$repo_root/bench/targets.sh"
# shellcheck source-path=SCRIPTDIR source=../tests/integration/dovecot_private.sh
. "$repo_root/tests/integration/dovecot_private.sh"  # the private Dovecot of the integration test
mailsift=$repo_root/build/src/cli/mailsift
mailsiftd=$repo_root/build/src/daemon/mailsiftd
messages=200
rounds=3
summary_file=
while (($#)); do
    case $1 in
        --mailsift) mailsift=$2; shift 2 ;;
        --mailsiftd) mailsiftd=$2; shift 2 ;;
        --messages) messages=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --summary) summary_file=$2; shift 2 ;;
        -h|--help) sed -n '2,23s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "imapsieve_move: unknown argument $1" >&2; exit 2 ;;
    esac
done
say() { printf '[imapsieve] %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }
((EUID == 0)) || die "needs root (a mail user and a private Dovecot)"
for c in dovecot sievec bogofilter python3 setpriv; do command -v "$c" >/dev/null || die "$c is not installed (scripts/deps.sh --test --bench)"; done
corpora=$repo_root/../shared/corpus
for f in trec07p-first10k trec07p-next10k; do [[ -f $corpora/$f/index ]] || die "no index at $corpora/$f"; done
[[ -d $corpora/spamassassin ]] || die "no SpamAssassin corpus at $corpora/spamassassin"
mailsift=$(realpath "$mailsift")
[[ -x $mailsiftd ]] || die "mailsiftd not found: $mailsiftd"
mailsiftd=$(realpath "$mailsiftd")

mail_user="mailsift-bench-vmail"
created_user=
work=$(mktemp -d -t mailsift-imapsieve.XXXXXX)
dovecot_pid=
daemon_pid=
cleanup() {
    set +e
    [[ -n $daemon_pid ]] && stop_pid "$daemon_pid" 10
    [[ -n $dovecot_pid ]] && stop_pid "$dovecot_pid" 10
    [[ -n $created_user ]] && userdel "$mail_user" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"
if ! id "$mail_user" >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "$mail_user"
    created_user=1
fi
uid=$(id -u "$mail_user") gid=$(id -g "$mail_user")

# ---------------------------------------------------------------- the models, learned once
say "learning one server's 20,000 messages (mailsift and bogofilter)"
: >"$work/empty.conf"
for f in trec07p-first10k trec07p-next10k; do awk -v d="$corpora/$f" '{ print $1, d "/" $2 }' "$corpora/$f/index"; done >"$work/index"
"$mailsift" --config "$work/empty.conf" --db "$work/model.db" learn --index "$work/index" >/dev/null
mkdir -p "$work/bf-model"
awk '$1 == "spam" { print $2 }' "$work/index" | bogofilter -C -d "$work/bf-model" -s -b
awk '$1 == "ham" { print $2 }' "$work/index" | bogofilter -C -d "$work/bf-model" -n -b
find "$corpora/spamassassin" -type f ! -name cmds | sort | awk -v n="$messages" 'NR % 29 == 0 && ++k <= n' >"$work/messages"
n=$(wc -l <"$work/messages")
ham_of() { "$mailsift" --config "$work/empty.conf" --db "$1" stats --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["messages"]["ham"])'; }
model_ham=$(ham_of "$work/model.db")
learned_note="the moved messages as ham, each once"

# ---------------------------------------------------------------- Dovecot with the README's recipe
state=$work/state mail=$work/mail dove=$work/dovecot sieve=$work/dovecot/sieve
mkdir -p "$state" "$mail" "$dove/run" "$dove/state" "$sieve" "$work/bin"
cp "$mailsift" "$work/bin/mailsift"
chmod 755 "$work/bin" "$work/bin/mailsift"
password="bench-$RANDOM$RANDOM"
echo "alice:{PLAIN}$password" >"$dove/users"
imap_port=$(free_port)
mkdir -p "$work/run"
chmod 755 "$work/run"
missing=$(dovecot_readme_recipes "$repo_root/tests/integration" "$repo_root/README.md" "$dove" "$sieve" \
    "$work/bin/mailsift" "$work/mailsift.conf" "$work/run" "$(id -gn "$mail_user")" "$mail_user") || die "README.md has no recipe '$missing'"
cp "$dove/junk.sieve" "$dove/report-spam.sieve" "$dove/report-ham.sieve" "$sieve/"
dovecot_private_conf "$dove" "$work" "$mail" "$uid" "$gid" "$imap_port" >"$dove/dovecot.conf.main"
cp "$dove/learn-spam" "$dove/learn-ham" "$sieve/"
sed -i "s|^sievec |sievec -c $dove/dovecot.conf.main |" "$dove/sieve-setup"
(cd "$dove" && bash -e "$dove/sieve-setup") >"$work/sieve-setup.log" 2>&1 || { cat "$work/sieve-setup.log" >&2; die "sievec failed"; }
dovecot -F -c "$dove/dovecot.conf.main" >>"$work/dovecot-info.log" 2>&1 &
dovecot_pid=$!
for _ in $(seq 100); do port_open "$imap_port" && break; sleep 0.2; done
port_open "$imap_port" || die "Dovecot does not listen on 127.0.0.1:$imap_port"

# use FILTER: the pipe programs, the store and the maildir for a fresh round.
use() {
    rm -rf "$mail/alice" "$state/mailsift.db"* "$work/bf"
    mkdir -p "$mail/alice/cur" "$mail/alice/new" "$mail/alice/tmp"
    local i=0 m
    while read -r m; do
        i=$((i + 1))
        cp "$m" "$mail/alice/cur/$((1700000000 + i)).M$i.bench:2,S"
    done <"$work/messages"
    if [[ $1 == mailsift* ]]; then
        cp "$work/model.db" "$state/mailsift.db"
        cp "$dove/learn-spam" "$dove/learn-ham" "$sieve/"
    else
        cp -r "$work/bf-model" "$work/bf"
        printf '#!/bin/sh\nexec bogofilter -d %s -s\n' "$work/bf" >"$sieve/learn-spam"
        printf '#!/bin/sh\nexec bogofilter -d %s -Sn\n' "$work/bf" >"$sieve/learn-ham"
    fi
    chmod 0755 "$sieve/learn-spam" "$sieve/learn-ham"
    chown -R "$uid:$gid" "$mail"
    if [[ $1 == bogofilter ]]; then chown -R "$uid:$gid" "$work/bf"; fi
    if [[ $1 == mailsift-alone ]]; then  # no mailsiftd: the mail user may write the database
        chown -R "$uid:$gid" "$state"
        chmod 755 "$state"
    else
        chown -R root:root "$state"
        chmod 700 "$state"
    fi
    local port
    port=$(free_port)
    { echo "database = $state/mailsift.db"; echo "listen = inet:127.0.0.1:$port"; cat "$dove/mailsift.conf"; } >"$work/mailsift.conf"
    chmod 644 "$work/mailsift.conf"
    if [[ $1 == mailsift ]]; then  # the README's deployment: corrections through mailsiftd
        local log=$work/mailsiftd.log
        "$mailsiftd" --foreground --config "$work/mailsift.conf" 2>"$log" &
        daemon_pid=$!
        for _ in $(seq 600); do
            grep -q 'loaded model' "$log" && port_open "$port" && return 0
            kill -0 "$daemon_pid" 2>/dev/null || break
            sleep 0.1
        done
        tail -n 5 "$log" >&2
        die "mailsiftd did not load its model"
    fi
}
# done_with FILTER: what use started for it, stopped.
done_with() {
    if [[ $1 == mailsift && -n $daemon_pid ]]; then
        stop_pid "$daemon_pid" 10
        daemon_pid=
    fi
}
# move FROM TO: every message of FROM into TO with one UID MOVE; prints its wall seconds and the count.
move() {
    python3 - "$imap_port" "$password" "$1" "$2" <<'EOF'
import imaplib, sys, time
port, password, src, dst = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
with imaplib.IMAP4("127.0.0.1", port, timeout=600) as imap:
    imap.login("alice", password)
    typ, data = imap.select(src)
    count = int(data[0])
    start = time.monotonic()
    typ, data = imap.uid("MOVE", "1:*", dst)
    took = time.monotonic() - start
    if typ != "OK":
        sys.exit(f"MOVE {src} -> {dst}: {typ} {data}")
    print(f"{took:.3f} {count}")
EOF
}

: >"$work/times"
for ((r = 1; r <= rounds; r++)); do
    for filter in mailsift mailsift-alone bogofilter; do
        use "$filter"
        read -r t_in c_in < <(move INBOX Junk)
        read -r t_out c_out < <(move Junk INBOX)
        done_with "$filter"
        say "round $r, $filter: $c_in into Junk in $t_in s, $c_out back in $t_out s"
        echo "$filter $t_in $t_out $c_in $c_out" >>"$work/times"
        if [[ $filter == mailsift* ]]; then
            # Each message learned as spam, then moved to ham: the model's ham plus N.
            ham=$(ham_of "$state/mailsift.db")
            [[ $ham == $((model_ham + c_in)) ]] || learned_note="NOT the moved messages as ham ($ham ham, expected $((model_ham + c_in)))"
        fi
    done
done
median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ms_in=$(awk '$1 == "mailsift" { print $2 }' "$work/times" | median)
ms_out=$(awk '$1 == "mailsift" { print $3 }' "$work/times" | median)
ma_in=$(awk '$1 == "mailsift-alone" { print $2 }' "$work/times" | median)
ma_out=$(awk '$1 == "mailsift-alone" { print $3 }' "$work/times" | median)
bf_in=$(awk '$1 == "bogofilter" { print $2 }' "$work/times" | median)
bf_out=$(awk '$1 == "bogofilter" { print $3 }' "$work/times" | median)
errors=$(grep -cE ' (Error|Fatal|Panic): ' "$work/dovecot.log" 2>/dev/null || true)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

echo "## The move a user makes: $n messages through Dovecot's IMAPSieve recipe (medians of $rounds rounds)"
echo
each() { awk -v t="$1" -v n="$n" 'BEGIN { printf "%.1f", 1000 * t / n }'; }
echo "| move | mailsift through mailsiftd (the README's recipe): s (ms a message) | mailsift alone, mailsiftd stopped | bogofilter: s (ms a message) | through mailsiftd / bogofilter | alone / bogofilter |"
echo "|---|---|---|---|---|---|"
echo "| inbox -> Junk (correct --spam; bogofilter -s) | $ms_in ($(each "$ms_in")) | $ma_in ($(each "$ma_in")) | $bf_in ($(each "$bf_in")) | $(ratio "$ms_in" "$bf_in") | $(ratio "$ma_in" "$bf_in") |"
echo "| Junk -> inbox (correct --ham; bogofilter -Sn) | $ms_out ($(each "$ms_out")) | $ma_out ($(each "$ma_out")) | $bf_out ($(each "$bf_out")) | $(ratio "$ms_out" "$bf_out") | $(ratio "$ma_out" "$bf_out") |"
echo
echo "Dovecot $(dovecot --version | cut -d' ' -f1), bogofilter $(bogofilter -V 2>&1 | head -1 | awk '{ print $3 }'); Dovecot logged $errors errors; after each mailsift round the database held $learned_note."
echo "Target (bench/targets.sh): at most ${target_imapsieve_ratio}x bogofilter's time."
if [[ -n $summary_file ]]; then
    for move in "into Junk through mailsiftd:$ms_in:$bf_in" "back to the inbox through mailsiftd:$ms_out:$bf_out" \
        "into Junk, mailsiftd stopped:$ma_in:$bf_in" "back, mailsiftd stopped:$ma_out:$bf_out"; do
        IFS=: read -r what ms bf <<<"$move"
        printf 'imapsieve\t%s messages moved %s / bogofilter\t%s\t%s\t%s\n' "$n" "$what" "$(shown '<=' "$target_imapsieve_ratio" x)" \
            "$(ratio "$ms" "$bf")" "$(at_most "$(ratio "$ms" "$bf")" "$target_imapsieve_ratio")" >>"$summary_file"
    done
fi
