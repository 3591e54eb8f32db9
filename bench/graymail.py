#!/usr/bin/env python3
"""graymail.py - gray mail: one newsletter that some users want and others do not
(issue 44). A benchmark's stream and its report, not a test.

usage: bench/graymail.py build --out DIR [--corpora DIR] [--sender ADDRESS]
       bench/graymail.py report --out DIR --scores FILE

build: one server's stream (trec07p-first10k's index, then trec07p-next10k's:
20,000 messages, by absolute path) with a newsletter's issues woven into its
second half, the part the deployed loop scores (evaluate --deployed --split
head:0.5 learns the first half). The newsletter is every SpamAssassin hard_ham
message From ADDRESS (default subscriptions@lockergnome.com, 30 issues of
Lockergnome's newsletters), in Date order, spread evenly over the second half.
Each issue is delivered to three users, one copy each, its To: replaced and a
Delivered-To: added for that user:
  alice@graymail.test  wants it: ham
  bob@graymail.test    does not: spam
  carol@graymail.test  never says: labelled ham, the corpus's own label
Writes DIR/index (spam|ham PATH, for evaluate --index), DIR/data/ (the copies)
and DIR/users.tsv (copy, user, label).

report: reads the --scores file of evaluate --deployed on DIR/index (or the
mailsift scores of bench/deployed_loop.py --scores-prefix) and says,
for each user, in order: how many of their copies were on the wrong side of
their label (each is a correction the loop made: a move), and how many of
their copies after their fifth correction still were (issue 44's target: none
for alice and bob once they have corrected at most 5; carol's follow the site
model). A copy is on the wrong side when it lands where its user does not want
it: in Junk (spam) for a user who wants it, in the inbox (ham or unsure) for one
who does not.
"""
import argparse
import email.utils
import os
import re
import sys

USERS = [("alice@graymail.test", "ham"), ("bob@graymail.test", "spam"), ("carol@graymail.test", "ham")]


def header_block(raw):
    end = raw.find(b"\n\n")
    return raw if end < 0 else raw[:end]


def header_value(raw, name):
    text = re.sub(rb"\n[ \t]+", b" ", header_block(raw)).decode("latin-1")
    for line in text.split("\n"):
        if line.lower().startswith(name.lower() + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def read_index(path):
    base = os.path.dirname(os.path.abspath(path))
    with open(path) as f:
        return [(label, os.path.join(base, rel)) for label, rel in (line.split() for line in f if line.strip())]


def copy_for(raw, user):
    """The issue as USER's mailbox gets it: Delivered-To first, To: replaced."""
    head, sep, body = raw.partition(b"\n\n")
    lines = re.split(rb"\n(?![ \t])", head)
    kept = [line for line in lines if not line.lower().startswith(b"to:")]
    if kept and kept[0].startswith(b"From "):
        kept = kept[1:]
    return b"\n".join([b"Delivered-To: " + user.encode()] + kept + [b"To: <" + user.encode() + b">"]) + sep + body


def build(args):
    corpora = os.path.abspath(args.corpora)
    stream = read_index(os.path.join(corpora, "trec07p-first10k", "index"))
    stream += read_index(os.path.join(corpora, "trec07p-next10k", "index"))
    hard = os.path.join(corpora, "spamassassin", "hard_ham")
    issues = []
    for name in sorted(os.listdir(hard)):
        with open(os.path.join(hard, name), "rb") as f:
            raw = f.read()
        if email.utils.parseaddr(header_value(raw, "From"))[1].lower() == args.sender.lower():
            when = email.utils.parsedate_tz(header_value(raw, "Date"))
            issues.append((email.utils.mktime_tz(when) if when else 0, name, raw))
    if not issues:
        sys.exit(f"graymail: no hard_ham message from {args.sender}")
    issues.sort()
    os.makedirs(os.path.join(args.out, "data"), exist_ok=True)
    half = len(stream) // 2
    gap = (len(stream) - half) // (len(issues) + 1)
    lines, users = [], []
    woven = {half + gap * (k + 1): issue for k, issue in enumerate(issues)}
    for i, (label, path) in enumerate(stream):
        lines.append(f"{label} {path}")
        if i in woven:
            _, name, raw = woven[i]
            for u, (user, wanted) in enumerate(USERS):
                copy = os.path.join(args.out, "data", f"{name.split('.')[0]}.{user.split('@')[0]}")
                with open(copy, "wb") as f:
                    f.write(copy_for(raw, user))
                lines.append(f"{wanted} {os.path.abspath(copy)}")
                users.append((os.path.abspath(copy), user, wanted))
    # The first half must stay the first half: evaluate --split head:0.5 learns it.
    assert all(not line.split()[1].startswith(os.path.abspath(args.out)) for line in lines[: len(lines) // 2])
    with open(os.path.join(args.out, "index"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "users.tsv"), "w") as f:
        f.writelines(f"{p}\t{u}\t{w}\n" for p, u, w in users)
    print(f"{len(issues)} issues from {args.sender}, {len(users)} copies, {len(lines)} messages in {args.out}/index")


def report(args):
    users = {}
    with open(os.path.join(args.out, "users.tsv")) as f:
        for line in f:
            path, user, wanted = line.rstrip("\n").split("\t")
            users[path] = (user, wanted)
    seen = {user: [] for user, _ in USERS}
    with open(args.scores) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) == 4:  # bench/deployed_loop.py --scores-prefix: label, log-odds, verdict, path
                label, log_odds, verdict, path = fields
            else:  # evaluate --scores: path, label, verdict, probability, log-odds
                path, label, verdict, _prob, log_odds = fields[:5]
            if path in users:
                user, wanted = users[path]
                # Unsure stays in the inbox: wrong for a user who wants it in Junk only.
                wrong = verdict == "spam" if wanted == "ham" else verdict != "spam"
                seen[user].append((wrong, float(log_odds)))
    print("| user | wants | copies | moves (wrong side) | copies after their 5th move | of those on the wrong side | log-odds of their copies, in order |")
    print("|---|---|---|---|---|---|---|")
    for user, wanted in USERS:
        copies = seen[user]
        moves, after, wrong_after = 0, 0, 0
        for wrong, _ in copies:
            if moves >= 5:
                after += 1
                wrong_after += wrong
            moves += wrong
        trail = " ".join(f"{z:+.1f}" for _, z in copies)
        print(f"| {user} | {wanted} | {len(copies)} | {moves} | {after} | {wrong_after} | {trail} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", required=True)
    b.add_argument("--corpora", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpus"))
    b.add_argument("--sender", default="subscriptions@lockergnome.com")
    r = sub.add_parser("report")
    r.add_argument("--out", required=True)
    r.add_argument("--scores", required=True)
    args = ap.parse_args()
    build(args) if args.command == "build" else report(args)


if __name__ == "__main__":
    main()
