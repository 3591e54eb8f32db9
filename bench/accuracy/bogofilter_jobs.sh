# bench/accuracy/bogofilter_jobs.sh - accuracy.sh's bogofilter jobs (split, online,
# and its loop of the deployed protocol) and the bogofilter cache (the keys, the
# kept runs, the cost of a job the cache holds); sourced by accuracy.sh, which
# provides the work directory ($tmp), the settings (bf_cache, strip_collection,
# ...), src and bf_version (bench/accuracy/corpora.sh) and the helpers (cpu,
# metrics, put, deployed_m, ...).
# shellcheck shell=bash disable=SC2154
# ---------------------------------------------------------------- bogofilter jobs
# A bogofilter job is its run (bf_*_run LIST DIR: bogofilter's scores, or
# deployed_loop.py's JSON, and DIR/m with what only the run knows: CPU seconds,
# database size) and its report (the metrics, from the scores, every time). The run
# depends only on the messages (content, labels, order, stripped or not), bogofilter's
# version and the procedure below: bf_job takes it from the cache when those are the
# key of a kept run, and keeps it otherwise.

# bf_split_run LIST DIR: -s -b with the training spam, -n -b with the training ham,
# then -TT -b of the test list.
bf_split_run() {
    local t=$tmp/c/$1 d=$2
    local cpuf=$d/cpu
    mkdir -p "$d/db"; : >"$cpuf"
    cpu bogofilter -C -d "$d/db" -s -b <"$t/train.spam" >>"$d/log" 2>&1 || true
    cpu bogofilter -C -d "$d/db" -n -b <"$t/train.ham" >>"$d/log" 2>&1 || true
    local learn_cpu; learn_cpu=$(cpu_total)
    cpu bogofilter -C -d "$d/db" -TT -b <"$t/test.list" >"$d/out" 2>>"$d/log" || true
    # -b -TT prints "PATH SPAMICITY"; the verdict from the default cutoffs.
    awk -v OFS='\t' 'NR == FNR { label[$2] = $1; next }
        ($1 in label) { p = $NF; v = p >= 0.99 ? "spam" : p < 0.45 ? "ham" : "unsure"; print label[$1], p, v, p, $1 }' \
        "$t/test" "$d/out" >"$d/scores"
    put "$d" learn_cpu "$learn_cpu"
    put "$d" classify_cpu "$(cpu_total)"
    put "$d" learned "$(wc -l <"$t/train" | tr -d ' ')"
    put "$d" db "$(size_of "$d/db")"
}

# bf_online_run LIST DIR: -TT then -s|-n per message. Verdicts from -TT's exit status:
# 0 spam, 1 ham, 2 unsure (cutoffs 0.99 / 0.45).
bf_online_run() {
    local t=$tmp/c/$1 d=$2
    local cpuf=$d/cpu
    mkdir -p "$d/db"; : >"$cpuf"; : >"$d/scores"
    # shellcheck disable=SC2016  # the script's own variables, expanded by its bash
    cpu bash -c '
        db=$1; index=$2; out=$3
        while read -r label path; do
            rc=0; p=$(bogofilter -C -d "$db" -TT -I "$path" 2>/dev/null) || rc=$?
            # 3: no wordlist yet (before the first message is learned): 0.5, unsure.
            case $rc in 0) v=spam ;; 1) v=ham ;; 2) v=unsure ;; *) p=0.5; v=unsure ;; esac
            printf "%s\t%s\t%s\t%s\t%s\n" "$label" "$p" "$v" "$p" "$path" >>"$out"
            if [[ $label == spam ]]; then bogofilter -C -d "$db" -s -I "$path"; else bogofilter -C -d "$db" -n -I "$path"; fi
        done <"$index"' _ "$d/db" "$t/index" "$d/scores" 2>>"$d/log" || true
    put "$d" cpu_total "$(cpu_total)"
    put "$d" learned "$(wc -l <"$d/scores" | tr -d ' ')"
    put "$d" db "$(size_of "$d/db")"
}

