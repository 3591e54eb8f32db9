#!/usr/bin/env python3
"""The loop users run, through a real mailsiftd (issue 42), bogofilter beside it.

usage: bench/deployed_loop.py --index FILE [--split F] [--batch N] [--one-sided]
                              [--mailsift BIN] [--mailsiftd BIN] [--config FILE]
                              [--work DIR] [--filters LIST] [--scores-prefix PATH]
                              [--moves-in-bursts] [--at-once] [--json]
       bench/deployed_loop.py --procedure-digest FILTER

A TREC index in arrival order (paths relative to it, or absolute). The first F
(default 0.5) is learned as the README teaches, class by class: `mailsift learn
--spam` of its spam, then `learn --ham` of its ham. The rest goes through a
mailsiftd started here on a loopback port (built-in defaults, or the settings
of --config FILE; either way stats_interval 1, history off, its own database),
over the milter protocol as an MTA speaks it, N messages a batch (default 100).
After each batch the users move what they see wrong: every spam left in the
inbox (X-Mailsift-Status No or Unsure) is corrected with `mailsift correct
--spam` of the delivered copy (mailsiftd's fields at the end of its header
block, as the MTA adds them; a corpus file's mbox "From " line is not sent),
every ham in Junk
(Yes) with `correct --ham`, one process a move, as the IMAPSieve recipe runs
them; unsure ham stays. --one-sided: nobody looks in Junk. Before the
corrections of a batch, the scans of the batch are waited for (mailsiftd writes
them every stats_interval), as a user moves mail after it arrived; after each
move, mailsiftd's refit of its linear scorer and its reload of the model
it left (a user's next move is seconds or minutes away). --moves-in-bursts:
a batch's moves one right after another, as when a user selects them all and
moves them at once; mailsiftd refits when they pause, and the wait is for that,
after the batch's last move. --at-once: each move as soon as its message is
delivered, before mailsiftd has written its scan, handed to mailsiftd on its
correct_socket (which keeps it until the scan is written, then applies it): the
user who moves mail the second it arrives; the wait is for that correction
applied, refitted and reloaded.

bogofilter (Debian's, defaults -C) runs the same loop: `-s -b` then `-n -b` of
the first part, each batch classified with `-TT` (cutoffs 0.99 / 0.45: Junk at
>= 0.99, inbox below), its moves registered with `-s`/`-n`.

Prints one row per filter: 1-ROCA% (mailsift from the header's
uncalibrated-log-odds, two decimals; bogofilter's spamicity), FNR% at FPR <=
0.1%, ham in Junk, spam in the inbox, unsure%, the users' moves, and ECE of
the probability (mailsift's P(spam), the header's score; bogofilter's
spamicity, as bench/accuracy.sh takes it). --json prints the same as one JSON
object instead (bench/accuracy.sh's deployed protocol reads it): "index",
"learned", "deployed", "batch", "feedback" (two-sided or one-sided) and
"filters", a list of {"filter": "mailsift" or "bogofilter", "name", "messages",
"spam", "ham", "one_minus_roca_percent", "fnr_at_fpr_0.1_percent",
"ham_in_junk", "spam_in_inbox", "unsure_percent", "moved_to_junk",
"moved_from_junk", "expected_calibration_error", "worst_bin", "seconds"} (NaN
as null; "worst_bin": the reliability bin of at least 30 messages whose mean
probability is furthest from its share of spam, as {"low", "high",
"messages", "gap"}, or null when no bin holds 30).
With --scores-prefix, the LABEL<TAB>SCORE<TAB>VERDICT<TAB>PATH lines of each
filter (bench/roc.py reads them).

--filters mailsift, bogofilter or mailsift,bogofilter (the default): the loops
run, in that order; the output has the rows of those only, in the same shape
(--no-bogofilter is --filters mailsift). bench/accuracy.sh runs each alone, as
two jobs side by side, and keeps bogofilter's in a cache.
--procedure-digest FILTER prints the SHA-256 of the source that makes that
filter's row (its loop, the split, the metrics, its JSON) and exits: the key of
accuracy.sh's cache changes when the procedure does.

A benchmark: it prints numbers; it fails only when a program misbehaves.
Loopback only; it ends only the mailsiftd it started.
"""
import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------- milter
def frame(cmd, data=b""):
    return struct.pack(">I", len(data) + 1) + cmd + data


