// The write transaction of a TrainingBatch on PostgreSQL. Messages, contacts
// and corrections are written as the batch goes (other writers go on in
// parallel); the feature rows, class totals and change log are written at
// commit under the commit lock, each in one statement over arrays.
#include <algorithm>
#include <cstring>
#include <ctime>

#include "../codec.hpp"
#include "pg_database.hpp"

namespace mailsift::store {

using pg::Param;

namespace {

// Array literals of the columns of many rows, for unnest().
struct Columns {
    std::string ids = "{", counts[4] = {"{", "{", "{", "{"}, texts = "{", last_seen = "{";
    std::size_t n = 0;
    void add(const WriteTransaction::FeatureWrite& w) {
        const char* sep = n++ == 0 ? "" : ",";
        ids += sep + std::to_string(static_cast<std::int64_t>(w.id));
        for (int k = 0; k < 4; ++k) counts[k] += sep + std::to_string(w.change[static_cast<std::size_t>(k)]);
        texts += sep;
        texts += '"' + pg::hex(w.text) + '"';  // quoted: an empty text is an element too
        last_seen += sep + std::to_string(w.last_seen);
    }
    std::vector<Param> params() const {
        std::vector<Param> p;
        for (const std::string* a : {&ids, &counts[0], &counts[1], &counts[2], &counts[3], &texts, &last_seen}) {
            p.push_back(Param::text(*a + "}"));
        }
        return p;
    }
};

class PgTransaction final : public WriteTransaction {
public:
    explicit PgTransaction(PgDatabase& db) : db_(db), c_(db.connection()) {
        c_.run("BEGIN");
        open_ = true;
    }
    ~PgTransaction() override {
        if (!open_) return;
        try {
            c_.run("ROLLBACK");
        } catch (...) {
            // The connection is gone: the server rolled back.
        }
    }

    std::optional<StoredMessage> find_message(const Digest& digest) override {
        auto r = c_.exec("SELECT class, features FROM messages WHERE digest = $1", {Param::digest(digest)});
        if (r.rows() == 0) return std::nullopt;
        StoredMessage m;
        m.c = r.integer(0, 0) == 1 ? Class::spam : Class::ham;
        m.features.assign(r.bytes(0, 1));
        return m;
    }

    void insert_message(const Digest& digest, Class c, std::int64_t learned_at, std::string_view features) override {
        // Another writer may have learned it since find_message: then this batch starts again and sees it.
        const auto n = c_.exec("INSERT INTO messages (digest, class, learned_at, features) VALUES ($1, $2, $3, $4)"
                               " ON CONFLICT (digest) DO NOTHING",
                               {Param::digest(digest), Param(c == Class::spam ? 1 : 0), Param(learned_at),
                                Param::bytes(features)})
                           .affected();
        if (n == 0) throw RetryableError(c_.location(), "another process learned the same message at the same time");
    }

    void delete_message(const Digest& digest) override {
        c_.exec("DELETE FROM messages WHERE digest = $1", {Param::digest(digest)});
    }

    std::vector<std::optional<Row>> read_features(const std::vector<model::FeatureId>& ids) override {
        lock();
        std::vector<std::optional<Row>> out(ids.size());
        auto r = c_.exec(
            "SELECT id, spam_occurrences, ham_occurrences, spam_presences, ham_presences FROM features"
            " WHERE id = ANY($1::bigint[])",
            {Param::text(pg::bigint_array(ids))});
        // ids are in the store's (signed) order; find each row's place by binary search.
        std::vector<std::int64_t> keys;
        keys.reserve(ids.size());
        for (const auto id : ids) keys.push_back(static_cast<std::int64_t>(id));
        for (int i = 0; i < r.rows(); ++i) {
            const auto it = std::lower_bound(keys.begin(), keys.end(), r.integer(i, 0));
            if (it == keys.end() || *it != r.integer(i, 0)) continue;
            Row row;
            for (int k = 0; k < 4; ++k) row[static_cast<std::size_t>(k)] = r.integer(i, k + 1);
            out[static_cast<std::size_t>(it - keys.begin())] = row;
        }
        return out;
    }

    void write_features(const std::vector<FeatureWrite>& upserts, const std::vector<model::FeatureId>& deletes) override {
        lock();
        if (!deletes.empty()) {
            c_.exec("DELETE FROM features WHERE id = ANY($1::bigint[])", {Param::text(pg::bigint_array(deletes))});
        }
        constexpr std::size_t chunk = 20000;
        for (std::size_t from = 0; from < upserts.size(); from += chunk) {
            Columns cols;
            for (std::size_t i = from; i < std::min(upserts.size(), from + chunk); ++i) cols.add(upserts[i]);
            c_.exec(
                "INSERT INTO features AS f (id, spam_occurrences, ham_occurrences, spam_presences, ham_presences, text,"
                " last_seen) SELECT i, so, ho, sp, hp, decode(t, 'hex'), ls FROM unnest($1::bigint[], $2::bigint[],"
                " $3::bigint[], $4::bigint[], $5::bigint[], $6::text[], $7::bigint[]) AS u(i, so, ho, sp, hp, t, ls)"
                " ON CONFLICT (id) DO UPDATE SET spam_occurrences = f.spam_occurrences + excluded.spam_occurrences,"
                " ham_occurrences = f.ham_occurrences + excluded.ham_occurrences,"
                " spam_presences = f.spam_presences + excluded.spam_presences,"
                " ham_presences = f.ham_presences + excluded.ham_presences,"
                " last_seen = greatest(f.last_seen, excluded.last_seen)",
                cols.params());
        }
    }

