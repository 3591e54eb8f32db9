// The compact form of a recorded scan's features. A scan is kept for
// signature_days so that a correction trains exactly what mailsiftd scored;
// most are never read again, so the form is chosen for size on disk.
//
// The lines are first grouped: sorted by feature, each namespace prefix (the
// text up to the first ':', "w:", "hdr:", ...) written once on a line of its
// own, and a count of 1 left out. That keeps every word whole, which is what
// the compressor matches best; cutting shared prefixes (front coding) makes
// the compressed form larger, not smaller.
//
// The grouped text is then compressed with zstd, against a dictionary trained
// on this database's own recent scans when there is one: a scan is a few
// hundred words, too short for a compressor to learn from itself, while the
// words, headers and hosts of a site's mail recur from one message to the next.
//
//   byte 0     format: 1 (zstd frame; the dictionary, if any, is named beside the blob)
//   rest       the zstd frame, its content size included
#include <zdict.h>
#include <zstd.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "codec.hpp"

namespace mailsift::store {

namespace {

constexpr char format_grouped_zstd = 1;
constexpr char group_mark = '\x1d', escape_mark = '\x1e';
// Level 3: scans are packed on the scoring threads (ScanPacker) at the daemon's full rate, so the
// level is chosen for time. On 5,000 scans of the corpora (trec07p, csdmc2010, trec06c, SpamAssassin),
// with their dictionary: level 3 gives 438 B a scan in 6.7 us, 12 gives 388 B in 48 us, 19 376 B in
// 280 us, 1 504 B in 5.6 us; without one, 881 B in 12 us at level 3 and 856 B in 63 us at 12.
constexpr int level_with_dictionary = 3, level_without = 3;
// No scan holds more than this; a larger size means the row is damaged.
constexpr unsigned long long max_grouped_bytes = 64ull << 20;

struct Line {
    std::string_view text;
    std::string_view count;
};

std::vector<Line> split_lines(std::string_view lines) {
    std::vector<Line> out;
    while (!lines.empty()) {
        const std::size_t nl = lines.find('\n');
        const std::string_view line = lines.substr(0, nl);
        lines.remove_prefix(nl == std::string_view::npos ? lines.size() : nl + 1);
        const std::size_t tab = line.rfind('\t');
        if (tab == std::string_view::npos) continue;
        out.push_back({line.substr(0, tab), line.substr(tab + 1)});
    }
    return out;
}

std::string_view prefix_of(std::string_view text) {
    const std::size_t colon = text.find(':');
    return colon == std::string_view::npos ? std::string_view{} : text.substr(0, colon + 1);
}

}  // namespace

std::string group_scan_lines(std::string_view lines) {
    std::vector<Line> sorted = split_lines(lines);
    std::sort(sorted.begin(), sorted.end(), [](const Line& a, const Line& b) { return a.text < b.text; });
    std::string out;
    out.reserve(lines.size());
    std::optional<std::string_view> group;
    for (const auto& [text, count] : sorted) {
        const std::string_view prefix = prefix_of(text);
        if (group != prefix) {
            out.push_back(group_mark);
            out.append(prefix);
            out.push_back('\n');
            group = prefix;
        }
        const std::string_view rest = text.substr(prefix.size());
        if (!rest.empty() && (rest[0] == group_mark || rest[0] == escape_mark)) out.push_back(escape_mark);
        out.append(rest);
        // A tab inside the text would be taken for the count's: then the count is always written.
        if (count != "1" || rest.find('\t') != std::string_view::npos) {
            out.push_back('\t');
            out.append(count);
        }
        out.push_back('\n');
    }
    return out;
}

std::string ungroup_scan_lines(std::string_view grouped) {
    std::string out;
    out.reserve(grouped.size() * 2);
    std::string_view prefix;
    while (!grouped.empty()) {
        const std::size_t nl = grouped.find('\n');
        std::string_view line = grouped.substr(0, nl);
        grouped.remove_prefix(nl == std::string_view::npos ? grouped.size() : nl + 1);
        if (!line.empty() && line[0] == group_mark) {
            prefix = line.substr(1);
            continue;
        }
        if (!line.empty() && line[0] == escape_mark) line.remove_prefix(1);
        std::string_view count = "1";
        if (const std::size_t tab = line.rfind('\t'); tab != std::string_view::npos) {
            count = line.substr(tab + 1);
            line = line.substr(0, tab);
        }
        out.append(prefix);
        out.append(line);
        out.push_back('\t');
        out.append(count);
        out.push_back('\n');
    }
    return out;
}

struct ScanDictionary::Compiled {
    ZSTD_CDict* c = nullptr;
    ZSTD_DDict* d = nullptr;
    std::string bytes;
    ~Compiled() {
        ZSTD_freeCDict(c);
        ZSTD_freeDDict(d);
    }
};

ScanDictionary::ScanDictionary(std::int64_t id, std::string_view bytes) : id_(id), compiled_(std::make_shared<Compiled>()) {
    compiled_->c = ZSTD_createCDict(bytes.data(), bytes.size(), level_with_dictionary);
    compiled_->d = ZSTD_createDDict(bytes.data(), bytes.size());
    if (!compiled_->c || !compiled_->d) throw std::runtime_error("cannot load a scan dictionary");
    compiled_->bytes.assign(bytes);
}

bool ScanDictionary::same_bytes(std::string_view bytes) const { return compiled_->bytes == bytes; }

std::optional<std::string> train_scan_dictionary(const std::vector<std::string>& grouped_samples) {
    std::string samples;
    std::vector<std::size_t> sizes;
    for (const auto& s : grouped_samples) {
        if (s.empty()) continue;
        samples += s;
        sizes.push_back(s.size());
    }
    if (sizes.size() < min_dictionary_samples) return std::nullopt;
    // zstd's default dictionary size; training on a few thousand scans takes well under a second.
    std::string dict(112640, '\0');
    const std::size_t n = ZDICT_trainFromBuffer(dict.data(), dict.size(), samples.data(), sizes.data(),
                                                static_cast<unsigned>(sizes.size()));
    if (ZDICT_isError(n)) return std::nullopt;  // too little material: go on without one
    dict.resize(n);
    return dict;
}

struct ScanEncoder::Context {
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ~Context() { ZSTD_freeCCtx(cctx); }
};

ScanEncoder::ScanEncoder(const ScanDictionary* dictionary) : context_(std::make_unique<Context>()) {
    if (!context_->cctx) throw std::runtime_error("cannot compress scans: out of memory");
    ZSTD_CCtx_setParameter(context_->cctx, ZSTD_c_dictIDFlag, 0);  // the row names its dictionary
    if (dictionary) {
        ZSTD_CCtx_refCDict(context_->cctx, dictionary->compiled_->c);  // stays referenced across frames
    } else {
        ZSTD_CCtx_setParameter(context_->cctx, ZSTD_c_compressionLevel, level_without);
    }
}

ScanEncoder::~ScanEncoder() = default;

namespace {

std::string compress_grouped(ZSTD_CCtx* cctx, std::string_view grouped) {
    std::string out(1 + ZSTD_compressBound(grouped.size()), '\0');
    out[0] = format_grouped_zstd;
    const std::size_t n = ZSTD_compress2(cctx, out.data() + 1, out.size() - 1, grouped.data(), grouped.size());
    if (ZSTD_isError(n)) throw std::runtime_error(std::string("cannot compress a scan: ") + ZSTD_getErrorName(n));
    out.resize(1 + n);
    out.shrink_to_fit();  // it waits in the recorder's queue: no slack
    return out;
}

}  // namespace

std::string ScanEncoder::encode(std::string_view lines) { return encode_grouped(group_scan_lines(lines)); }

std::string ScanEncoder::encode_grouped(std::string_view grouped) { return compress_grouped(context_->cctx, grouped); }

PackedScan ScanPacker::pack(const Digest& id, std::int64_t scanned_at, model::Verdict verdict,
                            std::string_view lines) const {
    // One context per thread, kept: setting one up costs more than a scan.
    struct Context {
        ZSTD_CCtx* cctx = ZSTD_createCCtx();
        ~Context() { ZSTD_freeCCtx(cctx); }
    };
    thread_local Context context;
    if (!context.cctx) throw std::runtime_error("cannot compress scans: out of memory");
    ZSTD_CCtx_reset(context.cctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(context.cctx, ZSTD_c_dictIDFlag, 0);  // the row names its dictionary
    if (dictionary_) {
        ZSTD_CCtx_refCDict(context.cctx, dictionary_->compiled_->c);
    } else {
        ZSTD_CCtx_setParameter(context.cctx, ZSTD_c_compressionLevel, level_without);
    }
    PackedScan out{id, scanned_at, verdict, dictionary_, compress_grouped(context.cctx, group_scan_lines(lines))};
    ZSTD_CCtx_refCDict(context.cctx, nullptr);  // the dictionary may go before the thread does
    return out;
}

std::optional<std::string> decompress_scan(std::string_view blob, const ScanDictionary* dictionary) {
    if (blob.empty() || blob[0] != format_grouped_zstd) return std::nullopt;
    blob.remove_prefix(1);
    const unsigned long long size = ZSTD_getFrameContentSize(blob.data(), blob.size());
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > max_grouped_bytes) {
        return std::nullopt;
    }
    std::string grouped(static_cast<std::size_t>(size), '\0');
    std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!dctx) return std::nullopt;
    const std::size_t n =
        dictionary ? ZSTD_decompress_usingDDict(dctx.get(), grouped.data(), grouped.size(), blob.data(), blob.size(),
                                                dictionary->compiled_->d)
                   : ZSTD_decompressDCtx(dctx.get(), grouped.data(), grouped.size(), blob.data(), blob.size());
    if (ZSTD_isError(n) || n != grouped.size()) return std::nullopt;
    return grouped;
}

