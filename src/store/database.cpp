// SQLite storage for mailsift. Every statement is prepared once per connection;
// training sums count changes in memory and writes each feature once per batch.
#include "mailsift/store/database.hpp"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cassert>
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
    std::sort(terms.begin(), terms.end());
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
                         "INSERT INTO features (id, spam_occurrences, ham_occurrences, spam_presences, ham_presences, text)"
                         " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (id) DO UPDATE SET"
                         " spam_occurrences = spam_occurrences + excluded.spam_occurrences,"
                         " ham_occurrences = ham_occurrences + excluded.ham_occurrences,"
                         " spam_presences = spam_presences + excluded.spam_presences,"
                         " ham_presences = ham_presences + excluded.ham_presences",
                         p),
          delete_empty_feature(db,
                               "DELETE FROM features WHERE id = ?1 AND spam_occurrences <= 0 AND ham_occurrences <= 0",
                               p),
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

    Statement find_message, insert_message, delete_message, upsert_feature, delete_empty_feature, update_class,
        insert_contact, delete_contact, feature_text, data_version, find_signature, upsert_signature,
        insert_correction, add_counter;
};

// ---- Database ----

Database::Database(std::filesystem::path path, Mode mode, std::chrono::milliseconds busy_timeout)
    : path_(std::move(path)), mode_(mode) {
    std::error_code ec;
    const bool exists = std::filesystem::exists(path_, ec);
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
    const int flags = mode_ == Mode::read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    // The database is created 0640 (umask 027) so other local users cannot read what was learned.
    const mode_t old_mask = exists ? 0 : ::umask(027);
    const int rc = sqlite3_open_v2(path_.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
    if (!exists) ::umask(old_mask);
    if (rc != SQLITE_OK) {
        const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
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
            exec("PRAGMA journal_mode = WAL");
            exec("PRAGMA synchronous = NORMAL");
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

void Database::exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = err ? err : sqlite3_errmsg(db_);
        sqlite3_free(err);
        if (msg == "file is not a database") msg = "not a mailsift database (file is not an SQLite database)";
        fail(msg);
    }
}

int Database::user_version() {
    int version = 0;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, "PRAGMA user_version", -1, &s, nullptr) != SQLITE_OK) {
        fail(std::string("cannot read schema version: ") + sqlite3_errmsg(db_));
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
    if (sqlite3_step(*s) != SQLITE_ROW) fail(std::string("cannot read data_version: ") + sqlite3_errmsg(db_));
    return static_cast<std::uint64_t>(sqlite3_column_int64(*s, 0));
}

