"""console_check.py's browser checks of signing in and out: the sign-in form
without a session, a wrong password refused, an unknown or expired session,
signing out; and a flood of guesses from new addresses, which leaves no
password check for a browser new to the account while the one that signed in
before is let through.
"""
import time

from console_common import Console, check, fetch, shot, sign_in, sign_in_patiently, text_of
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC


def sign_in_checks(d, w, args):
    """The sign-in form, a wrong password, then signing in as the admin."""
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


def session_end_checks(d, w, args):
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


def flood_checks(d, w, args):
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
