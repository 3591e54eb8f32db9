// mailsift::engine Trainer — the one way a message is learned: `learn`,
// `correct` of a file or of a signature, the console's corrections, the
// daemon's deferred corrections and `evaluate` all train through it.
//
// Contract:
//  - Trainer groups messages into store transactions; a message with a problem
//    (empty, not a message, over the size limit) is reported and not learned.
//  - Every message it learns takes one path (train()): the counts, the linear
//    scorer's step, its rehearsal sample and replays, and the models it holds
//    kept in step. A correction by signature and a correction of the delivered
//    copy leave the same model: both train the scan, its features and its view
//    (filter.hpp, recorded_view), as the milter scored them.
//  - A correction records what undoing it takes (its step and its replays, the
//    contact it added), so that undo puts the model back.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "mailsift/engine/combine.hpp"
#include "mailsift/engine/message_checks.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/model/linear.hpp"
#include "mailsift/model/naive_bayes.hpp"
#include "mailsift/store/contact_store.hpp"
#include "mailsift/store/database.hpp"
#include "mailsift/store/training_batch.hpp"

namespace mailsift::engine {

// Thick-threshold training (settings.train_margin): is a message that `model`
// scored `log_odds` already known well enough not to be learned as `spam`?
// Only on the right side by at least `margin`, and only once the model has
// learned both classes: a model that never saw one class is "sure" of
// everything, and would skip most of the first class of a class-sorted batch.
bool known_beyond_margin(const model::Snapshot& model, double log_odds, bool spam, double margin);

struct TrainCounts {
    std::size_t learned = 0, already_learned = 0, moved = 0, unlearned = 0, not_learned = 0;
    std::size_t confident = 0;  // train_margin: already scored right beyond the margin, not learned
};

class Trainer {
public:
    // How much of the model a trainer reads: all of it at first use (a batch),
    // or the totals and then the rows of the features it learns, scores and
    // replays, as it needs them (a command of a few messages: correct, as the
    // IMAPSieve recipe runs it once per moved message). Both learn the same.
    enum class Reads : std::uint8_t { whole_model, rows };
    // `settings` as configured: the settings kept with the model in `db` take
    // precedence; a store with none records these at its first commit.
    Trainer(store::Database& db, Settings settings, Reads reads = Reads::whole_model);
    ~Trainer();
    // The linear scorer's weights as the store held them at `sequence`, kept
    // between trainers by a writer that trains one request after another on
    // one connection (mailsiftd's correction socket). A trainer given one reads
    // the pages and steps written since, as mailsiftd's refresh does, not the
    // whole table (1 MiB, and every step kept as a slot), and leaves in it what
    // it read. Weights of other parameters (reconfigured) are read afresh.
    struct LinearCache {
        std::shared_ptr<const model::LinearModel> weights;
        std::uint64_t sequence = 0;
    };
    void use_linear_cache(LinearCache& cache) { linear_cache_ = &cache; }
    const Settings& settings() const { return settings_; }
    // Where the configuration disagrees with the settings kept with the model.
    const std::vector<std::string>& setting_notes() const { return setting_notes_; }

    struct LearnOutcome {
        MessageProblem problem = MessageProblem::none;  // not none: nothing was learned
        store::LearnResult result = store::LearnResult::learned;
        // settings.train_margin: the model already scored it right beyond the
        // margin, so nothing was learned (`result` is then meaningless).
        bool confident = false;
    };
    // Adds one message to the open batch (committing every settings.batch_messages).
    LearnOutcome learn(std::string_view raw, std::size_t size_bytes, store::Class c, std::int64_t now);

    // learn() in two halves, so that bulk training can featurize on several
    // threads: prepare() only reads (safe to call concurrently, not with the
    // learning half), learn_prepared() writes, in the order messages are given.
    struct Prepared {
        MessageProblem problem = MessageProblem::none;
        store::Digest digest{};
        // The digest the same bytes had before (engine::earlier_message_digest()),
        // when it differs and the message has no signature.
        std::optional<store::Digest> earlier_digest;
        features::FeatureBag bag;
        std::vector<std::uint32_t> order;  // bag entries in id order: the store keeps lists sorted
        std::string from_address;
        std::vector<model::Slot> slots;  // settings.scorer == linear: the linear scorer's slots
        std::string prefix;              // and the message's view (features/view.hpp), its 4-grams' source
    };
    Prepared prepare(std::string_view raw, std::size_t size_bytes) const;
    // How the models this trainer holds in memory (the counts and the weights
    // as the store holds them, kept in step with what it learns) score a
    // prepared message: what classify would say after a commit. `evaluate
    // --online` scores with it, so that it measures this trainer's regime.
    Combined score(const Prepared& p);
    // Starts a learn command of one message, as the IMAPSieve recipe runs
    // `mailsift correct` and `evaluate --online` judges each message: the
    // margin is judged against the counts as they are now, contacts learned
    // before count. Call before each message's learn_prepared() and
    // refit_linear() after it (due by what stands unrefitted, refit_due).
    void begin_command();
    // `selective`: apply settings.train_margin (learn; a correction is always trained).
    // `undo`: a correction's, given what undoing it takes (its step, the contact it added).
    LearnOutcome learn_prepared(const Prepared& p, store::Class c, std::int64_t now, bool selective = true,
                                store::CorrectionUndo* undo = nullptr);
    store::UnlearnResult unlearn(std::string_view raw, store::Class c);

