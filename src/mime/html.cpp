// HTML to visible text plus links (mime::reduce_html).
//
// Contract: one forward pass, linear in the input whatever its shape; never throws
// except std::bad_alloc. This is not an HTML parser: it only needs what a reader of
// the rendered mail would see. Scripts, styles and comments vanish; block-level tags
// become line breaks (cells a space) while inline tags vanish, so "F<b>RE</b>E" reads
// "FREE"; entities are decoded; whitespace runs collapse. Broken markup is read the
// forgiving way browsers read it: a '<' that cannot start a tag is text, an unmatched
// quote in an attribute ends at the next '>'.
#include "detail.hpp"

#include <mailsift/mime/message.hpp>

#include <algorithm>
#include <array>
#include <cstdint>

namespace mailsift::mime {
namespace {

using detail::is_space;
constexpr std::size_t npos = std::string_view::npos;

constexpr bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
constexpr bool is_alnum(char c) noexcept { return is_alpha(c) || is_digit(c); }

// Next occurrence of one character, remembered between calls. Broken markup makes
// the parser look for the same '>' or quote from many places; without the memory an
// input of unterminated tags would be scanned once per tag (quadratic).
class NextChar {
public:
    NextChar(std::string_view s, char c) noexcept : s_(s), c_(c) {}
    std::size_t find(std::size_t pos) noexcept {
        if (!(from_ <= pos && (found_ == npos || found_ >= pos))) {
            from_ = pos;
            found_ = s_.find(c_, pos);
        }
        return found_;
    }

private:
    std::string_view s_;
    char c_;
    std::size_t from_ = npos;
    std::size_t found_ = npos;
};

struct NamedEntity {
    std::string_view name;
    char32_t cp;  // 0: decodes to nothing (invisible characters used to split words)
};

// Case-sensitive, as in HTML. Entries below U+0100 are also recognised without the
// trailing ';', as browsers do for the legacy Latin-1 set.
constexpr NamedEntity entities[] = {
    {"amp", '&'},       {"lt", '<'},          {"gt", '>'},          {"quot", '"'},
    {"apos", '\''},     {"nbsp", 0xA0},        {"copy", 0xA9},       {"reg", 0xAE},
    {"euro", 0x20AC},   {"pound", 0xA3},      {"yen", 0xA5},        {"cent", 0xA2},
    {"trade", 0x2122},  {"hellip", 0x2026},   {"mdash", 0x2014},    {"ndash", 0x2013},
    {"lsquo", 0x2018},  {"rsquo", 0x2019},    {"ldquo", 0x201C},    {"rdquo", 0x201D},
    {"sbquo", 0x201A},  {"bdquo", 0x201E},    {"laquo", 0xAB},      {"raquo", 0xBB},
    {"bull", 0x2022},   {"middot", 0xB7},     {"deg", 0xB0},        {"plusmn", 0xB1},
    {"times", 0xD7},    {"divide", 0xF7},     {"sect", 0xA7},       {"para", 0xB6},
    {"iexcl", 0xA1},    {"iquest", 0xBF},     {"frac12", 0xBD},     {"frac14", 0xBC},
    {"frac34", 0xBE},   {"sup1", 0xB9},       {"sup2", 0xB2},       {"sup3", 0xB3},
    {"acute", 0xB4},    {"micro", 0xB5},      {"ordf", 0xAA},       {"ordm", 0xBA},
    {"not", 0xAC},      {"macr", 0xAF},       {"cedil", 0xB8},      {"uml", 0xA8},
    {"curren", 0xA4},   {"brvbar", 0xA6},     {"shy", 0},           {"zwnj", 0},
    {"zwj", 0},         {"ensp", 0x2002},     {"emsp", 0x2003},     {"thinsp", 0x2009},
    {"dagger", 0x2020}, {"Dagger", 0x2021},   {"permil", 0x2030},   {"prime", 0x2032},
    {"rarr", 0x2192},   {"larr", 0x2190},     {"hearts", 0x2665},   {"check", 0x2713},
    {"Agrave", 0xC0},   {"Aacute", 0xC1},     {"Acirc", 0xC2},      {"Atilde", 0xC3},
    {"Auml", 0xC4},     {"Aring", 0xC5},      {"AElig", 0xC6},      {"Ccedil", 0xC7},
    {"Egrave", 0xC8},   {"Eacute", 0xC9},     {"Ecirc", 0xCA},      {"Euml", 0xCB},
    {"Igrave", 0xCC},   {"Iacute", 0xCD},     {"Icirc", 0xCE},      {"Iuml", 0xCF},
    {"ETH", 0xD0},      {"Ntilde", 0xD1},     {"Ograve", 0xD2},     {"Oacute", 0xD3},
    {"Ocirc", 0xD4},    {"Otilde", 0xD5},     {"Ouml", 0xD6},       {"Oslash", 0xD8},
    {"Ugrave", 0xD9},   {"Uacute", 0xDA},     {"Ucirc", 0xDB},      {"Uuml", 0xDC},
    {"Yacute", 0xDD},   {"THORN", 0xDE},      {"szlig", 0xDF},      {"agrave", 0xE0},
    {"aacute", 0xE1},   {"acirc", 0xE2},      {"atilde", 0xE3},     {"auml", 0xE4},
    {"aring", 0xE5},    {"aelig", 0xE6},      {"ccedil", 0xE7},     {"egrave", 0xE8},
    {"eacute", 0xE9},   {"ecirc", 0xEA},      {"euml", 0xEB},       {"igrave", 0xEC},
    {"iacute", 0xED},   {"icirc", 0xEE},      {"iuml", 0xEF},       {"eth", 0xF0},
    {"ntilde", 0xF1},   {"ograve", 0xF2},     {"oacute", 0xF3},     {"ocirc", 0xF4},
    {"otilde", 0xF5},   {"ouml", 0xF6},       {"oslash", 0xF8},     {"ugrave", 0xF9},
    {"uacute", 0xFA},   {"ucirc", 0xFB},      {"uuml", 0xFC},       {"yacute", 0xFD},
    {"thorn", 0xFE},    {"yuml", 0xFF},       {"OElig", 0x152},     {"oelig", 0x153},
    {"Scaron", 0x160},  {"scaron", 0x161},    {"Yuml", 0x178},      {"fnof", 0x192},
};

// Decodes the reference starting at s[i] == '&' into `out`; returns the index just
// past it. An unrecognised reference leaves a literal '&'.
std::size_t decode_entity(std::string_view s, std::size_t i, std::string& out) {
    std::size_t j = i + 1;
    if (j < s.size() && s[j] == '#') {
        ++j;
        const bool hex = j < s.size() && (s[j] == 'x' || s[j] == 'X');
        if (hex) ++j;
        unsigned long cp = 0;
        const std::size_t digits_begin = j;
        while (j < s.size() && (hex ? detail::hex_value(s[j]) >= 0 : is_digit(s[j]))) {
            const int d = hex ? detail::hex_value(s[j]) : s[j] - '0';
            if (cp <= 0x10FFFF) cp = cp * (hex ? 16 : 10) + static_cast<unsigned long>(d);
            ++j;
        }
        if (j == digits_begin) {
            out.push_back('&');
            return i + 1;
        }
        if (j < s.size() && s[j] == ';') ++j;
        detail::append_html_codepoint(out, cp);
        return j;
    }
    while (j < s.size() && j - i <= 8 && is_alnum(s[j])) ++j;
    const std::string_view name = s.substr(i + 1, j - i - 1);
    const bool semicolon = j < s.size() && s[j] == ';';
    for (const NamedEntity& e : entities) {
        if (e.name != name) continue;
        // Without ';' only legacy names count, and not inside "a=1&copy=2"-like text.
        if (!semicolon && (e.cp >= 0x100 || e.cp == 0 || (j < s.size() && s[j] == '='))) break;
        if (e.cp != 0) append_utf8(out, e.cp);
        return semicolon ? j + 1 : j;
    }
    out.push_back('&');
    return i + 1;
}

std::string decode_attribute(std::string_view v) {
    v = detail::trim(v);
    std::string out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size();) {
        const std::size_t amp = v.find('&', i);
        if (amp == npos) {
            out.append(v.substr(i));
            break;
        }
        out.append(v.substr(i, amp - i));
        i = decode_entity(v, amp, out);
    }
    return out;
}

enum class TagKind : std::uint8_t { inline_tag, block, cell, raw_text, anchor, image, area, form };

struct TagInfo {
    std::string_view name;
    TagKind kind;
};

constexpr TagInfo known_tags[] = {
    {"a", TagKind::anchor},          {"img", TagKind::image},       {"area", TagKind::area},
    {"form", TagKind::form},         {"script", TagKind::raw_text}, {"style", TagKind::raw_text},
    {"td", TagKind::cell},           {"th", TagKind::cell},         {"br", TagKind::block},
    {"p", TagKind::block},           {"div", TagKind::block},       {"tr", TagKind::block},
    {"li", TagKind::block},          {"ul", TagKind::block},        {"ol", TagKind::block},
    {"dl", TagKind::block},          {"dt", TagKind::block},        {"dd", TagKind::block},
    {"h1", TagKind::block},          {"h2", TagKind::block},        {"h3", TagKind::block},
    {"h4", TagKind::block},          {"h5", TagKind::block},        {"h6", TagKind::block},
    {"table", TagKind::block},       {"thead", TagKind::block},     {"tbody", TagKind::block},
    {"tfoot", TagKind::block},       {"caption", TagKind::block},   {"blockquote", TagKind::block},
    {"pre", TagKind::block},         {"hr", TagKind::block},        {"title", TagKind::block},
    {"center", TagKind::block},      {"section", TagKind::block},   {"article", TagKind::block},
    {"header", TagKind::block},      {"footer", TagKind::block},    {"nav", TagKind::block},
    {"aside", TagKind::block},       {"main", TagKind::block},      {"address", TagKind::block},
    {"fieldset", TagKind::block},    {"legend", TagKind::block},    {"figure", TagKind::block},
    {"figcaption", TagKind::block},  {"option", TagKind::block},    {"select", TagKind::block},
    {"textarea", TagKind::block},    {"html", TagKind::block},      {"head", TagKind::block},
    {"body", TagKind::block},        {"frame", TagKind::block},     {"iframe", TagKind::block},
};

TagKind classify(std::string_view lower_name) noexcept {
    for (const TagInfo& t : known_tags) {
        // Inline comparison: this runs for every tag and the names are tiny.
        if (t.name.size() != lower_name.size() || t.name[0] != lower_name[0]) continue;
        if (std::equal(t.name.begin(), t.name.end(), lower_name.begin())) return t.kind;
    }
    return TagKind::inline_tag;
}

class Reducer {
public:
    explicit Reducer(std::string_view html) noexcept
        : s_(html), next_gt_(html, '>'), next_dquote_(html, '"'), next_squote_(html, '\'') {}

