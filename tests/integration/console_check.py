#!/usr/bin/env python3
"""The console's checks for console_test.sh: raw HTTPS requests for the rules a
browser hides (headers, cookie flags, limits, CSRF, roles), then a real
headless Chromium through Selenium for what a person does. Prints one
"ok - ..." or "not ok - ..." line per check and "# console_check.py finished"
last; console_test.sh counts them.
"""
import argparse
import csv
import http.client
import io
import json
import os
import re
import smtplib
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

from console_connections import connection_checks
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

sys.dont_write_bytecode = True  # the import below must leave no __pycache__ in the source tree
from history_twice import twice_checks  # noqa: E402
from history_glance import glance_checks  # noqa: E402
from history_undo import undo_checks  # noqa: E402

FAILED = 0


def check(passed, what, detail=""):
    global FAILED
    if passed:
        print(f"ok - {what}")
    else:
        FAILED += 1
        print(f"not ok - {what}" + (f" ({detail})" if detail else ""))
    sys.stdout.flush()
    return passed


class Console:
    """Raw HTTPS to the console, verifying its certificate."""

    def __init__(self, base, ca):
        m = re.match(r"https://([^:/]+):(\d+)", base)
        self.host, self.port = m.group(1), int(m.group(2))
        self.ctx = ssl.create_default_context(cafile=ca)

    def request(self, method, path, body=None, headers=None, source=None):
        c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60,
                                        source_address=(source, 0) if source else None)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, r.headers, data

    def login(self, name, password, source=None):
        status, headers, body = self.request(
            "POST", "/api/login", json.dumps({"name": name, "password": password}),
            {"Content-Type": "application/json"}, source)
        cookie = headers.get("Set-Cookie", "")
        token = cookie.split(";", 1)[0]
        return status, cookie, token, (json.loads(body).get("csrf") if status == 200 else None)


def metrics(url):
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    by_verdict = {}
    for m in re.finditer(r'^mailsift_messages_total\{verdict="(\w+)",action="\w+"\} (\d+)$', text, re.M):
        by_verdict[m.group(1)] = by_verdict.get(m.group(1), 0) + int(m.group(2))
    model = {k: int(v) for k, v in re.findall(r'^mailsift_model_messages\{class="(\w+)"\} (\d+)$', text, re.M)}
    features = int(re.search(r"^mailsift_model_features (\d+)$", text, re.M).group(1))
    return by_verdict, model, features


def stats(args):
    out = subprocess.run([args.mailsift, "--db", args.db, "stats", "--json"], check=True, capture_output=True)
    return json.loads(out.stdout)["messages"]


