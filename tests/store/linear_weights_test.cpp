// Store tests of the linear scorer's weights: its steps added once per learned message and read
// back by what changed, slot deltas folded into pages, a batch's sums by slot or in a table (the
// same floats), and a message learned by the linear scorer alone; on every backend (FOR_EACH_BACKEND).
#include "mailsift/store/training_batch.hpp"
#include "mailsift/store/sqlite_database.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "../support/backends.hpp"
#include "store_support.hpp"

using namespace mailsift;
using mailsift::testing::digest;
using mailsift::testing::terms;
using mailsift::testing::read_linear;
using store::Class;
using Database = store::SqliteDatabase;

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
