// SQLite storage for mailsift. Every statement is prepared once per connection;
// training sums count changes in memory and writes each feature once per batch.
#include "mailsift/store/database.hpp"

#include <sqlite3.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <istream>
#include <ostream>
#include <system_error>

namespace mailsift::store {

const char* to_string(Class c) { return c == Class::spam ? "spam" : "ham"; }

namespace {

// Migrations: entry i brings a database from user_version i to i + 1.
// Never edit a released entry; append a new one.
constexpr const char* migrations[] = {
    // 0 -> 1
    R"sql(
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
    )sql",
    // 1 -> 2: the feedback loop
    R"sql(
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
    )sql",
    // 2 -> 3: when each feature was last learned, for `mailsift prune`
    R"sql(
    ALTER TABLE features ADD COLUMN last_seen INTEGER NOT NULL DEFAULT 0;  -- seconds since the epoch
    -- Features learned before the column existed were last seen no later than the
    -- newest learned message; taking that bound delays their pruning, never hastens it.
    UPDATE features SET last_seen = (SELECT coalesce(max(learned_at), 0) FROM messages);
    )sql",
};
static_assert(std::size(migrations) == schema_version);

// ---- varint coding of a message's feature list ----

void put_varint(std::string& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7F) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

bool get_varint(std::string_view in, std::size_t& i, std::uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && i < in.size(); shift += 7) {
        const auto b = static_cast<unsigned char>(in[i++]);
        v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
        if ((b & 0x80) == 0) return true;
    }
    return false;
}

std::string encode_terms(std::vector<std::pair<model::FeatureId, std::uint32_t>> terms) {
    if (!std::is_sorted(terms.begin(), terms.end())) std::sort(terms.begin(), terms.end());  // callers often sort
    std::string out;
    out.reserve(terms.size() * 6);
    model::FeatureId prev = 0;
    for (const auto& [id, n] : terms) {
        put_varint(out, id - prev);
        put_varint(out, n);
        prev = id;
    }
    return out;
}

}  // namespace

// ---- prepared statements ----

class Statement {
public:
    Statement(sqlite3* db, const char* sql, const std::filesystem::path& path) {
        if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK) {
            throw Error(path, std::string("cannot prepare statement: ") + sqlite3_errmsg(db));
        }
    }
    ~Statement() { sqlite3_finalize(stmt_); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    sqlite3_stmt* get() { return stmt_; }

private:
    sqlite3_stmt* stmt_ = nullptr;
};

// Resets a statement whatever way the scope is left.
class Use {
public:
    explicit Use(Statement& s) : s_(s.get()) {}
    ~Use() {
        sqlite3_reset(s_);
        sqlite3_clear_bindings(s_);
    }
    sqlite3_stmt* operator*() const { return s_; }

private:
    sqlite3_stmt* s_;
};

struct Database::Statements {
    explicit Statements(sqlite3* db, const std::filesystem::path& p)
        : find_message(db, "SELECT class, features FROM messages WHERE digest = ?1", p),
          insert_message(db, "INSERT INTO messages (digest, class, learned_at, features) VALUES (?1, ?2, ?3, ?4)", p),
          delete_message(db, "DELETE FROM messages WHERE digest = ?1", p),
          upsert_feature(db,
                         "INSERT INTO features (id, spam_occurrences, ham_occurrences, spam_presences, ham_presences, text,"
                         " last_seen) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (id) DO UPDATE SET"
                         " spam_occurrences = spam_occurrences + excluded.spam_occurrences,"
                         " ham_occurrences = ham_occurrences + excluded.ham_occurrences,"
                         " spam_presences = spam_presences + excluded.spam_presences,"
                         " ham_presences = ham_presences + excluded.ham_presences,"
                         " last_seen = max(last_seen, excluded.last_seen)",
                         p),
          find_feature(db,
                       "SELECT spam_occurrences, ham_occurrences, spam_presences, ham_presences FROM features WHERE id = ?1",
                       p),
          delete_feature(db, "DELETE FROM features WHERE id = ?1", p),
          update_class(db,
                       "UPDATE classes SET messages = messages + ?2, occurrences = occurrences + ?3,"
                       " presences = presences + ?4 WHERE class = ?1",
                       p),
          insert_contact(db, "INSERT OR IGNORE INTO contacts (address, source, added_at) VALUES (?1, ?2, ?3)", p),
          delete_contact(db, "DELETE FROM contacts WHERE address = ?1", p),
          feature_text(db, "SELECT text FROM features WHERE id = ?1", p),
          data_version(db, "PRAGMA data_version", p),
          find_signature(db, "SELECT scanned_at, verdict, features FROM signatures WHERE id = ?1", p),
          upsert_signature(db,
                           "INSERT INTO signatures (id, scanned_at, verdict, features) VALUES (?1, ?2, ?3, ?4)"
                           " ON CONFLICT (id) DO UPDATE SET scanned_at = excluded.scanned_at,"
                           " verdict = excluded.verdict, features = excluded.features",
                           p),
          insert_correction(db, "INSERT INTO corrections (at, verdict, corrected_to) VALUES (?1, ?2, ?3)", p),
          add_counter(db,
                      "INSERT INTO counters (name, value) VALUES (?1, ?2)"
                      " ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
                      p) {}

    Statement find_message, insert_message, delete_message, upsert_feature, find_feature, delete_feature, update_class,
        insert_contact, delete_contact, feature_text, data_version, find_signature, upsert_signature,
        insert_correction, add_counter;
};

// ---- Database ----

Database::Database(std::filesystem::path path, Mode mode, std::chrono::milliseconds busy_timeout, Create create)
    : path_(std::move(path)), mode_(mode), busy_timeout_(busy_timeout) {
    std::error_code ec;
    const bool exists = std::filesystem::exists(path_, ec);
    if (mode_ == Mode::read_write && create == Create::never && !exists) throw Error(path_, "no such database");
    if (mode_ == Mode::read_only && !exists) {
        throw Error(path_, "no such database (train one first with 'mailsift learn')");
    }
    if (!exists && path_.has_parent_path()) {
        const auto dir = path_.parent_path();
        if (!std::filesystem::exists(dir, ec)) {
            std::filesystem::create_directories(dir, ec);
            if (ec) throw Error(path_, "cannot create directory " + dir.string() + ": " + ec.message());
            ::chmod(dir.c_str(), 0750);
        }
    }
    if (!exists && mode_ == Mode::read_write) {
        // A -wal or -shm without its database belongs to a deleted one: SQLite would
        // apply that old log to the new file (and share the old index), so it goes first.
        for (const char* suffix : {"-wal", "-shm", "-journal"}) {
            const std::string companion = path_.string() + suffix;
            if (::unlink(companion.c_str()) != 0 && errno != ENOENT) {
                throw Error(companion, std::string("left by a deleted database and cannot be removed: ") + std::strerror(errno));
            }
        }
    }
    const int flags = mode_ == Mode::read_only     ? SQLITE_OPEN_READONLY
                      : create == Create::never ? SQLITE_OPEN_READWRITE
                                                : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    // The database is created 0640 (umask 027) so other local users cannot read what was learned.
    const mode_t old_mask = exists ? 0 : ::umask(027);
    const int rc = sqlite3_open_v2(path_.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
    if (!exists) ::umask(old_mask);
    if (rc != SQLITE_OK) {
        const std::string msg = db_ ? error_text() : sqlite3_errstr(rc);
        sqlite3_close(db_);
        db_ = nullptr;
        throw Error(path_, "cannot open database: " + msg);
    }
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, static_cast<int>(busy_timeout.count()));
    try {
        // Is it an SQLite database at all? Reading the schema tells.
        exec("SELECT count(*) FROM sqlite_schema");
        if (mode_ == Mode::read_write) {
            // SQLite quietly opens a file it may not write read-only; a writer says so at once.
            if (sqlite3_db_readonly(db_, "main") == 1) {
                fail("cannot write the database: permission denied (uid " + std::to_string(::geteuid()) +
                     " may only read it)");
            }
            exec("PRAGMA journal_mode = WAL");
            exec("PRAGMA synchronous = NORMAL");
            // A training batch touches tens of thousands of feature rows; SQLite's
            // default 2 MiB page cache would read and write the same pages over again.
            exec("PRAGMA cache_size = -32768");
            migrate();
        } else {
            const int version = user_version();
            check_version(version);
            if (version < schema_version) {
                // An older database is upgraded in place once, through a short-lived
                // writer; a reader that may not write says so.
                try {
                    Database upgrade(path_, Mode::read_write, busy_timeout);
                } catch (const Error& e) {
                    fail("database schema version " + std::to_string(version) + " is older than this mailsift's (" +
                         std::to_string(schema_version) + ") and could not be upgraded: " + e.what());
                }
            }
        }
        st_ = std::make_unique<Statements>(db_, path_);
    } catch (...) {
        sqlite3_close(db_);
        db_ = nullptr;
        throw;
    }
}

