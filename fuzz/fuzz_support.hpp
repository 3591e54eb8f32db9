// Shared helpers of the libFuzzer harnesses: invariant checks that abort with a
// readable message, a strict UTF-8 validator, and printable byte strings.
//
// A failed FUZZ_CHECK prints "INVARIANT FAILED [id] file:line" and what was
// seen, then aborts, which libFuzzer reports as a crash and saves the input.
// While a known bug is open, its check can be tolerated so that a campaign goes
// on finding others: MAILSIFT_FUZZ_ALLOW=id1,id2 (ids as printed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace mailsift::fuzz {

inline const std::vector<std::string>& allowed_checks() {
    static const std::vector<std::string> ids = [] {
        std::vector<std::string> out;
        const char* env = std::getenv("MAILSIFT_FUZZ_ALLOW");
        std::string_view list = env != nullptr ? env : "";
        while (!list.empty()) {
            const std::size_t comma = list.find(',');
            const std::string_view id = list.substr(0, comma);
            if (!id.empty()) out.emplace_back(id);
            list.remove_prefix(comma == std::string_view::npos ? list.size() : comma + 1);
        }
        return out;
    }();
    return ids;
}

inline bool allowed(std::string_view id) {
    for (const auto& a : allowed_checks()) {
        if (a == id) return true;
    }
    return false;
}

[[noreturn]] inline void fail(std::string_view id, const char* file, int line, const std::string& what) {
    std::fprintf(stderr, "\n==== INVARIANT FAILED [%.*s] %s:%d\n%s\n", static_cast<int>(id.size()), id.data(), file, line,
                 what.c_str());
    std::fflush(stderr);
    std::abort();
}

// Bytes as C-like escapes, cut after `max` bytes.
inline std::string printable(std::string_view s, std::size_t max = 200) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out = "\"";
    for (std::size_t i = 0; i < s.size() && i < max; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == '\\' || c == '"') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xf];
        }
    }
    out += '"';
    if (s.size() > max) out += "... (" + std::to_string(s.size()) + " bytes)";
    return out;
}

// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past U+10FFFF.
// Returns the offset of the first bad byte, or npos when `s` is valid.
inline std::size_t invalid_utf8_at(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto b0 = static_cast<unsigned char>(s[i]);
        if (b0 < 0x80) {
            ++i;
            continue;
        }
        std::size_t len = 0;
        unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
        if (b0 >= 0xC2 && b0 <= 0xDF) {
            len = 2;
        } else if (b0 >= 0xE0 && b0 <= 0xEF) {
            len = 3;
            if (b0 == 0xE0) lo = 0xA0;  // overlong
            if (b0 == 0xED) hi = 0x9F;  // surrogates
        } else if (b0 >= 0xF0 && b0 <= 0xF4) {
            len = 4;
            if (b0 == 0xF0) lo = 0x90;  // overlong
            if (b0 == 0xF4) hi = 0x8F;  // past U+10FFFF
        } else {
            return i;
        }
        if (s.size() - i < len) return i;
        const auto b1 = static_cast<unsigned char>(s[i + 1]);
        if (b1 < lo || b1 > hi) return i;
        for (std::size_t k = 2; k < len; ++k) {
            const auto b = static_cast<unsigned char>(s[i + k]);
            if (b < 0x80 || b > 0xBF) return i;
        }
        i += len;
    }
    return std::string_view::npos;
}

inline bool valid_utf8(std::string_view s) { return invalid_utf8_at(s) == std::string_view::npos; }

// FNV-1a, for deriving choices (split points, options) from the input itself.
inline std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 0xcbf29ce484222325ULL) {
    for (const char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ULL;
    }
    return h;
}

// splitmix64: a small deterministic stream of choices.
class Choices {
public:
    explicit Choices(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    // Uniform enough in [0, n); 0 when n is 0.
    std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }

private:
    std::uint64_t state_;
};

}  // namespace mailsift::fuzz

#define FUZZ_CHECK(id, cond, what)                                                         \
    do {                                                                                   \
        if (!(cond) && !::mailsift::fuzz::allowed(id)) {                                   \
            ::mailsift::fuzz::fail(id, __FILE__, __LINE__, std::string("check: " #cond "\n") + (what)); \
        }                                                                                  \
    } while (0)
