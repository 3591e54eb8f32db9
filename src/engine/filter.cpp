// Filter: parse, featurize, score against the in-memory model.
#include "mailsift/engine/user_layers.hpp"
#include "mailsift/engine/filter.hpp"

#include <strings.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "mailsift/engine/combine.hpp"
#include "mailsift/engine/contacts.hpp"
#include "mailsift/engine/model_settings.hpp"
#include "mailsift/features/feature_hash.hpp"
#include "mailsift/features/slots.hpp"
#include "mailsift/features/view.hpp"
#include "mailsift/mime/message.hpp"

namespace mailsift::engine {

namespace {

void check_hash_bits(const store::LinearWeights& w, const Settings& settings) {
    if (w.hash_bits != 0 && w.hash_bits != settings.linear.hash_bits) {
        throw std::runtime_error("the linear weights in the database have 2^" + std::to_string(w.hash_bits) +
                                 " slots, but linear_hash_bits is " + std::to_string(settings.linear.hash_bits) +
                                 ": keep the setting the database was trained with");
    }
}

}  // namespace

std::shared_ptr<model::LinearModel> load_linear(store::ModelStore& db, const Settings& settings,
                                                const model::LinearModel* current, std::uint64_t since,
                                                std::uint64_t& sequence, store::LinearWeights* state) {
    auto m = current != nullptr ? std::make_shared<model::LinearModel>(*current)
                                : std::make_shared<model::LinearModel>(settings.linear);
    const auto weights = m->weights();
    // Each page straight into the table: the weights are copied once.
    const store::LinearWeights w =
        db.linear_weights_since(current != nullptr ? since : 0, [&](std::uint32_t number, std::span<const float> page) {
            const std::size_t from = std::size_t{number} * store::linear_page_slots;
            if (from + page.size() > weights.size()) return;  // another size: refused below
            std::copy(page.begin(), page.end(), weights.begin() + static_cast<std::ptrdiff_t>(from));
        });
    check_hash_bits(w, settings);
    // Then the steps kept as slots, in the order written (the store checked each is below 2^hash_bits).
    for (const auto& d : w.deltas) weights[d.slot] += d.delta;
    m->set_state(w.bias, w.nb_weight);
    sequence = w.sequence;
    if (state != nullptr) *state = w;
    return m;
}

std::shared_ptr<const model::LinearModel> load_linear_slots(store::ModelStore& db, const Settings& settings,
                                                            std::vector<model::Slot> slots, std::uint64_t& sequence) {
    auto m = std::make_shared<model::LinearModel>(settings.linear, std::move(slots));
    const std::span<const model::Slot> covered = m->covered();
    const auto weights = m->weights();
    const auto index = [&](std::uint64_t slot) {
        return static_cast<std::size_t>(std::lower_bound(covered.begin(), covered.end(), slot) - covered.begin());
    };
    const store::LinearWeights w = db.linear_weights_since(0, [&](std::uint32_t number, std::span<const float> page) {
        const std::uint64_t from = std::uint64_t{number} * store::linear_page_slots;
        for (std::size_t i = index(from); i < covered.size() && covered[i] < from + page.size(); ++i) {
            weights[i] = page[covered[i] - from];
        }
    });
    check_hash_bits(w, settings);
    for (const auto& d : w.deltas) {
        const std::size_t i = index(d.slot);
        if (i < covered.size() && covered[i] == d.slot) weights[i] += d.delta;
    }
    m->set_state(w.bias, w.nb_weight);
    sequence = w.sequence;
    return m;
}

Filter::Filter(store::Database& db, Settings settings) : db_(db), configured_(std::move(settings)) {
    adopt_model_settings();
    refresh();
}

void Filter::adopt_model_settings() {
    ModelSettings kept = model_settings(db_, configured_);
    settings_ = std::move(kept.settings);
    recorded_settings_ = std::move(kept.recorded);
    setting_notes_ = std::move(kept.notes);
}

Filter::Filter(store::Database& db, Settings settings, std::span<const std::string_view> messages)
    : db_(db), configured_(std::move(settings)) {
    adopt_model_settings();
    // The contacts first: a message's features depend on them. (No refresh
    // follows: the data version and the contacts' fingerprint are not read.)
    auto m = std::make_shared<Model>();
    m->contacts = db_.load_contacts();
    model_ = m;
    const bool linear = settings_.scorer == Scorer::linear;
    std::vector<model::FeatureId> ids;
    std::vector<model::Slot> slots, message;
    std::string view;
    for (const std::string_view raw : messages) {
        const features::FeatureBag bag = features_of(raw);
        for (const auto& e : bag.entries()) ids.push_back(e.id);
        if (linear) {  // the slots classify() will score
            features::message_view(raw, settings_.slots.ngram_bytes, view);
            features::message_slots(view, bag, settings_.slots, message);
            slots.insert(slots.end(), message.begin(), message.end());
        }
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::sort(slots.begin(), slots.end());
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    const store::Database::CountsOf counts = db_.counts_of(ids, settings_.model.term_frequency);
    std::size_t present = 0;
    for (const auto& f : counts.features) present += f.present ? 1 : 0;
    model::Snapshot::Builder builder(settings_.model, present);
    for (const auto& f : counts.features) {
        if (f.present) builder.add(f.id, f.counts);
    }
    m->snapshot = std::move(builder).finish(counts.totals.messages, counts.totals.feature_totals, counts.vocabulary);
    m->sequence = counts.totals.sequence;
    if (linear) m->linear = load_linear_slots(db_, settings_, std::move(slots), m->linear_sequence);
    covered_.emplace(ids.begin(), ids.end());
}

bool Filter::recorded_settings_differ() {
    const std::string now = db_.model_settings();
    if (now.empty() || now == recorded_settings_) return false;
    const bool differ =
        model_settings_text(with_model_settings(configured_, now, 0).settings) != model_settings_text(settings_);
    if (!differ) recorded_settings_ = now;  // the settings in force, recorded: nothing more to look for
    return differ;
}

bool Filter::refresh() {
    if (covered_) return false;  // made for some messages: nothing more is read
    const std::uint64_t version = db_.data_version();
    const auto current = model();
    if (current && version == seen_data_version_) return false;
    seen_data_version_ = version;
    // Signatures and counters written by the daemon move data_version too;
    // the model changes only when its counts or the contacts do.
    const std::uint64_t sequence = db_.model_sequence();
    std::string contacts = db_.contacts_fingerprint();
    const bool counts_changed = !current || sequence != current->sequence;
    const bool contacts_changed = !current || contacts != current->contacts_fingerprint;
    if (!counts_changed && !contacts_changed) return false;
    auto m = std::make_shared<Model>();
    m->data_version = version;
    m->contacts_fingerprint = std::move(contacts);
    bool applied = false;
    if (current && counts_changed) {
        // A quarter of the model or more is as cheap to reread as to look up row by row.
        const std::size_t most = std::max<std::size_t>(current->snapshot.vocabulary() / 4, 10000);
        auto changes = db_.model_changes_since(current->sequence, settings_.model.term_frequency, most);
        if (changes.listed) {
            // The new model reads through the current one's table: no copy of it.
            m->snapshot = model::Snapshot::patched(std::shared_ptr<const model::Snapshot>(current, &current->snapshot),
                                                   changes.features, changes.totals.messages,
                                                   changes.totals.feature_totals);
            m->sequence = changes.totals.sequence;
            m->changed_features = changes.features.size();
            applied = true;
        }
    } else if (current) {
        // Only the contacts changed: the same counts, sharing the table.
        m->snapshot = model::Snapshot::patched(std::shared_ptr<const model::Snapshot>(current, &current->snapshot), {},
                                               current->snapshot.messages(), current->snapshot.totals());
        m->sequence = current->sequence;
        applied = true;
    }
    if (!applied) {
        // Streamed from the database into the snapshot's table: no Counts map in between.
        std::optional<model::Snapshot::Builder> builder;
        const auto totals = db_.visit_counts(
            settings_.model.term_frequency, [&](std::size_t n) { builder.emplace(settings_.model, n); },
            [&](model::FeatureId id, model::ClassCounts c) { builder->add(id, c); });
        m->snapshot = std::move(*builder).finish(totals.messages, totals.feature_totals);
        m->sequence = totals.sequence;
        m->reloaded = true;
    }
    // The settings are recorded by the first training, and replaced only with
    // the whole model (an import): look when either may have happened.
    if ((counts_changed && recorded_settings_.empty()) || m->reloaded) {
        if (recorded_settings_differ()) settings_stale_ = true;
    }
    m->contacts = contacts_changed ? db_.load_contacts() : current->contacts;
    if (settings_.scorer == Scorer::linear) {
        if (current && current->linear && !counts_changed) {
            m->linear = current->linear;
            m->linear_sequence = current->linear_sequence;
            m->linear_behind = current->linear_behind;
        } else {
            // Only the pages written since; everything after a full reload (the store may have gone back).
            const bool whole = !current || !current->linear || m->reloaded;
            store::LinearWeights state;
            m->linear = load_linear(db_, settings_, whole ? nullptr : current->linear.get(),
                                    whole ? 0 : current->linear_sequence, m->linear_sequence, &state);
            m->linear_behind = state.samples_version() > state.refit_mark;
        }
    }
    std::lock_guard lock(model_mutex_);
    model_ = std::move(m);
    return true;
}

features::FeatureBag Filter::features_of(std::string_view raw, const features::Envelope* envelope) const {
    const mime::ParsedMessage parsed = mime::parse(raw, settings_.limits);
    const std::shared_ptr<const Model> m = model();
    const StoredContacts contacts(m->contacts);
    return features::extract(parsed, envelope, &contacts, settings_.features);
}

namespace {

// The GTUBE test string (SpamAssassin's; rspamd's too): a message holding it is
// spam whatever the model says, so that an administrator can check a mail
// path end to end. SpamAssassin gives it 1,000 points; this is its log-odds.
constexpr std::string_view gtube = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X";
constexpr double gtube_log_odds = 1000.0;

}  // namespace

Classification Filter::classify(std::string_view raw, const features::Envelope* envelope, bool record_features,
                                bool record_parts, Scoring* made_of, std::string_view user) const {
    const std::shared_ptr<const Model> m = model();  // one model for the whole message
    const mime::ParsedMessage parsed = mime::parse(raw, settings_.limits);
    const StoredContacts contacts(m->contacts);
    const features::FeatureBag bag = features::extract(parsed, envelope, &contacts, settings_.features);
    if (covered_) {
        for (const auto& e : bag.entries()) {
            if (!covered_->contains(e.id)) {
                throw std::logic_error("classify: a filter made for some messages was given another");
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
        features::message_view(raw, settings_.slots.ngram_bytes, view);
        features::message_slots(view, bag, settings_.slots, slots);
        if (record_features) append_view_line(view, c.features);
        if (valid_user(user)) {
            // The user's own weight for the sender (features::personal_slot).
            for (const auto& e : bag.entries()) {
                if (const auto sender = layer_sender_of(bag.text(e))) {
                    for (const auto j : features::personal_slots(user, *sender, settings_.slots.bits)) {
                        features::insert_slot(j, slots);
                    }
                    break;
                }
            }
            if (record_features) append_user_line(user, c.features);
        }
    }
    const Combined combined = combine(bag, slots, m->snapshot, m->linear.get(), settings_, settings_.reasons);
    c.score = combined.score;
    const double nb_log_odds = combined.nb_log_odds;
    std::optional<LinearParts> linear;
    if (record_parts && combined.linear) {
        linear = linear_parts(view, bag, slots, *combined.linear, nb_log_odds, *m->linear);
        linear->clipped = combined.clipped;
    }
    if (settings_.reasons > 0) {
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
    if (made_of) *made_of = Scoring{m, bag, view, slots, combined};
    return c;
}

LinearParts Filter::linear_parts(std::string_view view, const features::FeatureBag& bag,
                                 std::span<const model::Slot> slots, const model::LinearScore& z, double nb_log_odds,
                                 const model::LinearModel& linear) const {
    LinearParts l;
    l.score = z;
    l.nb_log_odds = nb_log_odds;
    l.slots = slots.size();
    l.split = split_slots(slots, linear, std::min(settings_.reasons, most_parts), z.features);
    // What the listed slots stand for: only theirs are spelled out.
    std::vector<model::Slot> listed;
    for (const auto* side : {&l.split.toward_spam, &l.split.toward_ham}) {
        for (const auto& w : *side) listed.push_back(w.slot);
    }
    auto sources = features::slot_sources(view, bag, settings_.slots, listed);
    std::size_t i = 0;
    for (auto* side : {&l.split.toward_spam, &l.split.toward_ham}) {
        for (auto& w : *side) w.source = std::move(sources[i++]);
    }
    return l;
}

}  // namespace mailsift::engine
