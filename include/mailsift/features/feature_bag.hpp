// mailsift::features::FeatureBag — the features of one message with their counts.
//
// Keyed by the feature's stable 64-bit id (feature_hash.hpp), hashed once when
// added; the texts live in one arena so adding a feature allocates nothing in
// the common case. Two texts with the same 64-bit id count as one feature,
// exactly as they would in the model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mailsift::features {

struct Feature {
    std::string text;
    std::uint32_t count = 0;
};

class FeatureBag {
public:
    struct Entry {
        std::uint64_t id = 0;
        std::uint32_t count = 0;
        std::uint32_t text_offset = 0;
        std::uint32_t text_bytes = 0;
    };

    void add(std::string_view text, std::uint32_t n = 1);
    // Adds prefix + text without building the string first.
    void add(std::string_view prefix, std::string_view text, std::uint32_t n = 1);

    std::size_t size() const { return entries_.size(); }
    std::uint32_t count(std::string_view text) const;
    // True when features were dropped because the capacity was reached.
    bool full() const { return full_; }
    void set_capacity(std::size_t max) { capacity_ = max; }

    // In the order first added.
    const std::vector<Entry>& entries() const { return entries_; }
    std::string_view text(const Entry& e) const { return std::string_view(arena_).substr(e.text_offset, e.text_bytes); }
    // Sorted by text, for stable output.
    std::vector<Feature> sorted() const;

private:
    void insert(std::uint64_t id, std::string_view text, std::uint32_t n);
    void grow();

    std::vector<Entry> entries_;
    std::vector<std::uint32_t> slots_;  // open addressing: index into entries_ + 1; 0 = empty
    std::string arena_;
    std::string scratch_;
    std::size_t capacity_ = SIZE_MAX;
    bool full_ = false;
};

}  // namespace mailsift::features
