# shellcheck shell=bash
# postfix_test.sh's cases on authenticated submission: mail alice submits with
# SMTP AUTH is not scored, and its recipient becomes a contact that mailsiftd
# scores mail from. Sourced by postfix_test.sh, which calls
# authenticated_submission when the SASL user was created; uses
# postfix_cases_mail.sh.

# ---------------------------------------------------------------- authenticated submission: contacts
# alice logs in on the submission port and writes to bob: mailsiftd passes her message
# unscored (skip_authenticated) and makes bob a contact, "sent by alice" (learn_contacts,
# written within stats_interval); it then reloads its model, and plain SMTP mail From
# bob is scored with hdr:sender_in_contacts. A message from bob before that is the
# control. Runs before reject_threshold = 0.5, so that bob's mail cannot be rejected.
BOB=bob@example.org
# alice writes RCPT TO in mixed case; the contact must still be bob@example.org
# (regression: contacts from outgoing mail kept the RCPT's capitalisation).
BOB_RCPT=Bob@Example.ORG

# expect_scan CASE LINE DESCRIPTION: the scan named by the X-Mailsift-Signature of CASE's
# delivered copy is recorded within 10 s and has the feature line LINE.
expect_scan() {
    local case=$1 want=$2 what=$3 file sig features
    if ! file=$(delivered_file "$case"); then
        not_ok "$what (no delivered copy of $case)"
        return
    fi
    sig=$(header_values "$file" X-Mailsift-Signature)
    if ! [[ "$sig" =~ ^[0-9a-fA-F]{32}$ ]]; then
        not_ok "$what (no 32-digit X-Mailsift-Signature on $case: '$sig')"
        return
    fi
    if ! features=$(wait_for 10 scan_features "$sig"); then
        not_ok "$what (no scan $sig recorded in the signatures table within 10 s)"
        return
    fi
    if grep -qxF "$want" <<<"$features"; then
        ok "$what (recorded scan $sig has '${want//$'\t'/<TAB>}')"
    else
        not_ok "$what (recorded scan $sig has no '${want//$'\t'/<TAB>}'; its hdr:sender* lines: $(grep '^hdr:sender' <<<"$features" | sed 's/\t/<TAB>/' | tr '\n' '|'))"
    fi
}

# bob_contact: bob's line in "mailsift contacts list" (ADDRESS<TAB>SOURCE<TAB>ADDED), if any.
bob_contact() { "$MAILSIFT" --db "$DB" contacts list 2>/dev/null | awk -F'\t' -v a="$BOB" '$1 == a'; }
bob_learned() { [[ "$(bob_contact)" == "$BOB"$'\t'"sent by $SASL_USER"$'\t'* ]]; }
MODEL_RELOADS=0
model_reloads() { grep -c 'reloaded model' "$WORK/mailsiftd.log" || true; }
model_reloaded() { [ "$(model_reloads)" -gt "$MODEL_RELOADS" ]; }