def raw_checks(args, con):
    status, headers, body = con.request("GET", "/status")
    check(status == 401 and b"login-form" in body, "GET /status without a session: 401 and the sign-in form", status)
    csp = headers.get("Content-Security-Policy", "")
    check("script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp,
          "Content-Security-Policy without inline script, frame-ancestors 'none'", csp)
    check(headers.get("X-Content-Type-Options") == "nosniff", "X-Content-Type-Options: nosniff")
    check(headers.get("Strict-Transport-Security") == "max-age=31536000",
          "under TLS, Strict-Transport-Security: max-age=31536000", headers.get("Strict-Transport-Security"))
    status, _, _ = con.request("GET", "/api/status")
    check(status == 401, "GET /api/status without a session: 401", status)

    # Plain HTTP to the TLS port gets no page.
    try:
        c = http.client.HTTPConnection(con.host, con.port, timeout=10)
        c.request("GET", "/status")
        plain = c.getresponse().status
    except (OSError, http.client.HTTPException):
        plain = None
    check(plain is None, "plain HTTP to the console's TLS port is not served", plain)

    status, cookie, token, csrf = con.login(args.admin[0], "not the password")
    check(status == 401 and not cookie, "a wrong password: 401 and no cookie", status)
    status, cookie, token, csrf = con.login(*args.admin)
    flags = [f.strip() for f in cookie.split(";")]
    check(status == 200 and "HttpOnly" in flags and "SameSite=Strict" in flags and "Secure" in flags,
          "signing in sets the session cookie HttpOnly, SameSite=Strict, Secure", cookie)
    spam = open(os.path.join(args.messages, "spam_investment.eml"), "rb").read()
    before = stats(args)
    status, _, _ = con.request("POST", "/api/learn?class=spam", spam, {"Cookie": token})
    check(status == 403, "POST /api/learn without the CSRF token: 403", status)
    status, _, _ = con.request("POST", "/api/learn?class=spam", spam, {"Cookie": token, "X-CSRF-Token": "x" * 43})
    check(status == 403, "POST /api/learn with a wrong CSRF token: 403", status)
    check(stats(args) == before, "and nothing was learned (mailsift stats)", f"{before} -> {stats(args)}")

    # A body over the limit is refused from its Content-Length, before it is read.
    with socket.create_connection((con.host, con.port), timeout=60) as raw:
        with con.ctx.wrap_socket(raw, server_hostname=con.host) as tls:
            tls.sendall((f"POST /api/scan HTTP/1.1\r\nHost: {con.host}\r\nCookie: {token}\r\n"
                         f"X-CSRF-Token: {csrf}\r\nContent-Length: {args.max_body + 1}\r\n\r\n").encode())
            reply = b""
            while b"\r\n\r\n" not in reply:
                more = tls.recv(4096)
                if not more:
                    break
                reply += more
            reply = reply.decode(errors="replace")
    check(reply.startswith("HTTP/1.1 413"), "a request body over the limit: 413 from its Content-Length", reply[:40])
    # A sign-in, open to anybody, takes 4 KiB, not a message's size.
    status, _, _ = con.request("POST", "/api/login", json.dumps({"name": "x", "password": "p" * 5000}),
                               {"Content-Type": "application/json"})
    check(status == 413, "a sign-in body over 4 KiB: 413", status)
    check("frame-ancestors 'none'" in reply and "nosniff" in reply, "the 413 carries the security headers", reply)
    status, headers, _ = con.request("GET", "/api/status", None, {"Cookie": token, "X-Padding": "p" * 9000})
    check(status == 431, "request headers over 8 KiB: 431", status)
    check("frame-ancestors 'none'" in headers.get("Content-Security-Policy", ""),
          "the 431 carries the security headers", headers)

    # Requests are paced: 50 a second after a burst of 50, so 150 in a row take at
    # least two seconds (a lower bound: a busy machine only makes it longer).
    c = http.client.HTTPSConnection(con.host, con.port, context=con.ctx, timeout=60)
    started = time.monotonic()
    answered = 0
    for _ in range(150):
        c.request("GET", "/api/session", headers={"Cookie": token})
        r = c.getresponse()
        r.read()
        answered += r.status == 200
    took = time.monotonic() - started
    c.close()
    check(answered == 150 and took >= 1.9, "150 requests at once are all answered, paced to 50 a second",
          f"{answered} answered in {took:.2f} s")

    # Connections are bounded, and idle ones that never signed in go first (console_connections.py).
    connection_checks(check, con, token, args.admin)

    _, _, vtoken, vcsrf = con.login(*args.viewer)
    status, _, _ = con.request("POST", "/api/learn?class=spam", spam, {"Cookie": vtoken, "X-CSRF-Token": vcsrf})
    check(status == 403, "a viewer's learn, CSRF token and all: 403", status)
    before = stats(args)
    status, _, body = con.request("POST", "/api/scan", spam, {"Cookie": vtoken, "X-CSRF-Token": vcsrf})
    check(status == 200 and b'"verdict"' in body and stats(args) == before,
          "a viewer's scan: 200, a verdict, and nothing learned (a scan changes nothing)", status)
    status, _, _ = con.request("POST", "/api/correct", json.dumps({"signature": "0" * 32, "class": "spam"}),
                               {"Cookie": vtoken, "X-CSRF-Token": vcsrf, "Content-Type": "application/json"})
    check(status == 403, "a viewer's correction: 403", status)


def browser(args):
    o = webdriver.ChromeOptions()
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1280,1000", "--ignore-certificate-errors", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync"]:
        o.add_argument(a)
    o.binary_location = "/usr/bin/chromium"
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def shot(d, args, name):
    d.save_screenshot(os.path.join(args.shots, name + ".png"))


