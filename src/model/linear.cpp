// Online logistic regression over hashed binary features (linear.hpp).
#include "mailsift/model/linear.hpp"

#include <algorithm>
#include <cmath>

#include "mailsift/model/naive_bayes.hpp"

namespace mailsift::model {

LinearModel::LinearModel(const LinearParameters& p)
    : params_(p), mask_(static_cast<Slot>((std::uint64_t{1} << p.hash_bits) - 1)), weights_(std::size_t{1} << p.hash_bits, 0.0f) {}

double LinearModel::clip(double nb) const { return std::clamp(nb, -params_.nb_clip, params_.nb_clip); }

LinearScore LinearModel::score(std::span<const Slot> slots, double nb) const {
    LinearScore s;
    s.bias = bias_;
    s.nb_input = clip(nb);
    s.nb_weight = nb_weight_;
    double sum = 0.0;
    for (Slot j : slots) sum += weights_[j & mask_];
    s.features = sum;
    return s;
}

double LinearModel::learn(std::span<const Slot> slots, double nb, bool spam) {
    const LinearScore s = score(slots, nb);
    const double g = (spam ? 1.0 : 0.0) - probability_from_log_odds(s.z());
    const auto step = static_cast<float>(params_.rate * g);
    for (Slot j : slots) weights_[j & mask_] += step;
    bias_ += params_.rate * g;
    nb_weight_ += params_.nb_rate * g * s.nb_input;
    return g;
}

}  // namespace mailsift::model
