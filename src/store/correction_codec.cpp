// The stored form of what undoing a correction takes (CorrectionUndo): a
// version byte, the class the message was learned as before (0 none, 1 ham,
// 2 spam), the linear step (hash_bits; the feature step as binary32 and the
// naive-Bayes weight's as binary64, little-endian), the contact added
// (varint length, bytes), and the slots ascending as varint gaps (0 for a
// slot listed again). Format 2 adds the replays the correction took (a varint
// count, then each replay's feature step, naive-Bayes weight step and slots, as
// above); format 1 records none. A correction's step touches a few thousand
// slots: a few kilobytes, and corrections are few.
#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "codec.hpp"

namespace mailsift::store {

namespace {

// 4: and a byte saying its site part was cancelled (issue 58); 3: and the step
// in a user's layer (issue 44); 2: with the replays; 1: without.
constexpr unsigned char undo_format = 4, undo_format_without_cancel = 3, undo_format_without_layer = 2,
                        undo_format_without_replays = 1;

template <class T>
void put_le(std::string& out, T v) {
    unsigned char b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    if constexpr (std::endian::native == std::endian::big) std::reverse(std::begin(b), std::end(b));
    out.append(reinterpret_cast<const char*>(b), sizeof v);
}

void put_slots(std::string& out, std::vector<std::uint32_t> slots) {
    std::sort(slots.begin(), slots.end());
    put_varint(out, slots.size());
    std::uint32_t last = 0;
    for (const std::uint32_t s : slots) {
        put_varint(out, s - last);
        last = s;
    }
}

template <class T>
bool get_le(std::string_view in, std::size_t& i, T& v) {
    if (in.size() - i < sizeof v) return false;
    unsigned char b[sizeof v];
    std::memcpy(b, in.data() + i, sizeof v);
    if constexpr (std::endian::native == std::endian::big) std::reverse(std::begin(b), std::end(b));
    std::memcpy(&v, b, sizeof v);
    i += sizeof v;
    return true;
}

bool get_slots(std::string_view blob, std::size_t& i, std::vector<std::uint32_t>& slots) {
    std::uint64_t n = 0;
    if (!get_varint(blob, i, n) || n > blob.size() - i) return false;  // each slot takes a byte at least
    slots.reserve(n);
    std::uint64_t slot = 0;
    for (std::uint64_t k = 0; k < n; ++k) {
        std::uint64_t gap = 0;
        if (!get_varint(blob, i, gap)) return false;
        slot += gap;
        if (slot > UINT32_MAX) return false;
        slots.push_back(static_cast<std::uint32_t>(slot));
    }
    return true;
}

}  // namespace

void leave_out_layers(const std::vector<CorrectionRecord>& corrections, unsigned hash_bits,
                      std::vector<LinearWeights::SlotDelta>& deltas, ModelSummary& sum) {
    std::set<std::string_view> users;
    for (const auto& c : corrections) {
        if (c.undone_at != 0 || !c.undo || c.undo->layer.slots.empty()) continue;
        const auto& layer = c.undo->layer;
        if (c.undo->hash_bits != 0 && c.undo->hash_bits != hash_bits) continue;  // of a table since replaced
        for (const std::uint32_t slot : layer.slots) {
            if (hash_bits < 32 && slot >= (std::uint32_t{1} << hash_bits)) continue;
            deltas.push_back({slot, -layer.feature});
        }
        users.insert(layer.user);
        ++sum.layer_corrections_left_out;
    }
    sum.layer_users_left_out = users.size();
}

std::string encode_correction_undo(const CorrectionUndo& undo) {
    std::string out;
    out.reserve(32 + undo.contact.size() + undo.slots.size() * 2);
    out.push_back(static_cast<char>(undo_format));
    out.push_back(static_cast<char>(!undo.was ? 0 : *undo.was == Class::ham ? 1 : 2));
    out.push_back(static_cast<char>(undo.hash_bits));
    put_le(out, undo.feature);
    put_le(out, undo.nb_weight);
    put_varint(out, undo.contact.size());
    out += undo.contact;
    put_slots(out, undo.slots);
    put_varint(out, undo.replays.size());
    for (const auto& r : undo.replays) {
        put_le(out, r.feature);
        put_le(out, r.nb_weight);
        put_slots(out, r.slots);
    }
    put_le(out, undo.layer.feature);
    put_slots(out, undo.layer.slots);
    for (const std::string* text : {&undo.layer.user, &undo.layer.sender}) {
        put_varint(out, text->size());
        out += *text;
    }
    out.push_back(static_cast<char>(undo.site_cancelled ? 1 : 0));
    return out;
}

std::optional<CorrectionUndo> decode_correction_undo(std::string_view blob) {
    if (blob.size() < 3) return std::nullopt;
    const auto format = static_cast<unsigned char>(blob[0]);
    if (format != undo_format && format != undo_format_without_cancel && format != undo_format_without_layer &&
        format != undo_format_without_replays) {
        return std::nullopt;
    }
    CorrectionUndo u;
    switch (static_cast<unsigned char>(blob[1])) {
        case 0: break;
        case 1: u.was = Class::ham; break;
        case 2: u.was = Class::spam; break;
        default: return std::nullopt;
    }
    u.hash_bits = static_cast<unsigned char>(blob[2]);
    if (u.hash_bits > 32) return std::nullopt;
    std::size_t i = 3;
    std::uint64_t n = 0;
    if (!get_le(blob, i, u.feature) || !get_le(blob, i, u.nb_weight) || !get_varint(blob, i, n)) return std::nullopt;
    if (n > blob.size() - i) return std::nullopt;
    u.contact.assign(blob.substr(i, n));
    i += n;
    if (!get_slots(blob, i, u.slots)) return std::nullopt;
    if (format != undo_format_without_replays) {
        if (!get_varint(blob, i, n) || n > blob.size() - i) return std::nullopt;  // a replay takes 13 bytes at least
        u.replays.resize(n);
        for (auto& r : u.replays) {
            if (!get_le(blob, i, r.feature) || !get_le(blob, i, r.nb_weight) || !get_slots(blob, i, r.slots)) {
                return std::nullopt;
            }
        }
    }
    if (format == undo_format || format == undo_format_without_cancel) {
        if (!get_le(blob, i, u.layer.feature) || !get_slots(blob, i, u.layer.slots)) return std::nullopt;
        for (std::string* text : {&u.layer.user, &u.layer.sender}) {
            if (!get_varint(blob, i, n) || n > blob.size() - i) return std::nullopt;
            text->assign(blob.substr(i, n));
            i += n;
        }
    }
    if (format == undo_format) {
        if (i >= blob.size() || static_cast<unsigned char>(blob[i]) > 1) return std::nullopt;
        u.site_cancelled = blob[i++] == 1;
    }
    if (i != blob.size()) return std::nullopt;
    return u;
}

}  // namespace mailsift::store