    HtmlText run() {
        result_.text.reserve(s_.size() / 2);
        std::size_t i = 0;
        while (i < s_.size()) {
            const std::size_t lt = s_.find('<', i);
            emit_text(s_.substr(i, lt == npos ? npos : lt - i));
            if (lt == npos) break;
            i = markup(lt);
        }
        close_anchor();
        return std::move(result_);
    }

private:
    // Output with whitespace collapsed: a run becomes one space, or one newline when
    // a block boundary is inside it; nothing leads or trails.
    void put(char c) {
        if (pending_ != Gap::none) {
            if (!result_.text.empty()) result_.text.push_back(pending_ == Gap::newline ? '\n' : ' ');
            pending_ = Gap::none;
        }
        result_.text.push_back(c);
    }
    void put_run(std::string_view run) {
        put(run.front());
        result_.text.append(run.data() + 1, run.size() - 1);
    }
    void gap(bool newline) noexcept {
        if (newline) {
            pending_ = Gap::newline;
        } else if (pending_ == Gap::none) {
            pending_ = Gap::space;
        }
    }

    void emit_text(std::string_view t) {
        std::string decoded;
        for (std::size_t i = 0; i < t.size();) {
            const char c = t[i];
            if (c == '&') {
                decoded.clear();
                i = decode_entity(t, i, decoded);
                // A no-break space, however written, separates words like a space.
                if (decoded == "\xC2\xA0" || decoded == " ") {
                    gap(false);
                    continue;
                }
                for (const char d : decoded) {
                    if (d == ' ') {
                        gap(false);
                    } else {
                        put(d);
                    }
                }
            } else if (is_space(c)) {
                gap(false);
                ++i;
            } else {
                std::size_t j = i + 1;  // append the run of ordinary characters at once
                while (j < t.size() && t[j] != '&' && !is_space(t[j])) ++j;
                put_run(t.substr(i, j - i));
                i = j;
            }
        }
    }