def read_frame(sock):
    def exactly(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("mailsiftd closed the connection")
            buf += chunk
        return buf

    (length,) = struct.unpack(">I", exactly(4))
    body = exactly(length)
    return body[:1], body[1:]


def z(data):
    return (data if isinstance(data, bytes) else data.encode("utf-8", "replace")) + b"\0"


def without_mbox_line(raw):
    """A corpus file's mbox "From " line is no part of what an MTA receives."""
    if raw.startswith(b"From "):
        nl = raw.find(b"\n")
        return raw[nl + 1:] if nl >= 0 else b""
    return raw


def delivered_copy(raw, added):
    """The message as delivered: mailsiftd's fields at the end of its header block, as the MTA adds them."""
    lf, crlf = raw.find(b"\n\n"), raw.find(b"\r\n\r\n")
    at, eol = (lf + 1, b"\n") if lf >= 0 else (len(raw), b"\n")
    if crlf >= 0 and crlf + 2 < at:
        at, eol = crlf + 2, b"\r\n"
    fields = b"".join(f"{name}: {added[name]}".encode() + eol for name in ("X-Mailsift-Status", "X-Mailsift-Signature"))
    return raw[:at] + fields + raw[at:]


def split_message(raw):
    """(headers as (name, value) bytes pairs, unfolded as an MTA passes them; body)."""
    for sep in (b"\r\n\r\n", b"\n\n"):
        at = raw.find(sep)
        if at >= 0:
            head, body = raw[:at], raw[at + len(sep):]
            break
    else:
        head, body = raw, b""
    headers = []
    for line in head.replace(b"\r\n", b"\n").split(b"\n"):
        if line[:1] in (b" ", b"\t") and headers:
            name, value = headers[-1]
            headers[-1] = (name, value + b"\n" + line)
        elif b":" in line:
            name, value = line.split(b":", 1)
            headers.append((name.strip(), value.lstrip(b" ")))
    return headers, body.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def milter_scan(port, raw):
    """Sends one message; returns mailsiftd's added header fields {name: value}."""
    headers, body = split_message(raw)
    value = {}
    for n, v in headers:  # the topmost of each
        value.setdefault(n.decode("latin-1").lower(), v)
    # The envelope recipient: the topmost Delivered-To (the last delivery's), else
    # the first address of To (as evaluate --deployed takes a message's user).
    rcpt = (value.get("delivered-to") or value.get("to", b"<user@example.org>")).split(b",")[0].strip() \
        or b"<user@example.org>"
    if b"<" in rcpt:
        rcpt = rcpt[rcpt.index(b"<"):]
    else:
        rcpt = b"<" + rcpt + b">"
    added = {}
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(frame(b"O", struct.pack(">III", 6, 0x1FF, 0)))
        read_frame(s)
        s.sendall(frame(b"C", z("mx.example.net") + b"4" + struct.pack(">H", 25) + z("192.0.2.25")))
        read_frame(s)
        s.sendall(frame(b"H", z("mx.example.net")))
        read_frame(s)
        s.sendall(frame(b"M", z("<sender@example.net>")))
        read_frame(s)
        s.sendall(frame(b"R", z(rcpt[:900])))
        read_frame(s)
        for name, v in headers:
            s.sendall(frame(b"L", z(name) + z(v)))
            read_frame(s)
        s.sendall(frame(b"N"))
        read_frame(s)
        for i in range(0, len(body), 65535):
            s.sendall(frame(b"B", body[i:i + 65535]))
            read_frame(s)
        s.sendall(frame(b"E"))
        while True:
            cmd, data = read_frame(s)
            if cmd in (b"h", b"i"):
                if cmd == b"i":
                    data = data[4:]
                parts = data.split(b"\0")
                added[parts[0].decode()] = parts[1].decode("utf-8", "replace")
            elif cmd in (b"a", b"c", b"r", b"t", b"d", b"y"):
                break
        s.sendall(frame(b"Q"))
    return added


# ---------------------------------------------------------------- metrics
def metrics(rows):
    """rows: (spam, score, verdict, p or None). 1-ROCA%, FNR at FPR<=0.1%, counts, ECE."""
    spam = sorted(r[1] for r in rows if r[0])
    ham = sorted(r[1] for r in rows if not r[0])
    # 1-ROCA%: misranked pairs (ties half) over all pairs.
    import bisect
    bad = 0.0
    for h in ham:
        below = bisect.bisect_left(spam, h)
        ties = bisect.bisect_right(spam, h) - below
        bad += below + ties / 2
    one_minus_roca = 100.0 * bad / (len(spam) * len(ham)) if spam and ham else float("nan")
    k = int(0.001 * len(ham))
    t = sorted(ham, reverse=True)[k] if k < len(ham) else float("-inf")
    fnr = 100.0 * sum(1 for s in spam if not s > t) / len(spam) if spam else float("nan")
    out = {
        "one_minus_roca_percent": one_minus_roca,
        "fnr_at_fpr_0.1_percent": fnr,
        "ham_in_junk": sum(1 for r in rows if not r[0] and r[2] == "spam"),
        "spam_in_inbox": sum(1 for r in rows if r[0] and r[2] != "spam"),
        "unsure_percent": 100.0 * sum(1 for r in rows if r[2] == "unsure") / len(rows),
        "messages": len(rows),
        "spam": len(spam),
        "ham": len(ham),
    }
    ps = [r for r in rows if r[3] is not None]
    if ps:
        ece, worst = 0.0, None
        for b in range(10):
            inbin = [r for r in ps if min(int(r[3] * 10), 9) == b]
            if inbin:
                gap = abs(sum(r[3] for r in inbin) / len(inbin) - sum(1 for r in inbin if r[0]) / len(inbin))
                ece += len(inbin) / len(ps) * gap
                # The worst bin of at least 30 messages, as evaluate reports it.
                if len(inbin) >= 30 and (worst is None or gap > worst["gap"]):
                    worst = {"low": b / 10, "high": (b + 1) / 10, "messages": len(inbin), "gap": gap}
        out["ece"] = ece
        out["worst_bin"] = worst
    return out


# ---------------------------------------------------------------- the loops
def read_index(path):
    base = os.path.dirname(os.path.abspath(path))
    out = []
    with open(path) as f:
        for line in f:
            label, p = line.split(None, 1)
            p = p.strip()
            out.append((label == "spam", p if os.path.isabs(p) else os.path.join(base, p)))
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_reload(mailsift, conf, log_path):
    """Waits until mailsiftd has refitted its linear scorer after the batch's
    corrections (`mailsift stats`: nothing learned since the last refit) and
    reloaded the model that left: its log's last "reloaded model" line is at the
    store's model change. `evaluate --deployed` refits and refreshes before each
    batch; without this wait the next batch's first messages would be scored by
    whichever model the daemon's refresh thread happened to hold, and the two
    loops could not be compared."""
    st = {}
    for _ in range(1200):
        st = json.loads(subprocess.run([mailsift, "--config", conf, "stats", "--json"], check=True,
                                       capture_output=True, text=True).stdout)
        if st["linear"]["changes_since_refit"] == 0:
            want = f"at model change {st['model_change']} in "
            with open(log_path, errors="replace") as f:
                reloads = [line for line in f if "reloaded model" in line]
            if reloads and want in reloads[-1]:
                return
        time.sleep(0.05)
    raise RuntimeError(f"mailsiftd did not refit and reload the corrected model in 60 s (stats: {st}): see {log_path}")


def corrections_applied(mailsift, conf):
    """Every correction counted so far (stats: of all time, each signature once)."""
    st = json.loads(subprocess.run([mailsift, "--config", conf, "stats", "--json"], check=True,
                                   capture_output=True, text=True).stdout)
    return sum(st["corrections"]["all"].values())


def user_move(args, conf, copy, spam, raw, verdict, added, moves):
    """The move a user makes of a delivered message on the wrong side, if it is:
    spam left in the inbox into Junk (`mailsift correct --spam` of the delivered
    copy), ham in Junk out of it (`--ham`; nobody looks in Junk with
    --one-sided). Counts it in moves [to Junk, out]; False when there is none."""
    to_junk = spam and verdict != "spam"
    out_of_junk = not spam and verdict == "spam" and not args.one_sided
    if not (to_junk or out_of_junk):
        return False
    with open(copy, "wb") as f:
        f.write(delivered_copy(raw, added))
    subprocess.run([args.mailsift, "--config", conf, "correct", "--spam" if to_junk else "--ham",
                    "--quiet", copy], check=True)
    moves[0 if to_junk else 1] += 1
    return True


def at_once_move(args, conf, log_path, copy, spam, raw, verdict, added, moves):
    """--at-once: the user moves the message as soon as it is delivered, before
    mailsiftd has written its scan; `mailsift correct` hands it to mailsiftd's
    correct_socket, which keeps the correction until the scan is written and
    then applies it. Waits for that, and for the refit and reload after it."""
    if not user_move(args, conf, copy, spam, raw, verdict, added, moves):
        return
    for _ in range(1200):
        if corrections_applied(args.mailsift, conf) >= sum(moves):
            break
        time.sleep(0.05)
    else:
        raise RuntimeError(f"mailsiftd did not apply the correction kept for its scan in 60 s: see {log_path}")
    wait_for_reload(args.mailsift, conf, log_path)


def mailsift_loop(args, train, rest, work):
    db = os.path.join(work, "mailsift.db")
    conf = os.path.join(work, "mailsift.conf")
    with open(conf, "w") as f:
        if args.config:  # the settings measured; the loop's own below them (the last of a key wins)
            with open(args.config) as given:
                f.write(given.read().rstrip("\n") + "\n")
        f.write(f"database = {db}\nstats_interval = 1\nhistory = off\n")
        # The loop waits after each move until mailsiftd has refitted and reloaded (a
        # user's next move is seconds away), whenever that is: how often mailsiftd looks
        # for a changed database decides only how long the wait is, about two
        # refresh_interval, 2 s a move at the default. Moves in bursts are the
        # exception: there the pause between moves decides how often mailsiftd refits.
        if not args.moves_in_bursts:
            f.write("refresh_interval = 50\n")
        if args.at_once:  # corrections through mailsiftd, which keeps them until their scans are written
            f.write(f"correct_socket = {os.path.join(work, 'correct.sock')}\n")
    for spam in (True, False):
        lst = os.path.join(work, "train.spam" if spam else "train.ham")
        with open(lst, "w") as f:
            f.writelines(p + "\n" for s, p in train if s == spam)
        subprocess.run([args.mailsift, "--config", conf, "learn", "--spam" if spam else "--ham",
                        "--files-from", lst], check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    log = open(os.path.join(work, "mailsiftd.log"), "w")
    daemon = subprocess.Popen([args.mailsiftd, "--foreground", "--config", conf,
                               "--listen", f"inet:127.0.0.1:{port}"], stdout=log, stderr=log)
    try:
        # Listening comes before the model is loaded: wait for the daemon to say it has it.
        log_path = os.path.join(work, "mailsiftd.log")
        for _ in range(600):
            with open(log_path, errors="replace") as f:
                if "loaded model" in f.read():
                    break
            if daemon.poll() is not None:
                raise RuntimeError(f"mailsiftd exited: see {log_path}")
            time.sleep(0.1)
        else:
            raise RuntimeError(f"mailsiftd loaded no model in 60 s: see {log_path}")
        rows, moves = [], [0, 0]
        copy = os.path.join(work, "delivered.eml")
        scanned = 0
        for start in range(0, len(rest), args.batch):
            batch = []
            for spam, path in rest[start:start + args.batch]:
                with open(path, "rb") as f:
                    raw = without_mbox_line(f.read())
                added = milter_scan(port, raw)
                status = added.get("X-Mailsift-Status", "")
                word = status.split(",")[0]
                verdict = {"Yes": "spam", "No": "ham", "Unsure": "unsure"}.get(word)
                if verdict is None:
                    raise RuntimeError(f"{path}: X-Mailsift-Status {status!r}")
                fields = dict(kv.strip().split("=", 1) for kv in status.split(",")[1:] if "=" in kv)
                rows.append((spam, float(fields["uncalibrated-log-odds"]), verdict, float(fields["score"]), path))
                batch.append((spam, path, raw, verdict, added))
                if args.at_once:
                    at_once_move(args, conf, log_path, copy, spam, raw, verdict, added, moves)
            scanned += len(batch)
            # The scans of the batch written, as they are by the time a user moves a message
            # (mailsift correct finds the message by its scan): a batch without a move
            # does not wait for them (up to stats_interval, 1 s).
            moving = not args.at_once and any(
                (spam and verdict != "spam") or (not spam and verdict == "spam" and not args.one_sided)
                for spam, _, _, verdict, _ in batch)
            for _ in range(600 if moving else 0):
                st = json.loads(subprocess.run([args.mailsift, "--config", conf, "stats", "--json"], check=True,
                                               capture_output=True, text=True).stdout)
                if st.get("signatures", 0) >= scanned:
                    break
                time.sleep(0.1)
            moves_before = sum(moves)
            for spam, path, raw, verdict, added in [] if args.at_once else batch:
                if not user_move(args, conf, copy, spam, raw, verdict, added, moves):
                    continue
                # A user's next move is seconds or minutes away: mailsiftd has refitted by then.
                if not args.moves_in_bursts:
                    wait_for_reload(args.mailsift, conf, log_path)
            if args.moves_in_bursts and sum(moves) > moves_before:
                wait_for_reload(args.mailsift, conf, log_path)
        return rows, moves
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
        log.close()


def bogofilter_loop(args, train, rest, work):
    db = os.path.join(work, "bogofilter")
    os.makedirs(db, exist_ok=True)
    for spam in (True, False):
        names = "".join(p + "\n" for s, p in train if s == spam)
        subprocess.run(["bogofilter", "-C", "-d", db, "-s" if spam else "-n", "-b"], input=names.encode(),
                       check=True)
    rows, moves = [], [0, 0]
    for start in range(0, len(rest), args.batch):
        part = rest[start:start + args.batch]
        out = subprocess.run(["bogofilter", "-C", "-d", db, "-TT", "-b"],
                             input="".join(p + "\n" for _, p in part).encode(), capture_output=True).stdout.decode()
        spamicity = {}
        for line in out.splitlines():
            path, p = line.rsplit(None, 1)
            spamicity[path] = float(p)
        register = {True: [], False: []}
        for spam, path in part:
            p = spamicity[path]
            verdict = "spam" if p >= 0.99 else "ham" if p < 0.45 else "unsure"
            rows.append((spam, p, verdict, p, path))
            if spam and verdict != "spam":
                register[True].append(path)
                moves[0] += 1
            elif not spam and verdict == "spam" and not args.one_sided:
                register[False].append(path)
                moves[1] += 1
        for spam, paths in register.items():
            if paths:
                subprocess.run(["bogofilter", "-C", "-d", db, "-s" if spam else "-n", "-b"],
                               input="".join(p + "\n" for p in paths).encode(), check=True)
    return rows, moves


def split_index(index, split):
    """(the part learned, the part deployed)."""
    first = int(split * len(index))
    return index[:first], index[first:]


def filter_json(key, name, rows, moves, seconds):
    """One filter's entry of --json's "filters"."""
    m = metrics(rows)
    m = {k: None if isinstance(v, float) and v != v else v for k, v in m.items()}  # NaN: null
    out = {"filter": key, "name": name, **m, "expected_calibration_error": m.get("ece"),
           "moved_to_junk": moves[0], "moved_from_junk": moves[1], "seconds": round(seconds, 1)}
    out.pop("ece", None)
    return out


LOOPS = {"mailsift": ("mailsift (mailsiftd + mailsift correct)", mailsift_loop),
         "bogofilter": ("bogofilter (-TT, then -s/-n)", bogofilter_loop)}


def procedure_digest(key):
    """SHA-256 of the source of what makes the row of filter KEY: what it reads, how it
    splits, its loop (and the milter client, for mailsift), its metrics and its JSON."""
    import hashlib
    import inspect
    parts = [read_index, split_index, LOOPS[key][1], metrics, filter_json]
    if key == "mailsift":
        parts += [frame, read_frame, z, without_mbox_line, delivered_copy, split_message, milter_scan,
                  wait_for_reload, corrections_applied, user_move, at_once_move]
    text = LOOPS[key][0] + "\n" + "".join(inspect.getsource(f) for f in parts)
    return hashlib.sha256(text.encode()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index")
    ap.add_argument("--split", type=float, default=0.5)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--one-sided", action="store_true")
    ap.add_argument("--moves-in-bursts", action="store_true")
    ap.add_argument("--at-once", action="store_true",
                    help="each move as soon as its message is delivered, through mailsiftd's correct_socket")
    build = os.path.join(os.path.dirname(HERE), "build")
    ap.add_argument("--mailsift", default=os.path.join(build, "src/cli/mailsift"))
    ap.add_argument("--mailsiftd", default=os.path.join(build, "src/daemon/mailsiftd"))
    ap.add_argument("--config", help="a mailsift configuration to measure instead of the built-in defaults")
    ap.add_argument("--work")
    ap.add_argument("--no-bogofilter", action="store_true", help="the same as --filters mailsift")
    ap.add_argument("--filters", default="mailsift,bogofilter",
                    help="mailsift, bogofilter or both, a comma list (default both)")
    ap.add_argument("--procedure-digest", metavar="FILTER", choices=sorted(LOOPS),
                    help="print the SHA-256 of the source that makes FILTER's row, and exit")
    ap.add_argument("--scores-prefix")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout instead of the markdown rows")
    args = ap.parse_args()
    if args.procedure_digest:
        print(procedure_digest(args.procedure_digest))
        return 0
    if not args.index:
        ap.error("--index is required")
    filters = [f for f in args.filters.split(",") if f]
    if not filters or any(f not in LOOPS for f in filters):
        ap.error("--filters takes mailsift, bogofilter or mailsift,bogofilter")
    if args.no_bogofilter:
        filters = [f for f in filters if f != "bogofilter"]
        if not filters:
            ap.error("--no-bogofilter with --filters bogofilter leaves no filter")
    if not (0 < args.split < 1) or args.batch < 1:
        ap.error("--split takes 0 < F < 1, --batch at least 1")
    if args.config and not os.path.isfile(args.config):
        ap.error(f"no configuration file at {args.config}")
    if "bogofilter" in filters and shutil.which("bogofilter") is None:
        ap.error("bogofilter is not installed (apt-get install bogofilter), or give --filters mailsift")
    index = read_index(args.index)
    train, rest = split_index(index, args.split)
    first = len(train)
    work = args.work or tempfile.mkdtemp(prefix="mailsift-deployed-")
    os.makedirs(work, exist_ok=True)
    results = []
    for key in [f for f in LOOPS if f in filters]:  # mailsift first, as before
        name, loop = LOOPS[key]
        t0 = time.monotonic()
        results.append((key, name, *loop(args, train, rest, work), time.monotonic() - t0))
    feedback = "one-sided" if args.one_sided else "two-sided"
    if args.json:
        filters = [filter_json(*r) for r in results]
        print(json.dumps({"index": args.index, "learned": first, "deployed": len(rest), "batch": args.batch,
                          "feedback": feedback, "filters": filters}, indent=1))
    else:
        print_markdown(args, first, rest, feedback, results)
    if args.scores_prefix:
        for key, _, rows, _, _ in results:
            with open(f"{args.scores_prefix}.{key}.tsv", "w") as f:
                for spam, score, verdict, _, path in rows:
                    f.write(f"{'spam' if spam else 'ham'}\t{score}\t{verdict}\t{path}\n")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


def print_markdown(args, first, rest, feedback, results):
    print(f"# the deployed loop: {args.index}, first {first} learned class by class, "
          f"{len(rest)} deployed in batches of {args.batch}, {feedback} feedback")
    print("| filter | 1-ROCA% | FNR% at FPR <= 0.1% | ham in Junk | spam in the inbox | unsure | moves (to Junk + out) "
          "| ECE (worst bin >= 30: gap, n) |")
    print("|---|---|---|---|---|---|---|---|")
    for _, name, rows, moves, _ in results:
        m = metrics(rows)
        ece = f"{m['ece']:.4f}" if "ece" in m else "-"
        if m.get("worst_bin"):
            w = m["worst_bin"]
            ece += f" ({w['low']:.1f}-{w['high']:.1f}: {w['gap']:.3f}, n={w['messages']})"
        print(f"| {name} | {m['one_minus_roca_percent']:.4f} | {m['fnr_at_fpr_0.1_percent']:.3f} | "
              f"{m['ham_in_junk']} | {m['spam_in_inbox']} | {m['unsure_percent']:.2f}% | "
              f"{moves[0]} + {moves[1]} | {ece} |")


if __name__ == "__main__":
    sys.exit(main())
