// mailsift::store — the backend's side of a TrainingBatch: the one write
// transaction a batch runs in, row by row. Only TrainingBatch and the
// backends use it; everything else writes through the batch.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mailsift/store/common.hpp"
#include "mailsift/store/model_store.hpp"
#include "mailsift/store/scan_log.hpp"

namespace mailsift::store {

// What a backend does inside the one write transaction of a TrainingBatch,
// which keeps the arithmetic; destroying it uncommitted rolls back.
class WriteTransaction {
public:
    virtual ~WriteTransaction() = default;

    struct StoredMessage {
        Class c = Class::ham;
        std::string features;  // encode_terms() form
    };
    virtual std::optional<StoredMessage> find_message(const Digest& digest) = 0;
    virtual void insert_message(const Digest& digest, Class c, std::int64_t learned_at, std::string_view features) = 0;
    virtual void delete_message(const Digest& digest) = 0;

    // Spam, ham occurrences; spam, ham presences.
    using Row = std::array<std::int64_t, 4>;
    // The rows of `ids` (ascending as the store orders them), nullopt where there is none.
    virtual std::vector<std::optional<Row>> read_features(const std::vector<model::FeatureId>& ids) = 0;
    struct FeatureWrite {
        model::FeatureId id = 0;
        Row change{};
        std::string_view text;   // for a new row
        std::int64_t last_seen;  // 0: leave it
    };
    // Adds each change to its row (created when missing) and deletes the rows
    // of `deletes`, in the order given.
    virtual void write_features(const std::vector<FeatureWrite>& upserts, const std::vector<model::FeatureId>& deletes) = 0;
    struct ClassChange {
        std::int64_t messages = 0, occurrences = 0, presences = 0;
    };
    virtual void add_to_classes(const ClassChange& spam, const ClassChange& ham) = 0;
    // Adds to the linear scorer's stored state and weights (a missing page is
    // zeros), under the number of this transaction's change, so
    // log_model_change() must follow. A change of few slots is kept as slot
    // deltas (a correction writes kilobytes, not every page its message falls
    // on); when the kept deltas would pass linear_fold_slots(), they and the
    // change are added to the pages, in the order they were written, and the
    // deltas removed: the weights are the same floats either way. A store
    // whose weights have another hash_bits is an Error (fail()).
    struct LinearChange {
        unsigned hash_bits = 0;
        double bias = 0.0, nb_weight = 0.0;
        std::int64_t seen_spam = 0, seen_ham = 0;  // added to LinearWeights' counts
        // A refit's change: LinearWeights::refit_mark becomes this one if it is
        // higher. `refit_exclusive` (mailsiftd's refit of samples that changed):
        // written only while the stored mark is below this one, otherwise
        // RefitSuperseded (another writer refitted these samples already), so
        // that a fleet refits once. A learn command's refit, due because it
        // learned, is always written, as it was before the mark.
        std::optional<std::uint64_t> refit_mark;
        bool refit_exclusive = false;
        // Added to LinearWeights::samples_dropped (an undone correction's
        // sample): a new version of the samples, which mailsiftd refits without it.
        std::uint64_t samples_dropped = 0;
        // A refit's own change, kept in place of the last one's (RefitLayer).
        const RefitLayer* refit_layer = nullptr;
        // The weights' change, one way or the other (not both): dense pages
        // (page number, linear_page_slots floats to add), or the slots it
        // changes (ascending, each once, none 0): what a batch of a few
        // messages sums, without a table of every slot.
        std::vector<std::pair<std::uint32_t, const float*>> pages;
        std::vector<LinearWeights::SlotDelta> slots;
    };
    virtual void add_linear(const LinearChange& change) = 0;
    // Messages the linear scorer learned without their counts (known beyond
    // train_margin): recorded so that learning them again is recognised.
    virtual std::optional<Class> find_uncounted(const Digest& digest) = 0;
    // Inserts it (`was` none) or changes its class from `was`; when another
    // writer got there first, RetryableError (as insert_message).
    virtual void put_uncounted(const Digest& digest, Class c, std::optional<Class> was) = 0;
    virtual void delete_uncounted(const Digest& digest) = 0;
    // The rehearsal sample of class `c` at `position`: `blob` is
    // encode_linear_sample() of the message's prefix, `digest` its learned message.
    virtual void keep_linear_sample(Class c, std::uint64_t position, const Digest& digest, std::string_view blob) = 0;
    // The sample there, with its message's features, when its message is still learned as `c`.
    virtual std::optional<LinearSample> linear_sample(Class c, std::uint64_t position) = 0;
    // Records the settings the model is trained with, unless some are recorded
    // already: the first training's stay (Database::model_settings()).
    virtual void keep_model_settings(std::string_view text) = 0;
    // Numbers this transaction's change of the model: `ids` the features it
    // wrote or deleted (ascending), nullptr for "reload all".
    virtual void log_model_change(const std::vector<model::FeatureId>* ids) = 0;

    // false: the address was a contact already.
    virtual bool add_contact(std::string_view address, std::string_view source, std::int64_t now) = 0;
    virtual bool remove_contact(std::string_view address) = 0;  // false: not there
    virtual void record_correction(const Correction& c) = 0;
    // The latest correction of `signature` that stands (not undone), with what undoing it takes.
    virtual std::optional<CorrectionRecord> latest_correction(const Digest& signature) = 0;
    // Marks it undone, and deletes its signature's undone corrections but the
    // latest undone_kept (scan_log.hpp).
    virtual void mark_undone(std::int64_t correction_id, std::int64_t at, std::string_view by) = 0;
    // The standing corrections that stepped `user`'s layer, with their undo
    // records, locked against an undo at the same time (ScanLog::layer_corrections).
    virtual std::vector<CorrectionRecord> standing_layer_corrections(std::string_view user) = 0;
    // The standing corrections that stepped any user's layer for mail from
    // `sender`, oldest first, each with its signature and undo record, locked
    // as above (per_user: opposite corrections of one sender cancel in the site).
    virtual std::vector<CorrectionRecord> standing_sender_corrections(std::string_view sender) = 0;
    // What undoing correction `correction_id` takes, from now on.
    virtual void set_correction_undo(std::int64_t correction_id, const CorrectionUndo& undo) = 0;
    virtual void defer_correction(const Digest& signature, Class to, std::int64_t now, std::string_view by) = 0;
    // The class the dropped one asked for, and who asked; nullopt: none was waiting.
    virtual std::optional<DeferredCorrection> drop_deferred_correction(const Digest& signature) = 0;
    virtual std::vector<ReadyCorrection> take_ready_corrections(std::size_t limit) = 0;
    virtual void commit() = 0;
    // Throws the backend's Error (naming the database) with `what`.
    [[noreturn]] virtual void fail(const std::string& what) const = 0;
};

}  // namespace mailsift::store
