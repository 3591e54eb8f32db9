#!/usr/bin/env python3
"""disagreement.py - two users who disagree about one newsletter, a third who
never says, through a real mailsiftd (issue 58's gray-mail target). A
benchmark: it prints markdown and exits 0 whenever it ran, whatever the numbers.

usage: bench/disagreement.py [--mailsift BIN] [--mailsiftd BIN] [--corpora DIR]
                             [--sender ADDRESS] [--limit N] [--runs LIST]

The site: SpamAssassin's spam_2 learned as spam and easy_ham_2 as ham. The
newsletter: every hard_ham message From ADDRESS (default
subscriptions@lockergnome.com, 30 issues), in Date order. Each issue is
delivered over the milter protocol to three users, one copy each (To: and
Delivered-To: theirs), in turn a, b, c, then b, c, a, and so on:

  a@disagree.test  moves it to Junk: corrects every copy not tagged Yes
  b@disagree.test  wants it: corrects every copy not tagged No (out of Junk,
                   or out of the folder the README files Unsure into)
  c@disagree.test  never says

each user correcting at most --limit copies (default 3). Runs (--runs, comma
separated; default all):

  baseline   per_user = recipient, nobody corrects: the verdicts the site gives
  off        per_user = off, corrections at once
  at-once    per_user = recipient, each correction the moment its copy is
             delivered, handed to mailsiftd on its correct_socket before the
             scan is written (mailsiftd applies it when the scan is)
  later      per_user = recipient, each issue's corrections after the scans of
             its three copies are written (as a user who reads mail later)

Each correction is `mailsift correct` of the delivered copy, as the IMAPSieve
recipe runs it; the run waits for it to be applied, refitted and reloaded
before the next delivery. Reports, per run and user: the corrections made,
the verdicts of the copies after their last correction (target: >= 9 of 10
follow the user after at most 3 corrections each), c's verdicts against the
baseline's issue by issue (target: the same), and a's and b's layers for the
sender (`stats --user`; target: the same at once and later).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deployed_loop  # noqa: E402  (the milter client and the waits of the deployed loop)
import graymail  # noqa: E402  (the newsletter's issues, and a copy for a user)

USERS = ["a@disagree.test", "b@disagree.test", "c@disagree.test"]
WANTS = {"a@disagree.test": "spam", "b@disagree.test": "ham", "c@disagree.test": None}
WORD = {"Yes": "spam", "No": "ham", "Unsure": "unsure"}


def issues_of(corpora, sender):
    import email.utils
    hard = os.path.join(corpora, "spamassassin", "hard_ham")
    out = []
    for name in sorted(os.listdir(hard)):
        with open(os.path.join(hard, name), "rb") as f:
            raw = f.read()
        if email.utils.parseaddr(graymail.header_value(raw, "From"))[1].lower() == sender.lower():
            when = email.utils.parsedate_tz(graymail.header_value(raw, "Date"))
            out.append((email.utils.mktime_tz(when) if when else 0, name, raw))
    out.sort()
    return [(name, deployed_loop.without_mbox_line(raw)) for _, name, raw in out]


def learn_site(args, work):
    """The site's model, learned once; each run copies it."""
    db = os.path.join(work, "site.db")
    conf = os.path.join(work, "site.conf")
    with open(conf, "w") as f:
        f.write(f"database = {db}\n")
    for label, folder in (("--spam", "spam_2"), ("--ham", "easy_ham_2")):
        d = os.path.join(args.corpora, "spamassassin", folder)
        lst = os.path.join(work, folder + ".list")
        with open(lst, "w") as f:
            f.writelines(os.path.join(d, n) + "\n" for n in sorted(os.listdir(d)) if n != "cmds")
        subprocess.run([args.mailsift, "--config", conf, "learn", label, "--files-from", lst], check=True,
                       stdout=subprocess.DEVNULL)
    return db


def stats(mailsift, conf):
    return json.loads(subprocess.run([mailsift, "--config", conf, "stats", "--json"], check=True,
                                     capture_output=True, text=True).stdout)


