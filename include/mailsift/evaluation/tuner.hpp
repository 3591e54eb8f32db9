// mailsift::evaluation tuner — searches the model's settings on a held-out
// part of the data it is given (which should be training data only), within a
// time budget, and picks verdict thresholds from the held-out scores.
//
// Search: coordinate descent from the given settings. For each setting in turn
// (order shuffled by the seed) every candidate value is tried with the others
// at their best so far; a candidate wins if it lowers 1-ROCA%, or keeps it
// (within 1e-4) and lowers FNR at FPR <= 0.1%. Rounds repeat until a round
// changes nothing or the budget is spent. Deterministic for a seed.
//
// Thresholds, on the log-odds of the best settings' held-out scores:
//   spam: one above the (k+1)-th highest ham score, k = floor(max_fpr * n_ham),
//         so at most k held-out ham would be called spam;
//   ham:  one below the (j+1)-th lowest spam score, j = floor(max_fnr * n_spam);
//   if they cross, both become their midpoint (no unsure band).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "mailsift/evaluation/runner.hpp"

namespace mailsift::evaluation {

struct TuneOptions {
    std::chrono::seconds budget{300};
    std::uint64_t seed = 1;
    std::size_t holdout_every = 5;  // every Nth message is held out
    double max_fpr = 0.001;          // for the spam threshold
    double max_fnr = 0.005;          // for the ham threshold
};

struct Trial {
    std::string change;  // "alpha = 0.03", or "start"
    Report report;
    bool kept = false;
};

struct TuneResult {
    engine::Settings best;
    Report report;                   // of the best settings, held out
    std::vector<Trial> trials;
    double spam_log_odds = 0.0, ham_log_odds = 0.0;
    std::vector<std::string> config_lines;  // to put in mailsift.conf
    bool budget_spent = false;
};

TuneResult tune(const std::vector<LabelledMessage>& corpus, const engine::Settings& start, const TuneOptions& options,
                const std::filesystem::path& work_dir, const Loader& load, const Progress& progress = {});

}  // namespace mailsift::evaluation
