// The linear scorer's weights on SQLite: linear_state, linear_pages, linear_deltas
// and linear_refit.
#include <optional>
#include <string>

#include "internal.hpp"

namespace mailsift::store {

std::vector<SlotDelta> SqliteDatabase::held_slot_deltas(std::uint64_t since, unsigned hash_bits, const char* damaged) {
    std::vector<SlotDelta> out;
    Statement d(db_, "SELECT slots FROM linear_deltas WHERE seq > ?1 ORDER BY id", path_);
    sqlite3_bind_int64(d.get(), 1, static_cast<sqlite3_int64>(since));
    int rc;
    while ((rc = sqlite3_step(d.get())) == SQLITE_ROW) {
        const std::string_view bytes(static_cast<const char*>(sqlite3_column_blob(d.get(), 0)),
                                     static_cast<std::size_t>(sqlite3_column_bytes(d.get(), 0)));
        if (!decode_slot_deltas(bytes, std::size_t{1} << hash_bits, out)) fail(damaged);
    }
    if (rc != SQLITE_DONE) fail(std::string("cannot read the linear weights: ") + error_text());
    return out;
}

LinearWeights SqliteDatabase::linear_weights_since(std::uint64_t sequence, const PageVisitor& visit) {
    LinearWeights out;
    // A command of a few messages reads the whole table once (1 MiB at 2^18
    // slots, ~290 pages): mapped, that is a tenth of the time of a read() a
    // page into the page cache. Only for this read: the feature rows stay in
    // the cache, whose size bounds the memory. (The daemon, which reads the
    // weights once and then keeps them, does not map the file.)
    const bool mapped = few_messages_ && sequence == 0;
    if (mapped) exec("PRAGMA mmap_size = 2147418112");  // SQLITE_MAX_MMAP_SIZE's default; a larger file is read past it
    struct Unmap {
        SqliteDatabase* db;
        ~Unmap() {
            if (db != nullptr) sqlite3_exec(db->db_, "PRAGMA mmap_size = 0", nullptr, nullptr, nullptr);
        }
    } unmap{mapped ? this : nullptr};
    exec("BEGIN");  // the state, the pages and the sequence of one moment
    try {
        {
            Statement q(db_, "SELECT hash_bits, bias, nb_weight, seen_spam, seen_ham, samples_dropped, refit_mark FROM linear_state"
                        " WHERE id = 0",
                        path_);
            if (sqlite3_step(q.get()) == SQLITE_ROW) {
                out.hash_bits = static_cast<unsigned>(sqlite3_column_int(q.get(), 0));
                out.bias = sqlite3_column_double(q.get(), 1);
                out.nb_weight = sqlite3_column_double(q.get(), 2);
                out.seen_spam = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 3));
                out.seen_ham = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 4));
                out.samples_dropped = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 5));
                out.refit_mark = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 6));
            } else {
                fail(std::string("cannot read the linear scorer's state: ") + error_text());
            }
        }
        out.sequence = model_sequence();
        Statement q(db_, "SELECT page, weights FROM linear_pages WHERE seq > ?1", path_);
        sqlite3_bind_int64(q.get(), 1, static_cast<sqlite3_int64>(sequence));
        int rc;
        std::vector<float> page;  // one buffer for every page handed to `visit`
        while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
            const std::string_view bytes(static_cast<const char*>(sqlite3_column_blob(q.get(), 1)),
                                         static_cast<std::size_t>(sqlite3_column_bytes(q.get(), 1)));
            const auto number = sqlite3_column_int64(q.get(), 0);
            if (!decode_linear_page(bytes, page) || number < 0 ||
                static_cast<std::uint64_t>(number) * linear_page_slots >= (std::uint64_t{1} << out.hash_bits)) {
                fail("damaged linear weights: page " + std::to_string(number));
            }
            if (visit) {
                visit(static_cast<std::uint32_t>(number), page);
            } else {
                out.pages.emplace_back(static_cast<std::uint32_t>(number), std::move(page));
                page = {};
            }
        }
        if (rc != SQLITE_DONE) fail(std::string("cannot read the linear weights: ") + error_text());
        out.deltas = held_slot_deltas(sequence, out.hash_bits, "damaged linear weights: slot deltas");
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return out;
}

