// Passive-aggressive learning (PA-I; Crammer et al. 2006, the seeds' MIRA):
// a message scored on the right side by a margin of at least 1 moves nothing
// (passive); otherwise its score moves just far enough to reach the margin,
// by at most `step` (aggressive, and bounded). With binary slots and the bias,
// ||x||² = |slots| + 1, so each moves by τ·y with
//   τ = min(step, 1 − y·z) / (|slots| + 1),   y = ±1.
// u moves by nb_rate · τ·y · nb(x), as the logistic learner's does.
#include <algorithm>

#include "mailsift/model/learner.hpp"
#include "mailsift/model/linear.hpp"

namespace mailsift::model {

namespace {

class PassiveAggressive final : public Learner {
public:
    std::string_view name() const override { return "passive_aggressive"; }
    LinearStep step(const LinearScore& s, bool spam, const LinearParameters& p) const override {
        const double y = spam ? 1.0 : -1.0;
        const double loss = 1.0 - y * s.z();
        if (loss <= 0.0) return {};
        const double tau = std::min(p.step, loss) / (static_cast<double>(s.slots) + 1.0);
        return {static_cast<float>(tau * y), p.nb_rate * tau * y * s.nb_input};
    }
};

}  // namespace

const Learner& passive_aggressive() {
    static const PassiveAggressive learner;
    return learner;
}

}  // namespace mailsift::model
