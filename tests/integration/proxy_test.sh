#!/usr/bin/env bash
# The console behind nginx, set up with the README's recipe as written (its
# address, ports and certificate paths aside): a real nginx from Debian's
# nginx-light, started here as a private master process (its configuration,
# pid file, logs and temporary files all under one mktemp -d directory; a
# system nginx is never touched), terminates TLS with a self-signed certificate
# made with openssl and passes the console through to a real mailsiftd that
# serves it in plain HTTP on 127.0.0.1. Sign-ins go through nginx from one
# loopback address carrying a forged X-Forwarded-For, and straight to the
# console from another; the audit lines mailsiftd writes must name the real
# client and never the forged one, and the shipped fail2ban filter, run with
# fail2ban-regex over them, yields the proxy's address (ban at the proxy).
#
# usage: proxy_test.sh MAILSIFTD MAILSIFT
#
# nginx listens on 127.0.0.1 on a free high port, mailsiftd on others; the
# clients use 127.0.0.3 (through nginx) and 127.0.0.4 (straight to mailsiftd)
# as their source addresses. Prints "ok - ..." / "not ok - ..." per check and
# "N passed, M failed" last; exit 0 only when nothing failed, 77 (skipped) when
# nginx is missing and cannot be installed (not root).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

README="$HERE/../../README.md"
FILTER="$HERE/../../etc/fail2ban/filter.d/mailsiftd-console.conf"
NGINXPID=""
CAPTUREPID=""
LOGS+=(nginx-error.log nginx-access.log capture.log)
stop_nginx() { stop_pid "$NGINXPID"; }
stop_capture() { stop_pid "$CAPTUREPID"; }
CLEANUP_STEPS+=(stop_nginx stop_capture)

PROXY_CLIENT=127.0.0.3   # a browser in front of nginx
DIRECT_CLIENT=127.0.0.4  # a client that reaches the console without nginx: not a trusted proxy
FORGED=203.0.113.9       # what both claim to be in their own X-Forwarded-For

read_args "$@"
need_commands python3 openssl curl nginx=nginx-light fail2ban-regex=fail2ban

make_workdir proxy
chmod 755 "$WORK"   # nginx's workers (nobody, under root) reach their temporary directories
MILTER_PORT=$(free_port)
CONSOLE_PORT=$(free_port)
NGINX_PORT=$(free_port)
CAPTURE_PORT=$(free_port)   # a second copy of the recipe passes to capture_headers.py there
CAPTURE_NGINX_PORT=$(free_port)
note "work directory $WORK; mailsiftd :$MILTER_PORT, console :$CONSOLE_PORT, nginx :$NGINX_PORT"
note "what nginx sends upstream: nginx :$CAPTURE_NGINX_PORT to capture_headers.py :$CAPTURE_PORT"
LOG="$WORK/mailsiftd.log"

# recipe NAME [LISTEN UPSTREAM]: the README's recipe NAME, with this run's address,
# ports and paths (nginx on LISTEN, passing to UPSTREAM; by default nginx's and
# the console's ports).
recipe() {
    python3 "$HERE/readme_recipe.py" "$README" "$1" \
        "listen 443 ssl;=listen 127.0.0.1:${2:-$NGINX_PORT} ssl;" \
        "127.0.0.1:8080=127.0.0.1:${3:-$CONSOLE_PORT}" \
        "/etc/ssl/certs/console.example.net.pem=$WORK/proxy.crt" \
        "/etc/ssl/private/console.example.net.key=$WORK/proxy.key"
}

# ---------------------------------------------------------------- mailsiftd
train_model
write_conf off
USERS="$WORK/console-users"
echo "console_users = $USERS" >>"$CONF"
if recipe nginx-console-conf >"$WORK/recipe.conf" 2>"$WORK/recipe.err" &&
    grep -qx "console_listen = 127.0.0.1:$CONSOLE_PORT" "$WORK/recipe.conf" &&
    grep -qx "console_trusted_proxies = 127.0.0.1" "$WORK/recipe.conf"; then
    cat "$WORK/recipe.conf" >>"$CONF"
    ok "the README's mailsift.conf lines for nginx (recipe nginx-console-conf), console on 127.0.0.1:$CONSOLE_PORT"
