"""console_check.py's checks of a burst of 250 messages through Postfix (issue
34): the API's pages reach every line, each once, across pages that end inside
a second; in Chromium, "Older" reaches every one of them, and the history fits
the 1,280 px window.
"""
import smtplib
import threading
import time
import urllib.parse

from console_common import check, shot
from selenium.webdriver.common.by import By


def send_burst(args, n):
    """n messages through Postfix at once (four SMTP sessions): more than one a
    second, so that pages of the history end inside a second. Returns how many
    Postfix accepted."""
    host, port = args.smtp.rsplit(":", 1)
    accepted = []

    def session(first):
        with smtplib.SMTP(host, int(port), timeout=60) as smtp:
            for i in range(first, n, 4):
                # One From is a long address without a blank, which must wrap rather than widen the page.
                sender = "burst@example.org" if i else "burst." + "x" * 90 + "@" + "very-long-subdomain." * 4 + "example.org"
                msg = (f"From: Burst <{sender}>\r\nTo: rcpt@example.net\r\nSubject: burst {i}\r\n"
                       f"Message-ID: <burst-{i}@example.org>\r\n\r\nMessage {i} of a burst.\r\n")
                smtp.sendmail("sender@example.org", ["rcpt@example.net"], msg)
                accepted.append(i)

    threads = [threading.Thread(target=session, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(accepted)


def burst_checks(d, w, args):
    """Issue 34: "Older" reaches every line of a burst, however many share a second."""
    n = 250
    check(send_burst(args, n) == n, f"Postfix took a burst of {n} messages through mailsiftd")
    page_fetch = """
        const [query, done] = arguments;
        fetch('/api/history?' + query, {credentials: 'same-origin'}).then(r => r.json()).then(done, e => done(null));
    """

    def api_burst():
        """Every burst line through the API, page after page as `next` says: the pages' (line id, time) lists."""
        pages, query = [], "q=burst"
        while len(pages) < 10:
            page = d.execute_async_script(page_fetch, query)
            if page is None:
                return []
            pages.append([(str(e["id"]), e["scanned_at"]) for e in page["entries"]])
            if page["next"] is None:
                break
            query = "q=burst&cursor=" + urllib.parse.quote(page["next"]["cursor"])
        return pages

    deadline = time.time() + 60
    pages = api_burst()
    while sum(map(len, pages)) < n and time.time() < deadline:  # the recorder writes every second
        time.sleep(0.5)
        pages = api_burst()
    lines = [line for page in pages for line in page]
    line_ids = {s for s, _ in lines}
    check(len(lines) == n and len(line_ids) == n,
          f"the API's pages reach all {n} lines of the burst, each once", f"{len(lines)} lines, {len(line_ids)} distinct")
    split = [i for i in range(1, len(pages)) if pages[i] and pages[i - 1] and pages[i][0][1] == pages[i - 1][-1][1]]
    check(split, "and a page ends inside a second whose lines go on on the next page (what a time alone loses)",
          [(p[0][1], p[-1][1]) for p in pages if p])

    def rows(d):
        return d.find_elements(By.CSS_SELECTOR, "#history-rows tr[data-id]")

    def fresh_listing(action):
        """Empties the table, does `action`, and waits for the listing it asked for."""
        d.execute_script("document.getElementById('history-rows').replaceChildren()")
        action()
        w.until(lambda d: len(rows(d)) > 0)

    fresh_listing(lambda: d.find_element(By.CSS_SELECTOR, "a[data-page=history]").click())
    d.find_element(By.ID, "history-search").clear()
    d.find_element(By.ID, "history-search").send_keys("burst")
    fresh_listing(lambda: d.find_element(By.ID, "history-go").click())
    w.until(lambda d: all("burst" in r.text for r in rows(d)))  # the search's listing, not an earlier one
    clicks = 0
    while d.find_element(By.ID, "history-more").is_displayed() and clicks < 10:
        shown = len(rows(d))
        d.find_element(By.ID, "history-more").click()
        clicks += 1
        w.until(lambda d: len(rows(d)) > shown or not d.find_element(By.ID, "history-more").is_displayed())
    widths = d.execute_script("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    check(widths[0] <= widths[1], "browser: the history fits the 1,280 px window (no horizontal scrolling)", widths)
    in_browser = [r.get_attribute("data-id") for r in rows(d)]
    check(len(in_browser) == n and set(in_browser) == line_ids,
          f"browser: Older reaches every one of the {n} lines, each once",
          f"{len(in_browser)} rows, {len(set(in_browser))} distinct after {clicks} clicks")
    shot(d, args, "07b-history-burst")
