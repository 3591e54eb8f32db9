#!/usr/bin/env bash
# postfix_throughput.sh - end-to-end SMTP throughput of a private Postfix on
# loopback, without a milter and with mailsiftd as its smtpd milter, in one run.
# A benchmark, not a test: it prints a table and exits 0 whenever it ran,
# whatever the numbers are (1 when setup failed or a run lost messages).
#
# usage: bench/postfix_throughput.sh [--messages N] [--sessions S] [--reps R]
#            [--reuse] [--message FILE] [--corpus DIR] [--keep]
#            [--mailsiftd PATH] [--mailsift PATH] [--milter-config FILE]
#
#   --messages N   messages per run (default 2000)
#   --sessions S   parallel SMTP sessions of smtp-source (default 16)
#   --reps R       runs per configuration, median reported (default 3)
#   --reuse        send all of a session's messages over one connection
#                  (smtp-source -d); default: one connection per message
#   --message FILE message to send (default: the easy_ham message closest to 5 KB)
#   --corpus DIR   SpamAssassin corpus (default ../shared/corpus/spamassassin)
#   --keep         keep the work directory (logs, queue, config)
#   --milter-config FILE  mailsiftd's configuration (default /dev/null: the
#                  defaults). E.g. limits.max_message_bytes = 1024 with
#                  oversize = skip makes it a milter that scores nothing: what
#                  the milter protocol alone costs Postfix.
#
# How: one private Postfix instance (config and queue under mktemp -d; nothing
# in /etc/postfix or on port 25 is touched) with two smtpd listeners on
# 127.0.0.1 that differ only in smtpd_milters: empty on one, inet:127.0.0.1:PORT
# (mailsiftd) on the other, so both configurations share one queue, one qmgr and
# one delivery path, and no reload happens between runs. Postfix relays
# everything to an SMTP sink (bench/postfix_throughput_sink.py, the sink of
# tests/integration with a bigger listen backlog) that writes one file per
# message. smtp-source sends N messages over S sessions; a run's time is from
# the start of smtp-source until the N-th file exists in the sink, so delivery
# is included. The time smtp-source alone takes (all N accepted and queued) is
# reported too. Runs alternate between the configurations (ABBAAB...), after an
# untimed warm-up through both listeners. Needs root (postfix start).
set -Eeuo pipefail
export LC_ALL=C
export PATH="$PATH:/usr/sbin:/sbin"

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$repo_root/bench/lib.sh"  # the private Postfix and mailsiftd, stop_pid
mailsiftd=$repo_root/build/src/daemon/mailsiftd
mailsift=$repo_root/build/src/cli/mailsift
corpus=$repo_root/../shared/corpus/spamassassin
messages=2000
sessions=16
reps=3
reuse=0
message=
keep=0
milter_config=/dev/null

usage() { sed -n '7,22s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
while (($#)); do
    case $1 in
        --messages)  messages=${2:?--messages needs a number}; shift 2 ;;
        --sessions)  sessions=${2:?--sessions needs a number}; shift 2 ;;
        --reps)      reps=${2:?--reps needs a number}; shift 2 ;;
        --reuse)     reuse=1; shift ;;
        --message)   message=${2:?--message needs a file}; shift 2 ;;
        --corpus)    corpus=${2:?--corpus needs a directory}; shift 2 ;;
        --keep)      keep=1; shift ;;
        --mailsiftd) mailsiftd=${2:?--mailsiftd needs a path}; shift 2 ;;
        --mailsift)  mailsift=${2:?--mailsift needs a path}; shift 2 ;;
        --milter-config) milter_config=${2:?--milter-config needs a file}; shift 2 ;;
        -h|--help)   usage; exit 0 ;;
        *)           usage >&2; exit 2 ;;
    esac
done
for v in messages sessions reps; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "--$v must be a positive integer" >&2; exit 2; }
done

say() { printf '[bench] %s\n' "$*" >&2; }
die() { say "ERROR: $*"; show_logs; exit 1; }
start_seconds=$SECONDS