    // A correction: when the message carries a signature the database knows,
    // trains the features recorded at scan time (under the signature) and notes
    // the correction for error rates; otherwise learns the message as it is.
    struct CorrectOutcome {
        MessageProblem problem = MessageProblem::none;
        store::LearnResult result = store::LearnResult::learned;
        bool by_signature = false;
        // train_on_error: mailsiftd's verdict was confident and already right, so nothing was trained.
        bool confirmed = false;
        // By signature, before its scan was written: kept, and trained when the scan arrives.
        bool deferred = false;
        // The message's standing correction the other way was undone first
        // (supersede): this one stands alone, as though that one had not been made.
        bool superseded = false;
    };
    CorrectOutcome correct(std::string_view raw, std::size_t size_bytes, store::Class c, std::int64_t now);
    // Who the corrections of this trainer are from, as store::Correction::by
    // ("console:NAME", "cli:USER"); kept with each, and shown in the history.
    // A name acting for a user ("socket:vmail for alice@example.org",
    // correction_owner.hpp) corrects and undoes that user's only: the
    // corrections below throw NotYours, having changed nothing, for a scan or
    // a correction of another user.
    void set_corrector(std::string by) { corrector_ = std::move(by); }
    // The user the messages this trainer learns and corrects are theirs
    // (per_user, issue 44): their layer is stepped with the site's. A
    // correction by a scan recorded for a user steps that user's layer unless
    // one is set here (an alias: `mailsift correct --user`). Empty: none.
    void set_user(std::string user) { user_ = std::move(user); }
    // A tagged message delivered (its topmost Received: field) less than
    // `wait` before `now`, whose scan is not in the store yet, is waited for up
    // to that long after its delivery: mailsiftd writes its scans every
    // stats_interval, and a user moves mail seconds after it arrives. The
    // correction then trains what it trains an hour later, the user's layer
    // included (issue 58). 0, the default: no wait (mailsiftd's own trainer
    // keeps such a correction for its scan instead).
    void set_scan_wait(std::chrono::milliseconds wait) { scan_wait_ = wait; }
    // Without the message: nothing when the signature is unknown (expired or never scanned here).
    std::optional<CorrectOutcome> correct_signature(const store::Digest& id, store::Class c, std::int64_t now);
    // The same, but a signature without a scan yet is not an error: the correction
    // is kept in the database and trained, once, when mailsiftd writes that scan
    // (apply_deferred_corrections). Checked and kept under the write lock, so a
    // scan written at the same moment is either found here or finds the correction.
    CorrectOutcome correct_or_defer_signature(const store::Digest& id, store::Class c, std::int64_t now);
    // Undoes the latest correction of a signature that stands: the model put
    // back as it was before it (the message unlearned, or moved back to the
    // class it was learned as; the linear scorer's step taken back; the
    // contact it added removed), the correction kept in its line's trail,
    // marked undone by corrector_, and counted nowhere. Undoing again undoes
    // the one before. Not the same as correcting to the other class, which
    // learns the message as that class. Committed by commit().
    struct UndoOutcome {
        enum class Result : std::uint8_t {
            undone,
            withdrawn,     // the correction was still waiting for its scan: dropped, nothing was trained
            nothing,       // no correction of it stands
            not_undoable,  // recorded by a mailsift from before undo: correct it instead
            changed,       // learned otherwise since (learn, unlearn): left as it is
            scan_gone,     // moving it back needs its features: the scan expired and no message was given
            untagged,      // undo(raw): the message carries no X-Mailsift-Signature
        } result = Result::nothing;
        store::Class to = store::Class::ham;  // what the correction undone had said
        std::optional<store::Class> was;      // learned as now (nullopt: not learned)
    };
    // `raw`: the message, when the caller has it (moving back without its scan).
    UndoOutcome undo_signature(const store::Digest& id, std::int64_t now, std::string_view raw = {});
    // By the message's X-Mailsift-Signature.
    UndoOutcome undo(std::string_view raw, std::int64_t now);
    // forget-user: takes back every step `user`'s layer (per_user) took from
    // the corrections that stand, and clears it from them, so that an undo
    // later takes back the site's step alone. The corrections, their trail and
    // what the site's model learned from them stay. Returns the corrections
    // as they were (engine::user_layer() says what they held). Committed by commit().
    std::vector<store::CorrectionRecord> forget_user(std::string_view user);
    // Trains the deferred corrections whose scans are written now, and commits;
    // returns how many. mailsiftd's recorder calls it after each write.
    std::size_t apply_deferred_corrections(std::int64_t now);
    // When the linear scorer (settings.scorer == linear) is refitted after the
    // model changed is decided by refit_due() alone, for every writer (issue
    // 58): a refit is linear_epochs passes over both classes' rehearsal
    // samples, shuffled together, so that what was learned one class at a
    // time (a Junk folder, then an inbox; corrections, which are mostly spam
    // left in the inbox) is refitted as one mixed set; committed in a batch of
    // its own. Stepping the weights on corrections alone drifts them toward
    // spam, until ham they scored right goes to Junk (issue 42: 1 ham in Junk
    // on the stream without refits, 0 with them).
    //
    // Two points ask:
    // - command_end: a command that learned or corrected ends (finish():
    //   `learn`, `correct` writing the database, the console's learn,
    //   `evaluate`): due once refit_after changes stand unrefitted,
    //   or a tenth of the samples held (a small model, where a refit costs
    //   little): the command's own (messages learned, samples dropped) and,
    //   when it corrected or undid a correction, what other writers left
    //   unrefitted (read with the weights). So a site where only `mailsift
    //   correct` writes refits once in refit_after corrections: one
    //   invocation pays 0.38 s and 100 MB instead of 15 ms and 11 MB (the
    //   rehearsal samples read, and their rows), the others nothing. A learn
    //   command counts its own alone: refitting every refit_after messages
    //   of an online stream learned one command at a time raised its false
    //   positives at the default thresholds (the stream 0.02% -> 0.12%,
    //   docs/accuracy.md, issue 58).
    // - settled: the changes paused (mailsiftd's recorder, daemon/recorder.hpp,
    //   which refits what its correction socket and console correct, and what
    //   any other writer changed; `evaluate --deployed` at the same point, after
    //   each `mailsift correct`'s finish()): due when anything changed the
    //   samples since the last refit, by any writer (a message learned, a
    //   correction's sample dropped by its undo), however few.
    // `unrefitted`: those changes; `held`: the samples held, both classes.
    enum class RefitPoint : std::uint8_t { command_end, settled };
    static constexpr std::size_t refit_after = 100;
    static bool refit_due(RefitPoint at, std::uint64_t unrefitted, std::uint64_t held);
    //
    // Each refit marks the version of the samples it refitted in the store
    // (store::LinearWeights::refit_mark). One due at a command's end is always
    // written; of two settled refits of the same samples, the second is
    // dropped (0 returned), so a fleet refits once. Each returns the samples
    // refitted (0: not due, or a class has none yet).
    std::size_t refit_linear();            // at command_end
    std::size_t refit_linear_if_behind();  // settled
    // Commits the open batch, if any.
    void commit();
    // How every command that learned or corrected ends outside mailsiftd
    // (`learn`, `correct`, the console's learn, `evaluate`): commit(), then
    // refit_linear() when it is due (refit_due). Returns the samples refitted.
    std::size_t finish();
    const TrainCounts& counts() const { return counts_; }
    // What the batches committed so far hold; after an error, counts() less this was rolled back.
    const TrainCounts& committed() const { return committed_; }
    // Messages given to the open batch (not yet committed).
    std::size_t in_batch() const { return batch_ ? in_batch_ : 0; }

private:
    void open_batch();
    // The refit itself, due or not; 0 when a class has no sample yet, or
    // (`exclusive`) another writer's refit of the same samples came first.
    std::size_t refit(bool exclusive);
    // What a prepared message is stored under: its digest, or its earlier
    // digest when only that one is learned (learned before message_digest()
    // read through line ends), so that it is not learned twice.
    store::Digest stored_digest(const Prepared& p);
    // train_on_error: mailsiftd said `said` with confidence and `c` agrees: nothing to train.
    bool confirmed_only(model::Verdict said, store::Class c) const;
    void prepare_parsed(std::string_view raw, const mime::ParsedMessage& parsed, Prepared& p) const;
    store::LearnResult learn_terms(const store::Digest& digest, const std::vector<store::TrainTerm>& terms,
                                   std::string_view from_address, store::Class c, std::int64_t now,
                                   const store::TrainingBatch::LinearStep* linear = nullptr,
                                   store::CorrectionUndo* undo = nullptr);
    // `raw`: the message itself, when the correction has it (its view's 4-grams are learned too).
    // `by`: who asked (a deferred correction's requester); nullptr: corrector_.
    CorrectOutcome learn_scan(const store::Scan& scan, store::Class c, std::int64_t now, std::string_view raw = {},
                              const std::string* by = nullptr);
    // The counts as the store holds them now (commits the open batch first).
    model::Snapshot load_counts();
    // The model thick-threshold training scores against: the counts as they
    // were at this trainer's first selective learn, never changed after.
    const model::Snapshot& known_model(std::span<const model::Term> terms = {});
    // Reads::rows: adds the store's rows of those of `terms` not read into
    // `counts` yet (`covered`: the ids read so far, present or not).
    void cover(model::Snapshot& counts, std::unordered_set<model::FeatureId>& covered, std::span<const model::Term> terms);
    // settings.scorer == linear: the counts the linear scorer's naive-Bayes
    // input is taken from: loaded at first use, then kept in step with what
    // this trainer learns. With Reads::rows, `terms`' rows are read first
    // when they were not yet (cover()).
    model::Snapshot& selection_model(std::span<const model::Term> terms = {});
    // settings.scorer == linear: the weights as the store held them at first
    // use, then kept in step with the steps this trainer takes.
    model::LinearModel& linear_model();
    // settings.scorer == linear: both of the above, loaded before a batch opens
    // (loading commits the open batch; a correction must not be split by it),
    // and known_model() for a selective learn.
    void load_linear_models(bool selective = false);
    // The one path every learned message takes: its counts (learn_terms), the
    // linear scorer's step on `slots` (from `view` and its features) and on
    // the layer of `user` (or set_user()'s) for `from_address`, its rehearsal
    // sample and replays, and the selection model kept in step.
    // `model_terms`: the features as scoring takes them (scoring_terms).
    store::LearnResult train(const store::Digest& digest, const std::vector<store::TrainTerm>& terms,
                             const std::vector<model::Term>& model_terms, std::vector<model::Slot> slots,
                             std::string_view user, std::string_view view,
                             std::string_view from_address, store::Class c, std::int64_t now,
                             store::CorrectionUndo* undo);
    // The linear scorer's step for a message (naive-Bayes input from the
    // selection model), scored with the user's `personal` slots: the site's
    // step on `slots` and the bias, and in `*layer` the layer's on `personal`.
    store::TrainingBatch::LinearStep linear_step(const std::vector<model::Term>& terms, std::vector<model::Slot> slots,
                                                 std::vector<model::Slot> personal, bool spam,
                                                 std::optional<store::TrainingBatch::LinearStep>* layer = nullptr);
    // The layer's step taken (learned, not already): in the weights, the batch
    // and `undo` (with whose layer it is, and for which sender).
    void take_layer_step(const store::TrainingBatch::LinearStep& layer, std::string_view user, std::string_view sender,
                         store::CorrectionUndo* undo);
    // set_user()'s (or `user`'s) slots for mail from `sender`; none without a user.
    std::vector<model::Slot> personal_slots(std::string_view sender, std::string_view user = {}) const;

