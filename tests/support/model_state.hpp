// Test support: a store trained on the fixtures as `learn --spam` and
// `learn --ham` leave it, and the model read back from a store (counts,
// linear weights, rehearsal samples) for comparing two models.
#pragma once

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <vector>

#include "fixture.hpp"
#include "mailsift/engine/filter.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/engine/trainer.hpp"

namespace mailsift::testing {

// The three spam and three ham fixtures, learned and committed; `refit`: the
// linear scorer refitted after, as `learn` ends.
inline void train_fixtures(store::Database& db, bool refit = false) {
    engine::Trainer t(db, engine::Settings{});
    for (auto f : {"spam_money_offer.eml", "spam_cheap_pills.eml", "spam_investment.eml"}) {
        t.learn(fixture(f), fixture(f).size(), store::Class::spam, 1000);
    }
    for (auto f : {"ham_meeting_notes.eml", "ham_patch_review.eml", "ham_build_report.eml"}) {
        t.learn(fixture(f), fixture(f).size(), store::Class::ham, 1000);
    }
    t.commit();
    if (refit) REQUIRE(t.refit_linear() > 0);
}

struct ModelState {
    model::Counts counts;
    std::vector<float> weights;
    double bias = 0.0, nb_weight = 0.0;
    std::vector<store::LinearSample> samples;
};

inline ModelState model_state(store::Database& db) {
    ModelState m;
    m.counts = db.load_counts(model::TermFrequency::raw);
    const engine::Filter f(db, engine::Settings{});
    const auto loaded = f.model();
    REQUIRE(loaded->linear);
    m.weights.assign(loaded->linear->weights().begin(), loaded->linear->weights().end());
    m.bias = loaded->linear->bias();
    m.nb_weight = loaded->linear->nb_weight();
    m.samples = db.linear_samples();
    return m;
}

inline void require_same_counts(const model::Counts& a, const model::Counts& b) {
    REQUIRE(a.messages == b.messages);
    REQUIRE(a.features.size() == b.features.size());
    for (const auto& [id, c] : a.features) {
        const auto it = b.features.find(id);
        REQUIRE(it != b.features.end());
        REQUIRE(it->second.spam == c.spam);
        REQUIRE(it->second.ham == c.ham);
    }
}

// Weights that had steps added and taken away: equal to float rounding.
inline void require_weights_near(const ModelState& a, const ModelState& b) {
    REQUIRE(a.weights.size() == b.weights.size());
    double worst = 0.0;
    for (std::size_t i = 0; i < a.weights.size(); ++i) {
        worst = std::max(worst, static_cast<double>(std::abs(a.weights[i] - b.weights[i])));
    }
    REQUIRE(worst < 1e-6);
    REQUIRE(a.bias == Approx(b.bias).margin(1e-6));
    REQUIRE(a.nb_weight == Approx(b.nb_weight).margin(1e-9));
}

}  // namespace mailsift::testing
