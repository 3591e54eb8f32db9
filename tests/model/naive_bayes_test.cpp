// Hand-worked numbers: the seeds' China/Tokyo example (IIR §13.2, Laplace α = 1).
#include "mailsift/model/naive_bayes.hpp"

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <memory>
#include <unordered_map>
#include <vector>

using namespace mailsift::model;

namespace {
// "spam" plays the seeds' class c = China, "ham" the class not-China.
constexpr FeatureId chinese = 1, beijing = 2, shanghai = 3, macao = 4, tokyo = 5, japan = 6;

Counts china_counts() {
    Counts c;
    c.messages = {3, 1};
    c.feature_totals = {8, 3};
    c.features[chinese] = {5, 1};
    c.features[beijing] = {1, 0};
    c.features[shanghai] = {1, 0};
    c.features[macao] = {1, 0};
    c.features[tokyo] = {0, 1};
    c.features[japan] = {0, 1};
    return c;
}

Parameters laplace_raw() {
    Parameters p;
    p.alpha = 1.0;
    p.term_frequency = TermFrequency::raw;
    p.calibration_temperature = 1.0;  // the seeds' plain model
    p.length_norm_features = 0;
    p.feature_confidence = 0;
    return p;
}
}  // namespace

TEST_CASE("The China/Tokyo example gives the seeds' parameter estimates", "[model]") {
    const Snapshot snap(china_counts(), laplace_raw());
    // P(Chinese|c) = 6/14, P(Chinese|~c) = 2/9
    REQUIRE(*snap.weight(chinese) == Approx(std::log((6.0 / 14) / (2.0 / 9))));
    // P(Tokyo|c) = 1/14, P(Tokyo|~c) = 2/9
    REQUIRE(*snap.weight(tokyo) == Approx(std::log((1.0 / 14) / (2.0 / 9))));
    REQUIRE(*snap.weight(japan) == Approx(*snap.weight(tokyo)));
    REQUIRE(snap.vocabulary() == 6);
}

TEST_CASE("The China/Tokyo test document is classified as China", "[model]") {
    const Snapshot snap(china_counts(), laplace_raw());
    const Term doc[] = {{chinese, 3}, {tokyo, 1}, {japan, 1}};
    const Score s = score(doc, snap, 3);

    // The seeds use the maximum-likelihood prior 3/4 : 1/4; ours is Laplace's (3+1)/(4+2) : (1+1)/(4+2).
    const double p_c = 4.0 / 6 * std::pow(3.0 / 7, 3) * (1.0 / 14) * (1.0 / 14);
    const double p_not = 2.0 / 6 * std::pow(2.0 / 9, 3) * (2.0 / 9) * (2.0 / 9);
    REQUIRE(s.log_odds == Approx(std::log(p_c / p_not)));
    REQUIRE(s.probability == Approx(p_c / (p_c + p_not)));
    REQUIRE(s.log_odds > 0);

    SECTION("the reasons name Chinese toward the class and Tokyo/Japan against it") {
        REQUIRE(s.toward_spam.size() == 1);
        REQUIRE(s.toward_spam[0].id == chinese);
        REQUIRE(s.toward_spam[0].log_odds == Approx(3 * std::log((3.0 / 7) / (2.0 / 9))));
        REQUIRE(s.toward_ham.size() == 2);
    }
}

TEST_CASE("Unknown features carry no evidence", "[model]") {
    const Snapshot snap(china_counts(), laplace_raw());
    const Term unknown[] = {{999, 7}};
    REQUIRE(score(unknown, snap).log_odds == Approx(std::log(4.0 / 2.0)));
    REQUIRE_FALSE(snap.weight(999).has_value());
}

TEST_CASE("Boolean term frequency counts each feature once", "[model]") {
    Parameters p = laplace_raw();
    p.term_frequency = TermFrequency::boolean;
    const Snapshot snap(china_counts(), p);
    const Term doc[] = {{chinese, 3}};
    REQUIRE(score(doc, snap).log_odds == Approx(std::log(2.0) + std::log((3.0 / 7) / (2.0 / 9))));
    REQUIRE(effective_count(5, TermFrequency::raw) == 5.0);
}

TEST_CASE("Lidstone smoothing uses alpha in numerator and alpha times V in the denominator", "[model]") {
    Parameters p = laplace_raw();
    p.alpha = 0.5;
    const Snapshot snap(china_counts(), p);
    // P(Tokyo|c) = 0.5/(8+3), P(Tokyo|~c) = 1.5/(3+3)
    REQUIRE(*snap.weight(tokyo) == Approx(std::log((0.5 / 11) / (1.5 / 6))));
}

