#!/usr/bin/env python3
"""The console's checks for console_test.sh: raw HTTPS requests for the rules a
browser hides (headers, cookie flags, limits, CSRF, roles), then a real
headless Chromium through Selenium for what a person does. Prints one
"ok - ..." or "not ok - ..." line per check and "# console_check.py finished"
last; console_test.sh counts them.

This file runs them in their order; the checks are in the modules beside it:
console_https.py (the raw HTTPS rules), console_session.py (signing in and
out), console_status.py (the status page against /metrics, the configuration
page), console_scan.py (scan and learn), history_correct.py, history_undo.py,
history_burst.py, history_filter.py and history_glance.py (the history),
console_users.py (the Users page, and a viewer's role), all with the helpers
of console_common.py.
"""
import argparse
import sys

sys.dont_write_bytecode = True  # the imports below must leave no __pycache__ in the source tree
import console_common  # noqa: E402
from console_common import Console, browser, check, page_json, shot, stats  # noqa: E402
from console_https import raw_checks  # noqa: E402
from console_scan import scan_checks  # noqa: E402
from console_session import flood_checks, session_end_checks, sign_in_checks  # noqa: E402
from console_status import config_checks, status_checks  # noqa: E402
from console_users import user_checks, viewer_checks  # noqa: E402
from history_burst import burst_checks  # noqa: E402
from history_correct import correction_checks  # noqa: E402
from history_filter import history_checks  # noqa: E402
from history_glance import glance_checks  # noqa: E402
from history_undo import undo_checks  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def browser_checks(args):
    d = browser(args)
    w = WebDriverWait(d, 40)
    try:
        sign_in_checks(d, w, args)
        status_checks(d, w, args)
        scan_checks(d, w, args)
        signature, counts = correction_checks(d, w, args)
        # Issue 41, item 7: Undo last correction, twice, from the line's details.
        undo_checks(d, w, args, check, page_json, stats, shot, signature, counts)
        burst_checks(d, w, args)
        try:
            history_checks(d, w, args)
        except Exception as e:  # a check that cannot even run is a failure; the others go on
            check(False, "the history's filter checks ran", repr(e))
        glance_checks(d, w, args, check, page_json, shot)  # issue 41, item 8: at 1,280x800

        config_checks(d, w, args)
        user_checks(d, w, args)

        session_end_checks(d, w, args)
        viewer_checks(d, w, args)
        logs = [e for e in d.get_log("browser") if "Content Security Policy" in e.get("message", "")]
        check(not logs, "browser: no Content-Security-Policy violation on any page", logs[:2])

        flood_checks(d, w, args)
    finally:
        d.quit()


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
    return 1 if console_common.FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
