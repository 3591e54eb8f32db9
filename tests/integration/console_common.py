"""What console_check.py's checks share: check(), which prints one "ok - ..."
or "not ok - ..." line and counts the failures (FAILED); Console, raw HTTPS to
the console; stats(), the model's counts from mailsift stats; and the browser's
helpers (a headless Chromium, screenshots, requests from the page, signing in).
It checks nothing itself.
"""
import http.client
import json
import os
import re
import ssl
import subprocess
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

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


def stats(args):
    out = subprocess.run([args.mailsift, "--db", args.db, "stats", "--json"], check=True, capture_output=True)
    return json.loads(out.stdout)["messages"]


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
