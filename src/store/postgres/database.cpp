// The PostgreSQL backend's connection, schema and model reads: opening and
// migrating, what tells a reader the model changed, streaming the counts,
// statistics. Its write transaction is in transaction.cpp, scans, contacts
// and maintenance in records.cpp.
#include "pg_database.hpp"

#include <algorithm>
#include <ctime>
#include <functional>
#include <map>
#include <unordered_map>

#include "../codec.hpp"

namespace mailsift::store {

using pg::Param;

namespace {

// The version of the PostgreSQL schema (its own numbering, kept in mailsift_schema).
constexpr int pg_schema_version = 16;

// pg_advisory_xact_lock(key, what): migrations and commits.
constexpr const char* lock_migration = "SELECT pg_advisory_xact_lock(1835100524, 1)";
constexpr const char* lock_commit = "SELECT pg_advisory_xact_lock(1835100524, 2)";

// Entry i brings the schema from version i to i + 1. Never edit a released entry.
const char* const migrations[] = {
    // 0 -> 1: everything of SQLite's schema 6, in PostgreSQL's types. Text that
    // comes from mail (feature text, addresses) is bytea: mail is not always UTF-8.
    R"sql(
    CREATE TABLE mailsift_schema (version integer NOT NULL);
    INSERT INTO mailsift_schema VALUES (0);
    CREATE TABLE classes (
        class smallint PRIMARY KEY CHECK (class IN (0, 1)),
        messages bigint NOT NULL DEFAULT 0,
        occurrences bigint NOT NULL DEFAULT 0,
        presences bigint NOT NULL DEFAULT 0
    );
    INSERT INTO classes (class) VALUES (0), (1);
    CREATE TABLE features (
        id bigint PRIMARY KEY,
        spam_occurrences bigint NOT NULL,
        ham_occurrences bigint NOT NULL,
        spam_presences bigint NOT NULL,
        ham_presences bigint NOT NULL,
        text bytea NOT NULL,
        last_seen bigint NOT NULL DEFAULT 0
    );
    CREATE TABLE messages (
        digest bytea PRIMARY KEY,
        class smallint NOT NULL CHECK (class IN (0, 1)),
        learned_at bigint NOT NULL,
        features bytea NOT NULL
    );
    CREATE TABLE contacts (
        address bytea PRIMARY KEY,
        source bytea NOT NULL,
        added_at bigint NOT NULL
    );
    CREATE TABLE scan_dictionaries (
        id bigserial PRIMARY KEY,
        created_at bigint NOT NULL,
        last_used bigint NOT NULL,
        bytes bytea NOT NULL
    );
    CREATE TABLE signatures (
        id bytea PRIMARY KEY,
        scanned_at bigint NOT NULL,
        verdict smallint NOT NULL CHECK (verdict IN (0, 1, 2)),
        dictionary bigint,
        features bytea NOT NULL
    );
    CREATE INDEX signatures_scanned_at ON signatures (scanned_at);
    CREATE TABLE corrections (
        at bigint NOT NULL,
        verdict smallint NOT NULL CHECK (verdict IN (0, 1, 2)),
        corrected_to smallint NOT NULL CHECK (corrected_to IN (0, 1))
    );
    CREATE INDEX corrections_at ON corrections (at);
    CREATE TABLE counters (
        name text PRIMARY KEY,
        value bigint NOT NULL
    );
    CREATE TABLE deferred_corrections (
        signature bytea PRIMARY KEY,
        corrected_to smallint NOT NULL CHECK (corrected_to IN (0, 1)),
        requested_at bigint NOT NULL
    );
    CREATE TABLE model_changes (
        seq bigint PRIMARY KEY,
        committed_at bigint NOT NULL,
        features bytea
    );
    INSERT INTO model_changes VALUES (1, extract(epoch FROM now())::bigint, NULL);
    )sql",
    // 1 -> 2: the linear scorer's weights, as SQLite's schema 7
    R"sql(
    CREATE TABLE linear_state (
        id smallint PRIMARY KEY CHECK (id = 0),
        hash_bits integer NOT NULL,
        bias double precision NOT NULL,
        nb_weight double precision NOT NULL,
        seen_spam bigint NOT NULL,
        seen_ham bigint NOT NULL
    );
    INSERT INTO linear_state VALUES (0, 0, 0.0, 1.0, 0, 0);
    CREATE TABLE linear_pages (
        page integer PRIMARY KEY,
        seq bigint NOT NULL,
        weights bytea NOT NULL
    );
    CREATE INDEX linear_pages_seq ON linear_pages (seq);
    CREATE TABLE linear_samples (
        class smallint NOT NULL CHECK (class IN (0, 1)),
        position bigint NOT NULL,
        digest bytea NOT NULL,
        prefix bytea NOT NULL,
        PRIMARY KEY (class, position)
    );
    CREATE TABLE linear_messages (
        digest bytea PRIMARY KEY,
        class smallint NOT NULL CHECK (class IN (0, 1))
    );
    )sql",
    // 2 -> 3: the console's history, as SQLite's schema 8
    R"sql(
    CREATE TABLE history (
        id bytea PRIMARY KEY,
        scanned_at bigint NOT NULL,
        verdict smallint NOT NULL,
        probability double precision NOT NULL,
        action text NOT NULL,
        sender text NOT NULL,
        recipients text NOT NULL,
        from_header text NOT NULL,
        subject text NOT NULL,
        size bigint NOT NULL
    );
    CREATE INDEX history_scanned_at ON history (scanned_at);
    )sql",
    // 3 -> 4: each history line keeps its score taken apart, as SQLite's schema 9
    R"sql(
    ALTER TABLE history ADD COLUMN explanation text NOT NULL DEFAULT '';
    )sql",
    // 4 -> 5: the settings the model was trained with, as SQLite's schema 10
    R"sql(
    CREATE TABLE IF NOT EXISTS model_settings (
        id smallint PRIMARY KEY CHECK (id = 0),
        text text NOT NULL
    );
    )sql",
    // 5 -> 6: the number of feature rows, as SQLite's schema 11; statement
    // triggers with transition tables, so that a batch's many rows cost one
    // update (an upsert's updated rows are not in the INSERT's table).
    R"sql(
    CREATE TABLE IF NOT EXISTS vocabulary (
        id smallint PRIMARY KEY CHECK (id = 0),
        features bigint NOT NULL
    );
    INSERT INTO vocabulary (id, features) SELECT 0, count(*) FROM features
        ON CONFLICT (id) DO UPDATE SET features = excluded.features;
    CREATE OR REPLACE FUNCTION mailsift_features_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE vocabulary SET features = features + (SELECT count(*) FROM added) WHERE id = 0;
        RETURN NULL;
    END $$;
    CREATE OR REPLACE FUNCTION mailsift_features_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE vocabulary SET features = features - (SELECT count(*) FROM removed) WHERE id = 0;
        RETURN NULL;
    END $$;
    DROP TRIGGER IF EXISTS features_added ON features;
    CREATE TRIGGER features_added AFTER INSERT ON features REFERENCING NEW TABLE AS added
        FOR EACH STATEMENT EXECUTE FUNCTION mailsift_features_added();
    DROP TRIGGER IF EXISTS features_removed ON features;
    CREATE TRIGGER features_removed AFTER DELETE ON features REFERENCING OLD TABLE AS removed
        FOR EACH STATEMENT EXECUTE FUNCTION mailsift_features_removed();
    )sql",
    // 6 -> 7: a linear step of few slots kept as those slots until folded
    // into the pages, as SQLite's schema 12.
    R"sql(
    CREATE TABLE IF NOT EXISTS linear_deltas (
        id bigserial PRIMARY KEY,
        seq bigint NOT NULL,
        n integer NOT NULL,
        slots bytea NOT NULL
    );
    CREATE INDEX IF NOT EXISTS linear_deltas_seq ON linear_deltas (seq);
    )sql",
    // 7 -> 8: what a history line and a correction say more, as SQLite's
    // schema 13. A correction's `id` numbers the corrections as written (what
    // SQLite's rowid does), so that a signature's latest one is well defined;
    // the index by signature holds it to find that one without a sort.
    R"sql(
    ALTER TABLE history
        ADD COLUMN IF NOT EXISTS reason text NOT NULL DEFAULT '',
        ADD COLUMN IF NOT EXISTS to_header text NOT NULL DEFAULT '',
        ADD COLUMN IF NOT EXISTS message_id text NOT NULL DEFAULT '',
        ADD COLUMN IF NOT EXISTS queue_id text NOT NULL DEFAULT '',
        ADD COLUMN IF NOT EXISTS client_address text NOT NULL DEFAULT '',
        ADD COLUMN IF NOT EXISTS helo text NOT NULL DEFAULT '';
    CREATE INDEX IF NOT EXISTS history_queue_id ON history (queue_id);
    CREATE INDEX IF NOT EXISTS history_message_id ON history (message_id);
    CREATE INDEX IF NOT EXISTS history_probability ON history (probability);
    ALTER TABLE corrections
        ADD COLUMN IF NOT EXISTS id bigserial PRIMARY KEY,
        ADD COLUMN IF NOT EXISTS signature bytea,
        ADD COLUMN IF NOT EXISTS by_whom text NOT NULL DEFAULT '';
    CREATE INDEX IF NOT EXISTS corrections_signature ON corrections (signature, id);
    ALTER TABLE deferred_corrections ADD COLUMN IF NOT EXISTS requested_by text NOT NULL DEFAULT '';
    )sql",
    // 8 -> 9: one history line per delivery, as SQLite's schema 14: a line has
    // its own number (a bigint identity, ascending as lines are recorded, which
    // orders the lines of one second) and keeps its message's signature as a
    // column (NULL for a line let through unscored, whose id was random). The
    // lines kept are numbered in the order they were scanned. Skipped when the
    // table already has the form (a version set back).
    R"sql(
    DO $$
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'history'::regclass AND attname = 'signature'
                       AND NOT attisdropped) THEN
            -- The fixed-width columns first, widest first, so that none is padded
            -- to its alignment after a variable-width one.
            CREATE TABLE history_lines (
                id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                scanned_at bigint NOT NULL,
                probability double precision NOT NULL,
                size bigint NOT NULL,
                verdict smallint NOT NULL,
                signature bytea,
                action text NOT NULL,
                reason text NOT NULL DEFAULT '',
                sender text NOT NULL,
                recipients text NOT NULL,
                from_header text NOT NULL,
                to_header text NOT NULL DEFAULT '',
                subject text NOT NULL,
                message_id text NOT NULL DEFAULT '',
                queue_id text NOT NULL DEFAULT '',
                client_address text NOT NULL DEFAULT '',
                helo text NOT NULL DEFAULT '',
                explanation text NOT NULL DEFAULT ''
            );
            INSERT INTO history_lines (id, signature, scanned_at, verdict, probability, action, reason, sender,
                                       recipients, from_header, to_header, subject, message_id, queue_id,
                                       client_address, helo, size, explanation)
                SELECT row_number() OVER (ORDER BY scanned_at, id), CASE WHEN verdict = -1 THEN NULL ELSE id END,
                       scanned_at, verdict, probability, action, reason, sender, recipients, from_header, to_header,
                       subject, message_id, queue_id, client_address, helo, size, explanation
                FROM history;
            -- The identity goes on after the numbers given here.
            PERFORM setval(pg_get_serial_sequence('history_lines', 'id'), coalesce(max(id), 0) + 1, false)
                FROM history_lines;
            DROP TABLE history;
            ALTER TABLE history_lines RENAME TO history;
            ALTER INDEX history_lines_pkey RENAME TO history_pkey;
            CREATE INDEX history_scanned_at ON history (scanned_at);
            CREATE INDEX history_queue_id ON history (queue_id);
            CREATE INDEX history_message_id ON history (message_id);
            CREATE INDEX history_probability ON history (probability);
        END IF;
    END $$;
    )sql",
    // 9 -> 10: a history line's explanation is written compressed
    // (explanation_codec.cpp), as SQLite's schema 15: bytes, so the column
    // becomes bytea; the lines written before keep their text's bytes, which
    // are read as they are.
    R"sql(
    ALTER TABLE history ALTER COLUMN explanation DROP DEFAULT,
        ALTER COLUMN explanation TYPE bytea USING convert_to(explanation, 'UTF8'),
        ALTER COLUMN explanation SET DEFAULT ''::bytea;
    -- The indexes of SQLite's schema 15 (verdict and action with
    -- probability), and the two looked up only by equality
    -- (a whole queue ID, a whole Message-ID) as hash indexes: a 4-byte hash a
    -- line instead of the value, the B-tree's 60-110 bytes a line here.
    CREATE INDEX IF NOT EXISTS history_verdict ON history (verdict, probability);
    CREATE INDEX IF NOT EXISTS history_action ON history (action, probability);
    DROP INDEX IF EXISTS history_queue_id;
    CREATE INDEX history_queue_id ON history USING hash (queue_id);
    DROP INDEX IF EXISTS history_message_id;
    CREATE INDEX history_message_id ON history USING hash (message_id);
    )sql",
    // 10 -> 11: what undoing a correction takes, and an undone one's when and
    // by whom, as SQLite's schema 16.
    R"sql(
    ALTER TABLE corrections
        ADD COLUMN IF NOT EXISTS undo bytea,
        ADD COLUMN IF NOT EXISTS undone_at bigint,
        ADD COLUMN IF NOT EXISTS undone_by text;
    )sql",
    // 11 -> 12: the mark of the linear scorer's last refit, as SQLite's schema 17.
    R"sql(
    ALTER TABLE linear_state
        ADD COLUMN IF NOT EXISTS samples_dropped bigint NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS refit_mark bigint NOT NULL DEFAULT 0;
    UPDATE linear_state SET refit_mark = seen_spam + seen_ham + samples_dropped;
    )sql",
    // 12 -> 13: the last refit's own change to the weights, as SQLite's schema 18.
    R"sql(
    CREATE TABLE IF NOT EXISTS linear_refit (
        id integer PRIMARY KEY CHECK (id = 0),
        hash_bits integer NOT NULL,
        bias float8 NOT NULL,
        nb_weight float8 NOT NULL,
        slots bytea NOT NULL
    );
    )sql",
    // 13 -> 14: whose layer a correction stepped, as SQLite's schema 19.
    R"sql(
    ALTER TABLE corrections ADD COLUMN IF NOT EXISTS layer_user text NOT NULL DEFAULT '';
    CREATE INDEX IF NOT EXISTS corrections_layer_user ON corrections (layer_user) WHERE layer_user <> '';
    )sql",
    // 14 -> 15: for mail from which sender, as SQLite's schema 20.
    R"sql(
    ALTER TABLE corrections ADD COLUMN IF NOT EXISTS layer_sender text NOT NULL DEFAULT '';
    CREATE INDEX IF NOT EXISTS corrections_layer_sender ON corrections (layer_sender) WHERE layer_sender <> '';
    )sql",
    // 15 -> 16: the users mailsiftd delivered to, as SQLite's schema 21.
    R"sql(
    CREATE TABLE IF NOT EXISTS delivered_users (
        name text PRIMARY KEY,
        last_at bigint NOT NULL
    );
    INSERT INTO delivered_users (name, last_at)
        SELECT layer_user, max(at) FROM corrections WHERE layer_user <> '' GROUP BY layer_user
        ON CONFLICT DO NOTHING;
    )sql",
};
static_assert(std::size(migrations) == pg_schema_version);

}  // namespace


