"""console_check.py's checks of the console's connection bounds (server.hpp),
with real sockets from 127.0.8.x: 16 from one address; when all 64 are taken,
a newcomer evicts an idle connection that never signed in, from the address
holding the most, so four addresses holding every socket they can lock out
neither a signed-in administrator nor a sign-in from elsewhere; with nobody
to evict, the newcomer is closed at once.
"""
import http.client
import select
import socket
import time


def closed_at_once(con, source):
    """Whether a new connection from `source` is closed without a word."""
    extra = socket.create_connection((con.host, con.port), timeout=10, source_address=(source, 0))
    extra.settimeout(5)
    try:
        closed = extra.recv(1) == b""
    except (ConnectionResetError, socket.timeout) as e:
        closed = isinstance(e, ConnectionResetError)
    extra.close()
    return closed


def closed(sockets):
    """The ones of `sockets` the console has closed (it sends nothing before a
    TLS ClientHello, so a readable one has seen the end or a reset)."""
    time.sleep(0.5)
    readable, _, _ = select.select(sockets, [], [], 0)
    return set(readable)


def hold(con, source, n):
    return [socket.create_connection((con.host, con.port), timeout=10, source_address=(source, 0))
            for _ in range(n)]


def session_on(c, token):
    """GET /api/session on the connection `c`: the status, or None if it was closed."""
    try:
        c.request("GET", "/api/session", headers={"Cookie": token})
        r = c.getresponse()
        r.read()
        return r.status
    except (OSError, http.client.HTTPException):
        return None


def connection_checks(check, con, token, admin):
    # The administrator's keep-alive connection, signed in before the flood.
    kept = http.client.HTTPSConnection(con.host, con.port, context=con.ctx, timeout=60)
    check(session_on(kept, token) == 200, "a signed-in administrator's keep-alive connection is served")
    kept_socket = kept.sock
    held = []
    try:
        held += hold(con, "127.0.8.1", 16)
        check(not closed(held), "16 idle connections from one address are held")
        check(closed_at_once(con, "127.0.8.1"), "the 17th idle connection from one address is closed at once")
        status, _, _ = con.request("GET", "/api/session", None, {"Cookie": token}, source="127.0.8.2")
        check(status == 200, "while another address is served", status)
        time.sleep(0.5)  # and that connection, closed, is gone

        # 16 more from each of three other addresses: with the administrator's, 65
        # connections; the last to come evicts the one idle longest of the fullest address.
        for k in range(2, 5):
            held += hold(con, f"127.0.8.{k}", 16)
        gone = closed(held)
        check(gone == {held[0]},
              "the 65th connection evicts the idle one waiting longest (127.0.8.1's first), "
              "not the signed-in keep-alive one",
              f"{len(gone)} closed, the first {'among them' if held[0] in gone else 'not'}")

        # A fifth address signs in while four hold every socket they can.
        started = time.monotonic()
        try:
            status, _, fresh, _ = con.login(*admin, source="127.0.8.5")
        except (OSError, http.client.HTTPException) as e:
            status, fresh = repr(e), None
        check(status == 200 and fresh, "a sign-in from a fifth address is served while four hold every socket",
              f"{status} after {time.monotonic() - started:.1f} s")
        gone = closed(held)
        check(len(gone) == 2 and held[0] in gone, "it evicted one more idle connection of theirs, and only one",
              f"{len(gone)} closed")
        check(session_on(kept, token) == 200 and kept.sock is kept_socket,
              "the signed-in keep-alive connection is still served, on the same socket")
        # They reconnect as fast as they can: each newcomer of theirs evicts one of theirs.
        for k in range(1, 5):
            gone = closed(held)
            still = sum(1 for s in held if s not in gone and s.getsockname()[0] == f"127.0.8.{k}")
            held += hold(con, f"127.0.8.{k}", 16 - still)
        check(session_on(kept, token) == 200 and kept.sock is kept_socket,
              "and after they reconnect, still served on the same socket")
    finally:
        for s in held:
            s.close()
        kept.close()
    time.sleep(0.5)
    status, _, _ = con.request("GET", "/api/session", None, {"Cookie": token})
    check(status == 200, "and the console serves again when they are gone", status)

    # Nobody to evict: 64 connections that have each carried a signed-in request.
    signed = []
    try:
        for k in range(1, 5):
            for _ in range(16):
                c = http.client.HTTPSConnection(con.host, con.port, context=con.ctx, timeout=60,
                                                source_address=(f"127.0.8.{k}", 0))
                signed.append(c)
                session_on(c, token)
        check(closed_at_once(con, "127.0.8.5"),
              "with all 64 connections signed in, the 65th is closed at once: nobody is evicted")
        check(all(session_on(c, token) == 200 for c in signed[:4]), "and the signed-in ones are still served")
    finally:
        for c in signed:
            c.close()
    time.sleep(0.5)
