// Export and import of the whole model on PostgreSQL, in the text format of
// ../model_format.hpp: read out through cursors in one REPEATABLE READ
// transaction; written in batches of rows (one statement each) in one
// transaction under the commit lock.
#include <cstdio>
#include <cstdlib>
#include <set>
#include <istream>
#include <ostream>

#include "../codec.hpp"
#include "../model_format.hpp"
#include "pg_database.hpp"

namespace mailsift::store {

using pg::Param;

namespace {

std::string hex16(std::uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

// Rows of an import, written a batch at a time. A batch that breaks a key is
// written again row by row to find the duplicate's line.
class PgSink final : public ModelSink {
public:
    PgSink(pg::Connection& c, std::string name) : c_(c), name_(std::move(name)) {}

    void class_totals(Class cl, std::int64_t messages, std::int64_t occurrences, std::int64_t presences) override {
        c_.exec("UPDATE classes SET messages = $2, occurrences = $3, presences = $4 WHERE class = $1",
                {Param(cl == Class::spam ? 1 : 0), Param(messages), Param(occurrences), Param(presences)});
    }
    bool feature(const FeatureRecord& f, std::uint64_t line) override {
        features_.push_back({{Param(f.id), Param(f.counts[0]), Param(f.counts[1]), Param(f.counts[2]), Param(f.counts[3]),
                              Param(f.last_seen), Param::text(pg::hex(f.text))},
                             line,
                             "feature " + hex16(f.id)});
        if (features_.size() >= batch) write(features_, feature_sql, 7);
        return true;
    }
    bool message(const Digest& digest, Class cl, std::int64_t learned_at, std::string_view features,
                 std::uint64_t line) override {
        messages_.push_back({{Param::text(pg::hex({reinterpret_cast<const char*>(digest.data()), digest.size()})),
                              Param(cl == Class::spam ? 1 : 0), Param(learned_at), Param::text(pg::hex(features))},
                             line,
                             "message " + pg::hex({reinterpret_cast<const char*>(digest.data()), digest.size()})});
        if (messages_.size() >= batch) write(messages_, message_sql, 4);
        return true;
    }
    bool contact(std::string_view address, std::string_view source, std::int64_t added_at, std::uint64_t line) override {
        contacts_.push_back({{Param::text(pg::hex(address)), Param::text(pg::hex(source)), Param(added_at)},
                             line,
                             "contact " + std::string(address)});
        if (contacts_.size() >= batch) write(contacts_, contact_sql, 3);
        return true;
    }
    void model_settings(std::string_view text) override {
        c_.exec("INSERT INTO model_settings (id, text) VALUES (0, $1) ON CONFLICT (id) DO UPDATE SET text = excluded.text",
                {Param::text(text)});
    }
    void linear_state(const LinearWeights& w) override {
        char bias[40], nb[40];
        std::snprintf(bias, sizeof bias, "%.17g", w.bias);
        std::snprintf(nb, sizeof nb, "%.17g", w.nb_weight);
        // Imported as its weights were: no refit due.
        c_.exec("UPDATE linear_state SET hash_bits = $1, bias = $2::float8, nb_weight = $3::float8, seen_spam = $4,"
                " seen_ham = $5, samples_dropped = 0, refit_mark = $4::bigint + $5::bigint WHERE id = 0",
                {Param(static_cast<int>(w.hash_bits)), Param::text(bias), Param::text(nb),
                 Param(static_cast<std::int64_t>(w.seen_spam)), Param(static_cast<std::int64_t>(w.seen_ham))});
    }
    bool linear_page(std::uint32_t number, std::string_view page, std::uint64_t) override {
        if (!pages_.insert(number).second) return false;
        c_.exec("INSERT INTO linear_pages (page, seq, weights)"
                " VALUES ($1, (SELECT coalesce(max(seq), 0) + 1 FROM model_changes), $2)",
                {Param(static_cast<std::int64_t>(number)), Param::bytes(page)});
        return true;
    }
    void linear_refit(const RefitLayer& layer) override { PgDatabase::put_refit_layer(c_, layer); }
    bool linear_message(const Digest& digest, Class cl, std::uint64_t line) override {
        uncounted_.push_back({{Param::text(pg::hex({reinterpret_cast<const char*>(digest.data()), digest.size()})),
                               Param(cl == Class::spam ? 1 : 0)},
                              line,
                              "linear message " + pg::hex({reinterpret_cast<const char*>(digest.data()), digest.size()})});
        if (uncounted_.size() >= batch) write(uncounted_, uncounted_sql, 2);
        return true;
    }
    bool linear_sample(Class cl, std::uint64_t position, const Digest& digest, std::string_view blob, std::uint64_t) override {
        if (!samples_.insert({cl == Class::spam ? 1 : 0, position}).second) return false;
        c_.exec("INSERT INTO linear_samples (class, position, digest, prefix) VALUES ($1, $2, $3, $4)",
                {Param(cl == Class::spam ? 1 : 0), Param(static_cast<std::int64_t>(position)), Param::digest(digest),
                 Param::bytes(blob)});
        return true;
    }
    void flush() override {
        write(features_, feature_sql, 7);
        write(messages_, message_sql, 4);
        write(contacts_, contact_sql, 3);
        write(uncounted_, uncounted_sql, 2);
    }

private:
    struct Row {
        std::vector<Param> values;
        std::uint64_t line;
        std::string what;
    };
    static constexpr std::size_t batch = 10000;
    // $1..$n are arrays of the columns (integers as text, bytes as hex).
    static constexpr const char* feature_sql =
        "INSERT INTO features (id, spam_occurrences, ham_occurrences, spam_presences, ham_presences, last_seen, text)"
        " SELECT a, b, c, d, e, f, decode(g, 'hex') FROM unnest($1::bigint[], $2::bigint[], $3::bigint[],"
        " $4::bigint[], $5::bigint[], $6::bigint[], $7::text[]) AS u(a, b, c, d, e, f, g)";
    static constexpr const char* message_sql =
        "INSERT INTO messages (digest, class, learned_at, features) SELECT decode(a, 'hex'), b, c, decode(d, 'hex')"
        " FROM unnest($1::text[], $2::smallint[], $3::bigint[], $4::text[]) AS u(a, b, c, d)";
    static constexpr const char* uncounted_sql =
        "INSERT INTO linear_messages (digest, class) SELECT decode(a, 'hex'), b FROM unnest($1::text[], $2::smallint[]) AS u(a, b)";
    static constexpr const char* contact_sql =
        "INSERT INTO contacts (address, source, added_at) SELECT decode(a, 'hex'), decode(b, 'hex'), c"
        " FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(a, b, c)";

    std::vector<Param> arrays(const std::vector<Row>& rows, std::size_t from, std::size_t to, int columns) {
        std::vector<Param> p;
        for (int k = 0; k < columns; ++k) {
            std::string a = "{";
            for (std::size_t i = from; i < to; ++i) {
                if (i > from) a += ',';
                a += '"' + rows[i].values[static_cast<std::size_t>(k)].value + '"';  // an empty value is an element too
            }
            a += '}';
            p.push_back(Param::text(a));
        }
        return p;
    }

    void write(std::vector<Row>& rows, const char* sql, int columns) {
        if (rows.empty()) return;
        c_.run("SAVEPOINT mailsift_import");
        try {
            c_.exec(sql, arrays(rows, 0, rows.size(), columns));
            c_.run("RELEASE SAVEPOINT mailsift_import");
        } catch (const pg::StatementError& e) {
            if (e.sqlstate() != "23505") throw;  // not a duplicate key
            c_.run("ROLLBACK TO SAVEPOINT mailsift_import");
            for (std::size_t i = 0; i < rows.size(); ++i) {
                try {
                    c_.exec(sql, arrays(rows, i, i + 1, columns));
                } catch (const pg::StatementError& row_error) {
                    if (row_error.sqlstate() == "23505") format_error(name_, rows[i].line, rows[i].what + " appears twice");
                    throw;
                }
            }
            c_.run("RELEASE SAVEPOINT mailsift_import");
        }
        rows.clear();
    }

    pg::Connection& c_;
    std::string name_;
    std::vector<Row> features_, messages_, contacts_, uncounted_;
    std::set<std::uint32_t> pages_;                      // written: a second one is a duplicate
    std::set<std::pair<int, std::uint64_t>> samples_;
};

}  // namespace

ModelSummary PgDatabase::export_model(std::ostream& out) {
    return snapshot([&] {  // one consistent snapshot
        ModelSummary sum;  // the layers left out; the rest is the writer's
        LinearWeights state;
        {
            auto r = conn_.exec("SELECT hash_bits, bias::text, nb_weight::text, seen_spam, seen_ham FROM linear_state WHERE id = 0");
            if (r.rows() != 1) conn_.fail("the linear scorer's state is missing");
            state.hash_bits = static_cast<unsigned>(r.integer(0, 0));
            state.bias = std::strtod(std::string(r.bytes(0, 1)).c_str(), nullptr);
            state.nb_weight = std::strtod(std::string(r.bytes(0, 2)).c_str(), nullptr);
            state.seen_spam = static_cast<std::uint64_t>(r.integer(0, 3));
            state.seen_ham = static_cast<std::uint64_t>(r.integer(0, 4));
        }
        const std::optional<RefitLayer> refit =
            state.hash_bits != 0 ? linear_refit_layer() : std::nullopt;  // in this snapshot
        const bool with_refit = refit && refit->hash_bits == state.hash_bits;
        ModelWriter w(out, state.hash_bits != 0, model_settings(), with_refit);
        {
            auto r = conn_.exec("SELECT class, messages, occurrences, presences FROM classes ORDER BY class DESC");
            for (int i = 0; i < r.rows(); ++i) {
                w.class_totals(r.integer(i, 0) == 1 ? Class::spam : Class::ham, r.integer(i, 1), r.integer(i, 2),
                               r.integer(i, 3));
            }
        }
        conn_.run("DECLARE mailsift_features NO SCROLL CURSOR FOR SELECT id, spam_occurrences, ham_occurrences,"
                  " spam_presences, ham_presences, last_seen, text FROM features ORDER BY id");
        for (;;) {
            auto r = conn_.exec("FETCH 20000 FROM mailsift_features");
            if (r.rows() == 0) break;
            FeatureRecord f;
            for (int i = 0; i < r.rows(); ++i) {
                f.id = static_cast<model::FeatureId>(r.integer(i, 0));
                for (int k = 0; k < 4; ++k) f.counts[static_cast<std::size_t>(k)] = r.integer(i, k + 1);
                f.last_seen = r.integer(i, 5);
                f.text = r.bytes(i, 6);
                w.feature(f);
            }
        }
        conn_.run("DECLARE mailsift_messages NO SCROLL CURSOR FOR SELECT digest, class, learned_at, features"
                  " FROM messages ORDER BY digest");
        for (;;) {
            auto r = conn_.exec("FETCH 20000 FROM mailsift_messages");
            if (r.rows() == 0) break;
            for (int i = 0; i < r.rows(); ++i) {
                const Digest digest = stored_digest(r.bytes(i, 0));
                if (!w.message(digest, r.integer(i, 1) == 1 ? Class::spam : Class::ham, r.integer(i, 2), r.bytes(i, 3))) {
                    conn_.fail("corrupt feature list of a learned message; cannot export it");
                }
            }
        }
        {
            auto r = conn_.exec("SELECT address, source, added_at FROM contacts ORDER BY address");
            for (int i = 0; i < r.rows(); ++i) w.contact(r.bytes(i, 0), r.bytes(i, 1), r.integer(i, 2));
        }
        if (state.hash_bits != 0) {
            w.linear_state(state);
            // The pages with the slot deltas not yet folded into them added: the weights as readers see them,
            // less the per-user layers, whose corrections are not part of an export.
            auto deltas = held_slot_deltas(0, state.hash_bits, "damaged linear weights: slot deltas; cannot export them");
            leave_out_layers(layer_corrections_of(conn_, "", false), state.hash_bits, deltas, sum);
            const PageFold fold(deltas);
            LinearPageMerge merge(fold, [&](std::uint32_t number, std::string_view page) { w.linear_page(number, page); });
            auto pages = conn_.exec("SELECT page, weights FROM linear_pages ORDER BY page");
            for (int i = 0; i < pages.rows(); ++i) {
                const auto number = static_cast<std::uint32_t>(pages.integer(i, 0));
                if (!merge.stored(number, pages.bytes(i, 1))) {
                    conn_.fail("damaged linear weights: page " + std::to_string(number) + "; cannot export them");
                }
            }
            merge.finish();
            if (with_refit) w.linear_refit(*refit);
            auto samples = conn_.exec("SELECT class, position, digest, prefix FROM linear_samples ORDER BY class DESC, position");
            for (int i = 0; i < samples.rows(); ++i) {
                const Digest digest = stored_digest(samples.bytes(i, 2));
                const auto prefix = decode_linear_sample(samples.bytes(i, 3));
                if (!prefix) conn_.fail("damaged rehearsal sample; cannot export it");
                w.linear_sample(samples.integer(i, 0) == 1 ? Class::spam : Class::ham,
                                static_cast<std::uint64_t>(samples.integer(i, 1)), digest, *prefix);
            }
            conn_.run("DECLARE mailsift_uncounted NO SCROLL CURSOR FOR SELECT digest, class FROM linear_messages ORDER BY digest");
            for (;;) {
                auto r = conn_.exec("FETCH 20000 FROM mailsift_uncounted");
                if (r.rows() == 0) break;
                for (int i = 0; i < r.rows(); ++i) {
                    const Digest digest = stored_digest(r.bytes(i, 0));
                    w.linear_message(digest, r.integer(i, 1) == 1 ? Class::spam : Class::ham);
                }
            }
        }
        ModelSummary written = w.end();
        written.layer_corrections_left_out = sum.layer_corrections_left_out;
        written.layer_users_left_out = sum.layer_users_left_out;
        return written;
    });
}

ModelSummary PgDatabase::import_model(std::istream& in, const std::string& name) {
    if (mode_ != Mode::read_write) conn_.fail("database was opened read-only");
    return transaction([&] {
        lock_commits();
        auto r = conn_.exec(
            "SELECT (SELECT count(*) FROM features), (SELECT count(*) FROM messages), (SELECT count(*) FROM contacts),"
            " (SELECT count(*) FROM classes WHERE messages <> 0 OR occurrences <> 0 OR presences <> 0)");
        const auto features = r.integer(0, 0), messages = r.integer(0, 1), contacts = r.integer(0, 2),
                   totals = r.integer(0, 3);
        if (features != 0 || messages != 0 || contacts != 0 || totals != 0) {
            conn_.fail("already holds a model (" + std::to_string(features) + " features, " + std::to_string(messages) +
                       " learned messages, " + std::to_string(contacts) +
                       " contacts); import only into a new or empty database");
        }
        PgSink sink(conn_, name);
        const ModelSummary sum = read_model(in, name, sink);
        log_model_change(nullptr);
        return sum;
    });
}

}  // namespace mailsift::store
