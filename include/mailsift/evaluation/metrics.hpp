// mailsift::evaluation metrics — pure functions from scored, labelled messages
// to the numbers `mailsift evaluate` reports. No I/O.
//
// Definitions (Cormack & Lynam, TREC Spam Track 2005; Fawcett 2006):
//   AUC         P(score of a random spam > score of a random ham), ties count ½
//               (the Mann–Whitney statistic); 1-ROCA% = 100·(1 − AUC).
//   FNR at FPR ≤ x: pick the threshold t that lets at most ⌊x·n_ham⌋ ham score
//               strictly above it; FNR is the share of spam not strictly above t.
//   lam%        100·logit⁻¹((logit(hm) + logit(sm)) / 2), hm the share of ham
//               marked spam, sm the share of spam not marked spam, each
//               computed as (k + ½)/(n + 1) so that 0 and 1 stay finite.
//   Reliability predicted P(spam) in 10 equal bins with the observed spam share.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "mailsift/model/score.hpp"

namespace mailsift::evaluation {

struct Scored {
    bool spam = false;  // the gold label
    double log_odds = 0.0;
    double probability = 0.5;
    model::Verdict verdict = model::Verdict::unsure;
};

struct RocPoint {
    double fpr = 0.0;  // fractions, 0..1
    double tpr = 0.0;
};

struct ReliabilityBin {
    double low = 0.0, high = 0.0;  // predicted P(spam) range
    std::size_t messages = 0;
    double mean_predicted = 0.0;
    double observed_spam = 0.0;    // share of spam among the bin's messages
};

struct HistogramBin {
    double low = 0.0, high = 0.0;  // log-odds range
    std::size_t spam = 0, ham = 0;
};

struct Confusion {
    std::size_t spam_as_spam = 0, spam_as_unsure = 0, spam_as_ham = 0;
    std::size_t ham_as_spam = 0, ham_as_unsure = 0, ham_as_ham = 0;
};

struct Report {
    std::size_t messages = 0, spam = 0, ham = 0;
    double auc = 0.0;
    double one_minus_roca_percent = 0.0;
    Confusion confusion;
    double false_positive_percent = 0.0;  // ham marked spam, of all ham
    double false_negative_percent = 0.0;  // spam marked ham, of all spam
    double unsure_percent = 0.0;          // of all messages
    double fnr_at_fpr_01_percent = 0.0;   // FNR at FPR ≤ 0.1%
    double fnr_at_fpr_1_percent = 0.0;    // FNR at FPR ≤ 1%
    double lam_percent = 0.0;
    std::vector<RocPoint> roc;            // from (0,0) to (1,1), one point per distinct score
    std::vector<ReliabilityBin> reliability;
    // Expected calibration error over the 10 reliability bins: the mean of
    // |mean predicted - observed spam share| weighted by each bin's messages.
    double expected_calibration_error = 0.0;
    // The reliability bin holding at least `min_messages_for_worst_bin` messages
    // with the largest such gap, or none (no bin that full).
    static constexpr std::size_t min_messages_for_worst_bin = 30;
    std::optional<std::size_t> worst_bin;
    double worst_bin_gap = 0.0;
    std::vector<HistogramBin> histogram;
};

double area_under_roc(const std::vector<Scored>& scored);
// FNR (a fraction) when at most ⌊max_fpr·n_ham⌋ ham may score strictly above the threshold.
double fnr_at_fpr(const std::vector<Scored>& scored, double max_fpr);
double lam_percent(std::size_t ham_misclassified, std::size_t ham, std::size_t spam_misclassified, std::size_t spam);

Report evaluate(const std::vector<Scored>& scored);

}  // namespace mailsift::evaluation
