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
    double rate = 0.002;       // η for feature weights and the bias
    double nb_rate = 0.002;    // η_u for the weight of the naive-Bayes input
    double nb_clip = 30.0;     // |nb(x)| is clipped here, so one message cannot swing u
    // Experimental update rules: 0 plain SGD; 1 step divided by the number of
    // slots (each message moves z by about η·g); 2 AdaGrad per slot.
    int update = 0;
    // Rehearsal: a uniform sample of up to this many learned messages per class
    // (0 = off); each learned message replays `replays` of the other class,
    // each only when its margin y·z is below `replay_margin`.
    std::size_t rehearsal = 0;
    std::size_t replays = 2;
    double replay_margin = 3.0;
    std::size_t epochs = 0;  // experiment: passes over the samples after a batch
};

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
    // One SGD step toward `spam`; returns g = y − σ(z) before the step.
    double learn(std::span<const Slot> slots, double nb_log_odds_calibrated, bool spam);

private:
    double clip(double nb) const;

    LinearParameters params_;
    Slot mask_ = 0;
    std::vector<float> weights_;
    std::vector<float> squares_;  // AdaGrad: Σ g² per slot
    double bias_ = 0.0;
    double nb_weight_ = 1.0;
};

}  // namespace mailsift::model