model::Counts Database::load_counts(model::TermFrequency tf) {
    const bool boolean = tf == model::TermFrequency::boolean;
    model::Counts counts;
    exec("BEGIN");  // one consistent read of classes and features
    try {
        {
            Statement q(db_, "SELECT class, messages, occurrences, presences FROM classes", path_);
            while (sqlite3_step(q.get()) == SQLITE_ROW) {
                const bool spam = sqlite3_column_int(q.get(), 0) == 1;
                const auto messages = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 1));
                const auto total = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), boolean ? 3 : 2));
                (spam ? counts.messages.spam : counts.messages.ham) = messages;
                (spam ? counts.feature_totals.spam : counts.feature_totals.ham) = total;
            }
        }
        Statement q(db_,
                    boolean ? "SELECT id, spam_presences, ham_presences FROM features"
                            : "SELECT id, spam_occurrences, ham_occurrences FROM features",
                    path_);
        int rc;
        while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
            const auto id = static_cast<model::FeatureId>(sqlite3_column_int64(q.get(), 0));
            counts.features.emplace(id, model::ClassCounts{static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 1)),
                                                           static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 2))});
        }
        if (rc != SQLITE_DONE) fail(std::string("cannot read features: ") + sqlite3_errmsg(db_));
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return counts;
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
    if (rc != SQLITE_ROW) fail(std::string("cannot look up signature: ") + sqlite3_errmsg(db_));
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
            if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot record signature: ") + sqlite3_errmsg(db_));
        }
        for (const auto& c : r.contacts) add_contact(c.address, c.source, c.added_at);
        for (const auto& [name, n] : r.counter_increments) {
            Use s(st_->add_counter);
            sqlite3_bind_text(*s, 1, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
            sqlite3_bind_int64(*s, 2, n);
            if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot update counter: ") + sqlite3_errmsg(db_));
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
    if (sqlite3_step(q.get()) != SQLITE_DONE) fail(std::string("cannot prune signatures: ") + sqlite3_errmsg(db_));
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
    if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot add contact: ") + sqlite3_errmsg(db_));
    return sqlite3_changes(db_) > 0;
}

bool Database::remove_contact(std::string_view address) {
    Use s(st_->delete_contact);
    sqlite3_bind_text(*s, 1, address.data(), static_cast<int>(address.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot remove contact: ") + sqlite3_errmsg(db_));
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

// ---- TrainingBatch ----

TrainingBatch::TrainingBatch(Database& db) : db_(db) {
    if (db_.mode() != Database::Mode::read_write) db_.fail("database was opened read-only");
    db_.exec("BEGIN IMMEDIATE");
    open_ = true;
    deltas_.reserve(1 << 16);  // a batch of corpus mail touches tens of thousands of features
}

TrainingBatch::~TrainingBatch() {
    if (open_) sqlite3_exec(db_.db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void TrainingBatch::count(Class c, model::FeatureId id, std::int64_t n, std::string_view text) {
    Delta& d = deltas_[id];
    const std::int64_t presence = n > 0 ? 1 : -1;
    if (c == Class::spam) {
        d.occurrences_spam += n;
        d.presence_spam += presence;
    } else {
        d.occurrences_ham += n;
        d.presence_ham += presence;
    }
    if (d.text_bytes == 0 && !text.empty()) {
        d.text_offset = static_cast<std::uint32_t>(texts_.size());
        d.text_bytes = static_cast<std::uint32_t>(text.size());
        texts_.append(text);
    }
}

void TrainingBatch::remove_stored(const Digest& digest, Class c, const std::string& blob) {
    std::size_t i = 0;
    model::FeatureId id = 0;
    std::uint64_t delta = 0, n = 0;
    while (i < blob.size()) {
        if (!get_varint(blob, i, delta) || !get_varint(blob, i, n)) {
            db_.fail("corrupt feature list of a learned message; refusing to unlearn it");
        }
        id += delta;
        count(c, id, -static_cast<std::int64_t>(n), {});
    }
    (c == Class::spam ? messages_spam_ : messages_ham_) -= 1;
    Use s(db_.st_->delete_message);
    sqlite3_bind_blob(*s, 1, digest.data(), static_cast<int>(digest.size()), SQLITE_STATIC);
    if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot delete message: ") + sqlite3_errmsg(db_.db_));
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
            db_.fail(std::string("cannot look up message: ") + sqlite3_errmsg(db_.db_));
        }
    }
    std::vector<std::pair<model::FeatureId, std::uint32_t>> list;
    list.reserve(terms.size());
    for (const auto& t : terms) {
        if (t.count == 0) continue;
        count(c, t.id, t.count, t.text);
        list.emplace_back(t.id, t.count);
    }
    (c == Class::spam ? messages_spam_ : messages_ham_) += 1;
    const std::string blob = encode_terms(std::move(list));
    Use s(db_.st_->insert_message);
    sqlite3_bind_blob(*s, 1, digest.data(), static_cast<int>(digest.size()), SQLITE_STATIC);
    sqlite3_bind_int(*s, 2, c == Class::spam ? 1 : 0);
    sqlite3_bind_int64(*s, 3, now);
    sqlite3_bind_blob(*s, 4, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
    if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot record message: ") + sqlite3_errmsg(db_.db_));
    return result;
}

UnlearnResult TrainingBatch::unlearn(const Digest& digest, Class c) {
    assert(open_ && "unlearn after commit");
    Use s(db_.st_->find_message);
    sqlite3_bind_blob(*s, 1, digest.data(), static_cast<int>(digest.size()), SQLITE_STATIC);
    const int rc = sqlite3_step(*s);
    if (rc == SQLITE_DONE) return UnlearnResult::not_learned;
    if (rc != SQLITE_ROW) db_.fail(std::string("cannot look up message: ") + sqlite3_errmsg(db_.db_));
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
    if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot record correction: ") + sqlite3_errmsg(db_.db_));
}

void TrainingBatch::commit() {
    assert(open_ && "commit twice");
    sqlite3* db = db_.db_;
    std::int64_t occ_spam = 0, occ_ham = 0, pres_spam = 0, pres_ham = 0;
    for (const auto& [id, d] : deltas_) {
        occ_spam += d.occurrences_spam;
        occ_ham += d.occurrences_ham;
        pres_spam += d.presence_spam;
        pres_ham += d.presence_ham;
        if (d.occurrences_spam == 0 && d.occurrences_ham == 0 && d.presence_spam == 0 && d.presence_ham == 0) continue;
        {
            Use s(db_.st_->upsert_feature);
            sqlite3_bind_int64(*s, 1, static_cast<sqlite3_int64>(id));
            sqlite3_bind_int64(*s, 2, d.occurrences_spam);
            sqlite3_bind_int64(*s, 3, d.occurrences_ham);
            sqlite3_bind_int64(*s, 4, d.presence_spam);
            sqlite3_bind_int64(*s, 5, d.presence_ham);
            sqlite3_bind_text(*s, 6, texts_.data() + d.text_offset, static_cast<int>(d.text_bytes), SQLITE_STATIC);
            if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot update feature: ") + sqlite3_errmsg(db));
        }
        if (d.occurrences_spam < 0 || d.occurrences_ham < 0) {
            Use s(db_.st_->delete_empty_feature);
            sqlite3_bind_int64(*s, 1, static_cast<sqlite3_int64>(id));
            if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot prune feature: ") + sqlite3_errmsg(db));
        }
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
        if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot update totals: ") + sqlite3_errmsg(db));
    }
    db_.exec("COMMIT");
    open_ = false;
}

}  // namespace mailsift::store