# bf_deployed_run LIST DIR FEEDBACK: bogofilter's loop of deployed_loop.py alone (the
# real daemon's is dl_deployed, another job), its JSON in DIR/json.
bf_deployed_run() {
    local t=$tmp/c/$1 d=$2 one=()
    if [[ $3 == one-sided ]]; then one=(--one-sided); fi
    python3 "$bench/deployed_loop.py" --filters bogofilter --index "$t/index" --split 0.5 --batch 100 "${one[@]}" \
        --work "$d/work" --json >"$d/json" 2>>"$d/log"
    rm -rf "$d/work"
}

# bf_procedure KIND: the text of what makes a KIND job's run, the key's "procedure".
bf_procedure() {
    case $1 in
        bf-split)  declare -f bf_split_run cpu cpu_total size_of put ;;
        bf-online) declare -f bf_online_run cpu cpu_total size_of put ;;
        bf-deployed-*)
            declare -f bf_deployed_run
            echo "deployed_loop.py bogofilter $(python3 "$bench/deployed_loop.py" --procedure-digest bogofilter)" ;;
    esac
}

# bf_key ID KIND LIST: writes $tmp/keys/ID, what the run of job ID depends
# on (kept beside the result, to read); its SHA-256 is the cache key. The lists the
# run reads as LABEL PATH CONTENT_SHA256 lines, paths relative to the corpus folders
# (the cache stays valid wherever they are, and for the stripped copies in a new
# temporary folder). No key (an empty file) when a message could not be read.
bf_key() {
    local id=$1 kind=$2 list=$3 f lists
    local out=$tmp/keys/${id//\//.}
    case $kind in bf-split) lists=(train test) ;; *) lists=(index) ;; esac
    {
        echo "mailsift-bench bogofilter cache, version 1"
        echo "bogofilter: $bf_version"
        echo "job: $kind (${#lists[@]} list(s): ${lists[*]})"
        echo "environment: LC_ALL=$LC_ALL"
        if ((strip_collection)); then echo "collection headers: stripped (strip_collection_headers.py $(sha256sum <"$bench/strip_collection_headers.py" | cut -c1-64))"
        else echo "collection headers: kept"; fi
        echo "procedure: $(bf_procedure "$kind" | sha256sum | cut -c1-64)"
        for f in "${lists[@]}"; do
            echo "list $f: $(wc -l <"$tmp/c/$list/$f" | tr -d ' ') messages, $(list_digest "$tmp/c/$list/$f")"
        done
    } >"$out.txt"
    if grep -q '^list .*, none$' "$out.txt"; then
        : >"$out"
    else
        sha256sum <"$out.txt" | cut -c1-64 >"$out"
    fi
}

# list_digest FILE: the SHA-256 of FILE's LABEL PATH lines as LABEL RELATIVE_PATH
# CONTENT_SHA256 lines, from $tmp/c/sums; none when a message has no digest.
list_digest() {
    awk -v p="$src/" '
        FILENAME == ARGV[1] { i = index($0, "\t"); sha[substr($0, 1, i - 1)] = substr($0, i + 1); next }
        { path = substr($0, length($1) + 2)
          if (!(path in sha)) { missing = 1; exit }
          print $1, (index(path, p) == 1 ? substr(path, length(p) + 1) : path), sha[path] }
        END { if (missing) print "missing" }' "$tmp/c/sums" "$1" >"$1.digest"
    if [[ $(tail -n 1 "$1.digest") == missing ]]; then echo none; else sha256sum <"$1.digest" | cut -c1-64; fi
    rm -f "$1.digest"
}