std::optional<RefitLayer> SqliteDatabase::linear_refit_layer() {
    Statement q(db_, "SELECT hash_bits, bias, nb_weight, slots FROM linear_refit WHERE id = 0", path_);
    const int rc = sqlite3_step(q.get());
    if (rc == SQLITE_DONE) return std::nullopt;
    if (rc != SQLITE_ROW) fail(std::string("cannot read the linear scorer's last refit: ") + error_text());
    RefitLayer out;
    const int bits = sqlite3_column_int(q.get(), 0);
    if (bits <= 0 || bits > 30) fail("damaged linear weights: the last refit's hash_bits");
    out.hash_bits = static_cast<unsigned>(bits);
    out.bias = sqlite3_column_double(q.get(), 1);
    out.nb_weight = sqlite3_column_double(q.get(), 2);
    const std::string_view bytes(static_cast<const char*>(sqlite3_column_blob(q.get(), 3)),
                                 static_cast<std::size_t>(sqlite3_column_bytes(q.get(), 3)));
    if (!decode_slot_deltas(bytes, std::size_t{1} << out.hash_bits, out.slots)) {
        fail("damaged linear weights: the last refit's slot deltas");
    }
    return out;
}

void put_refit_layer(sqlite3* db, const std::filesystem::path& path, const RefitLayer& layer) {
    const std::string bytes = encode_slot_deltas(layer.slots);
    Statement m(db,
                "INSERT INTO linear_refit (id, hash_bits, bias, nb_weight, slots) VALUES (0, ?1, ?2, ?3, ?4)"
                " ON CONFLICT (id) DO UPDATE SET hash_bits = excluded.hash_bits, bias = excluded.bias,"
                " nb_weight = excluded.nb_weight, slots = excluded.slots",
                path);
    sqlite3_bind_int(m.get(), 1, static_cast<int>(layer.hash_bits));
    sqlite3_bind_double(m.get(), 2, layer.bias);
    sqlite3_bind_double(m.get(), 3, layer.nb_weight);
    sqlite3_bind_blob(m.get(), 4, bytes.data(), static_cast<int>(bytes.size()), SQLITE_STATIC);
    if (sqlite3_step(m.get()) != SQLITE_DONE) {
        throw Error(path, std::string("cannot write the linear scorer's last refit: ") + sqlite3_errmsg(db));
    }
}

