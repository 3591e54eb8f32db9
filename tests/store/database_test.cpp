// Store tests on real SQLite files in a temporary directory and, where they
// hold for every backend, on a real PostgreSQL too (FOR_EACH_BACKEND).
#include "mailsift/store/training_batch.hpp"
#include "mailsift/store/sqlite_database.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "../support/backends.hpp"
#include "../support/temp_dir.hpp"
#include "store_support.hpp"
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace mailsift;
using TempDir = mailsift::testing::TempDir;
using mailsift::testing::digest;
using mailsift::testing::terms;
using mailsift::testing::read_linear;
using store::Class;
using Database = store::SqliteDatabase;

namespace {

// The store set back to an earlier schema (SQLite's user_version, PostgreSQL's
// mailsift_schema), then opened: it must come back to the current one.
template <class Store>
std::unique_ptr<store::Database> reopened_from(Store& s, int sqlite_version, int pg_version) {
    const bool sqlite = s.kind() == "sqlite";
    s.exec(sqlite ? "PRAGMA user_version = " + std::to_string(sqlite_version)
                  : "UPDATE mailsift_schema SET version = " + std::to_string(pg_version));
    auto db = s.open();
    CHECK(s.value(sqlite ? "PRAGMA user_version" : "SELECT version FROM mailsift_schema") ==
          db->statistics().schema_version);
    return db;
}

}  // namespace

TEST_CASE("A new database is created with the current schema and WAL", "[store]") {
    TempDir dir;
    const auto path = dir.path / "sub" / "model.db";
    {
        Database db(path, Database::Mode::read_write);
        REQUIRE(db.statistics().schema_version == store::schema_version);
    }
    REQUIRE(std::filesystem::exists(path));
    struct stat st{};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    REQUIRE((st.st_mode & 0007) == 0);  // no access for others
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &s, nullptr);
    REQUIRE(sqlite3_step(s) == SQLITE_ROW);
    REQUIRE(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 0))) == "wal");
    sqlite3_finalize(s);
    sqlite3_close(raw);
}

TEST_CASE("A connection serving requests copies its log into the database after answering, not inside a commit",
          "[store]") {
    TempDir dir;
    const auto path = dir.path / "model.db";
    // One commit of well over SQLite's 1,000 pages of log: 200,000 feature rows
    // at random ids, and 400 messages' rows.
    auto big_commit = [](store::Database& db, std::uint8_t round) {
        store::TrainingBatch b(db);
        for (std::uint32_t m = 0; m < 400; ++m) {
            std::vector<store::TrainTerm> t;
            for (std::uint64_t j = 0; j < 500; ++j) {
                t.push_back({((std::uint64_t{round} << 40) + m * 1000 + j) * 0x9E3779B97F4A7C15ULL, 1, "f"});
            }
            store::Digest d{};
            d[0] = static_cast<std::uint8_t>(m & 0xff);
            d[1] = static_cast<std::uint8_t>(m >> 8);
            d[2] = round;
            REQUIRE(b.learn(d, Class::spam, t, 100) == store::LearnResult::learned);
        }
        b.commit();
    };
    const auto main_file = [&] { return std::filesystem::file_size(path); };
    {
        Database db(path, Database::Mode::read_write);
        const auto before = main_file();
        big_commit(db, 1);
        CHECK(main_file() > before);  // SQLite's way: the commit copied its log into the database
    }
    {
        Database db(path, Database::Mode::read_write);
        db.for_requests();
        const auto before = main_file();
        big_commit(db, 2);
        CHECK(main_file() == before);  // committed to the log alone
        CHECK(db.load_counts(model::TermFrequency::raw).messages.spam == 800);
        db.checkpoint();
        CHECK(main_file() > before);
        db.checkpoint();  // nothing new in the log: nothing to do
    }
    Database again(path, Database::Mode::read_only);
    CHECK(again.load_counts(model::TermFrequency::raw).messages.spam == 800);
}

TEST_CASE("Learning adds counts, and learning again is idempotent", "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened = store_.open();
    store::Database& db = *opened;
    {
        store::TrainingBatch b(db);
        REQUIRE(b.learn(digest(1), Class::spam, terms({{10, 3}, {11, 1}}), 100) == store::LearnResult::learned);
        REQUIRE(b.learn(digest(2), Class::ham, terms({{10, 1}, {12, 2}}), 100) == store::LearnResult::learned);
        b.commit();
    }
    auto check = [&] {
        const auto raw = db.load_counts(model::TermFrequency::raw);
        REQUIRE(raw.messages.spam == 1);
        REQUIRE(raw.messages.ham == 1);
        REQUIRE(raw.feature_totals.spam == 4);
        REQUIRE(raw.feature_totals.ham == 3);
        REQUIRE(raw.features.at(10).spam == 3);
        REQUIRE(raw.features.at(10).ham == 1);
        const auto boolean = db.load_counts(model::TermFrequency::boolean);
        REQUIRE(boolean.features.at(10).spam == 1);
        REQUIRE(boolean.feature_totals.spam == 2);
        REQUIRE(boolean.feature_totals.ham == 2);
    };
    check();
    {
        store::TrainingBatch b(db);
        REQUIRE(b.learn(digest(1), Class::spam, terms({{10, 3}, {11, 1}}), 200) == store::LearnResult::already_learned);
        b.commit();
    }
    check();
}

