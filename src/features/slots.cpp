// Slots of the linear scorer (slots.hpp).
#include "mailsift/features/slots.hpp"

#include <algorithm>

#include "mailsift/features/feature_hash.hpp"

namespace mailsift::features {

std::uint32_t ngram_slot(std::uint32_t gram, unsigned bits) {
    // Multiply-shift hashing (Dietzfelbinger et al.): the high bits of an odd-constant product.
    return static_cast<std::uint32_t>(((std::uint64_t{gram} + 0x5bd1e995ULL) * 0x9e3779b97f4a7c15ULL) >> (64 - bits));
}

std::uint32_t feature_slot(std::uint64_t id, unsigned bits) {
    // Feature ids are already MurmurHash values; mix once more so that a slot
    // is not shared with the 4-gram whose hash happens to match.
    return static_cast<std::uint32_t>(((id ^ 0xc2b2ae3d27d4eb4fULL) * 0xff51afd7ed558ccdULL) >> (64 - bits));
}

bool milter_only(std::string_view feature) { return feature.starts_with("env:"); }

namespace {

// `for_each_id(f)` calls f with each feature id of the message.
template <class Ids>
void slots_of(std::string_view raw, std::size_t id_count, const Ids& for_each_id, const SlotOptions& options,
              std::vector<std::uint32_t>& out) {
    const std::size_t n = std::min(raw.size(), options.ngram_bytes);
    const std::size_t most = (n > 3 ? n - 3 : 0) + (options.bag ? id_count : 0);
    if (out.size() < most) out.resize(most);
    // Each slot once: a bitmap of 2^bits bits per thread (32 KiB at 18 bits),
    // set as slots are met and cleared again from `out` at the end. Sorting the
    // slots instead cost more than the rest of scoring together. Written without
    // a branch on "new or not": the slot is always stored, the count moves by one
    // only when it was new.
    thread_local std::vector<std::uint64_t> seen;
    const std::size_t words = (std::size_t{1} << options.bits) / 64 + 1;
    if (seen.size() < words) seen.assign(words, 0);
    std::uint32_t* const first = out.data();
    std::size_t kept = 0;
    auto keep = [&](std::uint32_t slot) {
        std::uint64_t& w = seen[slot >> 6];
        const std::uint64_t bit = std::uint64_t{1} << (slot & 63);
        first[kept] = slot;
        kept += (w & bit) == 0 ? 1 : 0;
        w |= bit;
    };
    std::uint32_t window = 0;
    for (std::size_t i = 0; i < n; ++i) {
        window = (window << 8) | static_cast<unsigned char>(raw[i]);
        if (i >= 3) keep(ngram_slot(window, options.bits));
    }
    if (options.bag) for_each_id([&](std::uint64_t id) { keep(feature_slot(id, options.bits)); });
    out.resize(kept);
    for (std::uint32_t slot : out) seen[slot >> 6] = 0;
}

}  // namespace

void message_slots(std::string_view raw, const FeatureBag& bag, const SlotOptions& options, std::vector<std::uint32_t>& out) {
    slots_of(
        raw, bag.size(),
        [&](const auto& f) {
            for (const auto& e : bag.entries()) {
                if (!milter_only(bag.text(e))) f(e.id);
            }
        },
        options, out);
}

void message_slots(std::string_view raw, const std::vector<std::pair<std::uint64_t, std::uint32_t>>& terms,
                   const SlotOptions& options, std::vector<std::uint32_t>& out) {
    slots_of(
        raw, terms.size(),
        [&](const auto& f) {
            for (const auto& t : terms) f(t.first);
        },
        options, out);
}

namespace {

// Appends bytes of the view readably: printable ASCII as itself, any other
// byte (and a quote or backslash) as \xHH.
void append_readable(std::string& out, std::string_view bytes) {
    static constexpr char hex[] = "0123456789abcdef";
    for (const char ch : bytes) {
        const auto c = static_cast<unsigned char>(ch);
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            out.push_back(static_cast<char>(c));
        } else {
            out += "\\x";
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
}

// Bytes of the view shown on each side of a 4-gram in an explanation.
constexpr std::size_t gram_context = 6;

// Calls add(slot, text, gram) for each 4-gram and feature of the message whose
// slot wanted(slot) accepts; a 4-gram's text is the gram quoted, where it starts
// in the view and the bytes around it (see slots.hpp), a feature's is the feature.
template <class Wanted, class Add>
void each_source(std::string_view raw, const FeatureBag& bag, const SlotOptions& options, const Wanted& wanted,
                 const Add& add) {
    const std::size_t n = std::min(raw.size(), options.ngram_bytes);
    std::uint32_t window = 0;
    for (std::size_t i = 0; i < n; ++i) {
        window = (window << 8) | static_cast<unsigned char>(raw[i]);
        if (i < 3) continue;
        const std::uint32_t slot = ngram_slot(window, options.bits);
        if (!wanted(slot)) continue;
        const std::size_t start = i - 3;
        std::string gram = "\"";
        append_readable(gram, raw.substr(start, 4));
        gram += "\" at " + std::to_string(start) + ": ";
        const std::size_t from = start >= gram_context ? start - gram_context : 0;
        append_readable(gram, raw.substr(from, start - from));
        gram.push_back('[');
        append_readable(gram, raw.substr(start, 4));
        gram.push_back(']');
        append_readable(gram, raw.substr(i + 1, std::min(gram_context, n - (i + 1))));
        add(slot, gram, true);
    }
    if (options.bag) {
        for (const auto& e : bag.entries()) {
            if (milter_only(bag.text(e))) continue;
            const std::uint32_t slot = feature_slot(e.id, options.bits);
            if (wanted(slot)) add(slot, std::string(bag.text(e)), false);
        }
    }
}

// Appends `what` to a slot's source text, a 4-gram only at its first place.
void append_source(std::string& s, const std::string& what, bool gram) {
    if (gram && s.find(what.substr(0, what.find("\" at ") + 5)) != std::string::npos) return;
    if (!s.empty()) s += ", ";
    s += what;
}

}  // namespace

std::unordered_map<std::uint32_t, std::string> slot_sources(std::string_view raw, const FeatureBag& bag,
                                                            const SlotOptions& options) {
    std::unordered_map<std::uint32_t, std::string> out;
    each_source(
        raw, bag, options, [](std::uint32_t) { return true; },
        [&](std::uint32_t slot, const std::string& what, bool gram) { append_source(out[slot], what, gram); });
    return out;
}

std::vector<std::string> slot_sources(std::string_view raw, const FeatureBag& bag, const SlotOptions& options,
                                      std::span<const std::uint32_t> wanted) {
    std::vector<std::string> out(wanted.size());
    // A 4096-bit filter rules out nearly every slot before the list is searched.
    std::uint64_t filter[64] = {};
    for (const auto s : wanted) filter[(s >> 6) & 63] |= std::uint64_t{1} << (s & 63);
    auto index = [&](std::uint32_t slot) {
        return static_cast<std::size_t>(std::find(wanted.begin(), wanted.end(), slot) - wanted.begin());
    };
    each_source(
        raw, bag, options,
        [&](std::uint32_t slot) {
            return (filter[(slot >> 6) & 63] >> (slot & 63) & 1) != 0 && index(slot) < wanted.size();
        },
        [&](std::uint32_t slot, const std::string& what, bool gram) { append_source(out[index(slot)], what, gram); });
    return out;
}

std::vector<std::uint32_t> personal_slots(std::string_view user, std::string_view sender, unsigned bits) {
    std::vector<std::uint32_t> out;
    if (user.empty() || sender.empty()) return out;
    const std::uint64_t h = hash64(sender, hash64(user, 0x7573657273656564ULL));
    for (unsigned i = 0; i < personal_slot_count; ++i) out.push_back(static_cast<std::uint32_t>(mix64(h + i * golden_gamma) >> (64 - bits)));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

void insert_slot(std::uint32_t slot, std::vector<std::uint32_t>& slots) {
    const auto at = std::lower_bound(slots.begin(), slots.end(), slot);
    if (at == slots.end() || *at != slot) slots.insert(at, slot);
}

}  // namespace mailsift::features
