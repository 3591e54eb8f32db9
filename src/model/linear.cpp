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
    s.slots = slots.size();
    return s;
}

LinearModel::Step LinearModel::step(const LinearScore& s, bool spam) const {
    const double g = (spam ? 1.0 : 0.0) - probability_from_log_odds(s.z());
    const double eta = params_.step / (static_cast<double>(s.slots) + 1.0);  // the bias is one more input
    return {static_cast<float>(eta * g), params_.nb_rate * g * s.nb_input};
}

void LinearModel::apply(std::span<const Slot> slots, const Step& step) {
    for (Slot j : slots) weights_[j & mask_] += step.feature;
    bias_ += step.feature;
    nb_weight_ += step.nb_weight;
}

double LinearModel::learn(std::span<const Slot> slots, double nb, bool spam) {
    const LinearScore s = score(slots, nb);
    const Step st = step(s, spam);
    apply(slots, st);
    return (spam ? 1.0 : 0.0) - probability_from_log_odds(s.z());
}

}  // namespace mailsift::model