Database::~Database() {
    st_.reset();
    if (db_ != nullptr) sqlite3_close(db_);
}

void Database::fail(const std::string& what) const { throw Error(path_, what); }

std::string Database::error_text() const {
    if (db_ == nullptr) return "out of memory";
    const int rc = sqlite3_extended_errcode(db_);
    switch (rc & 0xFF) {
        case SQLITE_BUSY: {
            const auto ms = busy_timeout_.count();
            const std::string waited = ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
            return "database is locked by another process (waited " + waited + "); try again when it has finished";
        }
        case SQLITE_READONLY:
            return std::string(sqlite3_errmsg(db_)) + " (no permission to write the file, its directory, or its -wal/-shm files)";
        case SQLITE_FULL:
            return "database or disk is full (no space left where the database is; nothing of this transaction was written)";
        default: return sqlite3_errmsg(db_);
    }
}

void Database::exec(const char* sql) {
    char* err = nullptr;
    if (const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err); rc != SQLITE_OK) {
        const int primary = rc & 0xFF;
        std::string msg = err && primary != SQLITE_BUSY && primary != SQLITE_FULL && primary != SQLITE_READONLY ? err : error_text();
        sqlite3_free(err);
        if (msg == "file is not a database") msg = "not a mailsift database (file is not an SQLite database)";
        fail(msg);
    }
}

int Database::user_version() {
    int version = 0;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, "PRAGMA user_version", -1, &s, nullptr) != SQLITE_OK) {
        fail(std::string("cannot read schema version: ") + error_text());
    }
    if (sqlite3_step(s) == SQLITE_ROW) version = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return version;
}

void Database::check_version(int version) const {
    if (version > schema_version) {
        fail("database schema version " + std::to_string(version) + " is newer than this mailsift supports (" +
             std::to_string(schema_version) + "); upgrade mailsift");
    }
}

void Database::migrate() {
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
            exec(migrations[v]);
            exec(("PRAGMA user_version = " + std::to_string(v + 1)).c_str());
        }
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

std::uint64_t Database::data_version() {
    Use s(st_->data_version);
    if (sqlite3_step(*s) != SQLITE_ROW) fail(std::string("cannot read data_version: ") + error_text());
    return static_cast<std::uint64_t>(sqlite3_column_int64(*s, 0));
}

std::string Database::model_fingerprint() {
    std::string out;
    Statement q(db_,
                "SELECT (SELECT group_concat(class || ':' || messages || ':' || occurrences || ':' || presences, ',')"
                " FROM classes), (SELECT count(*) || ':' || coalesce(max(added_at), 0) FROM contacts)",
                path_);
    if (sqlite3_step(q.get()) == SQLITE_ROW) {
        for (int i = 0; i < 2; ++i) {
            if (const auto* t = sqlite3_column_text(q.get(), i)) out.append(reinterpret_cast<const char*>(t));
            out.push_back('|');
        }
    }
    return out;
}

model::Counts Database::load_counts(model::TermFrequency tf) {
    model::Counts counts;
    const ClassTotals t = visit_counts(
        tf, [&](std::size_t n) { counts.features.reserve(n); },
        [&](model::FeatureId id, model::ClassCounts c) { counts.features.emplace(id, c); });
    counts.messages = t.messages;
    counts.feature_totals = t.feature_totals;
    return counts;
}

Database::ClassTotals Database::visit_counts(model::TermFrequency tf, const std::function<void(std::size_t)>& size,
                                             const std::function<void(model::FeatureId, model::ClassCounts)>& feature) {
    const bool boolean = tf == model::TermFrequency::boolean;
    ClassTotals totals;
    exec("BEGIN");  // one consistent read of classes and features
    try {
        {
            Statement q(db_, "SELECT class, messages, occurrences, presences FROM classes", path_);
            while (sqlite3_step(q.get()) == SQLITE_ROW) {
                const bool spam = sqlite3_column_int(q.get(), 0) == 1;
                const auto messages = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 1));
                const auto total = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), boolean ? 3 : 2));
                (spam ? totals.messages.spam : totals.messages.ham) = messages;
                (spam ? totals.feature_totals.spam : totals.feature_totals.ham) = total;
            }
        }
        {
            Statement q(db_, "SELECT count(*) FROM features", path_);
            if (sqlite3_step(q.get()) != SQLITE_ROW) fail(std::string("cannot count features: ") + error_text());
            size(static_cast<std::size_t>(sqlite3_column_int64(q.get(), 0)));
        }
        Statement q(db_,
                    boolean ? "SELECT id, spam_presences, ham_presences FROM features"
                            : "SELECT id, spam_occurrences, ham_occurrences FROM features",
                    path_);
        int rc;
        while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
            feature(static_cast<model::FeatureId>(sqlite3_column_int64(q.get(), 0)),
                    model::ClassCounts{static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 1)),
                                       static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 2))});
        }
        if (rc != SQLITE_DONE) fail(std::string("cannot read features: ") + error_text());
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return totals;
}

ContactSet Database::load_contacts() {
    std::unordered_set<std::string> set;
    Statement q(db_, "SELECT address FROM contacts", path_);
    while (sqlite3_step(q.get()) == SQLITE_ROW) {
        set.emplace(reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 0)));
    }
    return ContactSet(std::move(set));
}

namespace {
void bind_digest(sqlite3_stmt* s, int index, const Digest& d) {
    sqlite3_bind_blob(s, index, d.data(), static_cast<int>(d.size()), SQLITE_STATIC);
}
}  // namespace

