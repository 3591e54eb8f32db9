// The linear scorer's weights on PostgreSQL: linear_state, linear_pages,
// linear_deltas and linear_refit.
#include <string>

#include "../codec.hpp"
#include "pg_database.hpp"

namespace mailsift::store {

using pg::Param;
using pg::double_text;
using pg::text_double;

LinearWeights PgDatabase::linear_weights_since(std::uint64_t sequence, const PageVisitor& visit) {
    LinearWeights out;
    snapshot([&] {  // the state, the pages and the sequence of one moment
        auto state = conn_.exec(
            "SELECT hash_bits, bias::text, nb_weight::text, seen_spam, seen_ham, samples_dropped, refit_mark"
            " FROM linear_state WHERE id = 0");
        if (state.rows() != 1) conn_.fail("the linear scorer's state is missing");
        out.hash_bits = static_cast<unsigned>(state.integer(0, 0));
        out.bias = text_double(state.bytes(0, 1));
        out.nb_weight = text_double(state.bytes(0, 2));
        out.seen_spam = static_cast<std::uint64_t>(state.integer(0, 3));
        out.seen_ham = static_cast<std::uint64_t>(state.integer(0, 4));
        out.samples_dropped = static_cast<std::uint64_t>(state.integer(0, 5));
        out.refit_mark = static_cast<std::uint64_t>(state.integer(0, 6));
        out.sequence = model_sequence();
        auto r = conn_.exec("SELECT page, weights FROM linear_pages WHERE seq > $1",
                            {Param(static_cast<std::int64_t>(sequence))});
        std::vector<float> page;  // one buffer for every page handed to `visit`
        for (int i = 0; i < r.rows(); ++i) {
            const std::int64_t number = r.integer(i, 0);
            if (!decode_linear_page(r.bytes(i, 1), page) || number < 0 ||
                static_cast<std::uint64_t>(number) * linear_page_slots >= (std::uint64_t{1} << out.hash_bits)) {
                conn_.fail("damaged linear weights: page " + std::to_string(number));
            }
            if (visit) {
                visit(static_cast<std::uint32_t>(number), page);
            } else {
                out.pages.emplace_back(static_cast<std::uint32_t>(number), std::move(page));
                page = {};
            }
        }
        out.deltas = held_slot_deltas(sequence, out.hash_bits, "damaged linear weights: slot deltas");
    });
    return out;
}

std::vector<SlotDelta> PgDatabase::held_slot_deltas(std::uint64_t since, unsigned hash_bits, const char* damaged) {
    std::vector<SlotDelta> out;
    auto d = conn_.exec("SELECT slots FROM linear_deltas WHERE seq > $1 ORDER BY id", {Param(static_cast<std::int64_t>(since))});
    for (int i = 0; i < d.rows(); ++i) {
        if (!decode_slot_deltas(d.bytes(i, 0), std::size_t{1} << hash_bits, out)) conn_.fail(damaged);
    }
    return out;
}

std::optional<RefitLayer> PgDatabase::linear_refit_layer() {
    auto r = conn_.exec("SELECT hash_bits, bias::text, nb_weight::text, slots FROM linear_refit WHERE id = 0");
    if (r.rows() == 0) return std::nullopt;
    const std::int64_t bits = r.integer(0, 0);
    if (bits <= 0 || bits > 30) conn_.fail("damaged linear weights: the last refit's hash_bits");
    RefitLayer out;
    out.hash_bits = static_cast<unsigned>(bits);
    out.bias = text_double(r.bytes(0, 1));
    out.nb_weight = text_double(r.bytes(0, 2));
    if (!decode_slot_deltas(r.bytes(0, 3), std::size_t{1} << out.hash_bits, out.slots)) {
        conn_.fail("damaged linear weights: the last refit's slot deltas");
    }
    return out;
}

void PgDatabase::put_refit_layer(pg::Connection& c, const RefitLayer& layer) {
    c.exec("INSERT INTO linear_refit (id, hash_bits, bias, nb_weight, slots) VALUES (0, $1, $2::float8, $3::float8, $4)"
           " ON CONFLICT (id) DO UPDATE SET hash_bits = excluded.hash_bits, bias = excluded.bias,"
           " nb_weight = excluded.nb_weight, slots = excluded.slots",
           {Param(static_cast<int>(layer.hash_bits)), Param::text(double_text(layer.bias)),
            Param::text(double_text(layer.nb_weight)), Param::bytes(encode_slot_deltas(layer.slots))});
}

void PgDatabase::add_linear(const WriteTransaction::LinearChange& change) {
    // Under the commit lock: no other writer reads or writes the weights until this commits.
    if (change.refit_mark) {
        // Of two refits of the same samples, the second changes no row.
        auto m = conn_.exec(change.refit_exclusive
                                ? "UPDATE linear_state SET refit_mark = $1 WHERE id = 0 AND refit_mark < $1 RETURNING id"
                                : "UPDATE linear_state SET refit_mark = greatest(refit_mark, $1) WHERE id = 0 RETURNING id",
                            {Param(static_cast<std::int64_t>(*change.refit_mark))});
        if (m.rows() == 0) throw RefitSuperseded();
    }
    if (change.refit_layer != nullptr) put_refit_layer(conn_, *change.refit_layer);
    if (change.samples_dropped > 0) {
        conn_.exec("UPDATE linear_state SET samples_dropped = samples_dropped + $1 WHERE id = 0",
                   {Param(static_cast<std::int64_t>(change.samples_dropped))});
    }
    auto state = conn_.exec("SELECT hash_bits, (SELECT coalesce(sum(n), 0) FROM linear_deltas) FROM linear_state WHERE id = 0");
    if (state.rows() != 1) conn_.fail("the linear scorer's state is missing");
    const auto bits = static_cast<unsigned>(state.integer(0, 0));
    if (bits != 0 && bits != change.hash_bits) {
        conn_.fail("the linear weights here have 2^" + std::to_string(bits) + " slots, not 2^" +
                   std::to_string(change.hash_bits) + " (linear_hash_bits): keep the setting a database was trained with");
    }
    const auto held = static_cast<std::uint64_t>(state.integer(0, 1));
    const auto sparse = sparse_linear_change(change);
    const bool fold = held + sparse.size() > linear_fold_slots(change.hash_bits);
    conn_.exec("UPDATE linear_state SET hash_bits = $1, bias = bias + $2::float8, nb_weight = nb_weight + $3::float8,"
               " seen_spam = seen_spam + $4, seen_ham = seen_ham + $5 WHERE id = 0",
               {Param(static_cast<int>(change.hash_bits)), Param::text(double_text(change.bias)),
                Param::text(double_text(change.nb_weight)), Param(change.seen_spam), Param(change.seen_ham)});
    // Whatever is written takes the number log_model_change() gives this write next.
    if (!fold) {
        if (sparse.empty()) return;
        conn_.exec("INSERT INTO linear_deltas (seq, n, slots) VALUES ((SELECT coalesce(max(seq), 0) + 1 FROM model_changes), $1, $2)",
                   {Param(static_cast<std::int64_t>(sparse.size())), Param::bytes(encode_slot_deltas(sparse))});
        return;
    }
    // The fold: the kept deltas, in the order written, then this change, into whole pages.
    PageFold sum(held_slot_deltas(0, change.hash_bits, "damaged linear weights: slot deltas"));
    sum.add(change);
    const auto touched = sum.pages();
    std::string numbers = "{";
    for (const std::uint32_t number : touched) numbers += (numbers.size() > 1 ? "," : "") + std::to_string(number);
    numbers += "}";
    std::map<std::uint32_t, std::string> stored;
    {
        auto r = conn_.exec("SELECT page, weights FROM linear_pages WHERE page = ANY($1::integer[])", {Param::text(numbers)});
        for (int i = 0; i < r.rows(); ++i) stored.emplace(static_cast<std::uint32_t>(r.integer(i, 0)), std::string(r.bytes(i, 1)));
    }
    // One statement for every page: the numbers and the new bytes as arrays.
    std::string pages = "{";
    for (const std::uint32_t number : touched) {
        const auto it = stored.find(number);
        const auto page = sum.apply(number, it == stored.end() ? std::string_view() : std::string_view(it->second));
        if (!page) conn_.fail("damaged linear weights: page " + std::to_string(number));
        pages += (pages.size() > 1 ? ",\"" : "\"") + pg::hex(*page) + "\"";
    }
    pages += "}";
    conn_.exec("INSERT INTO linear_pages AS l (page, seq, weights)"
               " SELECT p, (SELECT coalesce(max(seq), 0) + 1 FROM model_changes), decode(w, 'hex')"
               " FROM unnest($1::integer[], $2::text[]) AS u(p, w)"
               " ON CONFLICT (page) DO UPDATE SET seq = excluded.seq, weights = excluded.weights",
               {Param::text(numbers), Param::text(pages)});
    conn_.exec("DELETE FROM linear_deltas");
}

std::optional<LinearSample> PgDatabase::sample_of(const pg::Result& r, int row) {
    LinearSample out;
    out.c = r.integer(row, 0) == 1 ? Class::spam : Class::ham;
    auto prefix = decode_linear_sample(r.bytes(row, 2));
    auto terms = decode_terms(r.bytes(row, 3));
    if (!prefix || !terms) return std::nullopt;
    out.prefix = std::move(*prefix);
    out.terms = std::move(*terms);
    return out;
}

std::vector<LinearSample> PgDatabase::linear_samples() {
    std::vector<LinearSample> out;
    auto r = conn_.exec(
        "SELECT s.class, s.position, s.prefix, m.features FROM linear_samples s"
        " JOIN messages m ON m.digest = s.digest AND m.class = s.class ORDER BY s.class, s.position");
    for (int i = 0; i < r.rows(); ++i) {
        auto sample = sample_of(r, i);
        if (!sample) conn_.fail("damaged rehearsal sample: class " + std::to_string(r.integer(i, 0)) + ", position " +
                                std::to_string(r.integer(i, 1)));
        out.push_back(std::move(*sample));
    }
    return out;
}

void PgDatabase::keep_linear_sample(Class c, std::uint64_t position, const Digest& digest, std::string_view blob) {
    conn_.exec("INSERT INTO linear_samples (class, position, digest, prefix) VALUES ($1, $2, $3, $4)"
               " ON CONFLICT (class, position) DO UPDATE SET digest = excluded.digest, prefix = excluded.prefix",
               {Param(c == Class::spam ? 1 : 0), Param(static_cast<std::int64_t>(position)), Param::digest(digest),
                Param::bytes(blob)});
}

std::string PgDatabase::model_settings() {
    auto r = conn_.exec("SELECT text FROM model_settings WHERE id = 0");
    return r.rows() == 0 ? std::string() : std::string(r.bytes(0, 0));
}

void PgDatabase::keep_model_settings(std::string_view text) {
    conn_.exec("INSERT INTO model_settings (id, text) VALUES (0, $1) ON CONFLICT (id) DO NOTHING", {Param::text(text)});
}

std::optional<LinearSample> PgDatabase::linear_sample(Class c, std::uint64_t position) {
    auto r = conn_.exec(
        "SELECT s.class, s.position, s.prefix, m.features FROM linear_samples s"
        " JOIN messages m ON m.digest = s.digest AND m.class = s.class WHERE s.class = $1 AND s.position = $2",
        {Param(c == Class::spam ? 1 : 0), Param(static_cast<std::int64_t>(position))});
    if (r.rows() == 0) return std::nullopt;
    auto sample = sample_of(r, 0);
    if (!sample) conn_.fail("damaged rehearsal sample: position " + std::to_string(position));
    return sample;
}

}  // namespace mailsift::store
