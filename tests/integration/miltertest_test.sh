#!/usr/bin/env bash
# Milter-protocol integration test with a second, independent client: Debian's
# miltertest(8) (OpenDKIM's libmilter-based MTA simulator) runs mailsift.lua
# against a running mailsiftd.
#
# usage: miltertest_test.sh MAILSIFTD MAILSIFT
#
# Scenario "score" (reject_threshold = off): spam with a forged
# X-Mailsift-Status header, then ham on the same milter connection.
# Scenario "reject" (reject_threshold = 0.5 after SIGHUP): spam gets the
# configured 550 reply, ham on the same connection is still tagged.
# Everything stays on 127.0.0.1 under one mktemp -d directory. Prints
# "ok - ..." / "not ok - ..." per check and "N passed, M failed" last; exit
# status 0 only when nothing failed, 1 when something did, 77 (skipped) when
# miltertest is missing and cannot be installed (not root).
# MAILSIFT_IT_KEEP=1 keeps the temporary directory.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 MAILSIFTD MAILSIFT" >&2
    exit 2
fi
MAILSIFTD=$(realpath "$1")
MAILSIFT=$(realpath "$2")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MESSAGES=$(cd "$HERE/../data/messages" && pwd)
LUA="$HERE/mailsift.lua"
export PATH="$PATH:/usr/sbin:/sbin"
START_TIME=$SECONDS

PASSED=0
FAILED=0
WORK=""
DPID=""

ok() { echo "ok - $*"; PASSED=$((PASSED + 1)); }
not_ok() { echo "not ok - $*"; FAILED=$((FAILED + 1)); }
note() { echo "# $*"; }

summary_and_exit() {
    if [ "$FAILED" -ne 0 ] && [ -n "$WORK" ] && [ -s "$WORK/mailsiftd.log" ]; then
        note "---- last lines of mailsiftd.log ----"
        tail -n 40 "$WORK/mailsiftd.log" | sed 's/^/#   /'
    fi
    note "run time $((SECONDS - START_TIME))s"
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ] && exit 0 || exit 1
}

bail() {
    not_ok "$*"
    summary_and_exit
}

cleanup() {
    set +e
    if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
        kill -TERM "$DPID" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$DPID" 2>/dev/null
    fi
    wait 2>/dev/null
    if [ -n "$WORK" ] && [ -d "$WORK" ]; then
        if [ -n "${MAILSIFT_IT_KEEP:-}" ]; then
            echo "# kept $WORK" >&2
        else
            rm -rf "$WORK"
        fi
    fi
}
trap cleanup EXIT
trap 'echo "# interrupted"; exit 130' INT TERM

# ---------------------------------------------------------------- prerequisites
[ -x "$MAILSIFTD" ] || bail "mailsiftd is executable ($MAILSIFTD)"
[ -x "$MAILSIFT" ] || bail "mailsift is executable ($MAILSIFT)"

missing=()
command -v miltertest >/dev/null 2>&1 || missing+=(miltertest)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "# SKIP: $0: ${missing[*]} not installed, and installing needs root"
        exit 77
    fi
    note "installing ${missing[*]}"
    apt_install() {
        DEBIAN_FRONTEND=noninteractive timeout 600 apt-get -o DPkg::Lock::Timeout=120 \
            install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1
    }
    apt_install || { timeout 300 apt-get update >/dev/null 2>&1 && apt_install; } ||
        bail "apt-get install ${missing[*]}"
fi

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

