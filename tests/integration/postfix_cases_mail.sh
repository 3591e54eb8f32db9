# shellcheck shell=bash
# How postfix_test.sh's cases send mail and read what arrived; sourced by
# postfix_test.sh (after lib.sh), before the postfix_cases_*.sh that use it.
# Defines functions (and SEND_OUT, SEND_RC, STATUS_RE) only; they run once the
# private Postfix, the sink and mailsiftd are up (SMTP_PORT, SINK, MAILSIFT, DB):
#
#   smtp / send          one message to the private Postfix; SEND_OUT, SEND_RC
#   delivered_file       the copy of a case the sink got, if any
#   header_values        a header's values in a delivered copy (unfolded)
#   header_lines         a header's physical first lines
#   expect_delivered     accepted, delivered, one well-formed status and signature
#   scan_features        the scan mailsiftd recorded under a signature

SEND_OUT=""
SEND_RC=0
# smtp [--auth USER PASSWORD] PORT SENDER RECIPIENT FILE [HEADER...]: one message to the
# private Postfix on 127.0.0.1:PORT; SEND_OUT is smtp_send.py's line, SEND_RC its status.
smtp() {
    local auth=()
    if [ "$1" = "--auth" ]; then
        auth=("$1" "$2" "$3")
        shift 3
    fi
    local port=$1
    shift
    SEND_RC=0
    SEND_OUT=$(timeout 60 python3 "$HERE/smtp_send.py" "${auth[@]}" 127.0.0.1 "$port" "$@" 2>&1) || SEND_RC=$?
}

# send CASE FILE [HEADER...]: SMTP to the private Postfix, recipient CASE@example.test.
send() {
    local case=$1 file=$2
    shift 2
    smtp "$SMTP_PORT" sender@example.org "$case@example.test" "$file" "$@"
}

# delivered_file CASE: prints the sink file of CASE (an address, or CASE@example.test), if any.
delivered_file() {
    local f rcpt=$1
    [[ "$rcpt" == *@* ]] || rcpt="$rcpt@example.test"
    for f in "$SINK"/*-"$rcpt.eml"; do
        [ -e "$f" ] && { echo "$f"; return 0; }
    done
    return 1
}

# Values of header NAME (case-insensitive, unfolded) in the header block of FILE, one per line.
header_values() {
    awk -v want="$(printf '%s' "$2" | tr '[:upper:]' '[:lower:]')" '
        function flush(   n, name, v) {
            if (cur != "") {
                n = index(cur, ":")
                name = tolower(substr(cur, 1, n - 1))
                if (n > 0 && name == want) { v = substr(cur, n + 1); sub(/^[ \t]+/, "", v); print v }
            }
            cur = ""
        }
        /^\r?$/ { flush(); exit }
        /^[ \t]/ { cur = cur " " $0; next }
        { flush(); cur = $0 }
        END { flush() }' "$1"
}

# The physical first line of each header NAME (case-insensitive) in the header block of FILE.
header_lines() {
    awk -v want="$(printf '%s' "$2" | tr '[:upper:]' '[:lower:]')" '
        /^\r?$/ { exit }
        { n = index($0, ":"); if (n > 0 && tolower(substr($0, 1, n - 1)) == want) print }' "$1"
}

STATUS_RE='^(Yes|No|Unsure), score=[01]\.[0-9]{4}, uncalibrated-log-odds=-?[0-9]+\.[0-9]{2}'

# expect_delivered CASE VERDICT DESCRIPTION: the last send was accepted, the copy arrives
# with exactly one well-formed X-Mailsift-Status naming VERDICT (Yes, No or Unsure, or
# alternatives such as "Yes|No|Unsure") and one X-Mailsift-Signature.
expect_delivered() {
    local case=$1 verdict=$2 what=$3 file statuses nstatus sigs nsig lines
    if [ "$SEND_RC" -ne 0 ]; then
        not_ok "$what: accepted by Postfix (got: $SEND_OUT)"
        return
    fi
    ok "$what: accepted by Postfix ($SEND_OUT)"
    if ! wait_for 20 delivered_file "$case" >/dev/null; then
        not_ok "$what: delivered to the sink within 20 s"
        return
    fi
    file=$(delivered_file "$case")
    statuses=$(header_values "$file" X-Mailsift-Status)
    nstatus=$(printf '%s' "$statuses" | grep -c . || true)
    if [ "$nstatus" -eq 1 ] && [[ "$statuses" =~ $STATUS_RE ]] && [[ "$statuses" =~ ^($verdict), ]]; then
        ok "$what: delivered with X-Mailsift-Status: $statuses"
    else
        not_ok "$what: delivered with exactly one X-Mailsift-Status saying $verdict (got $nstatus: $(printf '%s' "$statuses" | tr '\n' '|'))"
    fi
    # RFC 5322 allows "Name:value", but every MTA and filter writes "Name: value"; a
    # missing space means the milter and the MTA disagree on SMFIP_HDR_LEADSPC.
    lines=$(header_lines "$file" X-Mailsift-Status; header_lines "$file" X-Mailsift-Signature)
    if [ -n "$lines" ] && ! grep -qv '^X-Mailsift-[A-Za-z]*: [^ ]' <<<"$lines"; then
        ok "$what: X-Mailsift-* header lines read 'Name: value'"
    else
        not_ok "$what: X-Mailsift-* header lines read 'Name: value' (got: $(tr '\n' '|' <<<"$lines"))"
    fi
    sigs=$(header_values "$file" X-Mailsift-Signature)
    nsig=$(printf '%s' "$sigs" | grep -c . || true)
    if [ "$nsig" -eq 1 ] && [[ "$sigs" =~ ^[0-9a-fA-F]+$ ]]; then
        ok "$what: delivered with X-Mailsift-Signature: $sigs"
    else
        not_ok "$what: delivered with one hex X-Mailsift-Signature (got $nsig: $(printf '%s' "$sigs" | tr '\n' '|'))"
    fi
}

# scan_features SIGNATURE: the "feature<TAB>count" lines of the scan mailsiftd recorded
# under that X-Mailsift-Signature (the hex of its 16-byte id); false while there is none.
scan_features() { "$MAILSIFT" --db "$DB" tokens --signature "$1" 2>/dev/null; }
