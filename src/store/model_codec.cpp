// The coding of what the model store keeps (codec.hpp): a learned message's
// feature list, the linear scorer's pages, slot deltas and how they fold into
// pages, rehearsal samples and the change log's id lists. Shared by every
// backend; the scan's compact form is scan_codec.cpp.
#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <zstd.h>

#include "codec.hpp"
#include "mailsift/store/database.hpp"

namespace mailsift::store {

// ---- varint coding of a message's feature list ----

void put_varint(std::string& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7F) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

bool get_varint(std::string_view in, std::size_t& i, std::uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && i < in.size(); shift += 7) {
        const auto b = static_cast<unsigned char>(in[i++]);
        v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
        if ((b & 0x80) == 0) return true;
    }
    return false;
}

std::string encode_terms(std::vector<std::pair<model::FeatureId, std::uint32_t>> terms) {
    if (!std::is_sorted(terms.begin(), terms.end())) std::sort(terms.begin(), terms.end());  // callers often sort
    std::string out;
    out.reserve(terms.size() * 6);
    model::FeatureId prev = 0;
    for (const auto& [id, n] : terms) {
        put_varint(out, id - prev);
        put_varint(out, n);
        prev = id;
    }
    return out;
}

// ---- pages of linear weights ----

std::string encode_linear_page(const float* weights) {
    std::string out(linear_page_slots * 4, '\0');
    for (std::size_t i = 0; i < linear_page_slots; ++i) {
        const auto bits = std::bit_cast<std::uint32_t>(weights[i]);
        for (int k = 0; k < 4; ++k) out[i * 4 + static_cast<std::size_t>(k)] = static_cast<char>(bits >> (8 * k));
    }
    return out;
}

bool decode_linear_page(std::string_view bytes, std::vector<float>& out) {
    if (bytes.size() != linear_page_slots * 4) return false;
    out.resize(linear_page_slots);
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(out.data(), bytes.data(), bytes.size());  // the stored form is little-endian binary32
        return true;
    }
    for (std::size_t i = 0; i < linear_page_slots; ++i) {
        std::uint32_t bits = 0;
        for (int k = 0; k < 4; ++k) bits |= std::uint32_t{static_cast<unsigned char>(bytes[i * 4 + static_cast<std::size_t>(k)])} << (8 * k);
        out[i] = std::bit_cast<float>(bits);
    }
    return true;
}

// ---- slot deltas ----

std::vector<SlotDelta> sparse_linear_change(const WriteTransaction::LinearChange& change) {
    if (!change.slots.empty()) {
        if (!change.pages.empty()) throw std::logic_error("a linear change both as pages and as slots");
        return change.slots;
    }
    std::vector<SlotDelta> out;
    for (const auto& [number, delta] : change.pages) {
        const auto base = static_cast<std::uint32_t>(std::size_t{number} * linear_page_slots);
        for (std::size_t i = 0; i < linear_page_slots; ++i) {
            if (delta[i] != 0.0f) out.push_back({base + static_cast<std::uint32_t>(i), delta[i]});
        }
    }
    std::sort(out.begin(), out.end(), [](const SlotDelta& a, const SlotDelta& b) { return a.slot < b.slot; });
    return out;
}

std::string encode_slot_deltas(const std::vector<SlotDelta>& deltas) {
    std::string out;
    out.reserve(deltas.size() * 6);
    std::uint32_t next = 0;  // the lowest slot the next one may be
    for (const auto& d : deltas) {
        put_varint(out, d.slot - next);
        next = d.slot + 1;
        const auto bits = std::bit_cast<std::uint32_t>(d.delta);
        for (int k = 0; k < 4; ++k) out.push_back(static_cast<char>(bits >> (8 * k)));
    }
    return out;
}

bool decode_slot_deltas(std::string_view bytes, std::size_t slots, std::vector<SlotDelta>& out) {
    std::size_t i = 0;
    std::uint64_t next = 0;
    while (i < bytes.size()) {
        std::uint64_t gap = 0;
        if (!get_varint(bytes, i, gap) || bytes.size() - i < 4) return false;
        const std::uint64_t slot = next + gap;
        if (slot >= slots) return false;
        std::uint32_t bits = 0;
        for (int k = 0; k < 4; ++k) bits |= std::uint32_t{static_cast<unsigned char>(bytes[i + static_cast<std::size_t>(k)])} << (8 * k);
        i += 4;
        out.push_back({static_cast<std::uint32_t>(slot), std::bit_cast<float>(bits)});
        next = slot + 1;
    }
    return true;
}

PageFold::PageFold(const std::vector<SlotDelta>& deltas) {
    for (const auto& d : deltas) {
        sparse_[static_cast<std::uint32_t>(d.slot / linear_page_slots)].emplace_back(
            static_cast<std::uint32_t>(d.slot % linear_page_slots), d.delta);
    }
}

void PageFold::add(const WriteTransaction::LinearChange& change) {
    for (const auto& [number, delta] : change.pages) dense_[number] = delta;
    // After the held deltas of their pages, as a dense page is added after them.
    for (const auto& d : change.slots) {
        sparse_[static_cast<std::uint32_t>(d.slot / linear_page_slots)].emplace_back(
            static_cast<std::uint32_t>(d.slot % linear_page_slots), d.delta);
    }
}

