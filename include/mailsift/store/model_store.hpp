// mailsift::store — the model part of the store (one role of Database): the
// counts naive Bayes is scored with and the linear scorer's weights.
// Contract, for every backend:
//  - Each learned message keeps its exact feature list, so unlearning or
//    moving it restores the counts exactly (counts never go negative).
//  - Class totals always equal the sums of the feature rows: pruning lowers them
//    by what it removes, and unlearning a message whose features were pruned
//    subtracts only what the rows still hold (never below zero, never re-creating
//    a removed row).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mailsift/model/linear.hpp"
#include "mailsift/model/naive_bayes.hpp"
#include "mailsift/store/common.hpp"

namespace mailsift::store {

// The linear scorer's weights (model::LinearModel) as the store keeps them:
// the state, and the weights in pages of linear_page_slots floats (a page
// never written holds zeros). Learners add their steps to what is stored, so
// concurrent learners add up rather than overwrite each other.
inline constexpr std::size_t linear_page_slots = 1024;
struct LinearWeights {
    unsigned hash_bits = 0;  // 0: nothing learned yet (bias 0, nb_weight 1, every weight 0)
    double bias = 0.0;
    double nb_weight = 1.0;
    std::uint64_t sequence = 0;  // model_sequence() of the same read
    // Messages offered to each class's rehearsal sample so far (spam, ham).
    std::uint64_t seen_spam = 0, seen_ham = 0;
    // Samples taken out of use so far (their corrections undone).
    std::uint64_t samples_dropped = 0;
    // The samples' version: every message offered and every sample dropped is a new one.
    std::uint64_t samples_version() const { return seen_spam + seen_ham + samples_dropped; }
    // samples_version() as the last refit of the weights over the samples read
    // it (engine::Trainer::refit_linear): below it, the samples changed since,
    // and mailsiftd refits.
    std::uint64_t refit_mark = 0;
    // The pages asked for: number, linear_page_slots floats.
    std::vector<std::pair<std::uint32_t, std::vector<float>>> pages;
    // Added to those weights after the pages, in this order: the steps written
    // since the pages last took them in (a step of a few messages is kept as
    // its slots, not as the pages it falls on; see WriteTransaction::add_linear).
    struct SlotDelta {
        std::uint32_t slot = 0;
        float delta = 0.0f;
    };
    std::vector<SlotDelta> deltas;
};
// The slot deltas a store keeps before it folds them into its pages, as a
// share of the slots: a reader adds at most this many to the pages it reads.
inline constexpr std::size_t linear_fold_share = 8;  // 2^hash_bits / 8 slot deltas
inline std::size_t linear_fold_slots(unsigned hash_bits) { return (std::size_t{1} << hash_bits) / linear_fold_share; }

// What the last refit of the linear scorer added to the weights (already in
// them): its slot deltas (ascending, each once, none 0), bias and u. The next
// refit starts from the weights without it, so that refits replace one
// another instead of piling up: logistic regression without a penalty grows
// its weights with every pass over samples it separates, and mailsiftd refits
// after every correction (engine::Trainer::refit, docs/accuracy.md issue 42).
struct RefitLayer {
    unsigned hash_bits = 0;
    double bias = 0.0, nb_weight = 0.0;
    std::vector<LinearWeights::SlotDelta> slots;
};

// A learned message kept for the linear scorer's rehearsal (a uniform sample
// of each class): the start of the message, whose 4-grams it replays, and the
// features it is learned with (the messages table's), for the naive-Bayes input.
struct LinearSample {
    Class c = Class::ham;
    std::string prefix;
    std::vector<std::pair<model::FeatureId, std::uint32_t>> terms;
};

// The model's store: the naive-Bayes counts, the linear scorer's weights and
// rehearsal samples, and the settings the model was trained with. Readers load
// a snapshot and never query per feature; model_sequence() tells them whether
// the model changed, model_changes_since() which features did. Written only
// through a TrainingBatch (training_batch.hpp). Every method throws Error for
// an environment failure.
class ModelStore {
public:
    virtual ~ModelStore() = default;
    ModelStore(const ModelStore&) = delete;
    ModelStore& operator=(const ModelStore&) = delete;

