// mailsift::model — the multinomial naive-Bayes mathematics, as pure functions.
//
// Owns: counts -> smoothed log-probabilities, scoring in log space, verdict
// thresholds, and the per-feature contributions behind a score.
// Knows nothing about I/O, SQLite, MIME or how features are made: a feature is
// a 64-bit id with a count.
//
// The model (Manning, Raghavan & Schütze, "Introduction to Information
// Retrieval", §13.2; the seeds' China/Tokyo example):
//   P(c)    = (N_c + 1) / (N + 2)                     N_c messages learned as c
//   P(f|c)  = (T_cf + α) / (T_c + α·V)                T_cf count of f in class c,
//                                                     T_c  all feature counts in c,
//                                                     V    distinct features known
//   log-odds(x) = log P(s)/P(h) + Σ_f n_f · [log P(f|s) − log P(f|h)]
//   P(spam|x)   = 1 / (1 + e^(−log-odds / T))     T the calibration temperature
// where n_f is the (possibly capped) count of f in message x. Features the
// model has never seen are ignored, as in the seeds. The priors use Laplace's
// rule so that a model with one empty class still gives a finite answer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "mailsift/model/score.hpp"

namespace mailsift::model {

struct Term {
    FeatureId id = 0;
    std::uint32_t count = 0;
    // Evidence from the message's headers rather than its content; matters
    // only when headers are length-normalised on their own (Parameters).
    bool header = false;
};

struct ClassCounts {
    std::uint64_t spam = 0;
    std::uint64_t ham = 0;
    friend bool operator==(const ClassCounts&, const ClassCounts&) = default;
};

// Everything the scorer needs, held in memory; built from the store.
struct Counts {
    ClassCounts messages;                       // N_s, N_h
    ClassCounts feature_totals;                 // T_s, T_h
    std::unordered_map<FeatureId, ClassCounts> features;  // T_sf, T_hf
};

// How a feature's count in one message enters training and scoring. The store
// keeps both kinds of count, so this can change without retraining.
enum class TermFrequency : std::uint8_t {
    raw,      // n_f as counted; T_cf = occurrences of f in class c
    boolean,  // n_f = 1 when present (Metsis et al. 2006); T_cf = messages of class c containing f
};

struct Parameters {
    double alpha = 0.01;                // Lidstone smoothing α (1 = Laplace); 0.01 measured best, docs/accuracy.md
    TermFrequency term_frequency = TermFrequency::boolean;
    // Naive-Bayes log-odds are overconfident (features are not independent):
    // P(spam|x) = 1/(1 + e^(−log-odds/T)). T = 6 maximised the held-out
    // likelihood in cross-validation on training data (docs/accuracy.md); 1 = none.
    double calibration_temperature = 6.0;
    double spam_threshold = 0.995;      // calibrated P(spam|x) at or above: spam
    double ham_threshold = 0.25;        // calibrated P(spam|x) at or below: ham; between: unsure
    // The same thresholds on the log-odds, when set; they take precedence.
    // Naive-Bayes log-odds run to the hundreds, where P(spam|x) rounds to 0 or
    // 1 in a double, so thresholds tuned past about ±36 can only be said here.
    std::optional<double> spam_log_odds;
    std::optional<double> ham_log_odds;
    // Length normalisation (Rennie et al. 2003, in spirit): when a message has
    // n > K known features, their summed evidence is scaled by sqrt(K / n), so a
    // long message does not count one topic hundreds of times. 0 = off.
    // K = 10 was chosen by 5-fold cross-validation on training data (docs/accuracy.md).
    std::size_t length_norm_features = 10;
    // When > 0, header features are normalised on their own with this K (and
    // content features with length_norm_features), so a mailing list's thirty
    // correlated header words count as one view of the message, not thirty
    // votes. 0 = one normalisation over all features. Off by default: it
    // halved 1-ROCA% in cross-validation but lost spam at FPR <= 0.1% on the
    // development split (docs/accuracy.md); `mailsift tune` searches it.
    std::size_t header_length_norm_features = 0;
    // Per-feature confidence: a feature seen in n training messages (both
    // classes) weighs n / (n + k) of its log-likelihood ratio, so a feature
    // seen once or twice cannot decide a message. 0 = off.
    // 1 with thick-threshold training (docs/accuracy.md, issue 13).
    double feature_confidence = 1.0;
};


// A compiled model: per-feature weights precomputed, so scoring a message is
// one table probe and one addition per feature. The weight splits into a
// per-feature part, ln((T_sf+α)/(T_hf+α)), and a part shared by every feature,
// ln((T_h+αV)/(T_s+αV)), so that learning one message (learn()) updates only
// that message's features and a few totals instead of rebuilding everything.
//
// Held in one open-addressing table (linear probing, ids are hashes so their
// low bits index it): 16 bytes per slot of id and weight, which is all scoring
// reads, and 8 bytes of counts beside it for explanations; about 36-48 bytes a
// feature in all, no allocation per feature, so a model of ten million features
// builds in one pass and fits in well under half a gigabyte. A snapshot made by
// patched() shares that table with the one it came from and keeps only the
// features changed since in a small table of its own, looked at first.
class Snapshot {
public:
    Snapshot() = default;
    Snapshot(const Counts& counts, const Parameters& params);

    // Builds a snapshot feature by feature, e.g. straight from a database
    // cursor, without a Counts map in between (half the memory and time for
    // ten million features). Each id at most once.
    class Builder {
    public:
        Builder(const Parameters& params, std::size_t expected_features);
        void add(FeatureId id, ClassCounts counts);
        // messages: N_s, N_h; totals: T_s, T_h.
        Snapshot finish(ClassCounts messages, ClassCounts totals) &&;
        // A snapshot of some of the store's features (those a few messages
        // need): `vocabulary` is how many the store holds, V of the smoothing,
        // so that every weight is what the whole model gives it.
        Snapshot finish(ClassCounts messages, ClassCounts totals, std::size_t vocabulary) &&;