TEST_CASE("Per-feature confidence scales each weight by n/(n+k), and the contributions still add up", "[model]") {
    Parameters p = laplace_raw();
    p.feature_confidence = 2.0;
    const Snapshot snap(china_counts(), p);
    const Snapshot plain(china_counts(), laplace_raw());
    const Term doc[] = {{chinese, 3}, {tokyo, 1}, {japan, 1}};
    const Score s = score(doc, snap, 3);
    // Chinese was seen 5 + 1 times, Tokyo and Japan once each (the counts the snapshot holds).
    const double expected = std::log(4.0 / 2.0) + 3 * *plain.weight(chinese) * 6.0 / 8.0 +
                            *plain.weight(tokyo) * 1.0 / 3.0 + *plain.weight(japan) * 1.0 / 3.0;
    REQUIRE(s.log_odds == Approx(expected));
    double sum = snap.prior_log_odds();
    for (const auto& c : s.toward_spam) sum += c.log_odds;
    for (const auto& c : s.toward_ham) sum += c.log_odds;
    REQUIRE(sum == Approx(s.log_odds));
}

TEST_CASE("Learning then unlearning a message restores the snapshot, colliding ids and id 0 included", "[model]") {
    Parameters p;
    Counts c;
    c.messages = {20, 20};
    // Ids sharing their low bits probe into one another's slots.
    for (FeatureId k = 1; k <= 40; ++k) c.features[k << 20] = {k % 3, k % 5 + 1};
    for (const auto& [id, cc] : c.features) {
        c.feature_totals.spam += cc.spam;
        c.feature_totals.ham += cc.ham;
    }
    Snapshot snap(c, p);
    const Snapshot original(c, p);
    std::vector<Term> message;
    for (FeatureId k = 41; k <= 70; ++k) message.push_back({k << 20, 1, false});  // new, colliding
    message.push_back({0, 1, false});                                              // the id kept outside the table
    message.push_back({5 << 20, 1, false});                                        // known
    const double before = score(message, snap).log_odds;
    snap.learn(message, true);
    REQUIRE(snap.vocabulary() == original.vocabulary() + 31);
    snap.unlearn(message, true);
    REQUIRE(snap.vocabulary() == original.vocabulary());
    REQUIRE(score(message, snap).log_odds == Approx(before));
    for (const auto& [id, cc] : c.features) {
        INFO(id);
        REQUIRE(snap.weight(id).has_value());
        REQUIRE(*snap.weight(id) == Approx(*original.weight(id)));
        REQUIRE(snap.counts(id) == cc);
    }
    REQUIRE_FALSE(snap.weight(0).has_value());
    REQUIRE_FALSE(snap.weight(41 << 20).has_value());
}

TEST_CASE("Verdicts follow the configured thresholds", "[model]") {
    Parameters p;
    p.spam_threshold = 0.9;
    p.ham_threshold = 0.2;
    REQUIRE(verdict_for(3.0, 0.95, p) == Verdict::spam);
    REQUIRE(verdict_for(2.2, 0.9, p) == Verdict::spam);
    REQUIRE(verdict_for(0.0, 0.5, p) == Verdict::unsure);
    REQUIRE(verdict_for(-1.4, 0.2, p) == Verdict::ham);
    SECTION("log-odds thresholds take precedence where probabilities saturate") {
        p.spam_log_odds = 40.0;
        p.ham_log_odds = -40.0;
        REQUIRE(verdict_for(39.0, 1.0, p) == Verdict::unsure);  // P rounds to 1 already
        REQUIRE(verdict_for(40.0, 1.0, p) == Verdict::spam);
        REQUIRE(verdict_for(-39.0, 0.0, p) == Verdict::unsure);
        REQUIRE(verdict_for(-41.0, 0.0, p) == Verdict::ham);
    }
    REQUIRE(std::string(to_string(Verdict::unsure)) == "unsure");
}

TEST_CASE("Log-odds are never clamped and probabilities never overflow", "[model]") {
    REQUIRE(probability_from_log_odds(1000.0) == Approx(1.0));
    REQUIRE(probability_from_log_odds(-1000.0) >= 0.0);
    REQUIRE(probability_from_log_odds(-1000.0) < 1e-300);
    REQUIRE(probability_from_log_odds(0.0) == Approx(0.5));
}

