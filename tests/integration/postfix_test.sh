#!/usr/bin/env bash
# Real-MTA integration test: a private Postfix instance calls mailsiftd as its
# smtpd milter; messages go in over SMTP and are checked where Postfix delivers
# them (a small SMTP sink), or at the SMTP reply when they must not arrive.
# A second smtpd of the same instance is a submission port with SMTP AUTH (Cyrus
# SASL, a private sasldb): mail a user submits there is not scored, and its
# recipients become contacts.
#
# usage: postfix_test.sh MAILSIFTD MAILSIFT
#
# Everything runs on 127.0.0.1, on free high ports, under one mktemp -d
# directory; the system's own Postfix (/etc/postfix, port 25) is never touched.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, M failed" last;
# exit status 0 only when nothing failed, 1 when something did, 77 (skipped)
# when not run as root. Set MAILSIFT_IT_KEEP=1 to keep the temporary directory
# (logs, queue, delivered mail) for inspection.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=postfix_base.sh
. "$(dirname "${BASH_SOURCE[0]}")/postfix_base.sh"

SINKPID=""
PF_STARTED=""
PFETC=""
LOGS+=(postfix.log sink.log)

CLEANUP_STEPS+=(stop_postfix stop_sink)   # after mailsiftd, in this order

# ---------------------------------------------------------------- prerequisites
read_args "$@"
if [ "$(id -u)" -ne 0 ]; then
    echo "# SKIP: $0: a private Postfix instance (postfix start, chown) needs root"
    exit 77
fi

need_commands --before-install preseed_postfix postfix python3 saslpasswd2=sasl2-bin
need_packages libsasl2-modules   # the PLAIN and LOGIN mechanisms

make_workdir postfix
chmod 755 "$WORK"   # Postfix daemons run as user postfix below it
# other_port PORT...: a free port that is none of the PORTs.
other_port() {
    local p
    p=$(free_port)
    while [[ " $* " == *" $p "* ]]; do p=$(free_port); done
    echo "$p"
}
SMTP_PORT=$(free_port)
MILTER_PORT=$(other_port "$SMTP_PORT")
SINK_PORT=$(other_port "$SMTP_PORT" "$MILTER_PORT")
SUBMIT_PORT=$(other_port "$SMTP_PORT" "$MILTER_PORT" "$SINK_PORT")
note "work directory $WORK; smtpd 127.0.0.1:$SMTP_PORT, submission (SMTP AUTH) 127.0.0.1:$SUBMIT_PORT, mailsiftd 127.0.0.1:$MILTER_PORT, sink 127.0.0.1:$SINK_PORT"

# ---------------------------------------------------------------- model and mailsiftd
train_model
launch_daemon

# ---------------------------------------------------------------- SMTP sink
start_sink

# ---------------------------------------------------------------- SASL user
# Cyrus SASL with a private sasldb (neither /etc/postfix/sasl nor /etc/sasldb2 is used).
# Upstream Postfix looks for smtpd.conf in cyrus_sasl_config_path; Debian's Postfix
# ignores that parameter and always searches $config_directory/sasl, then /usr/lib/sasl.
# So the file goes to the private instance's own etc/sasl, and main.cf names that
# directory as well. smtpd opens the sasldb when a client logs in, after dropping
# privileges to the postfix user: the postfix group may read it.
SASL_REALM=localhost.localdomain   # myhostname in main.cf below: Cyrus's default realm
SASL_USER=alice
SASL_PASSWORD="wonderland-$RANDOM$RANDOM"
SASL_READY=""
SASL_CONF_DIR="$WORK/etc/sasl"   # $PFETC/sasl
mkdir -p "$SASL_CONF_DIR"
printf '%s\n' "pwcheck_method: auxprop" "auxprop_plugin: sasldb" "sasldb_path: $WORK/sasldb2" \
    "mech_list: PLAIN LOGIN" >"$SASL_CONF_DIR/smtpd.conf"
