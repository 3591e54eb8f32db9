// mailsift::engine model settings — the settings a model is trained with, kept
// in the store beside its counts and weights.
//
// What stored counts and weights mean depends on how they were learned: which
// features were extracted, the weights' table size and the 4-gram window, the
// learner and its step, replays and refit, the naive-Bayes input the weights
// learned against, the scale their probability is read on. The first training
// of an empty store records these settings; from then on every program that
// reads or trains the store (classify, learn, correct, mailsiftd, the console)
// uses the recorded values whatever mailsift.conf says, and says so where the
// file sets one differently. So a changed file cannot silently disagree with
// the weights; a model trained with other settings is a new database.
// mailsift.conf keeps what an administrator tunes: where the store is, the
// thresholds, the actions, the daemon and the console.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mailsift/engine/settings.hpp"
#include "mailsift/store/model_store.hpp"

namespace mailsift::engine {

// Whether `name` is one of the settings kept with the model.
bool is_model_setting(std::string_view name);
// The settings kept with the model, in name order.
std::vector<std::string> model_setting_names();
// Their values in `settings`, as the store keeps them: "name = value" lines in name order.
std::string model_settings_text(const Settings& settings);

struct ModelSettings {
    Settings settings;               // the configured settings, with the model's recorded values in force
    std::string recorded;            // what the store holds ("": none recorded yet)
    std::vector<std::string> notes;  // one line for each setting the file gives otherwise than the model
};
// `recorded`: the store's text. `weight_bits`: the size of the weights of a
// store trained before its settings were recorded (0: none learned), taken
// over so that such a store loads whatever linear_hash_bits says.
ModelSettings with_model_settings(const Settings& configured, std::string_view recorded, unsigned weight_bits);
// The same, read from `db`.
ModelSettings model_settings(store::ModelStore& db, const Settings& configured);

}  // namespace mailsift::engine
