# bench/accuracy/corpora.sh - accuracy.sh's corpora: each corpus's lists (index,
# training and test halves), the stripped copies, the long stream, one server's
# stream, the lists the deployed loop runs on, and the page cache warmed (or the
# digests of the messages, for the bogofilter cache's keys); sourced by accuracy.sh,
# which provides the work directory ($tmp), the settings and the helpers (say,
# has, bad_usage, corpus_labels).
# The variables set here (names, src, long_names, run_long, ...) are read by accuracy.sh
# and the other files of bench/accuracy/:
# shellcheck shell=bash disable=SC2154,SC2034
# ---------------------------------------------------------------- lists
# split_lists DIR: from DIR/train and DIR/test (LABEL PATH), train.spam, train.ham
# (paths) and test.list.
split_lists() {
    awk '$1 == "spam" { print $2 }' "$1/train" >"$1/train.spam"
    awk '$1 == "ham" { print $2 }' "$1/train" >"$1/train.ham"
    cut -d' ' -f2 "$1/test" >"$1/test.list"
}

# make_lists NAME SRC: $tmp/c/NAME/index, lines "LABEL ABSOLUTE_PATH" in the corpus's
# order; train (LABEL PATH), train.spam, train.ham (paths), test (LABEL PATH), test.list.
make_lists() {
    local name=$1 src=$2 t=$tmp/c/$1 n
    mkdir -p "$t"
    if [[ -f $src/index ]]; then
        awk -v d="$src" '{ print $1, d "/" $2 }' "$src/index" >"$t/index"
    else  # spamassassin: sorted paths, the class from the top folder
        corpus_labels "$src" "$t/labels"
        awk -F'\t' '$2 != "-" { print $2, $1 }' "$t/labels" >"$t/index"
    fi
    n=$(wc -l <"$t/index")
    if [[ -f $src/index ]]; then
        awk -v h=$((n / 2)) 'NR <= h' "$t/index" >"$t/train"
        awk -v h=$((n / 2)) 'NR > h' "$t/index" >"$t/test"
    else
        awk 'NR % 5 != 0' "$t/index" >"$t/train"
        awk 'NR % 5 == 0' "$t/index" >"$t/test"
    fi
    split_lists "$t"
}

# prepare_corpora: names (the corpus folders; with --only, those named), src (where their
# messages are read: the corpora, or their copies without the collection headers),
# and the lists of each (make_lists).
prepare_corpora() {
    names=()
    for dir in "$corpora"/*/; do
        name=$(basename "$dir")
        if ((${#only[@]})); then
            keep=0; for o in "${only[@]}"; do [[ $o == "$name" ]] && keep=1; done
            ((keep)) || continue
        fi
        names+=("$name")
    done
    ((${#names[@]})) || bad_usage "no corpus to run in $corpora${only[*]:+ (--only ${only[*]})}"
    for o in "${only[@]}"; do
        [[ -d $corpora/$o ]] || bad_usage "no corpus folder $corpora/$o"
    done
    src=$corpora
    if ((strip_collection)); then
        for name in "${names[@]}"; do
            say "$name: copying without Received, Delivered-To, Date and Message-ID"
            python3 "$bench/strip_collection_headers.py" "$corpora/$name" "$tmp/stripped/$name"
        done
        src=$tmp/stripped
    fi
    long_names=()
    for name in "${names[@]}"; do
        make_lists "$name" "$src/$name"
        long_names+=("$name")
    done
}

# prepare_streams: the long stream (run_long), one server's stream (run_stream,
# deployed_stream) and the lists the deployed loop runs on (deployed_lists).
prepare_streams() {
    # The long stream: every corpus's index in folder order (the order of names).
    run_long=0
    if has long; then
        if ((${#long_names[@]} >= 2)); then
            run_long=1
            mkdir -p "$tmp/c/long"
            for name in "${long_names[@]}"; do cat "$tmp/c/$name/index"; done >"$tmp/c/long/index"
        else
            say "long stream skipped: it needs at least two corpora (--only)"
        fi
    fi
    # One server's stream: trec07p-first10k's index, then trec07p-next10k's; its split
    # learns the first and classifies the second.
    stream_first=trec07p-first10k stream_next=trec07p-next10k
    run_stream=0 deployed_stream=0
    if has stream || has deployed; then
        if [[ -f $tmp/c/$stream_first/index && -f $tmp/c/$stream_next/index ]]; then
            if has stream; then run_stream=1; fi
            if has deployed; then deployed_stream=1; fi
            mkdir -p "$tmp/c/stream"
            cp "$tmp/c/$stream_first/index" "$tmp/c/stream/train"
            cp "$tmp/c/$stream_next/index" "$tmp/c/stream/test"
            cat "$tmp/c/stream/train" "$tmp/c/stream/test" >"$tmp/c/stream/index"
            split_lists "$tmp/c/stream"
        else
            say "stream skipped: it needs $stream_first and $stream_next (--only)"
        fi
    fi
    # The deployed loop: on the stream, and on every other corpus with an index (the
    # stream's two halves alone only when the stream cannot run).
    deployed_lists=()
    if has deployed; then
        if ((deployed_stream)); then deployed_lists+=(stream); fi
        for name in "${names[@]}"; do
            if [[ ! -f $src/$name/index ]]; then
                say "deployed: $name skipped (no index: no arrival order)"
            elif ((deployed_stream)) && [[ $name == "$stream_first" || $name == "$stream_next" ]]; then
                continue  # the stream's own halves
            else
                deployed_lists+=("$name")
            fi
        done
    fi
}

# warm_corpora: every message read once (bf_version too, for the bogofilter keys).
warm_corpora() {
    # Warm the page cache so that no job pays for the first read of a file; with the
    # cache, the reading is the digest of every message (PATH<TAB>SHA256 lines), which
    # the keys of the bogofilter jobs are made of.
    bf_version="$(bogofilter -V 2>&1 | head -n 1) (Debian $(dpkg-query -W -f '${Version}' bogofilter 2>/dev/null || echo '?'))"
    mkdir -p "$tmp/keys"
    if [[ -n $bf_cache ]]; then
        for name in "${names[@]}"; do cut -d' ' -f2 "$tmp/c/$name/index"; done | xargs -d '\n' sha256sum |
            awk 'length($1) == 64 && substr($0, 65, 2) == "  " { print substr($0, 67) "\t" $1 }' >"$tmp/c/sums"
    else
        for name in "${names[@]}"; do cut -d' ' -f2 "$tmp/c/$name/index"; done | xargs -d '\n' cat >/dev/null
    fi
}