def text_of(d, id_):
    return d.find_element(By.ID, id_).text


def no_alert(d):
    try:
        d.switch_to.alert
        return False
    except NoAlertPresentException:
        return True


def fetch(d, path, method="GET", csrf=None, body=None):
    """A request from the page itself (its cookie, its origin); returns the status."""
    return d.execute_async_script("""
        const [path, method, csrf, body, done] = arguments;
        const headers = {};
        if (csrf) headers['X-CSRF-Token'] = csrf;
        fetch(path, {method, headers, body, credentials: 'same-origin'}).then(r => done(r.status), e => done(-1));
    """, path, method, csrf, body)


def page_get(d, path):
    """A GET from the page itself (its session cookie): [status, Content-Disposition, body text]."""
    return d.execute_async_script("""
        const [path, done] = arguments;
        fetch(path, {credentials: 'same-origin'})
            .then(async r => done([r.status, r.headers.get('Content-Disposition'), await r.text()]),
                  e => done([-1, null, String(e)]));
    """, path)


def page_json(d, path):
    """page_get's JSON body; None unless 200."""
    status, _, body = page_get(d, path)
    return json.loads(body) if status == 200 else None


def sign_in(d, w, name, password):
    d.find_element(By.ID, "login-name").clear()
    d.find_element(By.ID, "login-name").send_keys(name)
    d.find_element(By.ID, "login-password").clear()
    d.find_element(By.ID, "login-password").send_keys(password)
    d.find_element(By.ID, "login-submit").click()


def sign_in_patiently(d, w, name, password):
    """Signs in as a person would while sign-ins are being rationed: on "too
    many sign-ins right now" (429, the budget of password checks that browsers
    new to an account share), tries again a few seconds later."""
    deadline = time.monotonic() + 90
    while True:
        sign_in(d, w, name, password)
        w.until(lambda d: d.find_element(By.ID, "page-status").is_displayed() or text_of(d, "login-error") != "")
        if d.find_element(By.ID, "page-status").is_displayed():
            return
        if "too many sign-ins right now" not in text_of(d, "login-error") or time.monotonic() > deadline:
            raise AssertionError("cannot sign in as " + name + ": " + text_of(d, "login-error"))
        time.sleep(5)


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


