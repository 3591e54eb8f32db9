#!/usr/bin/env python3
"""The SMTP sink of tests/integration/smtp_sink.py, with a listen backlog fit for load.

usage: postfix_throughput_sink.py PORT OUTDIR

Same behaviour and file format as tests/integration/smtp_sink.py (it is imported
from there, not copied), except for the listen(2) backlog: socketserver's default
of 5 makes the kernel drop SYNs as soon as a handful of connections arrive at once,
and every dropped SYN costs the client a 1 s (then 3 s, ...) retransmission, which
turns a benchmark into a measurement of TCP retry timers. Used by
bench/postfix_throughput.sh.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import smtp_sink  # noqa: E402  (path set up just above)

smtp_sink.Server.request_queue_size = 512

if __name__ == "__main__":
    sys.exit(smtp_sink.main())
