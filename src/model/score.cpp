// What a score is: the verdict's name and the probability of log-odds (score.hpp).
#include "mailsift/model/score.hpp"

#include <cmath>

namespace mailsift::model {

const char* to_string(Verdict v) {
    switch (v) {
        case Verdict::ham: return "ham";
        case Verdict::unsure: return "unsure";
        case Verdict::spam: return "spam";
    }
    return "unsure";
}

double probability_from_log_odds(double log_odds) {
    // Written per sign so that exp never overflows.
    if (log_odds >= 0) return 1.0 / (1.0 + std::exp(-log_odds));
    const double e = std::exp(log_odds);
    return e / (1.0 + e);
}

}  // namespace mailsift::model