TEST_CASE("An empty model scores every message as even odds", "[model]") {
    const Snapshot snap(Counts{}, Parameters{});
    const Term doc[] = {{1, 1}};
    const Score s = score(doc, snap);
    REQUIRE(s.log_odds == Approx(0.0));
    REQUIRE(s.verdict == Verdict::unsure);
}

TEST_CASE("Learning a message in place equals rebuilding from the new counts", "[model]") {
    // The China/Tokyo test document (Chinese ×3, Tokyo, Japan) learned as class c.
    Snapshot grown(china_counts(), laplace_raw());
    const Term doc[] = {{chinese, 3}, {tokyo, 1}, {japan, 1}};
    grown.learn(doc, /*spam=*/true);

    Counts c = china_counts();
    c.messages.spam += 1;
    c.feature_totals.spam += 5;
    c.features[chinese].spam += 3;
    c.features[tokyo].spam += 1;
    c.features[japan].spam += 1;
    const Snapshot rebuilt(c, laplace_raw());

    REQUIRE(grown.vocabulary() == rebuilt.vocabulary());
    REQUIRE(grown.prior_log_odds() == Approx(rebuilt.prior_log_odds()));
    for (FeatureId id : {chinese, beijing, shanghai, macao, tokyo, japan}) {
        INFO(id);
        REQUIRE(*grown.weight(id) == Approx(*rebuilt.weight(id)));
    }
    SECTION("a new feature enlarges the vocabulary and every weight's shared part") {
        const Term fresh[] = {{42, 1}};
        grown.learn(fresh, false);
        REQUIRE(grown.vocabulary() == 7);
        REQUIRE(grown.counts(42).ham == 1);
    }
}

TEST_CASE("The calibration temperature divides the log-odds before the logistic", "[model]") {
    Parameters p = laplace_raw();
    p.calibration_temperature = 6.0;
    const Snapshot snap(china_counts(), p);
    const Term doc[] = {{chinese, 3}, {tokyo, 1}, {japan, 1}};
    const Score s = score(doc, snap);
    const Score plain = score(doc, Snapshot(china_counts(), laplace_raw()));
    REQUIRE(s.log_odds == Approx(plain.log_odds));  // the log-odds are not changed
    REQUIRE(s.probability == Approx(1.0 / (1.0 + std::exp(-plain.log_odds / 6.0))));
}

TEST_CASE("Length normalisation scales the evidence of long messages by sqrt(K/n)", "[model]") {
    Parameters p = laplace_raw();
    p.length_norm_features = 1;
    const Term doc[] = {{chinese, 1}, {tokyo, 1}, {japan, 1}, {999, 1}};  // 3 known, one unknown
    const Score plain = score(doc, Snapshot(china_counts(), laplace_raw()));
    const Score normed = score(doc, Snapshot(china_counts(), p));
    const double prior = std::log(4.0 / 2.0);
    REQUIRE(normed.log_odds - prior == Approx((plain.log_odds - prior) * std::sqrt(1.0 / 3.0)));
}

TEST_CASE("Header evidence can be length-normalised apart from the content", "[model]") {
    // Content: chinese, beijing, shanghai (3 known); headers: tokyo, japan (2 known).
    const Term doc[] = {{chinese, 1}, {beijing, 1}, {shanghai, 1}, {tokyo, 1, true}, {japan, 1, true}};
    const Snapshot plain(china_counts(), laplace_raw());
    const double prior = plain.prior_log_odds();
    const double content = *plain.weight(chinese) + *plain.weight(beijing) + *plain.weight(shanghai);
    const double headers = *plain.weight(tokyo) + *plain.weight(japan);

    Parameters p = laplace_raw();
    p.length_norm_features = 1;
    SECTION("off: one normalisation over all five features, header flags ignored") {
        const Score s = score(doc, Snapshot(china_counts(), p));
        REQUIRE(s.log_odds - prior == Approx((content + headers) * std::sqrt(1.0 / 5.0)));
    }
    SECTION("on: each view scaled by its own sqrt(K/n)") {
        p.header_length_norm_features = 1;
        const Score s = score(doc, Snapshot(china_counts(), p));
        REQUIRE(s.log_odds - prior == Approx(content * std::sqrt(1.0 / 3.0) + headers * std::sqrt(1.0 / 2.0)));
    }
    SECTION("contributions are scaled as their view is") {
        p.header_length_norm_features = 1;
        const Score s = score(doc, Snapshot(china_counts(), p), 5);
        REQUIRE(s.toward_ham.size() == 2);
        REQUIRE(s.toward_ham[0].log_odds + s.toward_ham[1].log_odds == Approx(headers * std::sqrt(1.0 / 2.0)));
    }
}

