// Multinomial naive Bayes: compiles counts into per-feature log-odds weights
// and sums them. Formulas and symbols are stated in naive_bayes.hpp.
#include "mailsift/model/naive_bayes.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <functional>

namespace mailsift::model {

namespace {

std::uint32_t saturate(std::uint64_t n) {
    return n > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(n);
}

// ln((T_sf+α)/(T_hf+α)): a feature's own part of its weight (naive_bayes.hpp).
template <class Counts>
double local_weight(const Counts& c, double alpha) {
    return std::log((static_cast<double>(c.spam) + alpha) / (static_cast<double>(c.ham) + alpha));
}

// Smallest power of two that holds n features at a load of at most 3/4.
std::size_t capacity_for(std::size_t n) {
    std::size_t c = 16;
    while (c * 3 / 4 < n + 1) c *= 2;
    return c;
}

}  // namespace

Snapshot::Snapshot(const Counts& counts, const Parameters& params) {
    Builder b(params, counts.features.size());
    for (const auto& [id, c] : counts.features) b.add(id, c);
    *this = std::move(b).finish(counts.messages, counts.feature_totals);
}

Snapshot::Builder::Builder(const Parameters& params, std::size_t expected_features)
    : owned_(std::make_unique<Snapshot>()) {
    assert(params.alpha > 0.0 && "smoothing must be positive or unseen-in-one-class features give log 0");
    s_ = owned_.get();
    s_->params_ = params;
    s_->rehash(capacity_for(expected_features));
}

void Snapshot::Builder::add(FeatureId id, ClassCounts counts) { s_->set(id, counts); }

Snapshot Snapshot::Builder::finish(ClassCounts messages, ClassCounts totals) && {
    s_->messages_ = messages;
    s_->totals_ = totals;
    s_->update_shared();
    return std::move(*owned_);
}

Snapshot Snapshot::Builder::finish(ClassCounts messages, ClassCounts totals, std::size_t vocabulary) && {
    s_->absent_ = vocabulary > s_->size_ ? vocabulary - s_->size_ : 0;
    return std::move(*this).finish(messages, totals);
}

void Snapshot::add_known(FeatureId id, ClassCounts counts) {
    if (base_) *this = materialized();
    if (find(id) != nullptr) return;
    set(id, counts);
    if (absent_ > 0) --absent_;  // it was counted in V already
    update_shared();
}

void Snapshot::set(FeatureId id, ClassCounts c) {
    const double a = params_.alpha;
    const std::size_t i = find_or_insert(id);
    Slot& slot = i == SIZE_MAX ? zero_ : slots_[i];
    slot.local = local_weight(c, a);
    small_counts(&slot) = {saturate(c.spam), saturate(c.ham)};
}

void Snapshot::rehash(std::size_t capacity) {
    std::vector<Slot> old_slots(capacity, Slot{empty_id, 0.0});
    std::vector<SmallCounts> old_counts(capacity, SmallCounts{0, 0});
    old_slots.swap(slots_);
    old_counts.swap(counts_);
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(capacity));
    const std::size_t mask = capacity - 1;
    for (std::size_t i = 0; i < old_slots.size(); ++i) {
        if (old_slots[i].id == empty_id) continue;
        std::size_t s = home(old_slots[i].id);
        while (slots_[s].id != empty_id) s = (s + 1) & mask;
        slots_[s] = old_slots[i];
        counts_[s] = old_counts[i];
    }
}

const Snapshot::Slot* Snapshot::find(FeatureId id) const {
    if (base_) {
        if (patch_count_ > 0) {
            if (const Patch* p = find_patch(id)) return p->gone ? nullptr : &p->slot;
        }
        return base_->find_own(id);
    }
    return find_own(id);
}

const Snapshot::Patch* Snapshot::find_patch(FeatureId id) const {
    const std::size_t mask = patches_.size() - 1;
    for (std::size_t s = static_cast<std::size_t>(id) & mask;; s = (s + 1) & mask) {
        const Patch& p = patches_[s];
        if (p.slot.id == id) return &p;
        if (p.slot.id == empty_id) return nullptr;
    }
}

