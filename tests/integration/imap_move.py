#!/usr/bin/env python3
"""Move one message between IMAP folders, as a mail client does.

usage: imap_move.py PORT USER PASSWORD FROM TO SIGNATURE

Logs in to 127.0.0.1:PORT (plain IMAP, LOGIN), selects FROM, finds the message
whose X-Mailsift-Signature is SIGNATURE and moves it to TO with UID MOVE
(RFC 6851). Prints what happened; exit 0 when exactly one message was moved,
1 otherwise.
"""
import imaplib
import sys


def main(argv) -> int:
    if len(argv) != 7:
        print(__doc__, file=sys.stderr)
        return 2
    port, user, password, src, dst, signature = int(argv[1]), argv[2], argv[3], argv[4], argv[5], argv[6]
    with imaplib.IMAP4("127.0.0.1", port, timeout=30) as imap:
        imap.login(user, password)
        typ, _ = imap.select(src)
        if typ != "OK":
            print(f"cannot select {src}")
            return 1
        typ, data = imap.uid("SEARCH", None, "HEADER", "X-Mailsift-Signature", signature)
        uids = data[0].split() if typ == "OK" and data and data[0] else []
        if len(uids) != 1:
            print(f"{len(uids)} messages in {src} with X-Mailsift-Signature {signature}")
            return 1
        typ, data = imap.uid("MOVE", uids[0], dst)
        print(f"MOVE {src} -> {dst}: {typ} {data}")
        imap.logout()
        return 0 if typ == "OK" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
