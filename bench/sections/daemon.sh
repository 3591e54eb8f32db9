# bench/sections/daemon.sh - run.sh's section c. daemon (and d. memory); sourced by run.sh,
# which provides the work directory ($tmp), the binaries, the targets and the
# helpers (say, note, summary, section, stats, start_daemon, ...).
# shellcheck shell=bash disable=SC2154
# The daemon database: the training part of the development split.
daemon_db() {
    [[ -f $tmp/daemon.db ]] && return 0
    say "training the daemon's model on $n_train messages (held out: $n_test)"
    ms_learn "$tmp/daemon.db" "$tmp/train"
}

sec_daemon() {
    section "daemon: mailsiftd under mailsift-loadgen, $n_test held-out messages replayed, ${daemon_seconds} s per run, $daemon_reps run(s) per row"
    daemon_db
    start_daemon daemon "$tmp/daemon.db"
    lg --connections 16 --duration 1 >/dev/null     # warm-up, not reported
    local c r line c0 c1 m lo hi
    for c in "${daemon_connections[@]}"; do
        : >"$tmp/daemon.$c"
        for ((r = 1; r <= daemon_reps; r++)); do
            c0=$(cpu_ticks "$DPID")
            line=$(lg --connections "$c" --duration "$daemon_seconds")
            c1=$(cpu_ticks "$DPID")
            say "  $line"
            # msgs/s p50 p90 p99 max errors daemon-CPU-ms-per-message
            echo "$(kv "$line" msgs/s) $(kv "$line" p50) $(kv "$line" p90) $(kv "$line" p99) $(kv "$line" max)" \
                "$(kv "$line" errors)" \
                "$(awk -v d=$((c1 - c0)) -v hz="$clk_tck" -v n="$(kv "$line" messages)" 'BEGIN { printf "%.3f", n ? 1000 * d / hz / n : 0 }')" \
                >>"$tmp/daemon.$c"
        done
    done
    printf '%-11s %-20s %-22s %-22s %-22s %-22s %6s %9s\n' connections "msgs/s" "p50 ms" "p90 ms" "p99 ms" "max ms" errors "CPU ms/msg"
    table_rule 143
    local col fmt cells errors cpu
    for c in "${daemon_connections[@]}"; do
        cells=()
        for col in 1 2 3 4 5; do
            fmt='%.3f'; ((col == 1)) && fmt='%.0f'
            read -r m lo hi < <(cut -d' ' -f"$col" "$tmp/daemon.$c" | stats)
            cells+=("$(fmt_range "$fmt" "$m" "$lo" "$hi")")
        done
        errors=$(awk '{ s += $6 } END { print s + 0 }' "$tmp/daemon.$c")
        cpu=$(cut -d' ' -f7 "$tmp/daemon.$c" | stats | cut -d' ' -f1)
        printf '%-11s %-20s %-22s %-22s %-22s %-22s %6s %9s\n' "$c" "${cells[@]}" "$errors" "$cpu"
        if ((c == 16)); then
            summary daemon "$c connections: msgs/s" ">= $target_daemon_rate" "${cells[0]}" \
                "$(at_least "${cells[0]}" "$target_daemon_rate")"
            summary daemon "$c connections: p99 ms" "<= $target_daemon_p99" "${cells[3]}" \
                "$(at_most "${cells[3]}" "$target_daemon_p99")"
        elif ((c == 512)); then
            summary daemon "$c connections: msgs/s" - "${cells[0]}" -
            summary daemon "$c connections: p99 ms" - "${cells[3]}" -
        fi
    done
    echo "(median of the runs, (min-max) when they differ; latency from end of body to the final reply;"
    echo " CPU ms/msg: mailsiftd's user+sys CPU per message; model: $(grep -m1 'loaded model' "$DLOG" | sed 's/.*: //'))"
    if [[ -s $tmp/loadgen.err ]]; then say "loadgen said: $(awk '!seen[$0]++ && n++ < 3' "$tmp/loadgen.err" | tr '\n' ' ')"; fi

    if [[ -n ${run_section[memory]:-} ]]; then
        if ((long > 0)); then sec_memory; else echo "(memory: skipped, it needs --long N)"; fi
    fi
    stop_ours "$DPID"
}

