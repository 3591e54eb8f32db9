// mailsift::engine score parts — one message's score taken apart into parts
// that add up to it, as data: what `mailsift explain` prints, what the console
// shows for a scanned message, and what mailsiftd keeps with each line of the
// console's history (encode(), a few hundred bytes) so that a message scored
// days ago can still be explained as it was scored.
//
//   naive Bayes: log-odds = prior + Σ feature weights (the strongest listed each way)
//   linear:      log-odds = bias + u × input + Σ slot weights, the input being
//                the naive-Bayes log-odds / calibration_temperature, clipped;
//                the strongest slots are listed each way, the others summed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mailsift/model/linear.hpp"
#include "mailsift/model/naive_bayes.hpp"

namespace mailsift::engine {

// A feature's part of the naive-Bayes log-odds.
struct Reason {
    std::string feature;
    double log_odds = 0.0;
    model::ClassCounts counts;  // messages (or occurrences) per class behind the weight
};

// A slot's part of the linear scorer's sum.
struct SlotWeight {
    double weight = 0.0;
    model::Slot slot = 0;
    std::string source;  // the slot's 4-grams and features in this message
};

// The strongest slots each way, and the others summed: with the listed
// weights, others_sum adds up to the slots' part of the score.
struct SlotSplit {
    std::vector<SlotWeight> toward_spam;  // strongest first
    std::vector<SlotWeight> toward_ham;   // most negative first
    std::size_t others = 0;
    double others_sum = 0.0;
};

// Up to `n` slots each way from `slots` (any order), the rest summed so that
// the split adds up to `total` (the Σ w_j of the score).
SlotSplit split_slots(std::span<const SlotWeight> slots, std::size_t n, double total);
// The same from a message's slots and the model's weights, the sources left
// empty: only the listed slots need spelling out (features::slot_sources).
SlotSplit split_slots(std::span<const model::Slot> slots, const model::LinearModel& linear, std::size_t n,
                      double total);

struct LinearParts {
    model::LinearScore score;  // bias, u, input, Σ slot weights; z() is the log-odds
    double nb_log_odds = 0.0;  // the naive-Bayes log-odds the input is taken from
    bool clipped = false;      // the input was clipped to ±nb_clip
    std::size_t slots = 0;     // slots the message touched
    SlotSplit split;
};

// At most this many features and slots each way are kept, whatever `reasons` says.
inline constexpr std::size_t most_parts = 20;

struct ScoreParts {
    double log_odds = 0.0;        // the score: the naive-Bayes log-odds, or the linear z
    double prior_log_odds = 0.0;  // the naive-Bayes sum starts here
    double nb_log_odds = 0.0;     // = prior + every feature's weight
    std::vector<Reason> toward_spam, toward_ham;  // the strongest features of that sum
    std::optional<LinearParts> linear;            // scorer = linear
};

// A compact text form (tab-separated lines, numbers to nine significant
// digits), and back; a feature or source longer than 80 bytes is
// cut. nullopt for text not written by encode() (or by a later version).
std::string encode(const ScoreParts& p);
std::optional<ScoreParts> decode_score_parts(std::string_view text);

}  // namespace mailsift::engine
