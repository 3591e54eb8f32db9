// Schema and migrations: PRAGMA user_version says which of `migrations` a
// database has; a newer one is refused, never modified.
#include "internal.hpp"

#include <span>

#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <cstring>

namespace mailsift::store {

namespace {

// Migrations: entry i brings a database from user_version i to i + 1: its
// `sql`, then its `code` (what SQL cannot do), then its `sql_after`, in the
// one transaction of migrate(). Never edit a released entry; append a new one.
struct Migration {
    const char* sql;
    void (*code)(sqlite3* db, const std::filesystem::path& path) = nullptr;
    const char* sql_after = nullptr;
};

// Migration 12 -> 13's columns, each unless its table has it: SQLite's ALTER
// TABLE has no IF NOT EXISTS, and like the migrations since 9 -> 10 this one
// may meet a schema that already holds what it adds (a user_version set back).
struct Column {
    const char* table;
    const char* name;
    const char* type;
};

// Adds those of `columns` a table lacks.
void add_columns(sqlite3* db, const std::filesystem::path& path, std::span<const Column> columns) {
    Statement has(db, "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2", path);
    for (const Column& c : columns) {
        sqlite3_reset(has.get());
        sqlite3_bind_text(has.get(), 1, c.table, -1, SQLITE_STATIC);
        sqlite3_bind_text(has.get(), 2, c.name, -1, SQLITE_STATIC);
        if (sqlite3_step(has.get()) != SQLITE_ROW) {
            throw Error(path, std::string("cannot read the columns of ") + c.table + ": " + sqlite3_errmsg(db));
        }
        if (sqlite3_column_int(has.get(), 0) != 0) continue;
        const std::string sql = std::string("ALTER TABLE ") + c.table + " ADD COLUMN " + c.name + " " + c.type;
        if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
            throw Error(path, std::string("cannot add ") + c.table + "." + c.name + ": " + sqlite3_errmsg(db));
        }
    }
}

void add_columns_13(sqlite3* db, const std::filesystem::path& path) {
    static constexpr Column columns[] = {
        {"history", "reason", "TEXT NOT NULL DEFAULT ''"},
        {"history", "to_header", "TEXT NOT NULL DEFAULT ''"},
        {"history", "message_id", "TEXT NOT NULL DEFAULT ''"},
        {"history", "queue_id", "TEXT NOT NULL DEFAULT ''"},
        {"history", "client_address", "TEXT NOT NULL DEFAULT ''"},
        {"history", "helo", "TEXT NOT NULL DEFAULT ''"},
        {"corrections", "signature", "BLOB"},  // the scan corrected (16 bytes); NULL: corrected without it
        {"corrections", "by_whom", "TEXT NOT NULL DEFAULT ''"},  // Correction::by
        {"deferred_corrections", "requested_by", "TEXT NOT NULL DEFAULT ''"},
    };
    add_columns(db, path, columns);
}

// Migration 15 -> 16: what undoing a correction takes, and an undone one's when and by whom.
void correction_undo_16(sqlite3* db, const std::filesystem::path& path) {
    static constexpr Column columns[] = {
        {"corrections", "undo", "BLOB"},  // encode_correction_undo(); NULL: recorded before, cannot be undone
        {"corrections", "undone_at", "INTEGER"},
        {"corrections", "undone_by", "TEXT"},
    };
    add_columns(db, path, columns);
}

// Migration 16 -> 17: the rehearsal samples' version and the mark of the
// linear scorer's last refit (LinearWeights::samples_dropped, refit_mark); a
// store from before counts as refitted.
void refit_mark_17(sqlite3* db, const std::filesystem::path& path) {
    static constexpr Column columns[] = {{"linear_state", "samples_dropped", "INTEGER NOT NULL DEFAULT 0"},
                                         {"linear_state", "refit_mark", "INTEGER NOT NULL DEFAULT 0"}};
    add_columns(db, path, columns);
}

// Migration 18 -> 19: whose layer a correction stepped (per_user).
void layer_user_19(sqlite3* db, const std::filesystem::path& path) {
    static constexpr Column columns[] = {{"corrections", "layer_user", "TEXT NOT NULL DEFAULT ''"}};
    add_columns(db, path, columns);
}

// Migration 19 -> 20: for mail from which sender a correction stepped a layer.
void layer_sender_20(sqlite3* db, const std::filesystem::path& path) {
    static constexpr Column columns[] = {{"corrections", "layer_sender", "TEXT NOT NULL DEFAULT ''"}};
    add_columns(db, path, columns);
}

// Migration 13 -> 14: the history one line per delivery. A line was keyed by
// its message's signature, so a second delivery of the same content replaced
// the first; now each line has its own number (the rowid: 8 bytes at most,
// against the 16 of a random blob, and ascending in the order lines are
// recorded, which orders the lines of one second) and keeps the signature as
// a column (NULL for a line let through unscored, whose id was random). The
// lines kept are numbered in the order they were scanned. Skipped when the
// table already has the form (a user_version set back).
void history_lines_14(sqlite3* db, const std::filesystem::path& path) {
    {
        Statement has(db, "SELECT count(*) FROM pragma_table_info('history') WHERE name = 'signature'", path);
        if (sqlite3_step(has.get()) != SQLITE_ROW) {
            throw Error(path, std::string("cannot read the columns of history: ") + sqlite3_errmsg(db));
        }
        if (sqlite3_column_int(has.get(), 0) != 0) return;
    }
    static constexpr const char* sql = R"sql(
    CREATE TABLE history_lines (
        id INTEGER PRIMARY KEY,                -- the line's number, ascending as lines are recorded
        signature BLOB,                        -- 16 bytes: the message's; NULL: let through unscored
        scanned_at INTEGER NOT NULL,
        verdict INTEGER NOT NULL,
        probability REAL NOT NULL,
        action TEXT NOT NULL,
        reason TEXT NOT NULL DEFAULT '',
        sender TEXT NOT NULL,
        recipients TEXT NOT NULL,
        from_header TEXT NOT NULL,
        to_header TEXT NOT NULL DEFAULT '',
        subject TEXT NOT NULL,
        message_id TEXT NOT NULL DEFAULT '',
        queue_id TEXT NOT NULL DEFAULT '',
        client_address TEXT NOT NULL DEFAULT '',
        helo TEXT NOT NULL DEFAULT '',
        size INTEGER NOT NULL,
        explanation TEXT NOT NULL DEFAULT ''
    );
    INSERT INTO history_lines (id, signature, scanned_at, verdict, probability, action, reason, sender, recipients,
                               from_header, to_header, subject, message_id, queue_id, client_address, helo, size,
                               explanation)
        SELECT row_number() OVER (ORDER BY scanned_at, id), CASE WHEN verdict = -1 THEN NULL ELSE id END,
               scanned_at, verdict, probability, action, reason, sender, recipients, from_header, to_header, subject,
               message_id, queue_id, client_address, helo, size, explanation
        FROM history;
    DROP TABLE history;
    ALTER TABLE history_lines RENAME TO history;
    CREATE INDEX history_scanned_at ON history (scanned_at);
    CREATE INDEX history_queue_id ON history (queue_id);
    CREATE INDEX history_message_id ON history (message_id);
    CREATE INDEX history_probability ON history (probability);
    )sql";
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
        throw Error(path, std::string("cannot give the history one line per delivery: ") + sqlite3_errmsg(db));
    }
}

