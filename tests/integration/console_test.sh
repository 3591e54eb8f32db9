#!/usr/bin/env bash
# The web console, end to end: mailsiftd serves it over HTTPS (a self-signed
# certificate made here with openssl) beside a private Postfix that sends it
# real mail, and a real headless Chromium (Debian's chromium, driven by
# chromium-driver and python3-selenium) signs in, reads the status page
# against /metrics, scans and learns a message, and is refused what its role,
# a missing CSRF token or a dead session does not allow. console_check.py does
# the browser and HTTP checks; this script sets up and counts.
#
# usage: console_test.sh MAILSIFTD MAILSIFT
#   MAILSIFT_CONSOLE_STORE=postgresql: the model in a private PostgreSQL
#   (tests/support/postgres.sh) instead of an SQLite file.
#
# A screenshot of every page goes to console-screenshots/ in the build
# directory (beside src/; CI output, not committed). Everything runs on
# 127.0.0.1 under one mktemp -d directory. Exit 0 when every check passed,
# 1 when one failed, 77 when not run as root (a private Postfix needs it).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=postfix_base.sh
. "$(dirname "${BASH_SOURCE[0]}")/postfix_base.sh"

SINKPID=""
PF_STARTED=""
PFETC=""
LOGS+=(postfix.log sink.log)
STORE=${MAILSIFT_CONSOLE_STORE:-sqlite}
PGCTL="$HERE/../support/postgres.sh"
stop_database() { [ "$STORE" != postgresql ] || [ -z "$WORK" ] || "$PGCTL" stop "$WORK/pg" >/dev/null 2>&1; }
CLEANUP_STEPS+=(stop_postfix stop_sink stop_database)

read_args "$@"
if [ "$(id -u)" -ne 0 ]; then
    echo "# SKIP: $0: a private Postfix instance (postfix start, chown) needs root"
    exit 77
