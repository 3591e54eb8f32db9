// mailsift::engine — where the model in memory comes from: the store's model
// reads, its contacts and its change counter, read into an immutable Model
// (model.hpp) and read again when the store changed.
//
// Contract:
//  - The only part of scoring that reads the store. scorer.hpp's classify()
//    takes the Model this builds and nothing that can reach the database.
//  - refresh() runs on one thread at a time and builds a new Model (sharing
//    the old one's tables); a Model already handed out never changes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mailsift/engine/model.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/store/contact_store.hpp"
#include "mailsift/store/model_store.hpp"

namespace mailsift::engine {

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

class ModelSource {
public:
    // `settings` as configured: the settings kept with the model in `models`
    // take precedence (model_settings.hpp); settings() holds what is in force.
    // Reads the whole model.
    ModelSource(store::ModelStore& models, store::ContactStore& contacts, Settings settings);
    // Only what `messages` need, for a command that handles a few of them
    // (classify or explain of one message, as a sieve or procmail recipe runs
    // it): the rows of their features, the class totals and the vocabulary
    // (store::ModelStore::counts_of) and the linear weights, instead of every
    // feature. Each of those messages scores exactly as with the whole model;
    // scoring any other message with it throws std::logic_error (Model::covered),
    // and refresh() reads nothing.
    ModelSource(store::ModelStore& models, store::ContactStore& contacts, Settings settings,
                std::span<const std::string_view> messages);

    // Brings the model up to what the store holds when another connection has
    // committed: only the features written since are read, and the new model
    // shares the current one's table (model::Snapshot::patched); only when the
    // changes cannot be listed (a prune, an import, more than a quarter of the
    // model, or a reader more than an hour behind) is every feature reread.
    // Returns true when the model changed.
    bool refresh();
    // The model now; a thread that scores keeps the one it took.
    std::shared_ptr<const Model> model() const {
        std::lock_guard lock(model_mutex_);
        return model_;
    }
    const Settings& settings() const { return *settings_; }
    // Where the configuration disagrees with the settings kept with the model.
    const std::vector<std::string>& setting_notes() const { return setting_notes_; }
    // A refresh() found settings recorded in the store that differ from the
    // ones in force here (a first training by a program configured otherwise,
    // an import): scores would not mean what the weights do; open a new source.
    bool settings_stale() const { return settings_stale_; }

private:
    // The settings in force: configured_ with those the store records (and notes of where they differ).
    void adopt_model_settings();
    // Whether the settings the store records now differ from those in force.
    bool recorded_settings_differ();

    store::ModelStore& models_;
    store::ContactStore& contacts_;
    Settings configured_;                       // as given, before the model's settings
    std::shared_ptr<const Settings> settings_;  // in force; every Model built shares it
    std::string recorded_settings_;             // the store's record when this source was made ("": none)
    std::vector<std::string> setting_notes_;
    bool settings_stale_ = false;
    bool partial_ = false;                      // made for some messages: refresh() reads nothing
    std::uint64_t seen_data_version_ = 0;       // refresh()'s own: the last version checked
    mutable std::mutex model_mutex_;            // guards the pointer only; a Model is immutable
    std::shared_ptr<const Model> model_;
};

}  // namespace mailsift::engine
