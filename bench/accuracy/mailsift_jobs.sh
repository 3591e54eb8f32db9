# bench/accuracy/mailsift_jobs.sh - accuracy.sh's mailsift jobs: the split and
# class-sorted protocols (learn, then classify in one process) and the online one
# (evaluate --online); sourced by accuracy.sh, which provides the work directory
# ($tmp), the binaries, the settings and the helpers (cpu, metrics, put, exit_note,
# ...; bench/accuracy/helpers.sh).
# shellcheck shell=bash disable=SC2154
# ---------------------------------------------------------------- mailsift jobs
# ms_split LIST MODE: MODE index (learn --index, arrival order) or class (learn
# --spam, then learn --ham); then classify the test list in one process.
ms_split() {
    local t=$tmp/c/$1 d cls rc=0
    if [[ $2 == index ]]; then d=$tmp/r/$1/ms-split; else d=$tmp/r/$1/ms-class; fi
    local cpuf=$d/cpu
    mkdir -p "$d"; : >"$cpuf"
    if [[ $2 == index ]]; then  # the training half in its order, each message with its label
        cpu "$mailsift" --config "$config" --db "$d/m.db" learn --index "$t/train" >>"$d/log" 2>&1 || rc=$?
        exit_note "$d" "mailsift learn --index" "$rc"
    else
        for cls in spam ham; do
            rc=0
            cpu "$mailsift" --config "$config" --db "$d/m.db" learn "--$cls" --files-from "$t/train.$cls" >>"$d/log" 2>&1 || rc=$?
            exit_note "$d" "mailsift learn --$cls" "$rc"
        done
    fi
    local learn_cpu; learn_cpu=$(cpu_total)
    rc=0
    cpu "$mailsift" --config "$config" --db "$d/m.db" classify --files-from "$t/test.list" >"$d/out" 2>>"$d/log" || rc=$?
    exit_note "$d" "mailsift classify" "$rc"
    # PATH VERDICT P LOG_ODDS -> LABEL LOG_ODDS VERDICT P PATH, joined by path.
    awk -F'\t' -v OFS='\t' 'NR == FNR { split($0, a, " "); label[a[2]] = a[1]; next }
        ($1 in label) { print label[$1], $4, $2, $3, $1 }' "$t/test" "$d/out" >"$d/scores"
    metrics "$d"
    put "$d" learn_cpu "$learn_cpu"
    put "$d" classify_cpu "$(cpu_total)"
    put "$d" learned "$("$mailsift" --config "$config" --db "$d/m.db" stats --json |
        python3 -c 'import json,sys; m = json.load(sys.stdin)["messages"]; print(m["spam"] + m["ham"])')"
    put "$d" db "$(size_of "$d/m.db"*)"
}

# evaluate_report DIR: the metrics of a mailsift evaluate run that wrote DIR/raw
# (--scores: PATH LABEL VERDICT P LOG_ODDS) and DIR/json, in its temporary database.
evaluate_report() {
    local d=$1
    # PATH LABEL VERDICT P LOG_ODDS -> LABEL LOG_ODDS VERDICT P PATH
    awk -F'\t' -v OFS='\t' '{ print $2, $5, $3, $4, $1 }' "$d/raw" >"$d/scores"
    metrics "$d"
    put "$d" cpu_total "$(cpu_total)"
    put "$d" learned "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trained"])' "$d/json")"
    put "$d" db "temporary"
}

# ms_online LIST: evaluate --online on the list's index.
ms_online() {
    local t=$tmp/c/$1 d=$tmp/r/$1/ms-online rc=0
    local cpuf=$d/cpu
    mkdir -p "$d"; : >"$cpuf"
    cpu "$mailsift" --config "$config" evaluate --index "$t/index" --online --json --scores "$d/raw" >"$d/json" 2>>"$d/log" || rc=$?
    exit_note "$d" "mailsift evaluate --online" "$rc"
    evaluate_report "$d"
}