# ---------------------------------------------------------------- cleanup
work='' srcpid=''
show_logs() { show_bench_logs mailsiftd.log postfix.log postfix-cmd.log sink.log smtp-source.log; }
cleanup() {
    set +e
    [[ -n $srcpid ]] && stop_pid "$srcpid" 5
    stop_bench_parts
    wait 2>/dev/null
    if [[ -n $work && -d $work ]]; then
        if ((keep)); then say "kept $work"; else rm -rf "$work"; fi
    fi
}
trap cleanup EXIT
trap 'say "ERROR: command failed (status $?) at line $LINENO"' ERR
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- prerequisites
[[ $(id -u) -eq 0 ]] || { say "a private Postfix instance (postfix start, chown) needs root"; exit 1; }
missing=()
command -v postfix >/dev/null || missing+=(postfix)
command -v python3 >/dev/null || missing+=(python3)
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    # No configuration: the package must not set up or start the system instance.
    printf '%s\n' "postfix postfix/main_mailer_type select No configuration" \
        "postfix postfix/mailname string localhost.localdomain" | debconf-set-selections
    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get -o DPkg::Lock::Timeout=120 \
        install -y --no-install-recommends "${missing[@]}" >&2
fi
command -v smtp-source >/dev/null || die "smtp-source not found (it comes with the postfix package)"

if [[ ! -x $mailsiftd || ! -x $mailsift ]]; then
    say "building mailsift (cmake -S . -B build && cmake --build build -j2)"
    (cd "$repo_root" && cmake -S . -B build >&2 && cmake --build build -j2 >&2)
fi
[[ -x $mailsiftd ]] || die "mailsiftd not found: $mailsiftd"
[[ -x $mailsift ]] || die "mailsift not found: $mailsift"
mailsiftd=$(realpath "$mailsiftd")
mailsift=$(realpath "$mailsift")
milter_config=$(realpath "$milter_config")
[[ -d $corpus/spam && -d $corpus/easy_ham ]] || die "corpus not found: $corpus (needs spam/ and easy_ham/)"
corpus=$(realpath "$corpus")

work=$(mktemp -d "${TMPDIR:-/tmp}/mailsift-pfbench.XXXXXX")
work=$(realpath "$work")
chmod 755 "$work"   # Postfix daemons run as user postfix below it
distinct_ports 4
port_plain=${ports[0]} port_milter=${ports[1]} milter_port=${ports[2]} sink_port=${ports[3]}
say "work directory $work"

# ---------------------------------------------------------------- the message
# Default: the easy_ham message whose size is closest to 5,000 bytes (ties: by
# name), its mbox "From " line removed.
if [[ -z $message ]]; then
    message=$(find "$corpus/easy_ham" -type f -printf '%s %p\n' | sort -k2,2 |
        awk '{ d = $1 - 5000; if (d < 0) d = -d } NR == 1 || d < best { best = d; file = $2 } END { print file }')
fi
[[ -f $message ]] || die "message file not found: $message"
msgfile=$work/message.eml
sed '1{/^From /d}' "$message" >"$msgfile"
msg_bytes=$(wc -c <"$msgfile")
msg_label=${message#"$corpus"/}

# ---------------------------------------------------------------- model
db=$work/model.db
say "training a model on $corpus/spam and $corpus/easy_ham"
t=$SECONDS
learn_corpus_model "$db" "$corpus"
learn_seconds=$((SECONDS - t))

# ---------------------------------------------------------------- mailsiftd
start_mailsiftd "$db" "$milter_port" "$milter_config"
model_line=$(grep -m1 'loaded model' "$work/mailsiftd.log" | sed 's/.*loaded model from [^:]*: //')

# ---------------------------------------------------------------- SMTP sink
sink=$work/sink
start_bench_sink "$sink_port" "$sink"

# ---------------------------------------------------------------- private Postfix
pfetc=$work/etc
queue=$work/queue
mkdir -p "$pfetc"

smtpd_procs=$((2 * sessions))          # per listener: headroom for connection churn
delivery_concurrency=20                # parallel deliveries to the sink (Postfix default)
process_limit=$((smtpd_procs > 100 ? smtpd_procs : 100))

# The base shared with tests/integration/postfix_test.sh; the benchmark settings follow it.
{
    echo "# Private Postfix instance for bench/postfix_throughput.sh: nothing here refers to /etc/postfix."
    postfix_base_main_cf "$work" "$queue" "$sink_port" mailsift-bench
    cat <<EOF
# milter: set per listener in master.cf (-o smtpd_milters=...)
smtpd_milters =

# benchmark tuning
default_process_limit = $process_limit
initial_destination_concurrency = $delivery_concurrency
default_destination_concurrency_limit = $delivery_concurrency
smtp_connection_cache_destinations = [127.0.0.1]:$sink_port
EOF
} >"$pfetc/main.cf"

# Only the services needed; no chroot. Two smtpd listeners, identical except for the milter.
{
    cat <<EOF
127.0.0.1:$port_plain  inet n - n - $smtpd_procs smtpd -o smtpd_milters=
127.0.0.1:$port_milter inet n - n - $smtpd_procs smtpd -o smtpd_milters=inet:127.0.0.1:$milter_port
EOF
    postfix_base_services
} >"$pfetc/master.cf"

start_bench_postfix "$port_plain" "$port_milter"

# ---------------------------------------------------------------- measuring helpers
shopt -s nullglob
now() { echo "$EPOCHREALTIME"; }
delivered() { local f=("$sink"/[0-9]*.eml); echo "${#f[@]}"; }
queue_empty() { postqueue -c "$pfetc" -p 2>/dev/null | grep -q 'Mail queue is empty'; }

# CPU time in clock ticks: the whole machine (busy = all but idle and iowait),
# one process (with its threads), and this Postfix instance (every process whose
# working directory is its queue, plus children they have reaped).
clk_tck=$(getconf CLK_TCK)
cpu_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }
cpu_pid() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
cpu_postfix() {
    # (processes come and go meanwhile: find and cat may complain, which is fine)
    { find /proc/[0-9]*/cwd -maxdepth 0 -lname "$queue" -printf '%h/stat\n' 2>/dev/null || true; } |
        { xargs -r cat 2>/dev/null || true; } | awk '{ sub(/^.*\) /, ""); t += $12 + $13 + $14 + $15 } END { print t + 0 }'
}
cpu_snapshot() { echo "$(cpu_busy) $(cpu_postfix) $(cpu_pid "$dpid") $(cpu_pid "$sinkpid")"; }

