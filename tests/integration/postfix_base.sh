# shellcheck shell=bash
# The base of a private Postfix instance on loopback, shared by
# tests/integration/postfix_test.sh and bench/postfix_throughput.sh: nothing in it
# refers to /etc/postfix, DNS is off, and accepted mail is relayed to an SMTP sink.
# Source it; it defines functions only (no traps, no side effects).

# postfix_base_main_cf WORK QUEUE_DIR SINK_PORT BANNER: prints the main.cf lines both
# users share; each appends its own smtpd_milters and specific settings. Creates the
# queue and data directories and the log file under WORK.
postfix_base_main_cf() {
    local work=$1 queue=$2 sink_port=$3 banner=$4
    mkdir -p "$queue" "$work/data"
    chown postfix "$work/data"
    touch "$work/postfix.log"
    local dns_setting="smtp_dns_support_level = disabled"
    postconf -d smtp_dns_support_level >/dev/null 2>&1 || dns_setting="disable_dns_lookups = yes"
    cat <<END_OF_BASE
compatibility_level = 3.6
queue_directory = $queue
data_directory = $work/data
mail_owner = postfix
setgid_group = postdrop
myhostname = localhost.localdomain
mydomain = localdomain
myorigin = \$myhostname
mydestination =
relay_domains =
local_recipient_maps =
alias_maps =
alias_database =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
smtpd_relay_restrictions = permit_mynetworks, reject
smtpd_recipient_restrictions = permit_mynetworks, reject
smtpd_peername_lookup = no
smtpd_error_sleep_time = 0
smtpd_banner = \$myhostname ESMTP $banner
relayhost = [127.0.0.1]:$sink_port
default_transport = smtp
smtp_host_lookup = native
lmtp_host_lookup = native
$dns_setting
smtp_connect_timeout = 2s
smtp_helo_timeout = 10s
smtp_tls_security_level = none
smtpd_tls_security_level = none
smtputf8_enable = no
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
in_flow_delay = 0
delay_warning_time = 0
biff = no
maillog_file = $work/postfix.log
maillog_file_prefixes = $work
non_smtpd_milters =
milter_default_action = tempfail
milter_protocol = 6
milter_connect_timeout = 5s
milter_command_timeout = 10s
milter_content_timeout = 15s
END_OF_BASE
}

# postfix_base_services: the internal services master.cf needs, without chroot (the
# queue directory holds no copy of /etc); each user adds its own smtpd listeners.
postfix_base_services() {
    cat <<'END_OF_SERVICES'
pickup     unix  n - n 60 1 pickup
cleanup    unix  n - n -  0 cleanup
qmgr       unix  n - n 300 1 qmgr
rewrite    unix  - - n -  - trivial-rewrite
bounce     unix  - - n -  0 bounce
defer      unix  - - n -  0 bounce
trace      unix  - - n -  0 bounce
verify     unix  - - n -  1 verify
flush      unix  n - n 1000? 0 flush
proxymap   unix  - - n -  - proxymap
proxywrite unix  - - n -  1 proxymap
smtp       unix  - - n -  - smtp
relay      unix  - - n -  - smtp
showq      unix  n - n -  - showq
error      unix  - - n -  - error
retry      unix  - - n -  - error
discard    unix  - - n -  - discard
anvil      unix  - - n -  1 anvil
scache     unix  - - n -  1 scache
postlog    unix-dgram n - n - 1 postlogd
END_OF_SERVICES
}

# postfix_single_smtpd_master_cf PORT: a master.cf with one smtpd on 127.0.0.1:PORT
# and the internal services; a caller may append its own lines.
postfix_single_smtpd_master_cf() {
    echo "127.0.0.1:$1 inet n - n - - smtpd"
    postfix_base_services
}

# postfix_start PORT...: checks and starts the private instance of $PFETC (queue and
# logs under $WORK), then waits until an smtpd greets on 127.0.0.1:PORT, for each
# PORT; false if a step fails (postfix's own output is in $WORK/postfix-cmd.log).
# Sets PF_STARTED once the start was tried, for stop_postfix. Needs lib.sh (wait_for).
postfix_start() {
    timeout 60 postfix -c "$PFETC" check >>"$WORK/postfix-cmd.log" 2>&1 || return 1
    PF_STARTED=1
    timeout 60 postfix -c "$PFETC" start >>"$WORK/postfix-cmd.log" 2>&1 || return 1
    local port
    for port in "$@"; do
        wait_for 20 smtpd_greets "$port" || return 1
    done
}

# smtpd_greets PORT: true when an SMTP server on 127.0.0.1:PORT sends a 220 greeting.
smtpd_greets() {  # smtpd_greets PORT
    local line
    exec 4<>"/dev/tcp/127.0.0.1/$1" || return 1
    IFS= read -r -t 5 line <&4 || line=""
    printf 'QUIT\r\n' >&4 2>/dev/null || true
    exec 4<&- 4>&-
    [[ $line == 220* ]]
}

# preseed_postfix: installing the postfix package must neither ask questions nor
# set up the system's own instance (need_commands --before-install preseed_postfix).
preseed_postfix() {
    printf '%s\n' "postfix postfix/main_mailer_type select No configuration" \
        "postfix postfix/mailname string localhost.localdomain" | debconf-set-selections
}

# stop_postfix: stops the private instance of $PFETC (queue $WORK/queue) once
# PF_STARTED is set; for a script's CLEANUP_STEPS.
stop_postfix() {
    [ -n "$PF_STARTED" ] || return 0
    # "postfix stop" signals this instance's master (its own pid file) and waits for it.
    timeout 20 postfix -c "$PFETC" stop >>"$WORK/postfix-cmd.log" 2>&1
    # Still there? Only a master whose working directory is this queue is ours.
    local master
    master=$(sed -n 1p "$WORK/queue/pid/master.pid" 2>/dev/null | tr -d ' ')
    if [ -n "$master" ] && [ "$(readlink "/proc/$master/cwd" 2>/dev/null)" = "$(realpath "$WORK/queue")" ]; then
        kill -KILL "$master" 2>/dev/null
    fi
}

# start_sink: the SMTP sink Postfix relays to, on 127.0.0.1:$SINK_PORT, writing
# each message it takes into SINK ($WORK/sink); SINKPID is its PID (stop_sink).
# Needs lib.sh (wait_for, port_open, bail).
start_sink() {
    SINK="$WORK/sink"
    mkdir "$SINK"
    python3 "$HERE/smtp_sink.py" "$SINK_PORT" "$SINK" >"$WORK/sink.log" 2>&1 &
    SINKPID=$!
    wait_for 10 port_open "$SINK_PORT" || bail "SMTP sink listens on 127.0.0.1:$SINK_PORT"
}
stop_sink() { stop_pid "$SINKPID"; }