    private:
        Snapshot* s_;
        std::unique_ptr<Snapshot> owned_;
    };

    const Parameters& parameters() const { return params_; }
    double prior_log_odds() const { return prior_log_odds_; }
    const ClassCounts& messages() const { return messages_; }
    const ClassCounts& totals() const { return totals_; }  // T_s, T_h
    std::size_t vocabulary() const { return size_ + absent_; }
    // A feature the store holds that this snapshot of some of them lacked
    // (Builder::finish with a vocabulary): added, V unchanged.
    void add_known(FeatureId id, ClassCounts counts);

    // ln P(f|s) − ln P(f|h), or nothing when f is unknown.
    std::optional<double> weight(FeatureId id) const;
    // Counts behind a weight, for explanations; {0,0} when unknown. Each
    // saturates at 2^32 − 1 (the weight itself is computed from the full count).
    ClassCounts counts(FeatureId id) const;
    // Adds one message of class spam (or ham), as training would (online
    // evaluation, thick-threshold training); unlearn() takes one away again.
    void learn(std::span<const Term> terms, bool spam) { add(terms, spam, +1); }
    void unlearn(std::span<const Term> terms, bool spam) { add(terms, spam, -1); }
    // Brings the snapshot to the store's counts after a write elsewhere: each
    // listed feature gets its new counts (or goes, when `present` is false),
    // then the totals are set. What is not listed keeps its weight.
    struct Change {
        FeatureId id = 0;
        ClassCounts counts;
        bool present = false;
    };
    void apply(std::span<const Change> changes, ClassCounts messages, ClassCounts totals);
    // The same as a copy of *base with apply(), without copying its table: the
    // result keeps `base` (or the snapshot whose table base shares) and holds
    // only the changed features itself, so a daemon takes in a training batch
    // in time proportional to the batch, not to the model. When the changed
    // features grow past a sixteenth of the table, one full copy folds them in.
    // learn() and unlearn() are for snapshots that own their table.
    static Snapshot patched(std::shared_ptr<const Snapshot> base, std::span<const Change> changes,
                            ClassCounts messages, ClassCounts totals);

private:
    friend Score score(std::span<const Term> terms, const Snapshot& snapshot, std::size_t reasons);
    struct Slot {
        FeatureId id;  // empty_id: free (the feature whose id is empty_id lives in `zero_`)
        double local;  // ln((T_sf+α)/(T_hf+α))
    };
    struct SmallCounts {
        std::uint32_t spam, ham;
    };
    static constexpr FeatureId empty_id = 0;
    // The slot holding id, or nullptr.
    const Slot* find(FeatureId id) const;
    // The slot for id, inserted (local 0, counts 0) when absent; grows the table.
    std::size_t find_or_insert(FeatureId id);
    void rehash(std::size_t capacity);
    void update_shared();
    void add(std::span<const Term> terms, bool spam, int sign);
    // Removes the feature in slot i (SIZE_MAX: zero_), as the store deletes a
    // row whose counts all reached 0, so the vocabulary V stays the store's.
    void erase(std::size_t i);
    // The index erase() takes for a slot of this snapshot's own table.
    std::size_t index_of(const Slot* slot) const;
    void set(FeatureId id, ClassCounts counts);
    SmallCounts& small_counts(const Slot* slot);
    const SmallCounts& small_counts(const Slot* slot) const;
    // This snapshot's own table (not base_'s, not the patches).
    const Slot* find_own(FeatureId id) const;
    // A feature changed since base_'s table: its weight and counts, or gone.
    struct Patch {
        Slot slot;  // first: a Slot* into patches_ is a Patch*
        SmallCounts counts;
        bool gone;
    };
    const Patch* find_patch(FeatureId id) const;
    Patch& patch_for(FeatureId id);
    // The slot a feature's probe starts at. The top bits of the id, not the
    // bottom ones: the store hands the counts over in id order, so a load fills
    // the table front to back instead of jumping around it.
    std::size_t home(FeatureId id) const { return static_cast<std::size_t>(id >> shift_); }
    // A copy that owns its table, the patches folded in.
    Snapshot materialized() const;


    Parameters params_;
    ClassCounts messages_;
    ClassCounts totals_;           // T_s, T_h in the columns params_.term_frequency trains on
    double prior_log_odds_ = 0.0;
    double shared_ = 0.0;          // ln((T_h+αV)/(T_s+αV))
    std::vector<Slot> slots_;      // power-of-two size, or empty
    unsigned shift_ = 64;          // a feature's home slot is its id's top bits: id >> shift_
    std::vector<SmallCounts> counts_;  // beside slots_
    std::size_t size_ = 0;         // features held, including zero_
    std::size_t absent_ = 0;       // features the store holds and this snapshot does not (V = size_ + absent_)
    bool has_zero_ = false;
    Slot zero_{empty_id, 0.0};
    SmallCounts zero_counts_{0, 0};
    // patched(): the snapshot whose table this one reads through, and the
    // features changed since (open addressing, power-of-two size, load <= 1/2).
    std::shared_ptr<const Snapshot> base_;
    std::vector<Patch> patches_;
    std::size_t patch_count_ = 0;
};

double effective_count(std::uint32_t count, TermFrequency tf);
Verdict verdict_for(double log_odds, double probability, const Parameters& params);

// Scores a message's terms. Each id should appear once in `terms`.
// `reasons` caps the contributions kept in each direction (0 = none).
Score score(std::span<const Term> terms, const Snapshot& snapshot, std::size_t reasons = 0);

}  // namespace mailsift::model