std::vector<std::uint32_t> PageFold::pages() const {
    std::vector<std::uint32_t> out;
    for (const auto& [number, _] : sparse_) out.push_back(number);
    for (const auto& [number, _] : dense_) {
        if (!sparse_.contains(number)) out.push_back(number);
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::optional<std::string> PageFold::apply(std::uint32_t page, std::string_view stored) const {
    std::vector<float> weights(linear_page_slots, 0.0f);
    if (!stored.empty() && !decode_linear_page(stored, weights)) return std::nullopt;
    if (const auto s = sparse_.find(page); s != sparse_.end()) {
        for (const auto& [offset, delta] : s->second) weights[offset] += delta;
    }
    if (const auto d = dense_.find(page); d != dense_.end()) {
        for (std::size_t i = 0; i < linear_page_slots; ++i) weights[i] += d->second[i];
    }
    return encode_linear_page(weights.data());
}

void LinearPageMerge::emit_fold_before(std::uint64_t page) {
    for (; next_ < only_.size() && only_[next_] < page; ++next_) emit_(only_[next_], *fold_.apply(only_[next_], {}));
}

bool LinearPageMerge::stored(std::uint32_t page, std::string_view bytes) {
    emit_fold_before(page);
    if (next_ < only_.size() && only_[next_] == page) ++next_;
    if (!fold_.touches(page)) {
        if (bytes.size() != linear_page_slots * 4) return false;
        emit_(page, bytes);
        return true;
    }
    const auto sum = fold_.apply(page, bytes);
    if (!sum) return false;
    emit_(page, *sum);
    return true;
}

void LinearPageMerge::finish() { emit_fold_before(std::uint64_t{1} << 32); }

// ---- rehearsal samples ----

// One compression and one decompression context per thread, made once: a
// context allocated per call (ZSTD_compress) costs more than the compression.
std::string encode_linear_sample(std::string_view prefix) {
    struct Context {
        ZSTD_CCtx* c = ZSTD_createCCtx();
        ~Context() { ZSTD_freeCCtx(c); }
    };
    thread_local Context context;
    if (context.c == nullptr) throw std::runtime_error("cannot compress a rehearsal sample: out of memory");
    std::string out(ZSTD_compressBound(prefix.size()), '\0');
    const std::size_t n = ZSTD_compressCCtx(context.c, out.data(), out.size(), prefix.data(), prefix.size(), 3);
    if (ZSTD_isError(n)) throw std::runtime_error("cannot compress a rehearsal sample");
    out.resize(n);
    return out;
}

std::optional<std::string> decode_linear_sample(std::string_view blob) {
    struct Context {
        ZSTD_DCtx* d = ZSTD_createDCtx();
        ~Context() { ZSTD_freeDCtx(d); }
    };
    thread_local Context context;
    if (context.d == nullptr) return std::nullopt;
    const unsigned long long size = ZSTD_getFrameContentSize(blob.data(), blob.size());
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > (1u << 20)) return std::nullopt;
    std::string out(static_cast<std::size_t>(size), '\0');
    const std::size_t n = ZSTD_decompressDCtx(context.d, out.data(), out.size(), blob.data(), blob.size());
    if (ZSTD_isError(n) || n != out.size()) return std::nullopt;
    return out;
}

std::optional<std::vector<std::pair<model::FeatureId, std::uint32_t>>> decode_terms(std::string_view blob) {
    std::vector<std::pair<model::FeatureId, std::uint32_t>> out;
    std::size_t i = 0;
    model::FeatureId id = 0;
    while (i < blob.size()) {
        std::uint64_t delta = 0, n = 0;
        if (!get_varint(blob, i, delta) || !get_varint(blob, i, n)) return std::nullopt;
        id += delta;
        out.emplace_back(id, static_cast<std::uint32_t>(n));
    }
    return out;
}

// ---- the change log ----

std::string encode_feature_ids(const std::vector<model::FeatureId>& ids) {
    std::string blob;
    blob.reserve(ids.size() * 5);
    model::FeatureId prev = 0;
    for (const model::FeatureId id : ids) {
        put_varint(blob, id - prev);
        prev = id;
    }
    return blob;
}

void ChangeList::add(std::uint64_t seq, std::optional<std::string_view> features) {
    if (!listed_) return;
    if (seq != next_++ || !features) {
        listed_ = false;  // a gap is a trimmed part of the log; NULL, a change too large to list
        return;
    }
    std::size_t i = 0;
    model::FeatureId id = 0;
    std::uint64_t delta = 0;
    while (i < features->size()) {
        if (!get_varint(*features, i, delta)) {
            listed_ = false;  // damaged: the full reload is always right
            return;
        }
        id += delta;
        ids_.push_back(id);
    }
    if (ids_.size() > max_ * 2) listed_ = false;
}

std::optional<std::vector<model::FeatureId>> ChangeList::ids(std::uint64_t newest) {
    if (!listed_ || next_ - 1 != newest) return std::nullopt;  // or the database went back
    std::sort(ids_.begin(), ids_.end());
    ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
    if (ids_.size() > max_) return std::nullopt;
    return std::move(ids_);
}

}  // namespace mailsift::store
