# shellcheck shell=bash
# postfix_test.sh's cases on correcting delivered mail with mailsift correct:
# by the signature in a delivered copy, at once before mailsiftd has written
# the scan and again after (also two at the same moment, and back the other
# way), and by signature alone while the scan still waits in mailsiftd's
# memory. Sourced by postfix_test.sh, which calls correct_delivered,
# corrected_at_once and corrected_by_signature in this order after
# scoring_and_headers (postfix_cases_verdicts.sh); uses postfix_cases_mail.sh.
# The last two restart mailsiftd with stats_interval = 10; the last one leaves
# it running again with stats_interval = 1.

# ---------------------------------------------------------------- correcting a delivered message
# The delivered copy carries Postfix's Received header and ours; `mailsift correct`
# must find the scan by its signature and train what mailsiftd scored.
stats_json() { "$MAILSIFT" --db "$DB" stats --json 2>/dev/null; }
# ham1, spam1 and forged1 differ; forged2 is ham1 again once our headers are ignored.
signature_recorded() { [ "$(stats_json | sed -E 's/.*"signatures":([0-9]+).*/\1/')" -ge 3 ]; }
correct_delivered() {
    if file=$(delivered_file spam1) && wait_for 10 signature_recorded; then
        before=$(stats_json | sed -E 's/.*"messages":\{"spam":([0-9]+),"ham":([0-9]+)\}.*/\1 \2/')
        out=$("$MAILSIFT" --db "$DB" correct --ham "$file" 2>&1) || true
        after=$(stats_json | sed -E 's/.*"messages":\{"spam":([0-9]+),"ham":([0-9]+)\}.*/\1 \2/')
        if [[ "$out" == *"1 by signature"* ]] && [ "$after" = "${before% *} $(( ${before#* } + 1 ))" ]; then
            ok "delivered spam corrected to ham by its signature ($out; spam ham $before -> $after)"
        else
            not_ok "delivered spam corrected to ham by its signature (got '$out'; spam ham $before -> $after)"
        fi
        if stats_json | grep -q '"all":{"false_positives":1,'; then
            ok "stats counts the correction as a false positive"
        else
            not_ok "stats counts the correction as a false positive ($(stats_json))"
        fi
        again=$("$MAILSIFT" --db "$DB" correct --ham "$file" 2>&1) && rc=0 || rc=$?
        if [ "$rc" -eq 0 ] && [[ "$again" == *"already learned as ham"* ]] && [ "$(stats_json | sed -E 's/.*"messages":\{"spam":([0-9]+),"ham":([0-9]+)\}.*/\1 \2/')" = "$after" ]; then
            ok "the same correction again is a no-op with exit 0"
        else
            not_ok "the same correction again is a no-op with exit 0 (rc $rc: $again)"
        fi
        back=$("$MAILSIFT" --db "$DB" correct --spam "$file" 2>&1) || true
        if [[ "$back" == *"1 learned"*"1 of them had a correction the other way, undone first"* ]]; then
            ok "correcting the other way replaces the first correction ($back)"
        else
            not_ok "correcting the other way replaces the first correction (got '$back')"
        fi
    else
        not_ok "the scan of spam_cheap_pills.eml was recorded for correction within 10 s"
    fi
}

