// What mailsiftd's recorder writes and correct reads: scans under their
// signature, the history, and the daemon's counters (corrections are in
// corrections.cpp).
#include "internal.hpp"
#include "../history_sql.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <map>
#include <variant>

namespace mailsift::store {

namespace {


// A statement's parameters as its text is built: add() gives the next ?N.
class Binds {
public:
    using Value = HistoryDialect::Value;
    std::string add(Value v) {
        values_.push_back(std::move(v));
        return "?" + std::to_string(values_.size());
    }
    void bind(sqlite3_stmt* s) const {
        for (std::size_t i = 0; i < values_.size(); ++i) {
            const int n = static_cast<int>(i + 1);
            if (const auto* v = std::get_if<std::int64_t>(&values_[i])) {
                sqlite3_bind_int64(s, n, *v);
            } else if (const auto* d = std::get_if<double>(&values_[i])) {
                sqlite3_bind_double(s, n, *d);
            } else if (const auto* t = std::get_if<std::string>(&values_[i])) {
                sqlite3_bind_text(s, n, t->data(), static_cast<int>(t->size()), SQLITE_STATIC);
            } else {
                bind_digest(s, n, std::get<Digest>(values_[i]));
            }
        }
    }

private:
    std::vector<Value> values_;
};

// The SQL of a history query with `b`'s parameters, and LIKE (ASCII case ignored).
HistoryDialect dialect(Binds& b) {
    return {[&b](HistoryDialect::Value v) { return b.add(std::move(v)); },
            [](const char* column, const std::string& p) { return std::string(column) + " LIKE " + p + " ESCAPE '\\'"; },
            "+"};
}

}  // namespace

std::optional<Scan> SqliteDatabase::find_scan(const Digest& id) {
    Use s(st_->find_signature);
    bind_digest(*s, 1, id);
    const int rc = sqlite3_step(*s);
    if (rc == SQLITE_DONE) return std::nullopt;
    if (rc != SQLITE_ROW) fail(std::string("cannot look up signature: ") + error_text());
    Scan scan;
    scan.id = id;
    scan.scanned_at = sqlite3_column_int64(*s, 0);
    scan.verdict = static_cast<model::Verdict>(sqlite3_column_int(*s, 1));
    const std::string_view stored(static_cast<const char*>(sqlite3_column_blob(*s, 3)),
                                  static_cast<std::size_t>(sqlite3_column_bytes(*s, 3)));
    std::optional<std::string> lines;
    if (sqlite3_column_type(*s, 3) == SQLITE_TEXT) {
        lines.emplace(stored);  // the lines themselves: schema 3's form, which a tool may still write
    } else if (auto grouped = stored_scan(*s, 2, 3)) {
        lines = ungroup_scan_lines(*grouped);
    }
    if (!lines) fail("the recorded scan of this signature is damaged (not in any form this mailsift writes)");
    scan.features = std::move(*lines);
    return scan;
}

const ScanDictionary* SqliteDatabase::dictionary(std::int64_t id) {
    if (auto it = dictionaries_->loaded.find(id); it != dictionaries_->loaded.end()) return &it->second;
    Statement q(db_, "SELECT bytes FROM scan_dictionaries WHERE id = ?1", path_);
    sqlite3_bind_int64(q.get(), 1, id);
    if (sqlite3_step(q.get()) != SQLITE_ROW) return nullptr;
    const std::string_view bytes(static_cast<const char*>(sqlite3_column_blob(q.get(), 0)),
                                 static_cast<std::size_t>(sqlite3_column_bytes(q.get(), 0)));
    return &dictionaries_->loaded.emplace(id, ScanDictionary(id, bytes)).first->second;
}

std::optional<std::string> SqliteDatabase::stored_scan(sqlite3_stmt* row, int dictionary_column, int features_column) {
    const std::string_view stored(static_cast<const char*>(sqlite3_column_blob(row, features_column)),
                                  static_cast<std::size_t>(sqlite3_column_bytes(row, features_column)));
    if (sqlite3_column_type(row, features_column) == SQLITE_TEXT) return group_scan_lines(stored);
    if (sqlite3_column_type(row, dictionary_column) == SQLITE_NULL) return decompress_scan(stored, nullptr);
    const ScanDictionary* d = dictionary(sqlite3_column_int64(row, dictionary_column));
    return d ? decompress_scan(stored, d) : std::nullopt;
}

const ScanDictionary* SqliteDatabase::dictionary_for_new_scans(const Recording& r, std::int64_t now) {
    std::optional<std::int64_t> newest;
    std::int64_t created_at = 0;
    {
        Statement q(db_, "SELECT id, created_at FROM scan_dictionaries ORDER BY id DESC LIMIT 1", path_);
        if (sqlite3_step(q.get()) == SQLITE_ROW) {
            newest = sqlite3_column_int64(q.get(), 0);
            created_at = sqlite3_column_int64(q.get(), 1);
        }
    }
    const ScanDictionary* current = newest ? dictionary(*newest) : nullptr;
    if (newest && now - created_at < dictionary_seconds) return current;
    if (dictionaries_->training_failed_at && now - *dictionaries_->training_failed_at < 86400) return current;
    // Due: have enough scans been recorded since the last one to learn a new one from?
    std::size_t since = r.scans.size();
    {
        Statement q(db_, "SELECT count(*) FROM signatures WHERE scanned_at >= ?1", path_);
        sqlite3_bind_int64(q.get(), 1, created_at);
        if (sqlite3_step(q.get()) == SQLITE_ROW) since += static_cast<std::size_t>(sqlite3_column_int64(q.get(), 0));
    }
    if (since < min_dictionary_samples) return current;
    std::vector<std::string> samples;
    {
        Statement q(db_, "SELECT dictionary, features FROM signatures ORDER BY rowid DESC LIMIT ?1", path_);
        sqlite3_bind_int(q.get(), 1, dictionary_samples);
        while (sqlite3_step(q.get()) == SQLITE_ROW) {
            if (auto grouped = stored_scan(q.get(), 0, 1)) samples.push_back(std::move(*grouped));
        }
    }
    for (const auto& scan : r.scans) samples.push_back(group_scan_lines(scan.features));
    const auto bytes = train_scan_dictionary(samples);
    if (!bytes) {
        dictionaries_->training_failed_at = now;
        return current;
    }
    exec("BEGIN IMMEDIATE");
    std::int64_t id = 0;
    try {
        id = insert_scan_dictionary(db_, path_, now, 0, *bytes);
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return &dictionaries_->loaded.emplace(id, ScanDictionary(id, *bytes)).first->second;
}

void SqliteDatabase::drop_unused_dictionaries() {
    // A scan is never newer than the last use of its dictionary, so a dictionary
    // last used before the oldest scan kept serves none. The newest one stays.
    exec("DELETE FROM scan_dictionaries WHERE id < (SELECT max(id) FROM scan_dictionaries)"
         " AND last_used < coalesce((SELECT min(scanned_at) FROM signatures), 9223372036854775807)");
    dictionaries_->loaded.clear();  // loaded again as scans need them
}

ScanPacker SqliteDatabase::scan_packer(std::int64_t now) {
    if (mode_ != Mode::read_write) {
        Statement q(db_, "SELECT max(id) FROM scan_dictionaries", path_);
        if (sqlite3_step(q.get()) != SQLITE_ROW || sqlite3_column_type(q.get(), 0) == SQLITE_NULL) return ScanPacker();
        const ScanDictionary* d = dictionary(sqlite3_column_int64(q.get(), 0));
        return d ? ScanPacker(std::make_shared<const ScanDictionary>(*d)) : ScanPacker();
    }
    const ScanDictionary* d = dictionary_for_new_scans(Recording{}, now);
    return d ? ScanPacker(std::make_shared<const ScanDictionary>(*d)) : ScanPacker();
}

void SqliteDatabase::record(const Recording& r) {
    if (mode_ != Mode::read_write) fail("database was opened read-only");
    const ScanRows rows = scan_rows(
        r, [this](const Recording& rec, std::int64_t at) { return dictionary_for_new_scans(rec, at); },
        [this](const ScanDictionary& dictionary) {
            Statement q(db_, "SELECT bytes FROM scan_dictionaries WHERE id = ?1", path_);
            sqlite3_bind_int64(q.get(), 1, dictionary.id());
            return sqlite3_step(q.get()) == SQLITE_ROW &&
                   dictionary.same_bytes({static_cast<const char*>(sqlite3_column_blob(q.get(), 0)),
                                          static_cast<std::size_t>(sqlite3_column_bytes(q.get(), 0))});
        },
        [this](const std::string& what) { fail(what); });
    // Compressed before the write lock is taken, as the scans are.
    std::vector<std::string> explanations;
    explanations.reserve(r.history.size());
    for (const auto& e : r.history) explanations.push_back(pack_explanation(e.explanation));
    exec("BEGIN IMMEDIATE");
    try {
        for (const ScanRow& row : rows.rows) {
            Use s(st_->upsert_signature);
            bind_digest(*s, 1, *row.id);
            sqlite3_bind_int64(*s, 2, row.scanned_at);
            sqlite3_bind_int(*s, 3, static_cast<int>(row.verdict));
            if (row.dictionary != 0) sqlite3_bind_int64(*s, 4, row.dictionary);
            sqlite3_bind_blob(*s, 5, row.blob.data(), static_cast<int>(row.blob.size()), SQLITE_STATIC);
            if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot record signature: ") + error_text());
        }
        for (const auto& [id, when] : rows.last_use) {
            Statement q(db_, "UPDATE scan_dictionaries SET last_used = max(last_used, ?2) WHERE id = ?1", path_);
            sqlite3_bind_int64(q.get(), 1, id);
            sqlite3_bind_int64(q.get(), 2, when);
            if (sqlite3_step(q.get()) != SQLITE_DONE) fail(std::string("cannot record signature: ") + error_text());
        }
        for (const auto& c : r.contacts) add_contact(c.address, c.source, c.added_at);
        if (!r.delivered.empty()) {
            Statement u(db_,
                        "INSERT INTO delivered_users (name, last_at) VALUES (?1, ?2) ON CONFLICT (name)"
                        " DO UPDATE SET last_at = max(last_at, excluded.last_at)",
                        path_);
            for (const auto& [name, at] : r.delivered) {
                sqlite3_reset(u.get());
                sqlite3_bind_text(u.get(), 1, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
                sqlite3_bind_int64(u.get(), 2, at);
                if (sqlite3_step(u.get()) != SQLITE_DONE) fail(std::string("cannot record a user delivered to: ") + error_text());
            }
        }
        if (!r.history.empty()) {
            Statement h(db_,
                        // A new line each time, numbered by SQLite (the rowid): never one replaced.
                        "INSERT INTO history (signature, scanned_at, verdict, probability, action, reason, sender,"
                        " recipients, from_header, to_header, subject, message_id, queue_id, client_address, helo,"
                        " size, explanation)"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
                        path_);
            for (std::size_t n = 0; n < r.history.size(); ++n) {
                const HistoryEntry& e = r.history[n];
                sqlite3_reset(h.get());
                sqlite3_clear_bindings(h.get());
                if (e.signature) bind_digest(h.get(), 1, *e.signature);
                sqlite3_bind_int64(h.get(), 2, e.scanned_at);
                sqlite3_bind_int(h.get(), 3, e.scored ? static_cast<int>(e.verdict) : unscored_verdict);
                sqlite3_bind_double(h.get(), 4, e.scored ? e.probability : 0.0);
                int i = 5;
                for (const std::string* t : {&e.action, &e.reason, &e.sender, &e.recipients, &e.from, &e.to, &e.subject,
                                             &e.message_id, &e.queue_id, &e.client_address, &e.helo}) {
                    sqlite3_bind_text(h.get(), i++, t->data(), static_cast<int>(t->size()), SQLITE_STATIC);
                }
                sqlite3_bind_int64(h.get(), 16, static_cast<std::int64_t>(e.size));
                // A blob: the compressed form (a TEXT column keeps a blob as it is given).
                sqlite3_bind_blob(h.get(), 17, explanations[n].data(), static_cast<int>(explanations[n].size()),
                                  SQLITE_STATIC);
                if (sqlite3_step(h.get()) != SQLITE_DONE) fail(std::string("cannot record history: ") + error_text());
            }
        }
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

ScanPrune SqliteDatabase::prune_scans(std::int64_t before, std::size_t batch) {
    if (mode_ != Mode::read_write) fail("database was opened read-only");
    // A batch at a time, by the scanned_at indexes, so that the write lock is
    // held for one batch's deletes and the recorder's next write (or the
    // console's correction) waits for no more than that.
    auto remove = [&](const char* sql, const char* what) {
        Statement q(db_, sql, path_);
        sqlite3_bind_int64(q.get(), 1, before);
        sqlite3_bind_int64(q.get(), 2, static_cast<std::int64_t>(std::min<std::size_t>(batch, INT64_MAX)));
        if (sqlite3_step(q.get()) != SQLITE_DONE) fail(std::string("cannot prune ") + what + ": " + error_text());
        return static_cast<std::size_t>(sqlite3_changes(db_));
    };
    ScanPrune r;
    exec("BEGIN IMMEDIATE");
    try {
        r.scans = remove("DELETE FROM signatures WHERE rowid IN (SELECT rowid FROM signatures WHERE scanned_at < ?1"
                         " ORDER BY scanned_at LIMIT ?2)", "signatures");
        r.lines = remove("DELETE FROM history WHERE id IN (SELECT id FROM history WHERE scanned_at < ?1"
                         " ORDER BY scanned_at LIMIT ?2)", "the history");
        drop_unused_dictionaries();
        prune_deferred_corrections(before);
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    r.more = r.scans == batch || r.lines == batch;
    return r;
}

void SqliteDatabase::prune_history(std::int64_t before) {
    Statement q(db_, "DELETE FROM history WHERE scanned_at < ?1", path_);
    sqlite3_bind_int64(q.get(), 1, before);
    if (sqlite3_step(q.get()) != SQLITE_DONE) fail(std::string("cannot prune the history: ") + error_text());
}

std::vector<HistoryEntry> SqliteDatabase::history(const HistoryQuery& query) {
    Binds b;
    const HistoryDialect d = dialect(b);
    std::string where = history_where(query, d);
    if (query.after) where += (where.empty() ? " WHERE " : " AND ") + history_after(query, d);
    // The page first, then the latest correction of each of its lines (corrections
    // are keyed by signature; the highest rowid is the latest).
    std::string sql = "SELECT h.*, c.corrected_to, c.at, c.by_whom FROM (SELECT id, signature, scanned_at, verdict,"
                      " probability,"
                      " action, reason, sender, recipients, from_header, to_header, subject, message_id, queue_id,"
                      " client_address, helo, size, ";
    sql += query.explanations ? "explanation" : "''";
    sql += " FROM history" + where + " ORDER BY " + history_order(query.order, "") + " LIMIT " +
           b.add(static_cast<std::int64_t>(std::min<std::size_t>(query.limit, INT64_MAX))) +
           ") h LEFT JOIN corrections c ON c.rowid = (SELECT max(rowid) FROM corrections WHERE signature = h.signature"
           " AND undone_at IS NULL)"
           " ORDER BY " + history_order(query.order, "h.");
    Statement q(db_, sql.c_str(), path_);
    b.bind(q.get());
    std::vector<HistoryEntry> out;
    auto text = [&](int col) {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(q.get(), col));
        return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(q.get(), col))) : std::string();
    };
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
        HistoryEntry e;
        e.id = sqlite3_column_int64(q.get(), 0);
        if (Digest d{}; sqlite3_column_bytes(q.get(), 1) == static_cast<int>(d.size())) {
            std::memcpy(d.data(), sqlite3_column_blob(q.get(), 1), d.size());
            e.signature = d;
        }
        e.scanned_at = sqlite3_column_int64(q.get(), 2);
        const int verdict = sqlite3_column_int(q.get(), 3);
        e.scored = verdict != unscored_verdict;
        if (e.scored) e.verdict = static_cast<model::Verdict>(verdict);
        e.probability = sqlite3_column_double(q.get(), 4);
        e.action = text(5);
        e.reason = text(6);
        e.sender = text(7);
        e.recipients = text(8);
        e.from = text(9);
        e.to = text(10);
        e.subject = text(11);
        e.message_id = text(12);
        e.queue_id = text(13);
        e.client_address = text(14);
        e.helo = text(15);
        e.size = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 16));
        e.explanation = unpack_explanation(text(17));
        if (sqlite3_column_type(q.get(), 18) != SQLITE_NULL) {
            e.corrected = HistoryEntry::Corrected{sqlite3_column_int(q.get(), 18) == 1 ? Class::spam : Class::ham,
                                                  sqlite3_column_int64(q.get(), 19), text(20)};
        }
        out.push_back(std::move(e));
    }
    if (rc != SQLITE_DONE) fail(std::string("cannot read the history: ") + error_text());
    return out;
}