    store::Database& db_;
    // May `acting` (acting_for(corrector_); nullopt: an administrator) undo
    // `latest`, the latest standing correction of `id`? Its layer's user, else
    // its scan's, else whoever made it.
    bool may_undo(const store::Digest& id, const store::CorrectionRecord& latest,
                  const std::optional<std::string>& acting);
    // Takes `latest` (with an undo record) back: the site's part unless
    // cancelled, its layer step, and marks it undone by corrector_.
    UndoOutcome::Result take_back(const store::Digest& id, const store::CorrectionRecord& latest, std::string_view raw,
                                  std::int64_t now);
    // Before a correction of `id` to `c`: its latest standing correction the
    // other way, when this corrector may undo it, is taken back (undone), so
    // that the new one stands alone. True when one was.
    bool supersede(const store::Digest& id, store::Class c, std::string_view raw, std::int64_t now);
    // NotYours when set_user()'s user is one mailsiftd never scored mail for
    // (store::ScanLog::delivered_to), with per_user and the linear scorer.
    void check_named_user();
    std::string delivered_checked_;  // the user check_named_user() found delivered to
    // NotYours when `by` acts for a user (correction_owner.hpp) and `scan` was recorded for another.
    void check_owner(const store::Scan& scan, std::string_view by) const;
    // per_user: the latest standing correction by another user of mail from
    // `sender` the other way than `c` whose site part stands and can be taken
    // back (its message still learned so; its features at hand when moved).
    std::optional<store::CorrectionRecord> opposite_correction(std::string_view sender, std::string_view user,
                                                               store::Class c);
    // Takes back what correction `r` (of `id`, to `to`) taught the site: its
    // message's counts (unlearned, or moved back: the features from its scan,
    // else from `raw`), the linear scorer's step and replays, its sample's use,
    // the contact it added. false: its features are gone, nothing changed.
    bool take_back_site(const store::Digest& id, store::Class to, const store::CorrectionUndo& u, std::string_view raw,
                        std::int64_t now);
    // train()'s correction of a user's copy against another user's standing
    // opposite correction of the same sender: both cancel in the site, this
    // one steps its user's layer alone. nullopt: none to cancel (train as usual).
    std::optional<store::LearnResult> learn_cancelling(const store::Digest& digest,
                                                       const std::vector<model::Term>& model_terms,
                                                       std::vector<model::Slot>& slots, std::vector<model::Slot>& personal,
                                                       std::string_view user, std::string_view from_address,
                                                       store::Class c, std::int64_t now, store::CorrectionUndo& undo);
    // The features learned of `id`: from its scan (parsed into `lines`), else
    // from `raw` (prepared into `p`); empty when neither has them. The terms'
    // texts point into `lines` or `p`, which must outlive them.
    std::vector<store::TrainTerm> learned_terms(const store::Digest& id, std::string_view raw,
                                                std::vector<std::pair<std::string, std::uint32_t>>& lines, Prepared& p);
    std::string corrector_;  // set_corrector()
    std::string user_;       // set_user()
    std::chrono::milliseconds scan_wait_{0};  // set_scan_wait()
    // The scan of `id`, waited for as set_scan_wait() says; nullopt when it did not come.
    std::optional<store::Scan> scan_for(const store::Digest& id, const mime::ParsedMessage& parsed, std::int64_t now);
    Reads reads_ = Reads::whole_model;
    Settings settings_;
    std::string settings_to_record_;  // model_settings_text(), while the store records none
    std::vector<std::string> setting_notes_;
    store::ContactSet contacts_;
    std::unique_ptr<store::TrainingBatch> batch_;
    std::size_t in_batch_ = 0;
    TrainCounts counts_;
    TrainCounts committed_;
    std::optional<model::Snapshot> selection_;
    std::optional<model::Snapshot> known_;
    std::unordered_set<model::FeatureId> covered_selection_, covered_known_;  // Reads::rows
    // Keeps a learned message in its class's rehearsal sample (a uniform
    // reservoir, linear_rehearsal a class) and replays linear_replays messages
    // of the other class that the model scores within linear_replay_margin.
    // `undo`: a correction's, which records the replays so that undo takes them back too.
    void rehearse(const store::Digest& digest, std::string_view prefix, store::Class c,
                  store::CorrectionUndo* undo = nullptr);
    std::optional<model::LinearModel> linear_;
    LinearCache* linear_cache_ = nullptr;  // use_linear_cache()
    std::uint64_t linear_seen_[2] = {0, 0};  // ham, spam: offered to the samples, as the store counts them
    std::uint64_t linear_dropped_ = 0;       // samples dropped, as the store counted them when read
    bool one_message_ = false;               // begin_command(): known_model() is the counts as they are
    std::vector<std::string> new_contacts_;  // learned as contacts since begin_command()
    std::size_t linear_learned_ = 0;         // learned (or a sample dropped) since the last refit, by this trainer
    std::uint64_t linear_unrefitted_ = 0;    // the samples' changes since the last refit, as read with the weights
    bool corrected_ = false;                 // a correction recorded or undone (refit_linear)
};

// What an undo that undid nothing says (nothing, not_undoable, changed,
// scan_gone, untagged), in the words `mailsift correct --undo` and the
// console both use; "" for undone and withdrawn.
const char* undo_problem(Trainer::UndoOutcome::Result r);

}  // namespace mailsift::engine
