// Charset conversion to UTF-8 (mime::to_utf8) and the UTF-8 helpers behind it.
//
// Contract: never throws for bad input (only std::bad_alloc); output is always
// valid UTF-8. Undeclared or ASCII-labelled bytes stay as they are when they are
// valid UTF-8 and are read as windows-1252 otherwise; unknown labels also fall back
// to windows-1252; undecodable sequences become U+FFFD. iconv descriptors are cached
// per thread, so concurrent callers share nothing mutable.
#include "detail.hpp"

#include <mailsift/mime/message.hpp>

#include <iconv.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace mailsift::mime {
namespace detail {
namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is invalid.
// `bad` then receives the length of the maximal invalid subpart, so a truncated
// sequence becomes one U+FFFD as the Unicode standard recommends.
std::size_t utf8_sequence(std::string_view s, std::size_t i, std::size_t& bad) noexcept {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    std::size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;  // no UTF-16 surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
    } else {
        bad = 1;
        return 0;
    }
    std::size_t k = 1;
    for (; k <= need; ++k) {
        if (i + k >= s.size()) break;
        const unsigned char t = b(i + k);
        const unsigned char l = k == 1 ? lo : 0x80;
        const unsigned char h = k == 1 ? hi : 0xBF;
        if (t < l || t > h) break;
    }
    if (k > need) return need + 1;
    bad = k;
    return 0;
}

bool all_ascii_word(const char* p) noexcept {
    std::uint64_t w;
    std::memcpy(&w, p, sizeof w);
    return (w & 0x8080808080808080ULL) == 0;
}

// Copies `s` as UTF-8, replacing each invalid subpart with U+FFFD.
void repair_utf8(std::string_view s, std::string& out) {
    out.reserve(out.size() + s.size());
    std::size_t i = 0;
    while (i < s.size()) {
        std::size_t run = i;
        while (run + 8 <= s.size() && all_ascii_word(s.data() + run)) run += 8;
        while (run < s.size() && static_cast<unsigned char>(s[run]) < 0x80) ++run;
        out.append(s.data() + i, run - i);
        i = run;
        if (i >= s.size()) break;
        std::size_t bad = 0;
        const std::size_t len = utf8_sequence(s, i, bad);
        if (len != 0) {
            out.append(s.data() + i, len);
            i += len;
        } else {
            out.append(replacement);
            i += bad;
        }
    }
}

// windows-1252 0x80..0x9F; the five undefined bytes map to the C1 controls as the
// WHATWG encoding standard does, so the conversion is total.
constexpr std::array<char16_t, 32> cp1252_high = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
    0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
    0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
    0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};

void windows1252_to_utf8(std::string_view s, std::string& out) {
    out.reserve(out.size() + s.size() + s.size() / 2);
    std::size_t i = 0;
    while (i < s.size()) {
        std::size_t run = i;
        while (run < s.size() && static_cast<unsigned char>(s[run]) < 0x80) ++run;
        out.append(s.data() + i, run - i);
        if (run >= s.size()) break;
        const unsigned char c = static_cast<unsigned char>(s[run]);
        append_utf8(out, c < 0xA0 ? cp1252_high[c - 0x80] : c);
        i = run + 1;
    }
}

enum class Route : std::uint8_t { automatic, utf8, windows1252, iconv };

struct Resolved {
    Route route;
    std::string_view iconv_name;  // only for Route::iconv; empty: use the label itself
};

// Labels the mail world uses that glibc's iconv does not know, or knows under a
// narrower charset than mailers actually send (WHATWG's mapping choices).
Resolved resolve(std::string_view cs) noexcept {
    struct Alias {
        std::string_view label;
        Route route;
        std::string_view iconv_name;
    };
    static constexpr Alias aliases[] = {
        // Mislabelled 8-bit mail is the norm for these, so treat them as undeclared.
        {"", Route::automatic, {}},
        {"us-ascii", Route::automatic, {}},
        {"ascii", Route::automatic, {}},
        {"ansi_x3.4-1968", Route::automatic, {}},
        {"iso646-us", Route::automatic, {}},
        {"us", Route::automatic, {}},
        {"unknown", Route::automatic, {}},
        {"unknown-8bit", Route::automatic, {}},
        {"x-unknown", Route::automatic, {}},
        {"default", Route::automatic, {}},
        {"utf-8", Route::utf8, {}},
        {"utf8", Route::utf8, {}},
        {"x-utf-8", Route::utf8, {}},
        // Browsers decode Latin-1 labels as windows-1252; so do we.
        {"windows-1252", Route::windows1252, {}},
        {"cp1252", Route::windows1252, {}},
        {"x-cp1252", Route::windows1252, {}},
        {"iso-8859-1", Route::windows1252, {}},
        {"iso8859-1", Route::windows1252, {}},
        {"iso_8859-1", Route::windows1252, {}},
        {"iso-8859-1:1987", Route::windows1252, {}},
        {"latin1", Route::windows1252, {}},
        {"latin-1", Route::windows1252, {}},
        {"l1", Route::windows1252, {}},
        {"cp819", Route::windows1252, {}},
        {"ks_c_5601-1987", Route::iconv, "CP949"},
        {"ks_c_5601", Route::iconv, "CP949"},
        {"euc-kr", Route::iconv, "CP949"},
        {"gb2312", Route::iconv, "GB18030"},
        {"gbk", Route::iconv, "GB18030"},
        {"x-gbk", Route::iconv, "GB18030"},
        {"gb_2312-80", Route::iconv, "GB18030"},
        {"iso-8859-8-i", Route::iconv, "ISO-8859-8"},
        {"x-sjis", Route::iconv, "SHIFT_JIS"},
        {"shift-jis", Route::iconv, "SHIFT_JIS"},
        {"x-euc-jp", Route::iconv, "EUC-JP"},
        {"unicode-1-1-utf-7", Route::iconv, "UTF-7"},
        {"x-mac-roman", Route::iconv, "MACINTOSH"},
        {"windows-874", Route::iconv, "CP874"},
        {"x-user-defined", Route::windows1252, {}},
    };
    for (const Alias& a : aliases)
        if (a.label == cs) return {a.route, a.iconv_name};
    return {Route::iconv, {}};
}