Snapshot::Patch& Snapshot::patch_for(FeatureId id) {
    assert(id != empty_id && "patched() takes the id 0 by a full copy");
    if (patches_.empty() || (patch_count_ + 1) * 2 > patches_.size()) {
        std::vector<Patch> old(std::max<std::size_t>(1024, patches_.size() * 2), Patch{{empty_id, 0.0}, {0, 0}, false});
        old.swap(patches_);
        const std::size_t mask = patches_.size() - 1;
        for (const Patch& p : old) {
            if (p.slot.id == empty_id) continue;
            std::size_t s = static_cast<std::size_t>(p.slot.id) & mask;
            while (patches_[s].slot.id != empty_id) s = (s + 1) & mask;
            patches_[s] = p;
        }
    }
    const std::size_t mask = patches_.size() - 1;
    std::size_t s = static_cast<std::size_t>(id) & mask;
    while (patches_[s].slot.id != empty_id && patches_[s].slot.id != id) s = (s + 1) & mask;
    if (patches_[s].slot.id == empty_id) {
        patches_[s] = Patch{{id, 0.0}, {0, 0}, false};
        ++patch_count_;
    }
    return patches_[s];
}

Snapshot Snapshot::patched(std::shared_ptr<const Snapshot> base, std::span<const Change> changes, ClassCounts messages,
                           ClassCounts totals) {
    // Patches always lie over a snapshot that owns its table.
    const std::shared_ptr<const Snapshot> owner = base->base_ ? base->base_ : base;
    const bool has_zero_id = std::any_of(changes.begin(), changes.end(), [](const Change& c) { return c.id == empty_id; });
    if (has_zero_id || base->patch_count_ + changes.size() > owner->size_ / 16 + 10000) {
        Snapshot s = base->materialized();
        s.apply(changes, messages, totals);
        return s;
    }
    Snapshot s;
    s.params_ = base->params_;
    s.base_ = owner;
    if (base->base_) {
        s.patches_ = base->patches_;
        s.patch_count_ = base->patch_count_;
    }
    s.size_ = base->size_;
    s.absent_ = base->absent_;
    const double a = s.params_.alpha;
    for (const Change& c : changes) {
        const bool known = s.find(c.id) != nullptr;
        Patch& p = s.patch_for(c.id);
        if (c.present) {
            p.gone = false;
            p.slot.local = local_weight(c.counts, a);
            p.counts = {saturate(c.counts.spam), saturate(c.counts.ham)};
            if (!known) ++s.size_;
        } else {
            p.gone = true;
            p.counts = {0, 0};
            if (known) --s.size_;
        }
    }
    s.messages_ = messages;
    s.totals_ = totals;
    s.update_shared();
    return s;
}

Snapshot Snapshot::materialized() const {
    if (!base_) return *this;
    Snapshot s = *base_;  // the owner's table, copied
    for (const Patch& p : patches_) {
        if (p.slot.id == empty_id) continue;
        if (p.gone) {
            if (const Slot* slot = s.find_own(p.slot.id)) {
                s.erase(s.index_of(slot));
            }
            continue;
        }
        const std::size_t i = s.find_or_insert(p.slot.id);
        s.slots_[i].local = p.slot.local;
        s.counts_[i] = p.counts;
    }
    s.messages_ = messages_;
    s.totals_ = totals_;
    s.absent_ = absent_;
    s.update_shared();
    return s;
}

const Snapshot::Slot* Snapshot::find_own(FeatureId id) const {
    if (id == empty_id) return has_zero_ ? &zero_ : nullptr;
    if (slots_.empty()) return nullptr;
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t s = home(id);; s = (s + 1) & mask) {
        const Slot& slot = slots_[s];
        if (slot.id == id) return &slot;
        if (slot.id == empty_id) return nullptr;  // the load stays below 1: a free slot ends every probe
    }
}

std::size_t Snapshot::find_or_insert(FeatureId id) {
    if (id == empty_id) {
        if (!has_zero_) {
            has_zero_ = true;
            ++size_;
        }
        return SIZE_MAX;  // zero_
    }
    if (slots_.empty() || (size_ + 1) * 4 > slots_.size() * 3) rehash(capacity_for(size_ + 1) * 2);
    const std::size_t mask = slots_.size() - 1;
    std::size_t s = home(id);
    while (slots_[s].id != empty_id && slots_[s].id != id) s = (s + 1) & mask;
    if (slots_[s].id == empty_id) {
        slots_[s] = Slot{id, 0.0};
        ++size_;
    }
    return s;
}

Snapshot::SmallCounts& Snapshot::small_counts(const Slot* slot) {
    return slot == &zero_ ? zero_counts_ : counts_[static_cast<std::size_t>(slot - slots_.data())];
}

const Snapshot::SmallCounts& Snapshot::small_counts(const Slot* slot) const {
    if (base_) {
        // A slot find() returned: one of the patches, or the owner's.
        const std::less<const void*> before;
        const void* p = slot;
        if (!patches_.empty() && !before(p, patches_.data()) && before(p, patches_.data() + patches_.size())) {
            return reinterpret_cast<const Patch*>(slot)->counts;
        }
        return base_->small_counts(slot);
    }
    return slot == &zero_ ? zero_counts_ : counts_[static_cast<std::size_t>(slot - slots_.data())];
}