ScanRows scan_rows(const Recording& r,
                   const std::function<const ScanDictionary*(const Recording&, std::int64_t)>& dictionary_for,
                   const std::function<bool(const ScanDictionary&)>& held,
                   const std::function<void(const std::string&)>& fail) {
    ScanRows out;
    auto used = [&out](std::int64_t dictionary, std::int64_t at) {
        auto& use = out.last_use[dictionary];
        use = std::max(use, at);
    };
    // Compressed before the write lock is taken: the lock is held only for the writes.
    // The recording's own time (its newest scan) decides when a dictionary is due.
    std::int64_t last_scan = 0;
    for (const auto& scan : r.scans) last_scan = std::max(last_scan, scan.scanned_at);
    // Scans packed without a dictionary (a database's first scans, packed before
    // the recorder's first write could train one: the whole first batch when
    // mail comes fast) are written like unpacked ones: they count towards the
    // first dictionary, are among its samples, and are stored with it, at less
    // than half the bytes (issue 41: 986 B a scan on the SpamAssassin corpus
    // without one). When no dictionary comes of it, their blobs stay as packed.
    Recording with_bare;
    std::vector<std::optional<std::string>> bare(r.packed.size());  // grouped, per packed scan without one
    for (std::size_t j = 0; j < r.packed.size(); ++j) {
        const PackedScan& p = r.packed[j];
        if (p.dictionary) continue;
        if (with_bare.scans.empty()) with_bare.scans = r.scans;
        bare[j] = decompress_scan(p.blob, nullptr);
        if (!bare[j]) fail("cannot record signature: a scan waiting to be written is damaged");
        with_bare.scans.push_back({p.id, p.scanned_at, p.verdict, ungroup_scan_lines(*bare[j])});
        last_scan = std::max(last_scan, p.scanned_at);
    }
    const Recording& asked = with_bare.scans.empty() ? r : with_bare;
    const ScanDictionary* d = asked.scans.empty() ? nullptr : dictionary_for(asked, last_scan);
    // Every blob made here first, then the rows that point into them (no reallocation after).
    out.owned.reserve(r.scans.size() + r.packed.size());
    std::vector<std::int64_t> dictionaries;  // per row
    std::vector<std::ptrdiff_t> owned_at;     // per row: index into owned, or -1 for the packed blob itself
    ScanEncoder encoder(d);
    for (const auto& scan : r.scans) {
        owned_at.push_back(static_cast<std::ptrdiff_t>(out.owned.size()));
        out.owned.push_back(encoder.encode(scan.features));
        dictionaries.push_back(d ? d->id() : 0);
    }
    if (d) used(d->id(), last_scan);
    // Each dictionary the packed scans name is checked once; the scans of one
    // this database does not hold (packed for a database since replaced, or a
    // dictionary pruned meanwhile) are packed again with the newest here.
    std::map<const ScanDictionary*, bool> holds;
    const ScanDictionary* newest = nullptr;
    bool newest_known = false;
    for (std::size_t j = 0; j < r.packed.size(); ++j) {
        const PackedScan& p = r.packed[j];
        const ScanDictionary* pd = p.dictionary.get();
        if (!pd && d) {  // packed without one: stored with this write's
            owned_at.push_back(static_cast<std::ptrdiff_t>(out.owned.size()));
            out.owned.push_back(encoder.encode_grouped(*bare[j]));
            dictionaries.push_back(d->id());
            continue;
        }
        auto [it, first] = pd ? holds.try_emplace(pd, false) : std::pair{holds.end(), false};
        if (first) it->second = held(*pd);
        if (!pd || it->second) {
            owned_at.push_back(-1);
            dictionaries.push_back(pd ? pd->id() : 0);
            if (pd) used(pd->id(), p.scanned_at);
            continue;
        }
        if (!newest_known) {
            newest = dictionary_for(Recording{}, p.scanned_at);
            newest_known = true;
        }
        const auto grouped = decompress_scan(p.blob, pd);
        if (!grouped) fail("cannot record signature: a scan waiting to be written is damaged");
        owned_at.push_back(static_cast<std::ptrdiff_t>(out.owned.size()));
        out.owned.push_back(ScanEncoder(newest).encode_grouped(*grouped));
        dictionaries.push_back(newest ? newest->id() : 0);
        if (newest) used(newest->id(), p.scanned_at);
    }
    out.rows.reserve(owned_at.size());
    for (std::size_t i = 0; i < r.scans.size(); ++i) {
        const Scan& s = r.scans[i];
        out.rows.push_back({&s.id, s.scanned_at, s.verdict, dictionaries[i], out.owned[static_cast<std::size_t>(owned_at[i])]});
    }
    for (std::size_t j = 0; j < r.packed.size(); ++j) {
        const PackedScan& p = r.packed[j];
        const std::size_t i = r.scans.size() + j;
        const std::string_view blob = owned_at[i] < 0 ? std::string_view(p.blob) : out.owned[static_cast<std::size_t>(owned_at[i])];
        out.rows.push_back({&p.id, p.scanned_at, p.verdict, dictionaries[i], blob});
    }
    return out;
}

}  // namespace mailsift::store
