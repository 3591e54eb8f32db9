// mailsift::engine — the facade both programs use: raw message in, verdict out
// (Filter), and training that updates the store (Trainer).
//
// Wires mime -> features -> model <-> store. Knows nothing about sockets or argv.
// Contract:
//  - Filter::classify never touches SQLite: it scores against an in-memory
//    Model (snapshot + contacts) that refresh() swaps when the database changed.
//  - Trainer groups messages into store transactions; a message with a problem
//    (empty, not a message, over the size limit) is reported and not learned.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "mailsift/engine/combine.hpp"
#include "mailsift/engine/score_parts.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/features/extractor.hpp"
#include "mailsift/mime/message.hpp"
#include "mailsift/model/linear.hpp"
#include "mailsift/model/naive_bayes.hpp"
#include "mailsift/store/database.hpp"

namespace mailsift::engine {

// What is wrong with the bytes given as a message. Only `empty` and
// `not_a_message` refuse it (refused()): everything an MTA would deliver is
// mail, NUL bytes, bare CR or LF, 8-bit or malformed headers, a missing body,
// unknown charsets and broken MIME included, and is learned and scored the way
// mailsiftd scores it. The others are notes on what was read.
enum class MessageProblem : std::uint8_t {
    none,
    empty,            // no bytes at all
    not_a_message,    // not a single header field line ("Name: value") in the header section
    too_large,        // larger than limits.max_message_bytes: learned and scored on that prefix
    truncated_mime,   // a multipart whose closing boundary never came: learned and scored on what was read
};
const char* describe(MessageProblem p);
constexpr bool refused(MessageProblem p) { return p == MessageProblem::empty || p == MessageProblem::not_a_message; }

// The message without an mbox "From " envelope line at its very start (a
// message saved from a mailbox file has one; it is not part of the message).
std::string_view without_from_line(std::string_view raw);

// A cheap look at the bytes before parsing. `size_bytes` is the full size of
// the input (it may exceed raw.size()). Never `truncated_mime`: that takes the parse.
MessageProblem check_message(std::string_view raw, std::size_t size_bytes, const mime::Limits& limits);

// Thick-threshold training (settings.train_margin): is a message that `model`
// scored `log_odds` already known well enough not to be learned as `spam`?
// Only on the right side by at least `margin`, and only once the model has
// learned both classes: a model that never saw one class is "sure" of
// everything, and would skip most of the first class of a class-sorted batch.
bool known_beyond_margin(const model::Snapshot& model, double log_odds, bool spam, double margin);

// What scoring reads of a feature bag: id, count, and whether it is a header
// feature (model::Term::header), in the bag's order. Without `envelope`, the
// facts only the milter knows (features::milter_only) are left out.
std::vector<model::Term> scoring_terms(const features::FeatureBag& bag, bool envelope = true);

// Same message, same digest: our own X-Mailsift-* headers are left out, so a
// message we tagged is recognised when it comes back for correction.
store::Digest message_digest(std::string_view raw);

// The X-Mailsift-Signature form of a digest (32 lower-case hex digits), and back.
std::string signature_text(const store::Digest& d);
std::optional<store::Digest> parse_signature(std::string_view text);

// The signature mailsiftd tagged a message with: the last well-formed
// X-Mailsift-Signature of its header (mailsiftd removes forged ones when the MTA
// lets it, and adds its own after them), or nothing.
std::optional<store::Digest> message_signature(const std::vector<mime::Header>& headers);
std::optional<store::Digest> message_signature(std::string_view raw);  // reads the header section
// What a message is learned, unlearned and corrected under: its signature, else
// its message_digest(). So a delivered message and its recorded scan are one
// message, whichever way and whenever it is corrected.
store::Digest message_identity(std::string_view raw);

// The verdict word that starts X-Mailsift-Status ("Yes", "No", "Unsure"), and
// the verdict of such a header value ("No, score=0.1000, ...").
const char* verdict_word(model::Verdict v);
std::optional<model::Verdict> verdict_of_status(std::string_view status);

// "feature<TAB>count" lines: how a scan's features are recorded, and back.
std::string feature_lines(const features::FeatureBag& bag);
std::vector<std::pair<std::string, std::uint32_t>> parse_feature_lines(std::string_view lines);

struct Classification {
    model::Score score;
    std::vector<Reason> toward_spam;
    std::vector<Reason> toward_ham;
    bool prefix_only = false;  // a limit was hit; scored on what was read
    std::vector<mime::LimitHit> limits_hit;  // which ones (mime::ParsedMessage::limits_hit)
    bool truncated = false;    // the MIME structure was cut short; scored on what was read
    std::string features;      // feature_lines() of what was scored, when asked for
    std::optional<ScoreParts> parts;  // the score taken apart, when asked for (settings.reasons each way)
};

// The linear scorer as a store holds it, in memory: `since` 0 reads every
// page into an empty model, else the pages written after `since` patch a copy
// of `current`. `sequence` is set to the model_sequence() of that read. A store
// whose weights have another size than settings.linear.hash_bits is an Error.
// `state`, when given, gets the state read (LinearWeights without pages).
// The model is the caller's (a trainer moves it out rather than copy the table).
std::shared_ptr<model::LinearModel> load_linear(store::Database& db, const Settings& settings,
                                                const model::LinearModel* current, std::uint64_t since,
                                                std::uint64_t& sequence, store::LinearWeights* state = nullptr);
// Only the weights of `slots` (sorted, distinct), all of them read as
// load_linear reads them: the pages, then the held slot deltas in order, so
// each is the same float as in the whole table (model::LinearModel's partial
// model). What a command that scores a few messages needs of the 1 MiB table.
std::shared_ptr<const model::LinearModel> load_linear_slots(store::Database& db, const Settings& settings,
                                                            std::vector<model::Slot> slots, std::uint64_t& sequence);


// The in-memory model: everything scoring needs.
struct Model {
    model::Snapshot snapshot;
    // settings.scorer == linear: the weights, and the model_sequence() they are at.
    std::shared_ptr<const model::LinearModel> linear;
    std::uint64_t linear_sequence = 0;
    store::ContactSet contacts;
    std::uint64_t data_version = 0;
    std::uint64_t sequence = 0;        // store::Database::model_sequence() the counts are at
    std::string contacts_fingerprint;  // store::Database::contacts_fingerprint() when loaded
    bool reloaded = false;             // built by reading every feature, not by applying changes
    std::size_t changed_features = 0;  // when not: how many features the changes touched
};

class Filter {
public:
    // `settings` as configured: the settings kept with the model in `db` take
    // precedence (model_settings.hpp); settings() holds what is in force.
    Filter(store::Database& db, Settings settings);
    // Only what `messages` need, for a command that handles a few of them
    // (classify or explain of one message, as a sieve or procmail recipe runs
    // it): the rows of their features, the class totals and the vocabulary
    // (store::Database::counts_of) and the linear weights, instead of every
    // feature. Each of those messages scores exactly as with the whole model;
    // classify() of any other message throws std::logic_error, and refresh()
    // reads nothing.
    Filter(store::Database& db, Settings settings, std::span<const std::string_view> messages);