fi
need_commands --before-install preseed_postfix postfix python3 openssl chromium chromedriver=chromium-driver
need_packages python3-selenium fail2ban
# Debian's Python, which has python3-selenium (a python3 earlier on PATH may not).
PYTHON=/usr/bin/python3
SHOTS="$(dirname "$MAILSIFTD")/../../console-screenshots"
[ "$STORE" = sqlite ] || SHOTS="$SHOTS-$STORE"
mkdir -p "$SHOTS"
SHOTS=$(realpath "$SHOTS")
rm -f "$SHOTS"/*.png   # this run's pages only

make_workdir console
chmod 755 "$WORK"
SMTP_PORT=$(free_port)
MILTER_PORT=$(free_port)
SINK_PORT=$(free_port)
CONSOLE_PORT=$(free_port)
METRICS_PORT=$(free_port)
note "work directory $WORK; smtpd :$SMTP_PORT, mailsiftd :$MILTER_PORT, console :$CONSOLE_PORT, metrics :$METRICS_PORT"

if [ "$STORE" = postgresql ]; then
    "$PGCTL" start "$WORK/pg" >"$WORK/pg-start.log" 2>&1 || { sed 's/^/#   /' "$WORK/pg-start.log"; bail "private PostgreSQL started"; }
    DB=$(cat "$WORK/pg/uri")
    ok "the model in a private PostgreSQL: $DB"
fi
train_model

# ---------------------------------------------------------------- accounts and TLS
write_conf off
USERS="$WORK/console-users"
echo "console_users = $USERS" >>"$CONF"
ADMIN_PASSWORD="admin-$RANDOM$RANDOM$RANDOM"
VIEWER_PASSWORD="viewer-$RANDOM$RANDOM$RANDOM"
if printf '%s\n' "$ADMIN_PASSWORD" | "$MAILSIFT" --config "$CONF" console-user add admin --role admin --password-stdin \
        >"$WORK/users.log" 2>&1 &&
    printf '%s\n' "$VIEWER_PASSWORD" | "$MAILSIFT" --config "$CONF" console-user add watcher --role viewer --password-stdin \
        >>"$WORK/users.log" 2>&1; then
    ok "console accounts made with mailsift console-user add (an admin and a viewer)"
else
    sed 's/^/#   /' "$WORK/users.log"
    bail "console accounts made with mailsift console-user add"
fi
if openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 \
        -keyout "$WORK/console.key" -out "$WORK/console.crt" >"$WORK/openssl.log" 2>&1; then
    chmod 600 "$WORK/console.key"
    ok "a self-signed certificate for 127.0.0.1 made with openssl"
else
    sed 's/^/#   /' "$WORK/openssl.log"
    bail "a self-signed certificate made with openssl"
fi

# ---------------------------------------------------------------- refusals
cp "$CONF" "$WORK/plain.conf"
printf 'console_listen = 0.0.0.0:%s\n' "$CONSOLE_PORT" >>"$WORK/plain.conf"
rc=0
"$MAILSIFTD" --foreground --config "$WORK/plain.conf" >"$WORK/refused.log" 2>&1 || rc=$?
if [ "$rc" -eq 3 ] && grep -q "not a loopback address" "$WORK/refused.log" && grep -q "console_tls_certificate" "$WORK/refused.log"; then
    ok "mailsiftd refuses to serve the console without TLS on a non-loopback address (exit 3, says why)"
else
    sed 's/^/#   /' "$WORK/refused.log"
    not_ok "mailsiftd refuses the console on 0.0.0.0 without TLS (exit $rc)"
fi
rc=0
"$MAILSIFTD" --config "$WORK/plain.conf" --check-config >"$WORK/refused-check.log" 2>&1 || rc=$?
if [ "$rc" -eq 3 ] && grep -q "not a loopback address" "$WORK/refused-check.log"; then
    ok "mailsiftd --check-config finds it too"
else
    sed 's/^/#   /' "$WORK/refused-check.log"
    not_ok "mailsiftd --check-config refuses the console on 0.0.0.0 without TLS (exit $rc)"
fi

# ---------------------------------------------------------------- mailsiftd with the console
cat >>"$CONF" <<EOF_CONF
metrics_listen = 127.0.0.1:$METRICS_PORT
console_listen = 127.0.0.1:$CONSOLE_PORT
console_tls_certificate = $WORK/console.crt
console_tls_key = $WORK/console.key
limits.max_message_bytes = 1M
# A larger message is let through unscored: the history's skipped line, with its reason.
oversize = skip
EOF_CONF
if start_daemon && grep -q "console on https://127.0.0.1:$CONSOLE_PORT/" "$WORK/mailsiftd.log"; then
    ok "mailsiftd started with the console on https://127.0.0.1:$CONSOLE_PORT/"
else
    bail "mailsiftd started with the console on https://127.0.0.1:$CONSOLE_PORT/"
fi

# ---------------------------------------------------------------- Postfix sends it mail
start_sink
PFETC="$WORK/etc"
mkdir -p "$PFETC"
{
    postfix_base_main_cf "$WORK" "$WORK/queue" "$SINK_PORT" mailsift-console-test
    echo "smtpd_milters = inet:127.0.0.1:$MILTER_PORT"
} >"$PFETC/main.cf"
postfix_single_smtpd_master_cf "$SMTP_PORT" >"$PFETC/master.cf"
if postfix_start "$SMTP_PORT"; then
    ok "private Postfix started with mailsiftd as its milter"
else
    sed 's/^/#   /' "$WORK/postfix-cmd.log"
    bail "private Postfix started (postfix -c $PFETC start)"
fi
# The fifth has a Subject of markup: the history must show it as text.
printf '%s\r\n' "From: Prize Desk <win@prize.example>" "To: rcpt@example.net" \
    "Subject: <img src=x onerror=alert(1)> you won" "Message-ID: <xss-1@prize.example>" "" \
    "Claim your prize at http://prize.example/claim now." >"$WORK/xss.eml"
# The one the browser corrects is new to the model (the fixture itself was learned:
# the same digest, whether it comes over the milter protocol or from a file).
{ cat "$MESSAGES/ham_meeting_notes.eml"; echo "The room is booked for the whole afternoon."; } >"$WORK/meeting_reply.eml"
SENT=0
for f in "$MESSAGES"/spam_money_offer.eml "$MESSAGES"/spam_cheap_pills.eml "$WORK/meeting_reply.eml" \
    "$MESSAGES"/ham_build_report.eml "$WORK/xss.eml"; do
    if python3 "$HERE/smtp_send.py" 127.0.0.1 "$SMTP_PORT" sender@example.org rcpt@example.net "$f" \
            >>"$WORK/send.log" 2>&1; then
        SENT=$((SENT + 1))
    fi
done
delivered() { [ "$(find "$SINK" -type f | wc -l)" -ge "$SENT" ]; }
if [ "$SENT" -eq 5 ] && wait_for 30 delivered; then
    ok "Postfix took 5 messages and delivered them through mailsiftd"
else
    sed 's/^/#   /' "$WORK/send.log"
    bail "Postfix delivered 5 messages through mailsiftd ($SENT accepted)"
fi

# ---------------------------------------------------------------- the browser
"$PYTHON" "$HERE/console_check.py" --base "https://127.0.0.1:$CONSOLE_PORT" \
    --metrics "http://127.0.0.1:$METRICS_PORT/metrics" --ca "$WORK/console.crt" --shots "$SHOTS" \
    --admin admin "$ADMIN_PASSWORD" --viewer watcher "$VIEWER_PASSWORD" --messages "$MESSAGES" \
    --mailsift "$MAILSIFT" --db "$DB" --expect-messages 5 --max-body $((1024 * 1024 + 64 * 1024)) \
    --smtp "127.0.0.1:$SMTP_PORT" --postfix-log "$WORK/postfix.log" \
    >"$WORK/check.out" 2>&1 || true
cat "$WORK/check.out"
PASSED=$((PASSED + $(grep -c '^ok - ' "$WORK/check.out" || true)))
FAILED=$((FAILED + $(grep -c '^not ok - ' "$WORK/check.out" || true)))
mapfile -t -O "${#FAILURES[@]}" FAILURES < <(grep '^not ok - ' "$WORK/check.out" || true)
grep -q '^# console_check.py finished' "$WORK/check.out" || not_ok "console_check.py ran to its end"

# ---------------------------------------------------------------- forged lines
# Nothing from the wire may write a line of its own into the log (issue 41): a
# line break and a whole audit line of a failed sign-in from 203.0.113.77, in
# every field a milter client or a console visitor can fill.
FORGED=203.0.113.77
if python3 "$HERE/log_forge.py" --milter "127.0.0.1:$MILTER_PORT" --console "127.0.0.1:$CONSOLE_PORT" \
        --ca "$WORK/console.crt" >"$WORK/forge.out" 2>&1; then
    ok "log_forge.py sent $(grep -c '^sent ' "$WORK/forge.out") forged messages over the milter protocol and signed in $(grep -c '^signed in ' "$WORK/forge.out") times with forged names"
else
    sed 's/^/#   /' "$WORK/forge.out"
    not_ok "log_forge.py sent its forged messages and sign-ins"
fi

# ---------------------------------------------------------------- the audit trail
# What the checks above did, as mailsiftd logged it; and the fail2ban filter
# the package installs (etc/fail2ban/filter.d/), run by fail2ban-regex over
# those very lines, as mailsiftd wrote them and as fail2ban reads them from the
# journal ("HOST mailsiftd[PID]: " before the message, the "<6>" gone).
LOG="$WORK/mailsiftd.log"
FILTER="$HERE/../../etc/fail2ban/filter.d/mailsiftd-console.conf"
sed 's/^<[0-7]>/mailhost mailsiftd[4242]: /' "$LOG" >"$WORK/journal.log"
count() { grep -c -- "$1" "$LOG" || true; }
FAILED_SIGN_INS=$(count '^<6>console audit: event=sign-in outcome=failed ')
if [ "$FAILED_SIGN_INS" -ge 2 ] && [ "$(count 'console audit: event=sign-in outcome=ok account=admin role=admin client=127.0.0.1 ')" -ge 1 ] &&
    [ "$(count 'console audit: event=sign-in outcome=limited ')" -ge 1 ] &&
    [ "$(count 'console audit: event=sign-out outcome=ok ')" -ge 1 ] &&
    [ "$(count 'console audit: event=correct outcome=[a-z-]* account=admin role=admin client=127.0.0.1 target=spam:')" -ge 1 ] &&
    [ "$(count 'console audit: event=undo outcome=undone account=admin role=admin client=127.0.0.1 target=ham:')" -ge 1 ] &&
    [ "$(count 'console audit: event=learn outcome=learned account=admin role=admin ')" -ge 1 ] &&
    [ "$(count 'console audit: event=scan outcome=[a-z]* account=watcher role=viewer ')" -ge 1 ] &&
    [ "$(count 'console audit: event=correct outcome=forbidden account=watcher role=viewer ')" -ge 1 ]; then
    ok "mailsiftd logged an audit line for each sign-in ($FAILED_SIGN_INS failed), refusal, sign-out, learn, scan, correction and undo, with the account, role and client"
else
    grep 'console audit:' "$LOG" | sed 's/^/#   /' | tail -n 20
    not_ok "mailsiftd logged the audit lines of the console's checks"
fi
# The forged payloads reached the log (else the checks below prove nothing),
# each inside a line of the daemon's own, escaped.
FORGED_LINES=$(grep -c -- "$FORGED" "$LOG" || true)
STRAY=$(grep -cv '^<[346]>' "$LOG" || true)
NOT_OURS=$(grep -c "^<6>console audit: .*client=$FORGED" "$LOG" || true)
if [ "$FORGED_LINES" -ge 5 ] && [ "$STRAY" = 0 ] && [ "$NOT_OURS" = 0 ] &&
    grep -q '^<6>message X\\n<6>console audit: event=sign-in outcome=failed account=admin role=- client=203.0.113.77 target=-' "$LOG" &&
    grep -q 'u{2028}<6>console audit' "$LOG"; then
    ok "the forged payloads are in $FORGED_LINES lines of mailsiftd's own, escaped (\\n, \\r, \\u{2028}...); every line begins with a priority, none is an audit line for $FORGED"
else
    grep -n -- "$FORGED" "$LOG" | head -n 12 | sed 's/^/#   /'
    not_ok "the forged payloads stay inside escaped lines ($FORGED_LINES lines hold them, $STRAY lines without a priority, $NOT_OURS audit lines for $FORGED)"
fi
f2b_matched() {  # f2b_matched LOGFILE: the lines the shipped filter matches
    fail2ban-regex "$1" "$FILTER" 2>&1 | awk '/^Lines: / { print $(NF - 3) }'
}
f2b_hosts() {  # f2b_hosts LOGFILE: the addresses it would ban
    fail2ban-regex --print-all-matched "$1" "$FILTER" 2>/dev/null |
        awk '/^\|- Matched line/ { on = 1; next } /^`-/ { on = 0 } on' | sed -n 's/.*client=\([^ ]*\) .*/\1/p' | sort -u | tr '\n' ' '
}
FAILED_HOSTS=$(sed -n 's/^<6>console audit: event=sign-in outcome=failed .*client=\([^ ]*\) .*/\1/p' "$LOG" | sort -u | tr '\n' ' ')
for form in mailsiftd journal; do
    file="$LOG"
    [ "$form" = journal ] && file="$WORK/journal.log"
    MATCHED=$(f2b_matched "$file")
    if [ -n "$MATCHED" ] && [ "$MATCHED" -eq "$FAILED_SIGN_INS" ]; then
        ok "fail2ban-regex, the shipped filter, lines as $form wrote them: it matches the $MATCHED failed sign-ins, and no other line"
    else
        fail2ban-regex "$file" "$FILTER" 2>&1 | tail -n 20 | sed 's/^/#   /'
        not_ok "fail2ban-regex, the shipped filter, lines as $form wrote them: $MATCHED matched, $FAILED_SIGN_INS failed sign-ins"
    fi
    HOSTS=$(f2b_hosts "$file")
    if [ -n "$HOSTS" ] && [ "$HOSTS" = "$FAILED_HOSTS" ] && [[ "$HOSTS" != *"$FORGED"* ]]; then
        ok "fail2ban-regex ($form): the addresses it would ban are those of the failed sign-ins ($HOSTS), not $FORGED"
    else
        not_ok "fail2ban-regex ($form): the addresses it would ban ($HOSTS; failed sign-ins from $FAILED_HOSTS)"
    fi
