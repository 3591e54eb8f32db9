// The linear scorer's weights on SQLite: linear_state and linear_pages.
#include <string>

#include "internal.hpp"

namespace mailsift::store {

LinearWeights SqliteDatabase::linear_weights_since(std::uint64_t sequence) {
    LinearWeights out;
    exec("BEGIN");  // the state, the pages and the sequence of one moment
    try {
        {
            Statement q(db_, "SELECT hash_bits, bias, nb_weight FROM linear_state WHERE id = 0", path_);
            if (sqlite3_step(q.get()) == SQLITE_ROW) {
                out.hash_bits = static_cast<unsigned>(sqlite3_column_int(q.get(), 0));
                out.bias = sqlite3_column_double(q.get(), 1);
                out.nb_weight = sqlite3_column_double(q.get(), 2);
            } else {
                fail(std::string("cannot read the linear scorer's state: ") + error_text());
            }
        }
        out.sequence = model_sequence();
        Statement q(db_, "SELECT page, weights FROM linear_pages WHERE seq > ?1", path_);
        sqlite3_bind_int64(q.get(), 1, static_cast<sqlite3_int64>(sequence));
        int rc;
        while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
            std::vector<float> page;
            const std::string_view bytes(static_cast<const char*>(sqlite3_column_blob(q.get(), 1)),
                                         static_cast<std::size_t>(sqlite3_column_bytes(q.get(), 1)));
            const auto number = sqlite3_column_int64(q.get(), 0);
            if (!decode_linear_page(bytes, page) || number < 0 ||
                static_cast<std::uint64_t>(number) * linear_page_slots >= (std::uint64_t{1} << out.hash_bits)) {
                fail("damaged linear weights: page " + std::to_string(number));
            }
            out.pages.emplace_back(static_cast<std::uint32_t>(number), std::move(page));
        }
        if (rc != SQLITE_DONE) fail(std::string("cannot read the linear weights: ") + error_text());
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return out;
}

void SqliteTransaction::add_linear(const LinearChange& change) {
    {
        Statement q(db_.db_, "SELECT hash_bits FROM linear_state WHERE id = 0", db_.path_);
        if (sqlite3_step(q.get()) != SQLITE_ROW) db_.fail(std::string("cannot read the linear scorer's state: ") + db_.error_text());
        const auto bits = static_cast<unsigned>(sqlite3_column_int(q.get(), 0));
        if (bits != 0 && bits != change.hash_bits) {
            db_.fail("the linear weights here have 2^" + std::to_string(bits) + " slots, not 2^" +
                     std::to_string(change.hash_bits) + " (linear_hash_bits): keep the setting a database was trained with");
        }
    }
    {
        Statement u(db_.db_, "UPDATE linear_state SET hash_bits = ?1, bias = bias + ?2, nb_weight = nb_weight + ?3 WHERE id = 0",
                    db_.path_);
        sqlite3_bind_int(u.get(), 1, static_cast<int>(change.hash_bits));
        sqlite3_bind_double(u.get(), 2, change.bias);
        sqlite3_bind_double(u.get(), 3, change.nb_weight);
        if (sqlite3_step(u.get()) != SQLITE_DONE) db_.fail(std::string("cannot update the linear scorer's state: ") + db_.error_text());
    }
    Statement read(db_.db_, "SELECT weights FROM linear_pages WHERE page = ?1", db_.path_);
    // The pages take the number log_model_change() gives this write next.
    Statement write(db_.db_,
                    "INSERT INTO linear_pages (page, seq, weights) VALUES (?1,"
                    " (SELECT coalesce(max(seq), 0) + 1 FROM model_changes), ?2)"
                    " ON CONFLICT (page) DO UPDATE SET seq = excluded.seq, weights = excluded.weights",
                    db_.path_);
    for (const auto& [number, delta] : change.pages) {
        sqlite3_reset(read.get());
        sqlite3_bind_int64(read.get(), 1, number);
        std::string_view stored;
        const int rc = sqlite3_step(read.get());
        if (rc == SQLITE_ROW) {
            stored = std::string_view(static_cast<const char*>(sqlite3_column_blob(read.get(), 0)),
                                      static_cast<std::size_t>(sqlite3_column_bytes(read.get(), 0)));
        } else if (rc != SQLITE_DONE) {
            db_.fail(std::string("cannot read the linear weights: ") + db_.error_text());
        }
        const auto sum = add_to_linear_page(stored, delta);
        if (!sum) db_.fail("damaged linear weights: page " + std::to_string(number));
        sqlite3_reset(write.get());
        sqlite3_bind_int64(write.get(), 1, number);
        sqlite3_bind_blob(write.get(), 2, sum->data(), static_cast<int>(sum->size()), SQLITE_STATIC);
        if (sqlite3_step(write.get()) != SQLITE_DONE) db_.fail(std::string("cannot write the linear weights: ") + db_.error_text());
    }
}

}  // namespace mailsift::store