# d. memory over a long run against the daemon of sec_daemon (or its own).
sec_memory() {
    section "memory: $long messages over $long_connections connections, mailsiftd VmRSS every $rss_every s"
    if [[ -z ${DPID:-} ]] || ! kill -0 "$DPID" 2>/dev/null; then
        daemon_db
        start_daemon memory "$tmp/daemon.db"
    fi
    local before lgpid t0 now line samples first_t first max max_t last_t last warm first_label
    local dropped0 messages0 dropped1 messages1 sent i
    before=$(rss_kib "$DPID")
    # The daemon's counters as mailsift stats shows them (written every stats_interval).
    dropped0=$(ms_counter "$tmp/daemon.db" scans_dropped) messages0=$(ms_counter "$tmp/daemon.db" messages)
    : >"$tmp/rss"
    "$loadgen" --connect "127.0.0.1:$DPORT" --files-from "$tmp/test.list" --connections "$long_connections" \
        --messages "$long" >"$tmp/long.out" 2>"$tmp/long.err" &
    lgpid=$!
    echo "$lgpid" >>"$tmp/pids"
    t0=$EPOCHREALTIME
    while kill -0 "$lgpid" 2>/dev/null; do
        now=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
        echo "$now $(rss_kib "$DPID")" >>"$tmp/rss"
        sleep "$rss_every"
    done
    wait "$lgpid" || true
    sleep 1
    line=$(grep '^connections' "$tmp/long.out" || echo "no summary line")
    # Until the recorder has written the run's counters (stats_interval, 5 s), at most 30 s.
    sent=$(kv "$line" messages); [[ $sent =~ ^[0-9]+$ ]] || sent=0
    for ((i = 0; i < 60; i++)); do
        messages1=$(ms_counter "$tmp/daemon.db" messages)
        ((messages1 - messages0 >= sent)) && break
        sleep 0.5
    done
    dropped1=$(ms_counter "$tmp/daemon.db" scans_dropped)
    samples=$(wc -l <"$tmp/rss")
    # first sample after the warm-up (or the first when the run was shorter), max, last
    read -r first_t first max max_t last_t last warm < <(awk -v w="$warmup_seconds" '
        NR == 1 { f0 = $2; ft0 = $1 }
        $1 >= w && !have { f = $2; ft = $1; have = 1 }
        $2 > m { m = $2; mt = $1 }
        { l = $2; lt = $1 }
        END { if (!have) { f = f0; ft = ft0 } print ft, f, m, mt, lt, l, have + 0 }' "$tmp/rss")
    printf '%-44s %s\n' "messages, errors, seconds" "$(kv "$line" messages), $(kv "$line" errors), $(kv "$line" seconds)"
    printf '%-44s %s\n' "msgs/s, latency p50 / p99 / max ms" "$(kv "$line" msgs/s), $(kv "$line" p50) / $(kv "$line" p99) / $(kv "$line" max)"
    printf '%-44s %s\n' "VmRSS before the run" "$(mib "$before") MiB"
    first_label="VmRSS first sample after ${warmup_seconds} s warm-up"
    ((warm)) || first_label="VmRSS first sample (run shorter than ${warmup_seconds} s)"
    printf '%-44s %s\n' "$first_label" "$(mib "$first") MiB (at ${first_t} s)"
    printf '%-44s %s\n' "VmRSS max" "$(mib "$max") MiB (at ${max_t} s)"
    printf '%-44s %s\n' "VmRSS last sample" "$(mib "$last") MiB (at ${last_t} s; $samples samples)"
    printf '%-44s %s\n' "VmRSS 1 s after the run, VmHWM" "$(mib "$(rss_kib "$DPID")") MiB, $(mib "$(hwm_kib "$DPID")") MiB"
    printf '%-44s %s\n' "VmRSS max per tenth of the run, MiB" "$(awk '
        { t[NR] = $1; r[NR] = $2 } END {
            if (NR == 0) exit; span = t[NR] > 0 ? t[NR] : 1
            for (i = 1; i <= NR; i++) { b = int(10 * t[i] / span); if (b > 9) b = 9; if (r[i] > m[b]) m[b] = r[i] }
            for (b = 0; b < 10; b++) printf "%s%s", (b ? " " : ""), (b in m) ? int(m[b] / 1024) : "-"
        }' "$tmp/rss")"
    printf '%-44s %s\n' "growth last - first after warm-up" "$(awk -v a="$first" -v b="$last" 'BEGIN { printf "%+.1f MiB (%+.1f%%)", (b - a) / 1024, a ? 100 * (b - a) / a : 0 }')"
    printf '%-44s %s\n' "loadgen errors" "$(kv "$line" errors)$( [[ -s $tmp/long.err ]] && printf ' (%s)' "$(head -n 1 "$tmp/long.err")")"
    printf '%-44s %s\n' "mailsiftd warnings/errors in its log" "$(grep -c '^<[34]>' "$DLOG" || true)"
    printf '%-44s %s\n' "scans dropped (mailsift stats)" \
        "$((dropped1 - dropped0)) (messages counted meanwhile: $((messages1 - messages0)))"
    summary memory "VmRSS first after warm-up -> max -> last, MiB" - "$(mib "$first") -> $(mib "$max") -> $(mib "$last")" -
    summary memory "scans dropped, $long_connections connections" 0 "$((dropped1 - dropped0))" \
        "$(at_most "$((dropped1 - dropped0))" 0)"
    summary memory "loadgen errors over $long messages" - "$(kv "$line" errors)" -
}