    // Handles markup at s_[lt] == '<'; returns where text resumes.
    std::size_t markup(std::size_t lt) {
        std::size_t p = lt + 1;
        if (p >= s_.size()) return literal_lt(lt);
        if (s_[p] == '!' || s_[p] == '?') {
            if (s_.compare(p, 3, "!--") == 0) {
                const std::size_t end = s_.find("-->", p + 1);  // also ends "<!-->"
                return end == npos ? s_.size() : end + 3;
            }
            const std::size_t gt = next_gt_.find(p);  // doctype, CDATA, processing instruction
            return gt == npos ? s_.size() : gt + 1;
        }
        const bool closing = s_[p] == '/';
        if (closing) ++p;
        if (p >= s_.size() || !is_alpha(s_[p])) {
            if (closing && p < s_.size() && s_[p] == '>') return p + 1;  // "</>"
            return literal_lt(lt);
        }
        const std::size_t name_begin = p;
        while (p < s_.size() && (is_alnum(s_[p]) || s_[p] == '-' || s_[p] == ':' || s_[p] == '_')) ++p;
        // A tag that can never end is text, as in "a <b and c" at the end of a mail.
        if (next_gt_.find(p) == npos) return literal_lt(lt);

        std::array<char, 12> buf{};
        const std::size_t name_len = p - name_begin;
        const TagKind kind = name_len < buf.size() ? classify(lower_into(buf, s_.substr(name_begin, name_len)))
                                                   : TagKind::inline_tag;
        std::string_view wanted;
        if (!closing) {
            switch (kind) {
                case TagKind::anchor: wanted = "href"; break;
                case TagKind::image: wanted = "src"; break;
                case TagKind::area: wanted = "href"; break;
                case TagKind::form: wanted = "action"; break;
                default: break;
            }
        }
        std::string_view value;
        bool found = false;
        const std::size_t end = attributes(p, wanted, value, found);

        switch (kind) {
            case TagKind::raw_text:
                if (closing) return end;
                return skip_raw_text(end, s_.substr(name_begin, name_len));
            case TagKind::block:
                gap(true);
                break;
            case TagKind::cell:
                gap(false);
                break;
            case TagKind::anchor:
                close_anchor();
                if (!closing && found) {
                    result_.links.push_back({decode_attribute(value), {}});
                    anchor_ = result_.links.size() - 1;
                    anchor_start_ = result_.text.size();
                    anchor_open_ = true;
                }
                break;
            case TagKind::image:
            case TagKind::area:
            case TagKind::form:
                if (found) {
                    std::string target = decode_attribute(value);
                    if (!target.empty()) result_.links.push_back({std::move(target), {}});
                }
                if (kind == TagKind::form) gap(true);
                break;
            case TagKind::inline_tag:
                break;
        }
        return end;
    }

