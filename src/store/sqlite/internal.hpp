// Shared by the SQLite backend's source files, not part of its interface:
// prepared statements, the one set of them every connection keeps.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../codec.hpp"
#include "mailsift/store/sqlite_database.hpp"
#include "mailsift/store/training_batch.hpp"

namespace mailsift::store {

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

// A statement of SqliteDatabase::Statements: prepared at its first use, so
// that a command using three of them (a classify of one message) does not
// prepare two dozen. `sql` is a string literal.
class LazyStatement {
public:
    LazyStatement(sqlite3* db, const char* sql, const std::filesystem::path& path) : db_(db), sql_(sql), path_(path) {}
    ~LazyStatement() { sqlite3_finalize(stmt_); }
    LazyStatement(const LazyStatement&) = delete;
    LazyStatement& operator=(const LazyStatement&) = delete;
    sqlite3_stmt* get() {
        if (stmt_ == nullptr && sqlite3_prepare_v3(db_, sql_, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK) {
            throw Error(path_, std::string("cannot prepare statement: ") + sqlite3_errmsg(db_));
        }
        return stmt_;
    }

private:
    sqlite3* db_;
    const char* sql_;
    const std::filesystem::path& path_;  // the database's own, which outlives its statements
    sqlite3_stmt* stmt_ = nullptr;
};

// Resets a statement whatever way the scope is left.
class Use {
public:
    explicit Use(Statement& s) : s_(s.get()) {}
    explicit Use(LazyStatement& s) : s_(s.get()) {}
    ~Use() {
        sqlite3_reset(s_);
        sqlite3_clear_bindings(s_);
    }
    sqlite3_stmt* operator*() const { return s_; }

private:
    sqlite3_stmt* s_;
};

struct SqliteDatabase::Statements {
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
          find_signature(db, "SELECT scanned_at, verdict, dictionary, features FROM signatures WHERE id = ?1", p),
          upsert_signature(db,
                           "INSERT INTO signatures (id, scanned_at, verdict, dictionary, features)"
                           " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (id) DO UPDATE SET scanned_at = excluded.scanned_at,"
                           " verdict = excluded.verdict, dictionary = excluded.dictionary, features = excluded.features",
                           p),
          insert_correction(db,
                            "INSERT INTO corrections (at, verdict, corrected_to, signature, by_whom, undo, layer_user,"
                            " layer_sender) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                            p),
          model_sequence(db, "SELECT coalesce(max(seq), 0) FROM model_changes", p),
          insert_model_change(db,
                              "INSERT INTO model_changes (seq, committed_at, features)"
                              " VALUES ((SELECT coalesce(max(seq), 0) + 1 FROM model_changes), ?1, ?2)",
                              p),
          trim_model_changes(db,
                             "DELETE FROM model_changes WHERE committed_at < ?1"
                             " AND seq < (SELECT max(seq) FROM model_changes)",
                             p),
          add_counter(db,
                      "INSERT INTO counters (name, value) VALUES (?1, ?2)"
                      " ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
                      p),
          keep_linear_sample(db,
                             "INSERT INTO linear_samples (class, position, digest, prefix) VALUES (?1, ?2, ?3, ?4)"
                             " ON CONFLICT (class, position) DO UPDATE SET digest = excluded.digest,"
                             " prefix = excluded.prefix",
                             p),
          find_uncounted(db, "SELECT class FROM linear_messages WHERE digest = ?1", p),
          put_uncounted(db,
                        "INSERT INTO linear_messages (digest, class) VALUES (?1, ?2)"
                        " ON CONFLICT (digest) DO UPDATE SET class = excluded.class",
                        p),
          delete_uncounted(db, "DELETE FROM linear_messages WHERE digest = ?1", p),
          find_linear_sample(db,
                             "SELECT s.class, s.prefix, m.features FROM linear_samples s JOIN messages m"
                             " ON m.digest = s.digest AND m.class = s.class WHERE s.class = ?1 AND s.position = ?2",
                             p) {}

    LazyStatement find_message, insert_message, delete_message, upsert_feature, find_feature, delete_feature, update_class,
        insert_contact, delete_contact, feature_text, data_version, find_signature, upsert_signature,
        insert_correction, model_sequence, insert_model_change, trim_model_changes, add_counter, keep_linear_sample,
        find_uncounted, put_uncounted, delete_uncounted, find_linear_sample;
};


// The scan dictionaries a connection has loaded, by id.
struct SqliteDatabase::ScanDictionaries {
    std::map<std::int64_t, ScanDictionary> loaded;
    std::optional<std::int64_t> training_failed_at;  // then no new try for a day: the scans were too alike
};

// The write transaction of a TrainingBatch on SQLite (BEGIN IMMEDIATE: one
// writer at a time, so nothing read here changes before the commit).
class SqliteTransaction final : public WriteTransaction {
public:
    explicit SqliteTransaction(SqliteDatabase& db);
    ~SqliteTransaction() override;

