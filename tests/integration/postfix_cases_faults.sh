# shellcheck shell=bash
# postfix_test.sh's cases on mailsiftd going away under Postfix: killed, so that
# Postfix tempfails (milter_default_action), restarted and sent the message
# again, and killed inside a milter session. Sourced by postfix_test.sh, which
# calls daemon_down_tempfails, restart_and_resend and killed_inside_session in
# this order, last; uses postfix_cases_mail.sh.

# ---------------------------------------------------------------- daemon down: tempfail
daemon_down_tempfails() {
    { kill -KILL "$DPID" && wait "$DPID"; } 2>/dev/null || true
    if kill -0 "$DPID" 2>/dev/null; then
        not_ok "mailsiftd (pid $DPID) killed with SIGKILL"
    else
        ok "mailsiftd (pid $DPID) killed with SIGKILL"
    fi
    DPID=""

    send tempfail1 "$MESSAGES/ham_build_report.eml"
    if [ "$SEND_RC" -eq 4 ] && [[ "$SEND_OUT" =~ ^4[0-9][0-9]\  ]]; then
        ok "with mailsiftd down, ham_build_report.eml gets a temporary failure ($SEND_OUT)"
    else
        not_ok "with mailsiftd down, ham_build_report.eml gets a 4xx (got: $SEND_OUT)"
    fi
}

# ---------------------------------------------------------------- restart, resend
restart_and_resend() {
    if start_daemon; then
        ok "mailsiftd restarted (pid $DPID)"
        send resend1 "$MESSAGES/ham_build_report.eml"
        expect_delivered resend1 No "resent ham_build_report.eml after the restart"
    else
        not_ok "mailsiftd restarted and listens again"
    fi
}

# ---------------------------------------------------------------- killed during a session
# mailsiftd stopped (SIGSTOP) while Postfix opens a milter session for a new SMTP
# client: Postfix waits on the milter inside that session; mailsiftd is then killed
# (SIGKILL) there. Postfix applies milter_default_action = tempfail to the message,
# and the resend after the restart is delivered: nothing is lost.
milter_session_open() {
    [ -n "$(ss -Htn state established "( dport = :$MILTER_PORT )" 2>/dev/null)" ]
}
killed_inside_session() {
    if [ -n "$DPID" ]; then
        kill -STOP "$DPID"
        MIDSESSION_OUT="$WORK/midsession.out"
        ( rc=0; timeout 60 python3 "$HERE/smtp_send.py" 127.0.0.1 "$SMTP_PORT" sender@example.org \
              midsession1@example.test "$MESSAGES/ham_patch_review.eml" >"$MIDSESSION_OUT" 2>&1 || rc=$?
          echo "$rc" >"$MIDSESSION_OUT.rc" ) &
        SENDER_PID=$!
        if wait_for 20 milter_session_open; then
            ok "with mailsiftd stopped, Postfix opened a milter session and waits on it"
        else
            not_ok "with mailsiftd stopped, Postfix opened a milter session within 20 s"
        fi
        sleep 1  # Postfix has sent its first milter command and waits for the answer
        { kill -KILL "$DPID" && wait "$DPID"; } 2>/dev/null || true
        DPID=""
        wait "$SENDER_PID" || true
        midsession_rc=$(cat "$MIDSESSION_OUT.rc" 2>/dev/null || echo missing)
        midsession_out=$(cat "$MIDSESSION_OUT" 2>/dev/null)
        if [ "$midsession_rc" = 4 ] && [[ "$midsession_out" =~ ^4[0-9][0-9]\  ]]; then
            ok "mailsiftd killed inside the session: Postfix tempfailed the message ($midsession_out)"
        else
            not_ok "mailsiftd killed inside the session: Postfix answers 4xx (status $midsession_rc: $midsession_out)"
        fi
        if start_daemon; then
            ok "mailsiftd restarted after the kill inside a session (pid $DPID)"
            send resend2 "$MESSAGES/ham_patch_review.eml"
            expect_delivered resend2 No "resent ham_patch_review.eml after the restart"
        else
            not_ok "mailsiftd restarted after the kill inside a session"
        fi
    else
        not_ok "mailsiftd running before the kill inside a session"
    fi
}