TEST_CASE("Learning a message with the other label moves it exactly", "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened = store_.open();
    store::Database& db = *opened;
    {
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{10, 3}, {11, 1}}), 1);
        b.commit();
    }
    {
        store::TrainingBatch b(db);
        REQUIRE(b.learn(digest(1), Class::ham, terms({{10, 3}, {11, 1}}), 2) == store::LearnResult::moved);
        b.commit();
    }
    const auto c = db.load_counts(model::TermFrequency::raw);
    REQUIRE(c.messages.spam == 0);
    REQUIRE(c.messages.ham == 1);
    REQUIRE(c.feature_totals.spam == 0);
    REQUIRE(c.feature_totals.ham == 4);
    REQUIRE(c.features.at(10).spam == 0);
    REQUIRE(c.features.at(10).ham == 3);
}

TEST_CASE("Unlearning restores the counts and removes emptied features", "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened = store_.open();
    store::Database& db = *opened;
    {
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{10, 3}, {11, 1}}), 1);
        b.learn(digest(2), Class::spam, terms({{10, 1}}), 1);
        b.commit();
    }
    {
        store::TrainingBatch b(db);
        REQUIRE(b.unlearn(digest(1), Class::ham) == store::UnlearnResult::learned_as_other_class);
        REQUIRE(b.unlearn(digest(9), Class::spam) == store::UnlearnResult::not_learned);
        REQUIRE(b.unlearn(digest(1), Class::spam) == store::UnlearnResult::unlearned);
        b.commit();
    }
    const auto c = db.load_counts(model::TermFrequency::raw);
    REQUIRE(c.messages.spam == 1);
    REQUIRE(c.features.size() == 1);  // feature 11 is gone
    REQUIRE(c.features.at(10).spam == 1);
    REQUIRE(c.feature_totals.spam == 1);
}

TEST_CASE("An uncommitted batch changes nothing", "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened = store_.open();
    store::Database& db = *opened;
    {
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{10, 3}}), 1);
        // destroyed without commit, as when an exception unwinds
    }
    const auto c = db.load_counts(model::TermFrequency::raw);
    REQUIRE(c.messages.spam == 0);
    REQUIRE(c.features.empty());
}

TEST_CASE("data_version changes when another connection commits", "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened_writer = store_.open(), opened_reader = store_.open(Database::Mode::read_only);
    store::Database &writer = *opened_writer, &reader = *opened_reader;
    const auto before = reader.data_version();
    REQUIRE(reader.data_version() == before);
    {
        store::TrainingBatch b(writer);
        b.learn(digest(1), Class::ham, terms({{1, 1}}), 1);
        b.commit();
    }
    REQUIRE(reader.data_version() != before);
    REQUIRE(reader.load_counts(model::TermFrequency::raw).messages.ham == 1);
}

TEST_CASE("A reader learns which features changed since its model, not all of them", "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened_writer = store_.open(), opened_reader = store_.open(Database::Mode::read_only);
    store::Database &writer = *opened_writer, &reader = *opened_reader;
    const auto tf = model::TermFrequency::raw;
    {
        store::TrainingBatch b(writer);
        b.learn(digest(1), Class::spam, terms({{10, 3}, {11, 1}}), 1);
        b.learn(digest(2), Class::ham, terms({{10, 1}, {12, 2}}), 1);
        b.commit();
    }
    const auto loaded = reader.visit_counts(tf, [](std::size_t) {}, [](model::FeatureId, model::ClassCounts) {});
    REQUIRE(loaded.sequence == reader.model_sequence());
    REQUIRE(reader.model_changes_since(loaded.sequence, tf, 100).features.empty());

    // Learned 13, moved 2 to spam (10, 12 change), unlearned 1 (11 goes): 10, 11, 12, 13 listed.
    {
        store::TrainingBatch b(writer);
        b.learn(digest(3), Class::ham, terms({{13, 1}}), 2);
        b.learn(digest(2), Class::spam, terms({{10, 1}, {12, 2}}), 2);
        REQUIRE(b.unlearn(digest(1), Class::spam) == store::UnlearnResult::unlearned);
        b.commit();
    }
    // A write that changes no count (a contact) moves nothing.
    writer.add_contact("a@example.org", "test", 3);
    const auto changes = reader.model_changes_since(loaded.sequence, tf, 100);
    REQUIRE(changes.listed);
    REQUIRE(changes.totals.sequence == loaded.sequence + 1);
    const auto full = reader.load_counts(tf);
    REQUIRE(changes.totals.messages == full.messages);
    REQUIRE(changes.totals.feature_totals == full.feature_totals);
    std::vector<model::FeatureId> ids;
    for (const auto& f : changes.features) {
        ids.push_back(f.id);
        const auto row = full.features.find(f.id);
        REQUIRE(f.present == (row != full.features.end()));
        if (f.present) REQUIRE(f.counts == row->second);
    }
    REQUIRE(ids == std::vector<model::FeatureId>{10, 11, 12, 13});
    REQUIRE_FALSE(changes.features[1].present);  // 11 is gone

    // Too many for the caller's limit: not listed.
    REQUIRE_FALSE(reader.model_changes_since(loaded.sequence, tf, 3).listed);
    // Boolean term frequency reads the presence columns.
    const auto boolean = reader.model_changes_since(loaded.sequence, model::TermFrequency::boolean, 100);
    REQUIRE(boolean.features[2].counts == model::ClassCounts{1, 0});  // 12: in one spam message
    REQUIRE(boolean.totals.feature_totals == reader.load_counts(model::TermFrequency::boolean).feature_totals);

    // A prune cannot be listed feature by feature: the reader reloads.
    const auto before_prune = reader.model_sequence();
    REQUIRE(writer.prune(0, 100).features > 0);
    REQUIRE(reader.model_sequence() == before_prune + 1);
    REQUIRE_FALSE(reader.model_changes_since(before_prune, tf, 100).listed);
    REQUIRE(reader.model_changes_since(before_prune + 1, tf, 100).listed);

    // Nor can a reader whose changes are no longer kept, nor one ahead of the database.
    {
        store::TrainingBatch b(writer);
        b.learn(digest(4), Class::ham, terms({{14, 1}}), 4);
        b.commit();
    }
    const auto now = reader.model_sequence();
    REQUIRE(reader.model_changes_since(now - 1, tf, 100).listed);
    store_.exec("DELETE FROM model_changes WHERE seq = " + std::to_string(now - 1));
    REQUIRE_FALSE(reader.model_changes_since(now - 2, tf, 100).listed);
    REQUIRE_FALSE(reader.model_changes_since(now + 5, tf, 100).listed);
}

