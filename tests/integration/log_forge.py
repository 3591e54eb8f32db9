#!/usr/bin/env python3
"""Tries to write lines into mailsiftd's log from the wire (issue 41, item 1).

Each payload is a line break (LF, CR, CRLF, NEL, U+2028) followed by a whole
console audit line of a failed sign-in from 203.0.113.77: what the shipped
fail2ban filter would ban if mailsiftd wrote it as a line of its own. Every
payload goes where a stranger can put it:

  - over the milter protocol (speaking it here, as Postfix would, but with
    whatever bytes we like): the queue ID (macro "i" at connect, MAIL and the
    end of the message), the client's host name, HELO, MAIL FROM, RCPT TO and
    the Subject header field;
  - to the console over HTTPS: the account name typed at the sign-in, and
    X-Forwarded-For (which only a trusted proxy may set; sent anyway).

usage: log_forge.py --milter HOST:PORT --console HOST:PORT --ca CERT
Prints one "sent ..." line per message or sign-in and exits 0 when every
conversation got its answer (the daemon's answers are not judged here:
console_test.sh judges what the daemon wrote in its log).
"""
import argparse
import json
import socket
import ssl
import struct
import sys

FORGED_ADDRESS = "203.0.113.77"
AUDIT = ("<6>console audit: event=sign-in outcome=failed account=admin role=- "
         f"client={FORGED_ADDRESS} target=-")
BREAKS = ["\n", "\r", "\r\n", "\u0085", "\u2028"]


def payloads():
    return ["X" + brk + AUDIT for brk in BREAKS]


# ---------------------------------------------------------------- milter
def frame(cmd, data=b""):
    return struct.pack(">I", len(data) + 1) + cmd + data


def read_frame(sock):
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            raise ConnectionError("mailsiftd closed the connection")
        head += chunk
    (length,) = struct.unpack(">I", head)
    body = b""
    while len(body) < length:
        chunk = sock.recv(length - len(body))
        if not chunk:
            raise ConnectionError("mailsiftd closed the connection mid-frame")
        body += chunk
    return body[:1], body[1:]


def z(text):
    return text.encode("utf-8") + b"\0"


def macros(for_cmd, pairs):
    return frame(b"D", for_cmd + b"".join(z(k) + z(v) for k, v in pairs))


def expect(sock, what):
    cmd, data = read_frame(sock)
    if cmd not in (b"c", b"O"):
        raise RuntimeError(f"{what}: mailsiftd answered {cmd!r} {data[:80]!r}")


def milter_message(host, port, payload):
    with socket.create_connection((host, port), timeout=30) as s:
        # Version 6, every action we might be asked for, every step sent.
        s.sendall(frame(b"O", struct.pack(">III", 6, 0x1FF, 0)))
        expect(s, "negotiation")
        s.sendall(macros(b"C", [("j", "mx.example.net"), ("i", payload)]))
        s.sendall(frame(b"C", z(payload) + b"4" + struct.pack(">H", 25) + z("192.0.2.25")))
        expect(s, "connect")
        s.sendall(frame(b"H", z(payload)))
        expect(s, "HELO")
        s.sendall(macros(b"M", [("i", payload)]))
        s.sendall(frame(b"M", z("<" + payload + "@example.net>")))
        expect(s, "MAIL FROM")
        s.sendall(frame(b"R", z("<" + payload + "@example.org>")))
        expect(s, "RCPT TO")
        for name, value in [("From", "someone@example.net"), ("Subject", payload),
                            ("Message-ID", "<forge@example.net>")]:
            s.sendall(frame(b"L", z(name) + z(value)))
            expect(s, f"header {name}")
        s.sendall(frame(b"N"))
        expect(s, "end of headers")
        s.sendall(frame(b"B", b"Nothing to see here.\r\n"))
        expect(s, "body")
        s.sendall(macros(b"E", [("i", payload)]))
        s.sendall(frame(b"E"))
        while True:  # header changes, then the final answer
            cmd, _ = read_frame(s)
            if cmd in (b"a", b"c", b"r", b"t", b"d", b"y"):
                break
        s.sendall(frame(b"Q"))


# ---------------------------------------------------------------- console
def console_sign_in(host, port, ca, name, forwarded):
    body = json.dumps({"name": name, "password": "not-the-password"}).encode()
    head = (f"POST /api/login HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n").encode()
    head += b"X-Forwarded-For: " + forwarded.encode("utf-8") + b"\r\n\r\n"
    ctx = ssl.create_default_context(cafile=ca)
    with socket.create_connection((host, port), timeout=30) as raw:
        with ctx.wrap_socket(raw, server_hostname=host) as s:
            s.sendall(head + body)
            answer = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
    return answer.split(b"\r\n", 1)[0].decode("latin-1")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--milter", required=True, help="HOST:PORT of mailsiftd's milter listener")
    ap.add_argument("--console", required=True, help="HOST:PORT of its console (HTTPS)")
    ap.add_argument("--ca", required=True, help="the console's certificate, to trust")
    args = ap.parse_args()
    mhost, mport = args.milter.rsplit(":", 1)
    chost, cport = args.console.rsplit(":", 1)
    failures = 0
    for p in payloads():
        try:
            milter_message(mhost, int(mport), p)
            print(f"sent a message over the milter protocol with {p!r} in every field")
        except Exception as e:  # noqa: BLE001 - reported, counted
            failures += 1
            print(f"milter conversation failed: {e}")
        # The header value cannot hold a raw line break (HTTP forbids it): the
        # rest of the payload, U+2028 included, goes as it is.
        forwarded = FORGED_ADDRESS + " target=- " + p.replace("\r", "").replace("\n", "")
        try:
            status = console_sign_in(chost, int(cport), args.ca, p, forwarded)
            print(f"signed in as {p!r} with X-Forwarded-For {forwarded!r}: {status}")
        except Exception as e:  # noqa: BLE001
            failures += 1
            print(f"console sign-in failed: {e}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
