#!/usr/bin/env python3
"""Ranking and verdict metrics for a spam filter's test-set output.

Input (stdin or file arguments): one line per message, LABEL<TAB>SCORE<TAB>VERDICT,
with LABEL spam|ham, SCORE any real number where higher means spammier, and
VERDICT spam|ham|unsure.

Output: "key value" lines (easy to read and easy for a shell script to parse):
  n_spam n_ham        class sizes
  auc                 area under the ROC curve = P(score(spam) > score(ham)),
                      tied spam/ham pairs counted half (Mann-Whitney U / (n_spam*n_ham))
  one_minus_roca_pct  100 * (1 - auc)
  tied_pairs          spam/ham pairs with equal score (these contribute 0.5 each)
  tied_pairs_pct      ... as a percentage of all n_spam*n_ham pairs
  at_min at_max       messages whose score equals the lowest / highest score seen
                      (shows saturation, e.g. bogofilter spamicity exactly 0 or 1)
  fp fp_pct           ham with verdict spam (count, % of ham)
  fn fn_pct           spam with verdict ham (count, % of spam)
  unsure_spam(_pct)   spam with verdict unsure
  unsure_ham(_pct)    ham with verdict unsure
"""
import fileinput
import sys
from itertools import groupby


def pct(count, total):
    return 100.0 * count / total if total else float("nan")


def main():
    rows = []  # (score, is_spam)
    fp = fn = unsure_spam = unsure_ham = 0
    for lineno, line in enumerate(fileinput.input(), 1):
        line = line.rstrip("\n")
        if not line:
            continue
        try:
            label, score, verdict = line.split("\t")
            score = float(score)
        except ValueError:
            sys.exit(f"roc.py: line {lineno}: expected LABEL<TAB>SCORE<TAB>VERDICT: {line!r}")
        if label not in ("spam", "ham") or verdict not in ("spam", "ham", "unsure"):
            sys.exit(f"roc.py: line {lineno}: bad label or verdict: {line!r}")
        is_spam = label == "spam"
        rows.append((score, is_spam))
        if is_spam:
            fn += verdict == "ham"
            unsure_spam += verdict == "unsure"
        else:
            fp += verdict == "spam"
            unsure_ham += verdict == "unsure"

    n_spam = sum(1 for _, s in rows if s)
    n_ham = len(rows) - n_spam

    # Mann-Whitney: rank all scores ascending, ties get the average of their
    # ranks; the spam rank sum minus its minimum possible value is the number
    # of (spam, ham) pairs ordered correctly, ties counting one half.
    rows.sort(key=lambda r: r[0])
    rank_sum_spam = 0.0
    tied_pairs = 0
    next_rank = 1
    for _, group in groupby(rows, key=lambda r: r[0]):
        group = list(group)
        spam_in_group = sum(1 for _, s in group if s)
        avg_rank = next_rank + (len(group) - 1) / 2.0
        rank_sum_spam += spam_in_group * avg_rank
        tied_pairs += spam_in_group * (len(group) - spam_in_group)
        next_rank += len(group)
    pairs = n_spam * n_ham
    if pairs:
        auc = (rank_sum_spam - n_spam * (n_spam + 1) / 2.0) / pairs
    else:
        auc = float("nan")

    at_min = sum(1 for sc, _ in rows if sc == rows[0][0]) if rows else 0
    at_max = sum(1 for sc, _ in rows if sc == rows[-1][0]) if rows else 0

    out = [
        ("n_spam", n_spam),
        ("n_ham", n_ham),
        ("auc", f"{auc:.6f}"),
        ("one_minus_roca_pct", f"{100.0 * (1.0 - auc):.4f}"),
        ("tied_pairs", tied_pairs),
        ("tied_pairs_pct", f"{pct(tied_pairs, pairs):.4f}"),
        ("at_min", at_min),
        ("at_max", at_max),
        ("fp", fp),
        ("fp_pct", f"{pct(fp, n_ham):.2f}"),
        ("fn", fn),
        ("fn_pct", f"{pct(fn, n_spam):.2f}"),
        ("unsure_spam", unsure_spam),
        ("unsure_spam_pct", f"{pct(unsure_spam, n_spam):.2f}"),
        ("unsure_ham", unsure_ham),
        ("unsure_ham_pct", f"{pct(unsure_ham, n_ham):.2f}"),
    ]
    for key, value in out:
        print(f"{key} {value}")


if __name__ == "__main__":
    main()
