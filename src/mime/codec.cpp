// Transfer-encoding removal (base64, quoted-printable) and RFC 2047 header decoding
// (mime::decode_header_value).
//
// Contract: total on any input, never throws except std::bad_alloc. Base64 goes through
// mimetic's decoder after a cleaning pass that reports whether the input was clean;
// quoted-printable is decoded here (see decode_quoted_printable for why).
#include "detail.hpp"

#include <mailsift/mime/message.hpp>

#include <mimetic/codec/base64.h>
#include <mimetic/codec/code.h>

#include <iterator>

namespace mailsift::mime {
namespace detail {
namespace {

constexpr bool is_base64_char(char c) noexcept {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

}  // namespace

bool decode_base64(std::string_view in, std::string& out) {
    // mimetic's Base64::Decoder indexes its table with every byte up to 124, one past
    // its end ('|'), and turns a '=' early in a quantum into garbage bytes. So only
    // alphabet characters and well-placed padding reach it; everything else is
    // dropped here and reported.
    std::string clean;
    clean.reserve(in.size());
    bool ok = true;
    unsigned quantum = 0;  // alphabet characters kept in the current 4-character group
    for (const char c : in) {
        if (is_base64_char(c)) {
            clean.push_back(c);
            quantum = (quantum + 1) & 3;
        } else if (c == '=') {
            if (quantum >= 2) {
                clean.push_back('=');
                quantum = (quantum + 1) & 3;
            } else if (quantum == 1) {
                ok = false;
            }
            // quantum == 0: surplus padding after a complete group; harmless.
        } else if (!is_space(c)) {
            ok = false;
        }
    }
    if (quantum != 0) ok = false;  // missing padding or a dangling character
    out.reserve(out.size() + clean.size() / 4 * 3 + 3);
    mimetic::Base64::Decoder decoder;
    mimetic::decode(clean.begin(), clean.end(), decoder, std::back_inserter(out));
    return ok;
}

void decode_quoted_printable(std::string_view in, std::string& out) {
    // Done by hand: mimetic's QP::Decoder drops the line break after trailing blanks
    // when lines end in a bare LF (as in most stored mail), gluing the last word of
    // one line to the first of the next.
    out.reserve(out.size() + in.size());
    const std::size_t n = in.size();
    std::size_t i = 0;
    while (i < n) {
        const char c = in[i];
        if (c == '=') {
            if (i + 2 < n && hex_value(in[i + 1]) >= 0 && hex_value(in[i + 2]) >= 0) {
                out.push_back(static_cast<char>(hex_value(in[i + 1]) * 16 + hex_value(in[i + 2])));
                i += 3;
                continue;
            }
            // Soft line break, allowing the blanks some gateways leave after '='.
            std::size_t j = i + 1;
            while (j < n && is_blank(in[j])) ++j;
            if (j == n) {
                i = n;
            } else if (in[j] == '\n') {
                i = j + 1;
            } else if (in[j] == '\r' && j + 1 < n && in[j + 1] == '\n') {
                i = j + 2;
            } else {
                out.push_back('=');  // bad escape: keep it literally
                ++i;
            }
            continue;
        }
        if (is_blank(c)) {
            std::size_t j = i;
            while (j < n && is_blank(in[j])) ++j;
            const bool line_end =
                j == n || in[j] == '\n' || (in[j] == '\r' && j + 1 < n && in[j + 1] == '\n');
            if (!line_end) out.append(in.data() + i, j - i);  // trailing blanks are padding
            i = j;
            continue;
        }
        std::size_t j = i + 1;  // copy the run of ordinary characters at once
        while (j < n && in[j] != '=' && !is_blank(in[j])) ++j;
        out.append(in.data() + i, j - i);
        i = j;
    }
}

}  // namespace detail

namespace {

struct EncodedWord {
    std::string_view charset;
    char encoding = 'b';
    std::string_view text;
    std::size_t end = 0;  // one past "?="
};

// Parses "=?charset[*lang]?B|Q?text?=" at s[pos] (which is "=?").
bool parse_encoded_word(std::string_view s, std::size_t pos, EncodedWord& w) noexcept {
    std::size_t p = pos + 2;
    const std::size_t cs_begin = p;
    while (p < s.size() && s[p] != '?' && !detail::is_space(s[p]) && p - cs_begin < 64) ++p;
    if (p >= s.size() || s[p] != '?' || p == cs_begin) return false;
    std::string_view cs = s.substr(cs_begin, p - cs_begin);
    if (const auto star = cs.find('*'); star != std::string_view::npos) cs = cs.substr(0, star);
    if (p + 2 >= s.size() || s[p + 2] != '?') return false;
    const char enc = detail::ascii_lower(s[p + 1]);
    if (enc != 'b' && enc != 'q') return false;
    p += 3;
    const std::size_t text_begin = p;
    while (p < s.size() && s[p] != '?' && !detail::is_space(s[p])) ++p;
    if (p + 1 >= s.size() || s[p] != '?' || s[p + 1] != '=') return false;
    w.charset = cs;
    w.encoding = enc;
    w.text = s.substr(text_begin, p - text_begin);
    w.end = p + 2;
    return true;
}

void decode_q(std::string_view text, std::string& out) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '_') {
            out.push_back(' ');
        } else if (c == '=' && i + 2 < text.size() && detail::hex_value(text[i + 1]) >= 0 &&
                   detail::hex_value(text[i + 2]) >= 0) {
            out.push_back(static_cast<char>(detail::hex_value(text[i + 1]) * 16 +
                                            detail::hex_value(text[i + 2])));
            i += 2;
        } else {
            out.push_back(c);
        }
    }
}

bool needs_work(std::string_view v) noexcept {
    for (const char c : v)
        if (static_cast<unsigned char>(c) >= 0x80) return true;
    return v.find("=?") != std::string_view::npos;
}

}  // namespace

std::string decode_header_value(std::string_view value) {
    if (!needs_work(value)) return std::string(value);

    std::string out;
    out.reserve(value.size());
    // Adjacent words in one charset are converted together: mailers split multi-byte
    // characters across words even though RFC 2047 forbids it.
    std::string pending_bytes;
    std::string_view pending_charset;
    bool have_pending = false;
    const auto flush = [&] {
        if (!have_pending) return;
        out += to_utf8(pending_bytes, pending_charset);
        pending_bytes.clear();
        have_pending = false;
    };

    std::size_t i = 0;
    bool after_word = false;
    while (i < value.size()) {
        const std::size_t at = value.find("=?", i);
        EncodedWord w;
        std::size_t search = at;
        while (search != std::string_view::npos && !parse_encoded_word(value, search, w))
            search = value.find("=?", search + 2);
        if (search == std::string_view::npos) break;

        const std::string_view gap = value.substr(i, search - i);
        const bool only_space = detail::trim(gap).empty();
        if (!(after_word && only_space)) {
            flush();
            out += to_utf8(gap, {});
        }
        std::string bytes;
        if (w.encoding == 'b') {
            detail::decode_base64(w.text, bytes);
        } else {
            decode_q(w.text, bytes);
        }
        if (have_pending && !detail::iequals(pending_charset, w.charset)) flush();
        pending_charset = w.charset;
        pending_bytes += bytes;
        have_pending = true;
        after_word = true;
        i = w.end;
    }
    flush();
    if (i < value.size()) out += to_utf8(value.substr(i), {});
    return out;
}

}  // namespace mailsift::mime
