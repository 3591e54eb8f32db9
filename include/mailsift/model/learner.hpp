// mailsift::model learner — how the linear scorer learns from one message: the
// rule that turns the message's score and its label into a step of its weights.
//
// The scorer's state (the hashed weights, the bias, the naive-Bayes weight u;
// model/linear.hpp) and what is done with it (scoring, the store's pages, the
// replays and the refit of engine/trainer) are the same for every learner; a
// learner only says how far, and which way, one message moves them. Trying
// another learner is one file under src/model/learners/ and one line in
// src/model/learners/list.hpp; `linear_learner` in mailsift.conf picks
// it for a new model, and the store keeps the choice with the weights
// (engine/model_settings.hpp).
//
// Why one step for all of a message's slots: a step is a delta, and the store
// adds deltas (slot by slot, TrainingBatch::LinearStep), so that two daemons
// of a fleet learning at once, or a step replayed after a retry, sum to the
// same weights in any order. A learner with state of its own per weight
// (AdaGrad's sum of squared gradients, Winnow's multiplicative rule) needs
// two things this interface does not give it: each slot's weight and state
// read into step(), and that state kept by the store beside the weights, as
// deltas that add up the same way. Neither is built; both belong with the
// first such learner, measured against these.
#pragma once

#include <string_view>
#include <vector>

namespace mailsift::model {

struct LinearParameters;
struct LinearScore;

// What one message does to the weights, toward its label: `feature` is added
// to each of its slots' weights and to the bias, `nb_weight` to u.
struct LinearStep {
    float feature = 0.0f;
    double nb_weight = 0.0;
    // The bias takes `feature` too, as one more input; not a user's layer's step,
    // which moves that user's slots alone (engine::Trainer, per_user).
    bool moves_bias = true;
};

class Learner {
public:
    virtual ~Learner() = default;
    // The name `linear_learner` takes.
    virtual std::string_view name() const = 0;
    // The step for a message scored `s` (s.slots slots, s.z() its score) whose label is `spam`.
    virtual LinearStep step(const LinearScore& s, bool spam, const LinearParameters& p) const = 0;
};

// The learners there are, by name; nullptr for a name that is none of them.
const Learner* find_learner(std::string_view name);
std::vector<std::string_view> learner_names();

// The first of them (src/model/learners/list.hpp): what a new model learns with.
const Learner& default_learner();

}  // namespace mailsift::model
