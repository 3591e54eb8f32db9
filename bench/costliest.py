#!/usr/bin/env python3
"""costliest.py - which messages 1-ROCA% is made of (bench/accuracy.sh).

1-ROCA% is the share of misranked spam-ham pairs (a ham scored above a spam, ties
counting half), so one ham scored above every spam costs as much as thousands of
small errors. This script counts, for each message, the misranked pairs it is in:
a ham, the spam scored below it (ties half); a spam, the ham scored above it (ties
half). Sorting and bisection, O(n log n).

Input (stdin or file arguments): the scores files of accuracy.sh,
LABEL<TAB>SCORE<TAB>VERDICT<TAB>P<TAB>PATH, with LABEL spam|ham and SCORE higher =
spammier (VERDICT and P are ignored; a line without a PATH is named by its number).

Output: "key value" lines, like roc.py:
  misranked_pairs  all misranked spam-ham pairs (ties half)
  top10_share      the share of them that involve at least one of the 10 costliest
                   messages (0 when there is no misranked pair)
Options:
  --list N         instead, the N costliest messages as a markdown table: path,
                   label, score, pairs (and their share of all misranked pairs),
                   costliest first (ties in input order), those in no misranked
                   pair left out
  --relative-to DIR  paths under DIR are shown relative to it
"""
import argparse
import fileinput
import sys
from bisect import bisect_left, bisect_right

TOP = 10


def fmt_pairs(x):
    return f"{x:.0f}" if x == int(x) else f"{x:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", type=int, default=0, metavar="N")
    ap.add_argument("--relative-to", default="", metavar="DIR")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()

    msgs = []  # (label, score, score as written, path)
    for lineno, line in enumerate(fileinput.input(args.files), 1):
        line = line.rstrip("\n")
        if not line:
            continue
        f = line.split("\t")
        try:
            label, score = f[0], float(f[1])
        except (IndexError, ValueError):
            sys.exit(f"costliest.py: line {lineno}: expected LABEL<TAB>SCORE<TAB>...: {line!r}")
        if label not in ("spam", "ham"):
            sys.exit(f"costliest.py: line {lineno}: bad label: {line!r}")
        path = f[4] if len(f) > 4 and f[4] else f"line {lineno}"
        msgs.append((label, score, f[1], path))

    spam = sorted(s for lab, s, _, _ in msgs if lab == "spam")
    ham = sorted(s for lab, s, _, _ in msgs if lab == "ham")

    def pairs(label, s):
        if label == "ham":  # spam below it, ties half
            lo, hi = bisect_left(spam, s), bisect_right(spam, s)
            return lo + (hi - lo) / 2
        lo, hi = bisect_left(ham, s), bisect_right(ham, s)  # ham above it, ties half
        return len(ham) - hi + (hi - lo) / 2

    cost = [pairs(lab, s) for lab, s, _, _ in msgs]
    total = sum(c for c, (lab, _, _, _) in zip(cost, msgs) if lab == "ham")
    order = sorted(range(len(msgs)), key=lambda i: -cost[i])  # stable: input order on ties

    if args.list > 0:
        if not total:
            print("(no misranked pair)")
            return
        prefix = args.relative_to.rstrip("/") + "/" if args.relative_to else None
        print("| # | message | label | score | misranked pairs (share of all) |")
        print("|---|---|---|---|---|")
        for rank, i in enumerate((i for i in order[:args.list] if cost[i] > 0), 1):
            label, _, written, path = msgs[i]
            if prefix and path.startswith(prefix):
                path = path[len(prefix):]
            print(f"| {rank} | {path} | {label} | {written} | {fmt_pairs(cost[i])} ({100 * cost[i] / total:.1f}%) |")
        return

    # The pairs of the top messages, less those counted twice (a ham and a spam of
    # the top misranked against each other).
    top = order[:TOP]
    covered = sum(cost[i] for i in top)
    for h in top:
        if msgs[h][0] != "ham":
            continue
        for s in top:
            if msgs[s][0] == "spam" and msgs[h][1] >= msgs[s][1]:
                covered -= 1 if msgs[h][1] > msgs[s][1] else 0.5
    print(f"misranked_pairs {fmt_pairs(total)}")
    print(f"top10_share {covered / total if total else 0:.4f}")


if __name__ == "__main__":
    main()
