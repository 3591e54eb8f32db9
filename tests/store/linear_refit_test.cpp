// Store tests of the linear scorer's rehearsal samples and refits: samples kept by class and
// position while their message stays learned, an offer counted without a step, the last refit's own
// change kept beside the weights, and of two refits of the same samples only the first taken; on
// every backend (FOR_EACH_BACKEND).
#include "mailsift/store/training_batch.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../support/backends.hpp"
#include "store_support.hpp"

using namespace mailsift;
using mailsift::testing::digest;
using mailsift::testing::terms;
using store::Class;

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
