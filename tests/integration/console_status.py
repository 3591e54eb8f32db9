"""console_check.py's browser checks of the status page against /metrics (the
messages by verdict, the model's size, the charts of the last hour), and of
the configuration page (the database, the settings left at their defaults).
"""
import re
import urllib.request

from console_common import check, shot, text_of
from selenium.webdriver.common.by import By


def metrics(url):
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    by_verdict = {}
    for m in re.finditer(r'^mailsift_messages_total\{verdict="(\w+)",action="\w+"\} (\d+)$', text, re.M):
        by_verdict[m.group(1)] = by_verdict.get(m.group(1), 0) + int(m.group(2))
    model = {k: int(v) for k, v in re.findall(r'^mailsift_model_messages\{class="(\w+)"\} (\d+)$', text, re.M)}
    features = int(re.search(r"^mailsift_model_features (\d+)$", text, re.M).group(1))
    return by_verdict, model, features


def status_checks(d, w, args):
    """The status page, signed in as the admin, against /metrics."""
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


def config_checks(d, w, args):
    """The configuration page."""
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
