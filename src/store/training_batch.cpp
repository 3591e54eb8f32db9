// The store's part that every backend shares: the arithmetic of a training
// batch (deltas summed in memory, written once per feature at commit, replayed
// after a lost race). The coding of what it writes is model_codec.cpp.
#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "codec.hpp"
#include "mailsift/store/training_batch.hpp"

namespace mailsift::store {

model::Counts ModelStore::load_counts(model::TermFrequency tf) {
    model::Counts counts;
    const ClassTotals t = visit_counts(
        tf, [&](std::size_t n) { counts.features.reserve(n); },
        [&](model::FeatureId id, model::ClassCounts c) { counts.features.emplace(id, c); });
    counts.messages = t.messages;
    counts.feature_totals = t.feature_totals;
    return counts;
}

// ---- TrainingBatch ----

TrainingBatch::TrainingBatch(Database& db)
    : db_(db), replayable_(db.concurrent_writers()), tx_(db.begin_write()) {
    deltas_.reserve(1 << 16);  // a batch of corpus mail touches tens of thousands of features (untouched until used)
    // The index starts small and doubles as features come (delta()): a
    // correction of one message touches a few thousand, and zeroing 512 KiB
    // for it cost 128 page faults.
    delta_slots_.assign(1 << 12, 0);
}

template <class Op>
auto TrainingBatch::retrying(Op&& op) {
    for (int attempt = 0;; ++attempt) {
        try {
            if (restart_needed_) restart();
            return op();
        } catch (const RetryableError&) {
            if (!replayable_ || attempt >= 8) throw;
            restart_needed_ = true;
            // Apart a little, differently each time, so two writers do not meet again.
            std::this_thread::sleep_for(std::chrono::milliseconds(5 * (attempt + 1) + (std::rand() % 20)));
        }
    }
}

void TrainingBatch::restart() {
    tx_.reset();  // rolled back
    deltas_.clear();
    std::fill(delta_slots_.begin(), delta_slots_.end(), 0);
    texts_.clear();
    messages_spam_ = messages_ham_ = 0;
    latest_ = 0;
    learned_here_.clear();
    linear_bits_ = 0;
    linear_sparse_.clear();
    linear_delta_.clear();
    linear_dirty_.clear();
    linear_bias_ = linear_nb_weight_ = 0.0;
    linear_seen_spam_ = linear_seen_ham_ = 0;
    linear_refit_mark_.reset();
    linear_refit_layer_.reset();
    linear_refit_exclusive_ = false;
    linear_samples_dropped_ = 0;
    tx_ = db_.begin_write();
    for (const auto& op : done_) op(*this);
    restart_needed_ = false;
}

LearnResult TrainingBatch::learn(const Digest& digest, Class c, const std::vector<TrainTerm>& terms, std::int64_t now,
                                 const LinearStep* linear) {
    assert(tx_ && "learn after commit");
    const LearnResult r = retrying([&] { return learn_now(digest, c, terms, now, linear); });
    if (replayable_) {
        // Its own copy of the terms: the caller's texts do not live until a replay.
        auto texts = std::make_shared<std::string>();
        std::vector<std::pair<std::size_t, std::size_t>> spans;
        for (const auto& t : terms) {
            spans.emplace_back(texts->size(), t.text.size());
            texts->append(t.text);
        }
        std::vector<TrainTerm> copy = terms;
        std::optional<LinearStep> step;
        if (linear != nullptr) step = *linear;
        remember([digest, c, now, texts, spans, copy, step](TrainingBatch& b) mutable {
            for (std::size_t i = 0; i < copy.size(); ++i) copy[i].text = std::string_view(*texts).substr(spans[i].first, spans[i].second);
            b.learn_now(digest, c, copy, now, step ? &*step : nullptr);
        });
    }
    return r;
}

void TrainingBatch::add_linear(const LinearStep& step) {
    assert(tx_ && "add_linear after commit");
    add_linear_now(step);
    if (replayable_) remember([step](TrainingBatch& b) { b.add_linear_now(step); });  // a copy only to replay
}

void TrainingBatch::start_linear(unsigned hash_bits) {
    if (linear_bits_ == 0) {
        linear_bits_ = hash_bits;
    } else if (hash_bits != linear_bits_) {
        tx_->fail("linear steps of different sizes in one batch");
    }
}

void TrainingBatch::dense_linear() {
    if (!linear_delta_.empty()) return;
    const std::size_t n = std::size_t{1} << linear_bits_;
    linear_delta_.assign(n, 0.0f);
    linear_dirty_.assign((n + linear_page_slots - 1) / linear_page_slots, false);
    for (const auto& [slot, sum] : linear_sparse_) {
        linear_delta_[slot] = sum;  // 0 + the same additions in the same order: the same float
        linear_dirty_[slot / linear_page_slots] = true;
    }
    linear_sparse_.clear();
}

void TrainingBatch::add_linear_weights(unsigned hash_bits, std::vector<float> delta, double bias, double nb_weight,
                                       std::uint64_t refit_mark, bool exclusive, std::optional<RefitLayer> layer) {
    assert(tx_ && "add_linear_weights after commit");
    auto op = [hash_bits, delta = std::move(delta), bias, nb_weight, refit_mark, exclusive,
               layer = std::move(layer)](TrainingBatch& b) {
        b.start_linear(hash_bits);
        b.dense_linear();
        if (delta.size() != b.linear_delta_.size()) b.tx_->fail("linear weights of another size than the batch's");
        for (std::size_t j = 0; j < delta.size(); ++j) {
            if (delta[j] == 0.0f) continue;
            b.linear_delta_[j] += delta[j];
            b.linear_dirty_[j / linear_page_slots] = true;
        }
        b.linear_bias_ += bias;
        b.linear_nb_weight_ += nb_weight;
        b.linear_refit_mark_ = std::max(b.linear_refit_mark_.value_or(0), refit_mark);
        b.linear_refit_exclusive_ = b.linear_refit_exclusive_ || exclusive;
        if (layer) b.linear_refit_layer_ = layer;  // the batch's last refit's
    };
    op(*this);
    if (replayable_) remember(std::move(op));
}

void TrainingBatch::drop_linear_sample(unsigned hash_bits) {
    assert(tx_ && "drop_linear_sample after commit");
    auto op = [hash_bits](TrainingBatch& b) {
        b.start_linear(hash_bits);
        ++b.linear_samples_dropped_;
    };
    op(*this);
    if (replayable_) remember(std::move(op));
}

void TrainingBatch::offer_linear_sample(unsigned hash_bits, Class c, std::optional<std::uint64_t> position,
                                        const Digest& digest, std::string_view prefix) {
    assert(tx_ && "offer_linear_sample after commit");
    std::optional<std::string> blob;
    if (position) blob = encode_linear_sample(prefix);
    auto op = [hash_bits, c, position, digest, blob](TrainingBatch& b) {
        b.start_linear(hash_bits);  // a batch of offers alone still carries their count to the store
        (c == Class::spam ? b.linear_seen_spam_ : b.linear_seen_ham_) += 1;
        if (position) b.tx_->keep_linear_sample(c, *position, digest, *blob);
    };
    retrying([&] { op(*this); });
    remember(op);
}

std::vector<std::optional<model::ClassCounts>> TrainingBatch::stored_counts(const std::vector<model::FeatureId>& ids,
                                                                            model::TermFrequency tf) {
    assert(tx_ && "stored_counts after commit");
    const bool boolean = tf == model::TermFrequency::boolean;
    // read_features() takes ids in the store's (signed) order.
    std::vector<std::size_t> order(ids.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return static_cast<std::int64_t>(ids[a]) < static_cast<std::int64_t>(ids[b]);
    });
    std::vector<model::FeatureId> sorted;
    sorted.reserve(ids.size());
    for (const std::size_t i : order) sorted.push_back(ids[i]);
    const auto rows = retrying([&] { return tx_->read_features(sorted); });
    std::vector<std::optional<model::ClassCounts>> out(ids.size());
    for (std::size_t k = 0; k < rows.size(); ++k) {
        // Row: spam, ham occurrences; spam, ham presences.
        if (const auto& row = rows[k]) {
            out[order[k]] = model::ClassCounts{static_cast<std::uint64_t>((*row)[boolean ? 2 : 0]),
                                               static_cast<std::uint64_t>((*row)[boolean ? 3 : 1])};
        }
    }
    return out;
}