constexpr Migration migrations[] = {
    // 0 -> 1
    {R"sql(
    CREATE TABLE classes (
        class INTEGER PRIMARY KEY CHECK (class IN (0, 1)),   -- 0 ham, 1 spam
        messages INTEGER NOT NULL DEFAULT 0,                  -- N_c
        occurrences INTEGER NOT NULL DEFAULT 0,               -- sum of feature counts (raw T_c)
        presences INTEGER NOT NULL DEFAULT 0                  -- sum of distinct features per message (boolean T_c)
    );
    INSERT INTO classes (class) VALUES (0), (1);
    CREATE TABLE features (
        id INTEGER PRIMARY KEY,                -- 64-bit hash of the text (features::feature_id)
        spam_occurrences INTEGER NOT NULL,
        ham_occurrences INTEGER NOT NULL,
        spam_presences INTEGER NOT NULL,       -- spam messages containing the feature
        ham_presences INTEGER NOT NULL,
        text TEXT NOT NULL
    );
    -- A rowid table: rows hold kilobyte-sized blobs, which WITHOUT ROWID stores badly,
    -- and new rows append at the end instead of landing at random digests.
    CREATE TABLE messages (
        digest BLOB NOT NULL UNIQUE,           -- 16-byte content digest
        class INTEGER NOT NULL CHECK (class IN (0, 1)),
        learned_at INTEGER NOT NULL,
        features BLOB NOT NULL                 -- exact feature list, varint-coded (id delta, count)
    );
    CREATE TABLE contacts (
        address TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        added_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    )sql"},
    // 1 -> 2: the feedback loop
    {R"sql(
    -- What mailsiftd scored, under the id it put in X-Mailsift-Signature, so a
    -- correction trains exactly those features. Pruned after signature_days.
    CREATE TABLE signatures (
        id BLOB NOT NULL UNIQUE,               -- 16 bytes
        scanned_at INTEGER NOT NULL,
        verdict INTEGER NOT NULL CHECK (verdict IN (0, 1, 2)),  -- ham, unsure, spam
        features TEXT NOT NULL                 -- "feature<TAB>count" lines
    );
    CREATE INDEX signatures_scanned_at ON signatures (scanned_at);
    -- Every correction of a scanned message, kept for error rates.
    CREATE TABLE corrections (
        at INTEGER NOT NULL,
        verdict INTEGER NOT NULL CHECK (verdict IN (0, 1, 2)),  -- what mailsiftd said
        corrected_to INTEGER NOT NULL CHECK (corrected_to IN (0, 1))  -- ham, spam
    );
    CREATE INDEX corrections_at ON corrections (at);
    -- mailsiftd's counters, added to every few seconds.
    CREATE TABLE counters (
        name TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    ) WITHOUT ROWID;
    )sql"},
    // 2 -> 3: when each feature was last learned, for `mailsift prune`
    {R"sql(
    ALTER TABLE features ADD COLUMN last_seen INTEGER NOT NULL DEFAULT 0;  -- seconds since the epoch
    -- Features learned before the column existed were last seen no later than the
    -- newest learned message; taking that bound delays their pruning, never hastens it.
    UPDATE features SET last_seen = (SELECT coalesce(max(learned_at), 0) FROM messages);
    )sql"},
    // 3 -> 4: scans in the compact form of scan_codec.cpp
    {R"sql(
    -- zstd dictionaries trained on this database's scans (scan_codec.cpp).
    CREATE TABLE scan_dictionaries (
        id INTEGER PRIMARY KEY,
        created_at INTEGER NOT NULL,
        last_used INTEGER NOT NULL,            -- the newest scan compressed with it
        bytes BLOB NOT NULL
    );
    CREATE TABLE signatures_compact (
        id BLOB NOT NULL UNIQUE,               -- 16 bytes
        scanned_at INTEGER NOT NULL,
        verdict INTEGER NOT NULL CHECK (verdict IN (0, 1, 2)),  -- ham, unsure, spam
        dictionary INTEGER,                    -- scan_dictionaries.id; NULL: compressed without one
        features BLOB NOT NULL                 -- encode_scan_features()
    );
    )sql",
     recode_text_scans,  // signatures -> signatures_compact
     R"sql(
    DROP TABLE signatures;
    ALTER TABLE signatures_compact RENAME TO signatures;
    CREATE INDEX signatures_scanned_at ON signatures (scanned_at);
    )sql"},
    // 4 -> 5: corrections by signature that came before their scan
    {R"sql(
    CREATE TABLE deferred_corrections (
        signature BLOB PRIMARY KEY,            -- 16 bytes: the X-Mailsift-Signature id
        corrected_to INTEGER NOT NULL CHECK (corrected_to IN (0, 1)),  -- 0 ham, 1 spam
        requested_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    )sql"},
    // 5 -> 6: what each write changed in the model, so readers refresh by the difference
    {R"sql(
    -- One row per committed write that changed counts, numbered in commit order.
    -- `features` lists the ids whose rows it wrote or deleted (varint-coded
    -- ascending deltas); NULL means "too much to list" (prune, import, this
    -- migration): a reader reloads everything. Rows older than an hour go.
    CREATE TABLE model_changes (
        seq INTEGER PRIMARY KEY,
        committed_at INTEGER NOT NULL,
        features BLOB
    );
    INSERT INTO model_changes (seq, committed_at, features) VALUES (1, CAST(strftime('%s', 'now') AS INTEGER), NULL);
    )sql"},
    // 6 -> 7: the error-driven linear scorer's weights (model::LinearModel)
    {R"sql(
    CREATE TABLE linear_state (
        id INTEGER PRIMARY KEY CHECK (id = 0),
        hash_bits INTEGER NOT NULL,            -- 2^hash_bits weights; 0: none learned yet
        bias REAL NOT NULL,
        nb_weight REAL NOT NULL,               -- u, the weight of the naive-Bayes input
        seen_spam INTEGER NOT NULL,            -- messages offered to each class's rehearsal sample
        seen_ham INTEGER NOT NULL
    );
    INSERT INTO linear_state (id, hash_bits, bias, nb_weight, seen_spam, seen_ham) VALUES (0, 0, 0.0, 1.0, 0, 0);
    -- The weights, 1,024 to a page (little-endian binary32); a missing page is zeros.
    -- `seq` is the model_changes row of the write that last changed the page.
    CREATE TABLE linear_pages (
        page INTEGER PRIMARY KEY,
        seq INTEGER NOT NULL,
        weights BLOB NOT NULL
    );
    CREATE INDEX linear_pages_seq ON linear_pages (seq);
    -- The rehearsal sample: up to linear_rehearsal learned messages of each
    -- class, by position; `prefix` is the start of the message, zstd-compressed.
    -- A sample whose message is unlearned or moved is not used (joined with messages).
    CREATE TABLE linear_samples (
        class INTEGER NOT NULL CHECK (class IN (0, 1)),
        position INTEGER NOT NULL,
        digest BLOB NOT NULL,
        prefix BLOB NOT NULL,
        PRIMARY KEY (class, position)
    );
    -- Messages the linear scorer learned whose counts were not (the counts knew
    -- them beyond train_margin), so that learning them again is recognised.
    CREATE TABLE linear_messages (
        digest BLOB PRIMARY KEY,
        class INTEGER NOT NULL CHECK (class IN (0, 1))
    ) WITHOUT ROWID;
    )sql"},
    // 7 -> 8: the console's history of what mailsiftd did with each message.
    {R"sql(
    CREATE TABLE history (
        id BLOB PRIMARY KEY,
        scanned_at INTEGER NOT NULL,
        verdict INTEGER NOT NULL,
        probability REAL NOT NULL,
        action TEXT NOT NULL,
        sender TEXT NOT NULL,
        recipients TEXT NOT NULL,
        from_header TEXT NOT NULL,
        subject TEXT NOT NULL,
        size INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX history_scanned_at ON history (scanned_at);
    )sql"},
    // 8 -> 9: each history line keeps its score taken apart (the console's explanation).
    {R"sql(
    ALTER TABLE history ADD COLUMN explanation TEXT NOT NULL DEFAULT '';
    )sql"},
    // 9 -> 10: the settings the model was trained with (engine/model_settings.hpp),
    // "name = value" lines, written by the first training and never changed.
    {R"sql(
    CREATE TABLE IF NOT EXISTS model_settings (
        id INTEGER PRIMARY KEY CHECK (id = 0),
        text TEXT NOT NULL
    );
    )sql"},
    // 10 -> 11: the number of feature rows (the vocabulary V of the smoothing),
    // kept by triggers, so that a command scoring one message reads its own
    // features' rows and this instead of counting every row.
    {R"sql(
    CREATE TABLE IF NOT EXISTS vocabulary (
        id INTEGER PRIMARY KEY CHECK (id = 0),
        features INTEGER NOT NULL
    );
    INSERT OR REPLACE INTO vocabulary (id, features) SELECT 0, count(*) FROM features;
    CREATE TRIGGER IF NOT EXISTS features_added AFTER INSERT ON features
    BEGIN UPDATE vocabulary SET features = features + 1 WHERE id = 0; END;
    CREATE TRIGGER IF NOT EXISTS features_removed AFTER DELETE ON features
    BEGIN UPDATE vocabulary SET features = features - 1 WHERE id = 0; END;
    )sql"},
    // 11 -> 12: a linear step of few slots kept as those slots (encode_slot_deltas)
    // until linear_fold_slots() of them are held, then folded into the pages:
    // a correction writes kilobytes instead of every page its message falls on.
    // `seq` is the model_changes row of the write, `n` the number of slots in
    // `slots`; `id` orders the rows as written.
    {R"sql(
    CREATE TABLE IF NOT EXISTS linear_deltas (
        id INTEGER PRIMARY KEY,
        seq INTEGER NOT NULL,
        n INTEGER NOT NULL,
        slots BLOB NOT NULL
    );
    CREATE INDEX IF NOT EXISTS linear_deltas_seq ON linear_deltas (seq);
    )sql"},
    // 12 -> 13: a history line says more of its message (the To: and
    // Message-ID header fields, the queue ID, the SMTP client; verdict -1 and
    // a `reason` for a message let through unscored), and a correction whose
    // scan it was and who made it (the history shows a line's latest one, and
    // the error rates count only that), as does one deferred. The columns are
    // added by add_columns_13, the indexes for the lookups and the probability
    // orders after them.
    {"", add_columns_13, R"sql(
    CREATE INDEX IF NOT EXISTS history_queue_id ON history (queue_id);
    CREATE INDEX IF NOT EXISTS history_message_id ON history (message_id);
    CREATE INDEX IF NOT EXISTS history_probability ON history (probability);
    CREATE INDEX IF NOT EXISTS corrections_signature ON corrections (signature);
    )sql"},
    // 13 -> 14: one history line per delivery, numbered as recorded (history_lines_14).
    {"", history_lines_14},
    // 14 -> 15: a history line's explanation is written compressed
    // (explanation_codec.cpp), a blob in the TEXT column, which SQLite keeps as
    // given; the lines written before keep their text, which is read as it is
    // (the version keeps a mailsift that reads only the text from showing every
    // new line unexplained). And the indexes a million-line history needs
    // (bench/history_scale.sh, issue 41): a verdict with a probability order
    // walked the probability index through every line of the other verdicts
    // (1.5 s on 1 M lines), so the verdict has its own, which also counts a
    // verdict without reading the table; so has the action (action=tagged
    // hammiest: 2.7 s). (A probability index without the skipped lines, which
    // the probability orders leave out, was tried: SQLite then counted a
    // contains-filter through it, row by row, 3 s instead of 0.7.)
    {R"sql(
    CREATE INDEX IF NOT EXISTS history_verdict ON history (verdict, probability);
    CREATE INDEX IF NOT EXISTS history_action ON history (action, probability);
    )sql"},
    // 15 -> 16: a correction keeps what undoing it takes (correction_codec.cpp;
    // NULL for one recorded before, which cannot be undone), and an undone one
    // when and by whom, so that the line keeps its trail and the undone one
    // counts nowhere.
    {"", correction_undo_16},
    // 16 -> 17: linear_state.samples_dropped and refit_mark, the samples'
    // version at the last refit: mailsiftd refits when it is behind
    // (engine/trainer.hpp, refit_linear_if_behind).
    {"", refit_mark_17, "UPDATE linear_state SET refit_mark = seen_spam + seen_ham + samples_dropped;"},
    // 17 -> 18: the last refit's own change to the weights (RefitLayer), which
    // the next refit takes out before it starts: refits replace one another.
    // One row at most; none until a refit writes it.
    {R"sql(
    CREATE TABLE IF NOT EXISTS linear_refit (
        id INTEGER PRIMARY KEY CHECK (id = 0),
        hash_bits INTEGER NOT NULL,
        bias REAL NOT NULL,
        nb_weight REAL NOT NULL,
        slots BLOB NOT NULL                    -- slot deltas, as linear_deltas.slots
    );
    )sql"},
    // 18 -> 19: whose layer a correction stepped (CorrectionUndo::layer.user;
    // '' for none), so that a user's corrections and the census of layers are
    // found through an index rather than by reading every undo record. Only
    // corrections recorded from now on have one: the layers came with it.
    {"", layer_user_19,
     "CREATE INDEX IF NOT EXISTS corrections_layer_user ON corrections (layer_user) WHERE layer_user <> '';"},
    // 19 -> 20: for mail from which sender (CorrectionUndo::layer.sender; ''
    // for none), so that a correction finds other users' opposite corrections
    // of the same sender through an index (per_user: they cancel in the site).
    // Only corrections recorded from now on have one.
    {"", layer_sender_20,
     "CREATE INDEX IF NOT EXISTS corrections_layer_sender ON corrections (layer_sender) WHERE layer_sender <> '';"},
    // 20 -> 21: the users mailsiftd delivered to (per_user keys), so that a
    // correction naming a user it never delivered to is refused rather than
    // starting a layer. Those with a layer already were delivered to.
    {R"sql(
    CREATE TABLE IF NOT EXISTS delivered_users (
        name TEXT PRIMARY KEY,
        last_at INTEGER NOT NULL  -- the latest scan recorded for them
    ) WITHOUT ROWID;
    INSERT OR IGNORE INTO delivered_users (name, last_at)
        SELECT layer_user, max(at) FROM corrections WHERE layer_user <> '' GROUP BY layer_user;
    )sql"},
};
static_assert(std::size(migrations) == schema_version);


}  // namespace

int SqliteDatabase::user_version() {
    int version = 0;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, "PRAGMA user_version", -1, &s, nullptr) != SQLITE_OK) {
        fail(std::string("cannot read schema version: ") + error_text());
    }
    if (sqlite3_step(s) == SQLITE_ROW) version = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return version;
}

void SqliteDatabase::check_version(int version) const {
    if (version > schema_version) {
        fail("database schema version " + std::to_string(version) + " is newer than this mailsift supports (" +
             std::to_string(schema_version) + "); upgrade mailsift");
    }
}

void SqliteDatabase::migrate() {
    check_version(user_version());
    if (user_version() == schema_version) return;  // the common case takes no write lock
    exec("BEGIN IMMEDIATE");
    try {
        const int version = user_version();  // again, under the lock
        check_version(version);
        if (version == 0) {
            // A non-empty database without our version is someone else's file: leave it alone.
            sqlite3_stmt* s = nullptr;
            sqlite3_prepare_v2(db_, "SELECT count(*) FROM sqlite_schema", -1, &s, nullptr);
            const bool empty = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) == 0;
            sqlite3_finalize(s);
            if (!empty) fail("not a mailsift database (it has tables but no mailsift schema version)");
        }
        for (int v = version; v < schema_version; ++v) {
            exec(migrations[v].sql);
            if (migrations[v].code) migrations[v].code(db_, path_);
            if (migrations[v].sql_after) exec(migrations[v].sql_after);
            exec(("PRAGMA user_version = " + std::to_string(v + 1)).c_str());
        }
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

}  // namespace mailsift::store
