// Corrections of verdicts: kept with what undoing them takes, undone, their
// trail, the error rates they reveal, and those deferred until their scan is
// written.
#include "internal.hpp"
#include "../codec.hpp"

#include <sqlite3.h>

#include <cstring>

namespace mailsift::store {

namespace {

// A correction row's first columns: rowid, verdict, corrected_to, at, by_whom.
CorrectionRecord correction_row(sqlite3_stmt* q) {
    CorrectionRecord r;
    r.id = sqlite3_column_int64(q, 0);
    r.verdict = static_cast<model::Verdict>(sqlite3_column_int(q, 1));
    r.to = sqlite3_column_int(q, 2) == 1 ? Class::spam : Class::ham;
    r.at = sqlite3_column_int64(q, 3);
    if (const auto* by = reinterpret_cast<const char*>(sqlite3_column_text(q, 4))) r.by = by;
    return r;
}

// The undo record in column 5 of a correction row (Error when damaged).
CorrectionUndo undo_column(sqlite3_stmt* q, const std::filesystem::path& path) {
    const std::string_view blob(static_cast<const char*>(sqlite3_column_blob(q, 5)),
                                static_cast<std::size_t>(sqlite3_column_bytes(q, 5)));
    auto undo = decode_correction_undo(blob);
    if (!undo) {
        throw Error(path, "a correction's undo record is damaged (correction " +
                              std::to_string(sqlite3_column_int64(q, 0)) + ")");
    }
    return std::move(*undo);
}

// Of the corrections kept with an undo record (`standing`: and not undone),
// those that stepped `user`'s layer, oldest first.
std::vector<CorrectionRecord> layer_corrections_of(sqlite3* db, const std::filesystem::path& path,
                                                   std::string_view user, bool standing) {
    const std::string sql = std::string("SELECT rowid, verdict, corrected_to, at, by_whom, undo, undone_at, undone_by"
                                        " FROM corrections WHERE undo IS NOT NULL AND ") +
                            (user.empty() ? "layer_user <> ''" : "layer_user = ?1") +
                            (standing ? " AND undone_at IS NULL" : "") + " ORDER BY rowid";
    Statement q(db, sql.c_str(), path);
    if (!user.empty()) sqlite3_bind_text(q.get(), 1, user.data(), static_cast<int>(user.size()), SQLITE_STATIC);
    std::vector<CorrectionRecord> out;
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
        auto undo = undo_column(q.get(), path);
        if (undo.layer.slots.empty() || (!user.empty() && undo.layer.user != user)) continue;
        CorrectionRecord r = correction_row(q.get());
        r.undo = std::move(undo);
        r.undone_at = sqlite3_column_int64(q.get(), 6);
        if (const auto* by = reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 7))) r.undone_by = by;
        out.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) throw Error(path, std::string("cannot read corrections: ") + sqlite3_errmsg(db));
    return out;
}

}  // namespace

std::vector<CorrectionRecord> SqliteDatabase::layer_corrections(std::string_view user) {
    return layer_corrections_of(db_, path_, user, false);
}

ScanLog::LayerCensus SqliteDatabase::layer_census() {
    Statement q(db_,
                "SELECT count(DISTINCT layer_user), count(*) FROM corrections WHERE layer_user <> '' AND undone_at IS NULL",
                path_);
    if (sqlite3_step(q.get()) != SQLITE_ROW) fail(std::string("cannot read corrections: ") + error_text());
    return {static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0)),
            static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 1))};
}

bool SqliteDatabase::delivered_to(std::string_view user) {
    Statement q(db_, "SELECT 1 FROM delivered_users WHERE name = ?1", path_);
    sqlite3_bind_text(q.get(), 1, user.data(), static_cast<int>(user.size()), SQLITE_STATIC);
    const int rc = sqlite3_step(q.get());
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) fail(std::string("cannot read the users delivered to: ") + error_text());
    return rc == SQLITE_ROW;
}

std::vector<CorrectionRecord> SqliteTransaction::standing_layer_corrections(std::string_view user) {
    if (user.empty()) return {};  // one user's, never all
    return layer_corrections_of(db_.db_, db_.path_, user, true);  // the write lock is held: nothing changes them
}

