// The linear scorer: an empty model scores nothing, each step follows the
// log-loss gradient normalised by the message's length (a learned message moves
// its own score by at most `step`), and confident right answers barely move it.
#include "mailsift/model/linear.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "mailsift/model/naive_bayes.hpp"

using namespace mailsift::model;

namespace {
LinearParameters small() {
    LinearParameters p;
    p.hash_bits = 8;
    p.step = 0.3;  // three slots and the bias: 0.1 each
    p.nb_rate = 0.01;
    p.nb_clip = 30.0;
    return p;
}
}  // namespace

TEST_CASE("an empty linear model scores the naive-Bayes input alone, clipped", "[linear]") {
    LinearModel m(small());
    const std::vector<Slot> slots{1, 2, 3};
    CHECK(m.nb_weight() == 1.0);
    CHECK(m.score(slots, 2.5).z() == Approx(2.5));
    CHECK(m.score(slots, -4.0).z() == Approx(-4.0));
    CHECK(m.size() == 256);
    // The input is clipped, so one wild naive-Bayes score cannot dominate.
    CHECK(m.score(slots, 500.0).z() == Approx(30.0));
    CHECK(m.score(slots, -500.0).nb_input == Approx(-30.0));
    // The default bound: the naive Bayes moves a score by half a log-odds at most.
    const LinearModel d{LinearParameters{}};
    CHECK(d.score(slots, 500.0).z() == Approx(0.5));
    CHECK(d.score(slots, -500.0).z() == Approx(-0.5));
}

TEST_CASE("a learned message moves its own score by at most the step, however long it is", "[linear]") {
    for (const std::size_t n : {2u, 40u, 3000u}) {
        LinearParameters p = small();
        p.hash_bits = 14;
        p.step = 4.0;
        LinearModel m(p);
        std::vector<Slot> slots;
        for (Slot j = 0; j < n; ++j) slots.push_back(j * 3);
        const auto st = m.learn(slots, 0.0, /*spam=*/true);  // σ(0) = 0.5: g = 0.5
        CHECK(st.feature * static_cast<double>(n + 1) == Approx(4.0 * 0.5).epsilon(1e-5));
        CHECK(m.score(slots, 0.0).z() == Approx(4.0 * 0.5).epsilon(1e-5));
    }
}

TEST_CASE("one step is the log-loss gradient", "[linear]") {
    LinearModel m(small());
    const std::vector<Slot> slots{7, 9};
    const auto st = m.learn(slots, 0.0, /*spam=*/true);
    CHECK(st.feature == Approx(0.1 * 0.5));  // η·(y − σ(0)), η = 0.3 / 3
    CHECK(m.weight(7) == Approx(0.05));
    CHECK(m.weight(9) == Approx(0.05));
    CHECK(m.weight(8) == 0.0f);
    CHECK(m.bias() == Approx(0.05));
    CHECK(m.nb_weight() == Approx(1.0));  // nb input 0: no gradient for u
    // z = b + u·nb + Σw = 0.05 + 0 + 0.1
    CHECK(m.score(slots, 0.0).z() == Approx(0.15));

    const auto st2 = m.learn(slots, 2.0, /*spam=*/false);
    const double z2 = 0.15 + 2.0;
    const double g2 = -probability_from_log_odds(z2);
    CHECK(st2.feature == Approx(0.1 * g2));
    CHECK(m.nb_weight() == Approx(1.0 + 0.01 * g2 * 2.0));
    CHECK(m.weight(7) == Approx(0.05 + 0.1 * g2));
}

TEST_CASE("errors move the weights, confident right answers barely do", "[linear]") {
    LinearModel m(small());
    const std::vector<Slot> spam{1, 2, 3, 4}, ham{5, 6, 7, 8};
    for (int i = 0; i < 400; ++i) {
        m.learn(spam, 0.0, true);
        m.learn(ham, 0.0, false);
    }
    CHECK(m.score(spam, 0.0).z() > 2.0);
    CHECK(m.score(ham, 0.0).z() < -2.0);
    // Already right with confidence: a small step.
    LinearModel copy = m;
    const double eta = 0.3 / 5;  // four slots and the bias
    CHECK(std::abs(copy.learn(spam, 0.0, true).feature) < 0.1 * eta);  // |g| < 0.1
    // An error: a large one.
    CHECK(std::abs(copy.learn(spam, 0.0, false).feature) > 0.9 * eta);  // |g| > 0.9
}