source_opts=(-s "$sessions" -F "$msgfile" -f bench-sender@example.org -t rcpt@example.test -N -M bench-client.example)
((reuse)) && source_opts+=(-d)
run_timeout=$((120 + messages / 5))   # seconds; generous even at 10 msg/s

# smtp_source ARGS...: run smtp-source, bounded; in the background and waited
# for, so that SIGTERM/SIGINT reach the trap at once and cleanup can stop it.
smtp_source() {
    local rc=0
    timeout "$run_timeout" smtp-source "$@" >>"$work/smtp-source.log" 2>&1 &
    srcpid=$!
    wait "$srcpid" || rc=$?
    srcpid=
    return "$rc"
}

# empty_sink: remove delivered files so the next run counts from 0.
empty_sink() { find "$sink" -maxdepth 1 -type f -name '*.eml' -delete; }

# run PORT COUNT: send COUNT messages through smtpd on PORT and wait for all of
# them in the sink. Sets RUN_TOTAL, RUN_ACCEPT (seconds), RUN_CPU (tick deltas:
# busy postfix mailsiftd sink), RUN_TAGGED (delivered copies with X-Mailsift-Status).
run() {
    local port=$1 count=$2 t0 t1 t2 deadline c0 c1 n
    wait_for 60 queue_empty || die "Postfix queue not empty before a run"
    empty_sink
    c0=$(cpu_snapshot)
    t0=$(now)
    smtp_source "${source_opts[@]}" -m "$count" "127.0.0.1:$port" ||
        die "smtp-source to 127.0.0.1:$port failed (status $?)"
    t1=$(now)
    deadline=$((SECONDS + run_timeout))
    while n=$(delivered); ((n < count)); do
        ((SECONDS < deadline)) || die "only $n of $count messages reached the sink within $run_timeout s"
        sleep 0.05
    done
    t2=$(now)
    c1=$(cpu_snapshot)
    ((n == count)) || die "the sink holds $n messages, expected $count"
    RUN_TOTAL=$(awk -v a="$t0" -v b="$t2" 'BEGIN { printf "%.4f", b - a }')
    RUN_ACCEPT=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
    RUN_CPU=$(paste -d' ' <(tr ' ' '\n' <<<"$c0") <(tr ' ' '\n' <<<"$c1") | awk '{ printf "%s%d", (NR > 1 ? " " : ""), $2 - $1 }')
    RUN_TAGGED=$(find "$sink" -maxdepth 1 -name '[0-9]*.eml' -exec grep -l '^X-Mailsift-Status: ' {} + | wc -l || true)
}