    // All counts for the model, in the columns `tf` trains on.
    model::Counts load_counts(model::TermFrequency tf);
    // The same, streamed in one read transaction: `size(n)` first with the
    // number of features, then `feature(id, counts)` for each; returns the
    // class counts (messages, feature totals) of that same read.
    struct ClassTotals {
        model::ClassCounts messages, feature_totals;
        std::uint64_t sequence = 0;  // model_sequence() of that read
    };
    virtual ClassTotals visit_counts(model::TermFrequency tf, const std::function<void(std::size_t)>& size,
                                     const std::function<void(model::FeatureId, model::ClassCounts)>& feature) = 0;
    // Changes whenever another connection commits anything (a scan, a
    // contact, the model): the cheap first look of a reader that keeps a
    // model in memory; model_sequence() and contacts_fingerprint() then say
    // whether it was the model.
    virtual std::uint64_t data_version() = 0;
    // The number of the last committed write that changed the model's counts:
    // it grows with every training batch, prune and import, on any connection.
    virtual std::uint64_t model_sequence() = 0;
    // What changed in the model after the write numbered `sequence`, in one read
    // transaction: the class totals now, and the counts now (in the columns `tf`
    // trains on) of every feature written or deleted since. `listed` is false
    // when the changes cannot be told feature by feature (older than the hour
    // the list is kept, a prune or an import among them, or more than
    // `max_features` features): the reader then reloads with visit_counts().
    struct ModelChanges {
        ClassTotals totals;
        bool listed = true;
        std::vector<model::Snapshot::Change> features;  // by id, each once; present false: the row is gone
    };
    virtual ModelChanges model_changes_since(std::uint64_t sequence, model::TermFrequency tf,
                                             std::size_t max_features) = 0;
    // The counts of `ids` (each once) as they are now, in one read: the class
    // totals, the number of feature rows (V, the vocabulary of the smoothing)
    // and each id's row in the columns `tf` trains on, in the order given
    // (present false: no row). What a command scoring a few messages reads
    // instead of visit_counts(); not inside a TrainingBatch (TrainingBatch::stored_counts).
    struct CountsOf {
        ClassTotals totals;
        std::uint64_t vocabulary = 0;
        std::vector<model::Snapshot::Change> features;
    };
    virtual CountsOf counts_of(const std::vector<model::FeatureId>& ids, model::TermFrequency tf) = 0;
    // The linear scorer's state, the pages written after the change numbered
    // `sequence` (0: every page there is) and the slot deltas written after it,
    // in one read transaction. With
    // `page`, each page is handed to it (its number and linear_page_slots
    // weights, valid during the call) instead of kept in LinearWeights::pages:
    // a reader copies a megabyte of weights once, not twice.
    using PageVisitor = std::function<void(std::uint32_t page, std::span<const float> weights)>;
    virtual LinearWeights linear_weights_since(std::uint64_t sequence, const PageVisitor& page = {}) = 0;
    // The state alone (hash_bits, bias, the samples' counts and refit mark,
    // the sequence): no page or slot delta is written after the highest change number.
    LinearWeights linear_state() {
        return linear_weights_since(static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
    }
    // Every rehearsal sample whose message is still learned as its class, in one read.
    virtual std::vector<LinearSample> linear_samples() = 0;
    // The last refit's own change to the weights; nullopt when none is kept
    // (no refit yet, or a store imported or written before schema 18 / 13).
    virtual std::optional<RefitLayer> linear_refit_layer() = 0;
    // The settings the model was trained with ("name = value" lines,
    // engine/model_settings.hpp), or "" when none are recorded yet.
    virtual std::string model_settings() = 0;
    // Text of a feature id, or "" when unknown.
    virtual std::string feature_text(model::FeatureId id) = 0;

protected:
    ModelStore() = default;
};

}  // namespace mailsift::store
