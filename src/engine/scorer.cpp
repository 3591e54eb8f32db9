// classify(): parse, featurize, and score against an in-memory Model.
#include "mailsift/engine/scorer.hpp"

#include <algorithm>
#include <stdexcept>

#include "mailsift/engine/combine.hpp"
#include "mailsift/engine/contacts.hpp"
#include "mailsift/engine/scan_record.hpp"
#include "mailsift/engine/user_layers.hpp"
#include "mailsift/features/slots.hpp"
#include "mailsift/features/view.hpp"
#include "mailsift/mime/message.hpp"

namespace mailsift::engine {

features::FeatureBag features_of(const Model& model, std::string_view raw, const features::Envelope* envelope) {
    const Settings& settings = *model.settings;
    const mime::ParsedMessage parsed = mime::parse(raw, settings.limits);
    const StoredContacts contacts(model.contacts);
    return features::extract(parsed, envelope, &contacts, settings.features);
}

namespace {

// The GTUBE test string (SpamAssassin's; rspamd's too): a message holding it is
// spam whatever the model says, so that an administrator can check a mail
// path end to end. SpamAssassin gives it 1,000 points; this is its log-odds.
constexpr std::string_view gtube = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X";
constexpr double gtube_log_odds = 1000.0;

// What the linear scorer's part of a score was made of, as the console's history keeps it.
LinearParts linear_parts(const Settings& settings, std::string_view view, const features::FeatureBag& bag,
                         std::span<const model::Slot> slots, const model::LinearScore& z, double nb_log_odds,
                         const model::LinearModel& linear) {
    LinearParts l;
    l.score = z;
    l.nb_log_odds = nb_log_odds;
    l.slots = slots.size();
    l.split = split_slots(slots, linear, std::min(settings.reasons, most_parts), z.features);
    // What the listed slots stand for: only theirs are spelled out.
    std::vector<model::Slot> listed;
    for (const auto* side : {&l.split.toward_spam, &l.split.toward_ham}) {
        for (const auto& w : *side) listed.push_back(w.slot);
    }
    auto sources = features::slot_sources(view, bag, settings.slots, listed);
    std::size_t i = 0;
    for (auto* side : {&l.split.toward_spam, &l.split.toward_ham}) {
        for (auto& w : *side) w.source = std::move(sources[i++]);
    }
    return l;
}

}  // namespace

Classification classify(const std::shared_ptr<const Model>& model, std::string_view raw, const ScoreOptions& options) {
    const std::shared_ptr<const Model>& m = model;  // one model for the whole message
    const Settings& settings = *m->settings;
    const bool record_features = options.record_features;
    const bool record_parts = options.record_parts;
    const std::string_view user = options.user;
    const mime::ParsedMessage parsed = mime::parse(raw, settings.limits);
    const StoredContacts contacts(m->contacts);
    const features::FeatureBag bag = features::extract(parsed, options.envelope, &contacts, settings.features);
    if (m->covered) {
        for (const auto& e : bag.entries()) {
            if (!m->covered->contains(e.id)) {
                throw std::logic_error("classify: a model made for some messages was given another");
            }
        }
    }

    Classification c;
    c.prefix_only = !parsed.limits_hit.empty();
    c.limits_hit = parsed.limits_hit;
    c.truncated = parsed.truncated;
    if (record_features) c.features = feature_lines(bag);
    // The linear scorer's slots: 4-grams of the message's view and its features.
    thread_local std::vector<model::Slot> slots;
    thread_local std::string view;
    slots.clear();
    view.clear();
    if (m->linear) {
        features::message_view(raw, settings.slots.ngram_bytes, view);
        features::message_slots(view, bag, settings.slots, slots);
        if (record_features) append_view_line(view, c.features);
        if (valid_user(user)) {
            // The user's own weight for the sender (features::personal_slot).
            for (const auto& e : bag.entries()) {
                if (const auto sender = layer_sender_of(bag.text(e))) {
                    for (const auto j : features::personal_slots(user, *sender, settings.slots.bits)) {
                        features::insert_slot(j, slots);
                    }
                    break;
                }
            }
            if (record_features) append_user_line(user, c.features);
        }
    }
    const Combined combined = combine(bag, slots, m->snapshot, m->linear.get(), settings, settings.reasons);
    c.score = combined.score;
    const double nb_log_odds = combined.nb_log_odds;
    std::optional<LinearParts> linear;
    if (record_parts && combined.linear) {
        linear = linear_parts(settings, view, bag, slots, *combined.linear, nb_log_odds, *m->linear);
        linear->clipped = combined.clipped;
    }
    if (settings.reasons > 0) {
        // Map ids back to the text of this message's features.
        auto name = [&](model::FeatureId id) -> std::string {
            for (const auto& e : bag.entries()) {
                if (e.id == id) return std::string(bag.text(e));
            }
            return {};
        };
        for (const auto& x : c.score.toward_spam) c.toward_spam.push_back({name(x.id), x.log_odds, m->snapshot.counts(x.id)});
        for (const auto& x : c.score.toward_ham) c.toward_ham.push_back({name(x.id), x.log_odds, m->snapshot.counts(x.id)});
    }
    if (raw.find(gtube) != std::string_view::npos) {
        c.score.log_odds = std::max(c.score.log_odds, gtube_log_odds);
        c.score.probability = 1.0;
        c.score.verdict = model::Verdict::spam;
        c.toward_spam.insert(c.toward_spam.begin(), Reason{"gtube", gtube_log_odds, {}});
    }
    if (record_parts) {
        c.parts.emplace();
        c.parts->log_odds = c.score.log_odds;
        c.parts->prior_log_odds = m->snapshot.prior_log_odds();
        c.parts->nb_log_odds = nb_log_odds;
        const auto kept = [](const std::vector<Reason>& rs) {
            return std::vector<Reason>(rs.begin(), rs.begin() + static_cast<std::ptrdiff_t>(std::min(rs.size(), most_parts)));
        };
        c.parts->toward_spam = kept(c.toward_spam);
        c.parts->toward_ham = kept(c.toward_ham);
        c.parts->linear = std::move(linear);
    }
    if (options.made_of) *options.made_of = Scoring{m, bag, view, slots, combined};
    return c;
}

}  // namespace mailsift::engine
