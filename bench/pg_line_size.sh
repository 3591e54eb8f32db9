#!/usr/bin/env bash
# pg_line_size.sh - what scan_size.sh's scans cost on PostgreSQL: the
# signatures and history rows of a database that `bench/scan_size.sh --keep`
# left (written by a real mailsiftd through a real Postfix) copied as they are
# into a private PostgreSQL store that mailsift created, then per scan and per
# line the table (heap, TOAST and maps: pg_total_relation_size less its
# indexes) and each index (pg_relation_size), after VACUUM. The same bytes as
# mailsiftd would write there: every column is copied unchanged.
# With --copies K the rows are copied K times (new line ids, new random
# signatures, the rest as they are), so that the indexes reach the fill of a
# large table: at 1,000 rows an 8 KB page is a large part of each index.
#
# usage: bench/pg_line_size.sh SQLITE_DB [--copies K] [--build DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
db=${1:?usage: $0 SQLITE_DB [--copies K] [--build DIR]}
shift
build=$root/build copies=1
while [ $# -gt 0 ]; do
    case "$1" in
        --copies) copies=$2; shift 2 ;;
        --build) build=$2; shift 2 ;;
        *) echo "usage: $0 SQLITE_DB [--copies K] [--build DIR]" >&2; exit 2 ;;
    esac
done
tmp=$(mktemp -d /tmp/mailsift-pg-size.XXXXXX)
chmod 755 "$tmp"
trap '"$root/tests/support/postgres.sh" stop "$tmp/pg" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
"$root/tests/support/postgres.sh" start "$tmp/pg" >"$tmp/pg.log" 2>&1 || { cat "$tmp/pg.log"; exit 1; }
uri=$(cat "$tmp/pg/uri")
"$build/bench/mailsift-bench-history" "$uri" --lines 0 --fill-only  # the schema, as mailsift makes it
python3 - "$db" >"$tmp/copy.sql" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
def v(x):
    if x is None: return r"\N"
    if isinstance(x, bytes): return "\\\\x" + x.hex()
    if isinstance(x, str): return x.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return str(x)
def copy(table, cols, sql, binary=()):
    print(f"COPY {table} ({', '.join(cols)}) FROM STDIN;")
    for row in c.execute(sql):
        out = []
        for i, x in enumerate(row):
            if i in binary and isinstance(x, str): x = x.encode()
            out.append(v(x))
        print("\t".join(out))
    print("\\.")
# The dictionaries too: signatures name them (a foreign key, if any, holds).
copy("scan_dictionaries", ["id", "created_at", "last_used", "bytes"], "SELECT id, created_at, last_used, bytes FROM scan_dictionaries")
copy("signatures", ["id", "scanned_at", "verdict", "dictionary", "features"],
     "SELECT id, scanned_at, verdict, dictionary, features FROM signatures", binary=(4,))
cols = ["id", "signature", "scanned_at", "verdict", "probability", "action", "reason", "sender", "recipients",
        "from_header", "to_header", "subject", "message_id", "queue_id", "client_address", "helo", "size", "explanation"]
copy("history", cols, "SELECT " + ", ".join(cols) + " FROM history", binary=(17,))
print("SELECT setval(pg_get_serial_sequence('history', 'id'), max(id)) FROM history;")  # lines copied go on after
PY
psql -X -q -v ON_ERROR_STOP=1 "$uri" -f "$tmp/copy.sql"
for ((k = 1; k < copies; k++)); do
    psql -X -q -v ON_ERROR_STOP=1 "$uri" \
        -c "CREATE TEMP TABLE one AS SELECT * FROM signatures LIMIT (SELECT count(*) FROM signatures) / $k;
            INSERT INTO signatures (id, scanned_at, verdict, dictionary, features)
                SELECT decode(md5(random()::text || clock_timestamp()::text), 'hex'), scanned_at, verdict, dictionary, features FROM one;
            CREATE TEMP TABLE two AS SELECT * FROM history LIMIT (SELECT count(*) FROM history) / $k;
            INSERT INTO history (signature, scanned_at, verdict, probability, action, reason, sender, recipients, from_header,
                                 to_header, subject, message_id, queue_id, client_address, helo, size, explanation)
                SELECT decode(md5(random()::text || clock_timestamp()::text), 'hex'), scanned_at, verdict, probability, action,
                       reason, sender, recipients, from_header, to_header, subject, message_id || '$k', queue_id || '$k',
                       client_address, helo, size, explanation FROM two" >/dev/null
done
psql -X -q "$uri" -c "VACUUM ANALYZE signatures" -c "VACUUM ANALYZE history" >/dev/null
for t in signatures history; do
    psql -X -At -F ' ' "$uri" -c "SELECT '$t (table)', pg_total_relation_size('$t') - (SELECT coalesce(sum(pg_relation_size(indexrelid)), 0) FROM pg_index WHERE indrelid = '$t'::regclass), (SELECT count(*) FROM $t)
        UNION ALL SELECT c.relname, pg_relation_size(c.oid), (SELECT count(*) FROM $t) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = '$t'::regclass
        UNION ALL SELECT '$t total', pg_total_relation_size('$t'), (SELECT count(*) FROM $t)" |
        awk '{ n = $NF; b = $(NF-1); $NF = ""; $(NF-1) = ""; printf "  %-28s: %7.0f B per row (%d rows)\n", $0, b / n, n }'
done