if printf '%s' "$SASL_PASSWORD" |
    saslpasswd2 -p -c -f "$WORK/sasldb2" -u "$SASL_REALM" "$SASL_USER" >"$WORK/saslpasswd2.log" 2>&1 &&
    chown root:postfix "$WORK/sasldb2" && chmod 640 "$WORK/sasldb2" &&
    sasldblistusers2 -f "$WORK/sasldb2" 2>&1 | tee -a "$WORK/saslpasswd2.log" | grep -q "^$SASL_USER@$SASL_REALM:"; then
    ok "SASL user $SASL_USER@$SASL_REALM created in the private sasldb $WORK/sasldb2"
    SASL_READY=1
else
    sed 's/^/#   /' "$WORK/saslpasswd2.log"
    not_ok "SASL user $SASL_USER@$SASL_REALM created with saslpasswd2 in $WORK/sasldb2"
fi

# ---------------------------------------------------------------- private Postfix
PFETC="$WORK/etc"
mkdir -p "$PFETC"
{
    echo "# Private Postfix instance for postfix_test.sh: nothing here refers to /etc/postfix."
    postfix_base_main_cf "$WORK" "$WORK/queue" "$SINK_PORT" mailsift-test
    cat <<EOF
smtpd_milters = inet:127.0.0.1:$MILTER_PORT
# SMTP AUTH: switched on (smtpd_sasl_auth_enable) for the submission service in
# master.cf only. Plaintext PLAIN/LOGIN on loopback, no TLS. With smtpd_sasl_local_domain
# empty, Cyrus looks a login name without a realm up in the realm myhostname and
# reports it unchanged ({auth_authen} = alice); were it set, the name would come back
# as alice@REALM.
smtpd_sasl_type = cyrus
smtpd_sasl_path = smtpd
cyrus_sasl_config_path = $SASL_CONF_DIR
smtpd_sasl_local_domain =
smtpd_sasl_security_options = noanonymous
smtpd_tls_auth_only = no
EOF
} >"$PFETC/main.cf"

# Only the services this test needs; no chroot (the queue directory holds no copy of /etc).
# The submission smtpd relays only for clients that logged in, so whatever it accepts
# came through SMTP AUTH (and mailsiftd got {auth_authen}).
{
    cat <<EOF
127.0.0.1:$SMTP_PORT inet n - n - - smtpd
127.0.0.1:$SUBMIT_PORT inet n - n - - smtpd
  -o syslog_name=postfix/submission
  -o smtpd_sasl_auth_enable=yes
  -o smtpd_relay_restrictions=permit_sasl_authenticated,reject
  -o smtpd_recipient_restrictions=permit_sasl_authenticated,reject
EOF
    postfix_base_services
} >"$PFETC/master.cf"


# "postfix check" creates the queue directories with the right owners; "start"
# runs the same integrity check again and starts this instance's master.
if postfix_start "$SMTP_PORT" "$SUBMIT_PORT"; then
    ok "private Postfix $(postconf -d -h mail_version 2>/dev/null) started, smtpd on 127.0.0.1:$SMTP_PORT and submission on 127.0.0.1:$SUBMIT_PORT, milter inet:127.0.0.1:$MILTER_PORT"
else
    sed 's/^/#   /' "$WORK/postfix-cmd.log"
    bail "private Postfix started (postfix -c $PFETC start)"
fi

# ---------------------------------------------------------------- helpers
SEND_OUT=""
SEND_RC=0
# smtp [--auth USER PASSWORD] PORT SENDER RECIPIENT FILE [HEADER...]: one message to the
# private Postfix on 127.0.0.1:PORT; SEND_OUT is smtp_send.py's line, SEND_RC its status.
smtp() {
    local auth=()
    if [ "$1" = "--auth" ]; then
        auth=("$1" "$2" "$3")
        shift 3
    fi
    local port=$1
    shift
    SEND_RC=0
    SEND_OUT=$(timeout 60 python3 "$HERE/smtp_send.py" "${auth[@]}" 127.0.0.1 "$port" "$@" 2>&1) || SEND_RC=$?
}

# send CASE FILE [HEADER...]: SMTP to the private Postfix, recipient CASE@example.test.
send() {
    local case=$1 file=$2
    shift 2
    smtp "$SMTP_PORT" sender@example.org "$case@example.test" "$file" "$@"
}

