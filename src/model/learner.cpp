// The learners the linear scorer can use, by name (learner.hpp).
#include "mailsift/model/learner.hpp"

#include <algorithm>
#include <functional>
#include <vector>

namespace mailsift::model {

#define MAILSIFT_LEARNER(name) const Learner& name();
#include "learners/list.hpp"
#undef MAILSIFT_LEARNER

namespace {

const std::vector<std::reference_wrapper<const Learner>>& learners() {
    static const std::vector<std::reference_wrapper<const Learner>> all{
#define MAILSIFT_LEARNER(name) std::cref(name()),
#include "learners/list.hpp"
#undef MAILSIFT_LEARNER
    };
    return all;
}

}  // namespace

const Learner& default_learner() { return learners().front(); }

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
