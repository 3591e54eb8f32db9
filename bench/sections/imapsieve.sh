# bench/sections/imapsieve.sh - run.sh's section imapsieve: the move a user
# makes, through a private Dovecot and the README's IMAPSieve recipe, beside
# the same recipe with bogofilter (imapsieve_move.sh); sourced by run.sh,
# which provides the work directory ($tmp), the binaries, the targets and the
# helpers.
# shellcheck shell=bash disable=SC2154
sec_imapsieve() {
    section "imapsieve: messages moved into Junk and back through Dovecot, beside bogofilter (imapsieve_move.sh$( ((quick)) && echo ' --messages 50 --rounds 1'))"
    if [[ $(id -u) -ne 0 ]] || ! command -v dovecot >/dev/null || ! command -v bogofilter >/dev/null; then
        echo "skipped: needs root, Dovecot with Pigeonhole and bogofilter (scripts/deps.sh --test --bench)"
        summary imapsieve "messages moved / bogofilter" "$(shown '<=' "$target_imapsieve_ratio" x)" "skipped" -
        return 0
    fi
    local args=(--mailsift "$mailsift" --mailsiftd "$mailsiftd" --summary "$tmp/summary")
    ((quick)) && args+=(--messages 50 --rounds 1)
    "$repo_root/bench/imapsieve_move.sh" "${args[@]}" >"$tmp/imapsieve.out" 2>"$tmp/imapsieve.err" ||
        { cat "$tmp/imapsieve.out"; tail -n 5 "$tmp/imapsieve.err" >&2; return 1; }
    cat "$tmp/imapsieve.out"
}
