// Store tests of the counts a model is: learning, moving and unlearning a message, an uncommitted
// batch, and what readers learn of them (data_version, the features changed since their model,
// counts_of beside visit_counts), on real SQLite files and, where they hold for every backend, on a
// real PostgreSQL too (FOR_EACH_BACKEND).
#include "mailsift/store/training_batch.hpp"
#include "mailsift/store/sqlite_database.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../support/backends.hpp"
#include "store_support.hpp"

using namespace mailsift;
using mailsift::testing::digest;
using mailsift::testing::terms;
using mailsift::testing::export_of;
using store::Class;
using Database = store::SqliteDatabase;

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

TEST_CASE("counts_of reads some rows with the totals and the vocabulary visit_counts gives, through learning, "
          "unlearning, prune and import",
          "[store]") {
    FOR_EACH_BACKEND(s);
    auto opened = s.open();
    store::Database& db = *opened;
    // What the whole read says: the class totals and the number of rows.
    auto whole = [&](model::TermFrequency tf) {
        std::size_t n = 0, visited = 0;
        const auto totals = db.visit_counts(tf, [&](std::size_t size) { n = size; }, [&](model::FeatureId, model::ClassCounts) { ++visited; });
        REQUIRE(n == visited);
        return std::pair(totals, n);
    };
    auto agrees = [&](std::vector<model::FeatureId> ids) {
        for (const auto tf : {model::TermFrequency::boolean, model::TermFrequency::raw}) {
            const auto [totals, n] = whole(tf);
            const auto some = db.counts_of(ids, tf);
            REQUIRE(some.vocabulary == n);
            REQUIRE(some.totals.messages == totals.messages);
            REQUIRE(some.totals.feature_totals == totals.feature_totals);
            REQUIRE(some.totals.sequence == totals.sequence);
            const auto counts = db.load_counts(tf);
            REQUIRE(some.features.size() == ids.size());
            for (std::size_t i = 0; i < ids.size(); ++i) {
                const auto it = counts.features.find(ids[i]);
                REQUIRE(some.features[i].id == ids[i]);
                REQUIRE(some.features[i].present == (it != counts.features.end()));
                if (it != counts.features.end()) REQUIRE(some.features[i].counts == it->second);
            }
        }
    };
    agrees({1, 2});
    {
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{1, 2}, {2, 1}, {3, 1}}), 100);
        b.learn(digest(2), Class::ham, terms({{3, 4}, {4, 1}}), 100);
        b.learn(digest(3), Class::ham, terms({{5, 1}, {static_cast<model::FeatureId>(-7), 1}}), 900);
        b.commit();
    }
    agrees({4, 1, 99, 3, static_cast<model::FeatureId>(-7)});
    REQUIRE(db.counts_of({}, model::TermFrequency::boolean).vocabulary == 6);
    {
        // Unlearning removes rows that held nothing else; learning again in the same batch does not count twice.
        store::TrainingBatch b(db);
        b.unlearn(digest(2), Class::ham);
        b.learn(digest(4), Class::spam, terms({{1, 1}, {6, 1}}), 200);
        // Read mid-batch, through the batch: the rows as they were before it.
        const auto mid = b.stored_counts({6, 4, 1}, model::TermFrequency::raw);
        REQUIRE_FALSE(mid[0]);
        REQUIRE(mid[1] == model::ClassCounts{0, 1});
        REQUIRE(mid[2] == model::ClassCounts{2, 0});
        b.commit();
    }
    agrees({4, 6, 3});
    REQUIRE(db.counts_of({}, model::TermFrequency::boolean).vocabulary == 6);  // 4 went, 6 came
    // A prune of features seen once and not since 500.
    db.prune(0, 500);
    agrees({5, 6, 1, static_cast<model::FeatureId>(-7)});
    // An import fills a new store: its vocabulary is the rows it holds.
    mailsift::testing::TestStore other(s.kind());
    const auto opened_other = other.open();
    std::istringstream in(export_of(db));
    opened_other->import_model(in, "m.txt");
    REQUIRE(opened_other->counts_of({}, model::TermFrequency::raw).vocabulary ==
            db.counts_of({}, model::TermFrequency::raw).vocabulary);
}