# ---------------------------------------------------------------- corrected at once, then again
# What an IMAPSieve script does: it corrects the moment the user moves a message,
# before mailsiftd has written the scan (every stats_interval; the correction waits
# for it, since the message was delivered moments ago), and a second move,
# a retry or a second client corrects it again later. mailsiftd runs here with
# stats_interval = 10, so the first correction comes before the scan is written;
# after the flush two corrections run at the same moment, then one the other way.
# The counts must end as those of the model before plus that message learned
# once, as ham, with the features mailsiftd scored (export_diff.py).
model_export() { "$MAILSIFT" --db "$DB" export "$1" >/dev/null 2>&1; }
corrected() {  # NAME ARGS...: runs mailsift correct ARGS, output in $WORK/NAME.out, status in $WORK/NAME.rc
    local name=$1 rc=0
    shift
    "$MAILSIFT" --db "$DB" correct "$@" >"$WORK/$name.out" 2>&1 || rc=$?
    echo "$rc" >"$WORK/$name.rc"
}
corrected_at_once() {
    stop_pid "$DPID"
    DPID=""
    STATS_INTERVAL=10 write_conf off
    # Settled first: the refit a restart may owe, and the reload after it, would write
    # the scan before the correction below; the correction's own change writes it after.
    if start_daemon && wait_for 15 settled; then
        # Not the fixture itself: the model learned that one (the same digest, whether
        # it comes over the milter protocol or from a file), and this is a new message.
        { cat "$MESSAGES/ham_patch_review.eml"; echo "The tracker has the first message of the thread."; } \
            >"$WORK/patch_review_reply.eml"
        send once1 "$WORK/patch_review_reply.eml"
        expect_delivered once1 No "a reply to ham_patch_review.eml, to be corrected under real timing"
    fi
    if [ -n "$DPID" ] && file=$(delivered_file once1); then
        sig=$(header_values "$file" X-Mailsift-Signature)
        model_export "$WORK/once-before.export"
        if scan_features "$sig" >/dev/null; then
            not_ok "the scan of once1 is not written yet when the first correction runs (it was: slow machine?)"
        fi
        # Delivered moments ago (its Received: field): mailsift correct waits for the
        # scan mailsiftd writes within stats_interval, and trains by it (issue 58).
        corrected once-first --spam "$file"
        if [ "$(cat "$WORK/once-first.rc")" = 0 ] && grep -q "1 by signature, 0 as the message; 1 learned" "$WORK/once-first.out"; then
            ok "corrected to spam at once, before the scan is written: it waits for the scan and trains by it: $(tail -1 "$WORK/once-first.out")"
        else
            not_ok "corrected to spam at once, before the scan is written, by the scan it waits for (status $(cat "$WORK/once-first.rc"): $(tr '\n' '|' <"$WORK/once-first.out"))"
        fi
        # The correction's refit by mailsiftd (within refresh_interval) ends before the
        # exports compared below, or it would read as a change the no-op corrections made.
        if wait_for 15 scan_features "$sig" >"$WORK/once.scan" && wait_for 10 refitted; then
            model_export "$WORK/once-first.export"
            corrected once-par1 --spam "$file" &
            p1=$!
            corrected once-par2 --spam "$file" &
            p2=$!
            wait "$p1" "$p2" || true
            model_export "$WORK/once-par.export"
            if [ "$(cat "$WORK/once-par1.rc" "$WORK/once-par2.rc" | tr -d '\n')" = 00 ] &&
                grep -q "1 by signature, 0 as the message; 0 learned, 0 moved, 1 already spam" "$WORK/once-par1.out" &&
                grep -q "1 by signature, 0 as the message; 0 learned, 0 moved, 1 already spam" "$WORK/once-par2.out" &&
                cmp -s "$WORK/once-first.export" "$WORK/once-par.export"; then
                ok "after the scan is written, two corrections at the same moment find it learned and change nothing"
            else
                not_ok "after the scan is written, two corrections at the same moment change nothing ($(cat "$WORK"/once-par?.rc | tr '\n' ' ')$(cat "$WORK"/once-par?.out | tr '\n' '|'); exports $(cmp "$WORK/once-first.export" "$WORK/once-par.export" 2>&1))"
            fi
            corrected once-back --ham "$file"
            if grep -q "1 by signature, 0 as the message; 1 learned, 0 moved.*1 of them had a correction the other way, undone first" "$WORK/once-back.out"; then
                ok "corrected the other way, the first correction is undone and it is learned so: $(tail -1 "$WORK/once-back.out")"
            else
                not_ok "corrected the other way, the first correction is undone and it is learned so ($(tr '\n' '|' <"$WORK/once-back.out"))"
            fi
            model_export "$WORK/once-after.export"
            if diff_out=$(python3 "$HERE/export_diff.py" "$WORK/once-before.export" "$WORK/once-after.export" \
                "$sig" ham "$WORK/once.scan" 2>&1); then
                ok "the model is the one before plus that message learned once, as ham, as mailsiftd scored it ($diff_out)"
            else
                not_ok "the model is the one before plus that message learned once, as ham: $(tr '\n' '|' <<<"$diff_out")"
            fi
            # By net effect: spam1 (said spam, corrected to ham, then back to spam) and once1
            # (said ham, corrected to spam however often, then back to ham) count nothing.
            if stats_json | grep -q '"all":{"false_positives":0,"false_negatives":0,'; then
                ok "stats counts corrections by their net effect: each message corrected and corrected back counts nothing"
            else
                not_ok "stats counts corrections by their net effect: nothing for messages corrected back ($(stats_json))"
            fi
        else
            not_ok "the scan of once1 is written within 15 s (stats_interval = 10), and mailsiftd refitted after the correction"
        fi
    else
        not_ok "mailsiftd restarted with stats_interval = 10, settled (refitted, model loaded), and once1 delivered"
    fi
}