TEST_CASE("Contacts are added, listed and removed", "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened = store_.open();
    store::Database& db = *opened;
    REQUIRE(db.add_contact("a@example.org", "manual", 5));
    REQUIRE_FALSE(db.add_contact("a@example.org", "manual", 6));
    REQUIRE(db.load_contacts().contains("a@example.org"));
    REQUIRE(db.contacts().at(0).source == "manual");
    REQUIRE(db.remove_contact("a@example.org"));
    REQUIRE_FALSE(db.remove_contact("a@example.org"));
    REQUIRE_FALSE(db.load_contacts().contains("a@example.org"));
}

TEST_CASE("Bad databases are refused with a clear error", "[store]") {
    TempDir dir;
    SECTION("a missing database opened for reading") {
        REQUIRE_THROWS_WITH(Database(dir.path / "none.db", Database::Mode::read_only),
                            Catch::Contains("no such database"));
    }
    SECTION("a database from a newer schema is not touched") {
        const auto path = dir.path / "new.db";
        { Database db(path, Database::Mode::read_write); }
        sqlite3* raw = nullptr;
        sqlite3_open(path.c_str(), &raw);
        sqlite3_exec(raw, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
        sqlite3_close(raw);
        REQUIRE_THROWS_WITH(Database(path, Database::Mode::read_write), Catch::Contains("newer"));
        REQUIRE_THROWS_WITH(Database(path, Database::Mode::read_only), Catch::Contains("newer"));
    }
    SECTION("a file that is not a database") {
        const auto path = dir.path / "junk.db";
        std::ofstream(path) << std::string(4096, 'x');
        REQUIRE_THROWS_WITH(Database(path, Database::Mode::read_write), Catch::Contains("not a"));
    }
    SECTION("someone else's SQLite database") {
        const auto path = dir.path / "other.db";
        sqlite3* raw = nullptr;
        sqlite3_open(path.c_str(), &raw);
        sqlite3_exec(raw, "CREATE TABLE t(x)", nullptr, nullptr, nullptr);
        sqlite3_close(raw);
        REQUIRE_THROWS_WITH(Database(path, Database::Mode::read_write), Catch::Contains("not a mailsift database"));
    }
    SECTION("training through a read-only connection") {
        const auto path = dir.path / "ro.db";
        { Database db(path, Database::Mode::read_write); }
        Database db(path, Database::Mode::read_only);
        REQUIRE_THROWS_AS(store::TrainingBatch(db), store::Error);
    }
}

TEST_CASE("A locked database makes training fail cleanly, not corrupt", "[store]") {
    TempDir dir;
    const auto path = dir.path / "m.db";
    { Database db(path, Database::Mode::read_write); }
    sqlite3* locker = nullptr;
    sqlite3_open(path.c_str(), &locker);
    REQUIRE(sqlite3_exec(locker, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
    {
        Database db(path, Database::Mode::read_write, std::chrono::milliseconds(100));
        REQUIRE_THROWS_WITH(store::TrainingBatch(db), Catch::Contains("locked"));
        // A reader still loads the model while the writer holds the lock (WAL).
        REQUIRE(db.load_counts(model::TermFrequency::raw).messages.spam == 0);
    }
    sqlite3_exec(locker, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(locker);
    // Once the lock is gone, training proceeds on an intact database.
    Database db(path, Database::Mode::read_write);
    store::TrainingBatch b(db);
    b.learn(digest(1), Class::ham, terms({{1, 1}}), 1);
    b.commit();
    REQUIRE(db.load_counts(model::TermFrequency::raw).messages.ham == 1);
}

TEST_CASE("The linear scorer's steps add up in the store, once per learned message, and readers get what changed",
          "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened_writer = store_.open(), opened_reader = store_.open(Database::Mode::read_only);
    store::Database &writer = *opened_writer, &reader = *opened_reader;
    // Nothing learned yet: an empty model, whose naive-Bayes input weighs 1.
    const auto empty = reader.linear_weights_since(0);
    REQUIRE(empty.hash_bits == 0);
    REQUIRE(empty.bias == 0.0);
    REQUIRE(empty.nb_weight == 1.0);
    REQUIRE(empty.pages.empty());
    REQUIRE(empty.deltas.empty());

    auto step = [](std::vector<model::Slot> slots, float w, double u) {
        store::TrainingBatch::LinearStep s;
        s.hash_bits = 12;  // four pages
        s.slots = std::move(slots);
        s.step = {w, u};
        return s;
    };
    std::vector<float> table(4096, 0.0f);  // what a reader holds
    {
        store::TrainingBatch b(writer);
        const auto a = step({1, 5, 2048}, 0.5f, 0.25);
        REQUIRE(b.learn(digest(1), Class::spam, terms({{10, 1}}), 1, &a) == store::LearnResult::learned);
        const auto c = step({5, 3000}, -0.25f, -0.125);
        REQUIRE(b.learn(digest(2), Class::ham, terms({{11, 1}}), 1, &c) == store::LearnResult::learned);
        b.commit();
    }
    const auto first = reader.linear_weights_since(0);
    REQUIRE(first.hash_bits == 12);
    REQUIRE(first.bias == Approx(0.25));
    REQUIRE(first.nb_weight == Approx(1.125));
    REQUIRE(first.sequence == reader.model_sequence());
    // A step of a few slots is kept as those slots, not as the pages they fall on.
    REQUIRE(first.pages.empty());
    REQUIRE(first.deltas.size() == 4);  // slots 1, 5, 2048 and 3000, each once
    read_linear(table, first);
    REQUIRE(table[1] == 0.5f);
    REQUIRE(table[5] == 0.25f);
    REQUIRE(table[0] == 0.0f);
    REQUIRE(table[2048] == 0.5f);
    REQUIRE(table[3000] == -0.25f);

    // Learning the same message again moves nothing; moving it steps again;
    // a step of its own (rehearsal) always counts.
    {
        store::TrainingBatch b(writer);
        const auto again = step({1}, 1.0f, 1.0);
        REQUIRE(b.learn(digest(1), Class::spam, terms({{10, 1}}), 2, &again) == store::LearnResult::already_learned);
        const auto moved = step({3000}, 0.5f, 0.0);
        REQUIRE(b.learn(digest(2), Class::spam, terms({{11, 1}}), 2, &moved) == store::LearnResult::moved);
        b.add_linear(step({4095}, 2.0f, 0.0));
        b.commit();
    }
    const auto second = reader.linear_weights_since(first.sequence);
    REQUIRE(second.sequence == first.sequence + 1);
    REQUIRE(second.deltas.size() == 2);  // slots 3000 and 4095; the others are as they were
    read_linear(table, second);
    REQUIRE(table[3000] == 0.25f);
    REQUIRE(table[4095] == 2.0f);
    REQUIRE(table[1] == 0.5f);
    REQUIRE(second.bias == Approx(0.25 + 0.5 + 2.0));
    const auto none = reader.linear_weights_since(second.sequence);
    REQUIRE(none.pages.empty());
    REQUIRE(none.deltas.empty());

    // A batch rolled back adds nothing.
    {
        store::TrainingBatch b(writer);
        const auto lost = step({1}, 9.0f, 9.0);
        b.learn(digest(3), Class::spam, terms({{12, 1}}), 3, &lost);
    }
    REQUIRE(reader.linear_weights_since(0).bias == Approx(second.bias));

    // Weights of another size are refused, and the batch with them is not written.
    {
        store::TrainingBatch b(writer);
        auto other = step({1}, 1.0f, 0.0);
        other.hash_bits = 14;
        b.learn(digest(4), Class::spam, terms({{13, 1}}), 4, &other);
        REQUIRE_THROWS_WITH(b.commit(), Catch::Contains("2^12 slots, not 2^14"));
    }
    REQUIRE(reader.statistics().messages.spam == 2);
}

namespace {
// Linear steps drawn at random, the same in every run: a fixed LCG, and step
// sizes whose sums round (thirds, tenths).
struct RandomSteps {
    std::uint32_t seed;
    std::uint32_t next() { return seed = seed * 1664525u + 1013904223u; }
    float step() { return static_cast<float>(static_cast<int>(next() % 2001) - 1000) / 300.0f; }
};
}  // namespace

TEST_CASE("Slot deltas are folded into the pages once 2^hash_bits / 8 are held, and every reader, incremental or not, "
          "and the export see the same floats as adding each step in turn",
          "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened_writer = store_.open(), opened_reader = store_.open(Database::Mode::read_only);
    store::Database &writer = *opened_writer, &reader = *opened_reader;
    constexpr unsigned bits = 12;  // 4,096 slots: a fold once more than 512 deltas are held
    REQUIRE(store::linear_fold_slots(bits) == 512);
    std::vector<float> expected(std::size_t{1} << bits, 0.0f);  // each step added in turn
    std::vector<float> incremental(expected.size(), 0.0f), table(expected.size(), 0.0f);
    std::uint64_t seen = 0;
    RandomSteps random{12345};
    bool folded = false, kept = false;
    for (int batch = 0; batch < 40; ++batch) {
        store::TrainingBatch::LinearStep s;
        s.hash_bits = bits;
        // 60 distinct slots, and a step whose sums round: thirds, tenths.
        for (model::Slot k = 0; k < 60; ++k) s.slots.push_back((random.next() >> 8) % 64 + 64 * k);
        s.step = {random.step(), 0.0};
        if (batch == 25) {  // a whole-table step, as a refit writes: folded at once
            s.slots.clear();
            for (model::Slot k = 0; k < (1u << bits); k += 3) s.slots.push_back(k);
        }
        for (const auto slot : s.slots) expected[slot] += s.step.feature;
        store::TrainingBatch b(writer);
        b.add_linear(s);
        b.commit();
        const auto since = reader.linear_weights_since(seen);
        read_linear(incremental, since);
        seen = since.sequence;
        REQUIRE(incremental == expected);
        const auto all = reader.linear_weights_since(0);
        std::fill(table.begin(), table.end(), 0.0f);
        read_linear(table, all);
        REQUIRE(table == expected);
        REQUIRE(all.deltas.size() <= store::linear_fold_slots(bits));
        if (!all.pages.empty()) folded = true;
        if (!all.deltas.empty()) kept = true;
    }
    REQUIRE(folded);
    REQUIRE(kept);
    REQUIRE(!reader.linear_weights_since(0).deltas.empty());  // the export below folds what is held

    // An export writes the weights as readers see them; its import holds them as pages.
    std::stringstream exported;
    writer.export_model(exported);
    mailsift::testing::TestStore other(store_.kind());
    const auto imported = other.open();
    imported->import_model(exported, "export");
    const auto w = imported->linear_weights_since(0);
    REQUIRE(w.deltas.empty());
    std::fill(table.begin(), table.end(), 0.0f);
    read_linear(table, w);
    REQUIRE(table == expected);
}

TEST_CASE("A batch sums its linear steps by slot while they touch few slots and in a table of every slot beyond: "
          "the same floats either way",
          "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened_writer = store_.open(), opened_reader = store_.open(Database::Mode::read_only);
    store::Database &writer = *opened_writer, &reader = *opened_reader;
    constexpr unsigned bits = 12;  // a batch sums 4,096 / 32 = 128 slots by slot, more in a table
    std::vector<float> expected(std::size_t{1} << bits, 0.0f), table(expected.size(), 0.0f);
    RandomSteps random{777};
    auto batch_of = [&](int steps, model::Slot slots_each) {
        // A batch adds its steps from 0, in order, and then that sum to what is stored.
        std::vector<float> sum(expected.size(), 0.0f);
        store::TrainingBatch b(writer);
        for (int i = 0; i < steps; ++i) {
            store::TrainingBatch::LinearStep s;
            s.hash_bits = bits;
            // Slots met again within the batch, a slot twice in one step, and sums that round.
            for (model::Slot k = 0; k < slots_each; ++k) s.slots.push_back((random.next() >> 8) % 200);
            s.step = {random.step(), 0.0};
            for (const auto slot : s.slots) sum[slot] += s.step.feature;
            b.add_linear(s);
        }
        b.commit();
        for (std::size_t j = 0; j < sum.size(); ++j) expected[j] += sum[j];
        std::fill(table.begin(), table.end(), 0.0f);
        read_linear(table, reader.linear_weights_since(0));
        return table == expected;
    };
    REQUIRE(batch_of(3, 20));   // 60 slot additions: summed by slot
    REQUIRE(batch_of(12, 40));  // 480: by slot at first, then in the table
    REQUIRE(batch_of(1, 300));  // one step past the limit at once
}

TEST_CASE("Rehearsal samples are kept by class and position, and only while their message is learned as that class",
          "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened = store_.open();
    store::Database& db = *opened;
    store::TrainingBatch::LinearStep step;
    step.hash_bits = 12;
    step.slots = {1};
    step.step = {0.1f, 0.0};
    const std::string prefix_a = "From: a@example.org\nSubject: offer\n\nBuy now", prefix_b(3000, 'b');
    {
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{10, 2}, {11, 1}}), 1, &step);
        b.offer_linear_sample(12, Class::spam, 0, digest(1), prefix_a);
        b.learn(digest(2), Class::ham, terms({{12, 1}}), 1, &step);
        b.offer_linear_sample(12, Class::ham, 0, digest(2), prefix_b);
        b.learn(digest(3), Class::ham, terms({{13, 1}}), 1, &step);
        b.offer_linear_sample(12, Class::ham, std::nullopt, digest(3), "not kept");
        // Read back in the same transaction, with the message's features.
        const auto a = b.linear_sample(Class::spam, 0);
        REQUIRE(a);
        REQUIRE(a->prefix == prefix_a);
        REQUIRE(a->terms == std::vector<std::pair<model::FeatureId, std::uint32_t>>{{10, 2}, {11, 1}});
        REQUIRE_FALSE(b.linear_sample(Class::spam, 1));
        b.commit();
    }
    const auto w = db.linear_weights_since(0);
    REQUIRE(w.seen_spam == 1);
    REQUIRE(w.seen_ham == 2);
    auto all = db.linear_samples();
    REQUIRE(all.size() == 2);
    REQUIRE(all[0].c == Class::ham);
    REQUIRE(all[0].prefix == prefix_b);
    REQUIRE(all[1].c == Class::spam);
    // A moved message's sample is no longer its old class's; a new one takes the position.
    {
        store::TrainingBatch b(db);
        REQUIRE(b.learn(digest(1), Class::ham, terms({{10, 2}, {11, 1}}), 2, &step) == store::LearnResult::moved);
        REQUIRE_FALSE(b.linear_sample(Class::spam, 0));
        b.learn(digest(4), Class::ham, terms({{14, 1}}), 2, &step);
        b.offer_linear_sample(12, Class::ham, 0, digest(4), "replaced");
        b.commit();
    }
    all = db.linear_samples();
    REQUIRE(all.size() == 1);
    REQUIRE(all[0].prefix == "replaced");
    REQUIRE(db.linear_weights_since(0).seen_ham == 3);
}

TEST_CASE("A batch that offers a sample and takes no linear step still counts the offer", "[store]") {
    // A learner's last batch may hold only an offer: its message was learned in the
    // batch before, and no replay was due. The count must reach the store all the same.
    FOR_EACH_BACKEND(store_);
    const auto opened = store_.open();
    store::Database& db = *opened;
    {
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{10, 1}}), 1, nullptr);
        b.commit();
    }
    {
        store::TrainingBatch b(db);
        b.offer_linear_sample(12, Class::spam, 0, digest(1), "From: a@example.org\n\nBuy now");
        b.commit();
    }
    const auto w = db.linear_weights_since(0);
    REQUIRE(w.seen_spam == 1);
    REQUIRE(w.seen_ham == 0);
    REQUIRE(db.linear_samples().size() == 1);
}

