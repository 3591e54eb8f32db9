// mailsift::engine — the model in memory: everything scoring needs, and
// nothing that can reach the store.
//
// Contract:
//  - A Model is immutable once built. model_source.hpp builds it (and builds a
//    new one when the store changed, sharing the old one's tables); scorer.hpp
//    scores with it. Threads share it by std::shared_ptr<const Model>, and a
//    message is scored with one Model from start to end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>

#include "mailsift/engine/settings.hpp"
#include "mailsift/model/linear.hpp"
#include "mailsift/model/naive_bayes.hpp"
#include "mailsift/store/contact_store.hpp"

namespace mailsift::engine {

struct Model {
    // The settings in force: as configured, with those kept with the model
    // (model_settings.hpp) taking precedence. Shared by every Model a source builds.
    std::shared_ptr<const Settings> settings;
    model::Snapshot snapshot;
    // settings.scorer == linear: the weights, and the model_sequence() they are at.
    std::shared_ptr<const model::LinearModel> linear;
    std::uint64_t linear_sequence = 0;
    // Messages learned (or samples dropped) since the weights' last refit, as
    // loaded (store::LinearWeights::refit_mark): mailsiftd refits them.
    bool linear_behind = false;
    store::ContactSet contacts;
    std::uint64_t data_version = 0;
    std::uint64_t sequence = 0;        // store::ModelStore::model_sequence() the counts are at
    std::string contacts_fingerprint;  // store::ContactStore::contacts_fingerprint() when loaded
    bool reloaded = false;             // built by reading every feature, not by applying changes
    std::size_t changed_features = 0;  // when not: how many features the changes touched
    // A model made for some messages (ModelSource's second constructor): the
    // features whose rows were read. Null: every feature was.
    std::shared_ptr<const std::unordered_set<model::FeatureId>> covered;
};

}  // namespace mailsift::engine
