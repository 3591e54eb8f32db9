// FeatureBag: a dense entry vector indexed by a linear-probing table of ids.
#include "mailsift/features/feature_bag.hpp"

#include <algorithm>

#include "mailsift/features/feature_hash.hpp"

namespace mailsift::features {

void FeatureBag::add(std::string_view text, std::uint32_t n) { insert(feature_id(text), text, n); }

void FeatureBag::add(std::string_view prefix, std::string_view text, std::uint32_t n) {
    scratch_.assign(prefix);
    scratch_.append(text);
    insert(feature_id(scratch_), scratch_, n);
}

void FeatureBag::grow() {
    const std::size_t size = slots_.empty() ? 256 : slots_.size() * 2;
    slots_.assign(size, 0);
    const std::size_t mask = size - 1;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
        std::size_t s = entries_[i].id & mask;
        while (slots_[s] != 0) s = (s + 1) & mask;
        slots_[s] = static_cast<std::uint32_t>(i + 1);
    }
}

void FeatureBag::insert(std::uint64_t id, std::string_view text, std::uint32_t n) {
    if ((entries_.size() + 1) * 2 > slots_.size()) grow();  // load factor at most 1/2
    const std::size_t mask = slots_.size() - 1;
    std::size_t s = id & mask;
    while (slots_[s] != 0) {
        Entry& e = entries_[slots_[s] - 1];
        if (e.id == id) {
            e.count += n;
            return;
        }
        s = (s + 1) & mask;
    }
    if (entries_.size() >= capacity_) {
        full_ = true;
        return;
    }
    entries_.push_back({id, n, static_cast<std::uint32_t>(arena_.size()), static_cast<std::uint32_t>(text.size())});
    arena_.append(text);
    slots_[s] = static_cast<std::uint32_t>(entries_.size());
}

std::uint32_t FeatureBag::count(std::string_view text) const {
    if (slots_.empty()) return 0;
    const std::uint64_t id = feature_id(text);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t s = id & mask; slots_[s] != 0; s = (s + 1) & mask) {
        const Entry& e = entries_[slots_[s] - 1];
        if (e.id == id) return e.count;
    }
    return 0;
}

std::vector<Feature> FeatureBag::sorted() const {
    std::vector<Feature> out;
    out.reserve(entries_.size());
    for (const Entry& e : entries_) out.push_back({std::string(text(e)), e.count});
    std::sort(out.begin(), out.end(), [](const Feature& a, const Feature& b) { return a.text < b.text; });
    return out;
}

}  // namespace mailsift::features
