#!/usr/bin/env bash
# history_scale.sh - the console's history at a provider's scale (issue 41,
# item 10), on both stores: mailsift-bench-history fills each with N synthetic
# lines (default 1,000,000) through the store's own record path and times the
# first page and the count of every filter and order; then the bytes of the
# history table and of each of its indexes per line (SQLite: dbstat;
# PostgreSQL: pg_relation_size, heap with its TOAST), so that an index shows
# what it costs beside what it saves. A benchmark: it prints numbers.
#
# usage: bench/history_scale.sh [--lines N] [--reps R] [--store sqlite|postgresql|both] [--build DIR]
# Needs PostgreSQL's server for the PostgreSQL half (a private one on loopback,
# tests/support/postgres.sh, stopped at the end).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
lines=1000000 reps=20 stores=both build=$root/build
while [ $# -gt 0 ]; do
    case "$1" in
        --lines) lines=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --store) stores=$2; shift 2 ;;
        --build) build=$2; shift 2 ;;
        *) echo "usage: $0 [--lines N] [--reps R] [--store sqlite|postgresql|both] [--build DIR]" >&2; exit 2 ;;
    esac
done
bench=$build/bench/mailsift-bench-history
[ -x "$bench" ] || { echo "$0: build first with -DMAILSIFT_BUILD_BENCH=ON ($bench missing)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/mailsift-bench-history.XXXXXX)
chmod 755 "$tmp"
cleanup() {
    "$root/tests/support/postgres.sh" stop "$tmp/pg" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT

if [ "$stores" != postgresql ]; then
    echo "== SQLite, $lines lines"
    "$bench" "$tmp/history.db" --lines "$lines" --reps 0 --fill-only
    # The bytes first: the timed run ends with an expiry batch, which deletes.
    python3 - "$tmp/history.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n = c.execute("SELECT count(*) FROM history").fetchone()[0]
for name, size in c.execute("SELECT name, sum(pgsize) FROM dbstat WHERE name IN (SELECT name FROM sqlite_schema"
                            " WHERE tbl_name = 'history') GROUP BY name ORDER BY 2 DESC"):
    print(f"  {name:<24}: {size / n:8.1f} B per line")
PY
    "$bench" "$tmp/history.db" --no-fill --reps "$reps"
    rm -f "$tmp/history.db"*
fi
if [ "$stores" != sqlite ]; then
    echo "== PostgreSQL, $lines lines"
    "$root/tests/support/postgres.sh" start "$tmp/pg" >"$tmp/pg.log" 2>&1 || { cat "$tmp/pg.log"; exit 1; }
    uri=$(cat "$tmp/pg/uri")
    "$bench" "$uri" --lines "$lines" --reps 0 --fill-only
    psql -X -q "$uri" -c "VACUUM ANALYZE history" >/dev/null
    psql -X -At "$uri" -F ' ' -c "SELECT c.relname, pg_total_relation_size(c.oid) - coalesce((SELECT sum(pg_relation_size(i.indexrelid)) FROM pg_index i WHERE i.indrelid = c.oid AND c.relkind = 'r'), 0), (SELECT count(*) FROM history) FROM pg_class c WHERE c.relname = 'history' OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'history'::regclass)" |
        awk '{ printf "  %-24s: %8.1f B per line\n", $1, $2 / $3 }'
    "$bench" "$uri" --no-fill --reps "$reps"
fi