else
    sed 's/^/#   /' "$WORK/recipe.err" "$WORK/recipe.conf"
    bail "the README has the mailsift.conf lines for nginx (recipe nginx-console-conf)"
fi
PASSWORD="admin-$RANDOM$RANDOM$RANDOM"
if printf '%s\n' "$PASSWORD" | "$MAILSIFT" --config "$CONF" console-user add admin --role admin --password-stdin \
        >"$WORK/users.log" 2>&1; then
    ok "a console account made with mailsift console-user add"
else
    sed 's/^/#   /' "$WORK/users.log"
    bail "a console account made with mailsift console-user add"
fi
if start_daemon && grep -q "console on http://127.0.0.1:$CONSOLE_PORT/" "$LOG"; then
    ok "mailsiftd started (pid $DPID) with the console on http://127.0.0.1:$CONSOLE_PORT/"
else
    bail "mailsiftd started with the console on http://127.0.0.1:$CONSOLE_PORT/"
fi

# ---------------------------------------------------------------- nginx
if openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 \
        -keyout "$WORK/proxy.key" -out "$WORK/proxy.crt" >"$WORK/openssl.log" 2>&1; then
    chmod 600 "$WORK/proxy.key"
    ok "a self-signed certificate for 127.0.0.1 made with openssl"
else
    sed 's/^/#   /' "$WORK/openssl.log"
    bail "a self-signed certificate made with openssl"
fi
if ! recipe nginx-console >"$WORK/console.nginx" 2>"$WORK/recipe.err" ||
    ! recipe nginx-console "$CAPTURE_NGINX_PORT" "$CAPTURE_PORT" >"$WORK/capture.nginx" 2>>"$WORK/recipe.err"; then
    sed 's/^/#   /' "$WORK/recipe.err"
    bail "the README has the nginx recipe (nginx-console)"
fi
# shellcheck disable=SC2016  # nginx's variables, as the recipe has them
for line in "listen 127.0.0.1:$NGINX_PORT ssl;" "proxy_pass http://127.0.0.1:$CONSOLE_PORT;" \
    'proxy_set_header Host $host;' 'proxy_set_header X-Forwarded-For $remote_addr;'; do
    grep -qF -- "$line" "$WORK/console.nginx" || bail "the README's nginx recipe has '$line'"
done
# Around the recipe, which is a server block for sites-enabled/: what
# /etc/nginx/nginx.conf would give it, everything under WORK. The access log
# also shows the X-Forwarded-For a client sent to nginx. A second copy of the
# recipe, on a port of its own, passes to capture_headers.py instead of
# mailsiftd: what nginx sends upstream, which mailsiftd's log cannot show
# (it takes only the last address of X-Forwarded-For).
mkdir -p "$WORK/nginx-temp"
cat >"$WORK/nginx.conf" <<EOF
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log info;
worker_processes 1;
events { worker_connections 64; }
http {
    log_format sent '\$remote_addr "\$request" \$status xff="\$http_x_forwarded_for"';
    access_log $WORK/nginx-access.log sent;
    client_body_temp_path $WORK/nginx-temp/body;
    proxy_temp_path $WORK/nginx-temp/proxy;
    fastcgi_temp_path $WORK/nginx-temp/fastcgi;
    uwsgi_temp_path $WORK/nginx-temp/uwsgi;
    scgi_temp_path $WORK/nginx-temp/scgi;
    include $WORK/console.nginx;
    include $WORK/capture.nginx;
}
EOF
if nginx -t -c "$WORK/nginx.conf" -p "$WORK" >"$WORK/nginx-t.log" 2>&1; then
    ok "nginx -t accepts the README's recipe (recipe nginx-console)"
else
    sed 's/^/#   /' "$WORK/nginx-t.log" "$WORK/console.nginx"
    bail "nginx -t accepts the README's recipe"
