// Header sections and Content-* field values, shared by the parser
// (message.cpp) and its helpers (header.cpp); not part of the module's interface.
#pragma once

#include <mailsift/mime/message.hpp>

#include <string.h>  // memmem

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "detail.hpp"

namespace mailsift::mime::detail {

inline constexpr std::size_t npos = std::string_view::npos;

// End of the line starting at pos: the index of its '\n', or s.size().
inline std::size_t line_end(std::string_view s, std::size_t pos) noexcept {
    const void* nl = std::memchr(s.data() + pos, '\n', s.size() - pos);
    return nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - s.data()) : s.size();
}

inline std::size_t next_line(std::string_view s, std::size_t eol) noexcept {
    return eol < s.size() ? eol + 1 : s.size();
}

// `needle` is "\n--boundary": returns the start of the first line after `from`
// that begins with the delimiter, or npos.
inline std::size_t find_line_start(std::string_view s, std::string_view needle, std::size_t from) noexcept {
    if (from >= s.size()) return npos;
    const void* hit = memmem(s.data() + from, s.size() - from, needle.data(), needle.size());
    return hit ? static_cast<std::size_t>(static_cast<const char*>(hit) - s.data()) + 1 : npos;
}

constexpr bool is_field_name_char(char c) noexcept {
    const auto u = static_cast<unsigned char>(c);
    return u > 32 && u < 127 && c != ':';
}

struct HeaderScan {
    std::size_t body = 0;     // offset of the body within the entity
    bool terminated = false;  // an empty line ended the header section
};

// Walks the header section of `entity`, calling on_field(name, raw_value) for each
// field; raw_value still contains its folding line breaks. A line that is neither a
// field nor a continuation starts the body (a missing blank line is common in spam).
template <class OnField>
HeaderScan scan_header(std::string_view entity, bool message_start, OnField&& on_field) {
    HeaderScan scan;
    std::size_t pos = 0;
    if (message_start && entity.starts_with("From ")) pos = next_line(entity, line_end(entity, 0));

    std::string_view name;
    std::size_t value_begin = 0;
    std::size_t value_end = 0;
    bool open = false;
    const auto emit = [&] {
        if (open) on_field(name, entity.substr(value_begin, value_end - value_begin));
        open = false;
    };

    while (pos < entity.size()) {
        const std::size_t eol = line_end(entity, pos);
        std::size_t content_end = eol;
        if (content_end > pos && entity[content_end - 1] == '\r') --content_end;
        if (content_end == pos) {
            emit();
            scan.body = next_line(entity, eol);
            scan.terminated = true;
            return scan;
        }
        if (is_blank(entity[pos])) {
            if (open) value_end = content_end;  // a stray leading continuation is dropped
        } else {
            std::size_t k = pos;
            while (k < content_end && is_field_name_char(entity[k])) ++k;
            const std::size_t name_end = k;
            while (k < content_end && is_blank(entity[k])) ++k;
            if (name_end == pos || k == content_end || entity[k] != ':') {
                emit();
                scan.body = pos;
                return scan;
            }
            emit();
            name = entity.substr(pos, name_end - pos);
            value_begin = k + 1;
            value_end = content_end;
            open = true;
        }
        pos = next_line(entity, eol);
    }
    emit();
    scan.body = entity.size();
    return scan;
}

// Removes the folding line breaks and trims, keeping at most `cap` bytes (cut on a
// UTF-8 boundary). Sets `truncated` when something was cut.
std::string unfold(std::string_view raw, std::size_t cap, bool& truncated);

std::string unquote(std::string_view v);

// mimetic splits parameters at every ';', even inside quotes; hide those first.
constexpr char hidden_semicolon = '\x1f';

std::string hide_quoted_semicolons(std::string_view v);

struct Param {
    std::string name;  // lower-case
    std::string value;
};

template <class MimeticField>
std::vector<Param> params_of(const MimeticField& field) {
    std::vector<Param> out;
    for (const auto& p : field.paramList()) {
        std::string value = unquote(p.value());
        std::replace(value.begin(), value.end(), hidden_semicolon, ';');
        out.push_back({detail::to_lower(trim(p.name())), std::move(value)});
    }
    return out;
}

const std::string* find_param(const std::vector<Param>& params, std::string_view name);

// A filename-like parameter ("filename" or "name") in any of its RFC 2231 forms:
// name*=, name*0= / name*0*= continuations, or the plain name= (which mailers
// commonly fill with RFC 2047 encoded words). One pass over the parameters, since
// a hostile field can carry tens of thousands of them.
std::string file_param(const std::vector<Param>& params, std::string_view base);

// Attachment::content_type: "type/subtype" when both are lower-case printable
// ASCII (no blanks, controls or bytes above 0x7E), else invalid_content_type, so
// that raw bytes of a hostile message never leave the module as a type.
std::string attachment_type(std::string_view type, std::string_view subtype);

// A top-level field as ParsedMessage::headers keeps it: unfolded (cut at
// max_header_bytes, `truncated` then set), encoded words decoded, edges trimmed.
Header top_header(std::string_view name, std::string_view raw, const Limits& limits, bool& truncated);

}  // namespace mailsift::mime::detail