median() { tr ' ' '\n' | { grep . || true; } | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
rate() { awk -v n="$1" -v t="$2" 'BEGIN { printf "%.1f", n / t }'; }

# ---------------------------------------------------------------- sink alone
# smtp-source straight into the sink, S sessions over reused connections (as
# Postfix delivers to it, with connection caching): the ceiling the sink imposes.
sink_rates=()
for ((i = 1; i <= reps; i++)); do
    empty_sink
    t0=$(now)
    smtp_source -d -s "$sessions" -F "$msgfile" -f bench-sender@example.org \
        -t rcpt@example.test -N -M bench-client.example -m "$messages" "127.0.0.1:$sink_port" ||
        die "smtp-source to the sink failed"
    deadline=$((SECONDS + 60))
    until (($(delivered) >= messages)); do
        ((SECONDS < deadline)) || die "sink-only run: messages missing"
        sleep 0.05
    done
    t1=$(now)
    sink_rates+=("$(rate "$messages" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')")")
done
empty_sink
say "sink alone: ${sink_rates[*]} msg/s"

# ---------------------------------------------------------------- warm-up
warm=$((messages < 200 ? messages : 200))
say "warm-up: $warm messages through each listener (not timed)"
run "$port_plain" "$warm"
run "$port_milter" "$warm"
((RUN_TAGGED == warm)) || die "warm-up through the milter listener: $RUN_TAGGED of $warm copies carry X-Mailsift-Status"

# ---------------------------------------------------------------- measured runs
declare -A total accept cpu tagged
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
order=()
for ((i = 1; i <= reps; i++)); do
    if ((i % 2)); then order+=(plain milter); else order+=(milter plain); fi
done
i=0
for cfg in "${order[@]}"; do
    i=$((i + 1))
    if [[ $cfg == plain ]]; then port=$port_plain; else port=$port_milter; fi
    run "$port" "$messages"
    total[$cfg]+="$RUN_TOTAL "
    accept[$cfg]+="$RUN_ACCEPT "
    cpu[$cfg]+="$RUN_CPU;"
    tagged[$cfg]+="$RUN_TAGGED "
    say "run $i/${#order[@]} ($cfg): $(rate "$messages" "$RUN_TOTAL") msg/s delivered, $(rate "$messages" "$RUN_ACCEPT") msg/s accepted, X-Mailsift-Status on $RUN_TAGGED"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# Every milter run must have tagged every copy and no plain run any: otherwise
# the two columns would not measure what they say.
for t in ${tagged[milter]}; do ((t == messages)) || die "a run through mailsiftd delivered only $t of $messages copies with X-Mailsift-Status"; done
for t in ${tagged[plain]}; do ((t == 0)) || die "a run without milter delivered $t copies with X-Mailsift-Status"; done

# ---------------------------------------------------------------- report
declare -A m_total m_accept r_total r_accept busy_pct ms_all ms_pf ms_ms ms_sink per_session runs_list
for cfg in plain milter; do
    m_total[$cfg]=$(median <<<"${total[$cfg]}")
    m_accept[$cfg]=$(median <<<"${accept[$cfg]}")
    r_total[$cfg]=$(rate "$messages" "${m_total[$cfg]}")
    r_accept[$cfg]=$(rate "$messages" "${m_accept[$cfg]}")
    runs_list[$cfg]=$(for t in ${total[$cfg]}; do printf '%s ' "$(rate "$messages" "$t")"; done)
    # CPU: summed over the runs of this configuration, per message and as a share
    # of all CPUs during those runs.
    read -r b pf ms sk < <(tr ';' '\n' <<<"${cpu[$cfg]}" | awk 'NF { b += $1; p += $2; m += $3; s += $4 } END { print b, p, m, s }')
    wall=$(tr ' ' '\n' <<<"${total[$cfg]}" | awk 'NF { s += $1 } END { print s }')
    n_all=$((messages * reps))
    busy_pct[$cfg]=$(awk -v b="$b" -v hz="$clk_tck" -v w="$wall" -v c="$(nproc)" 'BEGIN { printf "%.0f%%", 100 * b / hz / w / c }')
    ms_all[$cfg]=$(awk -v x="$b" -v hz="$clk_tck" -v n="$n_all" 'BEGIN { printf "%.2f", 1000 * x / hz / n }')
    ms_pf[$cfg]=$(awk -v x="$pf" -v hz="$clk_tck" -v n="$n_all" 'BEGIN { printf "%.2f", 1000 * x / hz / n }')
    ms_ms[$cfg]=$(awk -v x="$ms" -v hz="$clk_tck" -v n="$n_all" 'BEGIN { printf "%.2f", 1000 * x / hz / n }')
    ms_sink[$cfg]=$(awk -v x="$sk" -v hz="$clk_tck" -v n="$n_all" 'BEGIN { printf "%.2f", 1000 * x / hz / n }')
    # Each session sends one message after the other: S / rate is the wall time
    # one message takes from its session's point of view.
    per_session[$cfg]=$(awk -v s="$sessions" -v r="${r_total[$cfg]}" 'BEGIN { printf "%.2f", 1000 * s / r }')
done
# mailsiftd logs "message ID: ... N bytes T ms" for each message, T from end of body
# to its answer (all messages through it, warm-up included).
scoring_ms=$(awk '/message [^ ]*: .* ms$/ { print $(NF - 1) }' "$work/mailsiftd.log" | median)
scoring_ms=$(awk -v x="${scoring_ms:-0}" 'BEGIN { printf "%.3f", x }')
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b / a }'; }
ratio_total=$(ratio "${r_total[plain]}" "${r_total[milter]}")
ratio_accept=$(ratio "${r_accept[plain]}" "${r_accept[milter]}")
verdict() { awk -v r="$1" 'BEGIN { print (r >= 0.90) ? "meets the target" : "below the target" }'; }
conn_mode="one TCP connection per message"
((reuse)) && conn_mode="all of a session's messages over one connection (-d)"
cpu_model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
fs=$(findmnt -no FSTYPE,SOURCE -T "$work" 2>/dev/null | tr -s ' ' || echo '?')