std::vector<CorrectionRecord> SqliteTransaction::standing_sender_corrections(std::string_view sender) {
    if (sender.empty()) return {};
    Statement q(db_.db_,
                "SELECT rowid, verdict, corrected_to, at, by_whom, undo, signature FROM corrections"
                " WHERE layer_sender = ?1 AND undo IS NOT NULL AND undone_at IS NULL ORDER BY rowid",
                db_.path_);
    sqlite3_bind_text(q.get(), 1, sender.data(), static_cast<int>(sender.size()), SQLITE_STATIC);
    std::vector<CorrectionRecord> out;
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
        auto undo = undo_column(q.get(), db_.path_);
        if (undo.layer.slots.empty() || undo.layer.sender != sender) continue;
        CorrectionRecord r = correction_row(q.get());
        r.undo = std::move(undo);
        if (sqlite3_column_bytes(q.get(), 6) == static_cast<int>(Digest{}.size())) {
            Digest d{};
            std::memcpy(d.data(), sqlite3_column_blob(q.get(), 6), d.size());
            r.signature = d;
        }
        out.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) db_.fail(std::string("cannot read corrections: ") + db_.error_text());
    return out;
}

void SqliteTransaction::set_correction_undo(std::int64_t correction_id, const CorrectionUndo& undo) {
    const std::string blob = encode_correction_undo(undo);
    const std::string_view layer_user = layer_user_of(undo), layer_sender = layer_sender_of(undo);
    Statement q(db_.db_, "UPDATE corrections SET undo = ?2, layer_user = ?3, layer_sender = ?4 WHERE rowid = ?1",
                db_.path_);
    sqlite3_bind_int64(q.get(), 1, correction_id);
    sqlite3_bind_blob(q.get(), 2, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
    sqlite3_bind_text(q.get(), 3, layer_user.data(), static_cast<int>(layer_user.size()), SQLITE_STATIC);
    sqlite3_bind_text(q.get(), 4, layer_sender.data(), static_cast<int>(layer_sender.size()), SQLITE_STATIC);
    if (sqlite3_step(q.get()) != SQLITE_DONE) db_.fail(std::string("cannot update a correction: ") + db_.error_text());
}

void SqliteDatabase::prune_deferred_corrections(std::int64_t before) {
    // A scan older than the cut-off is pruned anyway: one that has not come by then never will.
    Statement q(db_, "DELETE FROM deferred_corrections WHERE requested_at < ?1", path_);
    sqlite3_bind_int64(q.get(), 1, before);
    if (sqlite3_step(q.get()) != SQLITE_DONE) fail(std::string("cannot prune deferred corrections: ") + error_text());
}

bool SqliteDatabase::has_deferred_corrections() {
    Statement q(db_, "SELECT EXISTS (SELECT 1 FROM deferred_corrections)", path_);
    if (sqlite3_step(q.get()) != SQLITE_ROW) fail(std::string("cannot read deferred corrections: ") + error_text());
    return sqlite3_column_int(q.get(), 0) != 0;
}

CorrectionCounts SqliteDatabase::corrections_since(std::int64_t since) {
    CorrectionCounts c;
    // A correction of a scan counts only while it is its scan's latest (the
    // highest rowid of its signature): corrected back, the message was right.
    // An undone one counts nowhere; the one before it is the latest again.
    Statement q(db_,
                "SELECT verdict, corrected_to, count(*) FROM corrections c WHERE at >= ?1 AND undone_at IS NULL AND"
                " (signature IS NULL OR rowid = (SELECT max(rowid) FROM corrections WHERE signature = c.signature"
                " AND undone_at IS NULL)) GROUP BY 1, 2",
                path_);
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

void SqliteTransaction::record_correction(const Correction& c) {
    Use s(db_.st_->insert_correction);
    sqlite3_bind_int64(*s, 1, c.at);
    sqlite3_bind_int(*s, 2, static_cast<int>(c.verdict));
    sqlite3_bind_int(*s, 3, c.to == Class::spam ? 1 : 0);
    if (c.signature) bind_digest(*s, 4, *c.signature);
    sqlite3_bind_text(*s, 5, c.by.data(), static_cast<int>(c.by.size()), SQLITE_STATIC);
    std::string undo;
    if (c.undo) {
        undo = encode_correction_undo(*c.undo);
        sqlite3_bind_blob(*s, 6, undo.data(), static_cast<int>(undo.size()), SQLITE_STATIC);
    }
    const std::string_view layer_user = c.undo ? layer_user_of(*c.undo) : std::string_view("");  // never NULL
    sqlite3_bind_text(*s, 7, layer_user.data(), static_cast<int>(layer_user.size()), SQLITE_STATIC);
    const std::string_view layer_sender = c.undo ? layer_sender_of(*c.undo) : std::string_view("");
    sqlite3_bind_text(*s, 8, layer_sender.data(), static_cast<int>(layer_sender.size()), SQLITE_STATIC);
    if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot record correction: ") + db_.error_text());
}

std::optional<CorrectionRecord> SqliteTransaction::latest_correction(const Digest& signature) {
    Statement q(db_.db_,
                "SELECT rowid, verdict, corrected_to, at, by_whom, undo FROM corrections WHERE signature = ?1"
                " AND undone_at IS NULL ORDER BY rowid DESC LIMIT 1",
                db_.path_);
    bind_digest(q.get(), 1, signature);
    const int rc = sqlite3_step(q.get());
    if (rc == SQLITE_DONE) return std::nullopt;
    if (rc != SQLITE_ROW) db_.fail(std::string("cannot read corrections: ") + db_.error_text());
    CorrectionRecord r = correction_row(q.get());
    if (sqlite3_column_type(q.get(), 5) != SQLITE_NULL) {
        const std::string_view blob(static_cast<const char*>(sqlite3_column_blob(q.get(), 5)),
                                    static_cast<std::size_t>(sqlite3_column_bytes(q.get(), 5)));
        r.undo = decode_correction_undo(blob);
        if (!r.undo) db_.fail("a correction's undo record is damaged; refusing to undo it");
    }
    return r;
}

void SqliteTransaction::mark_undone(std::int64_t correction_id, std::int64_t at, std::string_view by) {
    Statement q(db_.db_, "UPDATE corrections SET undone_at = ?2, undone_by = ?3 WHERE rowid = ?1", db_.path_);
    sqlite3_bind_int64(q.get(), 1, correction_id);
    sqlite3_bind_int64(q.get(), 2, at);
    sqlite3_bind_text(q.get(), 3, by.data(), static_cast<int>(by.size()), SQLITE_STATIC);
    if (sqlite3_step(q.get()) != SQLITE_DONE) db_.fail(std::string("cannot mark a correction undone: ") + db_.error_text());
    Statement trim(db_.db_,
                   "DELETE FROM corrections WHERE signature = (SELECT signature FROM corrections WHERE rowid = ?1)"
                   " AND undone_at IS NOT NULL AND rowid NOT IN (SELECT rowid FROM corrections WHERE signature ="
                   " (SELECT signature FROM corrections WHERE rowid = ?1) AND undone_at IS NOT NULL"
                   " ORDER BY rowid DESC LIMIT ?2)",
                   db_.path_);
    sqlite3_bind_int64(trim.get(), 1, correction_id);
    sqlite3_bind_int64(trim.get(), 2, static_cast<std::int64_t>(undone_kept));
    if (sqlite3_step(trim.get()) != SQLITE_DONE) {
        db_.fail(std::string("cannot trim a message's undone corrections: ") + db_.error_text());
    }
}

std::vector<CorrectionRecord> SqliteDatabase::corrections_of(const Digest& signature) {
    Statement q(db_,
                "SELECT rowid, verdict, corrected_to, at, by_whom, undo IS NOT NULL, undone_at, undone_by"
                " FROM corrections WHERE signature = ?1 ORDER BY rowid",
                path_);
    bind_digest(q.get(), 1, signature);
    std::vector<CorrectionRecord> out;
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
        CorrectionRecord r = correction_row(q.get());
        if (sqlite3_column_int(q.get(), 5) != 0) r.undo.emplace();
        r.undone_at = sqlite3_column_int64(q.get(), 6);
        if (const auto* by = reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 7))) r.undone_by = by;
        out.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) fail(std::string("cannot read corrections: ") + error_text());
    return out;
}

