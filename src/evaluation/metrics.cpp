// Evaluation metrics; formulas and sources in metrics.hpp.
#include "mailsift/evaluation/metrics.hpp"

#include <algorithm>
#include <cmath>

namespace mailsift::evaluation {

double area_under_roc(const std::vector<Scored>& scored) {
    // Mann–Whitney: rank all scores (ties get the mean rank), sum the spam ranks.
    std::vector<std::pair<double, bool>> v;
    v.reserve(scored.size());
    std::size_t n_spam = 0;
    for (const auto& s : scored) {
        v.emplace_back(s.log_odds, s.spam);
        n_spam += s.spam ? 1 : 0;
    }
    const std::size_t n_ham = v.size() - n_spam;
    if (n_spam == 0 || n_ham == 0) return 1.0;
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    double spam_rank_sum = 0.0;
    for (std::size_t i = 0; i < v.size();) {
        std::size_t j = i;
        while (j + 1 < v.size() && v[j + 1].first == v[i].first) ++j;
        const double mean_rank = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
        for (std::size_t k = i; k <= j; ++k) {
            if (v[k].second) spam_rank_sum += mean_rank;
        }
        i = j + 1;
    }
    const double ns = static_cast<double>(n_spam), nh = static_cast<double>(n_ham);
    return (spam_rank_sum - ns * (ns + 1) / 2) / (ns * nh);
}

double fnr_at_fpr(const std::vector<Scored>& scored, double max_fpr) {
    std::vector<double> ham, spam;
    for (const auto& s : scored) (s.spam ? spam : ham).push_back(s.log_odds);
    if (spam.empty()) return 0.0;
    if (ham.empty()) return 0.0;
    std::sort(ham.begin(), ham.end(), std::greater<>());
    const auto allowed = static_cast<std::size_t>(std::floor(max_fpr * static_cast<double>(ham.size()) + 1e-9));
    if (allowed >= ham.size()) return 0.0;
    // The threshold is the (allowed+1)-th highest ham score: spam must be strictly above it.
    const double threshold = ham[allowed];
    const auto missed = std::count_if(spam.begin(), spam.end(), [&](double x) { return x <= threshold; });
    return static_cast<double>(missed) / static_cast<double>(spam.size());
}

double lam_percent(std::size_t ham_misclassified, std::size_t ham, std::size_t spam_misclassified, std::size_t spam) {
    auto rate = [](std::size_t k, std::size_t n) { return (static_cast<double>(k) + 0.5) / (static_cast<double>(n) + 1.0); };
    auto logit = [](double p) { return std::log(p / (1 - p)); };
    const double l = (logit(rate(ham_misclassified, ham)) + logit(rate(spam_misclassified, spam))) / 2;
    return 100.0 / (1.0 + std::exp(-l));
}

Report evaluate(const std::vector<Scored>& scored) {
    Report r;
    r.messages = scored.size();
    for (const auto& s : scored) {
        auto& c = r.confusion;
        if (s.spam) {
            ++r.spam;
            ++(s.verdict == model::Verdict::spam ? c.spam_as_spam
               : s.verdict == model::Verdict::ham ? c.spam_as_ham
                                                  : c.spam_as_unsure);
        } else {
            ++r.ham;
            ++(s.verdict == model::Verdict::spam ? c.ham_as_spam
               : s.verdict == model::Verdict::ham ? c.ham_as_ham
                                                  : c.ham_as_unsure);
        }
    }
    auto percent = [](std::size_t k, std::size_t n) {
        return n == 0 ? 0.0 : 100.0 * static_cast<double>(k) / static_cast<double>(n);
    };
    r.auc = area_under_roc(scored);
    r.one_minus_roca_percent = 100.0 * (1.0 - r.auc);
    r.false_positive_percent = percent(r.confusion.ham_as_spam, r.ham);
    r.false_negative_percent = percent(r.confusion.spam_as_ham, r.spam);
    r.unsure_percent = percent(r.confusion.ham_as_unsure + r.confusion.spam_as_unsure, r.messages);
    r.fnr_at_fpr_01_percent = 100.0 * fnr_at_fpr(scored, 0.001);
    r.fnr_at_fpr_1_percent = 100.0 * fnr_at_fpr(scored, 0.01);
    // For lam%, a message is "marked spam" only with the spam verdict.
    r.lam_percent = lam_percent(r.confusion.ham_as_spam, r.ham, r.confusion.spam_as_ham + r.confusion.spam_as_unsure,
                                r.spam);

    // ROC: lower the threshold through every distinct score, highest first.
    std::vector<const Scored*> order;
    order.reserve(scored.size());
    for (const auto& s : scored) order.push_back(&s);
    std::sort(order.begin(), order.end(), [](const Scored* a, const Scored* b) { return a->log_odds > b->log_odds; });
    r.roc.push_back({0.0, 0.0});
    std::size_t tp = 0, fp = 0;
    for (std::size_t i = 0; i < order.size();) {
        std::size_t j = i;
        while (j < order.size() && order[j]->log_odds == order[i]->log_odds) {
            (order[j]->spam ? tp : fp) += 1;
            ++j;
        }
        r.roc.push_back({r.ham ? static_cast<double>(fp) / static_cast<double>(r.ham) : 0.0,
                         r.spam ? static_cast<double>(tp) / static_cast<double>(r.spam) : 0.0});
        i = j;
    }

    // Reliability: 10 bins of predicted probability; the last bin includes 1.0.
    r.reliability.resize(10);
    std::vector<double> predicted_sum(10, 0.0);
    std::vector<std::size_t> spam_count(10, 0);
    for (std::size_t b = 0; b < 10; ++b) r.reliability[b] = {b / 10.0, (b + 1) / 10.0, 0, 0.0, 0.0};
    for (const auto& s : scored) {
        const auto b = std::min<std::size_t>(9, static_cast<std::size_t>(std::max(0.0, s.probability) * 10));
        ++r.reliability[b].messages;
        predicted_sum[b] += s.probability;
        spam_count[b] += s.spam ? 1 : 0;
    }
    for (std::size_t b = 0; b < 10; ++b) {
        auto& bin = r.reliability[b];
        if (bin.messages == 0) continue;
        bin.mean_predicted = predicted_sum[b] / static_cast<double>(bin.messages);
        bin.observed_spam = static_cast<double>(spam_count[b]) / static_cast<double>(bin.messages);
        const double gap = std::abs(bin.mean_predicted - bin.observed_spam);
        if (r.messages > 0) r.expected_calibration_error += gap * static_cast<double>(bin.messages) / static_cast<double>(r.messages);
        if (bin.messages >= Report::min_messages_for_worst_bin && (!r.worst_bin || gap > r.worst_bin_gap)) {
            r.worst_bin = b;
            r.worst_bin_gap = gap;
        }
    }

    // Histogram of log-odds in 20 equal bins over the observed range.
    if (!scored.empty()) {
        double lo = scored[0].log_odds, hi = lo;
        for (const auto& s : scored) {
            lo = std::min(lo, s.log_odds);
            hi = std::max(hi, s.log_odds);
        }
        if (hi == lo) hi = lo + 1.0;
        const std::size_t bins = 20;
        const double width = (hi - lo) / static_cast<double>(bins);
        r.histogram.resize(bins);
        for (std::size_t b = 0; b < bins; ++b) {
            r.histogram[b].low = lo + width * static_cast<double>(b);
            r.histogram[b].high = lo + width * static_cast<double>(b + 1);
        }
        for (const auto& s : scored) {
            const auto b = std::min(bins - 1, static_cast<std::size_t>((s.log_odds - lo) / width));
            ++(s.spam ? r.histogram[b].spam : r.histogram[b].ham);
        }
    }
    return r;
}

}  // namespace mailsift::evaluation