std::uint64_t SqliteDatabase::history_count(const HistoryQuery& query) {
    Binds b;
    const std::string sql = "SELECT count(*) FROM history" + history_where(query, dialect(b), true);
    Statement q(db_, sql.c_str(), path_);
    b.bind(q.get());
    if (sqlite3_step(q.get()) != SQLITE_ROW) fail(std::string("cannot count the history: ") + error_text());
    return static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0));
}

std::vector<std::pair<std::string, std::int64_t>> SqliteDatabase::counters() {
    std::vector<std::pair<std::string, std::int64_t>> out;
    Statement q(db_, "SELECT name, value FROM counters ORDER BY name", path_);
    while (sqlite3_step(q.get()) == SQLITE_ROW) {
        out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 0)), sqlite3_column_int64(q.get(), 1));
    }
    return out;
}

std::int64_t insert_scan_dictionary(sqlite3* db, const std::filesystem::path& path, std::int64_t created_at,
                                    std::int64_t last_used, const std::string& bytes) {
    Statement ins(db, "INSERT INTO scan_dictionaries (created_at, last_used, bytes) VALUES (?1, ?2, ?3)", path);
    sqlite3_bind_int64(ins.get(), 1, created_at);
    sqlite3_bind_int64(ins.get(), 2, last_used);
    sqlite3_bind_blob(ins.get(), 3, bytes.data(), static_cast<int>(bytes.size()), SQLITE_STATIC);
    if (sqlite3_step(ins.get()) != SQLITE_DONE) {
        throw Error(path, std::string("cannot store a scan dictionary: ") + sqlite3_errmsg(db));
    }
    return sqlite3_last_insert_rowid(db);
}

