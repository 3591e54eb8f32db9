# shellcheck shell=bash
# What postfix_test.sh and miltertest_test.sh share; sourced, not run:
#
#   set -euo pipefail
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   read_args "$@"                    # MAILSIFTD MAILSIFT, both executable
#   need_commands python3 ...         # installs what is missing (root), else skips (77)
#   need_packages PACKAGE ...         # the same for packages without a command
#   make_workdir NAME                 # WORK, DB, CONF
#   MILTER_PORT=$(free_port)
#   train_model
#   launch_daemon                     # reject_threshold = off, waits until ready
#   ... checks: ok / not_ok / note, bail when nothing after can run ...
#   summary_and_exit                  # "N passed, M failed"; exit 0 or 1
#
# Sourcing it sets the EXIT trap: cleanup stops mailsiftd by its PID ($DPID),
# then runs the script's own CLEANUP_STEPS, and removes WORK (unless
# MAILSIFT_IT_KEEP is set). LOGS lists the files in WORK whose last lines are
# shown when something failed; a script adds its own.

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$PATH:/usr/sbin:/sbin"
START_TIME=$SECONDS

PASSED=0
FAILED=0
FAILURES=()  # the "not ok" lines, repeated at the end: a log cut short still shows them
WORK=""
DPID=""
LOGS=(mailsiftd.log)
CLEANUP_STEPS=()

# ---------------------------------------------------------------- reporting
ok() { echo "ok - $*"; PASSED=$((PASSED + 1)); }
not_ok() { echo "not ok - $*"; FAILED=$((FAILED + 1)); FAILURES+=("not ok - $*"); }
note() { echo "# $*"; }

show_logs() {
    [ -n "$WORK" ] || return 0
    local f
    for f in "${LOGS[@]}"; do
        f="$WORK/$f"
        [ -s "$f" ] || continue
        note "---- last lines of $(basename "$f") ----"
        tail -n 40 "$f" | sed 's/^/#   /'
    done
}

summary_and_exit() {
    [ "$FAILED" -eq 0 ] || show_logs
    local line
    for line in "${FAILURES[@]}"; do
        note "failed: $line"
    done
    note "run time $((SECONDS - START_TIME))s"
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ] && exit 0 || exit 1
}

# A setup step failed: nothing after it can run.
bail() {
    not_ok "$*"
    summary_and_exit
}

# ---------------------------------------------------------------- cleanup
# stop_pid PID: SIGTERM, up to 5 s to exit, then SIGKILL; nothing if PID is empty or gone.
stop_pid() {
    if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
        kill -TERM "$1" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$1" 2>/dev/null || true  # gone already: fine (and no exit under set -e)
    fi
    return 0
}

cleanup() {
    set +e
    stop_pid "$DPID"
    local step
    for step in "${CLEANUP_STEPS[@]}"; do
        "$step"
    done
    wait 2>/dev/null
    if [ -n "$WORK" ] && [ -d "$WORK" ]; then
        if [ -n "${MAILSIFT_IT_KEEP:-}" ]; then
            echo "# kept $WORK" >&2
        else
            rm -rf "$WORK"
        fi
    fi
}
trap cleanup EXIT
trap 'echo "# interrupted"; exit 130' INT TERM