void SqliteTransaction::defer_correction(const Digest& signature, Class to, std::int64_t now, std::string_view by) {
    Statement q(db_.db_,
                "INSERT INTO deferred_corrections (signature, corrected_to, requested_at, requested_by)"
                " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (signature) DO UPDATE SET corrected_to = excluded.corrected_to,"
                " requested_at = excluded.requested_at, requested_by = excluded.requested_by",
                db_.path_);
    bind_digest(q.get(), 1, signature);
    sqlite3_bind_int(q.get(), 2, to == Class::spam ? 1 : 0);
    sqlite3_bind_int64(q.get(), 3, now);
    sqlite3_bind_text(q.get(), 4, by.data(), static_cast<int>(by.size()), SQLITE_STATIC);
    if (sqlite3_step(q.get()) != SQLITE_DONE) db_.fail(std::string("cannot defer correction: ") + db_.error_text());
}

std::optional<DeferredCorrection> SqliteTransaction::drop_deferred_correction(const Digest& signature) {
    Statement q(db_.db_, "DELETE FROM deferred_corrections WHERE signature = ?1 RETURNING corrected_to, requested_by",
                db_.path_);
    bind_digest(q.get(), 1, signature);
    std::optional<DeferredCorrection> dropped;
    int rc = sqlite3_step(q.get());
    if (rc == SQLITE_ROW) {
        dropped = DeferredCorrection{sqlite3_column_int(q.get(), 0) == 1 ? Class::spam : Class::ham, {}};
        if (const auto* by = reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 1))) dropped->by = by;
        rc = sqlite3_step(q.get());
    }
    if (rc != SQLITE_DONE) db_.fail(std::string("cannot drop deferred correction: ") + db_.error_text());
    return dropped;
}