std::optional<LinearSample> TrainingBatch::linear_sample(Class c, std::uint64_t position) {
    assert(tx_ && "linear_sample after commit");
    return retrying([&] { return tx_->linear_sample(c, position); });
}

void TrainingBatch::add_linear_now(const LinearStep& step) {
    start_linear(step.hash_bits);
    const std::size_t mask = (std::size_t{1} << linear_bits_) - 1;
    // Few slots are summed by slot; past 1/32 of them a table of every slot costs less.
    if (linear_delta_.empty() && linear_sparse_.size() + step.slots.size() > (mask + 1) / 32) dense_linear();
    if (linear_delta_.empty()) {
        for (const model::Slot j : step.slots) linear_sparse_[static_cast<std::uint32_t>(j & mask)] += step.step.feature;
    } else {
        for (const model::Slot j : step.slots) {
            linear_delta_[j & mask] += step.step.feature;
            linear_dirty_[(j & mask) / linear_page_slots] = true;
        }
    }
    if (step.step.moves_bias) linear_bias_ += step.step.feature;
    linear_nb_weight_ += step.step.nb_weight;
}

UnlearnResult TrainingBatch::unlearn(const Digest& digest, Class c) {
    assert(tx_ && "unlearn after commit");
    const UnlearnResult r = retrying([&] { return unlearn_now(digest, c); });
    remember([digest, c](TrainingBatch& b) { b.unlearn_now(digest, c); });
    return r;
}