std::optional<Scan> Database::find_scan(const Digest& id) {
    Use s(st_->find_signature);
    bind_digest(*s, 1, id);
    const int rc = sqlite3_step(*s);
    if (rc == SQLITE_DONE) return std::nullopt;
    if (rc != SQLITE_ROW) fail(std::string("cannot look up signature: ") + error_text());
    Scan scan;
    scan.id = id;
    scan.scanned_at = sqlite3_column_int64(*s, 0);
    scan.verdict = static_cast<model::Verdict>(sqlite3_column_int(*s, 1));
    scan.features.assign(reinterpret_cast<const char*>(sqlite3_column_text(*s, 2)),
                         static_cast<std::size_t>(sqlite3_column_bytes(*s, 2)));
    return scan;
}

void Database::record(const Recording& r) {
    if (mode_ != Mode::read_write) fail("database was opened read-only");
    exec("BEGIN IMMEDIATE");
    try {
        for (const auto& scan : r.scans) {
            Use s(st_->upsert_signature);
            bind_digest(*s, 1, scan.id);
            sqlite3_bind_int64(*s, 2, scan.scanned_at);
            sqlite3_bind_int(*s, 3, static_cast<int>(scan.verdict));
            sqlite3_bind_text(*s, 4, scan.features.data(), static_cast<int>(scan.features.size()), SQLITE_STATIC);
            if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot record signature: ") + error_text());
        }
        for (const auto& c : r.contacts) add_contact(c.address, c.source, c.added_at);
        for (const auto& [name, n] : r.counter_increments) {
            Use s(st_->add_counter);
            sqlite3_bind_text(*s, 1, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
            sqlite3_bind_int64(*s, 2, n);
            if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot update counter: ") + error_text());
        }
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

std::size_t Database::prune_scans(std::int64_t before) {
    Statement q(db_, "DELETE FROM signatures WHERE scanned_at < ?1", path_);
    sqlite3_bind_int64(q.get(), 1, before);
    if (sqlite3_step(q.get()) != SQLITE_DONE) fail(std::string("cannot prune signatures: ") + error_text());
    return static_cast<std::size_t>(sqlite3_changes(db_));
}

CorrectionCounts Database::corrections_since(std::int64_t since) {
    CorrectionCounts c;
    Statement q(db_, "SELECT verdict, corrected_to, count(*) FROM corrections WHERE at >= ?1 GROUP BY 1, 2", path_);
    sqlite3_bind_int64(q.get(), 1, since);
    while (sqlite3_step(q.get()) == SQLITE_ROW) {
        const auto verdict = static_cast<model::Verdict>(sqlite3_column_int(q.get(), 0));
        const bool to_spam = sqlite3_column_int(q.get(), 1) == 1;
        const auto n = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 2));
        if (verdict == model::Verdict::spam && !to_spam) c.false_positives += n;
        else if (verdict == model::Verdict::ham && to_spam) c.false_negatives += n;
        else if (verdict == model::Verdict::unsure) (to_spam ? c.unsure_to_spam : c.unsure_to_ham) += n;
    }
    return c;
}

std::vector<std::pair<std::string, std::int64_t>> Database::counters() {
    std::vector<std::pair<std::string, std::int64_t>> out;
    Statement q(db_, "SELECT name, value FROM counters ORDER BY name", path_);
    while (sqlite3_step(q.get()) == SQLITE_ROW) {
        out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 0)), sqlite3_column_int64(q.get(), 1));
    }
    return out;
}

std::vector<Contact> Database::contacts() {
    std::vector<Contact> out;
    Statement q(db_, "SELECT address, source, added_at FROM contacts ORDER BY address", path_);
    while (sqlite3_step(q.get()) == SQLITE_ROW) {
        out.push_back({reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 0)),
                       reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 1)), sqlite3_column_int64(q.get(), 2)});
    }
    return out;
}

bool Database::add_contact(std::string_view address, std::string_view source, std::int64_t now) {
    Use s(st_->insert_contact);
    sqlite3_bind_text(*s, 1, address.data(), static_cast<int>(address.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(*s, 2, source.data(), static_cast<int>(source.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(*s, 3, now);
    if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot add contact: ") + error_text());
    return sqlite3_changes(db_) > 0;
}

bool Database::remove_contact(std::string_view address) {
    Use s(st_->delete_contact);
    sqlite3_bind_text(*s, 1, address.data(), static_cast<int>(address.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot remove contact: ") + error_text());
    return sqlite3_changes(db_) > 0;
}

std::string Database::feature_text(model::FeatureId id) {
    Use s(st_->feature_text);
    sqlite3_bind_int64(*s, 1, static_cast<sqlite3_int64>(id));
    if (sqlite3_step(*s) == SQLITE_ROW) return reinterpret_cast<const char*>(sqlite3_column_text(*s, 0));
    return {};
}

Statistics Database::statistics() {
    Statistics st;
    st.schema_version = schema_version;
    {
        Statement q(db_, "SELECT class, messages, occurrences FROM classes", path_);
        while (sqlite3_step(q.get()) == SQLITE_ROW) {
            const bool spam = sqlite3_column_int(q.get(), 0) == 1;
            (spam ? st.messages.spam : st.messages.ham) = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 1));
            (spam ? st.occurrences.spam : st.occurrences.ham) =
                static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 2));
        }
    }
    {
        Statement q(db_, "SELECT count(*) FROM features", path_);
        if (sqlite3_step(q.get()) == SQLITE_ROW) st.distinct_features = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0));
    }
    {
        Statement q(db_, "SELECT count(*) FROM contacts", path_);
        if (sqlite3_step(q.get()) == SQLITE_ROW) st.contacts = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0));
    }
    {
        Statement q(db_, "SELECT count(*) FROM signatures", path_);
        if (sqlite3_step(q.get()) == SQLITE_ROW) st.signatures = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0));
    }
    std::error_code ec;
    const auto size = std::filesystem::file_size(path_, ec);
    st.file_bytes = ec ? 0 : size;
    return st;
}

// ---- administration: contacts in bulk, pruning ----

std::size_t Database::add_contacts(const std::vector<Contact>& contacts) {
    if (mode_ != Mode::read_write) fail("database was opened read-only");
    std::size_t added = 0;
    exec("BEGIN IMMEDIATE");
    try {
        for (const auto& c : contacts) {
            if (add_contact(c.address, c.source, c.added_at)) ++added;
        }
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return added;
}

PruneResult Database::prune(std::int64_t signatures_before, std::int64_t features_before) {
    if (mode_ != Mode::read_write) fail("database was opened read-only");
    PruneResult r;
    std::int64_t held[4] = {0, 0, 0, 0};  // what the pruned features held: spam, ham occurrences; spam, ham presences
    exec("BEGIN IMMEDIATE");
    try {
        {
            Statement q(db_, "DELETE FROM signatures WHERE scanned_at < ?1", path_);
            sqlite3_bind_int64(q.get(), 1, signatures_before);
            if (sqlite3_step(q.get()) != SQLITE_DONE) fail(std::string("cannot prune signatures: ") + error_text());
            r.signatures = static_cast<std::uint64_t>(sqlite3_changes(db_));
        }
        // Seen exactly once in all, and not since the cut-off.
        const std::string once = " FROM features WHERE spam_occurrences + ham_occurrences = 1 AND last_seen < ?1";
        {
            Statement q(db_,
                        ("SELECT count(*), coalesce(sum(spam_occurrences), 0), coalesce(sum(ham_occurrences), 0),"
                         " coalesce(sum(spam_presences), 0), coalesce(sum(ham_presences), 0)" + once)
                            .c_str(),
                        path_);
            sqlite3_bind_int64(q.get(), 1, features_before);
            if (sqlite3_step(q.get()) != SQLITE_ROW) fail(std::string("cannot read features: ") + error_text());
            r.features = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0));
            for (int k = 0; k < 4; ++k) held[k] = sqlite3_column_int64(q.get(), k + 1);
        }
        {
            Statement q(db_, ("DELETE" + once).c_str(), path_);
            sqlite3_bind_int64(q.get(), 1, features_before);
            if (sqlite3_step(q.get()) != SQLITE_DONE) fail(std::string("cannot prune features: ") + error_text());
        }
        const struct {
            int cls;
            std::int64_t occ, pres;
        } totals[] = {{1, held[0], held[2]}, {0, held[1], held[3]}};
        for (const auto& t : totals) {
            Use s(st_->update_class);
            sqlite3_bind_int(*s, 1, t.cls);
            sqlite3_bind_int64(*s, 2, 0);
            sqlite3_bind_int64(*s, 3, -t.occ);
            sqlite3_bind_int64(*s, 4, -t.pres);
            if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot update totals: ") + error_text());
        }
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    r.occurrences = {static_cast<std::uint64_t>(held[0]), static_cast<std::uint64_t>(held[1])};
    r.presences = {static_cast<std::uint64_t>(held[2]), static_cast<std::uint64_t>(held[3])};
    return r;
}

