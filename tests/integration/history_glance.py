"""Issue 41, item 8: a history an administrator reads at a glance. On a
1,280x800 window the history page shows one line per message, 20 or more of
them without scrolling; no address wraps; a value too long for its column is
cut and whole in the cell's title; Since and Until share a row, and the filter
form takes two. Called by console_check.py's browser checks with its check(),
page_json() and shot(); leaves the window at the size it found."""

import smtplib
import time
import urllib.parse

from selenium.webdriver.common.by import By

WIDTH, HEIGHT, ROWS = 1280, 800, 20

# What the page measures of itself once it has loaded (no scrolling).
MEASURE = """
const rows = [...document.querySelectorAll('#history-rows tr[data-id]')];
const td = rows.length ? rows[0].querySelector('td.subject') : null;
const cs = td ? getComputedStyle(td) : null;
const lines = (cell) => {  // line boxes the cell's contents take: a box below the last one starts one
  const r = document.createRange(); r.selectNodeContents(cell);
  let n = 0, bottom = -Infinity;
  for (const x of [...r.getClientRects()].filter((x) => x.width > 0).sort((a, b) => a.top - b.top)) {
    if (x.top >= bottom - 1) { n++; bottom = x.bottom; } else bottom = Math.max(bottom, x.bottom);
  }
  return n;
};
const addresses = [...document.querySelectorAll('#history-rows td.sender, #history-rows td.recipients')];
const labels = [...document.querySelectorAll('#history-form label, #history-form button')].map((l) => l.getBoundingClientRect())
  .filter((b) => b.width > 0).sort((a, b) => a.top - b.top);
let formRows = 0, bottom = -Infinity;
for (const b of labels) { if (b.top >= bottom - 1) { formRows++; bottom = b.bottom; } else bottom = Math.max(bottom, b.bottom); }
const long = rows.filter((r) => r.textContent.includes(arguments[0]))
  .flatMap((r) => [...r.querySelectorAll('td.sender, td.recipients, td.subject')])
  .map((c) => ({cls: c.className, text: c.textContent, title: c.title, cut: c.scrollWidth > c.clientWidth}));
const count = Number(document.getElementById('history-count').dataset.count);
return {
  inner: [innerWidth, innerHeight], scrolled: scrollY,
  heights: rows.map((r) => r.getBoundingClientRect().height),
  lineHeight: cs ? parseFloat(cs.lineHeight) : 0,
  padding: cs ? parseFloat(cs.paddingTop) + parseFloat(cs.paddingBottom) + parseFloat(cs.borderBottomWidth) : 0,
  visible: rows.filter((r) => r.getBoundingClientRect().top >= 0 && r.getBoundingClientRect().bottom <= innerHeight).length,
  wrapped: addresses.filter((c) => c.scrollHeight > c.clientHeight || lines(c) > 1).map((c) => c.textContent).slice(0, 3),
  multiline: rows.flatMap((r) => [...r.cells]).filter((c) => c.offsetWidth && lines(c) > 1).map((c) => c.className).slice(0, 3),
  long, formRows, labels: labels.length,
  range: ['history-since', 'history-until'].map((id) => Math.round(document.getElementById(id).getBoundingClientRect().top)),
  wide: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
  more: !document.getElementById('history-more').hidden, count, shown: rows.length,
};
"""


def send_long(args, tag, n):
    """n messages through Postfix with values too long for their columns: a
    long envelope sender and From, four recipients, a long Subject."""
    host, port = args.smtp.rsplit(":", 1)
    sender = f"glance.{'s' * 40}@a-rather-long-subdomain.of-a-long-domain.example.org"
    rcpts = [f"glance-{k}-{'r' * 24}@example.net" for k in range(4)]
    with smtplib.SMTP(host, int(port), timeout=120) as smtp:
        for i in range(n):
            smtp.sendmail(sender, rcpts,
                          f"From: A Sender With A Long Name <from.{'f' * 50}@another-long-subdomain.example.org>\r\n"
                          f"To: {', '.join(rcpts)}\r\nSubject: glance {tag} {i}: a Subject line much longer than its "
                          f"column on a 1,280 pixel window, which the cell cuts with an ellipsis\r\n"
                          f"Message-ID: <glance-{tag}-{i}@example.org>\r\n\r\nMessage {i} with long values.\r\n")