TEST_CASE("A message the counts already know is learned by the linear scorer alone, once", "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened = store_.open();
    store::Database& db = *opened;
    store::TrainingBatch::LinearStep step;
    step.hash_bits = 12;
    step.slots = {7};
    step.step = {0.5f, 0.0};
    {
        store::TrainingBatch b(db);
        REQUIRE(b.learn_uncounted(digest(1), Class::spam, step) == store::LearnResult::learned);
        REQUIRE(b.learn_uncounted(digest(1), Class::spam, step) == store::LearnResult::already_learned);
        REQUIRE(b.learned_class(digest(1)) == Class::spam);
        REQUIRE(b.learn(digest(1), Class::spam, terms({{10, 1}}), 1, &step) == store::LearnResult::already_learned);
        REQUIRE(b.learn_uncounted(digest(2), Class::ham, step) == store::LearnResult::learned);
        REQUIRE(b.learn_uncounted(digest(2), Class::spam, step) == store::LearnResult::moved);
        b.commit();
    }
    // Three steps: digest 1 once, digest 2 twice; no counts.
    auto w = db.linear_weights_since(0);
    REQUIRE(w.bias == Approx(1.5));
    REQUIRE(db.statistics().messages.spam == 0);
    {
        store::TrainingBatch b(db);
        // The other class with its counts: learned (the counts never had it), its step taken.
        REQUIRE(b.learn(digest(1), Class::ham, terms({{10, 1}}), 2, &step) == store::LearnResult::learned);
        REQUIRE(b.unlearn(digest(2), Class::ham) == store::UnlearnResult::learned_as_other_class);
        REQUIRE(b.unlearn(digest(2), Class::spam) == store::UnlearnResult::unlearned);
        REQUIRE_FALSE(b.learned_class(digest(2)));
        b.commit();
    }
    REQUIRE(db.statistics().messages.ham == 1);
    REQUIRE(db.linear_weights_since(0).bias == Approx(2.0));
    std::ostringstream out;
    {
        store::TrainingBatch b(db);
        b.learn_uncounted(digest(3), Class::spam, step);
        b.commit();
    }
    db.export_model(out);
    const std::string e = out.str();
    const auto at = e.find("\nlinear-message\t");
    REQUIRE(at != std::string::npos);
    REQUIRE(e.find("\nlinear-message\t", at + 1) == std::string::npos);  // digest 3 only
    REQUIRE(e.compare(e.find('\n', at + 1) - 5, 5, "\tspam") == 0);
}

