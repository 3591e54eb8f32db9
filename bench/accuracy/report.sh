# bench/accuracy/report.sh - accuracy.sh's report, the markdown on stdout: its
# header, the tables of the stream, of each corpus and of the long stream, the
# deployed table, and the summary (accuracy_summary.py); sourced by accuracy.sh,
# which calls report_header, report_tables, report_deployed and report_summary
# once the jobs have run, and provides the work directory ($tmp), the settings,
# the corpora's variables (bench/accuracy/corpora.sh) and the helpers (get, ...).
# shellcheck shell=bash disable=SC2154
pct_of() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", 100 * a / b; else print "n/a" }'; }
report_row() {  # report_row LABEL DIR
    local d=$2 n_ham n_spam n unsure cpu
    [[ -s $d/m ]] || { printf '| %s | n/a (the job failed) ||||||||||||\n' "$1"; return; }
    n_ham=$(get "$d" n_ham); n_spam=$(get "$d" n_spam); n=$((n_ham + n_spam))
    unsure=$(( $(get "$d" unsure_spam) + $(get "$d" unsure_ham) ))
    if [[ $(get "$d" cpu_total) != n/a ]]; then cpu="$(get "$d" cpu_total) (both)"; else cpu="$(get "$d" learn_cpu) / $(get "$d" classify_cpu)"; fi
    # A cached run's CPU is that of the run that filled the cache: said so, with its date.
    if [[ -f $d/cached ]]; then cpu+=", cached $(cat "$d/cached")"; fi
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s (%s: %s, n=%s) | %s | %s | %s |\n' "$1" \
        "$(get "$d" one_minus_roca_pct)" "$(get "$d" top10_share)" "$(get "$d" fnr_at_fpr_0.1_pct)" "$(get "$d" fnr_at_fpr_1_pct)" \
        "$(get "$d" fp_pct)" "$(get "$d" fn_pct)" "$(pct_of "$unsure" "$n")" \
        "$(get "$d" lam_pct)" "$(get "$d" ece)" "$(get "$d" worst_bin)" "$(get "$d" worst_bin_gap)" "$(get "$d" worst_bin_n)" \
        "$(get "$d" learned)" "$cpu" "$(get "$d" db)"
}
table_head() {
    echo "| filter, protocol | 1-ROCA% | 10 costliest: share of misranked pairs | FNR% at FPR<=0.1% | FNR% at FPR<=1% | FPR% | FNR% | unsure% | lam% | ECE (worst bin >= 30: gap, n) | learned | CPU s learn / classify | database |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
}
# report_table LABEL DIR [LABEL DIR]...: a table of the rows whose DIR exists.
report_table() {
    table_head
    while (($#)); do
        if [[ -d $2 ]]; then report_row "$1" "$2"; fi
        shift 2
    done
    echo
}
# report_costliest LABEL DIR [LABEL DIR]...: with --costliest N, each row's N costliest
# messages (costliest.py --list), paths relative to the corpus folders.
report_costliest() {
    ((costliest)) || return 0
    while (($#)); do
        if [[ -s $2/scores ]]; then
            echo "$1: the $costliest costliest messages (the misranked spam-ham pairs each is in, ties half)"
            echo
            python3 "$bench/costliest.py" --list "$costliest" --relative-to "$src" "$2/scores" || echo "(costliest.py failed)"
            echo
        fi
        shift 2
    done
}
# thousands N: N with a comma every three digits.
thousands() { sed -E ':a; s/([0-9])([0-9]{3})($|,)/\1,\2\3/; ta' <<<"$1"; }
count() { awk -v l="$2" '$1 == l' "$1" | wc -l | tr -d ' '; }

# report_header: the title and what the run was (date, machine, versions, cache,
# command, corpora).
report_header() {
    echo "# mailsift vs bogofilter: accuracy on every corpus"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) CPUs, $(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    echo "- mailsift: $("$mailsift" --version 2>/dev/null | head -n 1) ($(git -C "$repo_root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo_root" diff --quiet HEAD -- src include 2>/dev/null || echo '+changes')), config: $([[ $config != "$tmp/empty.conf" ]] && echo "$config" || echo 'built-in defaults')"
    if has deployed; then echo "- mailsiftd (deployed, real-daemon rows): $mailsiftd, $("$mailsiftd" --version 2>/dev/null | head -n 1)"; fi
    echo "- bogofilter: $(bogofilter -V 2>&1 | head -n 1) (Debian $(dpkg-query -W -f '${Version}' bogofilter 2>/dev/null || echo '?')), defaults (-C), cutoffs 0.99 / 0.45"
    if [[ -z $bf_cache ]]; then
        echo "- bogofilter cache: off (--no-bogofilter-cache): every bogofilter row computed in this run"
    else
        cached_rows=$(if [[ -s $tmp/cache-used ]]; then sort "$tmp/cache-used" | awk -F'\t' '{ printf "%s%s (%s, key %.12s)", (NR > 1 ? ", " : ""), $1, $3, $2 }'; fi)
        stored_rows=$(if [[ -s $tmp/cache-stored ]]; then sort "$tmp/cache-stored" | awk -F'\t' '{ printf "%s%s", (NR > 1 ? ", " : ""), $1 }'; fi)
        echo "- bogofilter cache: $bf_cache; rows from it (their runs' figures, CPU included, of the date said): ${cached_rows:-none}; computed in this run and kept: ${stored_rows:-none}"
    fi
    echo "- command: \`$command_line\`; protocols: ${protocols[*]}; $max_jobs jobs at a time"
    echo "- corpora: $corpora$( ((strip_collection)) && echo ', copies without the Received, Delivered-To, Date and Message-ID fields')"
    echo
}

# report_tables: the tables before the deployed one, with their notes.
report_tables() {
    # Whether any of the tables before the deployed one is printed.
    classic=0
    if has stream || has online || has split || has class-sorted || has long; then classic=1; fi
    if ((classic)); then
    echo "Rows: online = TREC online protocol (mailsift \`evaluate --online\`, bogofilter \`-TT\` then \`-s\`/\`-n\`"
    echo "per message); split = first half of the index learned, second half classified (spamassassin: sorted"
    echo "paths, every 5th tested), mailsift in arrival order (\`learn --index\`) or class by class (\`learn --spam\`,"
    echo "then \`learn --ham\`); bogofilter learns every message (\`-s -b\`, \`-n -b\`), so its one split row serves both."
    if ((run_stream)); then
        echo "One server's stream: $stream_first's index, then $stream_next's, online, and split: $stream_first"
        echo "learned, $stream_next classified."
    fi
    echo "10 costliest: the share of the row's misranked spam-ham pairs (a ham scored above a spam, ties half:"
    echo "what 1-ROCA% counts) that involve one of its 10 costliest messages."
    echo
    fi
    if ((run_stream)); then
        r=$tmp/r/stream t=$tmp/c/stream
        echo "## one server's stream: $stream_first then $stream_next ($(thousands "$(wc -l <"$t/index")") messages)"
        echo
        rows=("mailsift, online" "$r/ms-online"
              "bogofilter, online" "$r/bf-online"
              "mailsift, split first10k -> next10k, arrival order (learn --index)" "$r/ms-split"
              "mailsift, split first10k -> next10k, class by class (learn --spam, then --ham)" "$r/ms-class"
              "bogofilter, split first10k -> next10k" "$r/bf-split")
        report_table "${rows[@]}"
        echo "online: $(wc -l <"$t/index") messages ($(count "$t/index" spam) spam), $stream_first's index then $stream_next's;" \
            "split: $(wc -l <"$t/train") learned ($(wc -l <"$t/train.spam") spam), $(wc -l <"$t/test") tested ($(count "$t/test" spam) spam)"
        echo
        report_costliest "${rows[@]}"
    elif has stream; then
        echo "(one server's stream skipped: it needs $stream_first and $stream_next among the corpora)"
        echo
    fi
    for name in "${names[@]}"; do
        has online || has split || has class-sorted || break
        r=$tmp/r/$name t=$tmp/c/$name
        echo "## $name"
        echo
        rows=("mailsift, online" "$r/ms-online"
              "bogofilter, online" "$r/bf-online"
              "mailsift, split, arrival order (learn --index)" "$r/ms-split"
              "mailsift, split, class by class (learn --spam, then --ham)" "$r/ms-class"
              "bogofilter, split (either order: the same model)" "$r/bf-split")
        report_table "${rows[@]}"
        notes=()
        if [[ -d $r/bf-split ]]; then notes+=("split: $(wc -l <"$t/train") to learn ($(wc -l <"$t/train.spam") spam), $(wc -l <"$t/test") tested"); fi
        if [[ -d $r/ms-online ]]; then notes+=("online: $(wc -l <"$t/index") messages")
        elif has online; then notes+=("no online run (sorted paths are no arrival order)"); fi
        note=$(printf '%s; ' "${notes[@]}")
        echo "${note%; }"
        echo
        report_costliest "${rows[@]}"
    done
    if ((run_long)); then
        echo "## long stream: every corpus, one online stream"
        echo
        rows=("mailsift, online" "$tmp/r/long/ms-online" "bogofilter, online" "$tmp/r/long/bf-online")
        report_table "${rows[@]}"
        first=1 parts=()
        for name in "${long_names[@]}"; do
            n=$(wc -l <"$tmp/c/$name/index")
            parts+=("$name $first-$((first + n - 1)) ($(count "$tmp/c/$name/index" spam) spam)")
            first=$((first + n))
        done
        order=$(printf '%s; ' "${parts[@]}")
        echo "$((first - 1)) messages ($(count "$tmp/c/long/index" spam) spam), in this order: ${order%; }"
        echo "(each corpus in its index order, spamassassin in sorted-path order: all its ham, then all its spam)."
        echo
        report_costliest "${rows[@]}"
    fi
    if ((classic)); then
    echo "FPR/FNR/unsure: at each filter's own thresholds (mailsift's configured ones; bogofilter spam >= 0.99,"
    echo "ham < 0.45); unsure is neither. Online, CPU is the whole run (classify and learn together): mailsift"
    echo "learns in one process (evaluate --online), bogofilter runs two processes per message, so the"
    echo "online CPU columns are not comparable; the split columns are. CPU is user+sys per job; $max_jobs jobs ran at"
    echo "a time, so they shared the machine. A bogofilter row \"cached DATE\" is the run of that date, taken from"
    echo "the bogofilter cache (same messages, bogofilter and procedure), its CPU that run's."
    echo "ECE: expected calibration error of the probability over 10 equal bins; the worst bin holding at least"
    echo "30 messages, with its |mean predicted - observed spam share|."
    echo
    fi
}
# ---------------------------------------------------------------- the deployed table
# fmt_num VALUE DECIMALS: VALUE rounded, or n/a.
fmt_num() { if [[ $1 =~ ^-?[0-9.]+([eE][-+]?[0-9]+)?$ ]]; then printf "%.$2f" "$1"; else echo n/a; fi; }
# deployed_row CORPUS FEEDBACK LABEL DIR UNCORRECTED_DIR [NOTE]: one row; UNCORRECTED_DIR
# holds the unc_* keys (evaluate's), or - for none.
deployed_row() {
    local d=$4 u=$5 note=${6:-} unc=—
    if [[ ! -s $d/m ]]; then printf '| %s | %s | %s | n/a (the job failed) ||||||||\n' "$1" "$2" "$3"; return; fi
    if [[ $u != - ]]; then
        unc="$(get "$u" unc_ham_in_junk) / $(get "$u" unc_spam_in_inbox) / $(fmt_num "$(get "$u" unc_unsure_pct)" 2)$note"
    fi
    local worst=""
    [[ $(get "$d" worst_bin) != n/a ]] &&
        worst=" ($(get "$d" worst_bin): $(fmt_num "$(get "$d" worst_bin_gap)" 3), n=$(get "$d" worst_bin_n))"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s + %s | %s%s | %s |\n' "$1" "$2" "$3" \
        "$(fmt_num "$(get "$d" one_minus_roca_pct)" 4)" "$(fmt_num "$(get "$d" fnr_at_fpr_0.1_pct)" 3)" \
        "$(get "$d" ham_in_junk)" "$(get "$d" spam_in_inbox)" "$(fmt_num "$(get "$d" unsure_pct)" 2)" \
        "$(get "$d" moves_spam)" "$(get "$d" moves_ham)" "$(fmt_num "$(get "$d" ece)" 4)" "$worst" "$unc"
}
# deployed_name LIST: the corpus column.
deployed_name() { if [[ $1 == stream ]]; then echo "one server's stream"; else echo "$1"; fi; }
# report_deployed: the deployed table, with its notes.
report_deployed() {
    if ((${#deployed_lists[@]})); then
        echo "## the loop users run (issue 42): half learned class by class, the rest deployed, corrected after each 100"
        echo
        echo "| corpus | feedback | filter, loop | 1-ROCA% | FNR% at FPR<=0.1% | ham in Junk | spam in the inbox | unsure% | users' moves (spam + ham) | ECE (worst bin >= 30: gap, n) | same model never corrected: ham in Junk / spam in the inbox / unsure% |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|"
        for list in "${deployed_lists[@]}"; do
            for feedback in two-sided one-sided; do
                e=$tmp/r/$list/ms-deployed-$feedback l=$tmp/r/$list/dl-deployed-$feedback
                deployed_row "$(deployed_name "$list")" "$feedback" "mailsift, evaluate --deployed" "$e" "$e"
                deployed_row "$(deployed_name "$list")" "$feedback" "mailsift, mailsiftd + mailsift correct" "$l/mailsiftd" "$e" " (a)"
                deployed_row "$(deployed_name "$list")" "$feedback" "bogofilter" "$l/bogofilter" -
            done
        done
        echo
        parts=()
        for list in "${deployed_lists[@]}"; do
            t=$tmp/c/$list n=$(wc -l <"$tmp/c/$list/index")
            awk -v h=$((n / 2)) 'NR <= h' "$t/index" >"$t/deployed.learned"
            awk -v h=$((n / 2)) 'NR > h' "$t/index" >"$t/deployed.deployed"
            part="$(deployed_name "$list"):"
            if [[ $list == stream ]]; then part="$(deployed_name "$list") ($stream_first learned, $stream_next deployed):"; fi
            part+=" $(wc -l <"$t/deployed.learned") learned ($(count "$t/deployed.learned" spam) spam),"
            part+=" $(wc -l <"$t/deployed.deployed") deployed ($(count "$t/deployed.deployed" spam) spam, $(count "$t/deployed.deployed" ham) ham)"
            parts+=("$part")
        done
        note=$(printf '%s; ' "${parts[@]}")
        echo "${note%; }. Not on spamassassin (no index: its sorted paths are no arrival order)$( ((deployed_stream)) && echo "; $stream_first and $stream_next alone are the stream's halves")."
        echo
        echo "The loop: the first half of the index learned class by class (\`learn --spam\`, then \`--ham\`), the rest"
        echo "scored 100 at a time; after each 100, every spam in the inbox (scored ham or unsure) moved to Junk"
        echo "and, two-sided, every ham in Junk moved out, one command a move (mailsift: \`correct\` of the delivered"
        echo "copy; bogofilter: \`-s\`/\`-n\`); one-sided: users never look in Junk. Unsure ham stays in the inbox."
        echo "evaluate --deployed runs it in one process (the daemon's Filter, correct's Trainer) and reports the"
        echo "same model never corrected on the same messages; bench/deployed_loop.py runs it through a real"
        echo "mailsiftd (\`--mailsiftd\`) over the milter protocol on a loopback port, one \`mailsift correct\` process"
        echo "a move, and bogofilter (\`-C\`, cutoffs 0.99 / 0.45: Junk at >= 0.99) beside it."
        echo "The figures of the evaluate rows are evaluate's own (\`--json\`); those of the other rows are"
        echo "deployed_loop.py's (\`--json\`): the real daemon's 1-ROCA% and FNR from the X-Mailsift-Status header's"
        echo "two-decimal uncalibrated-log-odds (ties count half), its ECE from the header's score; bogofilter's"
        echo "from its spamicity, taken as the probability as in the other protocols' tables. Moves: spam moved to Junk +"
        echo "ham moved out of it."
        echo "(a) deployed_loop.py does not measure the model never corrected: these are the evaluate row's"
        echo "figures, of the same model (the same half learned class by class by the same \`learn\`) on the same"
        echo "messages."
        echo
    fi
}

# The summary: one manifest line per corpus x protocol row.
# CORPUS PROTOCOL MAILSIFT_DIR BOGOFILTER_DIR ARRIVAL_DIR (tabs; see accuracy_summary.py).
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$tmp/manifest"; }
# report_summary: the manifest, then accuracy_summary.py's tables.
report_summary() {
    : >"$tmp/manifest"
    if ((run_stream)); then
        r=$tmp/r/stream
        row stream online "$r/ms-online" "$r/bf-online" -
        row stream split "$r/ms-split" "$r/bf-split" -
        row stream class-sorted "$r/ms-class" "$r/bf-split" "$r/ms-split"
    fi
    for name in "${names[@]}"; do
        r=$tmp/r/$name arrival=-
        [[ -d $r/ms-split ]] && arrival=$r/ms-split
        if [[ -d $r/ms-online ]]; then row "$name" online "$r/ms-online" "$r/bf-online" -; fi
        if [[ -d $r/ms-split ]]; then row "$name" split "$r/ms-split" "$r/bf-split" -; fi
        if [[ -d $r/ms-class ]]; then row "$name" class-sorted "$r/ms-class" "$r/bf-split" "$arrival"; fi
    done
    if ((run_long)); then row "long stream" long "$tmp/r/long/ms-online" "$tmp/r/long/bf-online" -; fi
    # Deployed rows: deployed CORPUS FEEDBACK LOOP MAILSIFT_DIR BOGOFILTER_DIR UNCORRECTED_DIR.
    for list in "${deployed_lists[@]}"; do
        for feedback in two-sided one-sided; do
            e=$tmp/r/$list/ms-deployed-$feedback l=$tmp/r/$list/dl-deployed-$feedback
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' deployed "$(deployed_name "$list")" "$feedback" \
                "evaluate --deployed" "$e" "$l/bogofilter" "$e" >>"$tmp/manifest"
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' deployed "$(deployed_name "$list")" "$feedback" \
                "mailsiftd + mailsift correct" "$l/mailsiftd" "$l/bogofilter" "$e" >>"$tmp/manifest"
        done
    done
    python3 "$bench/accuracy_summary.py" "$tmp/manifest" || echo "(the summary failed: see stderr)"
}
