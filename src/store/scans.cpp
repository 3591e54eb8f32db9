// What mailsiftd's recorder writes and correct reads: scans under their
// signature, corrections of verdicts, and the daemon's counters.
#include "internal.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <cstring>

namespace mailsift::store {

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

void TrainingBatch::record_correction(model::Verdict verdict, Class to, std::int64_t now) {
    Use s(db_.st_->insert_correction);
    sqlite3_bind_int64(*s, 1, now);
    sqlite3_bind_int(*s, 2, static_cast<int>(verdict));
    sqlite3_bind_int(*s, 3, to == Class::spam ? 1 : 0);
    if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot record correction: ") + db_.error_text());
}

}  // namespace mailsift::store