# ---------------------------------------------------------------- prerequisites
# read_args "$@": MAILSIFTD and MAILSIFT from the command line (usage error: exit 2),
# MESSAGES the fixture directory; both programs must be executable.
read_args() {
    if [ $# -ne 2 ]; then
        echo "usage: $0 MAILSIFTD MAILSIFT" >&2
        exit 2
    fi
    MAILSIFTD=$(realpath "$1")
    MAILSIFT=$(realpath "$2")
    MESSAGES=$(cd "$HERE/../data/messages" && pwd)
    [ -x "$MAILSIFTD" ] || bail "mailsiftd is executable ($MAILSIFTD)"
    [ -x "$MAILSIFT" ] || bail "mailsift is executable ($MAILSIFT)"
}

apt_install() {  # apt_install PACKAGE...
    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get -o DPkg::Lock::Timeout=120 \
        install -y --no-install-recommends "$@" >/dev/null 2>&1
}

# need_commands [--before-install FUNCTION] COMMAND[=PACKAGE]...: each COMMAND must be
# on PATH; PACKAGE is the Debian package that has it (default: COMMAND itself).
# scripts/deps.sh --test installs them before ctest runs; for a script run by hand
# the missing ones are installed here with apt-get (after FUNCTION, e.g. debconf
# preselection), which needs root: without it the script is skipped (exit 77).
need_commands() {
    local before="" missing=() item
    if [ "${1:-}" = "--before-install" ]; then
        before=$2
        shift 2
    fi
    for item in "$@"; do
        command -v "${item%%=*}" >/dev/null 2>&1 || missing+=("${item#*=}")
    done
    install_missing "$before" "${missing[@]}"
}

# need_packages PACKAGE...: Debian packages that bring no command of their own (plugins,
# libraries) must be installed; the missing ones are installed like need_commands does.
need_packages() {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
    done
    install_missing "" "${missing[@]}"
}

# install_missing FUNCTION [PACKAGE...]: apt-get install the PACKAGEs (none: nothing to do)
# after FUNCTION (may be ""); skips the script (77) without root, bails if apt-get fails.
install_missing() {
    local before=$1
    shift
    [ $# -gt 0 ] || return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "# SKIP: $0: $* not installed, and installing needs root"
        exit 77
    fi
    note "installing $*"
    if [ -n "$before" ]; then
        "$before"
    fi
    apt_install "$@" || { timeout 300 apt-get update >/dev/null 2>&1 && apt_install "$@"; } ||
        bail "apt-get install $*"
}

# ---------------------------------------------------------------- ports and waiting
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# True once 127.0.0.1:$1 accepts a TCP connection.
port_open() {
    timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# wait_for SECONDS COMMAND...: polls every 0.2 s until COMMAND succeeds.
wait_for() {
    local deadline=$((SECONDS + $1))
    shift
    while ! "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

# make_workdir NAME: WORK, a new mailsift-NAME.XXXXXX directory from mktemp -d,
# with DB (the model) and CONF (mailsiftd's configuration) in it.
make_workdir() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/mailsift-$1.XXXXXX")
    DB="$WORK/model.db"
    CONF="$WORK/mailsift.conf"
}

# ---------------------------------------------------------------- model
train_model() {
    if "$MAILSIFT" --db "$DB" learn --spam "$MESSAGES"/spam_*.eml >"$WORK/learn.log" 2>&1 &&
        "$MAILSIFT" --db "$DB" learn --ham "$MESSAGES"/ham_*.eml >>"$WORK/learn.log" 2>&1; then
        ok "trained a model on 3 spam and 3 ham fixtures"
    else
        sed 's/^/#   /' "$WORK/learn.log"
        bail "trained a model on 3 spam and 3 ham fixtures"
    fi
}

# refitted: the linear scorer has no change left to refit over, the mark mailsiftd
# refits by (Trainer::refit_linear_if_behind). A correction changes the model; its
# refit follows within refresh_interval, so a test comparing exports waits for this.
refitted() {
    [ "$("$MAILSIFT" --db "$DB" stats --json |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["linear"]["changes_since_refit"])')" = 0 ]
}

# settled: mailsiftd has refitted after every change and has loaded the model as the
# store holds it now. A change wakes its writer at once (with the scans it holds), so
# a test that needs a scan kept in memory starts from here.
settled() {
    local json change
    json=$("$MAILSIFT" --db "$DB" stats --json) || return 1
    change=$(python3 -c 'import json, sys
j = json.load(sys.stdin)
print(j["model_change"] if j["linear"]["changes_since_refit"] == 0 else "behind")' <<<"$json")
    [ "$change" != behind ] &&
        tail -n "+$((LOG_MARK + 1))" "$WORK/mailsiftd.log" | grep -E 'loaded model' | tail -n 1 |
        grep -q "at model change $change in"
}

# ---------------------------------------------------------------- mailsiftd
# write_conf REJECT_THRESHOLD: mailsiftd listens on 127.0.0.1:$MILTER_PORT; it writes
# its scans every $STATS_INTERVAL seconds (1 unless the caller sets it).
write_conf() {
    cat >"$CONF" <<EOF
# mailsiftd configuration for $(basename "$0")
listen = inet:127.0.0.1:$MILTER_PORT
database = $DB
reject_threshold = $1
reject_reply = 550 5.7.1 Message rejected as spam
# Recorded signatures reach the database within a second (corrections test).
stats_interval = ${STATS_INTERVAL:-1}
${EXTRA_CONF:-}
EOF
}

# Ready: listening, and the model loaded (mailsiftd loads it on a thread of its own
# after it starts listening, answering with the default action until then).
# Only log lines written since the last start_daemon count.
LOG_MARK=0
daemon_ready() {
    kill -0 "$DPID" 2>/dev/null && port_open "$MILTER_PORT" || return 1
    local fresh
    fresh=$(tail -n "+$((LOG_MARK + 1))" "$WORK/mailsiftd.log")
    grep -q 'listening on' <<<"$fresh" && grep -q 'loaded model' <<<"$fresh"
}

# start_daemon: runs mailsiftd with $CONF (PID in DPID, output appended to
# mailsiftd.log) and waits up to 15 s until it is ready; false if it is not, or exited.
start_daemon() {
    LOG_MARK=$(wc -l 2>/dev/null <"$WORK/mailsiftd.log" || echo 0)
    "$MAILSIFTD" --foreground --config "$CONF" >>"$WORK/mailsiftd.log" 2>&1 &
    DPID=$!
    local deadline=$((SECONDS + 15)) rc=0
    until daemon_ready; do
        if ! kill -0 "$DPID" 2>/dev/null; then
            wait "$DPID" || rc=$?
            note "mailsiftd exited with status $rc"
            DPID=""
            return 1
        fi
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

# launch_daemon: the first start, with reject_threshold = off; bails unless mailsiftd is ready.
launch_daemon() {
    write_conf off
    if start_daemon; then
        ok "mailsiftd started (pid $DPID) and listens on 127.0.0.1:$MILTER_PORT"
    else
        bail "mailsiftd started and listens on 127.0.0.1:$MILTER_PORT"
    fi
}

# reload_config REJECT_THRESHOLD: rewrites the configuration, sends mailsiftd SIGHUP
# and waits up to 10 s for one more "configuration reloaded" in its log. RELOADED
# is then 1, or empty when it did not come. Call it as a plain command (not in an
# if or after || / &&), so that set -e still ends the script if kill fails.
RELOADED=""
RELOADS_BEFORE=0
reloaded() { [ "$(grep -c 'configuration reloaded' "$WORK/mailsiftd.log" || true)" -gt "$RELOADS_BEFORE" ]; }
reload_config() {
    write_conf "$1"
    RELOADS_BEFORE=$(grep -c 'configuration reloaded' "$WORK/mailsiftd.log" || true)
    kill -HUP "$DPID"
    # shellcheck disable=SC2034  # RELOADED is for the script that sources this file
    if wait_for 10 reloaded; then
        ok "mailsiftd reloaded its configuration on SIGHUP (reject_threshold = $1)"
        RELOADED=1
    else
        not_ok "mailsiftd reloaded its configuration on SIGHUP within 10 s"
        RELOADED=""
    fi
}
