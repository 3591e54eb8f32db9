"""Issue 41, item 4, through a real Postfix: the same message sent twice, to
two recipients in two SMTP transactions, is two history lines, each found by
its queue ID (from Postfix's own log) and by its recipient. Called by
history_filter.py's history checks with its check() and page_json()."""

import re
import smtplib
import time
import urllib.parse


def send_twice(args, tag):
    """The same bytes in two transactions of one session. Returns the Message-ID."""
    host, port = args.smtp.rsplit(":", 1)
    mid = f"<twice-{tag}@example.com>"
    msg = (f"From: twice@example.com\r\nTo: undisclosed-recipients:;\r\nSubject: sent twice {tag}\r\n"
           f"Message-ID: {mid}\r\n\r\nThe same message, delivered to two people one after the other.\r\n")
    with smtplib.SMTP(host, int(port), timeout=120) as smtp:
        smtp.sendmail("twice@example.com", ["victim3@example.net"], msg)
        smtp.sendmail("twice@example.com", ["ceo@example.net"], msg)
    return mid


def queue_ids(args, mid):
    """Every queue ID Postfix's log gives that Message-ID (message-id=...)."""
    text = open(args.postfix_log, errors="replace").read()
    return sorted({m.group(1) for m in re.finditer(r"\]: ([0-9A-Za-z]+): message-id=(\S+)", text) if m.group(2) == mid})


def twice_checks(d, args, tag, check, page_json):
    mid = send_twice(args, tag)
    q = urllib.parse.quote
    deadline = time.time() + 60
    qids, lines = [], []
    while time.time() < deadline:  # Postfix logs, and the recorder writes every second
        qids = queue_ids(args, mid)
        page = page_json(d, "/api/history?message_id=" + q(mid))
        lines = page["entries"] if page else []
        if len(qids) >= 2 and len(lines) >= 2:
            break
        time.sleep(0.5)
    check(len(qids) == 2, "Postfix's log names two queue IDs for the message sent twice", qids)
    check(len(lines) == 2 and len({x["id"] for x in lines}) == 2 and
          sorted(x["recipients"] for x in lines) == ["<ceo@example.net>", "<victim3@example.net>"],
          "the same message sent to two recipients in two transactions is two history lines, one per recipient",
          [(x["id"], x["queue_id"], x["recipients"]) for x in lines])
    by_qid = {}
    for qid in qids:
        page = page_json(d, "/api/history?queue_id=" + q(qid))
        by_qid[qid] = [(x["message_id"], x["recipients"]) for x in page["entries"]] if page else None
    check(len(by_qid) == 2 and all(v is not None and len(v) == 1 and v[0][0] == mid for v in by_qid.values()) and
          {v[0][1] for v in by_qid.values()} == {"<ceo@example.net>", "<victim3@example.net>"},
          "each delivery is found by its own queue ID from Postfix's log, with its own recipient", by_qid)
    for rcpt in ("victim3@example.net", "ceo@example.net"):
        page = page_json(d, "/api/history?message_id=" + q(mid) + "&recipient=" + q(rcpt))
        got = [x["recipients"] for x in page["entries"]] if page else None
        check(got == [f"<{rcpt}>"], f"the recipient filter finds the delivery to {rcpt} alone", got)
