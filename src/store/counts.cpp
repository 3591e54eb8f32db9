// Feature and class counts, and the learned messages behind them: reading the
// model, and TrainingBatch, which learns and unlearns in one transaction.
#include "internal.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <ctime>

namespace mailsift::store {

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
        totals.sequence = model_sequence();
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

// ---- the change log readers refresh by ----

// Changes kept in model_changes: a reader further behind reloads everything.
constexpr std::int64_t model_change_seconds = 3600;

std::uint64_t Database::model_sequence() {
    Use s(st_->model_sequence);
    if (sqlite3_step(*s) != SQLITE_ROW) fail(std::string("cannot read the model's change sequence: ") + error_text());
    return static_cast<std::uint64_t>(sqlite3_column_int64(*s, 0));
}

void Database::log_model_change(std::vector<model::FeatureId>* ids) {
    std::string blob;
    if (ids != nullptr) {
        std::sort(ids->begin(), ids->end());
        blob.reserve(ids->size() * 5);
        model::FeatureId prev = 0;
        for (const model::FeatureId id : *ids) {
            put_varint(blob, id - prev);
            prev = id;
        }
    }
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

Database::ModelChanges Database::model_changes_since(std::uint64_t sequence, model::TermFrequency tf,
                                                     std::size_t max_features) {
    const bool boolean = tf == model::TermFrequency::boolean;
    ModelChanges out;
    exec("BEGIN");  // the list, the totals and the rows of one moment
    try {
        {
            Statement q(db_, "SELECT class, messages, occurrences, presences FROM classes", path_);
            while (sqlite3_step(q.get()) == SQLITE_ROW) {
                const bool spam = sqlite3_column_int(q.get(), 0) == 1;
                (spam ? out.totals.messages.spam : out.totals.messages.ham) =
                    static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 1));
                (spam ? out.totals.feature_totals.spam : out.totals.feature_totals.ham) =
                    static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), boolean ? 3 : 2));
            }
        }
        out.totals.sequence = model_sequence();
        std::vector<model::FeatureId> ids;
        {
            Statement q(db_, "SELECT seq, features FROM model_changes WHERE seq > ?1 ORDER BY seq", path_);
            sqlite3_bind_int64(q.get(), 1, static_cast<sqlite3_int64>(sequence));
            std::uint64_t expect = sequence + 1;
            int rc;
            while (out.listed && (rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                // A gap is a trimmed part of the log; NULL, a change too large to list.
                if (static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0)) != expect++ ||
                    sqlite3_column_type(q.get(), 1) == SQLITE_NULL) {
                    out.listed = false;
                    break;
                }
                const std::string_view blob(static_cast<const char*>(sqlite3_column_blob(q.get(), 1)),
                                            static_cast<std::size_t>(sqlite3_column_bytes(q.get(), 1)));
                std::size_t i = 0;
                model::FeatureId id = 0;
                std::uint64_t delta = 0;
                while (i < blob.size()) {
                    if (!get_varint(blob, i, delta)) {
                        out.listed = false;  // damaged: the full reload is always right
                        break;
                    }
                    id += delta;
                    ids.push_back(id);
                }
                if (ids.size() > max_features * 2) out.listed = false;
            }
            if (out.listed && expect - 1 != out.totals.sequence) out.listed = false;  // the database went back
        }
        if (out.listed) {
            std::sort(ids.begin(), ids.end());
            ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
            if (ids.size() > max_features) out.listed = false;
        }
        if (out.listed) {
            out.features.reserve(ids.size());
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
                out.features.push_back(f);
            }
        }
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    if (!out.listed) out.features.clear();
    return out;
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

void TrainingBatch::commit() {
    assert(open_ && "commit twice");
    std::int64_t occ_spam = 0, occ_ham = 0, pres_spam = 0, pres_ham = 0;
    std::vector<model::FeatureId> written;  // rows written or deleted, for readers' refresh
    written.reserve(deltas_.size());
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
            written.push_back(id);
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
        if (!unchanged) written.push_back(id);  // last_seen alone is not the model's
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
    if (!written.empty() || messages_spam_ != 0 || messages_ham_ != 0) db_.log_model_change(&written);
    db_.exec("COMMIT");
    open_ = false;
}

}  // namespace mailsift::store
