// Shared by the store tests: tiny digests and term lists written inline, a
// raw SQLite connection, the model's consistency, and its export as a string.
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../support/backends.hpp"
#include "mailsift/store/database.hpp"

namespace mailsift::testing {

// What a reader holding `table` does with linear_weights_since(): the pages
// read replace theirs, then the slot deltas are added in order.
inline void read_linear(std::vector<float>& table, const store::LinearWeights& w) {
    for (const auto& [number, page] : w.pages) {
        std::copy(page.begin(), page.end(), table.begin() + static_cast<std::ptrdiff_t>(number * store::linear_page_slots));
    }
    for (const auto& d : w.deltas) table[d.slot] += d.delta;
}

// The weights linear_weights_since(0) gives, whole.
inline std::vector<float> linear_table(const store::LinearWeights& w) {
    std::vector<float> table(w.hash_bits == 0 ? 0 : std::size_t{1} << w.hash_bits, 0.0f);
    read_linear(table, w);
    return table;
}

// A digest that differs from others only in its first byte.
inline store::Digest digest(std::uint8_t n) {
    store::Digest d{};
    d[0] = n;
    return d;
}

// Terms (id, count), each with the text "f".
inline std::vector<store::TrainTerm> terms(std::initializer_list<std::pair<model::FeatureId, std::uint32_t>> list) {
    std::vector<store::TrainTerm> out;
    for (auto [id, n] : list) out.push_back({id, n, "f"});
    return out;
}

// A raw connection for looking under the store's API.
class Raw {
public:
    explicit Raw(const std::filesystem::path& p) { REQUIRE(sqlite3_open(p.c_str(), &db_) == SQLITE_OK); }
    ~Raw() { sqlite3_close(db_); }
    void exec(const std::string& sql) {
        char* err = nullptr;
        const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
        INFO(sql << ": " << (err ? err : ""));
        sqlite3_free(err);
        REQUIRE(rc == SQLITE_OK);
    }
    // The first column of the first row, or nullopt when there is no row.
    std::optional<std::int64_t> value(const std::string& sql) {
        sqlite3_stmt* s = nullptr;
        REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) == SQLITE_OK);
        std::optional<std::int64_t> v;
        if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        return v;
    }

private:
    sqlite3* db_ = nullptr;
};

// The store's promise: class totals equal the sums of the feature rows, in both
// kinds of count, and no count is negative.
template <class R>
void require_consistent_in(R& raw) {
    for (const char* cls : {"spam", "ham"}) {
        const std::string c = std::string(cls) == "spam" ? "1" : "0";
        INFO(cls);
        REQUIRE(raw.value("SELECT occurrences FROM classes WHERE class = " + c) ==
                raw.value(std::string("SELECT coalesce(sum(") + cls + "_occurrences), 0) FROM features"));
        REQUIRE(raw.value("SELECT presences FROM classes WHERE class = " + c) ==
                raw.value(std::string("SELECT coalesce(sum(") + cls + "_presences), 0) FROM features"));
        REQUIRE(raw.value("SELECT messages FROM classes WHERE class = " + c) ==
                raw.value("SELECT count(*) FROM messages WHERE class = " + c));
    }
    REQUIRE(raw.value("SELECT count(*) FROM features WHERE spam_occurrences < 0 OR ham_occurrences < 0"
                      " OR spam_presences < 0 OR ham_presences < 0 OR spam_occurrences + ham_occurrences = 0") == 0);
    REQUIRE(raw.value("SELECT count(*) FROM classes WHERE messages < 0 OR occurrences < 0 OR presences < 0") == 0);
}
inline void require_consistent(const TestStore& s) { require_consistent_in(s); }
inline void require_consistent(const std::filesystem::path& p) {
    Raw raw(p);
    require_consistent_in(raw);
}

// The model's export (Database::export_model), as a string.
inline std::string export_of(store::Database& db) {
    std::ostringstream out;
    db.export_model(out);
    return out.str();
}

// SQL that turns a new, empty database's scan tables into schema 3's (scans as
// text lines, no dictionaries, no deferred corrections, no model change log), for the tests of
// upgrades from older schemas.
inline const char* const scans_as_schema_3 =
    "DROP TABLE history;"
    "DROP TABLE linear_messages;"
    "DROP TABLE linear_samples;"
    "DROP TABLE linear_pages;"
    "DROP TABLE linear_state;"
    "DROP TABLE model_changes;"
    "DROP TABLE deferred_corrections;"
    "DROP TABLE scan_dictionaries;"
    "DROP TABLE signatures;"
    "CREATE TABLE signatures (id BLOB NOT NULL UNIQUE, scanned_at INTEGER NOT NULL,"
    " verdict INTEGER NOT NULL CHECK (verdict IN (0, 1, 2)), features TEXT NOT NULL);"
    "CREATE INDEX signatures_scanned_at ON signatures (scanned_at);";

}  // namespace mailsift::testing