std::optional<Class> TrainingBatch::learned_class(const Digest& digest) {
    assert(tx_ && "lookup after commit");
    return retrying([&]() -> std::optional<Class> {
        if (auto stored = tx_->find_message(digest)) return stored->c;
        return tx_->find_uncounted(digest);
    });
}

LearnResult TrainingBatch::learn_uncounted(const Digest& digest, Class c, const LinearStep& linear) {
    assert(tx_ && "learn after commit");
    const LearnResult r = retrying([&] { return learn_uncounted_now(digest, c, linear); });
    if (replayable_) remember([digest, c, linear](TrainingBatch& b) { b.learn_uncounted_now(digest, c, linear); });
    return r;
}

LearnResult TrainingBatch::learn_uncounted_now(const Digest& digest, Class c, const LinearStep& linear) {
    if (auto stored = tx_->find_message(digest)) {
        if (stored->c == c) return LearnResult::already_learned;
        tx_->fail("learn_uncounted of a message learned with its counts as the other class");  // the Trainer never asks
    }
    const auto uncounted = tx_->find_uncounted(digest);
    if (uncounted == c) return LearnResult::already_learned;
    tx_->put_uncounted(digest, c, uncounted);
    add_linear_now(linear);
    return uncounted ? LearnResult::moved : LearnResult::learned;
}

bool TrainingBatch::add_contact(std::string_view address, std::string_view source, std::int64_t now) {
    const bool added = retrying([&] { return tx_->add_contact(address, source, now); });
    remember([a = std::string(address), s = std::string(source), now](TrainingBatch& b) { b.tx_->add_contact(a, s, now); });
    return added;
}

bool TrainingBatch::remove_contact(std::string_view address) {
    const bool removed = retrying([&] { return tx_->remove_contact(address); });
    remember([a = std::string(address)](TrainingBatch& b) { b.tx_->remove_contact(a); });
    return removed;
}

void TrainingBatch::record_correction(const Correction& c) {
    retrying([&] { tx_->record_correction(c); });
    remember([c](TrainingBatch& b) { b.tx_->record_correction(c); });
}

std::optional<CorrectionRecord> TrainingBatch::latest_correction(const Digest& signature) {
    assert(tx_ && "lookup after commit");
    auto found = retrying([&] { return tx_->latest_correction(signature); });
    std::optional<std::int64_t> id;
    if (found) id = found->id;
    remember([signature, id](TrainingBatch& b) {
        // The caller undoes what it was given; a replay must find the same, or give up.
        const auto again = b.tx_->latest_correction(signature);
        if ((again ? std::optional<std::int64_t>(again->id) : std::nullopt) != id) {
            b.tx_->fail("the correction was undone or corrected again by another process meanwhile; try again");
        }
    });
    return found;
}

std::vector<CorrectionRecord> TrainingBatch::standing_sender_corrections(std::string_view sender) {
    assert(tx_ && "lookup after commit");
    auto found = retrying([&] { return tx_->standing_sender_corrections(sender); });
    std::vector<std::int64_t> ids;
    for (const auto& r : found) ids.push_back(r.id);
    remember([s = std::string(sender), ids](TrainingBatch& b) {
        // What the caller did with them must find the same on a replay, or give up.
        std::vector<std::int64_t> again;
        for (const auto& r : b.tx_->standing_sender_corrections(s)) again.push_back(r.id);
        if (again != ids) b.tx_->fail("a correction of the same sender changed in another process meanwhile; try again");
    });
    return found;
}