def recorded(d, page_json, query, n):
    """Waits until the history counts n lines for the query (the recorder writes every second)."""
    got, deadline = 0, time.time() + 60
    while time.time() < deadline:
        page = page_json(d, "/api/history?" + query)
        got = page["count"] if page else 0
        if got >= n:
            break
        time.sleep(0.5)
    return got


def glance_checks(d, w, args, check, page_json, shot):
    tag = f"{int(time.time())}-{id(d) % 10000}"
    try:
        send_long(args, tag, 3)
        check(recorded(d, page_json, "q=" + urllib.parse.quote("glance " + tag), 3) == 3,
              "three messages with long addresses and Subjects are in the history")
        total = recorded(d, page_json, "", 0)
        if total < ROWS:  # enough lines to fill the window
            send_long(args, tag + "-more", ROWS - total)
            total = recorded(d, page_json, "", ROWS)
        check(total >= ROWS, f"the history holds at least {ROWS} lines", total)
        glance_page(d, w, args, check, shot, tag)
    except Exception as e:  # a check that cannot even run is a failure; the others go on
        check(False, "the history's at-a-glance checks ran", repr(e))


def glance_page(d, w, args, check, shot, tag):
    size = d.get_window_size()
    d.set_window_size(WIDTH, HEIGHT)
    try:
        d.get(args.base + "/history")
        w.until(lambda d: d.find_element(By.ID, "history-count").text != "" and
                len(d.find_elements(By.CSS_SELECTOR, "#history-rows tr[data-id]")) >= ROWS)
        m = d.execute_script(MEASURE, "glance " + tag)
        shot(d, args, "13-history-1280x800")
        hs, one = m["heights"], m["lineHeight"] + m["padding"]
        print(f"# history at {m['inner'][0]}x{m['inner'][1]} inside a {WIDTH}x{HEIGHT} window: rows {min(hs):.1f}-{max(hs):.1f} px "
              f"(line {m['lineHeight']:.1f} + padding {m['padding']:.1f}), {m['visible']} rows visible, form on {m['formRows']} rows")
        check(hs and max(hs) - min(hs) < 1 and max(hs) <= min(1.6 * m["lineHeight"] + m["padding"], 32),
              f"browser at {WIDTH}x{HEIGHT}: every history row is one line of text high, all the same",
              (min(hs), max(hs), m["lineHeight"], m["padding"], m["multiline"]))
        check(not m["multiline"], "browser: no cell of the history takes a second line", m["multiline"])
        check(m["scrolled"] == 0 and m["visible"] >= ROWS,
              f"browser at {WIDTH}x{HEIGHT}: at least {ROWS} rows fit in the window without scrolling",
              (m["visible"], m["inner"], m["scrolled"]))
        check(not m["wrapped"], "browser: no sender or recipient address wraps", m["wrapped"])
        long = m["long"]
        check(len(long) == 9 and all(c["cut"] for c in long) and all(c["text"] in c["title"] for c in long),
              "browser: a sender, recipients and Subject too long for their columns are cut, and whole in the cell's title",
              [(c["cls"], c["cut"], c["text"][:30], c["title"][:60]) for c in long])
        check(all("From: A Sender With A Long Name" in c["title"] for c in long if c["cls"] == "sender"),
              "browser: and the sender cell's title holds the From header too",
              [c["title"] for c in long if c["cls"] == "sender"][:1])
        check(m["range"][0] == m["range"][1], "browser: Since and Until share a row of the filter form", m["range"])
        check(m["labels"] >= 13 and m["formRows"] <= 2, f"browser at {WIDTH} px: the filter form (labels and buttons) takes at most 2 rows",
              (m["formRows"], m["labels"]))
        check(m["wide"][0] <= m["wide"][1], f"browser: and the page is no wider than the {WIDTH} px window", m["wide"])
        check(m["more"] == (m["count"] > m["shown"]), "browser: \"Older\" is offered only when there are more lines",
              (m["more"], m["count"], m["shown"]))
    finally:
        d.set_window_size(size["width"], size["height"])
