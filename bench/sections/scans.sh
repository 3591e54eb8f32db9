# bench/sections/scans.sh - run.sh's section h. scans; sourced by run.sh,
# which provides the work directory ($tmp), the binaries, the targets and the
# helpers (say, note, summary, section, stats, start_daemon, ...).
# shellcheck shell=bash disable=SC2154
sec_scans() {
    section "scans: bytes per recorded scan on disk, the corpus sent through Postfix and mailsiftd (scan_size.sh)"
    export PATH="$PATH:/usr/sbin:/sbin"
    if [[ $(id -u) -ne 0 ]] || ! command -v postfix >/dev/null; then
        echo "skipped: needs root and Postfix (scripts/deps.sh --test)"
        summary scans "bytes per recorded scan" "<= $target_scan_bytes" "skipped" -
        return 0
    fi
    local rc=0
    "$repo_root/bench/scan_size.sh" --corpus "$corpus" --mailsiftd "$mailsiftd" --mailsift "$mailsift" \
        >"$tmp/scans.out" 2>"$tmp/scans.err" || rc=$?
    cat "$tmp/scans.out"
    if ((rc != 0)); then
        echo "scan_size.sh exited with $rc; its last messages:"
        tail -n 8 "$tmp/scans.err"
        summary scans "bytes per recorded scan" "<= $target_scan_bytes" "failed (status $rc)" -
        return 0
    fi
    local bytes
    bytes=$(awk -F': *' '/^bytes per scan/ { gsub(/,/, "", $2); print $2 + 0 }' "$tmp/scans.out")
    summary scans "bytes per recorded scan" "<= $target_scan_bytes" "${bytes:-n/a}" "$(at_most "${bytes:-x}" "$target_scan_bytes")"
}