def browser_checks(args):
    d = browser(args)
    w = WebDriverWait(d, 40)
    try:
        d.get(args.base + "/status")
        w.until(EC.visibility_of_element_located((By.ID, "login-form")))
        shot(d, args, "01-sign-in")
        check(not d.find_element(By.ID, "page-status").is_displayed(), "browser: without a session, the sign-in form")
        check(not d.find_element(By.ID, "nav").is_displayed(), "browser: and no navigation before signing in")

        sign_in(d, w, args.admin[0], "wrong password")
        try:
            w.until(lambda d: text_of(d, "login-error") != "")
            ok = "wrong name or password" in text_of(d, "login-error")
        except TimeoutException:
            ok = False
        check(ok and not d.find_element(By.ID, "page-status").is_displayed(),
              "browser: a wrong password is refused with a message")

        sign_in_patiently(d, w, *args.admin)
        w.until(EC.visibility_of_element_located((By.ID, "page-status")))
        w.until(lambda d: text_of(d, "status-total") not in ("", "–"))
        by_verdict, model, features = metrics(args.metrics)
        shown = {v: text_of(d, "status-" + v) for v in ("spam", "unsure", "ham", "skipped", "error")}
        total = text_of(d, "status-total")
        check(total == str(sum(by_verdict.values())) and total == str(args.expect_messages),
              f"browser: the status page shows the {args.expect_messages} messages /metrics counts",
              f"page {total}, metrics {by_verdict}")
        check(all(shown[v] == str(by_verdict.get(v, 0)) for v in shown),
              "browser: each verdict's count on the status page is /metrics' count", f"page {shown}, metrics {by_verdict}")
        check(text_of(d, "status-model-spam") == str(model["spam"]) and
              text_of(d, "status-model-ham") == str(model["ham"]) and
              text_of(d, "status-model-features") == str(features),
              "browser: the model's size on the status page is /metrics'")
        bars = d.find_elements(By.CSS_SELECTOR, "#chart svg rect.bar")
        check(len(bars) > 0, "browser: the chart of the last hour draws the messages", len(bars))
        drawn_verdicts = sum(int(b.get_attribute("data-count")) for b in bars)
        drawn_actions = sum(int(b.get_attribute("data-count"))
                            for b in d.find_elements(By.CSS_SELECTOR, "#chart-actions svg rect.bar"))
        check(drawn_verdicts == args.expect_messages and drawn_actions == args.expect_messages,
              "browser: the charts by verdict and by action each count every message of the hour",
              f"{drawn_verdicts}, {drawn_actions}")
        shot(d, args, "02-status")

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

        # History: what Postfix delivered, with the markup Subject as text, and a correction by click.
        d.find_element(By.CSS_SELECTOR, "a[data-page=history]").click()
        w.until(EC.visibility_of_element_located((By.ID, "history-rows")))
        def rows(d):
            return d.find_elements(By.CSS_SELECTOR, "#history-rows tr[data-id]")
        def all_there(d):
            if len(rows(d)) >= args.expect_messages:
                return True
            d.find_element(By.ID, "history-go").click()  # the recorder writes every second
            time.sleep(0.5)
            return False
        w.until(all_there)
        check(len(rows(d)) == args.expect_messages, "browser: the history lists every message Postfix delivered",
              len(rows(d)))
        subjects = [r.find_element(By.CSS_SELECTOR, "td.subject").text for r in rows(d)]
        check("<img src=x onerror=alert(1)> you won" in subjects,
              "browser: a Subject of <img src=x onerror=alert(1)> shows as that text in the history", subjects)
        injected = d.execute_script("return document.querySelectorAll('main img, main script').length")
        check(no_alert(d) and injected == 0, "browser: and runs nothing", injected)
        shot(d, args, "05-history")
        d.find_element(By.ID, "history-search").send_keys("meeting")
        d.find_element(By.ID, "history-go").click()
        w.until(lambda d: len(rows(d)) == 1)
        row = rows(d)[0]
        signature = row.get_attribute("data-signature")
        # One click opens its explanation, as mailsiftd kept it: the parts add up to the score.
        shown_p = row.find_element(By.CSS_SELECTOR, "td.verdict-cell .probability").text
        row.find_element(By.CSS_SELECTOR, "button.why").click()
        w.until(EC.visibility_of_element_located((By.ID, "explain-panel")))
        w.until(lambda d: text_of(d, "explain-signature") == signature)
        parts = [float(tr.find_elements(By.TAG_NAME, "td")[0].text)
                 for tr in d.find_elements(By.CSS_SELECTOR, "#explain-sum table.sum:not(.nb-sum) tr")]
        check(len(parts) == 4 and abs(sum(parts[:3]) - parts[3]) < 3e-4,
              "browser: the message's explanation opens from the history and its parts add up to its log-odds", parts)
        # The naive-Bayes input too: prior, the features listed, the others, to the log-odds the sum above names.
        nb_parts = [float(tr.find_elements(By.TAG_NAME, "td")[0].text)
                    for tr in d.find_elements(By.CSS_SELECTOR, "#explain-sum table.nb-sum tr")]
        nb_named = re.search(r"log-odds (-?[0-9.]+)", text_of(d, "explain-sum"))
        check(len(nb_parts) == 4 and abs(sum(nb_parts[:3]) - nb_parts[3]) < 3e-4 and nb_named and
              abs(float(nb_named.group(1)) - nb_parts[3]) < 1e-3,
              "browser: and its naive-Bayes part adds up to the naive-Bayes log-odds it shows", (nb_parts, nb_named and nb_named.group(0)))
        check(text_of(d, "explain-probability") == shown_p, "browser: and its P(spam) is the one in the history",
              f"{text_of(d, 'explain-probability')} vs {shown_p}")
        slots = d.find_elements(By.CSS_SELECTOR, "#explain-sum table.reasons td.mono")
        check(len(slots) > 0 and all(t.text for t in slots), "browser: it names the strongest slots",
              [t.text for t in slots][:4])
        shot(d, args, "06-history-explanation")
        before = stats(args)
        d.find_element(By.ID, "explain-spam").click()  # Correct as spam, from the explanation
        w.until(lambda d: text_of(d, "correct-result") != "" or text_of(d, "history-error") != "")
        after = stats(args)
        check("corrected to spam: learned" in text_of(d, "correct-result") and after["spam"] == before["spam"] + 1,
              "browser: Correct as spam on a delivered message trains it as spam once (mailsift stats)",
              f"{text_of(d, 'correct-result')} {text_of(d, 'history-error')}; {before} -> {after}")
        row.find_element(By.CSS_SELECTOR, "button.correct[data-class=spam]").click()
        w.until(lambda d: "already learned" in text_of(d, "correct-result"))
        check(stats(args) == after, "browser: correcting it again the same way changes nothing")
        row.find_element(By.CSS_SELECTOR, "button.correct[data-class=ham]").click()
        w.until(lambda d: "its correction the other way undone" in text_of(d, "correct-result"))
        moved = stats(args)
        check(moved["spam"] == before["spam"] and moved["ham"] == before["ham"] + 1,
              "browser: and the other way replaces it: the spam correction undone, learned as ham", f"{before} -> {moved}")
        # The correction stays on its line after a reload: to what, by whom, when.
        corrected_at = time.time()
        d.refresh()
        line_of = f"#history-rows tr[data-signature='{signature}']"
        w.until(lambda d: d.find_elements(By.CSS_SELECTOR, line_of))
        cell = d.find_element(By.CSS_SELECTOR, line_of + " td.correction").text
        check(cell.startswith(f"→ ham by console:{args.admin[0]}, ") and
              "corrected" in d.find_element(By.CSS_SELECTOR, line_of).get_attribute("class"),
              "browser: after a reload, the corrected line shows to what and by whom (→ ham by console:admin, its time)", cell)
        listed = page_json(d, "/api/history?q=meeting")
        c = listed["entries"][0]["corrected"] if listed and len(listed["entries"]) == 1 else None
        check(c is not None and c.get("class") == "ham" and c.get("by") == f"console:{args.admin[0]}" and
              abs(c.get("at", 0) - corrected_at) < 120,
              f"the API after a reload: the line's corrected is ham, by console:{args.admin[0]}, at the time", c)
        explained = page_json(d, "/api/explanation?signature=" + signature)
        check(explained is not None and explained.get("corrected") == c, "and /api/explanation gives the same correction",
              explained and explained.get("corrected"))
        out = subprocess.run([args.mailsift, "--db", args.db, "correct", "--ham", "--signature", signature],
                             capture_output=True, text=True)
        check(stats(args) == moved, "browser: mailsift correct --signature agrees it is learned as ham",
              out.stdout + out.stderr)
        shot(d, args, "07-history-corrected")
        # Issue 41, item 7: Undo last correction, twice, from the line's details.
        undo_checks(d, w, args, check, page_json, stats, shot, signature, {"before": before, "spam": after, "moved": moved})
        burst_checks(d, w, args)
        try:
            history_checks(d, w, args)
        except Exception as e:  # a check that cannot even run is a failure; the others go on
            check(False, "the history's filter checks ran", repr(e))
        glance_checks(d, w, args, check, page_json, shot)  # issue 41, item 8: at 1,280x800

        d.find_element(By.CSS_SELECTOR, "a[data-page=config]").click()
        w.until(lambda d: text_of(d, "config-database") != "")
        shown = text_of(d, "config-database")
        check(shown.startswith("postgresql://") if args.db.startswith("postgresql:") else args.db in shown,
              "browser: the configuration page names the database", shown)
        defaults = {tr.find_element(By.TAG_NAME, "th").text: tr.find_element(By.TAG_NAME, "td").text
                    for tr in d.find_elements(By.CSS_SELECTOR, "#config-defaults tr")}
        check(defaults.get("limits.max_header_bytes") == "64K" and defaults.get("model") == "linear" and
              "limits.max_message_bytes" not in defaults,
              "browser: and shows the settings left at their defaults with their values",
              {k: defaults.get(k) for k in ("limits.max_header_bytes", "model", "limits.max_message_bytes")})
        shot(d, args, "08-configuration")
        user_checks(d, w, args)

        # A session the server does not know (expired, or forged) is no session.
        d.delete_cookie("mailsift_session")
        d.add_cookie({"name": "mailsift_session", "value": "A" * 43, "path": "/", "secure": True})
        d.get(args.base + "/status")
        w.until(EC.visibility_of_element_located((By.ID, "login-form")))
        check(fetch(d, "/api/status") == 401, "browser: an unknown or expired session gets 401 and the sign-in form")

        sign_in_patiently(d, w, *args.admin)
        w.until(EC.visibility_of_element_located((By.ID, "page-status")))
        d.find_element(By.ID, "sign-out").click()
        w.until(EC.visibility_of_element_located((By.ID, "login-form")))
        check(fetch(d, "/api/status") == 401, "browser: after signing out, the API answers 401")
        left = (d.find_element(By.ID, "login-name").get_attribute("value"),
                d.find_element(By.ID, "login-password").get_attribute("value"))
        check(left == ("", "") and not d.find_element(By.ID, "nav").is_displayed(),
              "browser: and the sign-in form is blank, without the navigation", left)

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
        logs = [e for e in d.get_log("browser") if "Content Security Policy" in e.get("message", "")]
        check(not logs, "browser: no Content-Security-Policy violation on any page", logs[:2])

        # A flood of wrong passwords from ever-new addresses uses up the checks
        # that browsers new to an account share; this browser, which signed in
        # as the viewer before, is still let through on its device cookie.
        d.find_element(By.ID, "sign-out").click()
        w.until(EC.visibility_of_element_located((By.ID, "login-form")))
        # The shared budget refills (0.1 checks a second): after the first 429 the
        # guesses go on until one is checked again (401), which leaves the budget
        # empty, so the fresh sign-in right after it finds nothing to check with
        # for about ten seconds, however slowly the machine ran what came before.
        con = Console(args.base, args.ca)
        statuses = []
        for i in range(80):
            statuses.append(con.login(args.viewer[0], "a wrong guess", source=f"127.0.9.{10 + i}")[0])
            if statuses[-1] == 401 and 429 in statuses:
                break
            if statuses[-1] == 429:
                time.sleep(0.5)
        fresh = con.login(*args.viewer, source="127.0.9.200")[0]
        check(429 in statuses and statuses[-1] == 401 and fresh == 429,
              "a flood of guesses from new addresses leaves no check for a sign-in without a device cookie (429)",
              (statuses, fresh))
        sign_in(d, w, *args.viewer)
        try:
            w.until(EC.visibility_of_element_located((By.ID, "page-status")))
            ok = True
        except TimeoutException:
            ok = False
        check(ok, "browser: the browser that signed in before is let through the flood",
              text_of(d, "login-error"))
    finally:
        d.quit()


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


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--base", required=True)
    p.add_argument("--metrics", required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--shots", required=True)
    p.add_argument("--admin", nargs=2, required=True)
    p.add_argument("--viewer", nargs=2, required=True)
    p.add_argument("--messages", required=True)
    p.add_argument("--mailsift", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--expect-messages", type=int, required=True)
    p.add_argument("--max-body", type=int, required=True)
    p.add_argument("--smtp", required=True, help="Postfix's smtpd, HOST:PORT: where the burst is sent")
    p.add_argument("--postfix-log", required=True, help="Postfix's maillog_file: the queue IDs it gave")
    args = p.parse_args()
    con = Console(args.base, args.ca)
    try:
        raw_checks(args, con)
    except Exception as e:  # a check that cannot even run is a failure
        check(False, "the HTTPS checks ran", repr(e))
    try:
        browser_checks(args)
    except Exception as e:
        check(False, "the browser checks ran", repr(e))
    print("# console_check.py finished")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
