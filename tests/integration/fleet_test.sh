#!/usr/bin/env bash
# A fleet, set up with the README's recipes as written (addresses and paths
# aside): one PostgreSQL from Debian (a private server on loopback, started by
# tests/support/postgres.sh), two mailsiftd with the same 'database =' line, a
# private Postfix whose two smtpd listeners call one daemon each, the CLI as a
# third host, and Prometheus from Debian scraping both daemons. In the middle
# of traffic through Postfix the database is stopped, then started again.
#
# usage: fleet_test.sh MAILSIFTD MAILSIFT
#
# Everything runs on 127.0.0.1, on free high ports, under one mktemp -d
# directory. Prints "ok - ..." / "not ok - ..." per check and "N passed, M
# failed" last; exit 0 only when nothing failed, 77 (skipped) when not root.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=postfix_base.sh
. "$(dirname "${BASH_SOURCE[0]}")/postfix_base.sh"

README="$HERE/../../README.md"
PGCTL="$HERE/../support/postgres.sh"
DPIDS=()
SINKPID=""
PROMPID=""
PF_STARTED=""
PFETC=""
LOGS+=(mailsiftd-1.log mailsiftd-2.log postfix.log sink.log prometheus.log)

stop_daemons() { for p in "${DPIDS[@]}"; do stop_pid "$p"; done; }
stop_prometheus() { stop_pid "$PROMPID"; }
stop_database() { [ -z "$WORK" ] || "$PGCTL" stop "$WORK/pg" >/dev/null 2>&1; }
CLEANUP_STEPS+=(stop_daemons stop_prometheus stop_postfix stop_sink stop_database)

read_args "$@"
if [ "$(id -u)" -ne 0 ]; then
    echo "# SKIP: $0: a private Postfix instance (postfix start, chown) needs root"
    exit 77
fi
need_commands --before-install preseed_postfix postfix python3 psql=postgresql-client prometheus promtool=prometheus
need_packages postgresql

make_workdir fleet
chmod 755 "$WORK"

recipe() {  # recipe NAME OLD=NEW...: the README's block NAME, with OLD replaced by NEW
    python3 "$HERE/readme_recipe.py" "$README" "$@"
}
other_port() {
    local p
    p=$(free_port)
    while [[ " $* " == *" $p "* ]]; do p=$(free_port); done
    echo "$p"
}

