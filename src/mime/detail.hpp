// Private helpers shared by the mime .cpp files; not part of the module's interface.
#pragma once

#include <string>
#include <string_view>

namespace mailsift::mime::detail {

// Strict UTF-8 check: no overlongs, no surrogates, nothing above U+10FFFF.
bool is_valid_utf8(std::string_view bytes);

// Appends the UTF-8 encoding of `cp`; invalid code points become U+FFFD.

// Lower-cased charset label with quotes, comments and surrounding blanks removed.
std::string canonical_charset(std::string_view label);

// Appends the decoded bytes to `out`. Returns false when the input was not clean
// base64 (foreign characters, misplaced '=', or a missing final quantum); whatever
// could be decoded is still appended.
bool decode_base64(std::string_view in, std::string& out);

// Appends decoded quoted-printable. Bad escapes are kept literally.
void decode_quoted_printable(std::string_view in, std::string& out);

// Appends a code point in [0, 0x10FFFF] for an HTML numeric reference, applying
// the windows-1252 remapping browsers use for 0x80..0x9F.
void append_html_codepoint(std::string& out, unsigned long cp);

constexpr char ascii_lower(char c) noexcept {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    return true;
}

constexpr bool is_blank(char c) noexcept { return c == ' ' || c == '\t'; }

constexpr bool is_space(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

constexpr std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

inline std::string to_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = ascii_lower(c);
    return out;
}

constexpr int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace mailsift::mime::detail
