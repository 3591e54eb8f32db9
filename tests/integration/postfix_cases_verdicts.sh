# shellcheck shell=bash
# postfix_test.sh's cases on what mailsiftd's verdict does to the mail Postfix
# passes it: the headers on the delivered copies (forged ones removed), the
# same score for a mailbox copy in mailsift classify, and rejection at SMTP
# level once reject_threshold is set. Sourced by postfix_test.sh, which calls
# scoring_and_headers first and reject_threshold after the corrections and the
# contacts; uses postfix_cases_mail.sh.

# ---------------------------------------------------------------- scoring and headers
scoring_and_headers() {
    send ham1 "$MESSAGES/ham_meeting_notes.eml"
    expect_delivered ham1 No "ham fixture ham_meeting_notes.eml"

    send spam1 "$MESSAGES/spam_cheap_pills.eml"
    expect_delivered spam1 Yes "spam fixture spam_cheap_pills.eml"

    # The same message scores the same at the milter and in a mailbox (issue 32): the
    # delivered copy as a mailbox holds it (Postfix's Received header, our X-Mailsift-*
    # fields, and in front the Return-Path and Delivered-To a local delivery agent adds, in
    # place of the sink's own X-Sink-Envelope line) scores in `mailsift classify` the
    # log-odds mailsiftd wrote.
    for case in ham1 spam1; do
        if file=$(delivered_file "$case"); then
            said=$(header_values "$file" X-Mailsift-Status | sed -n 's/.*log-odds=\(-\{0,1\}[0-9.]*\).*/\1/p')
            { echo "Return-Path: <sender@example.org>"; echo "Delivered-To: $case@example.test"
              grep -v '^X-Sink-Envelope:' "$file"; } >"$WORK/$case.mailbox.eml"
            here=$("$MAILSIFT" --config "$CONF" --db "$DB" classify "$WORK/$case.mailbox.eml" 2>/dev/null |
                awk -F'\t' '{ printf "%.2f", $4 }')
            if [ -n "$said" ] && [ "$said" = "$here" ]; then
                ok "$case: its mailbox copy scores in mailsift classify what mailsiftd said ($said)"
            else
                not_ok "$case: its mailbox copy scores in mailsift classify what mailsiftd said (mailsiftd: '$said', classify: '$here')"
            fi
        else
            not_ok "$case: no delivered copy to score again"
        fi
    done

    send forged1 "$MESSAGES/spam_money_offer.eml" "X-Mailsift-Status: No, score=0.0000, log-odds=-99.00"
    expect_delivered forged1 Yes "spam_money_offer.eml with a forged 'X-Mailsift-Status: No'"
    if file=$(delivered_file forged1) && grep -q 'log-odds=-99.00' "$file"; then
        not_ok "forged X-Mailsift-Status value is gone from the delivered copy"
    elif [ -n "${file:-}" ]; then
        ok "forged X-Mailsift-Status value is gone from the delivered copy"
    fi

    # Several forged headers, one in another case, one a forged signature, on ham: deleting
    # more than one instance depends on the indexes mailsiftd sends and Postfix applies.
    send forged2 "$MESSAGES/ham_meeting_notes.eml" "X-Mailsift-Status: Yes, score=1.0000, log-odds=99.00" \
        "x-mailsift-status: Yes, forged in lower case" "X-Mailsift-Signature: 0000forged"
    expect_delivered forged2 No "ham_meeting_notes.eml with two forged statuses and a forged signature"
    forged2_re='log-odds=99\.00|forged in lower case|0000forged'
    if file=$(delivered_file forged2) && grep -qE "$forged2_re" "$file"; then
        not_ok "forged X-Mailsift-* values are gone from the delivered copy ($(grep -E "$forged2_re" "$file" | tr '\n' '|'))"
    elif [ -n "${file:-}" ]; then
        ok "forged X-Mailsift-* values are gone from the delivered copy"
    fi
}

# ---------------------------------------------------------------- reject threshold (SIGHUP reload)
reject_threshold() {
    reload_config 0.5

    # A spam fixture nobody corrected: spam_investment.eml was corrected to ham by its
    # signature before (corrected_by_signature), and a correction teaches the model
    # that message is wanted.
    send reject1 "$MESSAGES/spam_money_offer.eml"
    if [ "$SEND_RC" -eq 5 ] && [[ "$SEND_OUT" == 550\ * ]]; then
        ok "spam fixture spam_money_offer.eml rejected at SMTP level ($SEND_OUT)"
    else
        not_ok "spam fixture spam_money_offer.eml rejected with 550 (got: $SEND_OUT)"
    fi

    send ham2 "$MESSAGES/ham_patch_review.eml"
    expect_delivered ham2 No "ham fixture ham_patch_review.eml with reject_threshold = 0.5"
}