void SqliteTransaction::add_linear(const LinearChange& change) {
    if (change.refit_mark) {
        // Under the write lock: of two refits of the same samples, the second changes no row.
        Statement m(db_.db_,
                    change.refit_exclusive ? "UPDATE linear_state SET refit_mark = ?1 WHERE id = 0 AND refit_mark < ?1"
                                           : "UPDATE linear_state SET refit_mark = max(refit_mark, ?1) WHERE id = 0",
                    db_.path_);
        sqlite3_bind_int64(m.get(), 1, static_cast<sqlite3_int64>(*change.refit_mark));
        if (sqlite3_step(m.get()) != SQLITE_DONE) db_.fail(std::string("cannot update the linear scorer's state: ") + db_.error_text());
        if (change.refit_exclusive && sqlite3_changes(db_.db_) == 0) throw RefitSuperseded();
    }
    if (change.refit_layer != nullptr) put_refit_layer(db_.db_, db_.path_, *change.refit_layer);
    if (change.samples_dropped > 0) {
        Statement m(db_.db_, "UPDATE linear_state SET samples_dropped = samples_dropped + ?1 WHERE id = 0", db_.path_);
        sqlite3_bind_int64(m.get(), 1, static_cast<sqlite3_int64>(change.samples_dropped));
        if (sqlite3_step(m.get()) != SQLITE_DONE) db_.fail(std::string("cannot update the linear scorer's state: ") + db_.error_text());
    }
    std::uint64_t held = 0;  // slot deltas kept now
    {
        Statement q(db_.db_, "SELECT hash_bits, (SELECT coalesce(sum(n), 0) FROM linear_deltas) FROM linear_state WHERE id = 0",
                    db_.path_);
        if (sqlite3_step(q.get()) != SQLITE_ROW) db_.fail(std::string("cannot read the linear scorer's state: ") + db_.error_text());
        const auto bits = static_cast<unsigned>(sqlite3_column_int(q.get(), 0));
        if (bits != 0 && bits != change.hash_bits) {
            db_.fail("the linear weights here have 2^" + std::to_string(bits) + " slots, not 2^" +
                     std::to_string(change.hash_bits) + " (linear_hash_bits): keep the setting a database was trained with");
        }
        held = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 1));
    }
    const auto sparse = sparse_linear_change(change);
    const bool fold = held + sparse.size() > linear_fold_slots(change.hash_bits);
    {
        Statement u(db_.db_,
                    "UPDATE linear_state SET hash_bits = ?1, bias = bias + ?2, nb_weight = nb_weight + ?3,"
                    " seen_spam = seen_spam + ?4, seen_ham = seen_ham + ?5 WHERE id = 0",
                    db_.path_);
        sqlite3_bind_int(u.get(), 1, static_cast<int>(change.hash_bits));
        sqlite3_bind_double(u.get(), 2, change.bias);
        sqlite3_bind_double(u.get(), 3, change.nb_weight);
        sqlite3_bind_int64(u.get(), 4, change.seen_spam);
        sqlite3_bind_int64(u.get(), 5, change.seen_ham);
        if (sqlite3_step(u.get()) != SQLITE_DONE) db_.fail(std::string("cannot update the linear scorer's state: ") + db_.error_text());
    }
    // Whatever is written takes the number log_model_change() gives this write next.
    if (!fold) {
        if (sparse.empty()) return;
        const std::string bytes = encode_slot_deltas(sparse);
        Statement q(db_.db_,
                    "INSERT INTO linear_deltas (seq, n, slots) VALUES ((SELECT coalesce(max(seq), 0) + 1 FROM model_changes), ?1, ?2)",
                    db_.path_);
        sqlite3_bind_int64(q.get(), 1, static_cast<sqlite3_int64>(sparse.size()));
        sqlite3_bind_blob(q.get(), 2, bytes.data(), static_cast<int>(bytes.size()), SQLITE_STATIC);
        if (sqlite3_step(q.get()) != SQLITE_DONE) db_.fail(std::string("cannot write the linear weights: ") + db_.error_text());
        return;
    }
    // The fold: the kept deltas, in the order written, then this change, into whole pages.
    PageFold sum(db_.held_slot_deltas(0, change.hash_bits, "damaged linear weights: slot deltas"));
    sum.add(change);
    Statement read(db_.db_, "SELECT weights FROM linear_pages WHERE page = ?1", db_.path_);
    Statement write(db_.db_,
                    "INSERT INTO linear_pages (page, seq, weights) VALUES (?1,"
                    " (SELECT coalesce(max(seq), 0) + 1 FROM model_changes), ?2)"
                    " ON CONFLICT (page) DO UPDATE SET seq = excluded.seq, weights = excluded.weights",
                    db_.path_);
    for (const std::uint32_t number : sum.pages()) {
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
        const auto page = sum.apply(number, stored);
        if (!page) db_.fail("damaged linear weights: page " + std::to_string(number));
        sqlite3_reset(write.get());
        sqlite3_bind_int64(write.get(), 1, number);
        sqlite3_bind_blob(write.get(), 2, page->data(), static_cast<int>(page->size()), SQLITE_STATIC);
        if (sqlite3_step(write.get()) != SQLITE_DONE) db_.fail(std::string("cannot write the linear weights: ") + db_.error_text());
    }
    Statement clear(db_.db_, "DELETE FROM linear_deltas", db_.path_);
    if (sqlite3_step(clear.get()) != SQLITE_DONE) db_.fail(std::string("cannot write the linear weights: ") + db_.error_text());
}

namespace {

// A samples row joined with its message: the sample, or nullopt when damaged.
std::optional<LinearSample> sample_of(sqlite3_stmt* row, int class_column, int prefix_column, int features_column) {
    LinearSample out;
    out.c = sqlite3_column_int(row, class_column) == 1 ? Class::spam : Class::ham;
    auto prefix = decode_linear_sample(std::string_view(static_cast<const char*>(sqlite3_column_blob(row, prefix_column)),
                                                        static_cast<std::size_t>(sqlite3_column_bytes(row, prefix_column))));
    auto terms = decode_terms(std::string_view(static_cast<const char*>(sqlite3_column_blob(row, features_column)),
                                               static_cast<std::size_t>(sqlite3_column_bytes(row, features_column))));
    if (!prefix || !terms) return std::nullopt;
    out.prefix = std::move(*prefix);
    out.terms = std::move(*terms);
    return out;
}

}  // namespace