PgDatabase::PgDatabase(const std::string& uri, Mode mode, std::chrono::milliseconds lock_timeout, Create create)
    : mode_(mode), uri_(uri), conn_(uri), dictionaries_(std::make_unique<ScanDictionaries>()) {
    // A lock held elsewhere is waited for as long as SQLite waits for its file lock.
    conn_.run("SET lock_timeout = " + std::to_string(lock_timeout.count()));
    migrate(create);
    if (mode_ == Mode::read_only) conn_.run("SET default_transaction_read_only = on");
}

PgDatabase::~PgDatabase() = default;

void PgDatabase::migrate(Create create) {
    auto version_now = [&]() -> std::optional<int> {
        // A query of the catalog, not to_regclass(): after waiting for another
        // process's migration, this transaction must see the tables it committed.
        auto r = conn_.exec(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'mailsift_schema'");
        if (r.integer(0, 0) == 0) return std::nullopt;
        return static_cast<int>(conn_.exec("SELECT version FROM mailsift_schema").integer(0, 0));
    };
    auto check = [&](int v) {
        if (v > pg_schema_version) {
            conn_.fail("database schema version " + std::to_string(v) + " is newer than this mailsift supports (" +
                       std::to_string(pg_schema_version) + "); upgrade mailsift");
        }
    };
    const auto seen = version_now();
    if (seen) check(*seen);
    if (seen && *seen == pg_schema_version) return;  // the common case takes no lock
    if (mode_ == Mode::read_only || (create == Create::never && !seen)) {
        if (!seen) conn_.fail("no mailsift database here (train one first with 'mailsift learn')");
        // An older schema is upgraded once, through a short-lived writer.
        try {
            PgDatabase upgrade(uri_, Mode::read_write);
        } catch (const Error& e) {
            conn_.fail("database schema version " + std::to_string(*seen) + " is older than this mailsift's (" +
                       std::to_string(pg_schema_version) + ") and could not be upgraded: " + e.what());
        }
        return;
    }
    transaction([&] {
        conn_.exec(lock_migration);
        const auto v = version_now();  // again, under the lock
        if (v) check(*v);
        int from = v.value_or(0);
        if (!v) {
            // Tables without our version are someone else's: leave them alone.
            const auto n = conn_.exec("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").integer(0, 0);
            if (n != 0) conn_.fail("not a mailsift database (it has tables but no mailsift schema version)");
        }
        for (int i = from; i < pg_schema_version; ++i) {
            conn_.run(migrations[i]);
            conn_.exec("UPDATE mailsift_schema SET version = $1", {Param(i + 1)});
        }
    });
}

std::unique_ptr<WriteTransaction> make_pg_transaction(PgDatabase& db);

std::unique_ptr<WriteTransaction> PgDatabase::begin_write() {
    if (mode_ != Mode::read_write) conn_.fail("database was opened read-only");
    return make_pg_transaction(*this);
}

void PgDatabase::lock_commits() { conn_.exec(lock_commit); }

std::uint64_t PgDatabase::data_version() {
    // No counter of commits to read: what a reader acts on, the change sequence and the contacts.
    return std::hash<std::string>{}(std::to_string(model_sequence()) + ':' + contacts_fingerprint());
}

std::string PgDatabase::contacts_fingerprint() {
    auto r = conn_.exec(
        "SELECT count(*) || ':' || coalesce(max(added_at), 0) || ':' || coalesce(sum(length(address)), 0) FROM contacts");
    return std::string(r.bytes(0, 0));
}

std::uint64_t PgDatabase::model_sequence() {
    return static_cast<std::uint64_t>(conn_.exec("SELECT coalesce(max(seq), 0) FROM model_changes").integer(0, 0));
}

Database::ClassTotals PgDatabase::read_totals(model::TermFrequency tf) {
    const bool boolean = tf == model::TermFrequency::boolean;
    ClassTotals t;
    auto r = conn_.exec("SELECT class, messages, occurrences, presences FROM classes");
    for (int i = 0; i < r.rows(); ++i) {
        const bool spam = r.integer(i, 0) == 1;
        (spam ? t.messages.spam : t.messages.ham) = static_cast<std::uint64_t>(r.integer(i, 1));
        (spam ? t.feature_totals.spam : t.feature_totals.ham) = static_cast<std::uint64_t>(r.integer(i, boolean ? 3 : 2));
    }
    t.sequence = model_sequence();
    return t;
}

Database::ClassTotals PgDatabase::visit_counts(model::TermFrequency tf, const std::function<void(std::size_t)>& size,
                                               const std::function<void(model::FeatureId, model::ClassCounts)>& feature) {
    const bool boolean = tf == model::TermFrequency::boolean;
    return snapshot([&] {  // one consistent read
        const ClassTotals totals = read_totals(tf);
        size(static_cast<std::size_t>(conn_.exec("SELECT count(*) FROM features").integer(0, 0)));
        // A cursor: ten million rows are not held in one result.
        conn_.run(boolean ? "DECLARE mailsift_counts NO SCROLL CURSOR FOR SELECT id, spam_presences, ham_presences FROM features"
                          : "DECLARE mailsift_counts NO SCROLL CURSOR FOR SELECT id, spam_occurrences, ham_occurrences FROM features");
        for (;;) {
            auto r = conn_.exec("FETCH 50000 FROM mailsift_counts");
            if (r.rows() == 0) break;
            for (int i = 0; i < r.rows(); ++i) {
                feature(static_cast<model::FeatureId>(r.integer(i, 0)),
                        model::ClassCounts{static_cast<std::uint64_t>(r.integer(i, 1)),
                                           static_cast<std::uint64_t>(r.integer(i, 2))});
            }
        }
        return totals;
    });
}

std::vector<model::Snapshot::Change> PgDatabase::rows_of(const std::vector<model::FeatureId>& ids, model::TermFrequency tf) {
    const bool boolean = tf == model::TermFrequency::boolean;
    std::unordered_map<model::FeatureId, model::ClassCounts> rows;
    rows.reserve(ids.size());
    constexpr std::size_t chunk = 100000;  // ids a query
    for (std::size_t from = 0; from < ids.size(); from += chunk) {
        const std::vector<model::FeatureId> part(ids.begin() + static_cast<std::ptrdiff_t>(from),
                                                 ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), from + chunk)));
        auto r = conn_.exec(boolean ? "SELECT id, spam_presences, ham_presences FROM features WHERE id = ANY($1::bigint[])"
                                    : "SELECT id, spam_occurrences, ham_occurrences FROM features WHERE id = ANY($1::bigint[])",
                            {Param::text(pg::bigint_array(part))});
        for (int i = 0; i < r.rows(); ++i) {
            rows.emplace(static_cast<model::FeatureId>(r.integer(i, 0)),
                         model::ClassCounts{static_cast<std::uint64_t>(r.integer(i, 1)),
                                            static_cast<std::uint64_t>(r.integer(i, 2))});
        }
    }
    std::vector<model::Snapshot::Change> out;
    out.reserve(ids.size());
    for (const model::FeatureId id : ids) {
        model::Snapshot::Change c;
        c.id = id;
        if (const auto it = rows.find(id); it != rows.end()) {
            c.present = true;
            c.counts = it->second;
        }
        out.push_back(c);
    }
    return out;
}