fi
nginx -c "$WORK/nginx.conf" -p "$WORK" >>"$WORK/nginx-error.log" 2>&1 &
NGINXPID=$!
nginx_ready() { kill -0 "$NGINXPID" 2>/dev/null && port_open "$NGINX_PORT"; }
python3 "$HERE/capture_headers.py" "$CAPTURE_PORT" "$WORK/captured" >"$WORK/capture.log" 2>&1 &
CAPTUREPID=$!
capture_ready() { kill -0 "$CAPTUREPID" 2>/dev/null && port_open "$CAPTURE_PORT"; }
wait_for 10 capture_ready || bail "capture_headers.py listens on 127.0.0.1:$CAPTURE_PORT"
if wait_for 15 nginx_ready; then
    ok "a private nginx started (master pid $NGINXPID) on https://127.0.0.1:$NGINX_PORT/"
else
    bail "a private nginx started on https://127.0.0.1:$NGINX_PORT/"
fi

# ---------------------------------------------------------------- requests
# sign_in NAME SOURCE BASE PASSWORD [CURL ARGS...]: a sign-in from SOURCE; STATUS is
# the HTTP status, WORK/headers the answer's headers, AUDIT the audit lines
# mailsiftd logged for it (waited for up to 5 s).
STATUS=""
AUDIT=""
audit_lines() { tail -n "+$((MARK + 1))" "$LOG" | grep '^<6>console audit: ' || true; }
audit_came() { [ -n "$(audit_lines)" ]; }
sign_in() {
    local name=$1 source=$2 base=$3 password=$4
    shift 4
    MARK=$(wc -l <"$LOG")
    STATUS=$(curl -sS --max-time 10 --interface "$source" --cacert "$WORK/proxy.crt" \
        -c "$WORK/cookies" -b "$WORK/cookies" -D "$WORK/headers" -o "$WORK/body" -w '%{http_code}' \
        -H 'Content-Type: application/json' "$@" \
        --data "{\"name\": \"$name\", \"password\": \"$password\"}" "$base/api/login" 2>"$WORK/curl.err") || STATUS="curl failed: $(cat "$WORK/curl.err")"
    wait_for 5 audit_came || true
    AUDIT=$(audit_lines)
}
show_answer() {
    note "status $STATUS; audit lines: ${AUDIT:-none}"
    sed 's/^/#   /' "$WORK/headers" "$WORK/body" 2>/dev/null | head -n 20
}
PROXY="https://127.0.0.1:$NGINX_PORT"
DIRECT="http://127.0.0.1:$CONSOLE_PORT"
access_has() { tail -n 1 "$WORK/nginx-access.log" 2>/dev/null | grep -qF -- "$1"; }

# A wrong password through nginx, with a forged X-Forwarded-For.
rm -f "$WORK/cookies"
sign_in admin "$PROXY_CLIENT" "$PROXY" "wrong-$PASSWORD" -H "X-Forwarded-For: $FORGED"
if [ "$STATUS" = 401 ] &&
    [ "$AUDIT" = "<6>console audit: event=sign-in outcome=failed account=admin role=- client=127.0.0.1 forwarded=$PROXY_CLIENT target=-" ]; then
    ok "a wrong password through nginx from $PROXY_CLIENT with X-Forwarded-For: $FORGED: 401, audit line client=127.0.0.1 forwarded=$PROXY_CLIENT"
else
    show_answer
    not_ok "a wrong password through nginx from $PROXY_CLIENT: 401 and an audit line with client=127.0.0.1 forwarded=$PROXY_CLIENT"
fi
if access_has "$PROXY_CLIENT \"POST /api/login HTTP/1.1\" 401 xff=\"$FORGED\""; then
    ok "nginx saw the sign-in come from $PROXY_CLIENT with the forged X-Forwarded-For: $FORGED (its access log)"
else
    tail -n 3 "$WORK/nginx-access.log" | sed 's/^/#   /'
    not_ok "nginx's access log has the sign-in from $PROXY_CLIENT with X-Forwarded-For: $FORGED"