std::vector<ReadyCorrection> SqliteTransaction::take_ready_corrections(std::size_t limit) {
    struct Ready {
        Digest id;
        Class to;
        std::string by;
    };
    std::vector<Ready> ready;
    {
        Statement q(db_.db_,
                    "SELECT d.signature, d.corrected_to, d.requested_by FROM deferred_corrections d"
                    " JOIN signatures s ON s.id = d.signature ORDER BY d.requested_at LIMIT ?1",
                    db_.path_);
        sqlite3_bind_int64(q.get(), 1, static_cast<std::int64_t>(limit));
        int rc;
        while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
            Digest id{};
            if (sqlite3_column_bytes(q.get(), 0) != static_cast<int>(id.size())) continue;
            std::memcpy(id.data(), sqlite3_column_blob(q.get(), 0), id.size());
            const auto* by = reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 2));
            ready.push_back({id, sqlite3_column_int(q.get(), 1) == 1 ? Class::spam : Class::ham,
                             by ? std::string(by, static_cast<std::size_t>(sqlite3_column_bytes(q.get(), 2))) : ""});
        }
        if (rc != SQLITE_DONE) db_.fail(std::string("cannot read deferred corrections: ") + db_.error_text());
    }
    std::vector<ReadyCorrection> out;
    out.reserve(ready.size());
    Statement drop(db_.db_, "DELETE FROM deferred_corrections WHERE signature = ?1", db_.path_);
    for (auto& r : ready) {
        auto scan = db_.find_scan(r.id);
        if (!scan) continue;  // not reachable: found by the join, in this transaction
        sqlite3_reset(drop.get());
        bind_digest(drop.get(), 1, r.id);
        if (sqlite3_step(drop.get()) != SQLITE_DONE) {
            db_.fail(std::string("cannot take deferred correction: ") + db_.error_text());
        }
        out.push_back({std::move(*scan), r.to, std::move(r.by)});
    }
    return out;
}

}  // namespace mailsift::store
