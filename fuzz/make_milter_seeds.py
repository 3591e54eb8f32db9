#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_milter: MTA -> filter byte streams as Postfix
sends them (milter protocol version 6), frame by frame as protocol.hpp lays
them out: a 4-byte big-endian length counting the letter and its data, the
command letter, then the data; strings are NUL-terminated.

    fuzz/make_milter_seeds.py [DIR]      (default: fuzz/corpus/fuzz_milter)
"""
import os
import struct
import sys


def frame(letter, data=b""):
    return struct.pack(">I", len(data) + 1) + letter + data


def z(*strings):
    return b"".join(s.encode() + b"\0" for s in strings)


def negotiate(version=6, actions=0x1FF, steps=0x1FFFFF):
    return frame(b"O", struct.pack(">III", version, actions, steps))


def macros(stage, **values):
    return frame(b"D", stage + z(*[x for kv in values.items() for x in kv]))


def connect(host="mail.example.net", family=b"4", port=25, address="192.0.2.10"):
    if family == b"U":
        return frame(b"C", z(host) + b"U")
    return frame(b"C", z(host) + family + struct.pack(">H", port) + z(address))


MESSAGE_HEADERS = [
    ("From", " \"Prize Department\" <winner@lucky-prizes.example>"),
    ("To", " you@example.org"),
    ("Subject", " YOU HAVE WON $1,000,000 !!!"),
    ("Received", " from a.example\n\tby b.example; Mon, 2 Sep 2002 10:00:00 +0000"),
    ("X-Reply", " 550 5.7.1 Rejected: 100% spam\nsecond line"),
]


def message(headers=MESSAGE_HEADERS, body=b"CONGRATULATIONS! Click http://198.51.100.7/claim now!!!\r\n",
            chunks=2):
    out = macros(b"M", i="4F1A2B3C", **{"{mail_addr}": "winner@lucky-prizes.example"})
    out += frame(b"M", z("<winner@lucky-prizes.example>", "SIZE=1234", "BODY=8BITMIME"))
    out += frame(b"R", z("<you@example.org>"))
    out += frame(b"R", z("<other@example.org>", "NOTIFY=NEVER"))
    out += frame(b"T")
    for name, value in headers:
        out += frame(b"L", z(name, value))
    out += frame(b"N")
    step = max(1, len(body) // chunks)
    for i in range(0, len(body), step):
        out += frame(b"B", body[i:i + step])
    out += frame(b"E")
    return out


def postfix_session():
    out = negotiate()
    out += macros(b"C", j="mx.example.org", **{"{daemon_name}": "smtpd", "v": "Postfix 3.7"})
    out += connect()
    out += macros(b"H", **{"{tls_version}": "TLSv1.3"})
    out += frame(b"H", z("mail.example.net"))
    out += message()
    # A second message on the same connection, then an aborted one.
    out += message(headers=[("From", " Alice <Alice@Example.ORG>"), ("Subject", " =?utf-8?q?caf=C3=A9?=")],
                   body=b"Meeting notes attached.\r\n", chunks=1)
    out += macros(b"M", **{"{auth_authen}": "alice"})
    out += frame(b"M", z("<alice@example.org>"))
    out += frame(b"A")
    out += frame(b"Q")
    return out


def reuse_session():
    # QUIT_NC keeps the socket; header_leading_space only; unix-socket client.
    out = negotiate(6, 0x31, 1 << 20)
    out += connect("localhost", b"L", 0, "/var/run/smtp.sock")
    out += frame(b"H", z("localhost"))
    out += message(headers=[("Subject", "  leading space"), ("X-Folded", " a\r\n b\n c")], body=b"x" * 100)
    out += frame(b"K")
    out += connect("unknown", b"U")
    out += frame(b"U", z("XCLIENT NAME=foo"))
    out += message(body=b"second\r\n")
    out += frame(b"Q")
    return out


def bad_streams():
    yield "oversize_frame", negotiate() + struct.pack(">I", 0x7FFFFFFF) + b"B"
    yield "empty_frame", negotiate() + struct.pack(">I", 0)
    yield "unknown_letter", negotiate() + frame(b"Z", b"data")
    yield "malformed_header", negotiate() + frame(b"L", b"Subject\0no terminator")
    yield "before_negotiate", frame(b"H", z("early.example")) + negotiate()
    yield "old_version", negotiate(1) + frame(b"H", z("x"))
    yield "partial_tail", negotiate() + frame(b"B", b"cut")[:-2]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus", "fuzz_milter")
    os.makedirs(out_dir, exist_ok=True)
    seeds = [("postfix_session", postfix_session()), ("reuse_session", reuse_session())]
    seeds += list(bad_streams())
    for name, data in seeds:
        with open(os.path.join(out_dir, name + ".bin"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
