// Metrics on small cases worked out by hand.
#include "mailsift/evaluation/metrics.hpp"

#include <catch2/catch.hpp>

using namespace mailsift;
using evaluation::Scored;

namespace {
Scored s(bool spam, double log_odds, double p = 0.5, model::Verdict v = model::Verdict::unsure) {
    return {spam, log_odds, p, v};
}
// spam scores 3, 2, 1; ham scores 2, 0, -1.
std::vector<Scored> example() {
    return {s(true, 3), s(true, 2), s(true, 1), s(false, 2), s(false, 0), s(false, -1)};
}
}  // namespace

TEST_CASE("AUC counts pairs with ties as one half", "[evaluation]") {
    // Of 9 spam/ham pairs: 3 + (2 + ½) + 2 = 7.5 are ordered right.
    REQUIRE(evaluation::area_under_roc(example()) == Approx(7.5 / 9));
    const auto r = evaluation::evaluate(example());
    REQUIRE(r.one_minus_roca_percent == Approx(100 * 1.5 / 9));
    REQUIRE(evaluation::area_under_roc({s(true, 1), s(false, 0)}) == 1.0);
    REQUIRE(evaluation::area_under_roc({s(true, 0), s(false, 1)}) == 0.0);
}

TEST_CASE("FNR at a false-positive budget uses the next ham score as the threshold", "[evaluation]") {
    // No ham may pass: threshold 2 (the highest ham); spam 2 and 1 are not above it.
    REQUIRE(evaluation::fnr_at_fpr(example(), 0.0) == Approx(2.0 / 3));
    // One ham of three may pass: threshold 0; every spam is above it.
    REQUIRE(evaluation::fnr_at_fpr(example(), 0.34) == Approx(0.0));
    // 0.001 of 3 ham allows none.
    REQUIRE(evaluation::fnr_at_fpr(example(), 0.001) == Approx(2.0 / 3));
}

TEST_CASE("lam% averages the two error rates in logit space", "[evaluation]") {
    // hm = sm = (1 + ½)/(3 + 1) = 0.375, so lam = 37.5%.
    REQUIRE(evaluation::lam_percent(1, 3, 1, 3) == Approx(37.5));
    // Symmetric rates around ½ average to ½: hm = 0.125, sm = 0.875.
    REQUIRE(evaluation::lam_percent(0, 3, 3, 3) == Approx(50.0));
}

TEST_CASE("The ROC curve steps through every distinct score", "[evaluation]") {
    const auto r = evaluation::evaluate(example());
    const std::vector<std::pair<double, double>> expected{{0, 0}, {0, 1.0 / 3}, {1.0 / 3, 2.0 / 3},
                                                          {1.0 / 3, 1}, {2.0 / 3, 1}, {1, 1}};
    REQUIRE(r.roc.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        INFO(i);
        REQUIRE(r.roc[i].fpr == Approx(expected[i].first));
        REQUIRE(r.roc[i].tpr == Approx(expected[i].second));
    }
}

TEST_CASE("The confusion table and rates follow the verdicts", "[evaluation]") {
    using V = model::Verdict;
    const std::vector<Scored> v{s(true, 5, 0.99, V::spam), s(true, 0, 0.5, V::unsure), s(true, -5, 0.01, V::ham),
                                s(false, -5, 0.01, V::ham), s(false, 5, 0.99, V::spam)};
    const auto r = evaluation::evaluate(v);
    REQUIRE(r.confusion.spam_as_spam == 1);
    REQUIRE(r.confusion.spam_as_unsure == 1);
    REQUIRE(r.confusion.spam_as_ham == 1);
    REQUIRE(r.confusion.ham_as_spam == 1);
    REQUIRE(r.false_positive_percent == Approx(50.0));
    REQUIRE(r.false_negative_percent == Approx(100.0 / 3));
    REQUIRE(r.unsure_percent == Approx(20.0));
}

TEST_CASE("Reliability bins compare predicted probability with the observed spam share", "[evaluation]") {
    // Bin 0.9-1.0: predicted 0.95 and 1.0, one spam of two; bin 0.0-0.1: one ham at 0.0.
    const std::vector<Scored> v{s(true, 3, 0.95), s(false, 4, 1.0), s(false, -9, 0.0)};
    const auto r = evaluation::evaluate(v);
    REQUIRE(r.reliability.size() == 10);
    REQUIRE(r.reliability[9].messages == 2);
    REQUIRE(r.reliability[9].mean_predicted == Approx(0.975));
    REQUIRE(r.reliability[9].observed_spam == Approx(0.5));
    REQUIRE(r.reliability[0].messages == 1);
    REQUIRE(r.reliability[0].observed_spam == Approx(0.0));
    // ECE weighs each bin's gap by its share: 2/3 · |0.975 − 0.5| + 1/3 · 0.
    REQUIRE(r.expected_calibration_error == Approx(0.475 * 2 / 3));
    REQUIRE_FALSE(r.worst_bin.has_value());  // no bin holds 30 messages
    std::size_t in_histogram = 0;
    for (const auto& b : r.histogram) in_histogram += b.spam + b.ham;
    REQUIRE(in_histogram == 3);
}

TEST_CASE("The worst reliability bin is the one of at least 30 messages furthest off", "[evaluation]") {
    // 40 messages predicted 0.15, 20 of them spam (gap 0.35); 30 at 0.95, all spam
    // (gap 0.05); 5 at 0.55, all ham (gap 0.55, too few messages to count).
    std::vector<Scored> v;
    for (int i = 0; i < 40; ++i) v.push_back(s(i < 20, -1, 0.15));
    for (int i = 0; i < 30; ++i) v.push_back(s(true, 3, 0.95));
    for (int i = 0; i < 5; ++i) v.push_back(s(false, 0.2, 0.55));
    const auto r = evaluation::evaluate(v);
    REQUIRE(r.worst_bin == std::optional<std::size_t>(1));
    REQUIRE(r.worst_bin_gap == Approx(0.35));
    REQUIRE(r.expected_calibration_error == Approx((40 * 0.35 + 30 * 0.05 + 5 * 0.55) / 75));
}
