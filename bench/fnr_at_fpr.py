#!/usr/bin/env python3
"""Operating-point metrics that roc.py does not give: the false-negative rate at a
false-positive rate of at most PCT percent (bench/accuracy.sh).

Input (stdin or file arguments): the same lines roc.py reads,
LABEL<TAB>SCORE<TAB>VERDICT with LABEL spam|ham and SCORE higher = spammier
(VERDICT is ignored here; roc.py counts the verdicts).

Options:
  --fpr PCT        (repeatable) false-negative rate at a false-positive rate of
                   at most PCT percent. With k = floor(PCT/100 * n_ham), the
                   threshold t is the (k+1)-th highest ham score, i.e. the lowest
                   threshold with at most k ham strictly above it (t = -inf when
                   k >= n_ham). A message counts as spam when its score is
                   strictly above t, so spam tied with t count as missed.
  --threshold T    (repeatable) false positives and false negatives when
                   "spam" means score >= T.

Output: "key value" lines, like roc.py. For --fpr 0.1 the keys are
  fnr_at_fpr_0.1_pct  100 * spam not strictly above t / n_spam
  fn_at_fpr_0.1       that count of spam
  fp_at_fpr_0.1       ham strictly above t (at most k)
  thr_at_fpr_0.1      t
and for --threshold 0.9:
  fp_at_ge_0.9 fp_at_ge_0.9_pct fn_at_ge_0.9 fn_at_ge_0.9_pct
"""
import argparse
import fileinput
import math
import sys
from fractions import Fraction


def pct(count, total):
    return 100.0 * count / total if total else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fpr", action="append", default=[], metavar="PCT")
    ap.add_argument("--threshold", action="append", default=[], metavar="T")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()

    spam, ham = [], []
    for lineno, line in enumerate(fileinput.input(args.files), 1):
        line = line.rstrip("\n")
        if not line:
            continue
        try:
            label, score, _verdict = line.split("\t")
            score = float(score)
        except ValueError:
            sys.exit(f"fnr_at_fpr.py: line {lineno}: "
                     f"expected LABEL<TAB>SCORE<TAB>VERDICT: {line!r}")
        if label == "spam":
            spam.append(score)
        elif label == "ham":
            ham.append(score)
        else:
            sys.exit(f"fnr_at_fpr.py: line {lineno}: bad label: {line!r}")

    n_spam, n_ham = len(spam), len(ham)
    ham_desc = sorted(ham, reverse=True)
    out = []
    for p in args.fpr:
        # Exact arithmetic: floor(0.001 * 1000) must be 1, not 0.
        k = math.floor(Fraction(p) / 100 * n_ham)
        thr = ham_desc[k] if k < n_ham else -math.inf
        fn = sum(1 for s in spam if not s > thr)
        fp = sum(1 for h in ham if h > thr)
        out += [
            (f"fnr_at_fpr_{p}_pct", f"{pct(fn, n_spam):.2f}"),
            (f"fn_at_fpr_{p}", fn),
            (f"fp_at_fpr_{p}", fp),
            (f"thr_at_fpr_{p}", repr(thr)),
        ]
    for t in args.threshold:
        tv = float(t)
        fp = sum(1 for h in ham if h >= tv)
        fn = sum(1 for s in spam if not s >= tv)
        out += [
            (f"fp_at_ge_{t}", fp),
            (f"fp_at_ge_{t}_pct", f"{pct(fp, n_ham):.2f}"),
            (f"fn_at_ge_{t}", fn),
            (f"fn_at_ge_{t}_pct", f"{pct(fn, n_spam):.2f}"),
        ]
    for key, value in out:
        print(f"{key} {value}")


if __name__ == "__main__":
    main()