    void add_to_classes(const ClassChange& spam, const ClassChange& ham) override {
        lock();
        for (const auto& [cls, t] : {std::pair{1, &spam}, std::pair{0, &ham}}) {
            c_.exec("UPDATE classes SET messages = messages + $2, occurrences = occurrences + $3,"
                    " presences = presences + $4 WHERE class = $1",
                    {Param(cls), Param(t->messages), Param(t->occurrences), Param(t->presences)});
        }
    }

    void add_linear(const LinearChange& change) override {
        lock();
        db_.add_linear(change);
    }

    std::optional<Class> find_uncounted(const Digest& digest) override {
        auto r = c_.exec("SELECT class FROM linear_messages WHERE digest = $1", {Param::digest(digest)});
        if (r.rows() == 0) return std::nullopt;
        return r.integer(0, 0) == 1 ? Class::spam : Class::ham;
    }

    void put_uncounted(const Digest& digest, Class c, std::optional<Class> was) override {
        // Another writer may have learned it since find_uncounted: then this batch starts again and sees it.
        const auto n = was ? c_.exec("UPDATE linear_messages SET class = $2 WHERE digest = $1 AND class = $3",
                                     {Param::digest(digest), Param(c == Class::spam ? 1 : 0),
                                      Param(*was == Class::spam ? 1 : 0)})
                                 .affected()
                           : c_.exec("INSERT INTO linear_messages (digest, class) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING",
                                     {Param::digest(digest), Param(c == Class::spam ? 1 : 0)})
                                 .affected();
        if (n == 0) throw RetryableError(c_.location(), "another process learned the same message at the same time");
    }

    void delete_uncounted(const Digest& digest) override {
        c_.exec("DELETE FROM linear_messages WHERE digest = $1", {Param::digest(digest)});
    }

    void keep_linear_sample(Class c, std::uint64_t position, const Digest& digest, std::string_view blob) override {
        db_.keep_linear_sample(c, position, digest, blob);
    }
    void keep_model_settings(std::string_view text) override { db_.keep_model_settings(text); }

    std::optional<LinearSample> linear_sample(Class c, std::uint64_t position) override {
        return db_.linear_sample(c, position);
    }

    void log_model_change(const std::vector<model::FeatureId>* ids) override {
        lock();
        db_.log_model_change(ids);
    }

    bool add_contact(std::string_view address, std::string_view source, std::int64_t now) override {
        return db_.add_contact(address, source, now);
    }

    bool remove_contact(std::string_view address) override { return db_.remove_contact(address); }

    void record_correction(const Correction& c) override {
        const std::string undo = c.undo ? encode_correction_undo(*c.undo) : std::string();
        c_.exec("INSERT INTO corrections (at, verdict, corrected_to, signature, by_whom, undo, layer_user, layer_sender)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                {Param(c.at), Param(static_cast<int>(c.verdict)), Param(c.to == Class::spam ? 1 : 0),
                 c.signature ? Param::digest(*c.signature) : Param(), Param::text(c.by),
                 c.undo ? Param::bytes(undo) : Param(), Param::text(c.undo ? layer_user_of(*c.undo) : std::string_view("")),
                 Param::text(c.undo ? layer_sender_of(*c.undo) : std::string_view(""))});
    }

    std::optional<CorrectionRecord> latest_correction(const Digest& signature) override {
        // Locked: two undos of one correction at once would both put the model back.
        auto r = c_.exec("SELECT id, verdict, corrected_to, at, by_whom, undo FROM corrections WHERE signature = $1"
                         " AND undone_at IS NULL ORDER BY id DESC LIMIT 1 FOR UPDATE",
                         {Param::digest(signature)});
        if (r.rows() == 0) return std::nullopt;
        CorrectionRecord out;
        out.id = r.integer(0, 0);
        out.verdict = static_cast<model::Verdict>(r.integer(0, 1));
        out.to = r.integer(0, 2) == 1 ? Class::spam : Class::ham;
        out.at = r.integer(0, 3);
        out.by = r.bytes(0, 4);
        if (!r.null(0, 5)) {
            out.undo = decode_correction_undo(r.bytes(0, 5));
            if (!out.undo) fail("a correction's undo record is damaged; refusing to undo it");
        }
        return out;
    }