void recode_text_scans(sqlite3* db, const std::filesystem::path& path) {
    // A dictionary first, from the newest scans, then every scan compressed with it.
    std::vector<std::string> samples;
    {
        Statement q(db, "SELECT features FROM signatures ORDER BY rowid DESC LIMIT ?1", path);
        sqlite3_bind_int(q.get(), 1, dictionary_samples);
        while (sqlite3_step(q.get()) == SQLITE_ROW) {
            samples.push_back(group_scan_lines({reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 0)),
                                                static_cast<std::size_t>(sqlite3_column_bytes(q.get(), 0))}));
        }
    }
    std::optional<ScanDictionary> dictionary;
    if (const auto bytes = train_scan_dictionary(samples)) {
        // Made for scans up to the newest old one, and last used for it.
        Statement q(db, "SELECT coalesce(max(scanned_at), 0) FROM signatures", path);
        const std::int64_t newest = sqlite3_step(q.get()) == SQLITE_ROW ? sqlite3_column_int64(q.get(), 0) : 0;
        dictionary.emplace(insert_scan_dictionary(db, path, newest, newest, *bytes), *bytes);
    }
    ScanEncoder encoder(dictionary ? &*dictionary : nullptr);
    Statement read(db, "SELECT id, scanned_at, verdict, features FROM signatures ORDER BY rowid", path);
    Statement write(db,
                    "INSERT INTO signatures_compact (id, scanned_at, verdict, dictionary, features)"
                    " VALUES (?1, ?2, ?3, ?4, ?5)",
                    path);
    int rc;
    while ((rc = sqlite3_step(read.get())) == SQLITE_ROW) {
        const std::string_view lines(reinterpret_cast<const char*>(sqlite3_column_text(read.get(), 3)),
                                     static_cast<std::size_t>(sqlite3_column_bytes(read.get(), 3)));
        const std::string stored = encoder.encode(lines);
        Use s(write);
        sqlite3_bind_value(*s, 1, sqlite3_column_value(read.get(), 0));
        sqlite3_bind_value(*s, 2, sqlite3_column_value(read.get(), 1));
        sqlite3_bind_value(*s, 3, sqlite3_column_value(read.get(), 2));
        if (dictionary) sqlite3_bind_int64(*s, 4, dictionary->id());
        sqlite3_bind_blob(*s, 5, stored.data(), static_cast<int>(stored.size()), SQLITE_STATIC);
        if (sqlite3_step(*s) != SQLITE_DONE) {
            throw Error(path, std::string("cannot recode a recorded scan: ") + sqlite3_errmsg(db));
        }
    }
    if (rc != SQLITE_DONE) throw Error(path, std::string("cannot read the recorded scans: ") + sqlite3_errmsg(db));
}

}  // namespace mailsift::store
