#!/usr/bin/env python3
"""Calibration and lam% of a spam filter's probabilities, for accuracy.sh.

Input (stdin or file arguments): the lines roc.py reads, LABEL<TAB>P<TAB>VERDICT,
with P the filter's probability of spam in [0, 1] (not a log-odds).

Output: "key value" lines, like roc.py:
  ece                expected calibration error over 10 equal-width bins of P:
                     sum over bins of (messages in bin / all) * |mean P - spam share|
  worst_bin          the bin of at least 30 messages whose mean P is furthest from
                     its spam share, as LOW-HIGH (or n/a when no bin has 30)
  worst_bin_gap      that distance
  worst_bin_n        messages in that bin
  lam_pct            TREC's logistic average misclassification, 100 * logit^-1 of
                     the mean of logit(hm) and logit(sm), hm the share of ham whose
                     verdict is spam, sm the share of spam whose verdict is not spam,
                     each as (k + 1/2)/(n + 1) so that 0 stays finite (the same
                     definition as mailsift evaluate)
"""
import fileinput
import math
import sys


def logit(p):
    return math.log(p / (1.0 - p))


def main():
    bins = [[0, 0.0, 0] for _ in range(10)]  # messages, sum of P, spam
    ham = spam = ham_as_spam = spam_missed = 0
    for lineno, line in enumerate(fileinput.input(), 1):
        line = line.rstrip("\n")
        if not line:
            continue
        try:
            label, p, verdict = line.split("\t")
            p = float(p)
        except ValueError:
            sys.exit(f"calibration.py: line {lineno}: expected LABEL<TAB>P<TAB>VERDICT: {line!r}")
        if label not in ("spam", "ham") or not 0.0 <= p <= 1.0:
            sys.exit(f"calibration.py: line {lineno}: bad label or probability: {line!r}")
        b = bins[min(int(p * 10), 9)]
        b[0] += 1
        b[1] += p
        if label == "spam":
            b[2] += 1
            spam += 1
            spam_missed += verdict != "spam"
        else:
            ham += 1
            ham_as_spam += verdict == "spam"
    n = ham + spam
    ece = 0.0
    worst = None  # (gap, bin index)
    for i, (m, psum, s) in enumerate(bins):
        if m == 0:
            continue
        gap = abs(psum / m - s / m)
        ece += m / n * gap
        if m >= 30 and (worst is None or gap > worst[0]):
            worst = (gap, i)
    hm = (ham_as_spam + 0.5) / (ham + 1)
    sm = (spam_missed + 0.5) / (spam + 1)
    z = (logit(hm) + logit(sm)) / 2
    print(f"ece {ece:.4f}")
    if worst:
        print(f"worst_bin {worst[1] / 10:.1f}-{(worst[1] + 1) / 10:.1f}")
        print(f"worst_bin_gap {worst[0]:.3f}")
        print(f"worst_bin_n {bins[worst[1]][0]}")
    else:
        print("worst_bin n/a\nworst_bin_gap n/a\nworst_bin_n 0")
    print(f"lam_pct {100.0 / (1.0 + math.exp(-z)):.4f}")


if __name__ == "__main__":
    main()
