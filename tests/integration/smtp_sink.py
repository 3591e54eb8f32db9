#!/usr/bin/env python3
"""A tiny SMTP sink for the Postfix integration test.

usage: smtp_sink.py PORT OUTDIR

Listens on 127.0.0.1:PORT only and accepts every message. Each message is
written to OUTDIR as NNNN-<first recipient>.eml (LF line endings, dot-unstuffed)
through a temporary name, so a file that exists is complete. It greets as
"sink.invalid" so that Postfix does not take it for itself (loop detection).
Runs until killed (SIGTERM).
"""
import os
import re
import signal
import socketserver
import sys
import threading

counter_lock = threading.Lock()
counter = [0]


def safe_name(address: str) -> str:
    return re.sub(r"[^A-Za-z0-9@._+-]", "_", address) or "unknown"


class Handler(socketserver.StreamRequestHandler):
    timeout = 30  # seconds of silence before the sink drops a connection

    def reply(self, line: str) -> None:
        self.wfile.write((line + "\r\n").encode("ascii"))
        self.wfile.flush()

    def handle(self) -> None:
        sender, recipients = None, []
        self.reply("220 sink.invalid ESMTP test sink")
        while True:
            raw = self.rfile.readline(65536)
            if not raw:
                return
            line = raw.decode("latin-1").rstrip("\r\n")
            verb = line[:4].upper()
            if verb == "EHLO":
                self.reply("250-sink.invalid")
                self.reply("250 8BITMIME")
            elif verb == "HELO":
                self.reply("250 sink.invalid")
            elif verb == "MAIL":
                sender, recipients = line[10:].strip(), []
                self.reply("250 2.1.0 Ok")
            elif verb == "RCPT":
                m = re.search(r"<([^>]*)>", line)
                recipients.append(m.group(1) if m else line[8:].strip())
                self.reply("250 2.1.5 Ok")
            elif verb == "DATA":
                if not recipients:
                    self.reply("503 5.5.1 No recipients")
                    continue
                self.reply("354 End data with <CR><LF>.<CR><LF>")
                lines = []
                while True:
                    raw = self.rfile.readline(1 << 20)
                    if not raw:
                        return
                    if raw in (b".\r\n", b".\n"):
                        break
                    if raw.startswith(b"."):
                        raw = raw[1:]
                    lines.append(raw.rstrip(b"\r\n") + b"\n")
                self.store(sender, recipients, b"".join(lines))
                self.reply("250 2.0.0 Ok: stored")
                sender, recipients = None, []
            elif verb == "RSET":
                sender, recipients = None, []
                self.reply("250 2.0.0 Ok")
            elif verb == "NOOP":
                self.reply("250 2.0.0 Ok")
            elif verb == "QUIT":
                self.reply("221 2.0.0 Bye")
                return
            else:
                self.reply("502 5.5.2 Command not implemented")

    def store(self, sender, recipients, data: bytes) -> None:
        outdir = self.server.outdir
        with counter_lock:
            counter[0] += 1
            n = counter[0]
        name = "%04d-%s.eml" % (n, safe_name(recipients[0]))
        tmp = os.path.join(outdir, "." + name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(b"X-Sink-Envelope: from=%s to=%s\n" % (
                (sender or "").encode("latin-1"), ",".join(recipients).encode("latin-1")))
            f.write(data)
        os.rename(tmp, os.path.join(outdir, name))


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True

    def handle_error(self, request, client_address):
        # Port probes connect and go away at once; that is not worth a traceback.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    port, outdir = int(sys.argv[1]), sys.argv[2]
    server = Server(("127.0.0.1", port), Handler)
    server.outdir = outdir
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print("smtp_sink: listening on 127.0.0.1:%d, writing to %s" % (port, outdir), flush=True)
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
