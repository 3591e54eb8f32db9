// Shared by the store's backends, not part of its interface: the coding of a
// learned message's feature list and the compact form of a recorded scan.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mailsift/store/database.hpp"
#include "mailsift/store/write_transaction.hpp"

namespace mailsift::store {

// A digest as a row stores it (a 16-byte blob): its bytes, a shorter blob
// zero-padded, a longer one cut (what an export writes of a damaged row).
inline Digest stored_digest(std::string_view bytes) {
    Digest d{};
    std::copy_n(bytes.begin(), std::min(bytes.size(), d.size()), d.begin());
    return d;
}

// ---- varint coding of a message's feature list: ids ascending, as deltas ----

void put_varint(std::string& out, std::uint64_t v);
bool get_varint(std::string_view in, std::size_t& i, std::uint64_t& v);
std::string encode_terms(std::vector<std::pair<model::FeatureId, std::uint32_t>> terms);

// ---- a page of the linear scorer's weights: linear_page_slots floats, IEEE 754
// binary32, little-endian, whatever the machine ----

std::string encode_linear_page(const float* weights);
// false when `bytes` is not a page.
bool decode_linear_page(std::string_view bytes, std::vector<float>& out);

// ---- slot deltas (linear_deltas rows): a change of few slots, kept as those
// slots until it is folded into the pages ----

using SlotDelta = LinearWeights::SlotDelta;
// The slots of a change whose delta is not zero, ascending: its slot deltas,
// or those of its pages (a change with both is a std::logic_error).
std::vector<SlotDelta> sparse_linear_change(const WriteTransaction::LinearChange& change);
// Slots ascending, each once: varint gaps and binary32 little-endian deltas.
std::string encode_slot_deltas(const std::vector<SlotDelta>& deltas);
// Appends a row's deltas to `out`; false when damaged or a slot is not below `slots`.
bool decode_slot_deltas(std::string_view bytes, std::size_t slots, std::vector<SlotDelta>& out);

// Stored slot deltas (in the order written) and then a change's pages, added
// to whole pages: what a fold writes and an export reads. Each slot gets its
// additions in the order they were written, so a page folded here holds the
// same floats a reader adding the deltas to the stored page computes.
class PageFold {
public:
    explicit PageFold(const std::vector<SlotDelta>& deltas);
    // A change written after the deltas: its pages (kept by pointer) or its slot deltas.
    void add(const WriteTransaction::LinearChange& change);
    // The pages anything is added to, ascending.
    std::vector<std::uint32_t> pages() const;
    bool touches(std::uint32_t page) const { return sparse_.contains(page) || dense_.contains(page); }
    // `stored` (empty: a page never written) with this page's additions,
    // encoded; nullopt when `stored` is not a page.
    std::optional<std::string> apply(std::uint32_t page, std::string_view stored) const;

private:
    std::map<std::uint32_t, std::vector<std::pair<std::uint32_t, float>>> sparse_;  // page: (offset, delta) in order
    std::map<std::uint32_t, const float*> dense_;
};

// The stored pages, read in ascending order, with a fold's additions: each
// page handed to `emit` once, in order, including those only the fold makes.
class LinearPageMerge {
public:
    using Emit = std::function<void(std::uint32_t page, std::string_view bytes)>;
    LinearPageMerge(const PageFold& fold, Emit emit) : fold_(fold), only_(fold.pages()), emit_(std::move(emit)) {}
    // The next stored page; false when its bytes are not a page.
    bool stored(std::uint32_t page, std::string_view bytes);
    // The fold's pages after the last stored one.
    void finish();

private:
    void emit_fold_before(std::uint64_t page);
    const PageFold& fold_;
    std::vector<std::uint32_t> only_;  // the fold's pages, ascending
    std::size_t next_ = 0;
    Emit emit_;
};

// ---- a rehearsal sample's stored form: the message's prefix, zstd-compressed ----

std::string encode_linear_sample(std::string_view prefix);
// nullopt when damaged.
std::optional<std::string> decode_linear_sample(std::string_view blob);
// A learned message's feature list (encode_terms() form) back; nullopt when damaged.
std::optional<std::vector<std::pair<model::FeatureId, std::uint32_t>>> decode_terms(std::string_view blob);

// ---- what undoing a correction takes (corrections.undo, correction_codec.cpp) ----

std::string encode_correction_undo(const CorrectionUndo& undo);
// nullopt when damaged (or written by a later mailsift).
std::optional<CorrectionUndo> decode_correction_undo(std::string_view blob);
// Whose layer the correction stepped (corrections.layer_user); "" for none.
inline std::string_view layer_user_of(const CorrectionUndo& undo) {
    return undo.layer.slots.empty() ? std::string_view("") : std::string_view(undo.layer.user);
}
// An export's weights without the per-user layers: each standing correction's
// layer step (of `corrections`, every user's) taken back as slot deltas added
// to `deltas`, counted in `sum`. The corrections are not part of an export, so
// no step may be in it that no correction accounts for after an import.
void leave_out_layers(const std::vector<CorrectionRecord>& corrections, unsigned hash_bits,
                      std::vector<LinearWeights::SlotDelta>& deltas, ModelSummary& sum);
// For mail from which sender (corrections.layer_sender); "" for none.
inline std::string_view layer_sender_of(const CorrectionUndo& undo) {
    return undo.layer.slots.empty() ? std::string_view("") : std::string_view(undo.layer.sender);
}

// ---- the change log readers refresh by (model_changes) ----

// Changes kept in model_changes: a reader further behind reloads everything.
inline constexpr std::int64_t model_change_seconds = 3600;
// A change's feature ids (ascending) as model_changes.features keeps them: varint deltas.
std::string encode_feature_ids(const std::vector<model::FeatureId>& ids);
// The features changed after a reader's `sequence`, from the log rows that
// follow it, given in seq order: add() each, then ids() with the newest
// sequence the same read saw. nullopt when they cannot be listed: a gap (the
// log was trimmed), a NULL row (a prune or import), a damaged row, more than
// `max_features` distinct ids, or a database that went back.
class ChangeList {
public:
    ChangeList(std::uint64_t sequence, std::size_t max_features) : next_(sequence + 1), max_(max_features) {}
    void add(std::uint64_t seq, std::optional<std::string_view> features);
    std::optional<std::vector<model::FeatureId>> ids(std::uint64_t newest);

private:
    std::uint64_t next_;
    std::size_t max_;
    bool listed_ = true;
    std::vector<model::FeatureId> ids_;
};

// ---- the compact form of a recorded scan (scan_codec.cpp) ----

// A zstd dictionary of this database's scans (table scan_dictionaries), ready to use.
class ScanDictionary {
public:
    ScanDictionary(std::int64_t id, std::string_view bytes);
    std::int64_t id() const { return id_; }
    // Whether `bytes` are this dictionary's: a row of another database (or of
    // this one after it was replaced) may carry the same id.
    bool same_bytes(std::string_view bytes) const;

private:
    friend class ScanEncoder;
    friend class ScanPacker;
    friend std::optional<std::string> decompress_scan(std::string_view, const ScanDictionary*);
    struct Compiled;
    std::int64_t id_;
    std::shared_ptr<Compiled> compiled_;
};

// Fewer scans than this teach a dictionary too little; scans go without one until then.
inline constexpr std::size_t min_dictionary_samples = 200;
// A dictionary is trained on at most this many of the newest scans...
inline constexpr int dictionary_samples = 2000;
// ...and replaced by a new one after this long, as the site's mail changes.
inline constexpr std::int64_t dictionary_seconds = 7 * 86400;

// "feature<TAB>count" lines <-> the grouped text that is compressed.
std::string group_scan_lines(std::string_view lines);
std::string ungroup_scan_lines(std::string_view grouped);
// A dictionary from grouped scans; nullopt when they are too few or too alike to make one.
std::optional<std::string> train_scan_dictionary(const std::vector<std::string>& grouped_samples);
// Compresses scans one after another into their stored form, with one zstd
// context for all of them (a context's tables are costly to set up).
class ScanEncoder {
public:
    explicit ScanEncoder(const ScanDictionary* dictionary);
    ~ScanEncoder();
    ScanEncoder(const ScanEncoder&) = delete;
    ScanEncoder& operator=(const ScanEncoder&) = delete;
    // The lines in, the stored blob out (lines without a tab are dropped).
    std::string encode(std::string_view lines);
    // The same from grouped text (group_scan_lines, decompress_scan).
    std::string encode_grouped(std::string_view grouped);

private:
    struct Context;
    std::unique_ptr<Context> context_;
};

// The grouped text of a stored blob; nullopt when it is not one a ScanEncoder
// wrote with this dictionary.
std::optional<std::string> decompress_scan(std::string_view blob, const ScanDictionary* dictionary);

// A Recording's scans as a backend writes them (signatures rows), the same on
// every backend. New scans are compressed with dictionary_for(r, newest scan);
// packed ones are written as they are when held() says this database holds
// their dictionary (that id, those bytes), else packed again with
// dictionary_for({}, their time). fail() names a damaged packed scan and throws.
struct ScanRow {
    const Digest* id = nullptr;
    std::int64_t scanned_at = 0;
    model::Verdict verdict = model::Verdict::unsure;
    std::int64_t dictionary = 0;  // 0: none (ids start at 1)
    std::string_view blob;
};
struct ScanRows {
    std::vector<ScanRow> rows;
    std::map<std::int64_t, std::int64_t> last_use;  // dictionary id -> newest scan written with it
    std::vector<std::string> owned;                 // the blobs compressed here, which rows point into
};
ScanRows scan_rows(const Recording& r,
                   const std::function<const ScanDictionary*(const Recording&, std::int64_t)>& dictionary_for,
                   const std::function<bool(const ScanDictionary&)>& held,
                   const std::function<void(const std::string&)>& fail);

// A history line's explanation as kept on disk (explanation_codec.cpp): the
// text compressed ("" stays ""), and back; unpack takes the old text form too,
// and reads a damaged one as "".
std::string pack_explanation(std::string_view text);
std::string unpack_explanation(std::string_view stored);

// A LIKE / ILIKE pattern (with ESCAPE '\\') for values that contain `text`.
inline std::string contains_pattern(std::string_view text) {
    std::string p = "%";
    for (char c : text) {
        if (c == '%' || c == '_' || c == '\\') p += '\\';
        p += c;
    }
    return p + "%";
}

}  // namespace mailsift::store
