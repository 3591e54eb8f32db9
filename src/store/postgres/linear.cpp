// The linear scorer's weights on PostgreSQL: linear_state and linear_pages.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "../codec.hpp"
#include "pg_database.hpp"

namespace mailsift::store {

using pg::Param;

namespace {

// Doubles travel as text: shortest round-trip digits both ways.
std::string double_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

double text_double(std::string_view s) { return std::strtod(std::string(s).c_str(), nullptr); }

}  // namespace

LinearWeights PgDatabase::linear_weights_since(std::uint64_t sequence) {
    LinearWeights out;
    conn_.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");  // the state, the pages and the sequence of one moment
    try {
        auto state = conn_.exec("SELECT hash_bits, bias::text, nb_weight::text FROM linear_state WHERE id = 0");
        if (state.rows() != 1) conn_.fail("the linear scorer's state is missing");
        out.hash_bits = static_cast<unsigned>(state.integer(0, 0));
        out.bias = text_double(state.bytes(0, 1));
        out.nb_weight = text_double(state.bytes(0, 2));
        out.sequence = model_sequence();
        auto r = conn_.exec("SELECT page, weights FROM linear_pages WHERE seq > $1",
                            {Param(static_cast<std::int64_t>(sequence))});
        for (int i = 0; i < r.rows(); ++i) {
            std::vector<float> page;
            const std::int64_t number = r.integer(i, 0);
            if (!decode_linear_page(r.bytes(i, 1), page) || number < 0 ||
                static_cast<std::uint64_t>(number) * linear_page_slots >= (std::uint64_t{1} << out.hash_bits)) {
                conn_.fail("damaged linear weights: page " + std::to_string(number));
            }
            out.pages.emplace_back(static_cast<std::uint32_t>(number), std::move(page));
        }
        conn_.run("COMMIT");
    } catch (...) {
        try {
            conn_.run("ROLLBACK");
        } catch (...) {
        }
        throw;
    }
    return out;
}

void PgDatabase::add_linear(const WriteTransaction::LinearChange& change) {
    // Under the commit lock: no other writer reads or writes a page until this commits.
    const auto bits = static_cast<unsigned>(conn_.exec("SELECT hash_bits FROM linear_state WHERE id = 0").integer(0, 0));
    if (bits != 0 && bits != change.hash_bits) {
        conn_.fail("the linear weights here have 2^" + std::to_string(bits) + " slots, not 2^" +
                   std::to_string(change.hash_bits) + " (linear_hash_bits): keep the setting a database was trained with");
    }
    conn_.exec("UPDATE linear_state SET hash_bits = $1, bias = bias + $2::float8, nb_weight = nb_weight + $3::float8"
               " WHERE id = 0",
               {Param(static_cast<int>(change.hash_bits)), Param::text(double_text(change.bias)),
                Param::text(double_text(change.nb_weight))});
    if (change.pages.empty()) return;
    std::string numbers = "{";
    for (const auto& [number, delta] : change.pages) numbers += (numbers.size() > 1 ? "," : "") + std::to_string(number);
    numbers += "}";
    std::map<std::uint32_t, std::string> stored;
    {
        auto r = conn_.exec("SELECT page, weights FROM linear_pages WHERE page = ANY($1::integer[])", {Param::text(numbers)});
        for (int i = 0; i < r.rows(); ++i) stored.emplace(static_cast<std::uint32_t>(r.integer(i, 0)), std::string(r.bytes(i, 1)));
    }
    // One statement for every page: the numbers and the new bytes as arrays.
    std::string pages = "{";
    for (const auto& [number, delta] : change.pages) {
        const auto it = stored.find(number);
        const auto sum = add_to_linear_page(it == stored.end() ? std::string_view() : std::string_view(it->second), delta);
        if (!sum) conn_.fail("damaged linear weights: page " + std::to_string(number));
        pages += (pages.size() > 1 ? ",\"" : "\"") + pg::hex(*sum) + "\"";
    }
    pages += "}";
    conn_.exec("INSERT INTO linear_pages AS l (page, seq, weights)"
               " SELECT p, (SELECT coalesce(max(seq), 0) + 1 FROM model_changes), decode(w, 'hex')"
               " FROM unnest($1::integer[], $2::text[]) AS u(p, w)"
               " ON CONFLICT (page) DO UPDATE SET seq = excluded.seq, weights = excluded.weights",
               {Param::text(numbers), Param::text(pages)});
}

}  // namespace mailsift::store
