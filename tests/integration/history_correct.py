"""console_check.py's browser checks of the history of what Postfix delivered:
every message listed, a Subject of markup shown as text; a message's
explanation, whose parts add up to its score; Correct as spam, then ham, from
the page (mailsift stats), and the correction on its line after a reload, in
the API and in /api/explanation. Returns what history_undo.py's checks start
from.
"""
import re
import subprocess
import time

from console_common import check, no_alert, page_json, shot, stats, text_of
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC


def correction_checks(d, w, args):
    """Returns the corrected message's signature and mailsift stats' messages
    before the spam correction, after it, and after the ham one (moved)."""
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
    return signature, {"before": before, "spam": after, "moved": moved}