    static std::string_view lower_into(std::array<char, 12>& buf, std::string_view name) noexcept {
        for (std::size_t k = 0; k < name.size(); ++k) buf[k] = detail::ascii_lower(name[k]);
        return {buf.data(), name.size()};
    }

    std::size_t literal_lt(std::size_t lt) {
        put('<');
        return lt + 1;
    }

    // Walks the attributes from p to the end of the tag, capturing the value of
    // `wanted` (the first occurrence). Returns the index just past the tag.
    std::size_t attributes(std::size_t p, std::string_view wanted, std::string_view& value, bool& found) {
        const std::size_t n = s_.size();
        for (;;) {
            while (p < n && (is_space(s_[p]) || s_[p] == '/')) ++p;
            if (p >= n) return n;
            if (s_[p] == '>') return p + 1;
            const std::size_t name_begin = p;
            ++p;  // a leading '=' or quote belongs to the name, as in browsers
            while (p < n && !is_space(s_[p]) && s_[p] != '=' && s_[p] != '>' && s_[p] != '/') ++p;
            const std::string_view name = s_.substr(name_begin, p - name_begin);
            while (p < n && is_space(s_[p])) ++p;
            if (p >= n || s_[p] != '=') continue;
            ++p;
            while (p < n && is_space(s_[p])) ++p;
            std::string_view v;
            if (p < n && (s_[p] == '"' || s_[p] == '\'')) {
                NextChar& quote = s_[p] == '"' ? next_dquote_ : next_squote_;
                const std::size_t close = quote.find(p + 1);
                if (close != npos) {
                    v = s_.substr(p + 1, close - p - 1);
                    p = close + 1;
                } else {
                    const std::size_t gt = next_gt_.find(p + 1);
                    const std::size_t stop = gt == npos ? n : gt;
                    v = s_.substr(p + 1, stop - p - 1);
                    p = stop;
                }
            } else {
                const std::size_t vb = p;
                while (p < n && !is_space(s_[p]) && s_[p] != '>') ++p;
                v = s_.substr(vb, p - vb);
            }
            if (!found && !wanted.empty() && detail::iequals(name, wanted)) {
                value = v;
                found = true;
            }
        }
    }