// ---- export and import: the text format of mailsift(1), FORMAT ----
//
//   mailsift-model<TAB>1
//   class<TAB>spam|ham<TAB>MESSAGES<TAB>OCCURRENCES<TAB>PRESENCES
//   feature<TAB>ID<TAB>SPAM_OCC<TAB>HAM_OCC<TAB>SPAM_PRES<TAB>HAM_PRES<TAB>LAST_SEEN<TAB>TEXT
//   message<TAB>DIGEST<TAB>spam|ham<TAB>LEARNED_AT<TAB>ID:COUNT,ID:COUNT,...
//   contact<TAB>ADDRESS<TAB>SOURCE<TAB>ADDED_AT
//   end<TAB>FEATURES<TAB>MESSAGES<TAB>CONTACTS
//
// IDs are 16 lower-case hex digits, digests 32; texts escape \\ \t \n \r and
// other control bytes (\xHH). Written in a fixed order (classes spam then ham,
// features by id, messages by digest, contacts by address), so exporting an
// import gives the same bytes.

namespace {

constexpr const char* export_magic = "mailsift-model";
constexpr int export_version = 1;
constexpr char hex_digits[] = "0123456789abcdef";

void put_escaped(std::string& out, std::string_view s) {
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '\t': out += "\\t"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            default:
                if (c < 0x20 || c == 0x7F) {
                    out += "\\x";
                    out += hex_digits[c >> 4];
                    out += hex_digits[c & 0xF];
                } else {
                    out.push_back(ch);
                }
        }
    }
}

void put_hex64(std::string& out, std::uint64_t v) {
    for (int shift = 60; shift >= 0; shift -= 4) out += hex_digits[(v >> shift) & 0xF];
}

std::string_view column_text(sqlite3_stmt* s, int i) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
    return p == nullptr ? std::string_view{} : std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(s, i)));
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;  // upper case is not what the exporter writes
}

bool parse_hex64(std::string_view s, std::uint64_t& v) {
    if (s.size() != 16) return false;
    v = 0;
    for (const char c : s) {
        const int h = hex_value(c);
        if (h < 0) return false;
        v = (v << 4) | static_cast<std::uint64_t>(h);
    }
    return true;
}

bool parse_digest(std::string_view s, Digest& d) {
    if (s.size() != d.size() * 2) return false;
    for (std::size_t i = 0; i < d.size(); ++i) {
        const int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        d[i] = static_cast<std::uint8_t>(hi * 16 + lo);
    }
    return true;
}

// Decimal without sign or leading zeros (but "0"), at most `max`.
bool parse_count(std::string_view s, std::uint64_t max, std::uint64_t& v) {
    if (s.empty() || s.size() > 20 || (s.size() > 1 && s[0] == '0')) return false;
    v = 0;
    for (const char c : s) {
        if (c < '0' || c > '9') return false;
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (v > (max - digit) / 10) return false;
        v = v * 10 + digit;
    }
    return true;
}

bool parse_time(std::string_view s, std::int64_t& v) {
    const bool negative = !s.empty() && s[0] == '-';
    std::uint64_t magnitude = 0;
    if (!parse_count(negative ? s.substr(1) : s, static_cast<std::uint64_t>(INT64_MAX), magnitude)) return false;
    if (negative && magnitude == 0) return false;
    v = negative ? -static_cast<std::int64_t>(magnitude) : static_cast<std::int64_t>(magnitude);
    return true;
}

// The exporter's escapes undone; "" when fine, else what is wrong.
std::string unescape(std::string_view s, std::string& out) {
    out.clear();
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7F) return "unescaped control character in text";
        if (c != '\\') {
            out.push_back(s[i]);
            continue;
        }
        if (++i >= s.size()) return "text ends in a lone backslash";
        switch (s[i]) {
            case '\\': out.push_back('\\'); break;
            case 't': out.push_back('\t'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 'x': {
                const int hi = i + 1 < s.size() ? hex_value(s[i + 1]) : -1;
                const int lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
                if (hi < 0 || lo < 0) return "bad escape \\x in text (two lower-case hex digits must follow)";
                out.push_back(static_cast<char>(hi * 16 + lo));
                i += 2;
                break;
            }
            default: return std::string("unknown escape \\") + s[i] + " in text";
        }
    }
    return {};
}

std::vector<std::string_view> split_fields(std::string_view line) {
    std::vector<std::string_view> fields;
    for (;;) {
        const std::size_t tab = line.find('\t');
        fields.push_back(line.substr(0, tab));
        if (tab == std::string_view::npos) return fields;
        line.remove_prefix(tab + 1);
    }
}

[[noreturn]] void format_error(const std::string& name, std::uint64_t line, const std::string& what) {
    throw FormatError(name + ":" + std::to_string(line) + ": " + what);
}

bool is_constraint(int rc) { return (rc & 0xFF) == SQLITE_CONSTRAINT; }

}  // namespace