fi

# The right password through nginx: a session that works through it.
sign_in admin "$PROXY_CLIENT" "$PROXY" "$PASSWORD" -H "X-Forwarded-For: $FORGED"
if [ "$STATUS" = 200 ] && grep -qi '^set-cookie: ' "$WORK/headers" &&
    [ "$AUDIT" = "<6>console audit: event=sign-in outcome=ok account=admin role=admin client=127.0.0.1 forwarded=$PROXY_CLIENT target=-" ]; then
    ok "the right password through nginx: 200, Set-Cookie, audit line client=127.0.0.1 forwarded=$PROXY_CLIENT"
else
    show_answer
    not_ok "the right password through nginx: 200, Set-Cookie and an audit line with forwarded=$PROXY_CLIENT"
fi
COOKIES=$(grep -i '^set-cookie: ' "$WORK/headers" | tr -d '\r' || true)
if [ -n "$COOKIES" ] && ! grep -qiv '; Secure' <<<"$COOKIES" &&
    grep -qi '^strict-transport-security: max-age=31536000' "$WORK/headers"; then
    ok "through nginx every cookie is Secure ($(grep -c . <<<"$COOKIES") set) and the answer has Strict-Transport-Security"
else
    sed 's/^/#   /' "$WORK/headers"
    not_ok "through nginx the cookies are Secure and Strict-Transport-Security is sent"
fi
SESSION=$(curl -sS --max-time 10 --interface "$PROXY_CLIENT" --cacert "$WORK/proxy.crt" -b "$WORK/cookies" \
    "$PROXY/api/session" 2>&1 || true)
CSRF=$(python3 -c 'import json, sys; j = json.loads(sys.argv[1]); print(j["csrf"] if j.get("account") == "admin" else "")' \
    "$SESSION" 2>/dev/null || true)
MARK=$(wc -l <"$LOG")
OUT=$(curl -sS --max-time 10 --interface "$PROXY_CLIENT" --cacert "$WORK/proxy.crt" -b "$WORK/cookies" -o /dev/null \
    -w '%{http_code}' -H "X-CSRF-Token: $CSRF" -H "X-Forwarded-For: $FORGED" -X POST "$PROXY/api/logout" 2>&1 || true)
wait_for 5 audit_came || true
AUDIT=$(audit_lines)
if [ -n "$CSRF" ] && [ "$OUT" = 200 ] &&
    [ "$AUDIT" = "<6>console audit: event=sign-out outcome=ok account=admin role=admin client=127.0.0.1 forwarded=$PROXY_CLIENT target=-" ]; then
    ok "the session works through nginx (/api/session names admin) and its sign-out is logged with forwarded=$PROXY_CLIENT"
else
    note "session: $SESSION; sign-out: $OUT; audit lines: ${AUDIT:-none}"
    not_ok "the session works through nginx and its sign-out is logged with forwarded=$PROXY_CLIENT"
fi

# A browser sends Origin with every sign-in. The recipe is for port 443, where
# the Origin has no port and $host is the same name; on another port $host
# drops it and the console refuses (the README: use $http_host there).
rm -f "$WORK/cookies"
sign_in admin "$PROXY_CLIENT" "$PROXY" "$PASSWORD" -H "Origin: https://127.0.0.1"
if [ "$STATUS" = 200 ] && [[ "$AUDIT" == *" outcome=ok account=admin role=admin client=127.0.0.1 forwarded=$PROXY_CLIENT "* ]]; then
    ok "a browser's sign-in through nginx on 443 (Origin: https://127.0.0.1, what Host \$host passes on) is let in"
else
    show_answer
    not_ok "a browser's sign-in through nginx on 443 (Origin: https://127.0.0.1) is let in"
