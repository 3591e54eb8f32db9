// Export and import of the whole model on SQLite: the rows read out in one
// read transaction, or written in one write transaction, in the text format
// of ../model_format.hpp.
#include "internal.hpp"

#include <sqlite3.h>

#include <istream>
#include <ostream>

#include "../model_format.hpp"

namespace mailsift::store {

namespace {

std::string_view column_text(sqlite3_stmt* s, int i) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
    return p == nullptr ? std::string_view{} : std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(s, i)));
}

std::string_view column_blob(sqlite3_stmt* s, int i) {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(s, i));
    return p == nullptr ? std::string_view{} : std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(s, i)));
}

bool is_constraint(int rc) { return (rc & 0xFF) == SQLITE_CONSTRAINT; }

}  // namespace

ModelSummary SqliteDatabase::export_model(std::ostream& out) {
    ModelSummary sum;
    exec("BEGIN");  // one consistent snapshot
    try {
        LinearWeights state;
        {
            Statement q(db_, "SELECT hash_bits, bias, nb_weight, seen_spam, seen_ham FROM linear_state WHERE id = 0", path_);
            if (sqlite3_step(q.get()) != SQLITE_ROW) fail(std::string("cannot read the linear scorer's state: ") + error_text());
            state.hash_bits = static_cast<unsigned>(sqlite3_column_int(q.get(), 0));
            state.bias = sqlite3_column_double(q.get(), 1);
            state.nb_weight = sqlite3_column_double(q.get(), 2);
            state.seen_spam = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 3));
            state.seen_ham = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 4));
        }
        const std::optional<RefitLayer> refit =
            state.hash_bits != 0 ? linear_refit_layer() : std::nullopt;  // in this snapshot
        const bool with_refit = refit && refit->hash_bits == state.hash_bits;
        ModelWriter w(out, state.hash_bits != 0, model_settings(), with_refit);
        int rc;
        {
            Statement q(db_, "SELECT class, messages, occurrences, presences FROM classes ORDER BY class DESC", path_);
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                w.class_totals(sqlite3_column_int(q.get(), 0) == 1 ? Class::spam : Class::ham, sqlite3_column_int64(q.get(), 1),
                               sqlite3_column_int64(q.get(), 2), sqlite3_column_int64(q.get(), 3));
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read class totals: ") + error_text());
        }
        {
            Statement q(db_,
                        "SELECT id, spam_occurrences, ham_occurrences, spam_presences, ham_presences, last_seen, text"
                        " FROM features ORDER BY id",
                        path_);
            FeatureRecord f;
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                f.id = static_cast<model::FeatureId>(sqlite3_column_int64(q.get(), 0));
                for (int k = 0; k < 4; ++k) f.counts[static_cast<std::size_t>(k)] = sqlite3_column_int64(q.get(), k + 1);
                f.last_seen = sqlite3_column_int64(q.get(), 5);
                f.text = column_text(q.get(), 6);
                w.feature(f);
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read features: ") + error_text());
        }
        {
            Statement q(db_, "SELECT digest, class, learned_at, features FROM messages ORDER BY digest", path_);
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                const Digest digest = stored_digest(column_blob(q.get(), 0));
                if (!w.message(digest, sqlite3_column_int(q.get(), 1) == 1 ? Class::spam : Class::ham,
                               sqlite3_column_int64(q.get(), 2), column_blob(q.get(), 3))) {
                    fail("corrupt feature list of a learned message; cannot export it");
                }
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read learned messages: ") + error_text());
        }
        {
            Statement q(db_, "SELECT address, source, added_at FROM contacts ORDER BY address", path_);
            while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
                w.contact(column_text(q.get(), 0), column_text(q.get(), 1), sqlite3_column_int64(q.get(), 2));
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read contacts: ") + error_text());
        }
        if (state.hash_bits != 0) {
            w.linear_state(state);
            // The pages with the slot deltas not yet folded into them added: the weights as readers see them,
            // less the per-user layers, whose corrections are not part of an export.
            auto deltas = held_slot_deltas(0, state.hash_bits, "damaged linear weights: slot deltas; cannot export them");
            leave_out_layers(layer_corrections(""), state.hash_bits, deltas, sum);
            const PageFold fold(deltas);
            LinearPageMerge merge(fold, [&](std::uint32_t number, std::string_view page) { w.linear_page(number, page); });
            Statement pages(db_, "SELECT page, weights FROM linear_pages ORDER BY page", path_);
            while ((rc = sqlite3_step(pages.get())) == SQLITE_ROW) {
                const auto number = static_cast<std::uint32_t>(sqlite3_column_int64(pages.get(), 0));
                if (!merge.stored(number, column_blob(pages.get(), 1))) {
                    fail("damaged linear weights: page " + std::to_string(number) + "; cannot export them");
                }
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read the linear weights: ") + error_text());
            merge.finish();
            if (with_refit) w.linear_refit(*refit);
            Statement samples(db_, "SELECT class, position, digest, prefix FROM linear_samples ORDER BY class DESC, position",
                              path_);
            while ((rc = sqlite3_step(samples.get())) == SQLITE_ROW) {
                const Digest digest = stored_digest(column_blob(samples.get(), 2));
                const auto prefix = decode_linear_sample(column_blob(samples.get(), 3));
                if (!prefix) fail("damaged rehearsal sample; cannot export it");
                w.linear_sample(sqlite3_column_int(samples.get(), 0) == 1 ? Class::spam : Class::ham,
                                static_cast<std::uint64_t>(sqlite3_column_int64(samples.get(), 1)), digest, *prefix);
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read the rehearsal samples: ") + error_text());
            Statement uncounted(db_, "SELECT digest, class FROM linear_messages ORDER BY digest", path_);
            while ((rc = sqlite3_step(uncounted.get())) == SQLITE_ROW) {
                const Digest digest = stored_digest(column_blob(uncounted.get(), 0));
                w.linear_message(digest, sqlite3_column_int(uncounted.get(), 1) == 1 ? Class::spam : Class::ham);
            }
            if (rc != SQLITE_DONE) fail(std::string("cannot read learned messages: ") + error_text());
        }
        ModelSummary written = w.end();
        written.layer_corrections_left_out = sum.layer_corrections_left_out;
        written.layer_users_left_out = sum.layer_users_left_out;
        sum = written;
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return sum;
}

namespace {

// Rows of an import, written as they are read.
class SqliteSink final : public ModelSink {
public:
    SqliteSink(sqlite3* db, const std::filesystem::path& path, std::function<void(const std::string&)> fail)
        : set_class_(db, "UPDATE classes SET messages = ?2, occurrences = ?3, presences = ?4 WHERE class = ?1", path),
          insert_feature_(db,
                          "INSERT INTO features (id, spam_occurrences, ham_occurrences, spam_presences,"
                          " ham_presences, last_seen, text) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                          path),
          insert_message_(db, "INSERT INTO messages (digest, class, learned_at, features) VALUES (?1, ?2, ?3, ?4)", path),
          insert_contact_(db, "INSERT INTO contacts (address, source, added_at) VALUES (?1, ?2, ?3)", path),
          set_linear_(db,
                      "UPDATE linear_state SET hash_bits = ?1, bias = ?2, nb_weight = ?3, seen_spam = ?4, seen_ham = ?5,"
                      " samples_dropped = 0, refit_mark = ?4 + ?5 WHERE id = 0",  // imported as its weights were: no refit due
                      path),
          insert_page_(db,
                       "INSERT INTO linear_pages (page, seq, weights)"
                       " VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM model_changes), ?2)",
                       path),
          insert_sample_(db, "INSERT INTO linear_samples (class, position, digest, prefix) VALUES (?1, ?2, ?3, ?4)", path),
          insert_uncounted_(db, "INSERT INTO linear_messages (digest, class) VALUES (?1, ?2)", path),
          set_settings_(db, "INSERT INTO model_settings (id, text) VALUES (0, ?1) ON CONFLICT (id) DO UPDATE SET text = excluded.text",
                        path),
          fail_(std::move(fail)),
          db_(db),
          path_(path) {}

    void model_settings(std::string_view text) override {
        Use s(set_settings_);
        sqlite3_bind_text(*s, 1, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
        step(*s);
    }
    void linear_state(const LinearWeights& w) override {
        Use s(set_linear_);
        sqlite3_bind_int(*s, 1, static_cast<int>(w.hash_bits));
        sqlite3_bind_double(*s, 2, w.bias);
        sqlite3_bind_double(*s, 3, w.nb_weight);
        sqlite3_bind_int64(*s, 4, static_cast<sqlite3_int64>(w.seen_spam));
        sqlite3_bind_int64(*s, 5, static_cast<sqlite3_int64>(w.seen_ham));
        step(*s);
    }
    bool linear_page(std::uint32_t number, std::string_view page, std::uint64_t) override {
        Use s(insert_page_);
        sqlite3_bind_int64(*s, 1, number);
        sqlite3_bind_blob(*s, 2, page.data(), static_cast<int>(page.size()), SQLITE_STATIC);
        return step(*s);
    }
    void linear_refit(const RefitLayer& layer) override { put_refit_layer(db_, path_, layer); }
    bool linear_message(const Digest& digest, Class c, std::uint64_t) override {
        Use s(insert_uncounted_);
        bind_digest(*s, 1, digest);
        sqlite3_bind_int(*s, 2, c == Class::spam ? 1 : 0);
        return step(*s);
    }
    bool linear_sample(Class c, std::uint64_t position, const Digest& digest, std::string_view blob, std::uint64_t) override {
        Use s(insert_sample_);
        sqlite3_bind_int(*s, 1, c == Class::spam ? 1 : 0);
        sqlite3_bind_int64(*s, 2, static_cast<sqlite3_int64>(position));
        bind_digest(*s, 3, digest);
        sqlite3_bind_blob(*s, 4, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
        return step(*s);
    }

    void class_totals(Class c, std::int64_t messages, std::int64_t occurrences, std::int64_t presences) override {
        Use s(set_class_);
        sqlite3_bind_int(*s, 1, c == Class::spam ? 1 : 0);
        sqlite3_bind_int64(*s, 2, messages);
        sqlite3_bind_int64(*s, 3, occurrences);
        sqlite3_bind_int64(*s, 4, presences);
        step(*s);
    }
    bool feature(const FeatureRecord& f, std::uint64_t) override {
        Use s(insert_feature_);
        sqlite3_bind_int64(*s, 1, static_cast<sqlite3_int64>(f.id));
        for (int k = 0; k < 4; ++k) sqlite3_bind_int64(*s, k + 2, f.counts[static_cast<std::size_t>(k)]);
        sqlite3_bind_int64(*s, 6, f.last_seen);
        sqlite3_bind_text(*s, 7, f.text.data(), static_cast<int>(f.text.size()), SQLITE_STATIC);
        return step(*s);
    }
    bool message(const Digest& digest, Class c, std::int64_t learned_at, std::string_view features, std::uint64_t) override {
        Use s(insert_message_);
        bind_digest(*s, 1, digest);
        sqlite3_bind_int(*s, 2, c == Class::spam ? 1 : 0);
        sqlite3_bind_int64(*s, 3, learned_at);
        sqlite3_bind_blob(*s, 4, features.data(), static_cast<int>(features.size()), SQLITE_STATIC);
        return step(*s);
    }
    bool contact(std::string_view address, std::string_view source, std::int64_t added_at, std::uint64_t) override {
        Use s(insert_contact_);
        sqlite3_bind_text(*s, 1, address.data(), static_cast<int>(address.size()), SQLITE_STATIC);
        sqlite3_bind_text(*s, 2, source.data(), static_cast<int>(source.size()), SQLITE_STATIC);
        sqlite3_bind_int64(*s, 3, added_at);
        return step(*s);
    }

private:
    // false: a constraint (the key is there already).
    bool step(sqlite3_stmt* s) {
        const int rc = sqlite3_step(s);
        if (is_constraint(rc)) return false;
        if (rc != SQLITE_DONE) fail_("cannot import: ");
        return true;
    }
    Statement set_class_, insert_feature_, insert_message_, insert_contact_, set_linear_, insert_page_, insert_sample_,
        insert_uncounted_, set_settings_;
    std::function<void(const std::string&)> fail_;
    sqlite3* db_;
    std::filesystem::path path_;
};

}  // namespace

ModelSummary SqliteDatabase::import_model(std::istream& in, const std::string& name) {
    if (mode_ != Mode::read_write) fail("database was opened read-only");
    ModelSummary sum;
    exec("BEGIN IMMEDIATE");
    try {
        {
            Statement q(db_,
                        "SELECT (SELECT count(*) FROM features), (SELECT count(*) FROM messages),"
                        " (SELECT count(*) FROM contacts),"
                        " (SELECT count(*) FROM classes WHERE messages <> 0 OR occurrences <> 0 OR presences <> 0)",
                        path_);
            if (sqlite3_step(q.get()) != SQLITE_ROW) fail(std::string("cannot read the database: ") + error_text());
            const auto features = sqlite3_column_int64(q.get(), 0), messages = sqlite3_column_int64(q.get(), 1),
                       contacts = sqlite3_column_int64(q.get(), 2), totals = sqlite3_column_int64(q.get(), 3);
            if (features != 0 || messages != 0 || contacts != 0 || totals != 0) {
                fail("already holds a model (" + std::to_string(features) + " features, " + std::to_string(messages) +
                     " learned messages, " + std::to_string(contacts) +
                     " contacts); import only into a new or empty database");
            }
        }
        SqliteSink sink(db_, path_, [this](const std::string& what) { fail(what + error_text()); });
        sum = read_model(in, name, sink);
        log_model_change(nullptr);
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return sum;
}

}  // namespace mailsift::store
