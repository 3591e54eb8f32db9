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
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LUA="$HERE/mailsift.lua"

# ---------------------------------------------------------------- prerequisites
read_args "$@"
need_commands miltertest python3

make_workdir miltertest
MILTER_PORT=$(free_port)
note "work directory $WORK; mailsiftd 127.0.0.1:$MILTER_PORT; $(miltertest -V 2>&1 | head -n 1)"

# ---------------------------------------------------------------- model and daemon
train_model
launch_daemon

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

reload_config 0.5
if [ -n "$RELOADED" ]; then
    run_lua reject "$MESSAGES/spam_cheap_pills.eml" "$MESSAGES/ham_patch_review.eml"
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