fi
rm -f "$WORK/cookies"
sign_in admin "$PROXY_CLIENT" "$PROXY" "$PASSWORD" -H "Origin: https://127.0.0.1:$NGINX_PORT"
if [ "$STATUS" = 403 ] && [[ "$AUDIT" == *" event=sign-in outcome=refused "*" forwarded=$PROXY_CLIENT "* ]]; then
    ok "on another port (Origin: https://127.0.0.1:$NGINX_PORT) Host \$host drops the port and the console refuses the sign-in, as the README says"
else
    show_answer
    not_ok "on another port, Host \$host makes the console refuse a browser's sign-in (403), as the README says"
fi

# Straight to the console, not through nginx, with the same forged header.
rm -f "$WORK/cookies"
sign_in admin "$DIRECT_CLIENT" "$DIRECT" "wrong-$PASSWORD" -H "X-Forwarded-For: $FORGED"
if [ "$STATUS" = 401 ] &&
    [ "$AUDIT" = "<6>console audit: event=sign-in outcome=failed account=admin role=- client=$DIRECT_CLIENT target=-" ]; then
    ok "a wrong password straight to the console from $DIRECT_CLIENT with X-Forwarded-For: $FORGED: audit line client=$DIRECT_CLIENT, no forwarded="
else
    show_answer
    not_ok "a wrong password straight to the console from $DIRECT_CLIENT: an audit line with client=$DIRECT_CLIENT and no forwarded="
fi

# What nginx itself sends upstream for a client with a forged X-Forwarded-For:
# the one address it saw, not the client's words with it ($proxy_add_x_forwarded_for).
CAPTURED=$(curl -sS --max-time 10 --interface "$PROXY_CLIENT" --cacert "$WORK/proxy.crt" -o /dev/null -w '%{http_code}' \
    -H "X-Forwarded-For: $FORGED" -H 'X-Forwarded-For: 198.51.100.1' "https://127.0.0.1:$CAPTURE_NGINX_PORT/api/login" 2>&1 || true)
if [ "$CAPTURED" = 200 ] && [ "$(cat "$WORK/captured" 2>/dev/null)" = "$(printf 'Host: 127.0.0.1\nX-Forwarded-For: %s' "$PROXY_CLIENT")" ]; then
    ok "what nginx sends upstream for a client with two forged X-Forwarded-For headers: one, X-Forwarded-For: $PROXY_CLIENT (and Host: 127.0.0.1)"
else
    note "status $CAPTURED; captured:"
    sed 's/^/#   /' "$WORK/captured" 2>/dev/null || true
    not_ok "nginx sends upstream only X-Forwarded-For: $PROXY_CLIENT"
fi

# ---------------------------------------------------------------- the log as a whole
AUDITS=$(grep -c '^<6>console audit: ' "$LOG" || true)
if [ "$AUDITS" -ge 6 ] && ! grep -q "forwarded=$FORGED" "$LOG" && ! grep -qF -- "$FORGED" "$LOG"; then
    ok "none of mailsiftd's $AUDITS audit lines, nor any other line, holds $FORGED (as forwarded= or at all)"
else
    grep -n -- "$FORGED" "$LOG" | sed 's/^/#   /'
    not_ok "no line of mailsiftd's log holds $FORGED ($AUDITS audit lines)"
fi
# The shipped fail2ban filter over the daemon's log: the two failed sign-ins,
# and the address it yields for the one through nginx is the proxy's.
F2B=$(fail2ban-regex -o ip "$LOG" "$FILTER" 2>"$WORK/f2b.err" | tr '\n' ' ' || true)
if [ "$F2B" = "127.0.0.1 $DIRECT_CLIENT " ]; then
    ok "fail2ban-regex, the shipped filter: the 2 failed sign-ins, banning 127.0.0.1 (the proxy, for $PROXY_CLIENT) and $DIRECT_CLIENT"
else
    fail2ban-regex "$LOG" "$FILTER" 2>&1 | tail -n 20 | sed 's/^/#   /'
    not_ok "fail2ban-regex, the shipped filter: the failed sign-ins, from 127.0.0.1 and $DIRECT_CLIENT (got: $F2B)"
fi
summary_and_exit
