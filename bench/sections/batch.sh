# bench/sections/batch.sh - run.sh's section b. batch; sourced by run.sh,
# which provides the work directory ($tmp), the binaries, the targets and the
# helpers (say, note, summary, section, stats, start_daemon, ...).
# shellcheck shell=bash disable=SC2154
sec_batch() {
    section "batch: learn and classify the whole corpus, mailsift vs bogofilter (speed.sh)"
    if ! command -v bogofilter >/dev/null || [[ ! -x /usr/bin/time ]]; then
        echo "skipped: bogofilter or /usr/bin/time is missing (scripts/deps.sh --bench installs them)"
        summary batch "learn / classify msgs/s ratio" - "skipped" -
        return 0
    fi
    "$repo_root/bench/speed.sh" --mailsift "$mailsift" --corpus "$corpus" \
        >"$tmp/batch.out" 2>"$tmp/batch.err" || { cat "$tmp/batch.out"; tail -n 5 "$tmp/batch.err" >&2; return 1; }
    # Its table and notes, without its header lines (machine, versions: printed above).
    sed -n '/^| whole corpus/,/^total runtime/p' "$tmp/batch.out"
    local learn classify
    # Markdown rows: | LABEL | MAILSIFT | BOGOFILTER | RATIO |
    # Messages per CPU second, as speed.sh and bench/targets.sh state the target.
    learn=$(awk -F' *[|] *' '$2 == "learn: msgs per CPU s" { print $3 " vs " $4 " msgs per CPU s, ratio " $5 }' "$tmp/batch.out")
    classify=$(awk -F' *[|] *' '$2 == "classify: msgs per CPU s" { print $3 " vs " $4 " msgs per CPU s, ratio " $5 }' "$tmp/batch.out")
    summary batch "learn corpus, mailsift vs bogofilter" "$(shown ">=" "$target_learn_ratio" x)" "${learn:-n/a}" \
        "$(at_least "${learn##*ratio }" "$target_learn_ratio")"
    summary batch "classify corpus, mailsift vs bogofilter" "$(shown ">=" "$target_classify_ratio" x)" "${classify:-n/a}" \
        "$(at_least "${classify##*ratio }" "$target_classify_ratio")"
}
