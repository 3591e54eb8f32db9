// mailsift::engine combine — the one place where a message's score is made
// from the two scorers, used by classify (Filter), explain, the daemon and
// `evaluate` (through the Trainer's models) alike.
//
//   model = naive_bayes: the naive-Bayes score, its probability calibrated by
//                        calibration_temperature;
//   model = linear:      z = bias + u · clip(nb / nb_temperature, ±nb_clip)
//                            + Σ slot weights,  P = σ(z / linear_temperature),
//                        the naive-Bayes reasons kept for explanations. nb and
//                        the slots leave out what only the milter knows (the
//                        envelope's env: facts), so that a message scores the
//                        same at the milter, in a mailbox and in the CLI.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "mailsift/engine/settings.hpp"
#include "mailsift/features/feature_bag.hpp"
#include "mailsift/model/linear.hpp"
#include "mailsift/model/naive_bayes.hpp"

namespace mailsift::engine {

struct Combined {
    model::Score score;                        // what decides: log-odds, probability, verdict, reasons
    double nb_log_odds = 0.0;                  // the naive-Bayes log-odds, whichever decides
    std::optional<model::LinearScore> linear;  // the linear scorer's parts, when it decides
    bool clipped = false;                      // its naive-Bayes input was clipped
};

// The linear scorer's input from the naive-Bayes log-odds, before clipping:
// over the linear scorer's own nb_temperature (not the naive Bayes's
// calibration_temperature, which only calibrates `model = naive_bayes`).
inline double linear_nb_input(double nb_log_odds, const Settings& s) { return nb_log_odds / s.linear.nb_temperature; }
// The score of `scorer = linear`: z as log-odds, P = σ(z / linear_temperature), the verdict by the thresholds.
model::Score linear_score(const model::LinearScore& z, const Settings& s);

// What scoring reads of a feature bag: id, count, and whether it is a header
// feature (model::Term::header), in the bag's order. Without `envelope`, the
// facts only the milter knows (features::milter_only) are left out.
std::vector<model::Term> scoring_terms(const features::FeatureBag& bag, bool envelope = true);

// `linear` null: the naive Bayes decides. `slots`: the message's slots (features::message_slots).
Combined combine(const features::FeatureBag& bag, std::span<const model::Slot> slots, const model::Snapshot& counts,
                 const model::LinearModel* linear, const Settings& settings, std::size_t reasons = 0);

}  // namespace mailsift::engine
