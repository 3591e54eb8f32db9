// Header fields: unfolding, quoting, Content-* parameters (RFC 2045, RFC 2231
// file names) and the top-level fields ParsedMessage keeps.
#include "header.hpp"

#include <algorithm>
#include <cstring>

namespace mailsift::mime::detail {

std::string unfold(std::string_view raw, std::size_t cap, bool& truncated) {
    raw = trim(raw);
    std::string out;
    out.reserve(std::min(raw.size(), cap));
    for (std::size_t i = 0; i < raw.size();) {
        std::size_t stop = i;  // (find_first_of calls memchr once per character)
        while (stop < raw.size() && raw[stop] != '\r' && raw[stop] != '\n') ++stop;
        const std::size_t room = cap - out.size();
        if (stop - i > room) {
            std::size_t cut = i + room;
            for (int back = 0; back < 3 && cut > i && (static_cast<unsigned char>(raw[cut]) & 0xC0) == 0x80; ++back)
                --cut;
            out.append(raw.substr(i, cut - i));
            truncated = true;
            break;
        }
        out.append(raw.substr(i, stop - i));
        i = stop == raw.size() ? stop : stop + 1;
    }
    return out;
}

std::string unquote(std::string_view v) {
    v = trim(v);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    while (!v.empty() && v.front() == '"') v.remove_prefix(1);  // mimetic keeps an unmatched quote
    return std::string(v);
}

std::string hide_quoted_semicolons(std::string_view v) {
    std::string out(v);
    bool quoted = false;
    for (char& c : out) {
        if (c == '"') quoted = !quoted;
        else if (c == ';' && quoted) c = hidden_semicolon;
    }
    return out;
}

const std::string* find_param(const std::vector<Param>& params, std::string_view name) {
    for (const Param& p : params)
        if (p.name == name) return &p.value;
    return nullptr;
}

namespace {

// Appends the bytes of an RFC 2231 percent-encoded value.
void percent_decode(std::string_view v, std::string& bytes) {
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '%' && i + 2 < v.size() && detail::hex_value(v[i + 1]) >= 0 &&
            detail::hex_value(v[i + 2]) >= 0) {
            bytes.push_back(static_cast<char>(detail::hex_value(v[i + 1]) * 16 + detail::hex_value(v[i + 2])));
            i += 2;
        } else {
            bytes.push_back(v[i]);
        }
    }
}

}  // namespace

namespace {

// Splits "charset'language'rest" into the charset and the rest.
std::string_view split_extended(std::string_view v, std::string_view& charset) noexcept {
    const std::size_t q1 = v.find('\'');
    const std::size_t q2 = q1 == npos ? npos : v.find('\'', q1 + 1);
    if (q2 == npos) return v;
    charset = v.substr(0, q1);
    return v.substr(q2 + 1);
}

}  // namespace

std::string file_param(const std::vector<Param>& params, std::string_view base) {
    struct Segment {
        unsigned index;
        bool extended;
        const std::string* value;
    };
    const std::string* plain = nullptr;
    const std::string* star = nullptr;
    std::vector<Segment> segments;
    for (const Param& p : params) {
        std::string_view n = p.name;
        if (!n.starts_with(base)) continue;
        n.remove_prefix(base.size());
        if (n.empty()) {
            if (!plain) plain = &p.value;
        } else if (n == "*") {
            if (!star) star = &p.value;
        } else if (n[0] == '*' && n.size() <= 5) {
            n.remove_prefix(1);
            const bool extended = n.back() == '*';
            if (extended) n.remove_suffix(1);
            unsigned index = 0;
            bool digits = !n.empty();
            for (const char c : n) {
                if (c < '0' || c > '9') digits = false;
                else index = index * 10 + static_cast<unsigned>(c - '0');
            }
            if (digits && index < 64) segments.push_back({index, extended, &p.value});
        }
    }
    if (star) {
        std::string_view charset;
        std::string bytes;
        percent_decode(split_extended(*star, charset), bytes);
        return to_utf8(bytes, charset);
    }
    if (!segments.empty()) {
        // Joined as bytes in index order: a character may span two segments, and
        // only segment 0 names the charset.
        std::stable_sort(segments.begin(), segments.end(),
                         [](const Segment& a, const Segment& b) { return a.index < b.index; });
        std::string bytes;
        std::string_view charset;
        bool any_extended = false;
        unsigned expected = 0;
        for (const Segment& seg : segments) {
            if (seg.index != expected) break;  // duplicates or a gap end the value
            ++expected;
            if (seg.extended) {
                any_extended = true;
                percent_decode(seg.index == 0 ? split_extended(*seg.value, charset) : std::string_view(*seg.value),
                               bytes);
            } else {
                bytes += *seg.value;
            }
        }
        if (!bytes.empty()) return any_extended ? to_utf8(bytes, charset) : decode_header_value(bytes);
    }
    if (plain) return decode_header_value(*plain);
    return {};
}

std::string attachment_type(std::string_view type, std::string_view subtype) {
    const auto printable = [](std::string_view s) {
        return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) {
            const auto u = static_cast<unsigned char>(ch);
            return u > 0x20 && u < 0x7f && !(ch >= 'A' && ch <= 'Z');
        });
    };
    if (!printable(type) || !printable(subtype)) return std::string(invalid_content_type);
    std::string out;
    out.reserve(type.size() + 1 + subtype.size());
    out.append(type).push_back('/');
    out.append(subtype);
    return out;
}

Header top_header(std::string_view name, std::string_view raw, const Limits& limits, bool& truncated) {
    std::string decoded = decode_header_value(unfold(raw, limits.max_header_bytes, truncated));
    const std::string_view kept = trim(decoded);  // encoded words may carry edge blanks
    if (kept.size() != decoded.size()) decoded = std::string(kept);
    return {std::string(name), std::move(decoded)};
}

}  // namespace mailsift::mime::detail
