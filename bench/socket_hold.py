#!/usr/bin/env python3
"""socket_hold.py - the correction socket held by another Unix user (issue 58's
abuse target), measured on a real mailsiftd. A benchmark, not a test: it
prints markdown and exits 0 whenever it ran, whatever the numbers.

usage: bench/socket_hold.py [--mailsift BIN] [--mailsiftd BIN] [--connections N]
                            [--runs R]

mailsiftd with a model learned from the committed fixtures and its correction
socket open to every user (correct_socket_mode = 0666); a child process as
user nobody opens --connections (16) connections, each announcing a 16 MiB
body and sending none of it, and holds them. Reported per run: mailsiftd's
VmRSS idle and while they are held (target: within 16 MiB of idle), how many
of the holder's connections mailsiftd refused, its log lines about them, and
the wall time of a correction by root (trusted, the mail pipe's user) made
during the attack (target: answered within 1 s). Needs root (the child
becomes nobody).
"""

import argparse
import os
import pwd
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HEAD = b"MAILSIFT-CORRECT 1 spam 1 16777000\n"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def hold(path, n, ready_w):
    """The child: as nobody, n connections that announce 16 MiB; one byte on ready_w once open."""
    nobody = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)
    held = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        try:
            s.sendall(HEAD)
        except OSError:
            pass  # past the per-peer limit mailsiftd answers busy and closes: the refusal
        held.append(s)
    os.write(ready_w, b"1")
    time.sleep(3600)  # until killed


def one_run(args, work, k):
    d = os.path.join(work, f"run{k}")
    os.makedirs(d)
    os.chmod(d, 0o711)  # nobody may reach the socket, not read the directory
    db, conf, log_path = (os.path.join(d, n) for n in ("mailsift.db", "mailsift.conf", "mailsiftd.log"))
    sock = os.path.join(d, "correct.sock")
    with open(conf, "w") as f:
        f.write(f"database = {db}\nstats_interval = 1\nhistory = off\ncorrect_socket = {sock}\n"
                "correct_socket_mode = 0666\n")
    data = os.path.join(ROOT, "tests", "data", "messages")
    spam = [os.path.join(data, n) for n in sorted(os.listdir(data)) if n.startswith("spam")]
    ham = [os.path.join(data, n) for n in sorted(os.listdir(data)) if n.startswith("ham")]
    subprocess.run([args.mailsift, "--config", conf, "learn", "--spam", *spam], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([args.mailsift, "--config", conf, "learn", "--ham", *ham], check=True, stdout=subprocess.DEVNULL)
    log = open(log_path, "w")
    milter = os.path.join(d, "milter.sock")
    daemon = subprocess.Popen([args.mailsiftd, "--foreground", "--config", conf, "--listen", "unix:" + milter],
                              stdout=log, stderr=log)
    child = None
    try:
        for _ in range(600):
            if os.path.exists(sock) or daemon.poll() is not None:
                break
            time.sleep(0.05)
        if daemon.poll() is not None:
            with open(log_path, errors="replace") as f:
                sys.exit("socket_hold: mailsiftd did not start: " + f.read()[-500:])
        time.sleep(1.0)
        idle = rss_kib(daemon.pid)
        r, w = os.pipe()
        child = os.fork()
        if child == 0:
            os.close(r)
            try:
                hold(sock, args.connections, w)
            finally:
                os._exit(0)
        os.close(w)
        os.read(r, 1)
        os.close(r)
        time.sleep(1.0)
        held = rss_kib(daemon.pid)
        msg = os.path.join(d, "new.eml")
        with open(msg, "w") as f:
            f.write("From: a@example.org\nSubject: the quarterly numbers\n\nAttached are the numbers.\n")
        t0 = time.monotonic()
        out = subprocess.run([args.mailsift, "--config", conf, "correct", "--spam", msg], capture_output=True, text=True)
        seconds = time.monotonic() - t0
        with open(log_path, errors="replace") as f:
            text = f.read()
        refusals = sum(1 for line in text.splitlines() if "refused a correction request from socket:nobody" in line)
        limited = "has 8 connections open already" in text or "connections open already" in text
        applied = out.returncode == 0 and "1 learned" in out.stdout
        return idle, held, refusals, limited, seconds, applied
    finally:
        if child:
            os.kill(child, 9)
            os.waitpid(child, 0)
        daemon.terminate()
        daemon.wait(timeout=60)
        log.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mailsift", default=os.path.join(ROOT, "build", "src", "cli", "mailsift"))
    ap.add_argument("--mailsiftd", default=os.path.join(ROOT, "build", "src", "daemon", "mailsiftd"))
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("socket_hold: needs root (the holder becomes nobody)")
    print(f"## The correction socket held by user nobody: {args.connections} connections announcing 16 MiB each")
    print()
    print("| run | VmRSS idle, KiB | held, KiB | growth | holder's refusals logged (lines) | per-peer limit said | "
          "root's correction during it | applied |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="mailsift-hold.") as work:
        os.chmod(work, 0o711)
        for k in range(1, args.runs + 1):
            idle, held, refusals, limited, seconds, applied = one_run(args, work, k)
            print(f"| {k} | {idle:,} | {held:,} | {(held - idle) / 1024:+.2f} MiB | {refusals} | "
                  f"{'yes' if limited else 'no'} | {seconds:.3f} s | {'yes' if applied else 'NO'} |")
    print()
    print("Targets (issue 58): growth within 16 MiB of idle; the trusted correction answered within 1 s.")


if __name__ == "__main__":
    main()
