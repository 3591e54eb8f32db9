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

// The splitmix64 finalizer (Steele, Lea and Flood 2014): a well-mixed 64-bit value
// from any other. The deterministic draws of rehearsal and shuffles are made with it.
inline std::uint64_t mix64(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// splitmix64's increment: successive states z, z + golden_gamma, ... give mix64 a sequence.
inline constexpr std::uint64_t golden_gamma = 0x9e3779b97f4a7c15ULL;

}  // namespace mailsift::features
