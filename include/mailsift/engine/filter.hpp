// mailsift::engine — the facade both programs use: raw message in, verdict out
// (Filter); training that updates the store is Trainer's (trainer.hpp).
//
// Wires mime -> features -> model <-> store. Knows nothing about sockets or argv.
// Contract:
//  - Filter::classify never touches SQLite: it scores against an in-memory
//    Model (snapshot + contacts) that refresh() swaps when the database changed.
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
#include "mailsift/engine/message_checks.hpp"
#include "mailsift/engine/scan_record.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/score_parts.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/features/extractor.hpp"
#include "mailsift/mime/message.hpp"
#include "mailsift/model/linear.hpp"
#include "mailsift/model/naive_bayes.hpp"
#include "mailsift/store/database.hpp"

namespace mailsift::engine {

// Thick-threshold training (settings.train_margin): is a message that `model`
// scored `log_odds` already known well enough not to be learned as `spam`?
// Only on the right side by at least `margin`, and only once the model has
// learned both classes: a model that never saw one class is "sure" of
// everything, and would skip most of the first class of a class-sorted batch.
bool known_beyond_margin(const model::Snapshot& model, double log_odds, bool spam, double margin);

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
std::shared_ptr<model::LinearModel> load_linear(store::ModelStore& db, const Settings& settings,
                                                const model::LinearModel* current, std::uint64_t since,
                                                std::uint64_t& sequence, store::LinearWeights* state = nullptr);
// Only the weights of `slots` (sorted, distinct), all of them read as
// load_linear reads them: the pages, then the held slot deltas in order, so
// each is the same float as in the whole table (model::LinearModel's partial
// model). What a command that scores a few messages needs of the 1 MiB table.
std::shared_ptr<const model::LinearModel> load_linear_slots(store::ModelStore& db, const Settings& settings,
                                                            std::vector<model::Slot> slots, std::uint64_t& sequence);


// The in-memory model: everything scoring needs.
struct Model {
    model::Snapshot snapshot;
    // settings.scorer == linear: the weights, and the model_sequence() they are at.
    std::shared_ptr<const model::LinearModel> linear;
    std::uint64_t linear_sequence = 0;
    // Messages learned (or samples dropped) since the weights' last refit, as
    // loaded (store::LinearWeights::refit_mark): mailsiftd refits them.
    bool linear_behind = false;
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
    // With `made_of`, what the score was made of is kept there (explain takes
    // the score apart from it rather than parse and score the message again).
    struct Scoring {
        std::shared_ptr<const Model> model;  // the model it was scored with
        features::FeatureBag bag;
        std::string view;                 // the linear scorer's view of the message ("" without one)
        std::vector<model::Slot> slots;   // its slots
        Combined combined;
    };
    // `user`: the message is scored for that user, with their layer
    // (its weight for the sender: features::personal_slots); empty: the site's model alone.
    Classification classify(std::string_view raw, const features::Envelope* envelope = nullptr,
                            bool record_features = false, bool record_parts = false,
                            Scoring* made_of = nullptr, std::string_view user = {}) const;

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

}  // namespace mailsift::engine
