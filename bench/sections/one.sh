# bench/sections/one.sh - run.sh's section one: one message, one process
# (one_message.sh: classify and correct of one message beside bogofilter, and
# on a model ten times larger); sourced by run.sh, which provides the work
# directory ($tmp), the binaries, the targets and the helpers.
# shellcheck shell=bash disable=SC2154
sec_one() {
    section "one: one message, one process, beside bogofilter (one_message.sh$( ((quick)) && echo ' --runs 7 --scale 4'))"
    if ! command -v bogofilter >/dev/null || ! command -v sqlite3 >/dev/null; then
        echo "skipped: bogofilter or sqlite3 is missing (scripts/deps.sh --bench installs them)"
        summary "one message" "classify and correct / bogofilter" - "skipped" -
        return 0
    fi
    local args=(--mailsift "$mailsift" --summary "$tmp/summary")
    ((quick)) && args+=(--runs 7 --scale 4)
    "$repo_root/bench/one_message.sh" "${args[@]}" >"$tmp/one.out" 2>"$tmp/one.err" ||
        { cat "$tmp/one.out"; tail -n 5 "$tmp/one.err" >&2; return 1; }
    cat "$tmp/one.out"
}