TEST_CASE("A patched snapshot scores exactly as its counts rebuilt, through many patches and the fold", "[model][long]") {
    // The truth: counts kept by hand; each round changes some features (new,
    // changed, gone, back again) and both ways of updating are compared with a
    // snapshot built from scratch, on every id ever seen.
    Parameters params;
    params.alpha = 0.1;
    std::unordered_map<FeatureId, ClassCounts> truth;
    std::uint64_t seed = 7;
    auto next = [&] { return seed = seed * 6364136223846793005ull + 1442695040888963407ull, seed >> 33; };
    for (FeatureId id = 1; id <= 20000; ++id) truth[id * 2654435761ull] = {next() % 4, next() % 4 + 1};
    auto build = [&](ClassCounts messages) {
        Counts c;
        c.messages = messages;
        for (const auto& [id, n] : truth) {
            c.features[id] = n;
            c.feature_totals.spam += n.spam;
            c.feature_totals.ham += n.ham;
        }
        return c;
    };
    ClassCounts messages{100, 200};
    Counts counts = build(messages);
    auto current = std::make_shared<const Snapshot>(counts, params);
    Snapshot copied = *current;  // the other way: a full copy with apply()
    std::vector<FeatureId> ever;
    for (const auto& [id, n] : truth) ever.push_back(id);
    for (int round = 0; round < 40; ++round) {
        std::vector<Snapshot::Change> changes;
        const int n = round == 25 ? 15000 : 300;  // round 25 crosses the fold threshold
        for (int k = 0; k < n; ++k) {
            const FeatureId id = ever[next() % ever.size()] + (next() % 5 == 0 ? next() % 1000 + 1 : 0);
            Snapshot::Change c;
            c.id = id;
            if (next() % 4 == 0) {
                truth.erase(id);
            } else {
                truth[id] = {next() % 6, next() % 6};
                if (truth[id].spam + truth[id].ham == 0) truth[id].ham = 1;
                c.present = true;
                c.counts = truth[id];
                ever.push_back(id);
            }
            changes.push_back(c);
        }
        // A change list names each id once, its final state.
        std::unordered_map<FeatureId, Snapshot::Change> last;
        for (const auto& c : changes) last[c.id] = c;
        changes.clear();
        for (const auto& [id, c] : last) changes.push_back(c);
        messages.spam += 3;
        counts = build(messages);
        auto next_snapshot = std::make_shared<const Snapshot>(
            Snapshot::patched(current, changes, counts.messages, counts.feature_totals));
        copied.apply(changes, counts.messages, counts.feature_totals);
        const Snapshot rebuilt(counts, params);
        REQUIRE(next_snapshot->vocabulary() == rebuilt.vocabulary());
        REQUIRE(copied.vocabulary() == rebuilt.vocabulary());
        REQUIRE(next_snapshot->prior_log_odds() == rebuilt.prior_log_odds());
        for (std::size_t i = 0; i < ever.size(); i += 7) {
            const FeatureId id = ever[i];
            INFO("round " << round << ", id " << id);
            REQUIRE(next_snapshot->weight(id) == rebuilt.weight(id));
            REQUIRE(copied.weight(id) == rebuilt.weight(id));
            REQUIRE(next_snapshot->counts(id) == rebuilt.counts(id));
        }
        std::vector<Term> terms;
        for (std::size_t i = 0; i < 40; ++i) terms.push_back({ever[(i * 977) % ever.size()], 1 + static_cast<std::uint32_t>(i % 3)});
        std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return a.id < b.id; });
        terms.erase(std::unique(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return a.id == b.id; }),
                    terms.end());
        REQUIRE(score(terms, *next_snapshot, 5).log_odds == score(terms, rebuilt, 5).log_odds);
        current = next_snapshot;  // the old one goes; the table lives on in the new one
    }
    // Learning on a patched snapshot works on a table of its own, and matches a plain one.
    Snapshot learner = *current;
    Snapshot plain(counts, params);
    const std::vector<Term> message = {{ever[3], 2}, {ever[11], 1}, {999999999999ull, 1}};
    learner.learn(message, true);
    plain.learn(message, true);
    REQUIRE(learner.vocabulary() == plain.vocabulary());
    REQUIRE(learner.weight(ever[3]) == plain.weight(ever[3]));
    REQUIRE(learner.weight(999999999999ull) == plain.weight(999999999999ull));
    REQUIRE(current->weight(999999999999ull) == std::nullopt);  // the shared one is untouched
}