# delivered_file CASE: prints the sink file of CASE (an address, or CASE@example.test), if any.
delivered_file() {
    local f rcpt=$1
    [[ "$rcpt" == *@* ]] || rcpt="$rcpt@example.test"
    for f in "$SINK"/*-"$rcpt.eml"; do
        [ -e "$f" ] && { echo "$f"; return 0; }
    done
    return 1
}

# Values of header NAME (case-insensitive, unfolded) in the header block of FILE, one per line.
header_values() {
    awk -v want="$(printf '%s' "$2" | tr '[:upper:]' '[:lower:]')" '
        function flush(   n, name, v) {
            if (cur != "") {
                n = index(cur, ":")
                name = tolower(substr(cur, 1, n - 1))
                if (n > 0 && name == want) { v = substr(cur, n + 1); sub(/^[ \t]+/, "", v); print v }
            }
            cur = ""
        }
        /^\r?$/ { flush(); exit }
        /^[ \t]/ { cur = cur " " $0; next }
        { flush(); cur = $0 }
        END { flush() }' "$1"
}

# The physical first line of each header NAME (case-insensitive) in the header block of FILE.
header_lines() {
    awk -v want="$(printf '%s' "$2" | tr '[:upper:]' '[:lower:]')" '
        /^\r?$/ { exit }
        { n = index($0, ":"); if (n > 0 && tolower(substr($0, 1, n - 1)) == want) print }' "$1"
}

STATUS_RE='^(Yes|No|Unsure), score=[01]\.[0-9]{4}, uncalibrated-log-odds=-?[0-9]+\.[0-9]{2}'

# expect_delivered CASE VERDICT DESCRIPTION: the last send was accepted, the copy arrives
# with exactly one well-formed X-Mailsift-Status naming VERDICT (Yes, No or Unsure, or
# alternatives such as "Yes|No|Unsure") and one X-Mailsift-Signature.
expect_delivered() {
    local case=$1 verdict=$2 what=$3 file statuses nstatus sigs nsig lines
    if [ "$SEND_RC" -ne 0 ]; then
        not_ok "$what: accepted by Postfix (got: $SEND_OUT)"
        return
    fi
    ok "$what: accepted by Postfix ($SEND_OUT)"
    if ! wait_for 20 delivered_file "$case" >/dev/null; then
        not_ok "$what: delivered to the sink within 20 s"
        return
    fi
    file=$(delivered_file "$case")
    statuses=$(header_values "$file" X-Mailsift-Status)
    nstatus=$(printf '%s' "$statuses" | grep -c . || true)
    if [ "$nstatus" -eq 1 ] && [[ "$statuses" =~ $STATUS_RE ]] && [[ "$statuses" =~ ^($verdict), ]]; then
        ok "$what: delivered with X-Mailsift-Status: $statuses"
    else
        not_ok "$what: delivered with exactly one X-Mailsift-Status saying $verdict (got $nstatus: $(printf '%s' "$statuses" | tr '\n' '|'))"
    fi
    # RFC 5322 allows "Name:value", but every MTA and filter writes "Name: value"; a
    # missing space means the milter and the MTA disagree on SMFIP_HDR_LEADSPC.
    lines=$(header_lines "$file" X-Mailsift-Status; header_lines "$file" X-Mailsift-Signature)
    if [ -n "$lines" ] && ! grep -qv '^X-Mailsift-[A-Za-z]*: [^ ]' <<<"$lines"; then
        ok "$what: X-Mailsift-* header lines read 'Name: value'"
    else
        not_ok "$what: X-Mailsift-* header lines read 'Name: value' (got: $(tr '\n' '|' <<<"$lines"))"
    fi
    sigs=$(header_values "$file" X-Mailsift-Signature)
    nsig=$(printf '%s' "$sigs" | grep -c . || true)
    if [ "$nsig" -eq 1 ] && [[ "$sigs" =~ ^[0-9a-fA-F]+$ ]]; then
        ok "$what: delivered with X-Mailsift-Signature: $sigs"
    else
        not_ok "$what: delivered with one hex X-Mailsift-Signature (got $nsig: $(printf '%s' "$sigs" | tr '\n' '|'))"
    fi
}

# ---------------------------------------------------------------- scoring and headers
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

# ---------------------------------------------------------------- correcting a delivered message
# The delivered copy carries Postfix's Received header and ours; `mailsift correct`
# must find the scan by its signature and train what mailsiftd scored.
stats_json() { "$MAILSIFT" --db "$DB" stats --json 2>/dev/null; }
# ham1, spam1 and forged1 differ; forged2 is ham1 again once our headers are ignored.
signature_recorded() { [ "$(stats_json | sed -E 's/.*"signatures":([0-9]+).*/\1/')" -ge 3 ]; }
if file=$(delivered_file spam1) && wait_for 10 signature_recorded; then
    before=$(stats_json | sed -E 's/.*"messages":\{"spam":([0-9]+),"ham":([0-9]+)\}.*/\1 \2/')
    out=$("$MAILSIFT" --db "$DB" correct --ham "$file" 2>&1) || true
    after=$(stats_json | sed -E 's/.*"messages":\{"spam":([0-9]+),"ham":([0-9]+)\}.*/\1 \2/')
    if [[ "$out" == *"1 by signature"* ]] && [ "$after" = "${before% *} $(( ${before#* } + 1 ))" ]; then
        ok "delivered spam corrected to ham by its signature ($out; spam ham $before -> $after)"
    else
        not_ok "delivered spam corrected to ham by its signature (got '$out'; spam ham $before -> $after)"
    fi
    if stats_json | grep -q '"all":{"false_positives":1,'; then
        ok "stats counts the correction as a false positive"
    else
        not_ok "stats counts the correction as a false positive ($(stats_json))"
    fi
    again=$("$MAILSIFT" --db "$DB" correct --ham "$file" 2>&1) && rc=0 || rc=$?
    if [ "$rc" -eq 0 ] && [[ "$again" == *"already learned as ham"* ]] && [ "$(stats_json | sed -E 's/.*"messages":\{"spam":([0-9]+),"ham":([0-9]+)\}.*/\1 \2/')" = "$after" ]; then
        ok "the same correction again is a no-op with exit 0"
    else
        not_ok "the same correction again is a no-op with exit 0 (rc $rc: $again)"
    fi
    back=$("$MAILSIFT" --db "$DB" correct --spam "$file" 2>&1) || true
    if [[ "$back" == *"1 learned"*"1 of them had a correction the other way, undone first"* ]]; then
        ok "correcting the other way replaces the first correction ($back)"
    else
        not_ok "correcting the other way replaces the first correction (got '$back')"
    fi
else
    not_ok "the scan of spam_cheap_pills.eml was recorded for correction within 10 s"
fi

# scan_features SIGNATURE: the "feature<TAB>count" lines of the scan mailsiftd recorded
# under that X-Mailsift-Signature (the hex of its 16-byte id); false while there is none.
scan_features() { "$MAILSIFT" --db "$DB" tokens --signature "$1" 2>/dev/null; }

# ---------------------------------------------------------------- corrected at once, then again
# What an IMAPSieve script does: it corrects the moment the user moves a message,
# before mailsiftd has written the scan (every stats_interval; the correction waits
# for it, since the message was delivered moments ago), and a second move,
# a retry or a second client corrects it again later. mailsiftd runs here with
# stats_interval = 10, so the first correction comes before the scan is written;
# after the flush two corrections run at the same moment, then one the other way.
# The counts must end as those of the model before plus that message learned
# once, as ham, with the features mailsiftd scored (export_diff.py).
model_export() { "$MAILSIFT" --db "$DB" export "$1" >/dev/null 2>&1; }
corrected() {  # NAME ARGS...: runs mailsift correct ARGS, output in $WORK/NAME.out, status in $WORK/NAME.rc
    local name=$1 rc=0
    shift
    "$MAILSIFT" --db "$DB" correct "$@" >"$WORK/$name.out" 2>&1 || rc=$?
    echo "$rc" >"$WORK/$name.rc"
}
stop_pid "$DPID"
DPID=""
STATS_INTERVAL=10 write_conf off
# Settled first: the refit a restart may owe, and the reload after it, would write
# the scan before the correction below; the correction's own change writes it after.
if start_daemon && wait_for 15 settled; then
    # Not the fixture itself: the model learned that one (the same digest, whether
    # it comes over the milter protocol or from a file), and this is a new message.
    { cat "$MESSAGES/ham_patch_review.eml"; echo "The tracker has the first message of the thread."; } \
        >"$WORK/patch_review_reply.eml"
    send once1 "$WORK/patch_review_reply.eml"
    expect_delivered once1 No "a reply to ham_patch_review.eml, to be corrected under real timing"
fi
if [ -n "$DPID" ] && file=$(delivered_file once1); then
    sig=$(header_values "$file" X-Mailsift-Signature)
    model_export "$WORK/once-before.export"
    if scan_features "$sig" >/dev/null; then
        not_ok "the scan of once1 is not written yet when the first correction runs (it was: slow machine?)"
    fi
    # Delivered moments ago (its Received: field): mailsift correct waits for the
    # scan mailsiftd writes within stats_interval, and trains by it (issue 58).
    corrected once-first --spam "$file"
    if [ "$(cat "$WORK/once-first.rc")" = 0 ] && grep -q "1 by signature, 0 as the message; 1 learned" "$WORK/once-first.out"; then
        ok "corrected to spam at once, before the scan is written: it waits for the scan and trains by it: $(tail -1 "$WORK/once-first.out")"
    else
        not_ok "corrected to spam at once, before the scan is written, by the scan it waits for (status $(cat "$WORK/once-first.rc"): $(tr '\n' '|' <"$WORK/once-first.out"))"
    fi
    # The correction's refit by mailsiftd (within refresh_interval) ends before the
    # exports compared below, or it would read as a change the no-op corrections made.
    if wait_for 15 scan_features "$sig" >"$WORK/once.scan" && wait_for 10 refitted; then
        model_export "$WORK/once-first.export"
        corrected once-par1 --spam "$file" &
        p1=$!
        corrected once-par2 --spam "$file" &
        p2=$!
        wait "$p1" "$p2" || true
        model_export "$WORK/once-par.export"
        if [ "$(cat "$WORK/once-par1.rc" "$WORK/once-par2.rc" | tr -d '\n')" = 00 ] &&
            grep -q "1 by signature, 0 as the message; 0 learned, 0 moved, 1 already spam" "$WORK/once-par1.out" &&
            grep -q "1 by signature, 0 as the message; 0 learned, 0 moved, 1 already spam" "$WORK/once-par2.out" &&
            cmp -s "$WORK/once-first.export" "$WORK/once-par.export"; then
            ok "after the scan is written, two corrections at the same moment find it learned and change nothing"
        else
            not_ok "after the scan is written, two corrections at the same moment change nothing ($(cat "$WORK"/once-par?.rc | tr '\n' ' ')$(cat "$WORK"/once-par?.out | tr '\n' '|'); exports $(cmp "$WORK/once-first.export" "$WORK/once-par.export" 2>&1))"
        fi
        corrected once-back --ham "$file"
        if grep -q "1 by signature, 0 as the message; 1 learned, 0 moved.*1 of them had a correction the other way, undone first" "$WORK/once-back.out"; then
            ok "corrected the other way, the first correction is undone and it is learned so: $(tail -1 "$WORK/once-back.out")"
        else
            not_ok "corrected the other way, the first correction is undone and it is learned so ($(tr '\n' '|' <"$WORK/once-back.out"))"
        fi
        model_export "$WORK/once-after.export"
        if diff_out=$(python3 "$HERE/export_diff.py" "$WORK/once-before.export" "$WORK/once-after.export" \
            "$sig" ham "$WORK/once.scan" 2>&1); then
            ok "the model is the one before plus that message learned once, as ham, as mailsiftd scored it ($diff_out)"
        else
            not_ok "the model is the one before plus that message learned once, as ham: $(tr '\n' '|' <<<"$diff_out")"
        fi
        # By net effect: spam1 (said spam, corrected to ham, then back to spam) and once1
        # (said ham, corrected to spam however often, then back to ham) count nothing.
        if stats_json | grep -q '"all":{"false_positives":0,"false_negatives":0,'; then
            ok "stats counts corrections by their net effect: each message corrected and corrected back counts nothing"
        else
            not_ok "stats counts corrections by their net effect: nothing for messages corrected back ($(stats_json))"
        fi
    else
        not_ok "the scan of once1 is written within 15 s (stats_interval = 10), and mailsiftd refitted after the correction"
    fi
else
    not_ok "mailsiftd restarted with stats_interval = 10, settled (refitted, model loaded), and once1 delivered"
fi

# ---------------------------------------------------------------- by signature alone, before the scan
# correct --signature ID with no message, while the scan still waits in mailsiftd's
# memory: kept in the database, trained by mailsiftd right after it writes the
# scan, once, with the last label given. mailsiftd writes the scans it holds every
# stats_interval (10 s here), and sooner when its model changes (the refit a restart
# may owe, and the reload after it): it is settled first, then stopped (SIGSTOP)
# while both corrections run, so that no write can fall between them however
# loaded the machine, and goes on (SIGCONT) after.
stop_pid "$DPID"
DPID=""
STATS_INTERVAL=10 write_conf off
if start_daemon && wait_for 15 settled; then
    send once2 "$MESSAGES/spam_investment.eml"
    expect_delivered once2 Yes "spam_investment.eml, to be corrected by its signature alone"
fi
if [ -n "$DPID" ] && file=$(delivered_file once2); then
    sig=$(header_values "$file" X-Mailsift-Signature)
    model_export "$WORK/sig-before.export"
    kill -STOP "$DPID"
    corrected sig-spam --spam --signature "$sig"
    corrected sig-ham --ham --signature "$sig"
    model_export "$WORK/sig-waiting.export"
    if [ "$(cat "$WORK/sig-spam.rc" "$WORK/sig-ham.rc" | tr -d '\n')" = 00 ] &&
        grep -q "1 by signature, 0 as the message; 0 learned, 0 moved, 0 already spam, 1 waiting for their scan" "$WORK/sig-spam.out" &&
        grep -q "1 by signature, 0 as the message; 0 learned, 0 moved, 0 already ham, 1 waiting for their scan" "$WORK/sig-ham.out" &&
        ! scan_features "$sig" >/dev/null &&
        cmp -s "$WORK/sig-before.export" "$WORK/sig-waiting.export"; then
        ok "corrected by signature to spam, then to ham, before the scan is written: kept, nothing trained yet"
    else
        not_ok "corrected by signature before the scan is written: kept, nothing trained yet (status $(cat "$WORK"/sig-spam.rc "$WORK"/sig-ham.rc | tr '\n' ' '): $(cat "$WORK"/sig-spam.out "$WORK"/sig-ham.out | tr '\n' '|'))"
    fi
    kill -CONT "$DPID"
    sig_trained() { model_export "$WORK/sig-after.export" && ! cmp -s "$WORK/sig-before.export" "$WORK/sig-after.export"; }
    # Trained, then refitted (mailsiftd refits within refresh_interval of the training):
    # the export is taken after both, so the no-op correction below is compared with it.
    if wait_for 15 scan_features "$sig" >"$WORK/sig.scan" && wait_for 5 sig_trained && wait_for 10 refitted &&
        model_export "$WORK/sig-after.export"; then
        if diff_out=$(python3 "$HERE/export_diff.py" "$WORK/sig-before.export" "$WORK/sig-after.export" \
            "$sig" ham "$WORK/sig.scan" 2>&1); then
            ok "mailsiftd trained it when it wrote the scan: the model before plus that message once, as ham, the last label ($diff_out)"
        else
            not_ok "mailsiftd trained it once, as ham, when it wrote the scan: $(tr '\n' '|' <<<"$diff_out")"
        fi
        corrected sig-again --ham --signature "$sig"
        model_export "$WORK/sig-again.export"
        if grep -q "0 learned, 0 moved, 1 already ham" "$WORK/sig-again.out" &&
            cmp -s "$WORK/sig-after.export" "$WORK/sig-again.export"; then
            ok "the same correction once the scan is written finds it learned and changes nothing"
        else
            not_ok "the same correction once the scan is written changes nothing ($(tr '\n' '|' <"$WORK/sig-again.out"))"
        fi
    else
        not_ok "the scan of once2 is written within 15 s, its deferred correction trained within 5 s after, and refitted within 10 s"
    fi
else
    not_ok "mailsiftd restarted with stats_interval = 10, settled (refitted, model loaded), and once2 delivered"
fi
stop_pid "$DPID"
DPID=""
write_conf off
start_daemon || bail "mailsiftd restarted with stats_interval = 1"

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
if [ -n "$SASL_READY" ]; then
    authenticated_submission
else
    note "no SASL user (see above): the authenticated submission checks did not run"
fi

# ---------------------------------------------------------------- reject threshold (SIGHUP reload)
reload_config 0.5

# A spam fixture nobody corrected: spam_investment.eml was corrected to ham by its
# signature above, and a correction teaches the model that message is wanted.
send reject1 "$MESSAGES/spam_money_offer.eml"
if [ "$SEND_RC" -eq 5 ] && [[ "$SEND_OUT" == 550\ * ]]; then
    ok "spam fixture spam_money_offer.eml rejected at SMTP level ($SEND_OUT)"
else
    not_ok "spam fixture spam_money_offer.eml rejected with 550 (got: $SEND_OUT)"
fi

send ham2 "$MESSAGES/ham_patch_review.eml"
expect_delivered ham2 No "ham fixture ham_patch_review.eml with reject_threshold = 0.5"

# ---------------------------------------------------------------- daemon down: tempfail
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

# ---------------------------------------------------------------- restart, resend
if start_daemon; then
    ok "mailsiftd restarted (pid $DPID)"
    send resend1 "$MESSAGES/ham_build_report.eml"
    expect_delivered resend1 No "resent ham_build_report.eml after the restart"
else
    not_ok "mailsiftd restarted and listens again"
fi

# ---------------------------------------------------------------- killed during a session
# mailsiftd stopped (SIGSTOP) while Postfix opens a milter session for a new SMTP
# client: Postfix waits on the milter inside that session; mailsiftd is then killed
# (SIGKILL) there. Postfix applies milter_default_action = tempfail to the message,
# and the resend after the restart is delivered: nothing is lost.
milter_session_open() {
    [ -n "$(ss -Htn state established "( dport = :$MILTER_PORT )" 2>/dev/null)" ]
}
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

# ---------------------------------------------------------------- nothing else arrived
queue_empty() { postqueue -c "$PFETC" -p 2>/dev/null | grep -q 'Mail queue is empty'; }
if wait_for 20 queue_empty; then
    ok "Postfix queue is empty (every accepted message was delivered)"
else
    not_ok "Postfix queue is empty within 20 s"
    postqueue -c "$PFETC" -p 2>&1 | sed 's/^/#   /'
fi
refused=(reject1 tempfail1 midsession1)
[ -z "$SASL_READY" ] || refused+=(noauth1)
for case in "${refused[@]}"; do
    if delivered_file "$case" >/dev/null; then
        not_ok "no copy of $case was delivered"
    else
        ok "no copy of $case was delivered"
    fi
done
# Nine from the checks above, and three (bob, alice, bob) from the authenticated submission ones.
accepted=9
[ -z "$SASL_READY" ] || accepted=12
count=$(find "$SINK" -name '*.eml' | wc -l)
if [ "$count" -eq "$accepted" ]; then
    ok "the sink holds exactly the $accepted accepted messages"
else
    not_ok "the sink holds exactly the $accepted accepted messages (holds $count: $(find "$SINK" -name '*.eml' -printf '%f ')))"
fi

summary_and_exit
