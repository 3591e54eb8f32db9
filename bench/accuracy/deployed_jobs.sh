# bench/accuracy/deployed_jobs.sh - accuracy.sh's deployed jobs (issue 42's loop):
# mailsift evaluate --deployed, the real daemon's loop (deployed_loop.py), and
# deployed_m, the figures of either (and of bogofilter's loop) as "key value" lines;
# sourced by accuracy.sh, which provides the work directory ($tmp), the binaries,
# the settings and the helpers (cpu, put, exit_note, ...).
# shellcheck shell=bash disable=SC2154
# ---------------------------------------------------------------- deployed jobs
# The loop users run (issue 42) on a list's index: its first half learned class by
# class, the rest deployed; FEEDBACK two-sided or one-sided.

# deployed_m JSON DIR KIND: the figures of a deployed run as DIR/m "key value" lines.
# KIND evaluate: mailsift evaluate --deployed --json (with deployed.uncorrected, the
# same model never corrected, as unc_* keys); mailsift or bogofilter: that filter of
# deployed_loop.py --json.
deployed_m() {
    python3 - "$@" <<'PY'
import json, sys
path, d, kind = sys.argv[1:4]
with open(path) as f:
    j = json.load(f)
if kind == "evaluate":
    c, dep = j["confusion"], j["deployed"]
    unc = dep["uncorrected"]
    m = {"n_spam": j["spam"], "n_ham": j["ham"],
         "one_minus_roca_pct": j["one_minus_roca_percent"], "fnr_at_fpr_0.1_pct": j["fnr_at_fpr_0.1_percent"],
         "ham_in_junk": c["ham"]["spam"], "spam_in_inbox": c["spam"]["ham"] + c["spam"]["unsure"],
         "unsure_pct": j["unsure_percent"], "moves_spam": dep["moved_to_junk"], "moves_ham": dep["moved_from_junk"],
         "ece": j["expected_calibration_error"], "worst": j.get("worst_bin"),
         "unc_ham_in_junk": unc["ham_in_junk"], "unc_spam_in_inbox": unc["spam_in_inbox"],
         "unc_unsure_pct": unc["unsure_percent"]}
else:
    (r,) = [r for r in j["filters"] if r["filter"] == kind]
    m = {"n_spam": r["spam"], "n_ham": r["ham"],
         "one_minus_roca_pct": r["one_minus_roca_percent"], "fnr_at_fpr_0.1_pct": r["fnr_at_fpr_0.1_percent"],
         "ham_in_junk": r["ham_in_junk"], "spam_in_inbox": r["spam_in_inbox"], "unsure_pct": r["unsure_percent"],
         "moves_spam": r["moved_to_junk"], "moves_ham": r["moved_from_junk"],
         "ece": r["expected_calibration_error"], "worst": r.get("worst_bin"), "seconds": r["seconds"]}
# The worst reliability bin of >= 30 messages, in the keys the other tables use.
w = m.pop("worst")
if w:
    m.update({"worst_bin": f"{w['low']:.1f}-{w['high']:.1f}", "worst_bin_gap": w["gap"], "worst_bin_n": w["messages"]})
with open(d + "/m", "a") as f:
    for k, v in m.items():
        if v is not None:  # a missing key reads n/a
            f.write(f"{k} {v}\n")
PY
}

# ms_deployed LIST FEEDBACK: mailsift evaluate --deployed, in-process, in a temporary
# database.
ms_deployed() {
    local t=$tmp/c/$1 d=$tmp/r/$1/ms-deployed-$2 rc=0 one=()
    local cpuf=$d/cpu
    mkdir -p "$d"; : >"$cpuf"
    if [[ $2 == one-sided ]]; then one=(--one-sided); fi
    cpu "$mailsift" --config "$config" evaluate --index "$t/index" --deployed --split head:0.5 "${one[@]}" \
        --json --scores "$d/raw" >"$d/json" 2>>"$d/log" || rc=$?
    exit_note "$d" "mailsift evaluate --deployed" "$rc"
    deployed_m "$d/json" "$d" evaluate
    put "$d" cpu_total "$(cpu_total)"
}

# dl_deployed LIST FEEDBACK: bench/deployed_loop.py --filters mailsift --json, a real
# mailsiftd on a loopback port and mailsift correct; its row in DIR/mailsiftd.
# bogofilter's loop is another job (bf_deployed), its row in DIR/bogofilter. Its
# databases are removed when it ends.
dl_deployed() {
    local t=$tmp/c/$1 d=$tmp/r/$1/dl-deployed-$2 one=()
    mkdir -p "$d"
    if [[ $2 == one-sided ]]; then one=(--one-sided); fi
    python3 "$bench/deployed_loop.py" --filters mailsift --index "$t/index" --split 0.5 "${one[@]}" \
        --mailsift "$mailsift" --mailsiftd "$mailsiftd" --config "$config" --work "$d/work" --json \
        >"$d/json" 2>>"$d/log"
    rm -rf "$d/work"
    mkdir -p "$d/mailsiftd"
    deployed_m "$d/json" "$d/mailsiftd" mailsift
}
