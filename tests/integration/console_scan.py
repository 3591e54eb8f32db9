"""console_check.py's browser checks of the Scan page, as the admin: a pasted
message whose Subject is markup is scanned and shown as text, running
nothing; learn as spam trains the model once (mailsift stats); and a POST from
the page without the CSRF token, or with a wrong one, is refused.
"""
import time

from console_common import check, fetch, no_alert, shot, stats, text_of
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC


def scan_checks(d, w, args):
    # Scan a message whose Subject is markup: it must stay text.
    d.find_element(By.CSS_SELECTOR, "a[data-page=scan]").click()
    w.until(EC.visibility_of_element_located((By.ID, "scan-text")))
    xss = ("From: Prize Desk <win@prize.example>\nTo: you@example.org\n"
           "Subject: <img src=x onerror=alert(1)> winner <b>claim</b>\n\n"
           "Claim your prize now <script>alert(2)</script> <img src=y onerror=alert(3)>\n")
    d.find_element(By.ID, "scan-text").send_keys(xss)
    d.find_element(By.ID, "scan-button").click()
    w.until(EC.visibility_of_element_located((By.ID, "scan-result")))
    verdict = text_of(d, "scan-verdict")
    check(verdict in ("spam", "ham", "unsure"), "browser: a pasted message is scanned, with a verdict", verdict)
    time.sleep(0.5)
    injected = d.execute_script(
        "return document.querySelectorAll('main img, main script, main b').length")
    check(no_alert(d) and injected == 0,
          "browser: markup from the message runs nothing and adds no element", f"elements {injected}")
    subject = text_of(d, "scan-subject")
    check(subject == "<img src=x onerror=alert(1)> winner <b>claim</b>",
          "browser: a Subject of markup is shown as the text it is", subject)
    shot(d, args, "03-scan")

    before = stats(args)
    d.find_element(By.ID, "learn-spam").click()
    w.until(lambda d: text_of(d, "learn-result") != "" or text_of(d, "scan-error") != "")
    after = stats(args)
    check("learned" in text_of(d, "learn-result") and after["spam"] == before["spam"] + 1,
          "browser: learn as spam trains the model once (mailsift stats)", f"{before} -> {after}")
    d.find_element(By.ID, "learn-spam").click()
    w.until(lambda d: "already learned" in text_of(d, "learn-result"))
    check(stats(args)["spam"] == after["spam"], "browser: learning it again changes nothing")
    shot(d, args, "04-learned")

    csrf = d.execute_script("return state.csrf")
    status = fetch(d, "/api/learn?class=ham", "POST", None, "From: a@b\n\nx\n")
    check(status == 403, "browser: a POST from the page without the CSRF token is refused (403)", status)
    check(fetch(d, "/api/learn?class=ham", "POST", "wrong" + csrf[5:], "From: a@b\n\nx\n") == 403,
          "browser: and with a wrong one")
