// Feature and class counts, and the learned messages behind them: reading the
// model and what changed in it, and the write transaction of a TrainingBatch.
#include "internal.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <ctime>

namespace mailsift::store {

Database::ClassTotals SqliteDatabase::read_totals(model::TermFrequency tf) {
    const bool boolean = tf == model::TermFrequency::boolean;
    ClassTotals totals;
    Statement q(db_, "SELECT class, messages, occurrences, presences FROM classes", path_);
    while (sqlite3_step(q.get()) == SQLITE_ROW) {
        const bool spam = sqlite3_column_int(q.get(), 0) == 1;
        (spam ? totals.messages.spam : totals.messages.ham) = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 1));
        (spam ? totals.feature_totals.spam : totals.feature_totals.ham) =
            static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), boolean ? 3 : 2));
    }
    totals.sequence = model_sequence();
    return totals;
}

SqliteDatabase::ClassTotals SqliteDatabase::visit_counts(model::TermFrequency tf, const std::function<void(std::size_t)>& size,
                                             const std::function<void(model::FeatureId, model::ClassCounts)>& feature) {
    const bool boolean = tf == model::TermFrequency::boolean;
    ClassTotals totals;
    exec("BEGIN");  // one consistent read of classes and features
    try {
        totals = read_totals(tf);
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

std::vector<model::Snapshot::Change> SqliteDatabase::rows_of(const std::vector<model::FeatureId>& ids,
                                                             model::TermFrequency tf) {
    const bool boolean = tf == model::TermFrequency::boolean;
    std::vector<model::Snapshot::Change> out;
    out.reserve(ids.size());
    Use s(st_->find_feature);
    for (const model::FeatureId id : ids) {
        sqlite3_reset(*s);
        sqlite3_bind_int64(*s, 1, static_cast<sqlite3_int64>(id));
        model::Snapshot::Change f;
        f.id = id;
        const int rc = sqlite3_step(*s);
        if (rc == SQLITE_ROW) {
            f.present = true;
            f.counts = {static_cast<std::uint64_t>(sqlite3_column_int64(*s, boolean ? 2 : 0)),
                        static_cast<std::uint64_t>(sqlite3_column_int64(*s, boolean ? 3 : 1))};
        } else if (rc != SQLITE_DONE) {
            fail(std::string("cannot read feature: ") + error_text());
        }
        out.push_back(f);
    }
    return out;
}

SqliteDatabase::CountsOf SqliteDatabase::counts_of(const std::vector<model::FeatureId>& ids, model::TermFrequency tf) {
    CountsOf out;
    exec("BEGIN");  // the totals, the vocabulary and the rows of one moment
    try {
        out.totals = read_totals(tf);
        {
            Statement q(db_, "SELECT features FROM vocabulary WHERE id = 0", path_);
            if (sqlite3_step(q.get()) != SQLITE_ROW) fail(std::string("cannot read the vocabulary: ") + error_text());
            out.vocabulary = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0));
        }
        out.features = rows_of(ids, tf);
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return out;
}

// ---- the change log readers refresh by ----

std::uint64_t SqliteDatabase::model_sequence() {
    Use s(st_->model_sequence);
    if (sqlite3_step(*s) != SQLITE_ROW) fail(std::string("cannot read the model's change sequence: ") + error_text());
    return static_cast<std::uint64_t>(sqlite3_column_int64(*s, 0));
}

void SqliteDatabase::log_model_change(const std::vector<model::FeatureId>* ids) {
    const std::string blob = ids ? encode_feature_ids(*ids) : std::string();
    const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
    {
        Use s(st_->insert_model_change);
        sqlite3_bind_int64(*s, 1, now);
        if (ids != nullptr) {
            sqlite3_bind_blob(*s, 2, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
        } else {
            sqlite3_bind_null(*s, 2);
        }
        if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot log the model's change: ") + error_text());
    }
    Use s(st_->trim_model_changes);
    sqlite3_bind_int64(*s, 1, now - model_change_seconds);
    if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot trim the model's change log: ") + error_text());
}

SqliteDatabase::ModelChanges SqliteDatabase::model_changes_since(std::uint64_t sequence, model::TermFrequency tf,
                                                     std::size_t max_features) {
    ModelChanges out;
    exec("BEGIN");  // the list, the totals and the rows of one moment
    try {
        out.totals = read_totals(tf);
        ChangeList changes(sequence, max_features);
        {
            Statement q(db_, "SELECT seq, features FROM model_changes WHERE seq > ?1 ORDER BY seq", path_);
            sqlite3_bind_int64(q.get(), 1, static_cast<sqlite3_int64>(sequence));
            int rc;
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                std::optional<std::string_view> features;
                if (sqlite3_column_type(q.get(), 1) != SQLITE_NULL) {
                    features.emplace(static_cast<const char*>(sqlite3_column_blob(q.get(), 1)),
                                     static_cast<std::size_t>(sqlite3_column_bytes(q.get(), 1)));
                }
                changes.add(static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0)), features);
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read the model's change log: ") + error_text());
        }
        const auto ids = changes.ids(out.totals.sequence);
        out.listed = ids.has_value();
        if (ids) {
            out.features = rows_of(*ids, tf);
        }
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return out;
}

// ---- the write transaction of a TrainingBatch ----

std::unique_ptr<WriteTransaction> SqliteDatabase::begin_write() { return std::make_unique<SqliteTransaction>(*this); }

SqliteTransaction::SqliteTransaction(SqliteDatabase& db) : db_(db) {
    if (db_.mode() != Database::Mode::read_write) db_.fail("database was opened read-only");
    db_.exec("BEGIN IMMEDIATE");
    open_ = true;
}

SqliteTransaction::~SqliteTransaction() {
    if (open_) sqlite3_exec(db_.db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

std::optional<WriteTransaction::StoredMessage> SqliteTransaction::find_message(const Digest& digest) {
    Use s(db_.st_->find_message);
    bind_digest(*s, 1, digest);
    const int rc = sqlite3_step(*s);
    if (rc == SQLITE_DONE) return std::nullopt;
    if (rc != SQLITE_ROW) db_.fail(std::string("cannot look up message: ") + db_.error_text());
    StoredMessage m;
    m.c = sqlite3_column_int(*s, 0) == 1 ? Class::spam : Class::ham;
    m.features.assign(static_cast<const char*>(sqlite3_column_blob(*s, 1)),
                      static_cast<std::size_t>(sqlite3_column_bytes(*s, 1)));
    return m;
}

void SqliteTransaction::insert_message(const Digest& digest, Class c, std::int64_t learned_at, std::string_view features) {
    Use s(db_.st_->insert_message);
    bind_digest(*s, 1, digest);
    sqlite3_bind_int(*s, 2, c == Class::spam ? 1 : 0);
    sqlite3_bind_int64(*s, 3, learned_at);
    sqlite3_bind_blob(*s, 4, features.data(), static_cast<int>(features.size()), SQLITE_STATIC);
    if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot record message: ") + db_.error_text());
}

void SqliteTransaction::delete_message(const Digest& digest) {
    Use s(db_.st_->delete_message);
    bind_digest(*s, 1, digest);
    if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot delete message: ") + db_.error_text());
}

std::vector<std::optional<WriteTransaction::Row>> SqliteTransaction::read_features(const std::vector<model::FeatureId>& ids) {
    std::vector<std::optional<Row>> out;
    out.reserve(ids.size());
    for (const model::FeatureId id : ids) {
        Use s(db_.st_->find_feature);
        sqlite3_bind_int64(*s, 1, static_cast<sqlite3_int64>(id));
        const int rc = sqlite3_step(*s);
        if (rc == SQLITE_ROW) {
            Row row;
            for (int k = 0; k < 4; ++k) row[static_cast<std::size_t>(k)] = sqlite3_column_int64(*s, k);
            out.emplace_back(row);
        } else if (rc == SQLITE_DONE) {
            out.emplace_back();
        } else {
            db_.fail(std::string("cannot look up feature: ") + db_.error_text());
        }
    }
    return out;
}

void SqliteTransaction::write_features(const std::vector<FeatureWrite>& upserts, const std::vector<model::FeatureId>& deletes) {
    for (const model::FeatureId id : deletes) {
        Use s(db_.st_->delete_feature);
        sqlite3_bind_int64(*s, 1, static_cast<sqlite3_int64>(id));
        if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot prune feature: ") + db_.error_text());
    }
    for (const auto& w : upserts) {
        Use s(db_.st_->upsert_feature);
        sqlite3_bind_int64(*s, 1, static_cast<sqlite3_int64>(w.id));
        for (int k = 0; k < 4; ++k) sqlite3_bind_int64(*s, k + 2, w.change[static_cast<std::size_t>(k)]);
        sqlite3_bind_text(*s, 6, w.text.data(), static_cast<int>(w.text.size()), SQLITE_STATIC);
        sqlite3_bind_int64(*s, 7, w.last_seen);
        if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot update feature: ") + db_.error_text());
    }
}

void SqliteTransaction::add_to_classes(const ClassChange& spam, const ClassChange& ham) {
    const std::pair<int, const ClassChange*> totals[] = {{1, &spam}, {0, &ham}};
    for (const auto& [cls, t] : totals) {
        Use s(db_.st_->update_class);
        sqlite3_bind_int(*s, 1, cls);
        sqlite3_bind_int64(*s, 2, t->messages);
        sqlite3_bind_int64(*s, 3, t->occurrences);
        sqlite3_bind_int64(*s, 4, t->presences);
        if (sqlite3_step(*s) != SQLITE_DONE) db_.fail(std::string("cannot update totals: ") + db_.error_text());
    }
}

void SqliteTransaction::commit() {
    db_.exec("COMMIT");
    open_ = false;
}

}  // namespace mailsift::store
