// mailsift::store — TrainingBatch: every write of the model, in one
// transaction. Either every message in it is learned or none is; a write that
// lost a race with another writer is replayed by the batch itself.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "mailsift/model/linear.hpp"
#include "mailsift/store/database.hpp"
#include "mailsift/store/write_transaction.hpp"

namespace mailsift::store {

// One write transaction of learn/unlearn operations. Feature-count changes are
// summed in memory and written once per distinct feature at commit(), which
// also sets the last_seen of every feature learned in the batch to the latest
// `now` given to learn(). Destroying an uncommitted batch rolls it back.
class TrainingBatch {
public:
    explicit TrainingBatch(Database& db);
    ~TrainingBatch();
    TrainingBatch(const TrainingBatch&) = delete;
    TrainingBatch& operator=(const TrainingBatch&) = delete;

    // One step of the linear scorer: `step` over `slots` (and the bias and
    // the weight of the naive-Bayes input), added to the stored weights at commit.
    struct LinearStep {
        unsigned hash_bits = 0;
        std::vector<model::Slot> slots;
        model::LinearModel::Step step;
    };
    // With `linear`, its step is added when the message is learned or moved,
    // never when it was already learned: learning again moves nothing.
    LearnResult learn(const Digest& digest, Class c, const std::vector<TrainTerm>& terms, std::int64_t now,
                      const LinearStep* linear = nullptr);
    // A message the naive-Bayes counts already know beyond train_margin, learned
    // by the linear scorer alone: its step is added, its counts are not, and it
    // is recorded so that learning it again moves nothing (already_learned),
    // the other way moves it (moved), and unlearning forgets it. A message
    // learned with its counts is left to learn() (the same result as there).
    LearnResult learn_uncounted(const Digest& digest, Class c, const LinearStep& linear);
    // A step not tied to one message's learning (rehearsal), added whatever happens.
    void add_linear(const LinearStep& step);
    // Weights to add as they are (2^hash_bits of them), with the bias and u: a
    // refit of the samples as `refit_mark` counts them (LinearChange::refit_mark;
    // commit() throws RefitSuperseded when another writer's refit came first).
    // `layer`, when given, is the refit's own change (RefitLayer), kept in
    // place of the last one's; without it the last one's stays as it was.
    void add_linear_weights(unsigned hash_bits, std::vector<float> delta, double bias, double nb_weight,
                            std::uint64_t refit_mark, bool exclusive = true,
                            std::optional<RefitLayer> layer = std::nullopt);
    // A correction undone: its message's rehearsal sample is out of use, and the
    // next refit is due however few messages were learned since (LinearChange::samples_dropped).
    void drop_linear_sample(unsigned hash_bits);
    // Counts a message offered to class `c`'s rehearsal sample, and keeps it at
    // `position` (nullopt: offered, not kept). `prefix` is the start of the message.
    // The count is written at commit even when the batch holds no step.
    void offer_linear_sample(unsigned hash_bits, Class c, std::optional<std::uint64_t> position, const Digest& digest,
                             std::string_view prefix);
    // The settings the model is trained with: recorded at commit when the
    // batch changed the model and none are recorded yet (keep_model_settings()).
    void keep_model_settings(std::string text) { model_settings_ = std::move(text); }
    // The rows the store holds for `ids`, in the columns `tf` trains on, as they
    // were before this batch (its changes are written at commit); nothing for an
    // id without a row. What a trainer reading only some rows reads mid-batch.
    std::vector<std::optional<model::ClassCounts>> stored_counts(const std::vector<model::FeatureId>& ids,
                                                                 model::TermFrequency tf);
    // The rehearsal sample there, this batch's writes included (linear_sample()).
    std::optional<LinearSample> linear_sample(Class c, std::uint64_t position);
    UnlearnResult unlearn(const Digest& digest, Class c);
    // The class a message is learned as (this batch included, uncounted ones too), or nothing.
    std::optional<Class> learned_class(const Digest& digest);
    // Adds a contact inside this transaction (e.g. the sender of a ham
    // message); false when it was one already.
    bool add_contact(std::string_view address, std::string_view source, std::int64_t now);
    bool remove_contact(std::string_view address);
    // Notes that a message mailsiftd judged `c.verdict` was corrected to `c.to`.
    void record_correction(const Correction& c);
    // The latest standing correction of `signature` (WriteTransaction::latest_correction).
    std::optional<CorrectionRecord> latest_correction(const Digest& signature);
    // The standing corrections of any user's layer for `sender` (WriteTransaction::standing_sender_corrections).
    std::vector<CorrectionRecord> standing_sender_corrections(std::string_view sender);
    // Marks a correction undone; the caller has put the model back.
    void mark_undone(std::int64_t correction_id, std::int64_t at, std::string_view by);
    // What undoing correction `correction_id` takes, from now on (WriteTransaction::set_correction_undo).
    void set_correction_undo(std::int64_t correction_id, const CorrectionUndo& undo);
    // Takes back every step the standing corrections took in `user`'s layer
    // (per_user) and clears it from their undo records, so that neither this
    // nor an undo takes it back twice; the corrections, the site's steps and
    // the counts stay. Returns the corrections as they were.
    std::vector<CorrectionRecord> forget_layer(std::string_view user);
    // A correction by signature whose scan is not written yet: kept (the last
    // label given wins, with its `by`) until the scan arrives and
    // take_ready_corrections() finds it.
    void defer_correction(const Digest& signature, Class to, std::int64_t now, std::string_view by);
    // At most `limit` deferred corrections whose scan is now written, oldest
    // first, each taken out of the waiting list (in this transaction: trained
    // with it, or not at all).
    std::vector<ReadyCorrection> take_ready_corrections(std::size_t limit);
    // Forgets a deferred correction of `signature`: a later one has its say,
    // or it is undone before its scan came. The class it asked for, and who
    // asked; nullopt: none was waiting.
    std::optional<DeferredCorrection> drop_deferred_correction(const Digest& signature);
    void commit();

private:
    struct Delta {
        // Learned in this batch, less what was unlearned again in this batch: never negative.
        std::int64_t occurrences_spam = 0, occurrences_ham = 0;
        std::int64_t presence_spam = 0, presence_ham = 0;
        // Unlearned messages learned in earlier batches: subtracted at commit only
        // as far as the stored row still holds it (the row may have been pruned).
        std::int64_t removed_occurrences_spam = 0, removed_occurrences_ham = 0;
        std::int64_t removed_presence_spam = 0, removed_presence_ham = 0;
        std::uint32_t text_offset = 0, text_bytes = 0;  // in texts_; 0 bytes = none yet
        bool learned = false;                           // learned in this batch: last_seen moves
    };
    struct DigestHash {
        std::size_t operator()(const Digest& d) const noexcept;
    };
    void count(Class c, model::FeatureId id, std::int64_t n, std::string_view text, bool earlier);
    void remove_stored(const Digest& digest, Class c, const std::string& blob);

