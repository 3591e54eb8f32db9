#!/usr/bin/env python3
"""Console load for bench/console_load.sh: N clients at once on mailsiftd's
console, each on its own connection and requesting as fast as the console
answers for SECONDS: most poll GET /api/status, every fifth POSTs /api/scan
with a message, and one keeps failing to sign in, each time from another
address of 127.0.0.0/8 (so the per-address limit does not stop it; the
global budget of password checks does). They share one session, signed in before the clock starts
("ready" on standard error then). Prints one line: requests answered by kind
and the console's own latency percentiles.

usage: console_clients.py BASE USER PASSWORD MESSAGE CLIENTS SECONDS
"""
import http.client
import json
import sys
import threading
import time


def main():
    base, user, password, message, clients, seconds = sys.argv[1:7]
    host, port = base.split("//")[1].split(":")
    clients, seconds = int(clients), float(seconds)
    raw = open(message, "rb").read()
    counts = {"status": 0, "scan": 0, "signin": 0, "errors": 0}
    latencies = []
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    deadline = [0.0]
    attempts, refused = [0], [0]

    def login(c, pw):
        c.request("POST", "/api/login", json.dumps({"name": user, "password": pw}),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read()
        return r.status, r.getheader("Set-Cookie", "").split(";")[0], (json.loads(body).get("csrf") if r.status == 200 else None)

    def client(i):
        c = http.client.HTTPConnection(host, int(port), timeout=60)
        kind = "signin" if i == 0 else ("scan" if i % 5 == 0 else "status")
        cookie, csrf = session
        start.wait()
        while time.monotonic() < deadline[0]:
            t = time.monotonic()
            try:
                if kind == "signin":
                    attempts[0] += 1
                    source = f"127.0.{attempts[0] // 250 % 250}.{2 + attempts[0] % 250}"
                    c = http.client.HTTPConnection(host, int(port), timeout=60, source_address=(source, 0))
                    status = login(c, "wrong password")[0]
                    c.close()
                    ok = status in (401, 429)
                    with lock:
                        refused[0] += status == 429
                elif kind == "scan":
                    c.request("POST", "/api/scan", raw, {"Cookie": cookie, "X-CSRF-Token": csrf})
                    r = c.getresponse(); r.read(); ok = r.status == 200
                else:
                    c.request("GET", "/api/status", None, {"Cookie": cookie})
                    r = c.getresponse(); r.read(); ok = r.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                c = http.client.HTTPConnection(host, int(port), timeout=60)
            with lock:
                counts[kind if ok else "errors"] += 1
                latencies.append(time.monotonic() - t)

    first = http.client.HTTPConnection(host, int(port), timeout=60)
    _, cookie, csrf = login(first, password)
    session = (cookie, csrf)
    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    deadline[0] = time.monotonic() + seconds
    print("ready", file=sys.stderr, flush=True)
    start.wait()
    for t in threads:
        t.join()
    latencies.sort()
    q = lambda p: latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000 if latencies else 0
    print(f"console: {clients} clients, {sum(counts.values())} requests ({counts['status']} status, "
          f"{counts['scan']} scans, {counts['signin']} failed sign-ins of which {refused[0]} unchecked (429), {counts['errors']} errors), "
          f"p50 {q(0.5):.1f} ms, p99 {q(0.99):.1f} ms")


if __name__ == "__main__":
    main()