ModelSummary Database::export_model(std::ostream& out) {
    ModelSummary sum;
    std::string line;
    exec("BEGIN");  // one consistent snapshot
    try {
        out << export_magic << '\t' << export_version << '\n';
        int rc;
        {
            Statement q(db_, "SELECT class, messages, occurrences, presences FROM classes ORDER BY class DESC", path_);
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                out << "class\t" << (sqlite3_column_int(q.get(), 0) == 1 ? "spam" : "ham") << '\t'
                    << sqlite3_column_int64(q.get(), 1) << '\t' << sqlite3_column_int64(q.get(), 2) << '\t'
                    << sqlite3_column_int64(q.get(), 3) << '\n';
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read class totals: ") + error_text());
        }
        {
            Statement q(db_,
                        "SELECT id, spam_occurrences, ham_occurrences, spam_presences, ham_presences, last_seen, text"
                        " FROM features ORDER BY id",
                        path_);
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                line.assign("feature\t");
                put_hex64(line, static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0)));
                for (int k = 1; k <= 5; ++k) {
                    line += '\t';
                    line += std::to_string(sqlite3_column_int64(q.get(), k));
                }
                line += '\t';
                put_escaped(line, column_text(q.get(), 6));
                line += '\n';
                out << line;
                ++sum.features;
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read features: ") + error_text());
        }
        {
            Statement q(db_, "SELECT digest, class, learned_at, features FROM messages ORDER BY digest", path_);
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                line.assign("message\t");
                const auto* digest = static_cast<const unsigned char*>(sqlite3_column_blob(q.get(), 0));
                for (int i = 0; i < sqlite3_column_bytes(q.get(), 0); ++i) {
                    line += hex_digits[digest[i] >> 4];
                    line += hex_digits[digest[i] & 0xF];
                }
                line += sqlite3_column_int(q.get(), 1) == 1 ? "\tspam\t" : "\tham\t";
                line += std::to_string(sqlite3_column_int64(q.get(), 2));
                line += '\t';
                const std::string_view blob(static_cast<const char*>(sqlite3_column_blob(q.get(), 3)),
                                            static_cast<std::size_t>(sqlite3_column_bytes(q.get(), 3)));
                std::size_t i = 0;
                model::FeatureId id = 0;
                std::uint64_t delta = 0, n = 0;
                bool first = true;
                while (i < blob.size()) {
                    if (!get_varint(blob, i, delta) || !get_varint(blob, i, n)) {
                        fail("corrupt feature list of a learned message; cannot export it");
                    }
                    id += delta;
                    if (!first) line += ',';
                    first = false;
                    put_hex64(line, id);
                    line += ':';
                    line += std::to_string(n);
                }
                line += '\n';
                out << line;
                ++sum.messages;
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read learned messages: ") + error_text());
        }
        {
            Statement q(db_, "SELECT address, source, added_at FROM contacts ORDER BY address", path_);
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                line.assign("contact\t");
                put_escaped(line, column_text(q.get(), 0));
                line += '\t';
                put_escaped(line, column_text(q.get(), 1));
                line += '\t';
                line += std::to_string(sqlite3_column_int64(q.get(), 2));
                line += '\n';
                out << line;
                ++sum.contacts;
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read contacts: ") + error_text());
        }
        out << "end\t" << sum.features << '\t' << sum.messages << '\t' << sum.contacts << '\n';
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return sum;
}

