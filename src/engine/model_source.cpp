// ModelSource: the store's model, contacts and change counter read into an
// immutable Model, and read again (as little as it can) when they changed.
#include "mailsift/engine/model_source.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "mailsift/engine/model_settings.hpp"
#include "mailsift/engine/scorer.hpp"
#include "mailsift/features/slots.hpp"
#include "mailsift/features/view.hpp"

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

ModelSource::ModelSource(store::ModelStore& models, store::ContactStore& contacts, Settings settings)
    : models_(models), contacts_(contacts), configured_(std::move(settings)) {
    adopt_model_settings();
    refresh();
}

void ModelSource::adopt_model_settings() {
    ModelSettings kept = model_settings(models_, configured_);
    settings_ = std::make_shared<const Settings>(std::move(kept.settings));
    recorded_settings_ = std::move(kept.recorded);
    setting_notes_ = std::move(kept.notes);
}

ModelSource::ModelSource(store::ModelStore& models, store::ContactStore& contacts, Settings settings,
                         std::span<const std::string_view> messages)
    : models_(models), contacts_(contacts), configured_(std::move(settings)), partial_(true) {
    adopt_model_settings();
    // The contacts first: a message's features depend on them. (No refresh
    // follows: the data version and the contacts' fingerprint are not read.)
    auto m = std::make_shared<Model>();
    m->settings = settings_;
    m->contacts = contacts_.load_contacts();
    const Settings& s = *settings_;
    const bool linear = s.scorer == Scorer::linear;
    std::vector<model::FeatureId> ids;
    std::vector<model::Slot> slots, message;
    std::string view;
    for (const std::string_view raw : messages) {
        const features::FeatureBag bag = features_of(*m, raw);
        for (const auto& e : bag.entries()) ids.push_back(e.id);
        if (linear) {  // the slots classify() will score
            features::message_view(raw, s.slots.ngram_bytes, view);
            features::message_slots(view, bag, s.slots, message);
            slots.insert(slots.end(), message.begin(), message.end());
        }
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::sort(slots.begin(), slots.end());
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    const store::ModelStore::CountsOf counts = models_.counts_of(ids, s.model.term_frequency);
    std::size_t present = 0;
    for (const auto& f : counts.features) present += f.present ? 1 : 0;
    model::Snapshot::Builder builder(s.model, present);
    for (const auto& f : counts.features) {
        if (f.present) builder.add(f.id, f.counts);
    }
    m->snapshot = std::move(builder).finish(counts.totals.messages, counts.totals.feature_totals, counts.vocabulary);
    m->sequence = counts.totals.sequence;
    if (linear) m->linear = load_linear_slots(models_, s, std::move(slots), m->linear_sequence);
    m->covered = std::make_shared<const std::unordered_set<model::FeatureId>>(ids.begin(), ids.end());
    model_ = std::move(m);
}

bool ModelSource::recorded_settings_differ() {
    const std::string now = models_.model_settings();
    if (now.empty() || now == recorded_settings_) return false;
    const bool differ =
        model_settings_text(with_model_settings(configured_, now, 0).settings) != model_settings_text(*settings_);
    if (!differ) recorded_settings_ = now;  // the settings in force, recorded: nothing more to look for
    return differ;
}

bool ModelSource::refresh() {
    if (partial_) return false;  // made for some messages: nothing more is read
    const std::uint64_t version = models_.data_version();
    const auto current = model();
    if (current && version == seen_data_version_) return false;
    seen_data_version_ = version;
    // Signatures and counters written by the daemon move data_version too;
    // the model changes only when its counts or the contacts do.
    const std::uint64_t sequence = models_.model_sequence();
    std::string contacts = contacts_.contacts_fingerprint();
    const bool counts_changed = !current || sequence != current->sequence;
    const bool contacts_changed = !current || contacts != current->contacts_fingerprint;
    if (!counts_changed && !contacts_changed) return false;
    const Settings& s = *settings_;
    auto m = std::make_shared<Model>();
    m->settings = settings_;
    m->data_version = version;
    m->contacts_fingerprint = std::move(contacts);
    bool applied = false;
    if (current && counts_changed) {
        // A quarter of the model or more is as cheap to reread as to look up row by row.
        const std::size_t most = std::max<std::size_t>(current->snapshot.vocabulary() / 4, 10000);
        auto changes = models_.model_changes_since(current->sequence, s.model.term_frequency, most);
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
        const auto totals = models_.visit_counts(
            s.model.term_frequency, [&](std::size_t n) { builder.emplace(s.model, n); },
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
    m->contacts = contacts_changed ? contacts_.load_contacts() : current->contacts;
    if (s.scorer == Scorer::linear) {
        if (current && current->linear && !counts_changed) {
            m->linear = current->linear;
            m->linear_sequence = current->linear_sequence;
            m->linear_behind = current->linear_behind;
        } else {
            // Only the pages written since; everything after a full reload (the store may have gone back).
            const bool whole = !current || !current->linear || m->reloaded;
            store::LinearWeights state;
            m->linear = load_linear(models_, s, whole ? nullptr : current->linear.get(),
                                    whole ? 0 : current->linear_sequence, m->linear_sequence, &state);
            m->linear_behind = state.samples_version() > state.refit_mark;
        }
    }
    std::lock_guard lock(model_mutex_);
    model_ = std::move(m);
    return true;
}

}  // namespace mailsift::engine