void TrainingBatch::mark_undone(std::int64_t correction_id, std::int64_t at, std::string_view by) {
    retrying([&] { tx_->mark_undone(correction_id, at, by); });
    remember([=, by = std::string(by)](TrainingBatch& b) { b.tx_->mark_undone(correction_id, at, by); });
}

void TrainingBatch::set_correction_undo(std::int64_t correction_id, const CorrectionUndo& undo) {
    retrying([&] { tx_->set_correction_undo(correction_id, undo); });
    remember([=](TrainingBatch& b) { b.tx_->set_correction_undo(correction_id, undo); });
}

std::vector<CorrectionRecord> TrainingBatch::forget_layer(std::string_view user) {
    assert(tx_ && "forget_layer after commit");
    auto now = [u = std::string(user)](TrainingBatch& b) {
        auto found = b.tx_->standing_layer_corrections(u);
        for (const auto& r : found) {
            CorrectionUndo cleared = *r.undo;
            LinearStep back;
            back.hash_bits = cleared.hash_bits;
            back.slots.assign(cleared.layer.slots.begin(), cleared.layer.slots.end());
            back.step.feature = -cleared.layer.feature;
            back.step.moves_bias = false;
            b.add_linear_now(back);
            cleared.layer = {};
            b.tx_->set_correction_undo(r.id, cleared);
        }
        return found;
    };
    auto found = retrying([&] { return now(*this); });
    // A replay forgets what it finds then: what another process did meanwhile is its own.
    remember([now](TrainingBatch& b) { now(b); });
    return found;
}

void TrainingBatch::defer_correction(const Digest& signature, Class to, std::int64_t now, std::string_view by) {
    retrying([&] { tx_->defer_correction(signature, to, now, by); });
    remember([=, by = std::string(by)](TrainingBatch& b) { b.tx_->defer_correction(signature, to, now, by); });
}

std::optional<DeferredCorrection> TrainingBatch::drop_deferred_correction(const Digest& signature) {
    const auto dropped = retrying([&] { return tx_->drop_deferred_correction(signature); });
    remember([=](TrainingBatch& b) { b.tx_->drop_deferred_correction(signature); });
    return dropped;
}

std::vector<ReadyCorrection> TrainingBatch::take_ready_corrections(std::size_t limit) {
    auto taken = retrying([&] { return tx_->take_ready_corrections(limit); });
    std::vector<Digest> ids;
    for (const auto& r : taken) ids.push_back(r.scan.id);
    remember([limit, ids](TrainingBatch& b) {
        // The caller trains what it was given; a replay must take the same, or give up.
        std::vector<Digest> again;
        for (const auto& r : b.tx_->take_ready_corrections(limit)) again.push_back(r.scan.id);
        if (again != ids) b.tx_->fail("deferred corrections were taken by another process meanwhile; try again");
    });
    return taken;
}

void TrainingBatch::commit() {
    assert(tx_ && "commit twice");
    retrying([&] { commit_now(); });
}

TrainingBatch::~TrainingBatch() = default;  // an open transaction rolls back

std::size_t TrainingBatch::DigestHash::operator()(const Digest& d) const noexcept {
    std::uint64_t h;
    std::memcpy(&h, d.data(), sizeof h);  // a content digest: its bytes are already well mixed
    return static_cast<std::size_t>(h);
}

TrainingBatch::Delta& TrainingBatch::delta(model::FeatureId id) {
    if ((deltas_.size() + 1) * 2 > delta_slots_.size()) {  // load factor at most 1/2
        delta_slots_.assign(delta_slots_.size() * 2, 0);
        const std::size_t mask = delta_slots_.size() - 1;
        for (std::size_t i = 0; i < deltas_.size(); ++i) {
            std::size_t s = static_cast<std::size_t>(deltas_[i].first) & mask;
            while (delta_slots_[s] != 0) s = (s + 1) & mask;
            delta_slots_[s] = static_cast<std::uint32_t>(i + 1);
        }
    }
    const std::size_t mask = delta_slots_.size() - 1;
    std::size_t s = static_cast<std::size_t>(id) & mask;  // ids are hashes: their low bits are well mixed
    while (delta_slots_[s] != 0) {
        auto& entry = deltas_[delta_slots_[s] - 1];
        if (entry.first == id) return entry.second;
        s = (s + 1) & mask;
    }
    deltas_.emplace_back(id, Delta{});
    delta_slots_[s] = static_cast<std::uint32_t>(deltas_.size());
    return deltas_.back().second;
}

