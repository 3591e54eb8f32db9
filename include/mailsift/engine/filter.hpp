// mailsift::engine — a model source and the scorer in one object, for a
// program that loads and scores in the same place: a CLI command, an
// evaluation, a test. Training is Trainer's (trainer.hpp).
//
// mailsiftd holds the two apart: its refresh thread owns the ModelSource
// (model_source.hpp) and its scoring threads hold only Models (scorer.hpp).
// Contract:
//  - classify never touches the store: it scores against the in-memory Model
//    that refresh() swaps when the store changed.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "mailsift/engine/model_source.hpp"
#include "mailsift/engine/scorer.hpp"
#include "mailsift/store/database.hpp"

namespace mailsift::engine {

class Filter {
public:
    // The whole model of `db` (ModelSource's first constructor).
    Filter(store::Database& db, Settings settings) : source_(db, db, std::move(settings)) {}
    // Only what `messages` need (ModelSource's second constructor).
    Filter(store::Database& db, Settings settings, std::span<const std::string_view> messages)
        : source_(db, db, std::move(settings), messages) {}

    bool refresh() { return source_.refresh(); }  // ModelSource::refresh
    std::shared_ptr<const Model> model() const { return source_.model(); }
    const Settings& settings() const { return source_.settings(); }
    const std::vector<std::string>& setting_notes() const { return source_.setting_notes(); }
    bool settings_stale() const { return source_.settings_stale(); }

    features::FeatureBag features_of(std::string_view raw, const features::Envelope* envelope = nullptr) const {
        return engine::features_of(*model(), raw, envelope);
    }
    // engine::classify with the model now.
    Classification classify(std::string_view raw, const features::Envelope* envelope = nullptr,
                            bool record_features = false, bool record_parts = false, Scoring* made_of = nullptr,
                            std::string_view user = {}) const {
        return engine::classify(model(), raw, {envelope, record_features, record_parts, made_of, user});
    }

private:
    ModelSource source_;
};

}  // namespace mailsift::engine