    // Brings the model up to what the store holds when another connection has
    // committed: only the features written since are read, and the new model
    // shares the current one's table (model::Snapshot::patched); only when the
    // changes cannot be listed (a prune, an import, more than a quarter of the
    // model, or a reader more than an hour behind) is every feature reread.
    // Returns true when the model changed. Call from one thread at a time;
    // classify() may run concurrently on other threads and keeps the model it
    // started with.
    bool refresh();
    std::shared_ptr<const Model> model() const {
        std::lock_guard lock(model_mutex_);
        return model_;
    }
    const Settings& settings() const { return settings_; }
    // Where the configuration disagrees with the settings kept with the model.
    const std::vector<std::string>& setting_notes() const { return setting_notes_; }
    // A refresh() found settings recorded in the store that differ from the
    // ones in force here (a first training by a program configured otherwise,
    // an import): scores would not mean what the weights do; open a new Filter.
    bool settings_stale() const { return settings_stale_; }

    features::FeatureBag features_of(std::string_view raw, const features::Envelope* envelope = nullptr) const;
    // With `record_features`, Classification::features holds what was scored;
    // with `record_parts`, Classification::parts the score taken apart (the
    // settings.reasons strongest each way, up to most_parts), as the console's
    // history keeps it.
    Classification classify(std::string_view raw, const features::Envelope* envelope = nullptr,
                            bool record_features = false, bool record_parts = false) const;

private:
    LinearParts linear_parts(std::string_view view, const features::FeatureBag& bag, std::span<const model::Slot> slots,
                             const model::LinearScore& z, double nb_log_odds, const model::LinearModel& linear) const;

