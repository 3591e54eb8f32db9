// Multinomial naive Bayes: compiles counts into per-feature log-odds weights
// and sums them. Formulas and symbols are stated in naive_bayes.hpp.
#include "mailsift/model/naive_bayes.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace mailsift::model {

Snapshot::Snapshot(const Counts& counts, const Parameters& params)
    : params_(params), messages_(counts.messages), totals_(counts.feature_totals) {
    assert(params.alpha > 0.0 && "smoothing must be positive or unseen-in-one-class features give log 0");
    const double a = params.alpha;
    entries_.reserve(counts.features.size());
    for (const auto& [id, c] : counts.features) {
        const double local = std::log((static_cast<double>(c.spam) + a) / (static_cast<double>(c.ham) + a));
        entries_.emplace(id, Entry{local, c});
    }
    update_shared();
}

void Snapshot::update_shared() {
    const double n_s = static_cast<double>(messages_.spam);
    const double n_h = static_cast<double>(messages_.ham);
    prior_log_odds_ = std::log((n_s + 1.0) / (n_h + 1.0));  // (N_s+1)/(N+2) ÷ (N_h+1)/(N+2)
    const double a = params_.alpha;
    const double v = static_cast<double>(entries_.size());
    shared_ = std::log(static_cast<double>(totals_.ham) + a * v) - std::log(static_cast<double>(totals_.spam) + a * v);
}

std::optional<double> Snapshot::weight(FeatureId id) const {
    auto it = entries_.find(id);
    if (it == entries_.end()) return std::nullopt;
    return it->second.local + shared_;
}

ClassCounts Snapshot::counts(FeatureId id) const {
    auto it = entries_.find(id);
    return it == entries_.end() ? ClassCounts{} : it->second.counts;
}

void Snapshot::learn(std::span<const Term> terms, bool spam) {
    const double a = params_.alpha;
    for (const Term& t : terms) {
        if (t.count == 0) continue;
        // The same counts the store keeps for this term-frequency mode.
        const std::uint64_t n = params_.term_frequency == TermFrequency::boolean ? 1 : t.count;
        Entry& e = entries_.try_emplace(t.id, Entry{0.0, {}}).first->second;
        (spam ? e.counts.spam : e.counts.ham) += n;
        (spam ? totals_.spam : totals_.ham) += n;
        e.local = std::log((static_cast<double>(e.counts.spam) + a) / (static_cast<double>(e.counts.ham) + a));
    }
    (spam ? messages_.spam : messages_.ham) += 1;
    update_shared();
}

const char* to_string(Verdict v) {
    switch (v) {
        case Verdict::ham: return "ham";
        case Verdict::unsure: return "unsure";
        case Verdict::spam: return "spam";
    }
    return "unsure";
}

double effective_count(std::uint32_t count, TermFrequency tf) {
    switch (tf) {
        case TermFrequency::raw: return static_cast<double>(count);
        case TermFrequency::boolean: return count > 0 ? 1.0 : 0.0;
    }
    return static_cast<double>(count);
}

double probability_from_log_odds(double log_odds) {
    // Written per sign so that exp never overflows.
    if (log_odds >= 0) return 1.0 / (1.0 + std::exp(-log_odds));
    const double e = std::exp(log_odds);
    return e / (1.0 + e);
}

Verdict verdict_for(double log_odds, double probability, const Parameters& params) {
    const bool spam = params.spam_log_odds ? log_odds >= *params.spam_log_odds : probability >= params.spam_threshold;
    if (spam) return Verdict::spam;
    const bool ham = params.ham_log_odds ? log_odds <= *params.ham_log_odds : probability <= params.ham_threshold;
    return ham ? Verdict::ham : Verdict::unsure;
}

Score score(std::span<const Term> terms, const Snapshot& snapshot, std::size_t reasons) {
    Score s;
    s.log_odds = snapshot.prior_log_odds();
    const TermFrequency tf = snapshot.parameters().term_frequency;
    std::vector<Contribution> contributions;
    std::vector<std::uint8_t> views;  // which view each contribution belongs to
    if (reasons > 0) {
        contributions.reserve(terms.size());
        views.reserve(terms.size());
    }
    // Evidence and known-feature count per view: [0] content, [1] headers.
    const Parameters& params = snapshot.parameters();
    const bool split = params.header_length_norm_features > 0;
    double evidence[2] = {0.0, 0.0};
    std::size_t known[2] = {0, 0};
    for (const Term& t : terms) {
        const auto it = snapshot.entries_.find(t.id);
        if (it == snapshot.entries_.end()) continue;  // unknown features carry no evidence
        const double c = effective_count(t.count, tf) * (it->second.local + snapshot.shared_);
        const int view = split && t.header ? 1 : 0;
        evidence[view] += c;
        ++known[view];
        if (reasons > 0) {
            contributions.push_back({t.id, c});
            views.push_back(static_cast<std::uint8_t>(view));
        }
    }
    // sqrt(K/n) when n > K known features, else 1 (also when K = 0: off).
    auto scale = [](std::size_t k, std::size_t n) {
        return k > 0 && n > k ? std::sqrt(static_cast<double>(k) / static_cast<double>(n)) : 1.0;
    };
    const double scales[2] = {scale(params.length_norm_features, known[0]),
                              scale(params.header_length_norm_features, known[1])};
    s.log_odds += evidence[0] * scales[0] + evidence[1] * scales[1];
    for (std::size_t i = 0; i < contributions.size(); ++i) contributions[i].log_odds *= scales[views[i]];
    s.probability = probability_from_log_odds(s.log_odds / snapshot.parameters().calibration_temperature);
    s.verdict = verdict_for(s.log_odds, s.probability, snapshot.parameters());

    if (reasons > 0) {
        // Only the `reasons` strongest of each sign are wanted: partial sorts, not a full one.
        const auto ham_begin = std::partition(contributions.begin(), contributions.end(),
                                              [](const Contribution& c) { return c.log_odds > 0; });
        const auto take = [reasons](auto first, auto last, auto stronger, std::vector<Contribution>& out) {
            const auto n = std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(reasons), last - first);
            std::partial_sort(first, first + n, last, stronger);
            out.assign(first, first + n);
        };
        take(contributions.begin(), ham_begin,
             [](const Contribution& a, const Contribution& b) { return a.log_odds > b.log_odds; }, s.toward_spam);
        const auto ham_end = std::partition(ham_begin, contributions.end(),
                                            [](const Contribution& c) { return c.log_odds < 0; });
        take(ham_begin, ham_end,
             [](const Contribution& a, const Contribution& b) { return a.log_odds < b.log_odds; }, s.toward_ham);
    }
    return s;
}

}  // namespace mailsift::model
