// Online logistic regression with a length-normalised step (the default
// learner; Goodman & Yin 2006, Cormack's TREC 2007 runs, the seeds' logistic
// regression). The gradient of the log loss, g = y − σ(z), moves each of the
// message's slots and the bias by η·g with η = step / (|slots| + 1), so that
// learning a message moves its own score by step·g log-odds however many slots
// it has: one already scored right moves almost nothing, an error at most
// `step` (docs/accuracy.md, issue 32).
#include "mailsift/model/learner.hpp"
#include "mailsift/model/linear.hpp"
#include "mailsift/model/naive_bayes.hpp"

namespace mailsift::model {

namespace {

class LogisticRegression final : public Learner {
public:
    std::string_view name() const override { return "logistic"; }
    LinearStep step(const LinearScore& s, bool spam, const LinearParameters& p) const override {
        const double g = (spam ? 1.0 : 0.0) - probability_from_log_odds(s.z());
        const double eta = p.step / (static_cast<double>(s.slots) + 1.0);  // the bias is one more input
        return {static_cast<float>(eta * g), p.nb_rate * g * s.nb_input};
    }
};

}  // namespace

const Learner& logistic_regression() {
    static const LogisticRegression learner;
    return learner;
}

}  // namespace mailsift::model