    void mark_undone(std::int64_t correction_id, std::int64_t at, std::string_view by) override {
        c_.exec("UPDATE corrections SET undone_at = $2, undone_by = $3 WHERE id = $1",
                {Param(correction_id), Param(at), Param::text(by)});
        c_.exec("DELETE FROM corrections WHERE signature = (SELECT signature FROM corrections WHERE id = $1)"
                " AND undone_at IS NOT NULL AND id NOT IN (SELECT id FROM corrections WHERE signature ="
                " (SELECT signature FROM corrections WHERE id = $1) AND undone_at IS NOT NULL"
                " ORDER BY id DESC LIMIT $2)",
                {Param(correction_id), Param(static_cast<std::int64_t>(undone_kept))});
    }

    std::vector<CorrectionRecord> standing_layer_corrections(std::string_view user) override {
        if (user.empty()) return {};  // one user's, never all
        return layer_corrections_of(c_, user, true);  // locked: an undo at the same time waits, then finds it changed
    }

    std::vector<CorrectionRecord> standing_sender_corrections(std::string_view sender) override {
        if (sender.empty()) return {};
        return sender_corrections_of(c_, sender);  // locked, as above
    }

    void set_correction_undo(std::int64_t correction_id, const CorrectionUndo& undo) override {
        const std::string blob = encode_correction_undo(undo);
        c_.exec("UPDATE corrections SET undo = $2, layer_user = $3, layer_sender = $4 WHERE id = $1",
                {Param(correction_id), Param::bytes(blob), Param::text(layer_user_of(undo)),
                 Param::text(layer_sender_of(undo))});
    }

    void defer_correction(const Digest& signature, Class to, std::int64_t now, std::string_view by) override {
        c_.exec("INSERT INTO deferred_corrections (signature, corrected_to, requested_at, requested_by)"
                " VALUES ($1, $2, $3, $4) ON CONFLICT (signature) DO UPDATE SET corrected_to = excluded.corrected_to,"
                " requested_at = excluded.requested_at, requested_by = excluded.requested_by",
                {Param::digest(signature), Param(to == Class::spam ? 1 : 0), Param(now), Param::text(by)});
    }

    std::optional<DeferredCorrection> drop_deferred_correction(const Digest& signature) override {
        auto r = c_.exec("DELETE FROM deferred_corrections WHERE signature = $1 RETURNING corrected_to, requested_by",
                         {Param::digest(signature)});
        if (r.rows() == 0) return std::nullopt;
        return DeferredCorrection{r.integer(0, 0) == 1 ? Class::spam : Class::ham, std::string(r.bytes(0, 1))};
    }

    std::vector<ReadyCorrection> take_ready_corrections(std::size_t limit) override {
        // Rows another daemon is taking right now are skipped: each is trained by one of them.
        auto r = c_.exec(
            "DELETE FROM deferred_corrections WHERE signature IN (SELECT d.signature FROM deferred_corrections d"
            " JOIN signatures s ON s.id = d.signature ORDER BY d.requested_at LIMIT $1 FOR UPDATE OF d SKIP LOCKED)"
            " RETURNING signature, corrected_to, requested_at, requested_by",
            {Param(static_cast<std::int64_t>(limit))});
        struct Ready {
            std::int64_t at;
            Digest id;
            Class to;
            std::string by;
        };
        std::vector<Ready> ready;
        for (int i = 0; i < r.rows(); ++i) {
            Digest id{};
            const auto bytes = r.bytes(i, 0);
            if (bytes.size() != id.size()) continue;
            std::memcpy(id.data(), bytes.data(), id.size());
            ready.push_back({r.integer(i, 2), id, r.integer(i, 1) == 1 ? Class::spam : Class::ham,
                             std::string(r.bytes(i, 3))});
        }
        std::sort(ready.begin(), ready.end(), [](const Ready& a, const Ready& b) { return a.at < b.at; });
        std::vector<ReadyCorrection> out;
        for (auto& c : ready) {
            if (auto scan = db_.find_scan(c.id)) out.push_back({std::move(*scan), c.to, std::move(c.by)});
        }
        return out;
    }

    void commit() override {
        c_.run("COMMIT");
        open_ = false;
    }

    [[noreturn]] void fail(const std::string& what) const override { c_.fail(what); }

private:
    // The commit lock, taken once before the first feature row is read or written.
    void lock() {
        if (locked_) return;
        db_.lock_commits();
        locked_ = true;
    }

    PgDatabase& db_;
    pg::Connection& c_;
    bool open_ = false;
    bool locked_ = false;
};

}  // namespace

std::unique_ptr<WriteTransaction> make_pg_transaction(PgDatabase& db) { return std::make_unique<PgTransaction>(db); }

}  // namespace mailsift::store