# ---------------------------------------------------------------- PostgreSQL
"$PGCTL" start "$WORK/pg" >"$WORK/pg-start.log" 2>&1 || { sed 's/^/#   /' "$WORK/pg-start.log"; bail "private PostgreSQL started"; }
ADMIN=$(cat "$WORK/pg/uri")
PGPORT=${ADMIN##*:}
PGPORT=${PGPORT%%/*}
ok "private PostgreSQL started: $(sed -n 1p "$WORK/pg-start.log")"
if recipe fleet-database | psql "$ADMIN" -v ON_ERROR_STOP=1 -q -f - >"$WORK/psql.log" 2>&1; then
    ok "README recipe fleet-database: role and database mailsift created"
else
    sed 's/^/#   /' "$WORK/psql.log"
    bail "README recipe fleet-database runs in psql"
fi
DB_HOST=(db.example.net:5432="127.0.0.1:$PGPORT")

# ---------------------------------------------------------------- the CLI, from a third host
mkdir -p "$WORK/training/spam" "$WORK/training/ham"
cp "$MESSAGES"/spam_*.eml "$WORK/training/spam/"
cp "$MESSAGES"/ham_*.eml "$WORK/training/ham/"
recipe fleet-cli "${DB_HOST[@]}" /srv/training="$WORK/training" "mailsift "="$MAILSIFT " >"$WORK/cli.sh"
if bash -e "$WORK/cli.sh" >"$WORK/cli.log" 2>&1 && grep -q 'messages learned:  3 spam, 3 ham' "$WORK/cli.log"; then
    ok "README recipe fleet-cli learns 3 spam and 3 ham into PostgreSQL"
else
    sed 's/^/#   /' "$WORK/cli.log"
    bail "README recipe fleet-cli learns into PostgreSQL"
fi
URI=$(sed -n "s/^export MAILSIFT_DB='\(.*\)'$/\1/p" "$WORK/cli.sh")

# ---------------------------------------------------------------- two daemons
MILTER1=$(free_port)
MILTER2=$(other_port "$MILTER1")
METRICS1=$(other_port "$MILTER1" "$MILTER2")
METRICS2=$(other_port "$MILTER1" "$MILTER2" "$METRICS1")
for i in 1 2; do
    milter_var=MILTER$i metrics_var=METRICS$i
    {
        echo "listen = inet:127.0.0.1:${!milter_var}"
        echo "stats_interval = 1"
        recipe fleet-conf "${DB_HOST[@]}" 192.0.2.11:9187="127.0.0.1:${!metrics_var}"
    } >"$WORK/mailsift-$i.conf"
    "$MAILSIFTD" --foreground --config "$WORK/mailsift-$i.conf" >>"$WORK/mailsiftd-$i.log" 2>&1 &
    DPIDS+=($!)
done
daemons_ready() { grep -q 'loaded model' "$WORK/mailsiftd-1.log" && grep -q 'loaded model' "$WORK/mailsiftd-2.log"; }
if wait_for 20 daemons_ready; then
    ok "two mailsiftd with the README's database line loaded the model ($(grep -o 'loaded model.*' "$WORK/mailsiftd-2.log" | head -n 1))"
else
    bail "two mailsiftd loaded the model from PostgreSQL"
fi
if grep -q "change-me" "$WORK/mailsiftd-1.log"; then not_ok "the log does not show the database password"; else ok "the log does not show the database password"; fi

# metric NAME PORT: the value of sample NAME (with its labels) in a scrape of 127.0.0.1:PORT.
metric() {
    python3 - "$1" "$2" <<'EOF'
import sys, urllib.request
name, port = sys.argv[1], sys.argv[2]
body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
for line in body.splitlines():
    if line.startswith(name + " "):
        print(line.split(" ")[1]); break
EOF
}

# ---------------------------------------------------------------- Postfix and the sink
SMTP1=$(other_port "$MILTER1" "$MILTER2" "$METRICS1" "$METRICS2")
SMTP2=$(other_port "$MILTER1" "$MILTER2" "$METRICS1" "$METRICS2" "$SMTP1")
SINK_PORT=$(other_port "$MILTER1" "$MILTER2" "$METRICS1" "$METRICS2" "$SMTP1" "$SMTP2")
start_sink
PFETC="$WORK/etc"
mkdir -p "$PFETC"
postfix_base_main_cf "$WORK" "$WORK/queue" "$SINK_PORT" mailsift-fleet >"$PFETC/main.cf"
{
    echo "127.0.0.1:$SMTP1 inet n - n - - smtpd -o smtpd_milters=inet:127.0.0.1:$MILTER1"
    echo "127.0.0.1:$SMTP2 inet n - n - - smtpd -o smtpd_milters=inet:127.0.0.1:$MILTER2"
    postfix_base_services
} >"$PFETC/master.cf"
if postfix_start "$SMTP1" "$SMTP2"; then
    ok "private Postfix: smtpd 127.0.0.1:$SMTP1 -> mailsiftd 1, smtpd 127.0.0.1:$SMTP2 -> mailsiftd 2"
else
    sed 's/^/#   /' "$WORK/postfix-cmd.log"
    bail "private Postfix started"
fi

SENT=0
# traffic N WHAT: N messages through each smtpd, each a little different; SENT counts them.
traffic() {
    local n=$1 i port file rc=0
    for i in $(seq "$n"); do
        for port in "$SMTP1" "$SMTP2"; do
            SENT=$((SENT + 1))
            file="$WORK/msg-$SENT.eml"
            { cat "$MESSAGES/spam_money_offer.eml"; echo; echo "offer number $SENT"; } >"$file"
            timeout 60 python3 "$HERE/smtp_send.py" 127.0.0.1 "$port" sender@example.org "m$SENT@example.test" "$file" \
                >>"$WORK/send.log" 2>&1 || rc=1
        done
    done
    return $rc
}
delivered() { [ "$(find "$SINK" -name '*.eml' | wc -l)" -ge "$1" ]; }
# Each delivered copy carries exactly one X-Mailsift-Status with a score.
all_scored() {
    local f
    for f in "$SINK"/*.eml; do
        [ "$(grep -c '^X-Mailsift-Status: Yes, score=' "$f")" = 1 ] || return 1
    done
}

if traffic 5 && wait_for 30 delivered 10 && all_scored; then
    ok "10 messages through both smtpd listeners delivered, each scored by its daemon"
else
    not_ok "10 messages through both smtpd listeners delivered and scored (sent: $(tail -n 3 "$WORK/send.log" | tr '\n' '|'))"
fi
signatures() { "$MAILSIFT" --db "$URI" stats --json 2>/dev/null | sed -E 's/.*"signatures":([0-9]+).*/\1/'; }
scans_written() { [ "$(signatures)" = "$1" ]; }
wait_for 20 scans_written 10 && ok "both daemons wrote their 10 scans to PostgreSQL" || not_ok "10 scans in PostgreSQL (got $(signatures))"

# ---------------------------------------------------------------- the database stops
"$PGCTL" pause "$WORK/pg"
note "PostgreSQL stopped"
if traffic 5 && wait_for 30 delivered 20 && all_scored; then
    ok "with the database down, 10 more messages delivered, each scored from the model in memory"
else
    not_ok "with the database down, 10 more messages delivered and scored (Postfix: $(grep -o 'milter[^;]*' "$WORK/postfix.log" | tail -n 1))"
fi
store_down() { [ "$(metric mailsift_store_up "$1")" = 0 ]; }
if wait_for 10 store_down "$METRICS1" && wait_for 10 store_down "$METRICS2"; then
    ok "both daemons report mailsift_store_up 0 (scans waiting: $(metric mailsift_scan_buffer_depth "$METRICS1") and $(metric mailsift_scan_buffer_depth "$METRICS2"))"
else
    not_ok "both daemons report mailsift_store_up 0 during the outage"
fi
grep -q 'could not record' "$WORK/mailsiftd-1.log" && ok "mailsiftd logged the outage" || not_ok "mailsiftd logged the outage"
set +e
MAILSIFT_DB="$URI" "$MAILSIFT" learn --ham "$MESSAGES/truncated_multipart.eml" >"$WORK/learn-down.log" 2>&1
rc=$?
set -e
[ "$rc" = 3 ] && ok "the CLI exits 3 during the outage: $(head -c 160 "$WORK/learn-down.log")" || not_ok "the CLI exits 3 during the outage (got $rc)"

"$PGCTL" resume "$WORK/pg"
note "PostgreSQL started again"
back() { grep -q 'recording works again' "$WORK/mailsiftd-$1.log"; }
if wait_for 30 back 1 && wait_for 30 back 2 && wait_for 20 scans_written 20; then
    ok "both daemons wrote the scans they kept by themselves: 20 in PostgreSQL ($(grep -o 'recording works again.*' "$WORK/mailsiftd-2.log" | head -n 1))"
else
    not_ok "the scans kept during the outage are written when PostgreSQL is back (got $(signatures))"
fi
# A message daemon 2 scored during the outage, corrected from the third host.
during=$(grep -l "offer number 14$" "$SINK"/*.eml | head -n 1)
if [ -n "$during" ] && MAILSIFT_DB="$URI" "$MAILSIFT" correct --ham "$during" >"$WORK/correct.log" 2>&1 &&
    grep -q '1 by signature' "$WORK/correct.log"; then
    ok "a message scored during the outage is corrected by its signature from the CLI"
else
    not_ok "a message scored during the outage corrects by signature ($(cat "$WORK/correct.log" 2>/dev/null))"
fi
MAILSIFT_DB="$URI" "$MAILSIFT" learn --ham "$MESSAGES/truncated_multipart.eml" >"$WORK/learn-up.log" 2>&1 &&
    grep -q 'learned 1 as ham' "$WORK/learn-up.log" && ok "the learn that failed counts once when run again" ||
    not_ok "the learn run again after the outage ($(cat "$WORK/learn-up.log"))"
ham_now() { [ "$(metric 'mailsift_model_messages{class="ham"}' "$1")" = 5 ]; }
if wait_for 10 ham_now "$METRICS1" && wait_for 10 ham_now "$METRICS2"; then
    ok "both daemons took in the correction and the learn (5 ham in each model)"
else
    not_ok "both daemons took in the changes (ham: $(metric 'mailsift_model_messages{class="ham"}' "$METRICS1"), $(metric 'mailsift_model_messages{class="ham"}' "$METRICS2"))"
fi

# ---------------------------------------------------------------- Prometheus
PROMPORT=$(other_port "$MILTER1" "$MILTER2" "$METRICS1" "$METRICS2" "$SMTP1" "$SMTP2" "$SINK_PORT")
recipe fleet-prometheus 192.0.2.11:9187="127.0.0.1:$METRICS1" 192.0.2.12:9187="127.0.0.1:$METRICS2" \
    "scrape_interval: 15s"="scrape_interval: 1s" >"$WORK/prometheus.yml"
if promtool check config "$WORK/prometheus.yml" >"$WORK/promtool.log" 2>&1; then
    ok "README recipe fleet-prometheus passes promtool check config"
else
    sed 's/^/#   /' "$WORK/promtool.log"
    not_ok "README recipe fleet-prometheus passes promtool check config"
fi
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prometheus-data" \
    --web.listen-address="127.0.0.1:$PROMPORT" >"$WORK/prometheus.log" 2>&1 &
PROMPID=$!
# query EXPR: Prometheus's answer, one "INSTANCE VALUE" line per series.
query() {
    python3 - "$PROMPORT" "$1" <<'EOF'
import json, sys, urllib.parse, urllib.request
port, expr = sys.argv[1], sys.argv[2]
url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
try:
    data = json.load(urllib.request.urlopen(url, timeout=5))
except Exception:
    sys.exit(1)
for r in data["data"]["result"]:
    print(r["metric"].get("instance", "-"), r["value"][1])
EOF
}
both_up() { [ "$(query 'up{job="mailsift"} == 1' 2>/dev/null | wc -l)" = 2 ]; }
if wait_for 60 both_up; then
    ok "Prometheus scrapes both daemons: $(query 'up{job="mailsift"}' | tr '\n' ' ')"
else
    not_ok "Prometheus scrapes both daemons (up: $(query 'up{job="mailsift"}' 2>&1 | tr '\n' ' '))"
fi
total=$(query 'sum(mailsift_messages_total{job="mailsift"})' | awk '{print $2}')
[ "$total" = "$SENT" ] && ok "Prometheus sums mailsift_messages_total over the fleet: $total" ||
    not_ok "Prometheus sums mailsift_messages_total over the fleet to $SENT (got '$total')"

summary_and_exit