authenticated_submission() {
    local file statuses nstatus lines sigs contacts
    cat >"$WORK/bob-1.eml" <<EOF
From: Bob Baker <$BOB>
To: Alice <$SASL_USER@example.test>
Subject: Do we still meet on Friday?
Date: Mon, 9 Sep 2002 10:00:00 +0000
Message-ID: <bob-1@example.org>

Hi Alice, do we still meet on Friday for the project review? Bob
EOF
    cat >"$WORK/alice-1.eml" <<EOF
From: Alice <$SASL_USER@example.test>
To: Bob Baker <$BOB>
Subject: Re: Do we still meet on Friday?
Date: Mon, 9 Sep 2002 11:00:00 +0000
Message-ID: <alice-1@example.test>
In-Reply-To: <bob-1@example.org>

Yes, Friday at ten in the small meeting room. Alice
EOF
    cat >"$WORK/bob-2.eml" <<EOF
From: Bob Baker <$BOB>
To: Alice <$SASL_USER@example.test>
Subject: Re: Do we still meet on Friday?
Date: Mon, 9 Sep 2002 12:00:00 +0000
Message-ID: <bob-2@example.org>
In-Reply-To: <alice-1@example.test>

Great, see you on Friday at ten. I will bring the printed agenda. Bob
EOF

    # Before: bob is nobody's contact, and his mail is scored that way.
    if contacts=$("$MAILSIFT" --db "$DB" contacts list 2>&1) &&
        ! awk -F'\t' -v a="$BOB" '$1 == a { found = 1 } END { exit !found }' <<<"$contacts"; then
        ok "$BOB is not a contact before $SASL_USER writes to him"
    else
        not_ok "$BOB is not a contact before $SASL_USER writes to him (contacts list: $(tr '\t\n' ' |' <<<"$contacts"))"
    fi
    smtp "$SMTP_PORT" "$BOB" frombob1@example.test "$WORK/bob-1.eml"
    expect_delivered frombob1 'Yes|No|Unsure' "mail From $BOB before he is a contact"
    expect_scan frombob1 $'hdr:sender_not_in_contacts\t1' "mail From $BOB before he is a contact is scored as not from a contact"

    # Without logging in, the submission port relays nothing.
    smtp "$SUBMIT_PORT" "$SASL_USER@example.test" noauth1@example.test "$WORK/alice-1.eml"
    if [ "$SEND_RC" -eq 5 ] && [[ "$SEND_OUT" == 554\ rcpt\ * ]]; then
        ok "submission port refuses a client that did not log in ($SEND_OUT)"
    else
        not_ok "submission port refuses a client that did not log in with 554 at RCPT (got: $SEND_OUT)"
    fi

    # alice logs in and writes to bob.
    MODEL_RELOADS=$(model_reloads)
    smtp --auth "$SASL_USER" "$SASL_PASSWORD" "$SUBMIT_PORT" "$SASL_USER@example.test" "$BOB_RCPT" "$WORK/alice-1.eml"
    if [ "$SEND_RC" -eq 0 ]; then
        ok "$SASL_USER logged in (SMTP AUTH) on the submission port and sent to $BOB ($SEND_OUT)"
    else
        not_ok "$SASL_USER logged in (SMTP AUTH) on the submission port and sent to $BOB (got: $SEND_OUT)"
        grep -E 'sasl|SASL' "$WORK/postfix.log" | tail -n 5 | sed 's/^/#   /'
    fi
    if [ "$SEND_RC" -ne 0 ]; then
        :
    elif ! wait_for 20 delivered_file "$BOB_RCPT" >/dev/null; then
        not_ok "$SASL_USER's message delivered to the sink within 20 s"
    else
        file=$(delivered_file "$BOB_RCPT")
        statuses=$(header_values "$file" X-Mailsift-Status)
        nstatus=$(printf '%s' "$statuses" | grep -c . || true)
        if [ "$nstatus" -eq 1 ] && [ "$statuses" = "Skipped, reason=authenticated sender" ]; then
            ok "$SASL_USER's message delivered with X-Mailsift-Status: $statuses"
        else
            not_ok "$SASL_USER's message delivered with exactly one 'X-Mailsift-Status: Skipped, reason=authenticated sender' (got $nstatus: $(printf '%s' "$statuses" | tr '\n' '|'))"
        fi
        lines=$(header_lines "$file" X-Mailsift-Status)
        if [ -n "$lines" ] && ! grep -qv '^X-Mailsift-Status: [^ ]' <<<"$lines"; then
            ok "$SASL_USER's message: X-Mailsift-Status line reads 'Name: value'"
        else
            not_ok "$SASL_USER's message: X-Mailsift-Status line reads 'Name: value' (got: $(tr '\n' '|' <<<"$lines"))"
        fi
        sigs=$(header_values "$file" X-Mailsift-Signature)
        if [ -z "$sigs" ]; then
            ok "$SASL_USER's message, not scored, has no X-Mailsift-Signature"
        else
            not_ok "$SASL_USER's message, not scored, has no X-Mailsift-Signature (got: $(tr '\n' '|' <<<"$sigs"))"
        fi
    fi

    # bob becomes a contact, and mailsiftd picks him up.
    if wait_for 10 bob_learned; then
        ok "contacts list has $BOB with source 'sent by $SASL_USER' ($(bob_contact | sed 's/\t/<TAB>/g'))"
    else
        not_ok "contacts list has $BOB with source 'sent by $SASL_USER' within 10 s (got: '$(bob_contact | sed 's/\t/<TAB>/g')'; Postfix logged: $(grep -o 'sasl_username=[^ ,]*' "$WORK/postfix.log" | tail -n 1))"
    fi
    if wait_for 10 model_reloaded; then
        ok "mailsiftd reloaded its model after the new contact ($(grep 'reloaded model' "$WORK/mailsiftd.log" | tail -n 1 | sed 's/.*\(reloaded model\)/\1/'))"
    else
        not_ok "mailsiftd logged 'reloaded model' within 10 s of the new contact"
    fi

    # After: mail From bob is scored as mail from a contact.
    smtp "$SMTP_PORT" "$BOB" frombob2@example.test "$WORK/bob-2.eml"
    expect_delivered frombob2 'Yes|No|Unsure' "mail From $BOB once he is a contact"
    expect_scan frombob2 $'hdr:sender_in_contacts\t1' "mail From $BOB once he is a contact is scored with the sender-in-contacts feature"
    return 0
}
