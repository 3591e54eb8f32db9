// mailsift::model — what a score is, whichever scorer gave it: the verdict,
// the log-odds and calibrated probability, and the features that weighed most
// either way. Naive Bayes (naive_bayes.hpp) and the combined score
// (engine/combine.hpp) give one; the daemon, the store's scan log and the
// evaluation read one without knowing how it was made.
#pragma once

#include <cstdint>
#include <vector>

namespace mailsift::model {

// A feature, as every model knows it: a 64-bit id (features/feature_hash.hpp).
using FeatureId = std::uint64_t;

enum class Verdict : std::uint8_t { ham = 0, unsure = 1, spam = 2 };  // values are stored in databases
const char* to_string(Verdict v);

struct Contribution {
    FeatureId id = 0;
    double log_odds = 0.0;  // n_f · weight
};

struct Score {
    double log_odds = 0.0;     // never clamped; higher is spammier
    double probability = 0.5;  // P(spam|x)
    Verdict verdict = Verdict::unsure;
    std::vector<Contribution> toward_spam;  // largest first
    std::vector<Contribution> toward_ham;   // most negative first
};

// P(spam|x) = 1 / (1 + e^(−log-odds)), without overflow at either end.
double probability_from_log_odds(double log_odds);

}  // namespace mailsift::model