port_open() {
    timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

wait_for() {  # wait_for SECONDS COMMAND...
    local deadline=$((SECONDS + $1))
    shift
    while ! "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mailsift-miltertest.XXXXXX")
MILTER_PORT=$(free_port)
note "work directory $WORK; mailsiftd 127.0.0.1:$MILTER_PORT; $(miltertest -V 2>&1 | head -n 1)"

# ---------------------------------------------------------------- model and daemon
DB="$WORK/model.db"
if "$MAILSIFT" --db "$DB" learn --spam "$MESSAGES"/spam_*.eml >"$WORK/learn.log" 2>&1 &&
    "$MAILSIFT" --db "$DB" learn --ham "$MESSAGES"/ham_*.eml >>"$WORK/learn.log" 2>&1; then
    ok "trained a model on 3 spam and 3 ham fixtures"
else
    sed 's/^/#   /' "$WORK/learn.log"
    bail "trained a model on 3 spam and 3 ham fixtures"
fi

CONF="$WORK/mailsift.conf"
write_conf() {  # write_conf REJECT_THRESHOLD
    cat >"$CONF" <<EOF
# mailsiftd configuration for miltertest_test.sh
listen = inet:127.0.0.1:$MILTER_PORT
database = $DB
reject_threshold = $1
reject_reply = 550 5.7.1 Message rejected as spam
EOF
}

# Ready: listening, and the model loaded (mailsiftd loads it on a thread of its own
# after it starts listening, answering with the default action until then).
daemon_ready() {
    kill -0 "$DPID" 2>/dev/null && port_open "$MILTER_PORT" &&
        grep -q 'listening on' "$WORK/mailsiftd.log" && grep -q 'loaded model' "$WORK/mailsiftd.log"
}

write_conf off
"$MAILSIFTD" --foreground --config "$CONF" >"$WORK/mailsiftd.log" 2>&1 &
DPID=$!
daemon_up_or_gone() { daemon_ready || ! kill -0 "$DPID" 2>/dev/null; }
if wait_for 15 daemon_up_or_gone && daemon_ready; then
    ok "mailsiftd started (pid $DPID) and listens on 127.0.0.1:$MILTER_PORT"
else
    if ! kill -0 "$DPID" 2>/dev/null; then
        rc=0
        wait "$DPID" || rc=$?
        note "mailsiftd exited with status $rc"
        DPID=""
    fi
    bail "mailsiftd started and listens on 127.0.0.1:$MILTER_PORT"
fi

# ---------------------------------------------------------------- miltertest runs
# run_lua SCENARIO SPAM HAM: runs mailsift.lua, relays its ok/not ok lines into this
# script's count, and checks that the script ran to its end and miltertest exited 0.
run_lua() {
    local scenario=$1 spam=$2 ham=$3 out rc=0 line
    out=$(cd "$WORK" && timeout 60 miltertest -s "$LUA" -D "port=$MILTER_PORT" -D "spam=$spam" \
        -D "ham=$ham" -D "scenario=$scenario" 2>&1) || rc=$?
    while IFS= read -r line; do
        case $line in
            "ok - "*) ok "[$scenario] ${line#ok - }" ;;
            "not ok - "*) not_ok "[$scenario] ${line#not ok - }" ;;
            "# lua done"*) ;;
            *) note "[$scenario] $line" ;;
        esac
    done <<<"$out"
    if [ "$rc" -eq 0 ] && grep -q '^# lua done' <<<"$out"; then
        ok "[$scenario] miltertest ran mailsift.lua to its end (exit status 0)"
    else
        not_ok "[$scenario] miltertest ran mailsift.lua to its end (exit status $rc)"
    fi
}

run_lua score "$MESSAGES/spam_money_offer.eml" "$MESSAGES/ham_meeting_notes.eml"

write_conf 0.5
reloads_before=$(grep -c 'configuration reloaded' "$WORK/mailsiftd.log" || true)
kill -HUP "$DPID"
reloaded() { [ "$(grep -c 'configuration reloaded' "$WORK/mailsiftd.log" || true)" -gt "$reloads_before" ]; }
if wait_for 10 reloaded; then
    ok "mailsiftd reloaded its configuration on SIGHUP (reject_threshold = 0.5)"
    run_lua reject "$MESSAGES/spam_cheap_pills.eml" "$MESSAGES/ham_patch_review.eml"
else
    not_ok "mailsiftd reloaded its configuration on SIGHUP within 10 s"
fi

# ---------------------------------------------------------------- clean stop
if kill -0 "$DPID" 2>/dev/null; then
    ok "mailsiftd still running after both miltertest runs"
    kill -TERM "$DPID"
    stopped() { ! kill -0 "$DPID" 2>/dev/null; }
    if wait_for 15 stopped; then
        rc=0
        wait "$DPID" 2>/dev/null || rc=$?
        if [ "$rc" -eq 0 ]; then
            ok "mailsiftd stopped cleanly on SIGTERM (exit status 0)"
        else
            not_ok "mailsiftd stopped cleanly on SIGTERM (exit status $rc)"
        fi
    else
        not_ok "mailsiftd stopped within 15 s of SIGTERM"
    fi
else
    not_ok "mailsiftd still running after both miltertest runs"
fi

summary_and_exit
