# bench/sections/scale.sh - run.sh's section f. scale; sourced by run.sh,
# which provides the work directory ($tmp), the binaries, the targets and the
# helpers (say, note, summary, section, stats, start_daemon, ...).
# shellcheck shell=bash disable=SC2154
sec_scale() {
    section "scale: model size and message size (mailsift-bench-scale; ~12 s, peaks near 1 GB)"
    "$scale" --corpus "$corpus" >"$tmp/scale.out" 2>"$tmp/scale.err" || { cat "$tmp/scale.out"; tail -n 5 "$tmp/scale.err" >&2; return 1; }
    cat "$tmp/scale.out"
    local r
    r=$(sed -n 's/.*10^7 vs 10^5 features: //p' "$tmp/scale.out")
    local mean_ratio=${r#mean }
    mean_ratio=${mean_ratio%%x*}
    summary scale "classify a message, 10^7 vs 10^5 features" "<= ${target_scale_ratio}x" "${r:-n/a}" \
        "$(at_most "$mean_ratio" "$target_scale_ratio")"
}
