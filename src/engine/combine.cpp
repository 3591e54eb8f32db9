// combine(): see combine.hpp.
#include "mailsift/engine/combine.hpp"

#include <cmath>

#include "mailsift/features/extractor.hpp"
#include "mailsift/features/slots.hpp"

namespace mailsift::engine {

std::vector<model::Term> scoring_terms(const features::FeatureBag& bag, bool envelope) {
    std::vector<model::Term> terms;
    terms.reserve(bag.size());
    for (const auto& e : bag.entries()) {
        const std::string_view text = bag.text(e);
        if (!envelope && features::milter_only(text)) continue;
        terms.push_back({e.id, e.count, features::is_header_feature(text)});
    }
    return terms;
}

model::Score linear_score(const model::LinearScore& z, const Settings& s) {
    model::Score out;
    out.log_odds = z.z();
    out.probability = model::probability_from_log_odds(out.log_odds / s.linear.temperature);
    out.verdict = model::verdict_for(out.log_odds, out.probability, s.model);
    return out;
}

Combined combine(const features::FeatureBag& bag, std::span<const model::Slot> slots, const model::Snapshot& counts,
                 const model::LinearModel* linear, const Settings& settings, std::size_t reasons) {
    Combined c;
    c.score = model::score(scoring_terms(bag, /*envelope=*/linear == nullptr), counts, reasons);
    c.nb_log_odds = c.score.log_odds;
    if (linear == nullptr) return c;
    const double input = linear_nb_input(c.nb_log_odds, settings);
    c.clipped = std::abs(input) > settings.linear.nb_clip;
    c.linear = linear->score(slots, input);
    model::Score z = linear_score(*c.linear, settings);
    z.toward_spam = std::move(c.score.toward_spam);
    z.toward_ham = std::move(c.score.toward_ham);
    c.score = std::move(z);
    return c;
}

}  // namespace mailsift::engine