void Snapshot::update_shared() {
    const double n_s = static_cast<double>(messages_.spam);
    const double n_h = static_cast<double>(messages_.ham);
    prior_log_odds_ = std::log((n_s + 1.0) / (n_h + 1.0));  // (N_s+1)/(N+2) ÷ (N_h+1)/(N+2)
    const double a = params_.alpha;
    const double v = static_cast<double>(size_ + absent_);
    shared_ = std::log(static_cast<double>(totals_.ham) + a * v) - std::log(static_cast<double>(totals_.spam) + a * v);
}

std::optional<double> Snapshot::weight(FeatureId id) const {
    const Slot* slot = find(id);
    if (slot == nullptr) return std::nullopt;
    return slot->local + shared_;
}

ClassCounts Snapshot::counts(FeatureId id) const {
    const Slot* slot = find(id);
    if (slot == nullptr) return {};
    const SmallCounts& c = small_counts(slot);
    return {c.spam, c.ham};
}

void Snapshot::add(std::span<const Term> terms, bool spam, int sign) {
    if (base_) *this = materialized();  // learning in place needs a table of its own
    const double a = params_.alpha;
    // Counts never go below zero (a message unlearned that this snapshot never held).
    const auto move = [sign](std::uint64_t have, std::uint64_t n) { return sign > 0 ? have + n : have - std::min(have, n); };
    for (const Term& t : terms) {
        if (t.count == 0) continue;
        // The same counts the store keeps for this term-frequency mode.
        const std::uint64_t n = params_.term_frequency == TermFrequency::boolean ? 1 : t.count;
        const std::size_t i = find_or_insert(t.id);
        Slot& slot = i == SIZE_MAX ? zero_ : slots_[i];
        SmallCounts& c = small_counts(&slot);
        std::uint32_t& mine = spam ? c.spam : c.ham;
        const std::uint64_t before = mine;
        mine = saturate(move(before, n));
        std::uint64_t& total = spam ? totals_.spam : totals_.ham;
        total = move(total, sign > 0 ? n : before - mine);
        slot.local = local_weight(c, a);
        if (sign < 0 && c.spam == 0 && c.ham == 0) erase(i);
    }
    std::uint64_t& messages = spam ? messages_.spam : messages_.ham;
    messages = move(messages, 1);
    update_shared();
}

void Snapshot::apply(std::span<const Change> changes, ClassCounts messages, ClassCounts totals) {
    if (base_) *this = materialized();
    for (const Change& c : changes) {
        if (c.present) {
            set(c.id, c.counts);
        } else if (const Slot* slot = find(c.id)) {
            erase(index_of(slot));
        }
    }
    messages_ = messages;
    totals_ = totals;
    update_shared();
}

std::size_t Snapshot::index_of(const Slot* slot) const {
    return slot == &zero_ ? SIZE_MAX : static_cast<std::size_t>(slot - slots_.data());
}

void Snapshot::erase(std::size_t i) {
    if (i == SIZE_MAX) {
        has_zero_ = false;
        zero_ = Slot{empty_id, 0.0};
        zero_counts_ = {0, 0};
        --size_;
        return;
    }
    // Backward-shift deletion: later slots of the probe run that may live at
    // i move there, so that a free slot still ends every probe.
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t j = (i + 1) & mask; slots_[j].id != empty_id; j = (j + 1) & mask) {
        const std::size_t h = home(slots_[j].id);
        // Slot j may move to i unless its home lies cyclically in (i, j].
        const bool stays = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (stays) continue;
        slots_[i] = slots_[j];
        counts_[i] = counts_[j];
        i = j;
    }
    slots_[i] = Slot{empty_id, 0.0};
    counts_[i] = SmallCounts{0, 0};
    --size_;
}

double effective_count(std::uint32_t count, TermFrequency tf) {
    switch (tf) {
        case TermFrequency::raw: return static_cast<double>(count);
        case TermFrequency::boolean: return count > 0 ? 1.0 : 0.0;
    }
    return static_cast<double>(count);
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
        const Snapshot::Slot* slot = snapshot.find(t.id);
        if (slot == nullptr) continue;  // unknown features carry no evidence
        double c = effective_count(t.count, tf) * (slot->local + snapshot.shared_);
        if (params.feature_confidence > 0) {
            const Snapshot::SmallCounts& sc = snapshot.small_counts(slot);
            const double n = static_cast<double>(sc.spam) + static_cast<double>(sc.ham);
            c *= n / (n + params.feature_confidence);
        }
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
