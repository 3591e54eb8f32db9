#!/usr/bin/env python3
"""Answer HTTP requests on 127.0.0.1:PORT with 200 and keep what came.

usage: capture_headers.py PORT FILE

For the last request, FILE holds its Host and every X-Forwarded-For header it
carried, one "Name: value" a line, in the order they came (proxy_test.sh: what
nginx sends upstream). Runs until killed.
"""
import http.server
import sys


class Capture(http.server.BaseHTTPRequestHandler):
    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        lines = [f"Host: {v}" for v in self.headers.get_all("Host", [])]
        lines += [f"X-Forwarded-For: {v}" for v in self.headers.get_all("X-Forwarded-For", [])]
        with open(self.server.file, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = answer
    do_POST = answer

    def log_message(self, fmt, *args):
        sys.stderr.write("capture: " + fmt % args + "\n")


def main(argv) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    server = http.server.HTTPServer(("127.0.0.1", int(argv[1])), Capture)
    server.file = argv[2]
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
