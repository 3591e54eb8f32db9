// The linear scorer: an empty model scores nothing, each step follows the
// log-loss gradient normalised by the message's length (a learned message moves
// its own score by at most `step`), and confident right answers barely move it.
#include "mailsift/model/linear.hpp"

#include <catch2/catch.hpp>
#include <cmath>
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
        const double g = m.learn(slots, 0.0, /*spam=*/true);  // σ(0) = 0.5: g = 0.5
        CHECK(g == Approx(0.5));
        CHECK(m.score(slots, 0.0).z() == Approx(4.0 * 0.5).epsilon(1e-5));
    }
}

TEST_CASE("one step is the log-loss gradient", "[linear]") {
    LinearModel m(small());
    const std::vector<Slot> slots{7, 9};
    const double g = m.learn(slots, 0.0, /*spam=*/true);
    CHECK(g == Approx(0.5));  // y − σ(0)
    CHECK(m.weight(7) == Approx(0.05));
    CHECK(m.weight(9) == Approx(0.05));
    CHECK(m.weight(8) == 0.0f);
    CHECK(m.bias() == Approx(0.05));
    CHECK(m.nb_weight() == Approx(1.0));  // nb input 0: no gradient for u
    // z = b + u·nb + Σw = 0.05 + 0 + 0.1
    CHECK(m.score(slots, 0.0).z() == Approx(0.15));

    const double g2 = m.learn(slots, 2.0, /*spam=*/false);
    const double z2 = 0.15 + 2.0;
    CHECK(g2 == Approx(-probability_from_log_odds(z2)));
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
    const double g_right = copy.learn(spam, 0.0, true);
    CHECK(std::abs(g_right) < 0.1);
    // An error: a large one.
    const double g_wrong = copy.learn(spam, 0.0, false);
    CHECK(std::abs(g_wrong) > 0.9);
}
