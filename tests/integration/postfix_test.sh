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
#
# This script sets up, runs the cases in order and counts what arrived; the
# cases are in postfix_cases_*.sh (verdicts, corrections, contacts, faults),
# with the helpers they share in postfix_cases_mail.sh.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=postfix_base.sh
. "$(dirname "${BASH_SOURCE[0]}")/postfix_base.sh"
# shellcheck source-path=SCRIPTDIR source=postfix_cases_mail.sh
. "$(dirname "${BASH_SOURCE[0]}")/postfix_cases_mail.sh"
# shellcheck source-path=SCRIPTDIR source=postfix_cases_verdicts.sh
. "$(dirname "${BASH_SOURCE[0]}")/postfix_cases_verdicts.sh"
# shellcheck source-path=SCRIPTDIR source=postfix_cases_corrections.sh
. "$(dirname "${BASH_SOURCE[0]}")/postfix_cases_corrections.sh"
# shellcheck source-path=SCRIPTDIR source=postfix_cases_contacts.sh
. "$(dirname "${BASH_SOURCE[0]}")/postfix_cases_contacts.sh"
# shellcheck source-path=SCRIPTDIR source=postfix_cases_faults.sh
. "$(dirname "${BASH_SOURCE[0]}")/postfix_cases_faults.sh"

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

# ---------------------------------------------------------------- the cases, in order
# One mailsiftd, Postfix and sink for all of them, in this order: later cases
# count on earlier ones (the corrections find the scans of the first messages;
# a correction teaches the model; the contacts come before reject_threshold = 0.5).
scoring_and_headers        # postfix_cases_verdicts.sh
correct_delivered          # postfix_cases_corrections.sh
corrected_at_once
corrected_by_signature
if [ -n "$SASL_READY" ]; then
    authenticated_submission   # postfix_cases_contacts.sh
else
    note "no SASL user (see above): the authenticated submission checks did not run"
fi
reject_threshold           # postfix_cases_verdicts.sh
daemon_down_tempfails      # postfix_cases_faults.sh
restart_and_resend
killed_inside_session

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