TEST_CASE("The last refit's own change is kept beside the weights and replaced by the next, on every backend", "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened = store_.open();
    store::Database& db = *opened;
    REQUIRE_FALSE(db.linear_refit_layer());  // no refit yet
    auto refit = [&](std::uint64_t mark, std::optional<store::RefitLayer> layer) {
        std::vector<float> delta(std::size_t{1} << 12, 0.0f);
        delta[7] = 1.0f;
        store::TrainingBatch b(db);
        b.add_linear_weights(12, std::move(delta), 0.5, 0.0, mark, /*exclusive=*/false, std::move(layer));
        b.commit();
    };
    refit(1, store::RefitLayer{12, 0.25, -0.125, {{3, 0.5f}, {4000, -1.5f}}});
    auto kept = db.linear_refit_layer();
    REQUIRE(kept);
    REQUIRE(kept->hash_bits == 12);
    REQUIRE(kept->bias == 0.25);
    REQUIRE(kept->nb_weight == -0.125);
    REQUIRE(kept->slots.size() == 2);
    REQUIRE(kept->slots[0].slot == 3);
    REQUIRE(kept->slots[0].delta == 0.5f);
    REQUIRE(kept->slots[1].slot == 4000);
    REQUIRE(kept->slots[1].delta == -1.5f);
    // The next refit's replaces it whole.
    refit(2, store::RefitLayer{12, 1.0, 0.0, {{9, 2.0f}}});
    kept = db.linear_refit_layer();
    REQUIRE(kept);
    REQUIRE(kept->bias == 1.0);
    REQUIRE(kept->slots.size() == 1);
    REQUIRE(kept->slots[0].slot == 9);
    // A change without one (a step, a refit written before) leaves it as it was.
    refit(3, std::nullopt);
    kept = db.linear_refit_layer();
    REQUIRE(kept);
    REQUIRE(kept->slots.size() == 1);
    REQUIRE(kept->slots[0].delta == 2.0f);
    // A refit rolled back (superseded) leaves the last one's.
    std::vector<float> delta(std::size_t{1} << 12, 0.0f);
    store::TrainingBatch b(db);
    b.add_linear_weights(12, std::move(delta), 0.0, 0.0, 3, /*exclusive=*/true, store::RefitLayer{12, 0.0, 0.0, {{5, 1.0f}}});
    REQUIRE_THROWS_AS(b.commit(), store::RefitSuperseded);
    REQUIRE(db.linear_refit_layer()->slots[0].slot == 9);
}