# ---------------------------------------------------------------- by signature alone, before the scan
# correct --signature ID with no message, while the scan still waits in mailsiftd's
# memory: kept in the database, trained by mailsiftd right after it writes the
# scan, once, with the last label given. mailsiftd writes the scans it holds every
# stats_interval (10 s here), and sooner when its model changes (the refit a restart
# may owe, and the reload after it): it is settled first, then stopped (SIGSTOP)
# while both corrections run, so that no write can fall between them however
# loaded the machine, and goes on (SIGCONT) after.
corrected_by_signature() {
    stop_pid "$DPID"
    DPID=""
    STATS_INTERVAL=10 write_conf off
    if start_daemon && wait_for 15 settled; then
        send once2 "$MESSAGES/spam_investment.eml"
        expect_delivered once2 Yes "spam_investment.eml, to be corrected by its signature alone"
    fi
    if [ -n "$DPID" ] && file=$(delivered_file once2); then
        sig=$(header_values "$file" X-Mailsift-Signature)
        model_export "$WORK/sig-before.export"
        kill -STOP "$DPID"
        corrected sig-spam --spam --signature "$sig"
        corrected sig-ham --ham --signature "$sig"
        model_export "$WORK/sig-waiting.export"
        if [ "$(cat "$WORK/sig-spam.rc" "$WORK/sig-ham.rc" | tr -d '\n')" = 00 ] &&
            grep -q "1 by signature, 0 as the message; 0 learned, 0 moved, 0 already spam, 1 waiting for their scan" "$WORK/sig-spam.out" &&
            grep -q "1 by signature, 0 as the message; 0 learned, 0 moved, 0 already ham, 1 waiting for their scan" "$WORK/sig-ham.out" &&
            ! scan_features "$sig" >/dev/null &&
            cmp -s "$WORK/sig-before.export" "$WORK/sig-waiting.export"; then
            ok "corrected by signature to spam, then to ham, before the scan is written: kept, nothing trained yet"
        else
            not_ok "corrected by signature before the scan is written: kept, nothing trained yet (status $(cat "$WORK"/sig-spam.rc "$WORK"/sig-ham.rc | tr '\n' ' '): $(cat "$WORK"/sig-spam.out "$WORK"/sig-ham.out | tr '\n' '|'))"
        fi
        kill -CONT "$DPID"
        sig_trained() { model_export "$WORK/sig-after.export" && ! cmp -s "$WORK/sig-before.export" "$WORK/sig-after.export"; }
        # Trained, then refitted (mailsiftd refits within refresh_interval of the training):
        # the export is taken after both, so the no-op correction below is compared with it.
        if wait_for 15 scan_features "$sig" >"$WORK/sig.scan" && wait_for 5 sig_trained && wait_for 10 refitted &&
            model_export "$WORK/sig-after.export"; then
            if diff_out=$(python3 "$HERE/export_diff.py" "$WORK/sig-before.export" "$WORK/sig-after.export" \
                "$sig" ham "$WORK/sig.scan" 2>&1); then
                ok "mailsiftd trained it when it wrote the scan: the model before plus that message once, as ham, the last label ($diff_out)"
            else
                not_ok "mailsiftd trained it once, as ham, when it wrote the scan: $(tr '\n' '|' <<<"$diff_out")"
            fi
            corrected sig-again --ham --signature "$sig"
            model_export "$WORK/sig-again.export"
            if grep -q "0 learned, 0 moved, 1 already ham" "$WORK/sig-again.out" &&
                cmp -s "$WORK/sig-after.export" "$WORK/sig-again.export"; then
                ok "the same correction once the scan is written finds it learned and changes nothing"
            else
                not_ok "the same correction once the scan is written changes nothing ($(tr '\n' '|' <"$WORK/sig-again.out"))"
            fi
        else
            not_ok "the scan of once2 is written within 15 s, its deferred correction trained within 5 s after, and refitted within 10 s"
        fi
    else
        not_ok "mailsiftd restarted with stats_interval = 10, settled (refitted, model loaded), and once2 delivered"
    fi
    stop_pid "$DPID"
    DPID=""
    write_conf off
    start_daemon || bail "mailsiftd restarted with stats_interval = 1"
}
