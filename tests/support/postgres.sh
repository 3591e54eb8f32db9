#!/usr/bin/env bash
# A private PostgreSQL for the tests and benchmarks, from Debian's package.
#
#   postgres.sh start DIR   initdb in a new directory under /tmp (its name in
#                           DIR/home), start on 127.0.0.1:PORT (a free port) and
#                           a Unix socket there, trust authentication for local
#                           connections only; writes the connection URI of the
#                           database "postgres" to DIR/uri.
#   postgres.sh stop DIR    stops it (pg_ctl, by its own postmaster.pid) and
#                           removes both directories.
#   postgres.sh pause DIR   stops the server and keeps its data (an outage);
#   postgres.sh resume DIR  starts it again on the same port.
#
# The server runs as the calling user, or as 'nobody' when that is root
# (PostgreSQL refuses to run as root). Nothing listens beyond loopback.
set -euo pipefail

cmd=${1:?usage: postgres.sh start|stop DIR}
dir=${2:?usage: postgres.sh start|stop DIR}

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
    echo "postgres.sh: PostgreSQL's server is not installed (apt-get install postgresql; scripts/deps.sh --test does)" >&2
    exit 1
fi

as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u nobody -- "$@"
    else
        "$@"
    fi
}

stop() {
    local home
    home=$(cat "$dir/home" 2>/dev/null || true)
    if [ -n "$home" ] && [ -f "$home/data/postmaster.pid" ]; then
        as_owner "$bindir/pg_ctl" -D "$home/data" -m fast -w -t 60 stop >/dev/null || true
    fi
    if [ -n "$home" ]; then rm -rf "$home"; fi
    rm -rf "$dir"
}

case "$cmd" in
start)
    stop
    mkdir -p "$dir"
    # Under /tmp: the server's user must reach it, whatever the build directory's parents allow.
    home=$(mktemp -d /tmp/mailsift-pg.XXXXXX)
    echo "$home" >"$dir/home"
    if [ "$(id -u)" = 0 ]; then chown nobody: "$home"; fi
    chmod 0700 "$home"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    if ! as_owner "$bindir/initdb" -D "$home/data" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 \
        >"$dir/initdb.log" 2>&1; then
        cat "$dir/initdb.log" >&2
        exit 1
    fi
    # Small and fast: the tests' databases are throwaway (fsync off), the
    # fleet tests need a few dozen connections.
    printf '%s\n' "listen_addresses = '127.0.0.1'" "port = $port" "unix_socket_directories = '$home'" \
        "fsync = off" "synchronous_commit = off" "full_page_writes = off" "max_connections = 100" \
        "shared_buffers = 64MB" | as_owner tee -a "$home/data/postgresql.conf" >/dev/null
    if ! as_owner "$bindir/pg_ctl" -D "$home/data" -l "$home/server.log" -w -t 60 start >/dev/null; then
        cat "$home/server.log" >&2
        exit 1
    fi
    echo "postgresql://postgres@127.0.0.1:$port/postgres" >"$dir/uri"
    echo "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port ($home)"
    ;;
stop)
    stop
    ;;
pause)
    home=$(cat "$dir/home")
    as_owner "$bindir/pg_ctl" -D "$home/data" -m fast -w -t 60 stop >/dev/null
    ;;
resume)
    home=$(cat "$dir/home")
    as_owner "$bindir/pg_ctl" -D "$home/data" -l "$home/server.log" -w -t 60 start >/dev/null
    ;;
*)
    echo "usage: postgres.sh start|stop DIR" >&2
    exit 2
    ;;
esac