TEST_CASE("A store written before the last refit was kept (SQLite schema 17, PostgreSQL 12) gets its table, empty",
          "[store]") {
    FOR_EACH_BACKEND(s);
    s.open();  // created at the current schema
    s.exec("DROP TABLE linear_refit");
    s.exec(s.kind() == "sqlite" ? "PRAGMA user_version = 17" : "UPDATE mailsift_schema SET version = 12");
    auto db = s.open();
    CHECK(s.value(s.kind() == "sqlite" ? "PRAGMA user_version" : "SELECT version FROM mailsift_schema") ==
          (s.kind() == "sqlite" ? store::schema_version : db->statistics().schema_version));
    REQUIRE_FALSE(db->linear_refit_layer());  // the next refit continues from the weights, as before
    store::TrainingBatch b(*db);
    b.add_linear_weights(12, std::vector<float>(std::size_t{1} << 12, 0.0f), 0.0, 0.0, 1, false,
                         store::RefitLayer{12, 0.5, 0.0, {{1, 1.0f}}});
    b.commit();
    REQUIRE(db->linear_refit_layer()->bias == 0.5);
}

TEST_CASE("Of two refits of the same samples the second is dropped whole, on every backend", "[store]") {
    // Two daemons of a fleet both see a correction and both refit: the weights
    // must take one refit, not two, and the store says which samples it covered.
    FOR_EACH_BACKEND(store_);
    const auto opened = store_.open();
    store::Database& db = *opened;
    {
        store::TrainingBatch b(db);
        b.offer_linear_sample(12, Class::spam, 0, digest(1), "From: a@example.org\n\nBuy now");
        b.offer_linear_sample(12, Class::ham, 0, digest(2), "From: b@example.org\n\nThe minutes");
        b.commit();
    }
    const auto before = db.linear_weights_since(0);
    REQUIRE(before.seen_spam + before.seen_ham == 2);
    REQUIRE(before.refit_mark == 0);
    // The state alone, after the highest change number: no page, no slot delta.
    const auto state = db.linear_state();
    REQUIRE(state.pages.empty());
    REQUIRE(state.refit_mark == 0);
    REQUIRE(state.seen_spam == 1);

    auto refit = [&](std::uint64_t mark, float by) {
        std::vector<float> delta(std::size_t{1} << 12, 0.0f);
        delta[7] = by;
        store::TrainingBatch b(db);
        b.add_linear_weights(12, std::move(delta), 0.5, 0.0, mark);
        b.commit();
    };
    refit(2, 1.0f);
    const auto once = db.linear_weights_since(0);
    REQUIRE(db.linear_state().refit_mark == 2);
    REQUIRE_THROWS_AS(refit(2, 1.0f), store::RefitSuperseded);  // the same samples again
    REQUIRE_THROWS_AS(refit(1, 1.0f), store::RefitSuperseded);  // fewer
    const auto after = db.linear_weights_since(0);
    REQUIRE(mailsift::testing::linear_table(after) == mailsift::testing::linear_table(once));
    REQUIRE(after.bias == once.bias);
    {
        // A learn command's refit, due because it learned (steps that offered
        // no sample), is written whatever the mark, which it never lowers.
        std::vector<float> delta(std::size_t{1} << 12, 0.0f);
        delta[9] = 0.25f;
        store::TrainingBatch b(db);
        b.add_linear_weights(12, std::move(delta), 0.0, 0.0, 1, /*exclusive=*/false);
        b.commit();
        REQUIRE(mailsift::testing::linear_table(db.linear_weights_since(0))[9] ==
                mailsift::testing::linear_table(once)[9] + 0.25f);
        REQUIRE(db.linear_state().refit_mark == 2);
    }
    REQUIRE(db.linear_state().refit_mark == 2);
    // A message learned since: a refit that covers it is taken.
    {
        store::TrainingBatch b(db);
        b.offer_linear_sample(12, Class::ham, 1, digest(3), "From: c@example.org\n\nLunch?");
        b.commit();
    }
    refit(3, 1.0f);
    REQUIRE(db.linear_state().refit_mark == 3);
    REQUIRE(mailsift::testing::linear_table(db.linear_weights_since(0))[7] ==
            mailsift::testing::linear_table(once)[7] + 1.0f);
    REQUIRE(mailsift::testing::linear_table(db.linear_weights_since(0))[9] ==
            mailsift::testing::linear_table(once)[9] + 0.25f);
    // A sample dropped (an undone correction) while a refit that read the
    // samples before the drop is under way: that refit lands, and the samples
    // are still newer than it, so the next refit comes.
    auto drop = [&] {
        store::TrainingBatch b(db);
        b.drop_linear_sample(12);
        b.commit();
    };
    drop();
    REQUIRE(db.linear_state().samples_version() == 4);
    REQUIRE(db.linear_state().samples_dropped == 1);
    REQUIRE(db.linear_state().refit_mark == 3);  // behind: a refit reads version 4's samples...
    drop();                                                        // ...and another undo drops one meanwhile
    refit(4, 0.0f);                                                // the refit lands
    const auto after_drop = db.linear_state();
    REQUIRE(after_drop.refit_mark == 4);
    REQUIRE(after_drop.refit_mark < after_drop.samples_version());
    refit(5, 0.0f);
    REQUIRE(db.linear_state().refit_mark == db.linear_state().samples_version());
}