    // The settings in force: configured_ with those the store records (and notes of where they differ).
    void adopt_model_settings();
    // Whether the settings the store records now differ from those in force.
    bool recorded_settings_differ();

    store::Database& db_;
    Settings configured_;             // as given, before the model's settings
    Settings settings_;               // in force
    std::string recorded_settings_;   // the store's record when this filter was made ("": none)
    std::vector<std::string> setting_notes_;
    bool settings_stale_ = false;
    // The messages' features whose rows were read, when not every feature was.
    std::optional<std::unordered_set<model::FeatureId>> covered_;
    std::uint64_t seen_data_version_ = 0;  // refresh()'s own: the last version checked
    mutable std::mutex model_mutex_;  // guards the pointer only; a Model is immutable
    std::shared_ptr<const Model> model_;
};

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
    // before count, and the refit is due by this command's messages alone.
    // Call before each message's learn_prepared() and refit_linear() after it.
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
    };
    CorrectOutcome correct(std::string_view raw, std::size_t size_bytes, store::Class c, std::int64_t now);
    // Who the corrections of this trainer are from, as store::Correction::by
    // ("console:NAME", "cli:USER"); kept with each, and shown in the history.
    void set_corrector(std::string by) { corrector_ = std::move(by); }
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
    // Trains the deferred corrections whose scans are written now, and commits;
    // returns how many. mailsiftd's recorder calls it after each write.
    std::size_t apply_deferred_corrections(std::int64_t now);
    // settings.scorer == linear, after a learn command: when this trainer has
    // learned at least refit_after messages since the last refit (or a tenth of
    // the rehearsal samples held, on a small model), linear_epochs
    // passes over both classes' rehearsal samples, shuffled together, so that
    // what was learned one class at a time (a Junk folder, then an inbox) is
    // refitted as one mixed set; committed in a batch of its own. Returns the
    // number of samples refitted (0: not due, or a class has none yet).
    static constexpr std::size_t refit_after = 100;
    std::size_t refit_linear();
    // Commits the open batch, if any.
    void commit();
    const TrainCounts& counts() const { return counts_; }
    // What the batches committed so far hold; after an error, counts() less this was rolled back.
    const TrainCounts& committed() const { return committed_; }
    // Messages given to the open batch (not yet committed).
    std::size_t in_batch() const { return batch_ ? in_batch_ : 0; }

private:
    void open_batch();
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
    // The linear scorer's step for a message (naive-Bayes input from the selection model).
    store::TrainingBatch::LinearStep linear_step(const std::vector<model::Term>& terms, std::vector<model::Slot> slots,
                                                 bool spam);

    store::Database& db_;
    std::string corrector_;  // set_corrector()
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
    void rehearse(const store::Digest& digest, std::string_view prefix, store::Class c);
    std::optional<model::LinearModel> linear_;
    std::uint64_t linear_seen_[2] = {0, 0};  // ham, spam: offered to the samples, as the store counts them
    bool one_message_ = false;               // begin_command(): known_model() is the counts as they are
    std::vector<std::string> new_contacts_;  // learned as contacts since begin_command()
    std::size_t linear_learned_ = 0;         // learned since the last refit
};

// What an undo that undid nothing says (nothing, not_undoable, changed,
// scan_gone, untagged), in the words `mailsift correct --undo` and the
// console both use; "" for undone and withdrawn.
const char* undo_problem(Trainer::UndoOutcome::Result r);

}  // namespace mailsift::engine