// n > 0 learns; n < 0 unlearns, from a message learned in this batch or (`earlier`) before it.
void TrainingBatch::count(Class c, model::FeatureId id, std::int64_t n, std::string_view text, bool earlier) {
    Delta& d = delta(id);
    const bool spam = c == Class::spam;
    if (earlier) {
        (spam ? d.removed_occurrences_spam : d.removed_occurrences_ham) -= n;
        (spam ? d.removed_presence_spam : d.removed_presence_ham) += 1;
    } else {
        (spam ? d.occurrences_spam : d.occurrences_ham) += n;
        (spam ? d.presence_spam : d.presence_ham) += n > 0 ? 1 : -1;
        if (n > 0) d.learned = true;
    }
    if (d.text_bytes == 0 && !text.empty()) {
        d.text_offset = static_cast<std::uint32_t>(texts_.size());
        d.text_bytes = static_cast<std::uint32_t>(text.size());
        texts_.append(text);
    }
}

void TrainingBatch::remove_stored(const Digest& digest, Class c, const std::string& blob) {
    const bool earlier = learned_here_.erase(digest) == 0;
    std::size_t i = 0;
    model::FeatureId id = 0;
    std::uint64_t delta = 0, n = 0;
    while (i < blob.size()) {
        if (!get_varint(blob, i, delta) || !get_varint(blob, i, n)) {
            tx_->fail("corrupt feature list of a learned message; refusing to unlearn it");
        }
        id += delta;
        count(c, id, -static_cast<std::int64_t>(n), {}, earlier);
    }
    (c == Class::spam ? messages_spam_ : messages_ham_) -= 1;
    tx_->delete_message(digest);
}

LearnResult TrainingBatch::learn_now(const Digest& digest, Class c, const std::vector<TrainTerm>& terms, std::int64_t now,
                                     const LinearStep* linear) {
    LearnResult result = LearnResult::learned;
    if (auto stored = tx_->find_message(digest)) {
        if (stored->c == c) return LearnResult::already_learned;
        remove_stored(digest, stored->c, stored->features);
        result = LearnResult::moved;
    } else if (const auto uncounted = tx_->find_uncounted(digest)) {
        // Learned by the linear scorer alone: the same class is known; the
        // other is learned with its counts now (`learned`: no counts move).
        if (*uncounted == c) return LearnResult::already_learned;
        tx_->delete_uncounted(digest);
    }
    std::vector<std::pair<model::FeatureId, std::uint32_t>> list;
    list.reserve(terms.size());
    for (const auto& t : terms) {
        if (t.count == 0) continue;
        count(c, t.id, t.count, t.text, false);
        list.emplace_back(t.id, t.count);
    }
    (c == Class::spam ? messages_spam_ : messages_ham_) += 1;
    tx_->insert_message(digest, c, now, encode_terms(std::move(list)));
    learned_here_.insert(digest);
    latest_ = std::max(latest_, now);
    if (linear != nullptr) add_linear_now(*linear);
    return result;
}

UnlearnResult TrainingBatch::unlearn_now(const Digest& digest, Class c) {
    auto stored = tx_->find_message(digest);
    if (!stored) {
        const auto uncounted = tx_->find_uncounted(digest);
        if (!uncounted) return UnlearnResult::not_learned;
        if (*uncounted != c) return UnlearnResult::learned_as_other_class;
        tx_->delete_uncounted(digest);  // no counts to take off; the weights keep what they learned
        return UnlearnResult::unlearned;
    }
    if (stored->c != c) return UnlearnResult::learned_as_other_class;
    remove_stored(digest, stored->c, stored->features);
    return UnlearnResult::unlearned;
}