def layer_of(mailsift, conf, user, sender):
    out = subprocess.run([mailsift, "--config", conf, "stats", "--user", user], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().endswith(sender):
            return float(line.split()[0])
    return 0.0


def run(args, work, site_db, name, issues):
    per_user = "off" if name == "off" else "recipient"
    d = os.path.join(work, name)
    os.makedirs(d)
    db, conf, log_path = os.path.join(d, "mailsift.db"), os.path.join(d, "mailsift.conf"), os.path.join(d, "mailsiftd.log")
    shutil.copy(site_db, db)
    with open(conf, "w") as f:
        f.write(f"database = {db}\nstats_interval = 1\nhistory = off\nrefresh_interval = 50\nper_user = {per_user}\n"
                f"correct_socket = {os.path.join(d, 'correct.sock')}\n")
    port = deployed_loop.free_port()
    log = open(log_path, "w")
    daemon = subprocess.Popen([args.mailsiftd, "--foreground", "--config", conf, "--listen", f"inet:127.0.0.1:{port}"],
                              stdout=log, stderr=log)
    verdicts = {u: [] for u in USERS}  # (verdict, log-odds, corrections made before it)
    made = {u: 0 for u in USERS}
    try:
        for _ in range(600):
            with open(log_path, errors="replace") as f:
                if "loaded model" in f.read():
                    break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"mailsiftd loaded no model in 60 s: see {log_path}")
        delivered = 0
        copy = os.path.join(d, "delivered.eml")

        def correct(user, raw, added, verdict):
            want = WANTS[user]
            if name == "baseline" or want is None or verdict == want or made[user] >= args.limit:
                return
            with open(copy, "wb") as f:
                f.write(deployed_loop.delivered_copy(raw, added))
            subprocess.run([args.mailsift, "--config", conf, "correct", "--" + want, "--quiet", copy], check=True)
            made[user] += 1
            for _ in range(1200):
                if deployed_loop.corrections_applied(args.mailsift, conf) >= sum(made.values()):
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError(f"the correction was not applied in 60 s: see {log_path}")
            deployed_loop.wait_for_reload(args.mailsift, conf, log_path)

        for k, (_, raw) in enumerate(issues):
            order = USERS[k % 3:] + USERS[:k % 3]
            pending = []
            for user in order:
                mine = graymail.copy_for(raw, user)
                added = deployed_loop.milter_scan(port, mine)
                word = added.get("X-Mailsift-Status", "").split(",")[0]
                fields = dict(kv.strip().split("=", 1) for kv in added["X-Mailsift-Status"].split(",")[1:] if "=" in kv)
                verdict = WORD[word]
                verdicts[user].append((verdict, float(fields["uncalibrated-log-odds"]), made[user]))
                delivered += 1
                if name == "later":
                    pending.append((user, mine, added, verdict))
                else:
                    correct(user, mine, added, verdict)
            if pending:
                for _ in range(600):
                    if stats(args.mailsift, conf).get("signatures", 0) >= delivered:
                        break
                    time.sleep(0.1)
                for p in pending:
                    correct(*p)
        layers = {u: layer_of(args.mailsift, conf, u, args.sender) for u in USERS[:2]}
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
        log.close()
    return verdicts, made, layers


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    build = os.path.join(here, "..", "build")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mailsift", default=os.path.join(build, "src/cli/mailsift"))
    ap.add_argument("--mailsiftd", default=os.path.join(build, "src/daemon/mailsiftd"))
    ap.add_argument("--corpora", default=os.path.join(here, "..", "..", "shared", "corpus"))
    ap.add_argument("--sender", default="subscriptions@lockergnome.com")
    ap.add_argument("--limit", type=int, default=3)
    ap.add_argument("--runs", default="baseline,off,at-once,later")
    args = ap.parse_args()
    args.mailsift, args.mailsiftd = os.path.abspath(args.mailsift), os.path.abspath(args.mailsiftd)
    runs = args.runs.split(",")
    if "baseline" not in runs:
        runs.insert(0, "baseline")
    issues = issues_of(args.corpora, args.sender)
    work = tempfile.mkdtemp(prefix="mailsift-disagree.")
    try:
        site_db = learn_site(args, work)
        results = {name: run(args, work, site_db, name, issues) for name in runs}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = [v for v, _, _ in results["baseline"][0]["c@disagree.test"]]
    print(f"## Two users who disagree: {len(issues)} issues from {args.sender} to a (Junk), b (inbox), c (never says)")
    print()
    print(f"Site: SpamAssassin spam_2 + easy_ham_2. Each user corrects at most {args.limit} copies. "
          f"The site's verdicts (baseline, nobody corrects): " +
          ", ".join(f"{base.count(w)} {w}" for w in ("spam", "unsure", "ham")) + ".")
    print()
    print("| run | a: corrections; of the 10 copies after the last, in Junk | b: corrections; of the 10 after the last, "
          "tagged No | c: verdicts as the baseline's | a's layer | b's layer | log-odds of c's copies |")
    print("|---|---|---|---|---|---|---|")
    for name in runs:
        verdicts, made, layers = results[name]

        def after(user, want):
            # The copies scored after the user's last correction (all of them, for one who made none).
            later = [v for v, _, n in verdicts[user] if n == made[user]]
            return sum(v == want for v in later[:10]), len(later[:10])

        a_ok, a_n = after("a@disagree.test", "spam")
        b_ok, b_n = after("b@disagree.test", "ham")
        c = [v for v, _, _ in verdicts["c@disagree.test"]]
        same = sum(x == y for x, y in zip(c, base))
        c_scores = " ".join(f"{s:+.1f}" for _, s, _ in verdicts["c@disagree.test"])
        print(f"| {name} | {made['a@disagree.test']}; {a_ok} of {a_n} | {made['b@disagree.test']}; {b_ok} of {b_n} "
              f"| {same} of {len(c)} | {layers['a@disagree.test']:+.2f} | {layers['b@disagree.test']:+.2f} | {c_scores} |")
    print()
    print("Targets (issue 58): after at most 3 corrections each, >= 9 of each user's next 10 copies follow that user; "
          "c's verdicts those of the baseline; a's and b's layers the same at once and later.")


if __name__ == "__main__":
    main()