# bf_entry ID: the cache entry that holds job ID's run, when there is one.
bf_entry() {
    local keyf=$tmp/keys/${1//\//.}
    [[ -n $bf_cache && -s $keyf ]] || return 1
    local e; e=$bf_cache/$(cat "$keyf")
    [[ -f $e/done ]] && cmp -s "$keyf.txt" "$e/key" || return 1
    echo "$e"
}

# bf_job ID KIND DIR RUN LIST [ARG]: RUN LIST DIR [ARG], or its result from the cache;
# then the report. What is kept: the scores, their paths relative to the corpus
# folders, and m (online, split), or the JSON (deployed).
bf_job() {
    local id=$1 kind=$2 d=$3 run=$4; shift 4
    local e key new
    mkdir -p "$d"
    if e=$(bf_entry "$id"); then
        say "cached $id: key $(basename "$e"), computed $(cat "$e/done")"
        if [[ -f $e/scores ]]; then
            awk -F'\t' -v OFS='\t' -v p="$src/" '{ if (substr($5, 1, 1) != "/") $5 = p $5; print }' "$e/scores" >"$d/scores"
            cp "$e/m" "$d/run.m"
        else
            cp "$e/json" "$d/json"
        fi
        cat "$e/done" >"$d/cached"
        printf '%s\t%s\t%s\n' "$id" "$(basename "$e")" "$(cat "$e/done")" >>"$tmp/cache-used"
    else
        local t0=$SECONDS
        "$run" "$1" "$d" "${@:2}"
        if [[ -f $d/m ]]; then mv "$d/m" "$d/run.m"; fi
        # Kept only when whole: a score for every message the run was to score.
        key=$(cat "$tmp/keys/${id//\//.}" 2>/dev/null || true)
        if [[ -n $bf_cache && -n $key ]] && bf_whole "$kind" "$1" "$d"; then
            new=$(mktemp -d "$bf_cache/.new.XXXXXX")
            cp "$tmp/keys/${id//\//.}.txt" "$new/key"
            if [[ -f $d/json ]]; then cp "$d/json" "$new/json"
            else
                awk -F'\t' -v OFS='\t' -v p="$src/" '{ if (index($5, p) == 1) $5 = substr($5, length(p) + 1); print }' \
                    "$d/scores" >"$new/scores"
                cp "$d/run.m" "$new/m"
            fi
            echo "wall $((SECONDS - t0)) s, by $command_line" >"$new/run"
            date -u '+%Y-%m-%d %H:%M UTC' >"$new/done"
            # Another run may have kept the same key meanwhile: either is the same result.
            mv -T "$new" "$bf_cache/$key" 2>/dev/null || rm -rf "$new"
            printf '%s\t%s\n' "$id" "$key" >>"$tmp/cache-stored"
        elif [[ -n $bf_cache ]]; then
            say "note: $id not kept in the cache (no key, or not a score for every message)"
        fi
    fi
    if [[ $kind == bf-deployed-* ]]; then
        deployed_m "$d/json" "$d" bogofilter
    else
        metrics "$d"
        cat "$d/run.m" >>"$d/m"
    fi
}

# bf_whole KIND LIST DIR: whether the run scored every message it was to score.
bf_whole() {
    local t=$tmp/c/$2 d=$3
    case $1 in
        bf-split)  [[ $(wc -l <"$d/scores") -eq $(wc -l <"$t/test") ]] ;;
        bf-online) [[ $(wc -l <"$d/scores") -eq $(wc -l <"$t/index") ]] ;;
        *) python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(not (len(j["filters"]) == 1 and j["filters"][0]["messages"] == j["deployed"] > 0))' "$d/json" ;;
    esac
}

bf_split() { bf_job "$1/bf-split" bf-split "$tmp/r/$1/bf-split" bf_split_run "$1"; }
bf_online() { bf_job "$1/bf-online" bf-online "$tmp/r/$1/bf-online" bf_online_run "$1"; }
# bf_deployed LIST FEEDBACK: its row in the dl_deployed job's folder, DIR/bogofilter.
bf_deployed() {
    bf_job "$1/bf-deployed-$2" "bf-deployed-$2" "$tmp/r/$1/dl-deployed-$2/bogofilter" bf_deployed_run "$1" "$2"
}

# bf_cost ID KIND LIST COST: COST, or that of taking the job's run from the cache when it
# holds it (the metrics: about 3 ms a message). The key is made here, as accuracy.sh lists
# the jobs, before they start.
bf_cost() {
    local cost=$4
    if [[ -n $bf_cache ]]; then
        bf_key "$1" "$2" "$3"
        if bf_entry "$1" >/dev/null; then cost=$(($(wc -l <"$tmp/c/$3/index") * 3)); fi
    fi
    echo "$cost"
}