TEST_CASE("A store from before the refit mark counts as refitted over the samples it holds", "[store]") {
    // SQLite schema 16, PostgreSQL 11: no linear_state.refit_mark. Upgrading
    // must not make the daemon refit a model nobody changed.
    FOR_EACH_BACKEND(store_);
    {
        const auto opened = store_.open();
        store::TrainingBatch b(*opened);
        b.offer_linear_sample(12, Class::spam, 0, digest(1), "From: a@example.org\n\nBuy now");
        b.offer_linear_sample(12, Class::ham, 0, digest(2), "From: b@example.org\n\nThe minutes");
        b.commit();
    }
    store_.exec("ALTER TABLE linear_state DROP COLUMN refit_mark");
    store_.exec("ALTER TABLE linear_state DROP COLUMN samples_dropped");
    const auto db = reopened_from(store_, 16, 11);
    CHECK(db->linear_weights_since(0).refit_mark == 2);
}

TEST_CASE("A store from before per-user layers gains corrections.layer_user, its corrections in no layer", "[store]") {
    // SQLite schema 18, PostgreSQL 13: no corrections.layer_user.
    FOR_EACH_BACKEND(store_);
    {
        const auto opened = store_.open();
        store::TrainingBatch b(*opened);
        store::CorrectionUndo undo;
        undo.layer = {0.5f, {1, 2}, "bob@example.org", "news@deals.example"};
        b.record_correction({model::Verdict::ham, Class::spam, 1000, digest(1), "cli:root", undo});
        b.commit();
        REQUIRE(opened->layer_census().users == 1);
    }
    store_.exec("DROP INDEX corrections_layer_user");
    store_.exec("ALTER TABLE corrections DROP COLUMN layer_user");
    const auto db = reopened_from(store_, 18, 13);
    // The column is back, empty: a correction recorded before is in no layer (the layers came with it).
    CHECK(db->layer_census().users == 0);
    CHECK(db->layer_corrections("bob@example.org").empty());
    {
        store::TrainingBatch b(*db);
        store::CorrectionUndo undo;
        undo.layer = {0.5f, {1, 2}, "bob@example.org", "news@deals.example"};
        b.record_correction({model::Verdict::ham, Class::spam, 2000, digest(2), "cli:root", undo});
        b.commit();
    }
    CHECK(db->layer_census().users == 1);
    CHECK(db->layer_corrections("bob@example.org").size() == 1);
}