    std::optional<StoredMessage> find_message(const Digest& digest) override;
    void insert_message(const Digest& digest, Class c, std::int64_t learned_at, std::string_view features) override;
    void delete_message(const Digest& digest) override;
    std::vector<std::optional<Row>> read_features(const std::vector<model::FeatureId>& ids) override;
    void write_features(const std::vector<FeatureWrite>& upserts, const std::vector<model::FeatureId>& deletes) override;
    void add_to_classes(const ClassChange& spam, const ClassChange& ham) override;
    void add_linear(const LinearChange& change) override;
    std::optional<Class> find_uncounted(const Digest& digest) override;
    void put_uncounted(const Digest& digest, Class c, std::optional<Class> was) override;
    void delete_uncounted(const Digest& digest) override;
    void keep_linear_sample(Class c, std::uint64_t position, const Digest& digest, std::string_view blob) override;
    void keep_model_settings(std::string_view text) override;
    std::optional<LinearSample> linear_sample(Class c, std::uint64_t position) override;
    void log_model_change(const std::vector<model::FeatureId>* ids) override { db_.log_model_change(ids); }
    bool add_contact(std::string_view address, std::string_view source, std::int64_t now) override {
        return db_.add_contact(address, source, now);
    }
    bool remove_contact(std::string_view address) override {
        return db_.remove_contact(address);
    }
    void record_correction(const Correction& c) override;
    std::optional<CorrectionRecord> latest_correction(const Digest& signature) override;
    void mark_undone(std::int64_t correction_id, std::int64_t at, std::string_view by) override;
    std::vector<CorrectionRecord> standing_layer_corrections(std::string_view user) override;
    std::vector<CorrectionRecord> standing_sender_corrections(std::string_view sender) override;
    void set_correction_undo(std::int64_t correction_id, const CorrectionUndo& undo) override;
    void defer_correction(const Digest& signature, Class to, std::int64_t now, std::string_view by) override;
    std::optional<DeferredCorrection> drop_deferred_correction(const Digest& signature) override;
    std::vector<ReadyCorrection> take_ready_corrections(std::size_t limit) override;
    void commit() override;
    [[noreturn]] void fail(const std::string& what) const override { db_.fail(what); }

private:
    SqliteDatabase& db_;
    bool open_ = false;
};

// Stores a trained dictionary; returns its id.
std::int64_t insert_scan_dictionary(sqlite3* db, const std::filesystem::path& path, std::int64_t created_at,
                                    std::int64_t last_used, const std::string& bytes);

// Migration 3 -> 4: copies every scan of `signatures` (text lines) into
// `signatures_compact` in the compact form, with a dictionary trained on the
// newest of them, in the caller's transaction.
void recode_text_scans(sqlite3* db, const std::filesystem::path& path);

// Writes the last refit's own change (RefitLayer), in place of the one kept,
// in the caller's transaction: a refit's (SqliteTransaction::add_linear) and an
// import's.
void put_refit_layer(sqlite3* db, const std::filesystem::path& path, const RefitLayer& layer);

inline void bind_digest(sqlite3_stmt* s, int index, const Digest& d) {
    sqlite3_bind_blob(s, index, d.data(), static_cast<int>(d.size()), SQLITE_STATIC);
}

}  // namespace mailsift::store
