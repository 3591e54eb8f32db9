#!/usr/bin/env python3
"""Send one message file over SMTP and report what the server answered.

usage: smtp_send.py [--auth USER PASSWORD] HOST PORT SENDER RECIPIENT FILE [PREPEND-HEADER...]

Each PREPEND-HEADER ("Name: value") is put in front of the file's headers.
With --auth it logs in (SMTP AUTH, PLAIN or LOGIN, no TLS) after EHLO.
Prints one line "<code> <stage> <server text>" where stage is the SMTP step
that produced the code (connect, ehlo, auth, mail, rcpt, data or done) and code
is the final reply (250 when the message was accepted). Exit status: 0 accepted,
4 temporary failure (4xx), 5 permanent failure (5xx), 1 anything else
(connection refused, timeout...).
"""
import smtplib
import socket
import sys


def main() -> int:
    args = sys.argv[1:]
    auth = None
    if args[:1] == ["--auth"]:
        if len(args) < 3:
            print(__doc__, file=sys.stderr)
            return 2
        auth, args = (args[1], args[2]), args[3:]
    if len(args) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    host, port, sender, rcpt, path = args[0], int(args[1]), args[2], args[3], args[4]
    with open(path, "rb") as f:
        body = f.read()
    prepend = "".join(h + "\r\n" for h in args[5:]).encode("ascii")
    # smtplib.data() turns bare LF into CRLF and dot-stuffs.
    message = prepend + body.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")

    stage = "connect"
    try:
        with smtplib.SMTP(timeout=20) as s:
            code, msg = s.connect(host, port)
            if code != 220:
                raise smtplib.SMTPResponseException(code, msg)
            stage = "ehlo"
            code, msg = s.ehlo("client.localdomain")
            if code != 250:
                raise smtplib.SMTPResponseException(code, msg)
            if auth is not None:
                stage = "auth"
                # Raises SMTPAuthenticationError (a response exception) when refused,
                # SMTPNotSupportedError when the server offers no AUTH.
                s.login(auth[0], auth[1])
            stage = "mail"
            code, msg = s.mail(sender)
            if code != 250:
                raise smtplib.SMTPResponseException(code, msg)
            stage = "rcpt"
            code, msg = s.rcpt(rcpt)
            if code not in (250, 251):
                raise smtplib.SMTPResponseException(code, msg)
            stage = "data"
            code, msg = s.data(message)
            if code != 250:
                raise smtplib.SMTPResponseException(code, msg)
            stage = "done"
    except smtplib.SMTPResponseException as e:
        text = e.smtp_error.decode("latin-1", "replace") if isinstance(e.smtp_error, bytes) else str(e.smtp_error)
        print("%d %s %s" % (e.smtp_code, stage, text.replace("\n", " ")), flush=True)
        return 4 if 400 <= e.smtp_code < 500 else 5 if 500 <= e.smtp_code < 600 else 1
    except (OSError, smtplib.SMTPException) as e:
        print("000 %s %s: %s" % (stage, type(e).__name__, e), flush=True)
        return 1
    print("%d %s %s" % (code, stage, msg.decode("latin-1", "replace").replace("\n", " ")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