TEST_CASE("learners are found by name, the default first, and an unknown one is refused", "[linear]") {
    const auto names = learner_names();
    REQUIRE(names.size() >= 2);
    CHECK(names.front() == "logistic");
    CHECK(LinearParameters{}.learner == "logistic");
    for (const auto name : names) {
        REQUIRE(find_learner(name) != nullptr);
        CHECK(find_learner(name)->name() == name);
    }
    CHECK(find_learner("perceptron2") == nullptr);
    LinearParameters p = small();
    p.learner = "perceptron2";
    CHECK_THROWS_AS(LinearModel(p), std::invalid_argument);
}

TEST_CASE("passive-aggressive: no step beyond the margin, just enough to reach it, at most the step", "[linear]") {
    LinearParameters p = small();
    p.learner = "passive_aggressive";
    p.step = 4.0;
    p.nb_rate = 0.0;
    LinearModel m(p);
    const std::vector<Slot> slots{1, 2, 3};
    // Score 0, label spam: loss 1, below the step: the score moves to the margin, 1.
    m.learn(slots, 0.0, true);
    CHECK(m.score(slots, 0.0).z() == Approx(1.0));
    // Right by the margin: passive.
    CHECK(m.learn(slots, 0.0, true).feature == 0.0f);
    CHECK(m.score(slots, 0.0).z() == Approx(1.0));
    // Wrong by 1 + 1 = 2 for ham: it moves to -1.
    m.learn(slots, 0.0, false);
    CHECK(m.score(slots, 0.0).z() == Approx(-1.0));
    // A loss beyond the step moves the score by the step alone.
    LinearModel far(p);
    far.learn(slots, 0.0, true);  // z = 1
    for (int i = 0; i < 5; ++i) far.apply(slots, {1.0f, 0.0});  // z = 1 + 5·4 = 21
    const double before = far.score(slots, 0.0).z();
    far.learn(slots, 0.0, false);
    CHECK(before - far.score(slots, 0.0).z() == Approx(4.0));
}

TEST_CASE("a model of some slots scores them as the whole table does, and refuses other slots and learning",
          "[linear]") {
    LinearModel whole(small());
    const std::vector<Slot> a{1, 7, 200}, b{7, 9, 255};
    whole.learn(a, 1.0, true);
    whole.learn(b, -2.0, false);
    const std::vector<Slot> covered{1, 7, 9, 200, 255};
    LinearModel some(small(), covered);
    REQUIRE(some.partial());
    REQUIRE_FALSE(whole.partial());
    REQUIRE(some.size() == whole.size());
    REQUIRE(some.weights().size() == covered.size());
    // Filled as a store's reader fills it: each covered slot's weight, and the state.
    for (std::size_t i = 0; i < covered.size(); ++i) some.weights()[i] = whole.weight(covered[i]);
    some.set_state(whole.bias(), whole.nb_weight());
    for (const auto& slots : {a, b, std::vector<Slot>{255, 1}}) {
        const LinearScore x = whole.score(slots, 0.25), y = some.score(slots, 0.25);
        CHECK(x.z() == y.z());
        CHECK(x.features == y.features);
        for (Slot j : slots) CHECK(whole.weight(j) == some.weight(j));
    }
    CHECK(some.weight(9) != 0.0f);
    const std::vector<Slot> outside{1, 8};
    CHECK_THROWS_AS(some.score(outside, 0.0), std::logic_error);
    CHECK_THROWS_AS(some.weight(3), std::logic_error);
    CHECK_THROWS_AS(some.learn(a, 0.0, true), std::logic_error);
}
