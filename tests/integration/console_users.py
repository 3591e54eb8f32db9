"""console_check.py's browser checks of the Users page (issue 44, item 4: a
user's layer, history lines and error rates; a name that is no address
refused as text), and of what a viewer is shown and refused: the history
without correct buttons, no learn buttons, a scan, a correction and a learn
refused (403).
"""
from console_common import check, fetch, no_alert, shot, sign_in_patiently, text_of
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC


def user_checks(d, w, args):
    """Issue 44, item 4: the Users page shows what a user's layer holds (per_user
    is off here: none), how many history lines went to them and their error
    rates; a name from
    the address bar that is no address is refused as text and runs nothing."""
    d.find_element(By.CSS_SELECTOR, "a[data-page=users]").click()
    w.until(EC.visibility_of_element_located((By.ID, "user-form")))
    # Issue 58: the users with a layer are listed (none with per_user off), no address needed.
    w.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#users-list tr")) >= 2)
    listed = [tr.text for tr in d.find_elements(By.CSS_SELECTOR, "#users-list tr")]
    check(listed[0].startswith("User") and any("no correction has stepped a layer; per_user = off" in r for r in listed),
          "browser: the Users page lists the users with a layer (none with per_user off)", listed)
    d.find_element(By.ID, "user-name").send_keys("RCPT@example.net")
    d.find_element(By.CSS_SELECTOR, "#user-form button").click()
    w.until(EC.visibility_of_element_located((By.ID, "user-result")))
    rows = [tr.text for tr in d.find_elements(By.CSS_SELECTOR, "#user-senders tr")]
    lines = text_of(d, "user-lines")
    check(text_of(d, "user-key") == "rcpt@example.net" and text_of(d, "user-per-user") == "off" and
          lines.isdigit() and int(lines) > 0 and any("scored by the site's model" in r for r in rows),
          "browser: the Users page shows the user's layer (none with per_user off) and their history lines",
          [text_of(d, "user-key"), lines, rows])
    rates = [text_of(d, "user-fp"), text_of(d, "user-fn"), text_of(d, "user-unsure")]
    check(rates == ["0 (0.00%)", "0 (0.00%)", "0"] and "since 20" in text_of(d, "user-since"),
          "and the error rates their corrections reveal (none with per_user off), since their oldest message", rates)
    link = d.find_element(By.ID, "user-history").get_attribute("href")
    check(link.endswith("/history?recipient=rcpt%40example.net"), "and links to their history", link)
    shot(d, args, "09-users")
    d.get(args.base + "/users?name=" + "%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E%40x.example")
    w.until(lambda d: text_of(d, "user-error") != "")
    injected = d.execute_script("return document.querySelectorAll('main img, main script').length")
    check(no_alert(d) and injected == 0 and "address" in text_of(d, "user-error") and
          not d.find_element(By.ID, "user-result").is_displayed(),
          "browser: a name that is no address is refused, shown as text, and runs nothing",
          [text_of(d, "user-error"), injected])


def viewer_checks(d, w, args):
    """Signed in as the viewer: the history, the Scan page, and refusals."""
    sign_in_patiently(d, w, *args.viewer)
    w.until(EC.visibility_of_element_located((By.ID, "page-status")))
    d.find_element(By.CSS_SELECTOR, "a[data-page=history]").click()
    w.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#history-rows tr[data-id]")) > 0)
    buttons = d.find_elements(By.CSS_SELECTOR, "#history-rows button.correct")
    check(buttons and not any(b.is_displayed() for b in buttons), "browser: a viewer sees the history without correct buttons")
    vcsrf = d.execute_script("return state.csrf")
    status = d.execute_async_script("""
        const [csrf, done] = arguments;
        fetch('/api/correct', {method: 'POST', headers: {'X-CSRF-Token': csrf, 'Content-Type': 'application/json'},
            body: JSON.stringify({signature: '00000000000000000000000000000000', class: 'spam'})}).then(r => done(r.status));
    """, vcsrf)
    check(status == 403, "browser: and the viewer's correction is refused (403)", status)
    shot(d, args, "09-viewer-history")
    d.find_element(By.CSS_SELECTOR, "a[data-page=scan]").click()
    w.until(EC.visibility_of_element_located((By.ID, "scan-text")))
    check(not d.find_element(By.ID, "learn-spam").is_displayed(), "browser: a viewer has no learn buttons")
    d.execute_script("document.getElementById('scan-verdict').textContent = ''")  # not the admin's scan
    d.find_element(By.ID, "scan-text").clear()
    d.find_element(By.ID, "scan-text").send_keys("From: a@example.org\nSubject: lunch\n\nLunch at noon?\n")
    d.find_element(By.ID, "scan-button").click()
    try:
        w.until(lambda d: text_of(d, "scan-verdict") in ("spam", "ham", "unsure") or text_of(d, "scan-error") != "")
    except TimeoutException:
        pass
    check(text_of(d, "scan-verdict") in ("spam", "ham", "unsure") and text_of(d, "scan-error") == "",
          "browser: the Scan page a viewer is offered scans for the viewer (a scan changes nothing)",
          text_of(d, "scan-error"))
    check(fetch(d, "/api/learn?class=spam", "POST", vcsrf, "From: a@b\n\nx\n") == 403,
          "browser: and the viewer's learn is refused (403)")
    shot(d, args, "10-viewer-scan")
