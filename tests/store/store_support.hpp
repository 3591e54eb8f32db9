// Shared by the store tests: tiny digests and term lists written inline.
#pragma once

#include <initializer_list>
#include <utility>
#include <vector>

#include "mailsift/store/database.hpp"

namespace mailsift::testing {

// A digest that differs from others only in its first byte.
inline store::Digest digest(std::uint8_t n) {
    store::Digest d{};
    d[0] = n;
    return d;
}

// Terms (id, count), each with the text "f".
inline std::vector<store::TrainTerm> terms(std::initializer_list<std::pair<model::FeatureId, std::uint32_t>> list) {
    std::vector<store::TrainTerm> out;
    for (auto [id, n] : list) out.push_back({id, n, "f"});
    return out;
}

}  // namespace mailsift::testing
