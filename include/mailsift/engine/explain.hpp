// mailsift::engine explain — what the model makes of one message, term by
// term, as data: `mailsift explain` prints it and the console shows it.
//
// The parts add up: with the naive-Bayes scorer, the log-odds is the prior
// plus every feature's weight (the strongest are listed); with the linear
// scorer, it is bias + u x naive-Bayes input + the weight of every slot the
// message touches (all listed, strongest first).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mailsift/engine/scorer.hpp"

namespace mailsift::engine {

struct LinearExplanation {
    model::LinearScore score;      // bias, u, input, Σ slot weights; z() is the log-odds
    double nb_log_odds = 0.0;      // the naive-Bayes log-odds the input is taken from
    bool clipped = false;          // the input was clipped to ±nb_clip
    std::vector<SlotWeight> slots; // every slot of the message, by weight, toward spam first

    // The `n` strongest slots each way and the others summed, as they are shown.
    SlotSplit split(std::size_t n) const { return split_slots(slots, n, score.features); }
};

struct Explanation {
    Classification classification;  // verdict, probability, log-odds, the naive-Bayes reasons
    std::uint64_t spam_messages = 0, ham_messages = 0;  // what the model learned
    std::size_t features = 0;                          // distinct features in the model
    double prior_log_odds = 0.0;
    std::optional<LinearExplanation> linear;  // settings.scorer == linear
};

// Scores `raw` with `model` (as classify does, reasons capped by the model's
// settings) and takes it apart.
Explanation explain(const std::shared_ptr<const Model>& model, std::string_view raw,
                    const features::Envelope* envelope = nullptr);

}  // namespace mailsift::engine