void TrainingBatch::commit_now() {
    // In the store's key order (ids as signed 64-bit), so that a B-tree of
    // features is walked once from left to right rather than at random (ids
    // are hashes), and so that concurrent writers lock rows in one order.
    std::vector<std::pair<model::FeatureId, const Delta*>> order;
    order.reserve(deltas_.size());
    for (const auto& [id, d] : deltas_) order.emplace_back(id, &d);
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
        return static_cast<std::int64_t>(a.first) < static_cast<std::int64_t>(b.first);
    });
    // Unlearning takes off only what a row still holds: a pruned feature has no row
    // (nothing to take, nothing to re-create), a re-created one may hold less.
    auto removes = [](const Delta& d) {
        return d.removed_occurrences_spam != 0 || d.removed_occurrences_ham != 0 || d.removed_presence_spam != 0 ||
               d.removed_presence_ham != 0;
    };
    std::vector<model::FeatureId> lookup;
    for (const auto& [id, dp] : order) {
        if (removes(*dp)) lookup.push_back(id);
    }
    const auto held_rows = lookup.empty() ? std::vector<std::optional<WriteTransaction::Row>>{} : tx_->read_features(lookup);
    std::size_t next_held = 0;

    std::int64_t occ_spam = 0, occ_ham = 0, pres_spam = 0, pres_ham = 0;
    std::vector<WriteTransaction::FeatureWrite> upserts;
    std::vector<model::FeatureId> deletes;
    std::vector<model::FeatureId> changed;  // rows written or deleted, for readers' refresh
    upserts.reserve(order.size());
    changed.reserve(order.size());
    for (const auto& [id, dp] : order) {
        const Delta& d = *dp;
        // Final changes of the row: what this batch learned, less what it unlearned of earlier messages.
        WriteTransaction::Row change = {d.occurrences_spam, d.occurrences_ham, d.presence_spam, d.presence_ham};
        bool remove_row = false, row_exists = false;
        if (removes(d)) {
            const std::int64_t removed[4] = {d.removed_occurrences_spam, d.removed_occurrences_ham,
                                             d.removed_presence_spam, d.removed_presence_ham};
            const auto& row = held_rows.at(next_held++);
            if (row) {
                row_exists = true;
                std::int64_t held[4];
                for (int k = 0; k < 4; ++k) {
                    held[k] = std::max<std::int64_t>(0, (*row)[k]);
                    change[k] -= std::min(removed[k], held[k]);
                }
                if (held[0] + change[0] <= 0 && held[1] + change[1] <= 0) {
                    // Nothing left of it: the row goes, and the totals lose all it held.
                    remove_row = true;
                    for (int k = 0; k < 4; ++k) change[k] = -(*row)[k];
                }
            }
        }
        occ_spam += change[0];
        occ_ham += change[1];
        pres_spam += change[2];
        pres_ham += change[3];
        if (remove_row) {
            deletes.push_back(id);
            changed.push_back(id);
            continue;
        }
        // Unchanged counts are written only to move last_seen of a row known to exist: learned
        // and unlearned again in this batch, a feature may have no row, and must not get one.
        const bool unchanged = change[0] == 0 && change[1] == 0 && change[2] == 0 && change[3] == 0;
        if (unchanged && !(d.learned && row_exists)) continue;
        upserts.push_back({id, change, std::string_view(texts_.data() + d.text_offset, d.text_bytes),
                           d.learned ? latest_ : 0});
        if (!unchanged) changed.push_back(id);  // last_seen alone is not the model's
    }
    tx_->write_features(upserts, deletes);
    tx_->add_to_classes({messages_spam_, occ_spam, pres_spam}, {messages_ham_, occ_ham, pres_ham});
    if (linear_bits_ != 0) {
        WriteTransaction::LinearChange lc;
        lc.hash_bits = linear_bits_;
        lc.bias = linear_bias_;
        lc.nb_weight = linear_nb_weight_;
        lc.seen_spam = linear_seen_spam_;
        lc.seen_ham = linear_seen_ham_;
        lc.refit_mark = linear_refit_mark_;
        lc.refit_exclusive = linear_refit_exclusive_;
        lc.samples_dropped = linear_samples_dropped_;
        if (linear_refit_layer_) lc.refit_layer = &*linear_refit_layer_;
        for (std::size_t p = 0; p < linear_dirty_.size(); ++p) {
            if (linear_dirty_[p]) lc.pages.emplace_back(static_cast<std::uint32_t>(p), linear_delta_.data() + p * linear_page_slots);
        }
        for (const auto& [slot, sum] : linear_sparse_) {
            if (sum != 0.0f) lc.slots.push_back({slot, sum});  // as sparse_linear_change leaves out a 0 of a page
        }
        std::sort(lc.slots.begin(), lc.slots.end(), [](const SlotDelta& a, const SlotDelta& b) { return a.slot < b.slot; });
        tx_->add_linear(lc);
    }
    if (!changed.empty() || messages_spam_ != 0 || messages_ham_ != 0 || linear_bits_ != 0) {
        if (!model_settings_.empty()) tx_->keep_model_settings(model_settings_);
        std::sort(changed.begin(), changed.end());
        tx_->log_model_change(&changed);
    }
    tx_->commit();
    tx_.reset();
}

}  // namespace mailsift::store
