// mailsift::model linear — the error-driven linear scorer beside the
// multinomial model: online logistic regression over hashed binary features.
//
// A message is a set of slots (hashed feature ids, each counted once: binary
// presence) plus one real input, the naive-Bayes log-odds divided by the
// calibration temperature. Its score is
//   z(x) = b + u · nb(x) + Σ_{j ∈ slots(x)} w_j
// and P(spam|x) = σ(z). Learning is one stochastic-gradient step on the log
// loss per message (Goodman & Yin 2006; Cormack's TREC 2007 runs):
//   g = y − σ(z),  w_j += η·g,  b += η·g,  u += η_u·g·nb(x)
// so a message the model already scores right with confidence moves almost
// nothing (g ≈ 0) and an error moves the weights most: training is driven by
// errors and margins without a threshold to tune. u starts at 1, so an empty
// linear model scores exactly as the calibrated naive Bayes does and learns only
// what the counts get wrong (the seeds' perceptron/MIRA path; Manning et al.
// ch. 14-15 on discriminative linear classifiers).
//
// Pure: no I/O; the weights are plain floats in a power-of-two table.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mailsift::model {

using Slot = std::uint32_t;

struct LinearParameters {
    unsigned hash_bits = 18;   // 2^18 weights (1 MiB of floats)
    double rate = 0.01;        // η for feature weights and the bias (0.002 and 0.02 measured worse)
    double nb_rate = 0.002;    // η_u for the weight of the naive-Bayes input
    double nb_clip = 30.0;     // |nb(x)| is clipped here, so one message cannot swing u
    // Rehearsal: a uniform sample of up to this many learned messages per class
    // (0 = off); each learned message replays `replays` of the other class,
    // each only when its margin y·z is below `replay_margin`. Without it, one
    // class learned after the other drags the weights to that class.
    std::size_t rehearsal = 4000;
    std::size_t replays = 2;
    double replay_margin = 3.0;
    // Passes over both classes' samples, shuffled together, after a batch.
    std::size_t epochs = 3;
};
// Defaults: docs/accuracy.md, issue 21 (AdaGrad and length-normalised steps,
// 2^20 slots, 6,000 bytes of 4-grams were measured there and not kept).

// The linear part of one message's score, with what each part contributed.
struct LinearScore {
    double bias = 0.0;
    double nb_input = 0.0;   // nb(x), clipped
    double nb_weight = 0.0;  // u
    double features = 0.0;   // Σ w_j
    double z() const { return bias + nb_weight * nb_input + features; }
};

class LinearModel {
public:
    LinearModel() = default;
    explicit LinearModel(const LinearParameters& p);

    const LinearParameters& parameters() const { return params_; }
    std::size_t size() const { return weights_.size(); }
    double bias() const { return bias_; }
    double nb_weight() const { return nb_weight_; }
    float weight(Slot s) const { return weights_[s & mask_]; }
    Slot mask() const { return mask_; }

    // `slots`: distinct, each below size().
    LinearScore score(std::span<const Slot> slots, double nb_log_odds_calibrated) const;
    // The step one message moves the weights by, toward `spam`, from its score:
    // `feature` added to each of its slots' weights and to the bias, `nb_weight` to u.
    struct Step {
        float feature = 0.0f;
        double nb_weight = 0.0;
    };
    Step step(const LinearScore& s, bool spam) const;
    void apply(std::span<const Slot> slots, const Step& step);
    // score(), step() and apply() at once; returns g = y − σ(z) before the step.
    double learn(std::span<const Slot> slots, double nb_log_odds_calibrated, bool spam);

    // The weights as a store holds them: all of them, and the state beside.
    std::span<const float> weights() const { return weights_; }
    std::span<float> weights() { return weights_; }
    void set_state(double bias, double nb_weight) {
        bias_ = bias;
        nb_weight_ = nb_weight;
    }

private:
    double clip(double nb) const;

    LinearParameters params_;
    Slot mask_ = 0;
    std::vector<float> weights_;
    double bias_ = 0.0;
    double nb_weight_ = 1.0;
};

}  // namespace mailsift::model
