"""console_check.py's raw HTTPS checks, for the rules a browser hides: the
security headers, no plain HTTP on the TLS port, a wrong password, the session
cookie's flags, the CSRF token, the limits on a request's body and headers,
the pacing of requests, the bounds on connections (console_connections.py),
and what a viewer's role is refused.
"""
import http.client
import json
import os
import socket
import time

from console_common import check, stats
from console_connections import connection_checks


def raw_checks(args, con):
    status, headers, body = con.request("GET", "/status")
    check(status == 401 and b"login-form" in body, "GET /status without a session: 401 and the sign-in form", status)
    csp = headers.get("Content-Security-Policy", "")
    check("script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp,
          "Content-Security-Policy without inline script, frame-ancestors 'none'", csp)
    check(headers.get("X-Content-Type-Options") == "nosniff", "X-Content-Type-Options: nosniff")
    check(headers.get("Strict-Transport-Security") == "max-age=31536000",
          "under TLS, Strict-Transport-Security: max-age=31536000", headers.get("Strict-Transport-Security"))
    status, _, _ = con.request("GET", "/api/status")
    check(status == 401, "GET /api/status without a session: 401", status)

    # Plain HTTP to the TLS port gets no page.
    try:
        c = http.client.HTTPConnection(con.host, con.port, timeout=10)
        c.request("GET", "/status")
        plain = c.getresponse().status
    except (OSError, http.client.HTTPException):
        plain = None
    check(plain is None, "plain HTTP to the console's TLS port is not served", plain)

    status, cookie, token, csrf = con.login(args.admin[0], "not the password")
    check(status == 401 and not cookie, "a wrong password: 401 and no cookie", status)
    status, cookie, token, csrf = con.login(*args.admin)
    flags = [f.strip() for f in cookie.split(";")]
    check(status == 200 and "HttpOnly" in flags and "SameSite=Strict" in flags and "Secure" in flags,
          "signing in sets the session cookie HttpOnly, SameSite=Strict, Secure", cookie)
    spam = open(os.path.join(args.messages, "spam_investment.eml"), "rb").read()
    before = stats(args)
    status, _, _ = con.request("POST", "/api/learn?class=spam", spam, {"Cookie": token})
    check(status == 403, "POST /api/learn without the CSRF token: 403", status)
    status, _, _ = con.request("POST", "/api/learn?class=spam", spam, {"Cookie": token, "X-CSRF-Token": "x" * 43})
    check(status == 403, "POST /api/learn with a wrong CSRF token: 403", status)
    check(stats(args) == before, "and nothing was learned (mailsift stats)", f"{before} -> {stats(args)}")

    # A body over the limit is refused from its Content-Length, before it is read.
    with socket.create_connection((con.host, con.port), timeout=60) as raw:
        with con.ctx.wrap_socket(raw, server_hostname=con.host) as tls:
            tls.sendall((f"POST /api/scan HTTP/1.1\r\nHost: {con.host}\r\nCookie: {token}\r\n"
                         f"X-CSRF-Token: {csrf}\r\nContent-Length: {args.max_body + 1}\r\n\r\n").encode())
            reply = b""
            while b"\r\n\r\n" not in reply:
                more = tls.recv(4096)
                if not more:
                    break
                reply += more
            reply = reply.decode(errors="replace")
    check(reply.startswith("HTTP/1.1 413"), "a request body over the limit: 413 from its Content-Length", reply[:40])
    # A sign-in, open to anybody, takes 4 KiB, not a message's size.
    status, _, _ = con.request("POST", "/api/login", json.dumps({"name": "x", "password": "p" * 5000}),
                               {"Content-Type": "application/json"})
    check(status == 413, "a sign-in body over 4 KiB: 413", status)
    check("frame-ancestors 'none'" in reply and "nosniff" in reply, "the 413 carries the security headers", reply)
    status, headers, _ = con.request("GET", "/api/status", None, {"Cookie": token, "X-Padding": "p" * 9000})
    check(status == 431, "request headers over 8 KiB: 431", status)
    check("frame-ancestors 'none'" in headers.get("Content-Security-Policy", ""),
          "the 431 carries the security headers", headers)

    # Requests are paced: 50 a second after a burst of 50, so 150 in a row take at
    # least two seconds (a lower bound: a busy machine only makes it longer).
    c = http.client.HTTPSConnection(con.host, con.port, context=con.ctx, timeout=60)
    started = time.monotonic()
    answered = 0
    for _ in range(150):
        c.request("GET", "/api/session", headers={"Cookie": token})
        r = c.getresponse()
        r.read()
        answered += r.status == 200
    took = time.monotonic() - started
    c.close()
    check(answered == 150 and took >= 1.9, "150 requests at once are all answered, paced to 50 a second",
          f"{answered} answered in {took:.2f} s")

    # Connections are bounded, and idle ones that never signed in go first (console_connections.py).
    connection_checks(check, con, token, args.admin)

    _, _, vtoken, vcsrf = con.login(*args.viewer)
    status, _, _ = con.request("POST", "/api/learn?class=spam", spam, {"Cookie": vtoken, "X-CSRF-Token": vcsrf})
    check(status == 403, "a viewer's learn, CSRF token and all: 403", status)
    before = stats(args)
    status, _, body = con.request("POST", "/api/scan", spam, {"Cookie": vtoken, "X-CSRF-Token": vcsrf})
    check(status == 200 and b'"verdict"' in body and stats(args) == before,
          "a viewer's scan: 200, a verdict, and nothing learned (a scan changes nothing)", status)
    status, _, _ = con.request("POST", "/api/correct", json.dumps({"signature": "0" * 32, "class": "spam"}),
                               {"Cookie": vtoken, "X-CSRF-Token": vcsrf, "Content-Type": "application/json"})
    check(status == 403, "a viewer's correction: 403", status)
