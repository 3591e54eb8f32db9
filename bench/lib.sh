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
