# bench/accuracy/helpers.sh - accuracy.sh's helpers (CPU seconds, sizes, the metrics
# of a scores file and its "key value" file) and its job pool (start_job); sourced by
# accuracy.sh, which provides the work directory ($tmp), the binaries, the settings
# and say.
# shellcheck shell=bash disable=SC2154
# ---------------------------------------------------------------- helpers
# In a job, cpuf is the job's own file of /usr/bin/time lines.
# cpu CMD...: runs CMD, appends its user+sys seconds to $cpuf.
cpu() { /usr/bin/time -f '%U %S' -a -o "$cpuf" "$@"; }
# cpu_total: the seconds in $cpuf since the last call.
cpu_total() { awk 'NF == 2 && $1 ~ /^[0-9.]+$/ { c += $1 + $2 } END { printf "%.1f", c }' "$cpuf"; : >"$cpuf"; }
size_of() { du -sb "$@" 2>/dev/null | awk '{ s += $1 } END { printf "%.1f MB", s / 1e6 }'; }

# metrics DIR: DIR/scores = LABEL SCORE VERDICT PROBABILITY PATH (tabs) -> DIR/m, "key
# value" lines.
metrics() {
    local d=$1
    cut -f1-3 "$d/scores" >"$d/rank"
    awk -F'\t' -v OFS='\t' '{ print $1, $4, $3 }' "$d/scores" >"$d/prob"
    {
        python3 "$bench/roc.py" "$d/rank"
        python3 "$bench/fnr_at_fpr.py" --fpr 0.1 --fpr 1 "$d/rank"
        python3 "$bench/calibration.py" "$d/prob"
        python3 "$bench/costliest.py" "$d/scores"
    } >"$d/m"
}
get() { awk -v k="$2" '$1 == k { $1 = ""; print substr($0, 2); f = 1; exit } END { if (!f) print "n/a" }' "$1/m" 2>/dev/null || echo n/a; }
put() { printf '%s %s\n' "$2" "$3" >>"$1/m"; }
# exit_note DIR WHAT RC: exit 1 of mailsift means "some input unusable" (the rest was
# used); anything else is worth a look. Noted in the job's log and on stderr.
exit_note() {
    (($3 == 0)) && return 0
    printf '%s exited %s\n' "$2" "$3" >>"$1/log"
    say "note: $2 exited $3 ($(basename "$(dirname "$1")")/$(basename "$1"))"
}

# ---------------------------------------------------------------- job pool
# start_job ID FUNCTION ARGS...: in the background, its output in $tmp/logs. A job
# that fails leaves n/a in its row; the others go on.
start_job() {
    local id=$1; shift
    say "start $id"
    {
        set +e
        t0=$SECONDS from=
        ( set -e; "$@" ) >>"$tmp/logs/${id//\//.}" 2>&1
        rc=$?
        if ((rc)); then
            say "FAILED: $id (exit $rc); its row shows n/a. Last lines of its log:"
            tail -n 5 "$tmp/logs/${id//\//.}" >&2
            echo "$id" >>"$tmp/failed"
        else
            from=$(awk -F'\t' -v id="$id" '$1 == id { printf ", from the bogofilter cache: key %s, computed %s", $2, $3 }' \
                "$tmp/cache-used" 2>/dev/null)
            say "done  $id ($((SECONDS - t0)) s$from)"
        fi
        printf '%s %s%s\n' "$((SECONDS - t0))" "$id" "${from:+ (cached)}" >>"$tmp/times"
    } &
    job_pids+=($!)
}