std::vector<LinearSample> SqliteDatabase::linear_samples() {
    std::vector<LinearSample> out;
    Statement q(db_,
                "SELECT s.class, s.position, s.prefix, m.features FROM linear_samples s"
                " JOIN messages m ON m.digest = s.digest AND m.class = s.class ORDER BY s.class, s.position",
                path_);
    int rc;
    while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
        auto sample = sample_of(q.get(), 0, 2, 3);
        if (!sample) fail("damaged rehearsal sample: class " + std::to_string(sqlite3_column_int(q.get(), 0)) +
                          ", position " + std::to_string(sqlite3_column_int64(q.get(), 1)));
        out.push_back(std::move(*sample));
    }
    if (rc != SQLITE_DONE) fail(std::string("cannot read the rehearsal samples: ") + error_text());
    return out;
}

std::string SqliteDatabase::model_settings() {
    Statement q(db_, "SELECT text FROM model_settings WHERE id = 0", path_);
    const int rc = sqlite3_step(q.get());
    if (rc == SQLITE_DONE) return {};
    if (rc != SQLITE_ROW) fail(std::string("cannot read the model's settings: ") + error_text());
    const auto* text = sqlite3_column_text(q.get(), 0);
    return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text));
}

void SqliteTransaction::keep_model_settings(std::string_view text) {
    Statement q(db_.db_, "INSERT INTO model_settings (id, text) VALUES (0, ?1) ON CONFLICT (id) DO NOTHING", db_.path_);
    sqlite3_bind_text(q.get(), 1, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
    if (sqlite3_step(q.get()) != SQLITE_DONE) db_.fail(std::string("cannot record the model's settings: ") + db_.error_text());
}

std::optional<Class> SqliteTransaction::find_uncounted(const Digest& digest) {
    Use q(db_.st_->find_uncounted);
    bind_digest(*q, 1, digest);
    const int rc = sqlite3_step(*q);
    if (rc == SQLITE_DONE) return std::nullopt;
    if (rc != SQLITE_ROW) db_.fail(std::string("cannot look up message: ") + db_.error_text());
    return sqlite3_column_int(*q, 0) == 1 ? Class::spam : Class::ham;
}

void SqliteTransaction::put_uncounted(const Digest& digest, Class c, std::optional<Class>) {  // one writer at a time
    Use q(db_.st_->put_uncounted);
    bind_digest(*q, 1, digest);
    sqlite3_bind_int(*q, 2, c == Class::spam ? 1 : 0);
    if (sqlite3_step(*q) != SQLITE_DONE) db_.fail(std::string("cannot record message: ") + db_.error_text());
}

void SqliteTransaction::delete_uncounted(const Digest& digest) {
    Use q(db_.st_->delete_uncounted);
    bind_digest(*q, 1, digest);
    if (sqlite3_step(*q) != SQLITE_DONE) db_.fail(std::string("cannot delete message: ") + db_.error_text());
}

void SqliteTransaction::keep_linear_sample(Class c, std::uint64_t position, const Digest& digest, std::string_view blob) {
    Use q(db_.st_->keep_linear_sample);
    sqlite3_bind_int(*q, 1, c == Class::spam ? 1 : 0);
    sqlite3_bind_int64(*q, 2, static_cast<sqlite3_int64>(position));
    bind_digest(*q, 3, digest);
    sqlite3_bind_blob(*q, 4, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
    if (sqlite3_step(*q) != SQLITE_DONE) db_.fail(std::string("cannot keep a rehearsal sample: ") + db_.error_text());
}

std::optional<LinearSample> SqliteTransaction::linear_sample(Class c, std::uint64_t position) {
    Use q(db_.st_->find_linear_sample);
    sqlite3_bind_int(*q, 1, c == Class::spam ? 1 : 0);
    sqlite3_bind_int64(*q, 2, static_cast<sqlite3_int64>(position));
    const int rc = sqlite3_step(*q);
    if (rc == SQLITE_DONE) return std::nullopt;
    if (rc != SQLITE_ROW) db_.fail(std::string("cannot read a rehearsal sample: ") + db_.error_text());
    auto sample = sample_of(*q, 0, 1, 2);
    if (!sample) db_.fail("damaged rehearsal sample: position " + std::to_string(position));
    return sample;
}

}  // namespace mailsift::store