Database::CountsOf PgDatabase::counts_of(const std::vector<model::FeatureId>& ids, model::TermFrequency tf) {
    CountsOf out;
    snapshot([&] {  // the totals, the vocabulary and the rows of one moment: a few round trips, whatever the ids
        out.totals = read_totals(tf);
        out.vocabulary = static_cast<std::uint64_t>(conn_.exec("SELECT features FROM vocabulary WHERE id = 0").integer(0, 0));
        out.features = rows_of(ids, tf);
    });
    return out;
}

Database::ModelChanges PgDatabase::model_changes_since(std::uint64_t sequence, model::TermFrequency tf,
                                                       std::size_t max_features) {
    ModelChanges out;
    snapshot([&] {  // the list, the totals and the rows of one moment
        out.totals = read_totals(tf);
        ChangeList changes(sequence, max_features);
        {
            auto r = conn_.exec("SELECT seq, features FROM model_changes WHERE seq > $1 ORDER BY seq",
                                {Param(static_cast<std::int64_t>(sequence))});
            for (int row = 0; row < r.rows(); ++row) {
                changes.add(static_cast<std::uint64_t>(r.integer(row, 0)),
                            r.null(row, 1) ? std::nullopt : std::optional<std::string_view>(r.bytes(row, 1)));
            }
        }
        const auto ids = changes.ids(out.totals.sequence);
        out.listed = ids.has_value();
        if (ids) out.features = rows_of(*ids, tf);
    });
    return out;
}

