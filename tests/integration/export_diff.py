#!/usr/bin/env python3
"""Checks that one model export is another plus exactly one learned message.

usage: export_diff.py BEFORE AFTER DIGEST CLASS [FEATURES]

BEFORE and AFTER are `mailsift export` files (mailsift(1), FORMAT). Exit 0 when
AFTER is BEFORE with the message DIGEST (32 hex digits) learned once as CLASS
(spam or ham) and nothing else changed in the counts: the message's own feature
list, as AFTER records it, added to CLASS's columns of each feature and to the
class totals; the other class untouched. Contacts and last-seen times are not
compared (learning ham makes its sender a contact; learning moves last_seen).
With FEATURES (a file of "feature<TAB>count" lines, as mailsiftd records a scan),
the message's list must also be exactly those features with those counts, less
the envelope's (env:), which the default scorer's model does not learn.
Prints what differs and exits 1 otherwise.
"""
import sys


def read_export(path):
    classes, features, messages = {}, {}, {}
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if fields[0] == "class":
                classes[fields[1]] = tuple(int(x) for x in fields[2:5])
            elif fields[0] == "feature":
                features[fields[1]] = (tuple(int(x) for x in fields[2:6]), fields[7] if len(fields) > 7 else "")
            elif fields[0] == "message":
                pairs = [p.split(":") for p in fields[4].split(",")] if len(fields) > 4 and fields[4] else []
                messages[fields[1]] = (fields[2], {i: int(n) for i, n in pairs})
    return classes, features, messages


def main(argv):
    if len(argv) not in (5, 6):
        print(__doc__, file=sys.stderr)
        return 2
    before_path, after_path, digest, cls = argv[1:5]
    digest = digest.lower()
    b_classes, b_features, b_messages = read_export(before_path)
    a_classes, a_features, a_messages = read_export(after_path)
    problems = []

    if digest in b_messages:
        problems.append(f"message {digest} was already learned before")
    if digest not in a_messages:
        problems.append(f"message {digest} is not learned after")
        print("\n".join(problems))
        return 1
    learned_as, terms = a_messages[digest]
    if learned_as != cls:
        problems.append(f"message {digest} is learned as {learned_as}, not {cls}")
    others = {d: m for d, m in a_messages.items() if d != digest}
    if others != b_messages:
        changed = sorted(set(others) ^ set(b_messages)) or [d for d in others if others[d] != b_messages.get(d)]
        problems.append(f"other learned messages changed: {changed[:5]}")

    # Feature counts: (occ_spam, occ_ham, pres_spam, pres_ham).
    col = 0 if cls == "spam" else 1
    for fid in sorted(set(b_features) | set(a_features) | set(terms)):
        want = list(b_features.get(fid, ((0, 0, 0, 0), ""))[0])
        if fid in terms:
            want[col] += terms[fid]
            want[col + 2] += 1
        got = list(a_features.get(fid, ((0, 0, 0, 0), ""))[0])
        if got != want:
            problems.append(f"feature {fid} ({a_features.get(fid, b_features.get(fid, (0, '?')))[1]}): "
                            f"counts {got}, expected {want}")

    # Class totals: (messages, occurrences, presences).
    other = "ham" if cls == "spam" else "spam"
    if a_classes.get(other) != b_classes.get(other):
        problems.append(f"class {other}: {b_classes.get(other)} -> {a_classes.get(other)}, expected unchanged")
    b = b_classes.get(cls, (0, 0, 0))
    want = (b[0] + 1, b[1] + sum(terms.values()), b[2] + len(terms))
    if a_classes.get(cls) != want:
        problems.append(f"class {cls}: {a_classes.get(cls)}, expected {want}")

    if len(argv) == 6:
        expected = {}
        with open(argv[5], encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                text, _, n = line.rstrip("\n").rpartition("\t")
                # The scan's view line (the text its 4-grams were read from) is no feature, and
                # the envelope's facts (env:) are not learned by the default linear scorer's model.
                if text and not text.startswith("!view:") and not text.startswith("env:"):
                    expected[text] = int(n)
        learned = {a_features[i][1] if i in a_features else i: n for i, n in terms.items()}
        if learned != expected:
            missing = sorted(set(expected) - set(learned))[:5]
            extra = sorted(set(learned) - set(expected))[:5]
            problems.append(f"the learned list is not the expected features (missing {missing}, extra {extra})")

    if problems:
        print("\n".join(problems[:20]))
        return 1
    print(f"{digest} learned once as {cls}: {len(terms)} features, {sum(terms.values())} occurrences")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