    // After <script> or <style>: everything up to the matching end tag is dropped.
    std::size_t skip_raw_text(std::size_t from, std::string_view name) {
        std::size_t p = from;
        for (;;) {
            const std::size_t q = s_.find("</", p);
            if (q == npos) return s_.size();
            const std::size_t after = q + 2 + name.size();
            if (after <= s_.size() && detail::iequals(s_.substr(q + 2, name.size()), name) &&
                (after == s_.size() || !is_alnum(s_[after]))) {
                const std::size_t gt = next_gt_.find(after);
                return gt == npos ? s_.size() : gt + 1;
            }
            p = q + 2;
        }
    }

    void close_anchor() {
        if (!anchor_open_) return;
        anchor_open_ = false;
        std::string text(detail::trim(std::string_view(result_.text).substr(anchor_start_)));
        for (char& c : text)
            if (c == '\n') c = ' ';
        result_.links[anchor_].text = std::move(text);
    }

    enum class Gap : std::uint8_t { none, space, newline };

    std::string_view s_;
    NextChar next_gt_;
    NextChar next_dquote_;
    NextChar next_squote_;
    HtmlText result_;
    Gap pending_ = Gap::none;
    bool anchor_open_ = false;
    std::size_t anchor_ = 0;
    std::size_t anchor_start_ = 0;
};

}  // namespace

HtmlText reduce_html(std::string_view html) { return Reducer(html).run(); }

}  // namespace mailsift::mime