void PgDatabase::log_model_change(const std::vector<model::FeatureId>* ids) {
    const auto now = static_cast<std::int64_t>(std::time(nullptr));
    // Under the commit lock: max + 1 is this commit's number, in commit order.
    conn_.exec("INSERT INTO model_changes (seq, committed_at, features)"
               " SELECT coalesce(max(seq), 0) + 1, $1, $2 FROM model_changes",
               {Param(now), ids ? Param::bytes(encode_feature_ids(*ids)) : Param()});
    conn_.exec("DELETE FROM model_changes WHERE committed_at < $1 AND seq < (SELECT max(seq) FROM model_changes)",
               {Param(now - model_change_seconds)});
}

ContactSet PgDatabase::load_contacts() {
    std::unordered_set<std::string> set;
    auto r = conn_.exec("SELECT address FROM contacts");
    for (int i = 0; i < r.rows(); ++i) set.emplace(r.bytes(i, 0));
    return ContactSet(std::move(set));
}

Statistics PgDatabase::statistics() {
    Statistics st;
    st.schema_version = pg_schema_version;
    auto r = conn_.exec(
        "SELECT (SELECT messages FROM classes WHERE class = 1), (SELECT messages FROM classes WHERE class = 0),"
        " (SELECT occurrences FROM classes WHERE class = 1), (SELECT occurrences FROM classes WHERE class = 0),"
        " (SELECT count(*) FROM features), (SELECT count(*) FROM contacts), (SELECT count(*) FROM signatures),"
        " pg_database_size(current_database())");
    st.messages = {static_cast<std::uint64_t>(r.integer(0, 0)), static_cast<std::uint64_t>(r.integer(0, 1))};
    st.occurrences = {static_cast<std::uint64_t>(r.integer(0, 2)), static_cast<std::uint64_t>(r.integer(0, 3))};
    st.distinct_features = static_cast<std::uint64_t>(r.integer(0, 4));
    st.contacts = static_cast<std::uint64_t>(r.integer(0, 5));
    st.signatures = static_cast<std::uint64_t>(r.integer(0, 6));
    st.file_bytes = static_cast<std::uint64_t>(r.integer(0, 7));
    return st;
}

std::string PgDatabase::feature_text(model::FeatureId id) {
    auto r = conn_.exec("SELECT text FROM features WHERE id = $1", {Param(id)});
    return r.rows() == 0 ? std::string() : std::string(r.bytes(0, 0));
}

}  // namespace mailsift::store
