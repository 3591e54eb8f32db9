// The linear scorer's state and score (linear.hpp); its learners are in learners/.
#include "mailsift/model/linear.hpp"

#include <algorithm>
#include <stdexcept>

namespace mailsift::model {

LinearModel::LinearModel(const LinearParameters& p)
    : params_(p),
      learner_(find_learner(p.learner)),
      mask_(static_cast<Slot>((std::uint64_t{1} << p.hash_bits) - 1)),
      weights_(std::size_t{1} << p.hash_bits, 0.0f) {
    if (learner_ == nullptr) throw std::invalid_argument("no learner named '" + p.learner + "'");
}

LinearModel::LinearModel(const LinearParameters& p, std::vector<Slot> covered)
    : params_(p),
      learner_(find_learner(p.learner)),
      mask_(static_cast<Slot>((std::uint64_t{1} << p.hash_bits) - 1)),
      weights_(covered.size(), 0.0f),
      partial_(true),
      covered_(std::move(covered)) {
    if (learner_ == nullptr) throw std::invalid_argument("no learner named '" + p.learner + "'");
}

double LinearModel::clip(double nb) const { return std::clamp(nb, -params_.nb_clip, params_.nb_clip); }

std::size_t LinearModel::covered_index(Slot s) const {
    s &= mask_;
    const auto it = std::lower_bound(covered_.begin(), covered_.end(), s);
    if (it == covered_.end() || *it != s) throw std::logic_error("linear: a slot outside those this model was read for");
    return static_cast<std::size_t>(it - covered_.begin());
}

LinearScore LinearModel::score(std::span<const Slot> slots, double nb) const {
    LinearScore s;
    s.bias = bias_;
    s.nb_input = clip(nb);
    s.nb_weight = nb_weight_;
    double sum = 0.0;
    if (partial_) {
        for (Slot j : slots) sum += weights_[covered_index(j)];
    } else {
        for (Slot j : slots) sum += weights_[j & mask_];
    }
    s.features = sum;
    s.slots = slots.size();
    return s;
}

void LinearModel::apply(std::span<const Slot> slots, const Step& step) {
    if (partial_) throw std::logic_error("linear: a model read for some messages cannot learn");
    for (Slot j : slots) weights_[j & mask_] += step.feature;
    if (step.moves_bias) bias_ += step.feature;
    nb_weight_ += step.nb_weight;
}

LinearModel::Step LinearModel::learn(std::span<const Slot> slots, double nb, bool spam) {
    const Step st = step(score(slots, nb), spam);
    apply(slots, st);
    return st;
}

}  // namespace mailsift::model
