// Shared by the store's source files, not part of its interface: prepared
// statements, the one set of them every connection keeps, and the coding of a
// learned message's feature list.
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

#include "mailsift/store/database.hpp"

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
          find_signature(db, "SELECT scanned_at, verdict, dictionary, features FROM signatures WHERE id = ?1", p),
          upsert_signature(db,
                           "INSERT INTO signatures (id, scanned_at, verdict, dictionary, features)"
                           " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (id) DO UPDATE SET scanned_at = excluded.scanned_at,"
                           " verdict = excluded.verdict, dictionary = excluded.dictionary, features = excluded.features",
                           p),
          insert_correction(db, "INSERT INTO corrections (at, verdict, corrected_to) VALUES (?1, ?2, ?3)", p),
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
                      p) {}

    Statement find_message, insert_message, delete_message, upsert_feature, find_feature, delete_feature, update_class,
        insert_contact, delete_contact, feature_text, data_version, find_signature, upsert_signature,
        insert_correction, model_sequence, insert_model_change, trim_model_changes, add_counter;
};


// ---- varint coding of a message's feature list: ids ascending, as deltas ----

void put_varint(std::string& out, std::uint64_t v);
bool get_varint(std::string_view in, std::size_t& i, std::uint64_t& v);
std::string encode_terms(std::vector<std::pair<model::FeatureId, std::uint32_t>> terms);

// ---- the compact form of a recorded scan (scan_codec.cpp) ----

// A zstd dictionary of this database's scans (table scan_dictionaries), ready to use.
class ScanDictionary {
public:
    ScanDictionary(std::int64_t id, std::string_view bytes);
    std::int64_t id() const { return id_; }

private:
    friend class ScanEncoder;
    friend std::optional<std::string> decompress_scan(std::string_view, const ScanDictionary*);
    struct Compiled;
    std::int64_t id_;
    std::shared_ptr<Compiled> compiled_;
};

// Fewer scans than this teach a dictionary too little; scans go without one until then.
inline constexpr std::size_t min_dictionary_samples = 200;
// A dictionary is trained on at most this many of the newest scans...
inline constexpr int dictionary_samples = 2000;
// ...and replaced by a new one after this long, as the site's mail changes.
inline constexpr std::int64_t dictionary_seconds = 7 * 86400;

// "feature<TAB>count" lines <-> the grouped text that is compressed.
std::string group_scan_lines(std::string_view lines);
std::string ungroup_scan_lines(std::string_view grouped);
// A dictionary from grouped scans; nullopt when they are too few or too alike to make one.
std::optional<std::string> train_scan_dictionary(const std::vector<std::string>& grouped_samples);
// Compresses scans one after another into their stored form, with one zstd
// context for all of them (a context's tables are costly to set up).
class ScanEncoder {
public:
    explicit ScanEncoder(const ScanDictionary* dictionary);
    ~ScanEncoder();
    ScanEncoder(const ScanEncoder&) = delete;
    ScanEncoder& operator=(const ScanEncoder&) = delete;
    // The lines in, the stored blob out (lines without a tab are dropped).
    std::string encode(std::string_view lines);

private:
    struct Context;
    std::unique_ptr<Context> context_;
};

// The grouped text of a stored blob; nullopt when it is not one a ScanEncoder
// wrote with this dictionary.
std::optional<std::string> decompress_scan(std::string_view blob, const ScanDictionary* dictionary);

// The scan dictionaries a connection has loaded, by id.
struct Database::ScanDictionaries {
    std::map<std::int64_t, ScanDictionary> loaded;
    std::optional<std::int64_t> training_failed_at;  // then no new try for a day: the scans were too alike
};

// Stores a trained dictionary; returns its id.
std::int64_t insert_scan_dictionary(sqlite3* db, const std::filesystem::path& path, std::int64_t created_at,
                                    std::int64_t last_used, const std::string& bytes);

// Migration 3 -> 4: copies every scan of `signatures` (text lines) into
// `signatures_compact` in the compact form, with a dictionary trained on the
// newest of them, in the caller's transaction.
void recode_text_scans(sqlite3* db, const std::filesystem::path& path);

inline void bind_digest(sqlite3_stmt* s, int index, const Digest& d) {
    sqlite3_bind_blob(s, index, d.data(), static_cast<int>(d.size()), SQLITE_STATIC);
}

}  // namespace mailsift::store