done
grep '^<6>console audit: event=sign-in outcome=ok ' "$LOG" >"$WORK/sign-ins-ok.log" || true
grep -v '^<6>console audit: event=sign-in outcome=failed ' "$LOG" >"$WORK/not-failed.log" || true
MATCHED_OK=$(f2b_matched "$WORK/sign-ins-ok.log")
MATCHED_OTHER=$(f2b_matched "$WORK/not-failed.log")
if [ -s "$WORK/sign-ins-ok.log" ] && [ "$MATCHED_OK" = 0 ] && [ "$MATCHED_OTHER" = 0 ]; then
    ok "fail2ban-regex: the filter matches none of the $(wc -l <"$WORK/sign-ins-ok.log") successful sign-ins, nor any of the $(wc -l <"$WORK/not-failed.log") other lines"
else
    not_ok "fail2ban-regex: the filter matches no other line ($MATCHED_OK successful sign-ins, $MATCHED_OTHER others matched)"
fi
METRICS=$(python3 -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())" \
    "http://127.0.0.1:$METRICS_PORT/metrics" 2>/dev/null || true)
FAILED_METRIC=$(printf '%s\n' "$METRICS" | awk '/^mailsift_console_sign_ins_total\{outcome="failed"\}/ { print $2 }')
CORRECTED_METRIC=$(printf '%s\n' "$METRICS" | awk '/^mailsift_console_corrections_total\{role="admin"\}/ { print $2 }')
STATUS_413=$(printf '%s\n' "$METRICS" | awk '/^mailsift_console_requests_total\{status="413"\}/ { print $2 }')
if [ "${FAILED_METRIC:-x}" = "$FAILED_SIGN_INS" ] && [ "${CORRECTED_METRIC:-0}" -ge 1 ] && [ "${STATUS_413:-0}" -ge 2 ]; then
    ok "the metrics count the console's sign-ins by outcome ($FAILED_METRIC failed), answers by status ($STATUS_413 x 413) and corrections by role ($CORRECTED_METRIC by an admin)"
else
    not_ok "the console's counters on /metrics (failed $FAILED_METRIC of $FAILED_SIGN_INS, corrections $CORRECTED_METRIC, 413s $STATUS_413)"
fi
note "screenshots in $SHOTS: $(cd "$SHOTS" && ls | tr '\n' ' ')"
summary_and_exit