    LearnResult learn_now(const Digest& digest, Class c, const std::vector<TrainTerm>& terms, std::int64_t now,
                          const LinearStep* linear);
    void add_linear_now(const LinearStep& step);
    LearnResult learn_uncounted_now(const Digest& digest, Class c, const LinearStep& linear);
    void start_linear(unsigned hash_bits);
    void dense_linear();  // the steps' sums from linear_sparse_ into linear_delta_, from now on
    UnlearnResult unlearn_now(const Digest& digest, Class c);
    void commit_now();
    // Runs `op`; after a RetryableError starts the transaction again, replays
    // what the batch did before, and runs `op` again (a few times at most).
    template <class Op>
    auto retrying(Op&& op);
    void restart();
    void remember(std::function<void(TrainingBatch&)> op) {
        if (replayable_) done_.push_back(std::move(op));
    }

    Database& db_;
    bool replayable_;
    bool restart_needed_ = false;
    std::vector<std::function<void(TrainingBatch&)>> done_;  // what to replay after a RetryableError
    std::unique_ptr<WriteTransaction> tx_;  // null once committed
    Delta& delta(model::FeatureId id);
    // The batch's deltas, with an open-addressing index (slot -> position + 1,
    // 0 empty): one probe per feature of a learned message and no allocation
    // per new feature, on the single thread every write goes through.
    std::vector<std::pair<model::FeatureId, Delta>> deltas_;
    std::vector<std::uint32_t> delta_slots_;
    std::string texts_;  // arena for the texts of features new in this batch
    std::int64_t messages_spam_ = 0, messages_ham_ = 0;
    std::int64_t latest_ = 0;                             // the batch's time: latest `now` given to learn()
    std::unordered_set<Digest, DigestHash> learned_here_;  // messages learned in this batch
    // The linear steps of the batch, summed: per slot, and the bias and u.
    // Per slot in linear_sparse_ while they touch few slots (a correction:
    // a few thousand of the 2^18), in the dense linear_delta_ beyond (a
    // training batch, a refit). The same sums either way: each slot's steps
    // are added from 0 in the order given.
    unsigned linear_bits_ = 0;  // 0: none yet
    std::unordered_map<std::uint32_t, float> linear_sparse_;
    std::vector<float> linear_delta_;  // empty until dense_linear()
    std::vector<bool> linear_dirty_;  // by page
    double linear_bias_ = 0.0, linear_nb_weight_ = 0.0;
    std::int64_t linear_seen_spam_ = 0, linear_seen_ham_ = 0;
    std::optional<std::uint64_t> linear_refit_mark_;
    std::optional<RefitLayer> linear_refit_layer_;
    bool linear_refit_exclusive_ = false;
    std::uint64_t linear_samples_dropped_ = 0;
    std::string model_settings_;  // "": none to record
};

}  // namespace mailsift::store
