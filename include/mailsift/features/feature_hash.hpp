// mailsift::features — stable 64-bit hashing of feature texts.
// The value is stored in databases, so it must never change between builds or
// machines: byte order is fixed (little-endian reads), and the seed is constant.
#pragma once

#include <cstdint>
#include <string_view>

namespace mailsift::features {

// MurmurHash64A (Austin Appleby, public domain) over the bytes of `data`.
std::uint64_t hash64(std::string_view data, std::uint64_t seed);

inline std::uint64_t feature_id(std::string_view text) { return hash64(text, 0x6d61696c73696674ULL); }

}  // namespace mailsift::features
