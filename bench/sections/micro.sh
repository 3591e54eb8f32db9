# bench/sections/micro.sh - run.sh's section a. micro; sourced by run.sh,
# which provides the work directory ($tmp), the binaries, the targets and the
# helpers (say, note, summary, section, stats, start_daemon, ...).
# shellcheck shell=bash disable=SC2154
sec_micro() {
    section "micro: one message through each stage (mailsift-bench-micro, ${micro_args[*]})"
    if [[ ! -x $micro ]]; then
        echo "skipped: $micro is not built (needs Google Benchmark: scripts/deps.sh --bench, then rebuild)"
        summary micro "full/p50 us per message" - "not built" -
        return 0
    fi
    "$micro" --corpus "$corpus" --benchmark_format=csv "${micro_args[@]}" >"$tmp/micro.csv" 2>"$tmp/micro.err" ||
        { tail -n 5 "$tmp/micro.err" >&2; return 1; }
    # Per benchmark: the repetitions' rows (not the _mean/_median/... aggregates).
    # Fields: name, CPU ns per message, bytes/s, items/s, features, message bytes.
    awk -F, 'NR > 1 { n = $1; gsub(/"/, "", n)
                 if (n ~ /_(mean|median|stddev|cv)$/) next
                 f = ($5 == "us") ? 1e3 : ($5 == "ms") ? 1e6 : ($5 == "s") ? 1e9 : 1
                 print n, $4 * f, $6, $7, $(NF - 1), $NF }' "$tmp/micro.csv" >"$tmp/micro.rows"
    printf '%-31s %9s %9s  %-24s %12s %12s\n' benchmark bytes features "us/msg median (min-max)" "MiB/s" "msgs/s"
    table_rule 103
    local name us m lo hi
    while read -r name; do
        read -r m lo hi < <(awk -v n="$name" '$1 == n { print $2 / 1000 }' "$tmp/micro.rows" | stats)
        us=$(fmt_range '%.2f' "$m" "$lo" "$hi")
        awk -v n="$name" -v us="$us" '$1 == n { c++; b += $3; it += $4; f = $5; s = $6 }
            END { printf "%-31s %9d %9d  %-24s %12.1f %12.0f\n", n, s, f, us, b / c / 1048576, it / c }' "$tmp/micro.rows"
        if [[ $name == full/p50* ]]; then summary micro "one median message, parse+extract+score, us" - "$us" -; fi
    done < <(awk '!seen[$1]++ { print $1 }' "$tmp/micro.rows")
    echo "(CPU time per message; MiB/s and msgs/s: means over the repetitions; the messages are the corpus"
    echo " files at the 10th, 50th and 99th size percentile, size in the name; stages: see bench/README.md)"
}
