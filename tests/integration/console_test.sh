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
need_packages python3-selenium
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
SENT=0
for f in "$MESSAGES"/spam_money_offer.eml "$MESSAGES"/spam_cheap_pills.eml "$MESSAGES"/ham_meeting_notes.eml \
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
    --smtp "127.0.0.1:$SMTP_PORT" \
    >"$WORK/check.out" 2>&1 || true
cat "$WORK/check.out"
PASSED=$((PASSED + $(grep -c '^ok - ' "$WORK/check.out" || true)))
FAILED=$((FAILED + $(grep -c '^not ok - ' "$WORK/check.out" || true)))
grep -q '^# console_check.py finished' "$WORK/check.out" || not_ok "console_check.py ran to its end"
note "screenshots in $SHOTS: $(cd "$SHOTS" && ls | tr '\n' ' ')"
summary_and_exit
