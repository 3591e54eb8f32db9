// mailsift::engine — the score of one message: parse, featurize, and score
// against an in-memory Model (model.hpp), naive Bayes and the linear scorer
// combined (combine.hpp).
//
// Contract:
//  - classify() reads nothing but the message and the Model it is given: no
//    store, no file, no lock. The milter, the console, `mailsift classify`,
//    `explain` and `evaluate` all score through it, so a message scores the
//    same wherever it is scored with the same model.
//  - Safe on any number of threads at once (the Model is immutable).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mailsift/engine/combine.hpp"
#include "mailsift/engine/model.hpp"
#include "mailsift/engine/score_parts.hpp"
#include "mailsift/features/extractor.hpp"
#include "mailsift/mime/message.hpp"

namespace mailsift::engine {

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

// What a score was made of (explain takes the score apart from it rather
// than parse and score the message again).
struct Scoring {
    std::shared_ptr<const Model> model;  // the model it was scored with
    features::FeatureBag bag;
    std::string view;                 // the linear scorer's view of the message ("" without one)
    std::vector<model::Slot> slots;   // its slots
    Combined combined;
};

struct ScoreOptions {
    const features::Envelope* envelope = nullptr;  // the SMTP envelope, when the message came with one
    bool record_features = false;  // Classification::features: what was scored
    // Classification::parts: the score taken apart (the settings.reasons
    // strongest each way, up to most_parts), as the console's history keeps it.
    bool record_parts = false;
    Scoring* made_of = nullptr;    // when given: what the score was made of
    // Scored for that user, with their layer (its weight for the sender:
    // features::personal_slots); empty: the site's model alone.
    std::string_view user;
};

// The message's score with `model` (not null). A model made for some messages
// (Model::covered) throws std::logic_error for a message it was not made for.
Classification classify(const std::shared_ptr<const Model>& model, std::string_view raw,
                        const ScoreOptions& options = {});

// The message's features as `model` sees them (its contacts, its settings).
features::FeatureBag features_of(const Model& model, std::string_view raw,
                                 const features::Envelope* envelope = nullptr);

}  // namespace mailsift::engine
