#!/usr/bin/env bash
# mailsift evaluate --plot writes three SVG files that are well-formed XML with
# the expected data series (checked with python3's XML parser, not our code).
# usage: plots_test.sh MAILSIFT REPO_ROOT
set -euo pipefail
MAILSIFT=$1
ROOT=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/mailsift-plots.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$MAILSIFT" --config /dev/null --db "$work/unused.db" evaluate --index "$ROOT/tests/data/corpus/index" --folds 5 \
    --plot "$work/plots" >/dev/null
python3 - "$work/plots" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = {"s": "http://www.w3.org/2000/svg"}
d = sys.argv[1]
passed = failed = 0
def check(cond, what):
    global passed, failed
    print(("ok - " if cond else "not ok - ") + what)
    if cond: passed += 1
    else: failed += 1
def load(name):
    try:
        return ET.parse(f"{d}/{name}").getroot()
    except Exception as e:
        check(False, f"{name} is well-formed XML ({e})")
        return None
roc = load("roc.svg")
if roc is not None:
    check(roc.tag == "{http://www.w3.org/2000/svg}svg", "roc.svg is an SVG document")
    curve = roc.find(".//s:polyline[@id='roc-curve']", ns)
    points = curve.get("points").split() if curve is not None else []
    # 10 messages, all spam above all ham: (0,0), the spam score steps, then the ham steps.
    check(len(points) >= 3, f"roc.svg has the ROC curve with its points ({len(points)})")
hist = load("histogram.svg")
if hist is not None:
    spam = hist.findall(".//s:g[@id='spam-bars']/s:rect", ns)
    ham = hist.findall(".//s:g[@id='ham-bars']/s:rect", ns)
    check(len(spam) == 20 and len(ham) == 20, f"histogram.svg has 20 spam and 20 ham bars ({len(spam)}, {len(ham)})")
    total = sum(int(r.find("s:title", ns).text) for r in spam + ham)
    check(total == 10, f"histogram.svg bars count all 10 messages ({total})")
rel = load("reliability.svg")
if rel is not None:
    check(rel.find(".//s:line[@id='diagonal']", ns) is not None, "reliability.svg has the diagonal")
    pts = rel.findall(".//s:g[@id='reliability-points']/s:circle", ns)
    check(len(pts) == 2, f"reliability.svg has a point for each non-empty bin ({len(pts)}: all ham near 0, all spam near 1)")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
