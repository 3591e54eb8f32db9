// The learners the linear scorer can use, by name (learner.hpp).
#include "mailsift/model/learner.hpp"

#include <algorithm>
#include <array>
#include <functional>

namespace mailsift::model {

namespace {

// One line per learner; the first is the default.
const std::array<std::reference_wrapper<const Learner>, 2>& learners() {
    static const std::array<std::reference_wrapper<const Learner>, 2> all{
        std::cref(logistic_regression()),
        std::cref(passive_aggressive()),
    };
    return all;
}

}  // namespace

const Learner* find_learner(std::string_view name) {
    for (const Learner& l : learners()) {
        if (l.name() == name) return &l;
    }
    return nullptr;
}

std::vector<std::string_view> learner_names() {
    std::vector<std::string_view> out;
    for (const Learner& l : learners()) out.push_back(l.name());
    return out;
}

}  // namespace mailsift::model
