# shellcheck shell=bash
# bench/lib.sh - what the benchmark scripts share; sourced, never run.
#   free_port                a free TCP port on 127.0.0.1 (the kernel's pick)
#   port_open PORT           something listens on 127.0.0.1:PORT
#   stop_pid PID [SECONDS] [MARK]
#                            TERM, up to SECONDS (default 30), then KILL; with
#                            MARK, only while the process's command line holds
#                            MARK (the run's work directory), so that a PID the
#                            system has reused for someone else's process is
#                            never signalled
#   synthetic_export N       a model export (mailsift(1), FORMAT) of N synthetic
#                            features (fixed seed, ids ascending, small counts)
#   at_least VALUE TARGET, at_most VALUE TARGET
#                            "met", "not met", or "-" for no value or no target
#   real_python              the interpreter python3 runs (not a pyenv shim), so
#                            that a Python process started with & has the PID $!
#   wait_for SECONDS CMD...  poll every 0.2 s until CMD succeeds (false at timeout)
# A private Postfix with mailsiftd as its milter (postfix_throughput.sh,
# scan_size.sh): the benchmark sets `work` (its directory), `say` and `die`, then
#   distinct_ports N         N distinct free ports into the array `ports`
#   learn_corpus_model DB CORPUS   learn CORPUS/spam and CORPUS/easy_ham into DB
#                            ($work/learn.log)
#   start_mailsiftd DB PORT CONFIG  mailsiftd on 127.0.0.1:PORT, its PID in
#                            `dpid`, back when it has loaded its model
#   start_bench_sink PORT DIR  the SMTP sink Postfix relays to, writing into DIR,
#                            its PID in `sinkpid`
#   start_bench_postfix PORT...  checks and starts the instance of $work/etc
#                            (main.cf and master.cf written by the caller), then
#                            waits for an smtpd greeting on each PORT
#   stop_bench_parts         for the caller's EXIT trap: mailsiftd, Postfix, sink
#   show_bench_logs FILE...  the last lines of each non-empty $work/FILE, via say
# The targets themselves are in bench/targets.sh.

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# still_ours PID [MARK]: the process is there and not a zombie (and, with
# MARK, its command line still names MARK: the one we started).
still_ours() {
    local stat cmd
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [[ ${stat%% *} != Z ]] || return 1   # exited, not yet waited for
    [[ -n ${2:-} ]] || return 0
    cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" || true)
    [[ $cmd == *"$2"* ]]
}

stop_pid() {
    local pid=$1 seconds=${2:-30} mark=${3:-} i
    still_ours "$pid" "$mark" || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < seconds * 10; i++)); do
        still_ours "$pid" "$mark" || return 0
        sleep 0.1
    done
    if still_ours "$pid" "$mark"; then kill -KILL "$pid" 2>/dev/null || true; fi
    return 0
}

real_python() { python3 -c 'import sys; print(sys.executable)'; }

at_least() { awk -v v="$1" -v t="$2" 'BEGIN { if (v !~ /^[0-9.]/ || t == "") print "-"; else print (v + 0 >= t) ? "met" : "not met" }'; }
at_most() { awk -v v="$1" -v t="$2" 'BEGIN { if (v !~ /^[0-9.]/ || t == "") print "-"; else print (v + 0 <= t) ? "met" : "not met" }'; }
# shown OP TARGET [UNIT]: "OP TARGETUNIT" for the summary's target column, "-" without a target.
shown() { if [[ -n ${2:-} ]]; then printf '%s %s%s' "$1" "$2" "${3:-}"; else printf -- '-'; fi; }

synthetic_export() {
    awk -v n="$1" -v now="$(date +%s)" 'BEGIN {
        srand(20240601); OFS = "\t"
        print "mailsift-model", 1
        for (k = 0; k < n; k++) {
            hi = (2147483648 + int(k * 4294967296 / n)) % 4294967296   # ascending as signed 64-bit
            lo = int(rand() * 4294967296)
            c = 1 + int(rand() * rand() * 4)
            spam = (rand() < 0.5)
            if (spam) { so += c; sp++ } else { ho += c; hp++ }
            printf "feature\t%08x%08x\t%d\t%d\t%d\t%d\t%d\tw:synthetic%d\n", hi, lo, spam ? c : 0, spam ? 0 : c, spam, 1 - spam, now, k
        }
        print "class", "spam", 0, so + 0, sp + 0
        print "class", "ham", 0, ho + 0, hp + 0
        print "end", n, 0, 0
    }'
}

wait_for() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

# ---------------------------------------------------------------- a private Postfix
bench_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The instance's base, shared with tests/integration (postfix_base_main_cf,
# postfix_base_services, postfix_start, stop_postfix, smtpd_greets).
# shellcheck source-path=SCRIPTDIR source=../tests/integration/postfix_base.sh
. "$bench_repo/tests/integration/postfix_base.sh"
dpid='' sinkpid=''

distinct_ports() {
    local p
    ports=()
    while ((${#ports[@]} < $1)); do
        p=$(free_port)
        [[ " ${ports[*]} " == *" $p "* ]] || ports+=("$p")
    done
}

# (mailsift, mailsiftd: the paths the benchmark set)
# shellcheck disable=SC2154
learn_corpus_model() {
    "$mailsift" --db "$1" learn --spam "$2/spam" >"$work/learn.log" 2>&1 || die "mailsift learn --spam failed (see $work/learn.log)"
    "$mailsift" --db "$1" learn --ham "$2/easy_ham" >>"$work/learn.log" 2>&1 || die "mailsift learn --ham failed (see $work/learn.log)"
}

mailsiftd_ready() {
    kill -0 "$dpid" 2>/dev/null || die "mailsiftd exited during startup"
    grep -q 'loaded model' "$work/mailsiftd.log" && port_open "$1"
}
# shellcheck disable=SC2154
start_mailsiftd() {
    "$mailsiftd" --foreground --db "$1" --listen "inet:127.0.0.1:$2" --config "$3" >"$work/mailsiftd.log" 2>&1 &
    dpid=$!
    wait_for 60 mailsiftd_ready "$2" || die "mailsiftd did not log 'loaded model' within 60 s"
}

start_bench_sink() {
    mkdir -p "$2"
    "$(real_python)" "$bench_repo/bench/postfix_throughput_sink.py" "$1" "$2" >"$work/sink.log" 2>&1 &
    sinkpid=$!
    wait_for 10 port_open "$1" || die "SMTP sink does not listen on 127.0.0.1:$1"
}

start_bench_postfix() {
    # postfix_start's names: PFETC, WORK, PF_STARTED
    PFETC=$work/etc WORK=$work
    postfix_start "$@" || die "the private Postfix did not start (see $work/postfix-cmd.log)"
}

stop_bench_parts() {
    [[ -n $dpid ]] && stop_pid "$dpid" 5
    if [[ -n ${PF_STARTED:-} ]]; then stop_postfix; fi
    [[ -n $sinkpid ]] && stop_pid "$sinkpid" 5
    return 0
}

show_bench_logs() {
    [[ -n ${work:-} ]] || return 0
    local f
    for f in "$@"; do
        [[ -s $work/$f ]] || continue
        say "---- last lines of $f ----"
        tail -n 20 "$work/$f" | sed 's/^/    /' >&2
    done
}
