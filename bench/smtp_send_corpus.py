#!/usr/bin/env python3
"""Send every message file under some directories over SMTP, on a few connections.

usage: smtp_send_corpus.py HOST PORT CONNECTIONS DIR...

Files are sent in name order, spread over CONNECTIONS parallel sessions that
each stay open (RSET between messages). An mbox "From " first line is dropped.
Prints "sent N accepted A rejected R failed F" on stdout; a message the server
refuses (4xx/5xx, as a milter reject does) counts as rejected, not failed.
Exit status 0 unless a connection could not be made or a message failed.
"""
import os
import smtplib
import sys
import threading


def files_under(dirs):
    out = []
    for d in dirs:
        for root, _, names in os.walk(d):
            out.extend(os.path.join(root, n) for n in names if not n.startswith("."))
    return sorted(out)


def main() -> int:
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    host, port, conns, dirs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    files = files_under(dirs)
    counts = {"accepted": 0, "rejected": 0, "failed": 0}
    lock = threading.Lock()

    def worker(part):
        try:
            s = smtplib.SMTP(host, port, timeout=60)
        except OSError as e:
            print(f"cannot connect to {host}:{port}: {e}", file=sys.stderr)
            with lock:
                counts["failed"] += len(part)
            return
        with s:
            for path in part:
                with open(path, "rb") as f:
                    data = f.read()
                if data.startswith(b"From "):
                    data = data.split(b"\n", 1)[1] if b"\n" in data else b""
                data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
                key = "accepted"
                try:
                    s.sendmail("bench@localdomain", ["user@example.net"], data)
                except (smtplib.SMTPDataError, smtplib.SMTPRecipientsRefused, smtplib.SMTPSenderRefused):
                    key = "rejected"
                    s.rset()
                except smtplib.SMTPException as e:
                    print(f"{path}: {e}", file=sys.stderr)
                    key = "failed"
                    s.rset()
                with lock:
                    counts[key] += 1

    threads = [threading.Thread(target=worker, args=(files[i::conns],)) for i in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"sent {len(files)} accepted {counts['accepted']} rejected {counts['rejected']} failed {counts['failed']}")
    return 0 if counts["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
