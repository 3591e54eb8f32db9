// combine(): see combine.hpp.
#include "mailsift/engine/combine.hpp"

#include <cmath>
#include <vector>

#include "mailsift/features/extractor.hpp"
#include "mailsift/features/slots.hpp"

#include "mailsift/engine/filter.hpp"

namespace mailsift::engine {

Combined combine(const features::FeatureBag& bag, std::span<const model::Slot> slots, const model::Snapshot& counts,
                 const model::LinearModel* linear, const Settings& settings, std::size_t reasons) {
    Combined c;
    std::vector<model::Term> terms;
    terms.reserve(bag.size());
    for (const auto& e : bag.entries()) {
        const std::string_view text = bag.text(e);
        if (linear != nullptr && features::milter_only(text)) continue;
        terms.push_back({e.id, e.count, features::is_header_feature(text)});
    }
    c.score = model::score(terms, counts, reasons);
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
