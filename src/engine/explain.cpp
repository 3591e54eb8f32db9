// explain(): see explain.hpp.
#include "mailsift/engine/explain.hpp"

#include <algorithm>
#include <cmath>

#include "mailsift/engine/combine.hpp"
#include "mailsift/features/slots.hpp"
#include "mailsift/features/view.hpp"

namespace mailsift::engine {

Explanation explain(const Filter& filter, std::string_view raw, const features::Envelope* envelope) {
    Explanation e;
    const auto m = filter.model();
    const Settings& settings = filter.settings();
    e.classification = filter.classify(raw, envelope);
    e.spam_messages = m->snapshot.messages().spam;
    e.ham_messages = m->snapshot.messages().ham;
    e.features = m->snapshot.vocabulary();
    e.prior_log_odds = m->snapshot.prior_log_odds();
    if (settings.scorer != Scorer::linear || !m->linear) return e;

    const auto bag = filter.features_of(raw, envelope);
    std::vector<model::Slot> slots;
    const std::string view = features::message_view(raw, settings.slots.ngram_bytes);
    features::message_slots(view, bag, settings.slots, slots);
    LinearExplanation l;
    const Combined c = combine(bag, slots, m->snapshot, m->linear.get(), settings);
    l.nb_log_odds = c.nb_log_odds;
    l.clipped = c.clipped;
    l.score = *c.linear;
    auto sources = features::slot_sources(view, bag, settings.slots);
    l.slots.reserve(slots.size());
    for (const auto j : slots) {
        const auto it = sources.find(j);
        l.slots.push_back({m->linear->weight(j), j, it == sources.end() ? std::string("?") : std::move(it->second)});
    }
    std::stable_sort(l.slots.begin(), l.slots.end(), [](const auto& a, const auto& b) { return a.weight > b.weight; });
    e.linear = std::move(l);
    return e;
}

}  // namespace mailsift::engine