// glibc loads gconv modules by charset name; only plain names reach it, so a
// hostile label cannot name a path or a transliteration suffix.
bool safe_iconv_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > 40) return false;
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == ':';
        if (!ok) return false;
    }
    return true;
}

const iconv_t no_iconv = reinterpret_cast<iconv_t>(-1);

// Per-thread cache of open descriptors, failures included so an unknown label costs
// one iconv_open per thread. Bounded because every message can invent labels.
class IconvCache {
public:
    IconvCache() = default;
    IconvCache(const IconvCache&) = delete;
    IconvCache& operator=(const IconvCache&) = delete;
    ~IconvCache() {
        for (auto& e : entries_)
            if (e.second != no_iconv) iconv_close(e.second);
    }

    iconv_t get(std::string_view name) {
        for (auto& e : entries_)
            if (e.first == name) return e.second;
        iconv_t cd = no_iconv;
        if (safe_iconv_name(name)) {
            const std::string z(name);
            cd = iconv_open("UTF-8", z.c_str());
        }
        if (entries_.size() >= max_entries) {
            if (entries_.front().second != no_iconv) iconv_close(entries_.front().second);
            entries_.erase(entries_.begin());
        }
        entries_.emplace_back(std::string(name), cd);
        return cd;
    }

private:
    static constexpr std::size_t max_entries = 32;
    std::vector<std::pair<std::string, iconv_t>> entries_;
};

void iconv_to_utf8(iconv_t cd, std::string_view s, std::string& out) {
    iconv(cd, nullptr, nullptr, nullptr, nullptr);  // the cached descriptor may hold shift state
    const std::size_t start = out.size();
    std::size_t used = start;
    out.resize(start + s.size() * 2 + 16);
    char* in = const_cast<char*>(s.data());  // iconv's signature is not const-correct
    std::size_t in_left = s.size();
    bool flushing = false;
    for (;;) {
        char* dst = out.data() + used;
        std::size_t out_left = out.size() - used;
        const std::size_t rc = flushing ? iconv(cd, nullptr, nullptr, &dst, &out_left)
                                        : iconv(cd, &in, &in_left, &dst, &out_left);
        used = out.size() - out_left;
        if (rc != static_cast<std::size_t>(-1)) {
            if (flushing) break;
            flushing = true;  // emit any pending shift sequence
            continue;
        }
        if (errno == E2BIG) {
            out.resize(out.size() * 2 + 16);
            continue;
        }
        if (flushing) break;
        // EILSEQ: skip one byte; EINVAL: truncated sequence at the end.
        if (out.size() - used < replacement.size()) out.resize(out.size() + 16);
        std::memcpy(out.data() + used, replacement.data(), replacement.size());
        used += replacement.size();
        if (errno == EINVAL || in_left == 0) {
            in_left = 0;
            flushing = true;
            continue;
        }
        ++in;
        --in_left;
        iconv(cd, nullptr, nullptr, nullptr, nullptr);
    }
    out.resize(used);
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        while (i + 8 <= s.size() && all_ascii_word(s.data() + i)) i += 8;
        if (i >= s.size()) break;
        if (static_cast<unsigned char>(s[i]) < 0x80) {
            ++i;
            continue;
        }
        std::size_t bad = 0;
        const std::size_t len = utf8_sequence(s, i, bad);
        if (len == 0) return false;
        i += len;
    }
    return true;
}


void append_html_codepoint(std::string& out, unsigned long cp) {
    if (cp >= 0x80 && cp <= 0x9F) {
        append_utf8(out, cp1252_high[cp - 0x80]);
    } else if (cp == 0 || cp > 0x10FFFF) {
        append_utf8(out, 0xFFFD);
    } else {
        append_utf8(out, static_cast<char32_t>(cp));
    }
}

std::string canonical_charset(std::string_view label) {
    label = trim(label);
    // mimetic leaves comments and stray quotes in parameter values.
    if (const auto cut = label.find_first_of(" \t(;"); cut != std::string_view::npos)
        label = label.substr(0, cut);
    while (!label.empty() && (label.front() == '"' || label.front() == '\'')) label.remove_prefix(1);
    while (!label.empty() && (label.back() == '"' || label.back() == '\'')) label.remove_suffix(1);
    return to_lower(label);
}

}  // namespace detail

void append_utf8(std::string& out, char32_t cp) {
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

std::string to_utf8(std::string_view bytes, std::string_view charset) {
    using namespace detail;
    std::string out;
    const std::string cs = canonical_charset(charset);
    Resolved r = resolve(cs);
    if (r.route == Route::iconv) {
        thread_local IconvCache cache;
        const iconv_t cd = cache.get(r.iconv_name.empty() ? std::string_view(cs) : r.iconv_name);
        if (cd != no_iconv) {
            iconv_to_utf8(cd, bytes, out);
            return out;
        }
        r.route = Route::windows1252;
    }
    switch (r.route) {
        case Route::automatic:
            if (is_valid_utf8(bytes)) {
                out.assign(bytes);
            } else {
                windows1252_to_utf8(bytes, out);
            }
            break;
        case Route::utf8:
            repair_utf8(bytes, out);
            break;
        case Route::windows1252:
        case Route::iconv:
            windows1252_to_utf8(bytes, out);
            break;
    }
    return out;
}

}  // namespace mailsift::mime
