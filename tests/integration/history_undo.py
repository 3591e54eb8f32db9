"""Issue 41, item 7: an undo that undoes. Called by console_check.py's browser
checks right after it corrected the line of the "meeting" message to spam, and
then to ham, from the page: the details list that trail, the spam correction
undone by the ham one that replaced it (issue 58); Undo last correction takes
back the ham correction (the counts as before any), shown struck through with
who undid it, the line's correction cell following; with none left standing,
the button goes. Undoing is not correcting the other way: the counts return.
At the end the message is corrected to ham again with the command line, so the
checks after these find the model as they did before. Gets console_check.py's
check(), page_json(), stats() and shot()."""

import subprocess

from selenium.webdriver.common.by import By

UNDONE = "#explain-trail li.undone"


def undo_checks(d, w, args, check, page_json, stats, shot, signature, counts):
    """counts: mailsift stats' messages before the spam correction, after it, and after the ham one (moved)."""
    try:
        undo_page(d, w, args, check, page_json, stats, shot, signature, counts)
    except Exception as e:  # a check that cannot even run is a failure; the others go on
        check(False, "the undo checks ran", repr(e))
    # The model as the checks after these expect it: the message learned as ham.
    out = subprocess.run([args.mailsift, "--db", args.db, "correct", "--ham", "--signature", signature],
                         capture_output=True, text=True)
    check(stats(args) == counts["moved"], "after the undos, mailsift correct --ham learns it as ham again",
          out.stdout + out.stderr)


def text_of(d, id_):
    return d.find_element(By.ID, id_).text


def undo_page(d, w, args, check, page_json, stats, shot, signature, counts):
    admin = f"console:{args.admin[0]}"
    line_of = f"#history-rows tr[data-signature='{signature}']"
    w.until(lambda d: d.find_elements(By.CSS_SELECTOR, line_of))
    d.find_element(By.CSS_SELECTOR, line_of + " button.why").click()
    w.until(lambda d: d.find_element(By.ID, "explain-panel").is_displayed() and
            text_of(d, "explain-signature") == signature)
    trail = [li.text for li in d.find_elements(By.CSS_SELECTOR, "#explain-trail li")]
    struck = [li.text for li in d.find_elements(By.CSS_SELECTOR, UNDONE)]
    # The ham correction replaced the spam one (issue 58): the spam one is undone, by the admin who corrected again.
    check(len(trail) == 2 and trail[0].startswith(f"→ spam by {admin}, ") and trail[1].startswith(f"→ ham by {admin}, ")
          and len(struck) == 1 and struck[0].startswith(f"→ spam by {admin}, ") and f"undone by {admin}, " in struck[0],
          "browser: the line's details list its trail, oldest first: → spam, undone when → ham replaced it", trail)
    undo = d.find_element(By.ID, "explain-undo")
    check(undo.is_displayed(), "browser: with a correction standing, an admin sees Undo last correction")

    d.execute_script("document.getElementById('correct-result').textContent = ''")
    undo.click()
    says = "undid its correction to ham"
    w.until(lambda d: says in text_of(d, "correct-result") or text_of(d, "history-error") != "")
    # The panel is drawn again from the server once the answer is in: wait for it.
    w.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, UNDONE)) == 2)
    said = text_of(d, "correct-result") + text_of(d, "history-error")
    check(said.endswith("undid its correction to ham; now not learned") and stats(args) == counts["before"],
          "browser: Undo takes back the ham correction, which replaced the spam one: the counts as before any (mailsift stats)",
          f"{said}; {counts['before']} vs {stats(args)}")
    last = d.find_elements(By.CSS_SELECTOR, UNDONE)[-1]
    line = d.execute_script("return getComputedStyle(arguments[0].querySelector('.made')).textDecorationLine", last)
    check(last.text.startswith(f"→ ham by {admin}, ") and f"undone by {admin}, " in last.text and "line-through" in line,
          "browser: the undone correction stays in the trail, struck through, with who undid it and when", (last.text, line))
    d.execute_script("document.getElementById('explain-trail').scrollIntoView({block: 'center'})")
    shot(d, args, "07a-history-undone")
    w.until(lambda d: d.find_element(By.CSS_SELECTOR, line_of + " td.correction").text == "")
    row = d.find_element(By.CSS_SELECTOR, line_of)
    check("corrected" not in row.get_attribute("class") and text_of(d, "explain-corrected") == "no" and
          not d.find_element(By.ID, "explain-undo").is_displayed(),
          "browser: with none standing, the line's correction cell is empty and Undo is gone",
          (row.get_attribute("class"), text_of(d, "explain-corrected")))
    x = page_json(d, "/api/explanation?signature=" + signature)
    trail = x["corrections"] if x else None
    check(x is not None and x["corrected"] is None and len(trail) == 2 and
          all(c["undone_by"] == admin and c["undone_at"] and not c["undoable"] for c in trail),
          f"the API: both corrections in the trail, undone by {admin}, and none standing", trail)
    listed = page_json(d, "/api/history?q=meeting")
    check(listed and len(listed["entries"]) == 1 and listed["entries"][0]["corrected"] is None,
          "the API: the line's corrected is null in the history", listed and listed["entries"])
    # Nothing left to undo: 409 with the reason, the counts untouched (a POST from the page, its token).
    got = d.execute_async_script("""
        const [signature, done] = arguments;
        fetch('/api/undo', {method: 'POST', credentials: 'same-origin',
            headers: {'X-CSRF-Token': state.csrf, 'Content-Type': 'application/json'}, body: JSON.stringify({signature})})
          .then(async r => done([r.status, await r.text()]), e => done([-1, String(e)]));
    """, signature)
    check(got[0] == 409 and "no correction of this message to undo" in got[1] and stats(args) == counts["before"],
          "browser: an undo with none left standing is refused (409) and changes nothing", got)
