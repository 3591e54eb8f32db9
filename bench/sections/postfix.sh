# bench/sections/postfix.sh - run.sh's section g. postfix; sourced by run.sh,
# which provides the work directory ($tmp), the binaries, the targets and the
# helpers (say, note, summary, section, stats, start_daemon, ...).
# shellcheck shell=bash disable=SC2154
sec_postfix() {
    section "postfix: end-to-end SMTP through a private Postfix, without and with mailsiftd (postfix_throughput.sh ${postfix_args[*]})"
    export PATH="$PATH:/usr/sbin:/sbin"
    if [[ $(id -u) -ne 0 ]] || ! command -v postfix >/dev/null || ! command -v smtp-source >/dev/null; then
        echo "skipped: needs root and Postfix with smtp-source installed (scripts/deps.sh --test)"
        summary postfix "delivered msg/s with / without mailsiftd" ">= $target_postfix_ratio" "skipped" -
        return 0
    fi
    local rc=0
    "$repo_root/bench/postfix_throughput.sh" "${postfix_args[@]}" --corpus "$corpus" \
        --mailsiftd "$mailsiftd" --mailsift "$mailsift" >"$tmp/postfix.out" 2>"$tmp/postfix.err" || rc=$?
    sed -n '/^mailsift: end-to-end/,$p' "$tmp/postfix.out"
    if ((rc != 0)); then
        echo "postfix_throughput.sh exited with $rc; its last messages:"
        tail -n 8 "$tmp/postfix.err"
        summary postfix "delivered msg/s with / without mailsiftd" ">= $target_postfix_ratio" "failed (status $rc)" -
        return 0
    fi
    local ratio status
    ratio=$(awk '/^delivered to sink/ { print $NF }' "$tmp/postfix.out")
    status=$(awk -v r="${ratio:-0}" -v t="$target_postfix_ratio" 'BEGIN { print (r >= t) ? "met" : "not met" }')
    summary postfix "delivered msg/s with / without mailsiftd" ">= $target_postfix_ratio" "${ratio:-n/a}" "$status"
}