ModelSummary Database::import_model(std::istream& in, const std::string& name) {
    if (mode_ != Mode::read_write) fail("database was opened read-only");
    ModelSummary sum;
    exec("BEGIN IMMEDIATE");
    try {
        {
            Statement q(db_,
                        "SELECT (SELECT count(*) FROM features), (SELECT count(*) FROM messages),"
                        " (SELECT count(*) FROM contacts),"
                        " (SELECT count(*) FROM classes WHERE messages <> 0 OR occurrences <> 0 OR presences <> 0)",
                        path_);
            if (sqlite3_step(q.get()) != SQLITE_ROW) fail(std::string("cannot read the database: ") + error_text());
            const auto features = sqlite3_column_int64(q.get(), 0), messages = sqlite3_column_int64(q.get(), 1),
                       contacts = sqlite3_column_int64(q.get(), 2), totals = sqlite3_column_int64(q.get(), 3);
            if (features != 0 || messages != 0 || contacts != 0 || totals != 0) {
                fail("already holds a model (" + std::to_string(features) + " features, " + std::to_string(messages) +
                     " learned messages, " + std::to_string(contacts) +
                     " contacts); import only into a new or empty database");
            }
        }
        Statement set_class(db_, "UPDATE classes SET messages = ?2, occurrences = ?3, presences = ?4 WHERE class = ?1",
                            path_);
        Statement insert_feature(db_,
                                 "INSERT INTO features (id, spam_occurrences, ham_occurrences, spam_presences,"
                                 " ham_presences, last_seen, text) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                                 path_);
        Statement insert_contact(db_, "INSERT INTO contacts (address, source, added_at) VALUES (?1, ?2, ?3)", path_);

        std::string line, text, text2;
        std::uint64_t lineno = 0;
        bool seen_class[2] = {false, false};
        std::uint64_t class_line[2] = {0, 0};
        bool ended = false;
        std::vector<std::pair<model::FeatureId, std::uint32_t>> list;
        const auto max_count = static_cast<std::uint64_t>(INT64_MAX);
        auto step = [&](sqlite3_stmt* s, const std::string& duplicate) {
            const int rc = sqlite3_step(s);
            if (is_constraint(rc)) format_error(name, lineno, duplicate);
            if (rc != SQLITE_DONE) fail(std::string("cannot import: ") + error_text());
        };
        while (std::getline(in, line)) {
            ++lineno;
            if (!line.empty() && line.back() == '\r') {
                format_error(name, lineno, "line ends in a carriage return (exports have LF line ends)");
            }
            const auto f = split_fields(line);
            if (lineno == 1) {
                if (f.size() != 2 || f[0] != export_magic) {
                    format_error(name, lineno, std::string("not a mailsift model export (the first line must be '") +
                                                   export_magic + "<TAB>" + std::to_string(export_version) + "')");
                }
                if (f[1] != std::to_string(export_version)) {
                    format_error(name, lineno, "format version '" + std::string(f[1]) + "' is not supported (this mailsift reads " +
                                                   std::to_string(export_version) + ")");
                }
                continue;
            }
            if (ended) format_error(name, lineno, "text after the 'end' line");
            const std::string_view kind = f[0];
            auto want_fields = [&](std::size_t n) {
                if (f.size() != n) {
                    format_error(name, lineno, "a '" + std::string(kind) + "' record has " + std::to_string(n) +
                                                   " tab-separated fields, this line " + std::to_string(f.size()));
                }
            };
            auto count_field = [&](std::size_t i, const char* what) {
                std::uint64_t v = 0;
                if (!parse_count(f[i], max_count, v)) {
                    format_error(name, lineno, std::string(what) + " '" + std::string(f[i]) + "' is not a count");
                }
                return static_cast<std::int64_t>(v);
            };
            auto time_field = [&](std::size_t i, const char* what) {
                std::int64_t v = 0;
                if (!parse_time(f[i], v)) format_error(name, lineno, std::string(what) + " '" + std::string(f[i]) + "' is not a time");
                return v;
            };
            auto class_field = [&](std::size_t i) {
                if (f[i] == "spam") return 1;
                if (f[i] == "ham") return 0;
                format_error(name, lineno, "class '" + std::string(f[i]) + "' is neither spam nor ham");
            };
            auto text_field = [&](std::size_t i, const char* what, std::string& out) {
                const std::string problem = unescape(f[i], out);
                if (!problem.empty()) format_error(name, lineno, std::string(what) + ": " + problem);
            };
            if (kind == "class") {
                want_fields(5);
                const int cls = class_field(1);
                if (seen_class[cls]) format_error(name, lineno, "a second 'class " + std::string(f[1]) + "' record");
                seen_class[cls] = true;
                class_line[cls] = lineno;
                Use s(set_class);
                sqlite3_bind_int(*s, 1, cls);
                for (int k = 0; k < 3; ++k) sqlite3_bind_int64(*s, k + 2, count_field(static_cast<std::size_t>(k + 2), "count"));
                step(*s, "class record rejected");
            } else if (kind == "feature") {
                want_fields(8);
                std::uint64_t id = 0;
                if (!parse_hex64(f[1], id)) format_error(name, lineno, "feature id '" + std::string(f[1]) + "' is not 16 hex digits");
                Use s(insert_feature);
                sqlite3_bind_int64(*s, 1, static_cast<sqlite3_int64>(id));
                for (int k = 2; k <= 5; ++k) sqlite3_bind_int64(*s, k, count_field(static_cast<std::size_t>(k), "count"));
                sqlite3_bind_int64(*s, 6, time_field(6, "last seen"));
                text_field(7, "feature text", text);
                sqlite3_bind_text(*s, 7, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
                step(*s, "feature " + std::string(f[1]) + " appears twice");
                ++sum.features;
            } else if (kind == "message") {
                want_fields(5);
                Digest digest{};
                if (!parse_digest(f[1], digest)) format_error(name, lineno, "digest '" + std::string(f[1]) + "' is not 32 hex digits");
                const int cls = class_field(2);
                const std::int64_t learned_at = time_field(3, "learned at");
                list.clear();
                std::string_view rest = f[4];
                while (!rest.empty()) {
                    const std::size_t comma = rest.find(',');
                    const std::string_view item = rest.substr(0, comma);
                    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
                    const std::size_t colon = item.find(':');
                    std::uint64_t id = 0, n = 0;
                    if (colon == std::string_view::npos || !parse_hex64(item.substr(0, colon), id) ||
                        !parse_count(item.substr(colon + 1), UINT32_MAX, n) || n == 0 ||
                        (comma != std::string_view::npos && rest.empty())) {
                        format_error(name, lineno, "feature list item '" + std::string(item) +
                                                       "' is not ID:COUNT (16 hex digits, a count from 1)");
                    }
                    list.emplace_back(id, static_cast<std::uint32_t>(n));
                }
                const std::string blob = encode_terms(std::move(list));
                list = {};
                Use s(st_->insert_message);
                bind_digest(*s, 1, digest);
                sqlite3_bind_int(*s, 2, cls);
                sqlite3_bind_int64(*s, 3, learned_at);
                sqlite3_bind_blob(*s, 4, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
                step(*s, "message " + std::string(f[1]) + " appears twice");
                ++sum.messages;
            } else if (kind == "contact") {
                want_fields(4);
                text_field(1, "address", text);
                text_field(2, "source", text2);
                if (text.empty() || text2.empty()) format_error(name, lineno, "a contact needs an address and a source");
                Use s(insert_contact);
                sqlite3_bind_text(*s, 1, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
                sqlite3_bind_text(*s, 2, text2.data(), static_cast<int>(text2.size()), SQLITE_STATIC);
                sqlite3_bind_int64(*s, 3, time_field(3, "added at"));
                step(*s, "contact " + text + " appears twice");
                ++sum.contacts;
            } else if (kind == "end") {
                want_fields(4);
                const ModelSummary said{static_cast<std::uint64_t>(count_field(1, "count")),
                                        static_cast<std::uint64_t>(count_field(2, "count")),
                                        static_cast<std::uint64_t>(count_field(3, "count"))};
                if (said.features != sum.features || said.messages != sum.messages || said.contacts != sum.contacts) {
                    format_error(name, lineno, "the 'end' line counts " + std::to_string(said.features) + " features, " +
                                                   std::to_string(said.messages) + " messages and " +
                                                   std::to_string(said.contacts) + " contacts, the file holds " +
                                                   std::to_string(sum.features) + ", " + std::to_string(sum.messages) +
                                                   " and " + std::to_string(sum.contacts));
                }
                for (const int cls : {1, 0}) {
                    if (!seen_class[cls]) format_error(name, lineno, std::string("no 'class ") + (cls == 1 ? "spam" : "ham") + "' record");
                }
                ended = true;
            } else {
                format_error(name, lineno, "unknown record '" + std::string(kind) +
                                               "' (expected class, feature, message, contact or end)");
            }
        }
        if (in.bad()) format_error(name, lineno, "read error");
        if (lineno == 0) format_error(name, 1, "empty file, not a mailsift model export");
        if (!ended) format_error(name, lineno + 1, "no 'end' line: the file is incomplete");
        {
            // The store's promise (class totals are the sums of the feature rows, and each
            // class counts its learned messages) holds for every export; a file that
            // breaks it was edited or damaged, and would score and unlearn wrongly.
            Statement q(db_,
                        "SELECT c.class, c.messages, c.occurrences, c.presences,"
                        " (SELECT coalesce(sum(CASE c.class WHEN 1 THEN spam_occurrences ELSE ham_occurrences END), 0) FROM features),"
                        " (SELECT coalesce(sum(CASE c.class WHEN 1 THEN spam_presences ELSE ham_presences END), 0) FROM features),"
                        " (SELECT count(*) FROM messages m WHERE m.class = c.class)"
                        " FROM classes c ORDER BY c.class DESC",
                        path_);
            int rc;
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                const int cls = sqlite3_column_int(q.get(), 0);
                const char* cname = cls == 1 ? "spam" : "ham";
                const struct {
                    const char* what;
                    std::int64_t said, sum;
                    const char* of;
                } checks[] = {
                    {"occurrences", sqlite3_column_int64(q.get(), 2), sqlite3_column_int64(q.get(), 4),
                     "the feature rows' occurrences"},
                    {"presences", sqlite3_column_int64(q.get(), 3), sqlite3_column_int64(q.get(), 5),
                     "the feature rows' presences"},
                    {"messages", sqlite3_column_int64(q.get(), 1), sqlite3_column_int64(q.get(), 6),
                     "the learned 'message' records"},
                };
                for (const auto& c : checks) {
                    if (c.said != c.sum) {
                        format_error(name, class_line[cls],
                                     std::string("class ") + cname + " totals do not match the file: " + c.what + " " +
                                         std::to_string(c.said) + ", but " + c.of + " of class " + cname + " sum to " +
                                         std::to_string(c.sum) + " (nothing imported)");
                    }
                }
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot check the imported totals: ") + error_text());
        }
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return sum;
}

// ---- backup ----

void Database::backup(const std::filesystem::path& dest, bool replace) {
    namespace fs = std::filesystem;
    const std::string target = dest.string();
    const std::string companions[] = {target + "-wal", target + "-journal", target + "-shm"};
    auto present = [](const std::string& p) {
        struct stat st{};
        return ::lstat(p.c_str(), &st) == 0;
    };
    // Never write over the live database or its logs.
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        std::error_code ec;
        const fs::path live = path_.string() + suffix;
        if (present(target) && present(live.string()) && fs::equivalent(dest, live, ec)) {
            throw Error(dest, std::string("is the database") + (*suffix ? "'s own " + std::string(suffix + 1) : " itself"));
        }
    }
    if (!replace) {
        if (present(target)) throw Error(dest, "already exists; not replaced");
        // A log left by an earlier database of this name would be applied to the copy.
        for (const auto& p : {companions[0], companions[1]}) {
            if (present(p)) throw Error(p, "already exists and would be applied to the copy; not replaced");
        }
    }
    const fs::path dir = dest.has_parent_path() ? dest.parent_path() : fs::path(".");
    std::string temp = (dir / (dest.filename().string() + ".partial-XXXXXX")).string();
    const int fd = ::mkstemp(temp.data());
    if (fd < 0) throw Error(dest, std::string("cannot create the copy: ") + std::strerror(errno));
    ::fchmod(fd, 0640);  // as private as the database itself
    ::close(fd);
    sqlite3* out = nullptr;
    try {
        auto copy_failed = [&](const std::string& what) {
            throw Error(dest, "cannot write the copy: " + what);
        };
        if (sqlite3_open_v2(temp.c_str(), &out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
            copy_failed(out ? sqlite3_errmsg(out) : "out of memory");
        }
        sqlite3_backup* b = sqlite3_backup_init(out, "main", db_, "main");
        if (b == nullptr) copy_failed(sqlite3_errmsg(out));
        // All pages in one step: one read transaction on the source, which in WAL mode
        // lets writers go on, and a copy of the state when it began. (Smaller steps
        // would restart whenever another connection commits, maybe without end.)
        const auto deadline = std::chrono::steady_clock::now() + busy_timeout_;
        int rc;
        do {
            rc = sqlite3_backup_step(b, -1);
            const int primary = rc & 0xFF;
            if ((primary == SQLITE_BUSY || primary == SQLITE_LOCKED) && std::chrono::steady_clock::now() < deadline) {
                sqlite3_sleep(50);
                rc = SQLITE_OK;
            }
        } while (rc == SQLITE_OK);
        sqlite3_backup_finish(b);
        if (rc != SQLITE_DONE) copy_failed(sqlite3_errmsg(out));
        const int closed = sqlite3_close(out);
        out = nullptr;
        if (closed != SQLITE_OK) copy_failed(sqlite3_errstr(closed));
        if (replace) {
            for (const auto& p : companions) {
                if (::unlink(p.c_str()) != 0 && errno != ENOENT) {
                    throw Error(p, std::string("cannot remove the old database's file: ") + std::strerror(errno));
                }
            }
            if (::rename(temp.c_str(), target.c_str()) != 0) {
                throw Error(dest, std::string("cannot move the copy into place: ") + std::strerror(errno));
            }
        } else {
            // link() will not replace a file that appeared meanwhile; rename() would.
            if (::link(temp.c_str(), target.c_str()) != 0) {
                const int e = errno;
                throw Error(dest, e == EEXIST ? std::string("already exists; not replaced")
                                              : std::string("cannot move the copy into place: ") + std::strerror(e));
            }
            ::unlink(temp.c_str());
        }
    } catch (...) {
        if (out != nullptr) sqlite3_close(out);
        ::unlink(temp.c_str());
        ::unlink((temp + "-journal").c_str());
        throw;
    }
}

// ---- TrainingBatch ----

TrainingBatch::TrainingBatch(Database& db) : db_(db) {
    if (db_.mode() != Database::Mode::read_write) db_.fail("database was opened read-only");
    db_.exec("BEGIN IMMEDIATE");
    open_ = true;
    deltas_.reserve(1 << 16);  // a batch of corpus mail touches tens of thousands of features
    delta_slots_.assign(1 << 17, 0);
}

TrainingBatch::~TrainingBatch() {
    if (open_) sqlite3_exec(db_.db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

std::size_t TrainingBatch::DigestHash::operator()(const Digest& d) const noexcept {
    std::uint64_t h;
    std::memcpy(&h, d.data(), sizeof h);  // a content digest: its bytes are already well mixed
    return static_cast<std::size_t>(h);
}

TrainingBatch::Delta& TrainingBatch::delta(model::FeatureId id) {
    if ((deltas_.size() + 1) * 2 > delta_slots_.size()) {  // load factor at most 1/2
        delta_slots_.assign(delta_slots_.size() * 2, 0);
        const std::size_t mask = delta_slots_.size() - 1;
        for (std::size_t i = 0; i < deltas_.size(); ++i) {
            std::size_t s = static_cast<std::size_t>(deltas_[i].first) & mask;
            while (delta_slots_[s] != 0) s = (s + 1) & mask;
            delta_slots_[s] = static_cast<std::uint32_t>(i + 1);
        }
    }
    const std::size_t mask = delta_slots_.size() - 1;
    std::size_t s = static_cast<std::size_t>(id) & mask;  // ids are hashes: their low bits are well mixed
    while (delta_slots_[s] != 0) {
        auto& entry = deltas_[delta_slots_[s] - 1];
        if (entry.first == id) return entry.second;
        s = (s + 1) & mask;
    }
    deltas_.emplace_back(id, Delta{});
    delta_slots_[s] = static_cast<std::uint32_t>(deltas_.size());
    return deltas_.back().second;
}

// n > 0 learns; n < 0 unlearns, from a message learned in this batch or (`earlier`) before it.
void TrainingBatch::count(Class c, model::FeatureId id, std::int64_t n, std::string_view text, bool earlier) {
    Delta& d = delta(id);
    const bool spam = c == Class::spam;
    if (earlier) {
        (spam ? d.removed_occurrences_spam : d.removed_occurrences_ham) -= n;
        (spam ? d.removed_presence_spam : d.removed_presence_ham) += 1;
    } else {
        (spam ? d.occurrences_spam : d.occurrences_ham) += n;
        (spam ? d.presence_spam : d.presence_ham) += n > 0 ? 1 : -1;
        if (n > 0) d.learned = true;
    }
    if (d.text_bytes == 0 && !text.empty()) {
        d.text_offset = static_cast<std::uint32_t>(texts_.size());
        d.text_bytes = static_cast<std::uint32_t>(text.size());
        texts_.append(text);
    }
}

void TrainingBatch::remove_stored(const Digest& digest, Class c, const std::string& blob) {
    const bool earlier = learned_here_.erase(digest) == 0;
    std::size_t i = 0;
    model::FeatureId id = 0;
    std::uint64_t delta = 0, n = 0;
    while (i < blob.size()) {
        if (!get_varint(blob, i, delta) || !get_varint(blob, i, n)) {
            db_.fail("corrupt feature list of a learned message; refusing to unlearn it");
        }
        id += delta;
        count(c, id, -static_cast<std::int64_t>(n), {}, earlier);
    }
    (c == Class::spam ? messages_spam_ : messages_ham_) -= 1;
    Use s(db_.st_->delete_message);
    sqlite3_bind_blob(*s, 1, digest.data(), static_cast<int>(digest.size()), SQLITE_STATIC);
    if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot delete message: ") + db_.error_text());
}

LearnResult TrainingBatch::learn(const Digest& digest, Class c, const std::vector<TrainTerm>& terms, std::int64_t now) {
    assert(open_ && "learn after commit");
    LearnResult result = LearnResult::learned;
    {
        Use s(db_.st_->find_message);
        sqlite3_bind_blob(*s, 1, digest.data(), static_cast<int>(digest.size()), SQLITE_STATIC);
        const int rc = sqlite3_step(*s);
        if (rc == SQLITE_ROW) {
            const Class stored = sqlite3_column_int(*s, 0) == 1 ? Class::spam : Class::ham;
            if (stored == c) return LearnResult::already_learned;
            std::string blob(static_cast<const char*>(sqlite3_column_blob(*s, 1)),
                             static_cast<std::size_t>(sqlite3_column_bytes(*s, 1)));
            sqlite3_reset(*s);
            remove_stored(digest, stored, blob);
            result = LearnResult::moved;
        } else if (rc != SQLITE_DONE) {
            db_.fail(std::string("cannot look up message: ") + db_.error_text());
        }
    }
    std::vector<std::pair<model::FeatureId, std::uint32_t>> list;
    list.reserve(terms.size());
    for (const auto& t : terms) {
        if (t.count == 0) continue;
        count(c, t.id, t.count, t.text, false);
        list.emplace_back(t.id, t.count);
    }
    (c == Class::spam ? messages_spam_ : messages_ham_) += 1;
    const std::string blob = encode_terms(std::move(list));
    Use s(db_.st_->insert_message);
    sqlite3_bind_blob(*s, 1, digest.data(), static_cast<int>(digest.size()), SQLITE_STATIC);
    sqlite3_bind_int(*s, 2, c == Class::spam ? 1 : 0);
    sqlite3_bind_int64(*s, 3, now);
    sqlite3_bind_blob(*s, 4, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
    if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot record message: ") + db_.error_text());
    learned_here_.insert(digest);
    latest_ = std::max(latest_, now);
    return result;
}

std::optional<Class> TrainingBatch::learned_class(const Digest& digest) {
    assert(open_ && "lookup after commit");
    Use s(db_.st_->find_message);
    sqlite3_bind_blob(*s, 1, digest.data(), static_cast<int>(digest.size()), SQLITE_STATIC);
    const int rc = sqlite3_step(*s);
    if (rc == SQLITE_DONE) return std::nullopt;
    if (rc != SQLITE_ROW) db_.fail(std::string("cannot look up message: ") + db_.error_text());
    return sqlite3_column_int(*s, 0) == 1 ? Class::spam : Class::ham;
}

UnlearnResult TrainingBatch::unlearn(const Digest& digest, Class c) {
    assert(open_ && "unlearn after commit");
    Use s(db_.st_->find_message);
    sqlite3_bind_blob(*s, 1, digest.data(), static_cast<int>(digest.size()), SQLITE_STATIC);
    const int rc = sqlite3_step(*s);
    if (rc == SQLITE_DONE) return UnlearnResult::not_learned;
    if (rc != SQLITE_ROW) db_.fail(std::string("cannot look up message: ") + db_.error_text());
    const Class stored = sqlite3_column_int(*s, 0) == 1 ? Class::spam : Class::ham;
    if (stored != c) return UnlearnResult::learned_as_other_class;
    std::string blob(static_cast<const char*>(sqlite3_column_blob(*s, 1)),
                     static_cast<std::size_t>(sqlite3_column_bytes(*s, 1)));
    sqlite3_reset(*s);
    remove_stored(digest, stored, blob);
    return UnlearnResult::unlearned;
}

void TrainingBatch::add_contact(std::string_view address, std::string_view source, std::int64_t now) {
    db_.add_contact(address, source, now);
}

void TrainingBatch::record_correction(model::Verdict verdict, Class to, std::int64_t now) {
    Use s(db_.st_->insert_correction);
    sqlite3_bind_int64(*s, 1, now);
    sqlite3_bind_int(*s, 2, static_cast<int>(verdict));
    sqlite3_bind_int(*s, 3, to == Class::spam ? 1 : 0);
    if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot record correction: ") + db_.error_text());
}

void TrainingBatch::commit() {
    assert(open_ && "commit twice");
    std::int64_t occ_spam = 0, occ_ham = 0, pres_spam = 0, pres_ham = 0;
    // In the table's key order (ids are stored as signed 64-bit), so the B-tree of
    // features is walked once from left to right rather than at random (ids are hashes).
    std::vector<std::pair<model::FeatureId, const Delta*>> order;
    order.reserve(deltas_.size());
    for (const auto& [id, d] : deltas_) order.emplace_back(id, &d);
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
        return static_cast<std::int64_t>(a.first) < static_cast<std::int64_t>(b.first);
    });
    for (const auto& [id, dp] : order) {
        const Delta& d = *dp;
        // Final changes of the row: what this batch learned, less what it unlearned of earlier messages.
        std::int64_t change[4] = {d.occurrences_spam, d.occurrences_ham, d.presence_spam, d.presence_ham};
        bool remove_row = false, row_exists = false;
        const std::int64_t removed[4] = {d.removed_occurrences_spam, d.removed_occurrences_ham, d.removed_presence_spam,
                                         d.removed_presence_ham};
        if (removed[0] != 0 || removed[1] != 0 || removed[2] != 0 || removed[3] != 0) {
            // Unlearning takes off only what the row still holds: a pruned feature has no row
            // (nothing to take, nothing to re-create), a re-created one may hold less.
            Use s(db_.st_->find_feature);
            sqlite3_bind_int64(*s, 1, static_cast<sqlite3_int64>(id));
            const int rc = sqlite3_step(*s);
            if (rc == SQLITE_ROW) {
                row_exists = true;
                std::int64_t held[4];
                for (int k = 0; k < 4; ++k) {
                    held[k] = std::max<std::int64_t>(0, sqlite3_column_int64(*s, k));
                    change[k] -= std::min(removed[k], held[k]);
                }
                if (held[0] + change[0] <= 0 && held[1] + change[1] <= 0) {
                    // Nothing left of it: the row goes, and the totals lose all it held.
                    remove_row = true;
                    for (int k = 0; k < 4; ++k) change[k] = -sqlite3_column_int64(*s, k);
                }
            } else if (rc != SQLITE_DONE) {
                db_.fail(std::string("cannot look up feature: ") + db_.error_text());
            }
        }
        occ_spam += change[0];
        occ_ham += change[1];
        pres_spam += change[2];
        pres_ham += change[3];
        if (remove_row) {
            Use s(db_.st_->delete_feature);
            sqlite3_bind_int64(*s, 1, static_cast<sqlite3_int64>(id));
            if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot prune feature: ") + db_.error_text());
            continue;
        }
        // Unchanged counts are written only to move last_seen of a row known to exist: learned
        // and unlearned again in this batch, a feature may have no row, and must not get one.
        const bool unchanged = change[0] == 0 && change[1] == 0 && change[2] == 0 && change[3] == 0;
        if (unchanged && !(d.learned && row_exists)) continue;
        Use s(db_.st_->upsert_feature);
        sqlite3_bind_int64(*s, 1, static_cast<sqlite3_int64>(id));
        for (int k = 0; k < 4; ++k) sqlite3_bind_int64(*s, k + 2, change[k]);
        sqlite3_bind_text(*s, 6, texts_.data() + d.text_offset, static_cast<int>(d.text_bytes), SQLITE_STATIC);
        sqlite3_bind_int64(*s, 7, d.learned ? latest_ : 0);
        if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot update feature: ") + db_.error_text());
    }
    const struct {
        int cls;
        std::int64_t messages, occ, pres;
    } totals[] = {{1, messages_spam_, occ_spam, pres_spam}, {0, messages_ham_, occ_ham, pres_ham}};
    for (const auto& t : totals) {
        Use s(db_.st_->update_class);
        sqlite3_bind_int(*s, 1, t.cls);
        sqlite3_bind_int64(*s, 2, t.messages);
        sqlite3_bind_int64(*s, 3, t.occ);
        sqlite3_bind_int64(*s, 4, t.pres);
        if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot update totals: ") + db_.error_text());
    }
    db_.exec("COMMIT");
    open_ = false;
}

}  // namespace mailsift::store