row() { printf '%-40s %19s %19s %7s\n' "$@"; }
echo
echo "mailsift: end-to-end SMTP throughput through a private Postfix on 127.0.0.1"
echo "machine    : $(nproc) CPUs, ${cpu_model:-unknown CPU}, Linux $(uname -r); load average $load_before before, $load_after after"
echo "postfix    : $(postconf -d -h mail_version 2>/dev/null) (queue on $fs)"
echo "mailsiftd  : $("$mailsiftd" --version 2>&1 | head -n 1), --config $milter_config$([[ $milter_config == /dev/null ]] && echo ' (defaults)'), model: $model_line"
echo "message    : $msg_label, $msg_bytes bytes (mbox From_ line removed)"
echo "load       : smtp-source, N=$messages messages per run, S=$sessions parallel sessions, $conn_mode"
echo "tuning     : default_process_limit=$process_limit, smtpd maxproc=$smtpd_procs per listener, in_flow_delay=0,"
echo "             initial/default_destination_concurrency=$delivery_concurrency, smtp connection cache to the sink,"
echo "             milter_protocol=6, milter_default_action=tempfail; no chroot, no DNS, no TLS"
echo "sink alone : $(median <<<"${sink_rates[*]}") msg/s median (${sink_rates[*]}; smtp-source -d -s $sessions straight into the sink)"
echo "runs       : $reps per configuration, alternating, after a $warm-message warm-up; median reported"
echo
row "" "without milter" "with mailsiftd" "ratio"
row "delivered to sink, msg/s (median)" "${r_total[plain]}" "${r_total[milter]}" "$ratio_total"
row "accepted by smtpd, msg/s (median)" "${r_accept[plain]}" "${r_accept[milter]}" "$ratio_accept"
row "delivered msg/s, each run" "${runs_list[plain]% }" "${runs_list[milter]% }" ""
row "CPU busy, all $(nproc) CPUs" "${busy_pct[plain]}" "${busy_pct[milter]}" ""
row "CPU ms/msg: Postfix (all processes)" "${ms_pf[plain]}" "${ms_pf[milter]}" ""
row "CPU ms/msg: mailsiftd" "${ms_ms[plain]}" "${ms_ms[milter]}" ""
row "CPU ms/msg: sink" "${ms_sink[plain]}" "${ms_sink[milter]}" ""
row "CPU ms/msg: whole machine (/proc/stat)" "${ms_all[plain]}" "${ms_all[milter]}" ""
row "wall ms/msg per session (S / rate)" "${per_session[plain]}" "${per_session[milter]}" ""
row "mailsiftd's own time per msg, median" "-" "$scoring_ms" ""
echo
echo "target: with mailsiftd >= 90% of without. delivered: ratio $ratio_total, $(verdict "$ratio_total");" \
    "accepted: ratio $ratio_accept, $(verdict "$ratio_accept") (informational, not a pass/fail)"
awk -v a="${busy_pct[plain]%\%}" -v b="${busy_pct[milter]%\%}" 'BEGIN { exit !(b < 0.6 * a) }' &&
    echo "note: with mailsiftd the CPUs are mostly idle: messages wait (latency), they do not queue for CPU"
echo "run time $((SECONDS - start_seconds)) s (model training $learn_seconds s)"
