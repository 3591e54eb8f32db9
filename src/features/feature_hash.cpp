// MurmurHash64A, written for fixed little-endian reads so stored ids are portable.
#include "mailsift/features/feature_hash.hpp"

#include <bit>
#include <cstring>

namespace mailsift::features {

namespace {
std::uint64_t load_le64(const unsigned char* p) {
    std::uint64_t v = 0;
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(&v, p, 8);
    } else {
        for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    }
    return v;
}
}  // namespace

std::uint64_t hash64(std::string_view data, std::uint64_t seed) {
    constexpr std::uint64_t m = 0xc6a4a7935bd1e995ULL;
    constexpr int r = 47;
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    const std::size_t len = data.size();
    std::uint64_t h = seed ^ (static_cast<std::uint64_t>(len) * m);

    const std::size_t blocks = len / 8;
    for (std::size_t b = 0; b < blocks; ++b) {
        std::uint64_t k = load_le64(p + b * 8);
        k *= m;
        k ^= k >> r;
        k *= m;
        h ^= k;
        h *= m;
    }
    const unsigned char* tail = p + blocks * 8;
    const std::size_t rest = len & 7;
    if (rest > 0) {
        for (std::size_t i = rest; i-- > 0;) h ^= static_cast<std::uint64_t>(tail[i]) << (8 * i);
        h *= m;
    }
    h ^= h >> r;
    h *= m;
    h ^= h >> r;
    return h;
}

}  // namespace mailsift::features
