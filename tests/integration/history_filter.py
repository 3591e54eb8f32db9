"""console_check.py's checks of a history that matches the mail log (issue 34,
item 3): a traced message and one too large to be scored sent through
Postfix, found by the queue ID in Postfix's log; through the API each filter,
each order, the count, the cursor and the CSV and JSON exports; a correction
from the command line; in Chromium the filter form, the count and the export
links. Calls history_twice.py's checks.
"""
import csv
import io
import json
import os
import re
import smtplib
import subprocess
import time
import urllib.parse

from console_common import check, page_get, page_json, shot, text_of
from history_twice import twice_checks
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC


def send_traced(args, tag):
    """Two messages through Postfix for the history's checks: one to trace (its
    own envelope, To, Subject, Message-ID and HELO) and one over
    limits.max_message_bytes, which mailsiftd (oversize = skip) lets through
    unscored. Returns their Message-IDs."""
    host, port = args.smtp.rsplit(":", 1)
    traced = f"<trace-{tag}@example.com>"
    big = f"<big-{tag}@example.com>"
    with smtplib.SMTP(host, int(port), timeout=120, local_hostname="trace-client.example") as smtp:
        smtp.sendmail("tracer@example.com", ["trace-rcpt@example.net"],
                      f"From: Tracer <tracer-from@example.com>\r\nTo: Shown Name <to-header@example.com>\r\n"
                      f"Subject: trace me {tag}\r\nMessage-ID: {traced}\r\n\r\nWhere did this one go?\r\n")
        line = "a line of a message too large to be scored, " * 2 + "\r\n"
        smtp.sendmail("big@example.com", ["rcpt@example.net"],
                      f"From: big@example.com\r\nTo: rcpt@example.net\r\nSubject: a large one {tag}\r\n"
                      f"Message-ID: {big}\r\n\r\n" + line * (1200 * 1024 // len(line)))
    return traced, big


def postfix_log(args):
    """What Postfix's own log (maillog_file) says: {Message-ID: queue ID} and {queue ID: client address}."""
    text = open(args.postfix_log, errors="replace").read()
    ids = {m.group(2): m.group(1) for m in re.finditer(r"\]: ([0-9A-Za-z]+): message-id=(\S+)", text)}
    clients = {m.group(1): m.group(2) for m in re.finditer(r"\]: ([0-9A-Za-z]+): client=[^\[\s]*\[([^\]]+)\]", text)}
    return ids, clients


def history_checks(d, w, args):
    """Issue 34, item 3: a history that matches the mail log. Through the API
    (each filter, each order, count, cursor, export) and in Chromium (the form,
    the count, the export links, the queue ID found from Postfix's log)."""
    tag = f"{int(time.time())}-{os.getpid()}"
    traced, big = send_traced(args, tag)
    check(True, "Postfix took a message to trace and one over limits.max_message_bytes")
    # The queue ID Postfix gave the traced message, from its own log.
    deadline = time.time() + 30
    ids, clients = postfix_log(args)
    while (traced not in ids or big not in ids) and time.time() < deadline:
        time.sleep(0.5)
        ids, clients = postfix_log(args)
    qid = ids.get(traced)
    check(qid is not None, "Postfix's mail log names the traced message's queue ID (QUEUEID: message-id=...)", qid)
    if qid is None:
        return
    found = None
    while time.time() < deadline + 30:  # the recorder writes every second
        found = page_json(d, "/api/history?queue_id=" + urllib.parse.quote(qid))
        if found and found["entries"] and page_json(d, "/api/history?action=skipped")["count"] > 0:
            break
        time.sleep(0.5)
    entries = found["entries"] if found else []
    e = entries[0] if len(entries) == 1 else {}
    check(len(entries) == 1 and found["count"] == 1 and e.get("queue_id") == qid,
          f"the history finds a message by its queue ID from Postfix's log ({qid}): exactly that one",
          [(x["queue_id"], x["message_id"]) for x in entries])
    check(e.get("message_id") == traced, "and its Message-ID is the log's message-id=", (e.get("message_id"), traced))
    check(e.get("client_address") == clients.get(qid, "127.0.0.1"),
          "and its client address is the one Postfix logged (client=...[ADDR])", (e.get("client_address"), clients.get(qid)))
    check(e.get("helo") == "trace-client.example" and "to-header@example.com" in e.get("to", "") and
          "tracer@example.com" in e.get("sender", "") and "trace-rcpt@example.net" in e.get("recipients", ""),
          "and its HELO, To, MAIL FROM and RCPT TO are the ones sent", {k: e.get(k) for k in ("helo", "to", "sender", "recipients")})
    signature = e.get("signature")
    twice_checks(d, args, tag, check, page_json)

    # Every burst message's queue ID in the history is the one Postfix logged for its Message-ID.
    exported = page_get(d, "/api/history/export?format=json&q=burst")
    burst = json.loads(exported[2]) if exported[0] == 200 else []
    logged = {m: q for m, q in ids.items() if m.startswith("<burst-")}
    mismatched = [(x["message_id"], x["queue_id"], logged.get(x["message_id"])) for x in burst
                  if logged.get(x["message_id"]) != x["queue_id"]]
    check(len(burst) == 250 and len(logged) == 250 and not mismatched,
          "each of the 250 burst lines has the queue ID Postfix logged for its Message-ID", (len(burst), len(logged), mismatched[:3]))

    def listing(query):
        """Every line of a query, page after page with `cursor`: (lines, count of the first answer, pages)."""
        lines, count, pages, cursor = [], None, 0, None
        while pages < 200:
            page = page_json(d, "/api/history?" + query + ("&cursor=" + urllib.parse.quote(cursor) if cursor else ""))
            if page is None:
                return None, None, pages
            count = page["count"] if count is None else count
            lines += page["entries"]
            pages += 1
            if page["next"] is None:
                break
            cursor = page["next"]["cursor"]
        return lines, count, pages

    def sole(query):
        page = page_json(d, "/api/history?" + query)
        return [x["signature"] for x in page["entries"]] if page and page["count"] == len(page["entries"]) else None

    everything, total, _ = listing("limit=1000")
    check(everything is not None and total == len(everything) and total >= 257,
          "the API counts every line of the history (5 + 250 + 2 sent through Postfix)", (total, everything and len(everything)))
    q = urllib.parse.quote
    for what, query in [("sender (MAIL FROM, case ignored)", "sender=TRACER@Example.COM"),
                        ("recipient (RCPT TO)", "recipient=trace-rcpt@example.net"),
                        ("recipient (the To header)", "recipient=to-header@example.com"),
                        ("subject", "subject=" + q("trace me " + tag)),
                        ("Message-ID with its <>", "message_id=" + q(traced)),
                        ("Message-ID without <>", "message_id=" + q(traced.strip("<>"))),
                        ("free text: the To header", "q=to-header@EXAMPLE.com"),
                        ("free text: the queue ID", "q=" + q(qid)),
                        ("free text: the Message-ID", "q=" + q(traced.strip("<>")))]:
        got = sole(query)
        check(got == [signature], f"the API's filter by {what} finds exactly the traced message", (query, got))
    check(sole("queue_id=" + q(qid[:-1])) == [], "a queue ID filter is exact (its prefix finds nothing)", sole("queue_id=" + q(qid[:-1])))
    check(sole("message_id=" + q(traced[:-2])) == [], "a Message-ID filter is exact", sole("message_id=" + q(traced[:-2])))
    status = page_get(d, "/api/history?cursor=not-a-cursor")[0]
    check(status == 400, "a cursor the API never gave: 400", status)

    # Skipped: the large message, with its reason, no verdict and no P(spam).
    skipped, skipped_count, _ = listing("action=skipped&limit=50")
    check(skipped is not None and skipped_count == len(skipped) >= 1 and
          all(x["action"] == "skipped" and x["scored"] is False and x["verdict"] is None and x["probability"] is None
              for x in skipped) and
          any(x["message_id"] == big and x["reason"].startswith("too large") for x in skipped),
          "action=skipped lists the message mailsiftd let through unscored, with its reason (too large)",
          [(x["message_id"], x["reason"], x["verdict"]) for x in skipped or []][:3])
    # Each verdict and each action narrows to its own lines; together they are every line.
    by_verdict = {v: listing(f"verdict={v}&limit=1000") for v in ("spam", "ham", "unsure")}
    check(all(lines is not None and n == len(lines) and all(x["verdict"] == v and x["scored"] for x in lines)
              for v, (lines, n, _) in by_verdict.items()) and
          sum(n for _, n, _ in by_verdict.values()) + skipped_count == total,
          "verdict=spam|ham|unsure each lists only its verdict, and with the skipped they are every line",
          {v: n for v, (_, n, _) in by_verdict.items()})
    actions = ("accepted", "tagged", "quarantined", "rejected", "tempfailed", "skipped")
    by_action = {a: listing(f"action={a}&limit=1000") for a in actions}
    check(all(lines is not None and n == len(lines) and all(x["action"] == a for x in lines)
              for a, (lines, n, _) in by_action.items()) and sum(n for _, n, _ in by_action.values()) == total,
          "action=... each lists only its action, and together they are every line",
          {a: n for a, (_, n, _) in by_action.items()})
    # A time range: since is inclusive, until exclusive; the two halves are every line.
    times = sorted({x["scanned_at"] for x in everything})
    t = times[len(times) // 2]
    since, n_since, _ = listing(f"since={t}&limit=1000")
    until, n_until, _ = listing(f"until={t}&limit=1000")
    check(since is not None and until is not None and all(x["scanned_at"] >= t for x in since) and
          all(x["scanned_at"] < t for x in until) and n_since == len(since) == sum(x["scanned_at"] >= t for x in everything) and
          n_until + n_since == total,
          "since= (inclusive) and until= (exclusive) split the history at a time", (t, n_since, n_until, total))
    within, n_within, _ = listing(f"since={times[0]}&until={times[-1] + 1}&q=burst&limit=1000")
    check(within is not None and n_within == 250, "a time range and a filter together", n_within)

    # Each order, page after page with cursor (40 a page, so pages end inside ties): count lines, each once, in order.
    keys = {"newest": lambda x: -x["scanned_at"], "oldest": lambda x: x["scanned_at"],
            "spammiest": lambda x: -x["probability"], "hammiest": lambda x: x["probability"]}
    scored = total - skipped_count
    for order, key in keys.items():
        lines, n, pages = listing(f"order={order}&limit=40")
        ok = lines is not None and n == len(lines) == len({x["id"] for x in lines}) and pages > 1
        if ok and order in ("spammiest", "hammiest"):
            ok = all(x["scored"] for x in lines) and len(lines) == scored
        elif ok:
            ok = len(lines) == total
        ordered = lines is not None and all(x["probability"] is not None or order in ("newest", "oldest") for x in lines) and \
            all(key(a) <= key(b) for a, b in zip(lines, lines[1:]))
        check(ok and ordered, f"order={order}: paging with cursor to the end reaches count lines, each once, in that order"
              + (" (no skipped line)" if order in ("spammiest", "hammiest") else ""),
              (n, lines and len(lines), pages, ordered))
    burst_lines, n_burst, pages = listing("q=burst&limit=37")
    check(burst_lines is not None and n_burst == len(burst_lines) == len({x["id"] for x in burst_lines}) == 250,
          "a filter's count is the number of lines its pages reach (q=burst, 37 a page)", (n_burst, burst_lines and len(burst_lines), pages))

    # Export: every match of the filter, in its order, as an attachment.
    status, disposition, body = page_get(d, "/api/history/export?format=csv&q=burst&order=oldest")
    rows = list(csv.reader(io.StringIO(body))) if status == 200 else []
    header = rows[0] if rows else []
    check(status == 200 and "attachment" in (disposition or "") and
          all(c in header for c in ("queue_id", "message_id", "signature", "verdict", "corrected_by")),
          "the CSV export is an attachment with a header row", (status, disposition, header))
    column = {c: i for i, c in enumerate(header)}
    body_rows = rows[1:]
    check(len(body_rows) == n_burst and {r[column["signature"]] for r in body_rows} == {x["signature"] for x in burst_lines}
          if "signature" in column else False,
          f"and it holds the filter's count ({n_burst}) rows: the lines the API lists", len(body_rows))
    times_csv = [int(r[column["scanned_at"]]) for r in body_rows] if "scanned_at" in column else []
    check(times_csv and times_csv == sorted(times_csv), "and in the order asked (oldest first)", times_csv[:3])
    status, disposition, body = page_get(d, "/api/history/export?format=json&verdict=spam")
    try:
        spam_export = json.loads(body) if status == 200 else None
    except ValueError:
        spam_export = None
    check(isinstance(spam_export, list) and len(spam_export) == by_verdict["spam"][1] and
          all(x["verdict"] == "spam" for x in spam_export) and "attachment" in (disposition or ""),
          "the JSON export parses to the filter's count of lines (verdict=spam), as an attachment",
          (status, disposition, spam_export and len(spam_export), by_verdict["spam"][1]))

    # A correction from the command line says so: by cli:USER.
    other = "ham" if e.get("verdict") == "spam" else "spam"
    out = subprocess.run([args.mailsift, "--db", args.db, "correct", "--" + other, "--signature", signature],
                         capture_output=True, text=True)
    got = None
    deadline = time.time() + 30
    while time.time() < deadline:
        page = page_json(d, "/api/history?queue_id=" + q(qid))
        got = page["entries"][0]["corrected"] if page and page["entries"] else None
        if got:
            break
        time.sleep(0.5)
    check(out.returncode == 0 and got is not None and got.get("class") == other and got.get("by", "").startswith("cli:"),
          f"mailsift correct --{other} --signature shows in the line's corrected, by cli:USER", (out.stdout + out.stderr, got))

    # In Chromium: the form.
    def rows_of(d):
        return d.find_elements(By.CSS_SELECTOR, "#history-rows tr[data-id]")

    def show_filtered(fill):
        """Clears the form, fills it (fill(d)), presses Show and waits for that listing."""
        d.execute_script("document.getElementById('history-count').textContent = ''")
        d.find_element(By.ID, "history-clear").click()  # which shows everything: wait for it, not to take it for ours
        w.until(lambda d: d.find_element(By.ID, "history-count").text != "")
        fill(d)
        d.execute_script("document.getElementById('history-rows').replaceChildren();"
                         "document.getElementById('history-count').textContent = ''")
        d.find_element(By.ID, "history-go").click()
        # The listing of this Show: an answer to the Clear above may still come in
        # first (it is the latest asked until Show is pressed), so wait for the
        # listing whose filter is the one Show put in the URL.
        w.until(lambda d: text_of(d, "history-error") != "" or (
            d.find_element(By.ID, "history-count").text != "" and d.execute_script(
                "return document.getElementById('history-rows').dataset.filter === "
                "new URLSearchParams(location.search).toString()")))
        return rows_of(d)

    def typed(id_, value):
        def fill(d):
            d.find_element(By.ID, id_).clear()
            d.find_element(By.ID, id_).send_keys(value)
        return fill

    def export_params(format_):
        href = d.find_element(By.ID, "history-export-" + format_).get_attribute("href")
        return urllib.parse.urlparse(href).path, dict(urllib.parse.parse_qsl(urllib.parse.urlparse(href).query))

    d.find_element(By.CSS_SELECTOR, "a[data-page=history]").click()
    w.until(EC.visibility_of_element_located((By.ID, "history-form")))
    found = show_filtered(typed("history-id", qid))
    cells = found[0] if len(found) == 1 else None
    check(cells is not None and cells.get_attribute("data-signature") == signature and
          cells.find_element(By.CSS_SELECTOR, "td.queue-id").text == qid and text_of(d, "history-count") == "1 message matches",
          f"browser: the queue ID from Postfix's log typed into the form finds that message, and says 1 message matches",
          (len(found), text_of(d, "history-count")))
    if cells is not None:
        client = cells.find_element(By.CSS_SELECTOR, "td.client")
        check(client.text == e.get("client_address") and client.get_attribute("title") == "HELO trace-client.example",
              "browser: its client address is shown, its HELO on hover", (client.text, client.get_attribute("title")))
        check(cells.find_element(By.CSS_SELECTOR, "td.correction").text.startswith(f"→ {other} by cli:"),
              "browser: and its correction from the command line (→ CLASS by cli:USER)",
              cells.find_element(By.CSS_SELECTOR, "td.correction").text)
        cells.find_element(By.CSS_SELECTOR, "button.why").click()
        w.until(lambda d: text_of(d, "explain-signature") == signature)
        shown = {k: text_of(d, "explain-" + k) for k in ("queue-id", "message-id", "client", "helo", "to", "sender")}
        check(shown["queue-id"] == qid and shown["message-id"] == traced and shown["client"] == e.get("client_address") and
              shown["helo"] == "trace-client.example" and "to-header@example.com" in shown["to"],
              "browser: its details show the queue ID, Message-ID, client, HELO and To", shown)
        shot(d, args, "11-history-queue-id")
        d.find_element(By.ID, "explain-close").click()
    check(export_params("csv") == ("/api/history/export", {"format": "csv", "queue_id": qid}),
          "browser: the Export CSV link carries the queue ID filter", export_params("csv"))
    found = show_filtered(typed("history-id", traced))
    check(len(found) == 1 and found[0].get_attribute("data-signature") == signature and
          export_params("json")[1] == {"format": "json", "message_id": traced},
          "browser: the Message-ID typed into the same field finds it too (sent as message_id)", export_params("json"))

    # A verdict: only its rows, and the API's count.
    found = show_filtered(lambda d: d.find_element(By.CSS_SELECTOR, "#history-verdict option[value=spam]").click())
    verdicts = {r.find_element(By.CSS_SELECTOR, "td.verdict-cell .verdict").text for r in found}
    n_spam = by_verdict["spam"][1]
    check(len(found) == min(n_spam, 100) and verdicts <= {"spam"} and
          text_of(d, "history-count") == f"{n_spam:,} message{'s match' if n_spam != 1 else ' matches'}",
          "browser: verdict spam shows only spam rows, and \"N messages match\" from the API's count",
          (len(found), verdicts, text_of(d, "history-count"), n_spam))
    check(export_params("csv")[1] == {"format": "csv", "verdict": "spam"}, "browser: and the Export CSV link carries it",
          export_params("csv"))
    # A sender: only its rows; the export link gives exactly them.
    found = show_filtered(typed("history-sender", "tracer@example.com"))
    check(len(found) == 1 and found[0].get_attribute("data-signature") == signature and
          text_of(d, "history-count") == "1 message matches",
          "browser: a sender shows only its messages, and 1 message matches", (len(found), text_of(d, "history-count")))
    path, params = export_params("csv")
    check(params == {"format": "csv", "sender": "tracer@example.com"}, "browser: the Export CSV link's href carries the sender", params)
    status, _, body = page_get(d, d.find_element(By.ID, "history-export-csv").get_attribute("href"))
    linked = list(csv.reader(io.StringIO(body))) if status == 200 else []
    check(len(linked) == 2 and "signature" in column and linked[1][column["signature"]] == signature,
          "browser: and the link downloads a header and that one line", linked[1:])
    # Skipped lines show the reason and offer no correction.
    found = show_filtered(lambda d: d.find_element(By.CSS_SELECTOR, "#history-action option[value=skipped]").click())
    check(len(found) == skipped_count and all("skipped" in r.find_element(By.CSS_SELECTOR, "td.verdict-cell").text and
                                             "too large" in r.find_element(By.CSS_SELECTOR, "td.verdict-cell").text and
                                             not r.find_elements(By.CSS_SELECTOR, "button.correct") for r in found),
          "browser: action skipped shows \"skipped\" with the reason, and no correct buttons", [r.text for r in found][:2])
    # A time range from the two datetime-local fields, in this browser's time zone.
    local = """const d = new Date(arguments[0] * 1000), p = (n) => String(n).padStart(2, '0');
               return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;"""
    since_text = d.execute_script(local, t)
    found = show_filtered(lambda d: d.execute_script("document.getElementById('history-since').value = arguments[0]", since_text))
    shown_times = [int(r.get_attribute("data-scanned-at")) for r in found]
    check(shown_times and min(shown_times) >= t and d.find_element(By.ID, "history-count").get_attribute("data-count") == str(n_since) and
          export_params("csv")[1].get("since") == str(t),
          "browser: a Since time shows only lines from then, the API's count, and the export link carries since=",
          (since_text, t, min(shown_times or [0]), text_of(d, "history-count"), n_since))
    # Highest P(spam) first.
    found = show_filtered(lambda d: d.find_element(By.CSS_SELECTOR, "#history-order option[value=spammiest]").click())
    ps = [float(r.find_element(By.CSS_SELECTOR, ".probability").text) for r in found if r.find_elements(By.CSS_SELECTOR, ".probability")]
    check(len(ps) == len(found) > 0 and ps == sorted(ps, reverse=True) and export_params("csv")[1].get("order") == "spammiest",
          "browser: sorted by highest P(spam), rows go down in P(spam), and the export link keeps the order", ps[:5])
    # The page for the README: a filter, the count, a corrected line.
    def readme_filter(d):
        d.find_element(By.ID, "history-sender").send_keys("example.org")
        d.find_element(By.CSS_SELECTOR, "#history-order option[value=oldest]").click()
    found = show_filtered(readme_filter)
    check(any("corrected" in r.get_attribute("class") for r in found), "browser: the corrected line in the listing (screenshot)")
    widths = d.execute_script("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    check(widths[0] <= widths[1], "browser: the history with its filter form fits 1,280 px", widths)
    d.execute_script("window.scrollTo(0, 0)")
    shot(d, args, "12-history-filtered")
