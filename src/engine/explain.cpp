// explain(): see explain.hpp.
#include "mailsift/engine/explain.hpp"

#include <algorithm>
#include <cmath>

#include "mailsift/engine/combine.hpp"
#include "mailsift/features/slots.hpp"
#include "mailsift/features/view.hpp"

namespace mailsift::engine {

Explanation explain(const std::shared_ptr<const Model>& model, std::string_view raw,
                    const features::Envelope* envelope) {
    Explanation e;
    Scoring made_of;
    e.classification = classify(model, raw,
                                {.envelope = envelope, .record_features = false, .record_parts = false, .made_of = &made_of, .user = {}});
    const auto& m = made_of.model;
    const Settings& settings = *m->settings;
    e.spam_messages = m->snapshot.messages().spam;
    e.ham_messages = m->snapshot.messages().ham;
    e.features = m->snapshot.vocabulary();
    e.prior_log_odds = m->snapshot.prior_log_odds();
    const Combined& c = made_of.combined;
    if (!c.linear) return e;

    LinearExplanation l;
    l.nb_log_odds = c.nb_log_odds;
    l.clipped = c.clipped;
    l.score = *c.linear;
    auto sources = features::slot_sources(made_of.view, made_of.bag, settings.slots);
    l.slots.reserve(made_of.slots.size());
    for (const auto j : made_of.slots) {
        const auto it = sources.find(j);
        l.slots.push_back({m->linear->weight(j), j, it == sources.end() ? std::string("?") : std::move(it->second)});
    }
    std::stable_sort(l.slots.begin(), l.slots.end(), [](const auto& a, const auto& b) { return a.weight > b.weight; });
    e.linear = std::move(l);
    return e;
}

}  // namespace mailsift::engine
