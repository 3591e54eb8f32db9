// mailsift::model linear — the error-driven linear scorer over hashed binary
// features (the default scorer, `model = linear`): its state and its score.
//
// A message is a set of slots (hashed feature ids, each counted once: binary
// presence) plus one real input, nb(x): the naive-Bayes log-odds over
// nb_temperature, clipped to ±nb_clip. Its score is
//   z(x) = b + u · nb(x) + Σ_{j ∈ slots(x)} w_j
// and P(spam|x) = σ(z / T) with T the linear temperature (engine/combine).
// How one message moves the weights is the learner's (model/learner.hpp): the
// default is online logistic regression with a step normalised by the
// message's length, so that learning a message moves its own score by at most
// `step` log-odds however many slots it touches, and one learned copy of a
// newsletter cannot swing the next copy by tens of log-odds
// (learners/logistic_regression.cpp).
//
// The naive Bayes gets a bounded vote: u = 1, kept fixed (η_u = 0), and its
// input clipped to ±0.5, so it moves a score by at most half a log-odds. Its
// counts learn fast from few messages and read header words the 4-grams cut
// short (Ng & Jordan 2002 on generative and discriminative learners; Lynam &
// Cormack 2006 on fusing filters' log-odds), but its log-odds run to ±80 on
// mail the two classes share (Delany et al.: naive-Bayes scores do not predict
// confidence), which is what swung issue 21's default (u learned from 1,
// clip 30, nb over the calibration temperature) by tens of log-odds.
//
// Pure: no I/O; the weights are plain floats in a power-of-two table.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mailsift/model/learner.hpp"

namespace mailsift::model {

using Slot = std::uint32_t;

struct LinearParameters {
    std::string learner = "logistic";  // how a message moves the weights: a name of learner_names()
    unsigned hash_bits = 18;   // 2^18 weights (1 MiB of floats)
    double step = 4.0;         // log-odds a learned message moves its own score by, at most (docs/accuracy.md, issue 32)
    double nb_rate = 0.0;          // η_u for u (0: u stays as it is, 1 for a new model)
    // Constants, not settings (no key sets them; a test model may): the scale
    // and the bound of the naive-Bayes input, which u learns to weigh.
    double nb_temperature = 12.0;  // nb(x) = naive-Bayes log-odds / nb_temperature, then clipped
    double nb_clip = 0.5;          // |nb(x)| at most this: the vote is at most u·nb_clip log-odds
    // P(spam|x) = σ(z / temperature). Online logistic regression with small
    // steps is under-confident; 0.5 calibrated the 20,000-message stream of one
    // server (docs/accuracy.md, issue 32).
    double temperature = 0.5;
    // Rehearsal: a uniform sample of up to this many learned messages per class
    // (0 = off); each learned message replays `replays` of the other class,
    // each only when its margin y·z is below `replay_margin`. Without it, one
    // class learned after the other drags the weights to that class.
    std::size_t rehearsal = 4000;
    std::size_t replays = 2;
    double replay_margin = 3.0;
    // Passes over both classes' samples, shuffled together, after a batch.
    std::size_t epochs = 3;

    bool operator==(const LinearParameters&) const = default;
};
// Defaults: docs/accuracy.md, issue 32 (chosen on one server's 20,000-message
// stream, confirmed on the other corpora; issue 21's are in its sweep).

// The linear part of one message's score, with what each part contributed.
struct LinearScore {
    double bias = 0.0;
    double nb_input = 0.0;   // nb(x), clipped
    double nb_weight = 0.0;  // u
    double features = 0.0;   // Σ w_j
    std::size_t slots = 0;   // |slots(x)|
    double z() const { return bias + nb_weight * nb_input + features; }
};

class LinearModel {
public:
    LinearModel() = default;
    // Throws std::invalid_argument for a learner that is none of learner_names().
    explicit LinearModel(const LinearParameters& p);
    // Only the weights of `covered` (sorted, distinct, each below 2^hash_bits),
    // all 0 at first: what a command scoring a few messages needs, not the
    // whole table (engine::Filter for some messages). It scores messages whose
    // slots are all covered (any other slot is a std::logic_error) and cannot
    // learn.
    LinearModel(const LinearParameters& p, std::vector<Slot> covered);

    const LinearParameters& parameters() const { return params_; }
    std::size_t size() const { return partial_ ? std::size_t{mask_} + 1 : weights_.size(); }
    double bias() const { return bias_; }
    double nb_weight() const { return nb_weight_; }
    float weight(Slot s) const { return partial_ ? weights_[covered_index(s)] : weights_[s & mask_]; }
    Slot mask() const { return mask_; }
    bool partial() const { return partial_; }
    // A partial model's slots, in the order of weights(); empty for a whole one.
    std::span<const Slot> covered() const { return covered_; }

    // `slots`: distinct, each below size().
    LinearScore score(std::span<const Slot> slots, double nb_log_odds_calibrated) const;
    // The step one message moves the weights by, toward `spam`, from its score (the learner's).
    using Step = LinearStep;
    Step step(const LinearScore& s, bool spam) const { return learner_->step(s, spam, params_); }
    void apply(std::span<const Slot> slots, const Step& step);
    // score(), step() and apply() at once; returns the step taken.
    Step learn(std::span<const Slot> slots, double nb_log_odds_calibrated, bool spam);

    // The weights as a store holds them: all of them (a partial model: those
    // of covered(), in its order), and the state beside.
    std::span<const float> weights() const { return weights_; }
    std::span<float> weights() { return weights_; }
    void set_state(double bias, double nb_weight) {
        bias_ = bias;
        nb_weight_ = nb_weight;
    }

private:
    double clip(double nb) const;
    std::size_t covered_index(Slot s) const;  // a partial model's index of slot s; logic_error if not covered

    LinearParameters params_;
    const Learner* learner_ = &default_learner();
    Slot mask_ = 0;
    std::vector<float> weights_;
    bool partial_ = false;
    std::vector<Slot> covered_;  // partial_: the slots weights_ holds, sorted
    double bias_ = 0.0;
    double nb_weight_ = 1.0;
};

}  // namespace mailsift::model
