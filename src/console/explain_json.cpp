// The JSON of a score taken apart: see explain_json.hpp.
#include "explain_json.hpp"

namespace mailsift::console {

using nlohmann::json;

namespace {

constexpr std::size_t slots_shown = 20;  // linear slots listed each way on the page

json reasons(const std::vector<engine::Reason>& rs) {
    json out = json::array();
    for (const auto& r : rs) {
        out.push_back({{"feature", r.feature}, {"log_odds", r.log_odds}, {"spam", r.counts.spam}, {"ham", r.counts.ham}});
    }
    return out;
}

json slot_list(const std::vector<engine::SlotWeight>& slots) {
    json out = json::array();
    for (const auto& w : slots) out.push_back({{"weight", w.weight}, {"slot", w.slot}, {"source", w.source}});
    return out;
}

// The linear scorer's sum, part by part: what a scan and a history line show alike.
json linear_json(const engine::LinearParts& l) {
    return json{{"bias", l.score.bias},
                {"nb_weight", l.score.nb_weight},
                {"nb_input", l.score.nb_input},
                {"nb_term", l.score.nb_weight * l.score.nb_input},
                {"nb_log_odds", l.nb_log_odds},
                {"clipped", l.clipped},
                {"slots_sum", l.score.features},
                {"slots", l.slots},
                {"z", l.score.z()},
                {"toward_spam", slot_list(l.split.toward_spam)},
                {"toward_ham", slot_list(l.split.toward_ham)},
                {"others", l.split.others},
                {"others_sum", l.split.others_sum}};
}

// How the naive-Bayes log-odds adds up: the prior, the features listed (the
// strongest each way), and all the others together, so that the three make it.
json nb_sum_json(double prior, double nb_log_odds, const std::vector<engine::Reason>& toward_spam,
                 const std::vector<engine::Reason>& toward_ham) {
    double listed = 0.0;
    for (const auto* side : {&toward_spam, &toward_ham}) {
        for (const auto& r : *side) listed += r.log_odds;
    }
    return json{{"prior", prior}, {"listed", listed}, {"others", nb_log_odds - prior - listed}, {"log_odds", nb_log_odds}};
}

}  // namespace

json explanation_json(const engine::Explanation& e) {
    const auto& c = e.classification;
    json j{{"verdict", model::to_string(c.score.verdict)},
           {"probability", c.score.probability},
           {"log_odds", c.score.log_odds},
           {"model", {{"spam", e.spam_messages}, {"ham", e.ham_messages}, {"features", e.features},
                      {"prior_log_odds", e.prior_log_odds}}},
           {"toward_spam", reasons(c.toward_spam)},
           {"toward_ham", reasons(c.toward_ham)},
           {"prefix_only", c.prefix_only},
           {"truncated", c.truncated}};
    if (e.linear) {
        const auto& l = *e.linear;
        j["linear"] = linear_json({l.score, l.nb_log_odds, l.clipped, l.slots.size(), l.split(slots_shown)});
    }
    const double nb = e.linear ? e.linear->nb_log_odds : c.score.log_odds;
    j["nb_sum"] = nb_sum_json(e.prior_log_odds, nb, c.toward_spam, c.toward_ham);
    return j;
}

// A history line's explanation, as mailsiftd kept it when it scored the message.
json recorded_json(const engine::ScoreParts& p) {
    json j{{"log_odds", p.log_odds},
           {"prior_log_odds", p.prior_log_odds},
           {"nb_log_odds", p.nb_log_odds},
           {"toward_spam", reasons(p.toward_spam)},
           {"toward_ham", reasons(p.toward_ham)},
           {"nb_sum", nb_sum_json(p.prior_log_odds, p.nb_log_odds, p.toward_spam, p.toward_ham)}};
    if (p.linear) j["linear"] = linear_json(*p.linear);
    return j;
}

}  // namespace mailsift::console
