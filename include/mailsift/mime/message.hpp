// mailsift::mime — raw RFC 822 / MIME bytes in, a decoded ParsedMessage out.
//
// Owns: header unfolding and RFC 2047 decoding, MIME structure (via mimetic),
// transfer-encoding removal, charset conversion to UTF-8, HTML reduced to
// visible text plus link targets, attachment notes, and hard limits.
// Knows nothing about features, scoring or storage.
//
// Contract: parse() never throws on bad input and never reads past
// Limits::max_message_bytes. Whatever was read before a limit is returned;
// the limits that were hit are listed in ParsedMessage::limits_hit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mailsift::mime {

struct Limits {
    std::size_t max_message_bytes = 4 * 1024 * 1024;  // bytes of the raw message scanned
    std::size_t max_depth = 20;                        // multipart nesting
    std::size_t max_parts = 256;                       // MIME entities in total
    std::size_t max_headers = 1000;                    // header fields per entity
    std::size_t max_header_bytes = 64 * 1024;          // one unfolded header field
};

enum class LimitHit : std::uint8_t { message_bytes, depth, parts, headers, header_bytes };

struct Header {
    std::string name;   // as received, e.g. "Reply-To"
    std::string value;  // unfolded, RFC 2047 words decoded to UTF-8, trimmed
};

enum class TextKind : std::uint8_t { plain, html };

struct TextPart {
    TextKind kind = TextKind::plain;
    std::string text;     // UTF-8; for HTML the visible text only
    std::string charset;  // declared charset, lower-case ("" when none)
};

struct Link {
    std::string target;  // href / src as written (entities decoded)
    std::string text;    // visible text of the anchor, UTF-8 ("" for images)
};

// Attachment::content_type when the declared type or subtype holds anything but
// printable ASCII (blanks, control characters, raw high bytes).
inline constexpr std::string_view invalid_content_type = "invalid";

struct Attachment {
    std::string filename;      // UTF-8, "" when none was given
    // Lower-case "type/subtype" of printable ASCII, or invalid_content_type: never
    // raw bytes from the message.
    std::string content_type;
    std::size_t size_bytes = 0;  // decoded size
};

struct ParsedMessage {
    std::vector<Header> headers;  // top-level headers in order received
    std::vector<TextPart> texts;  // text parts in document order
    std::vector<Link> links;      // from HTML parts (and bare URLs are left to features)
    std::vector<Attachment> attachments;
    std::size_t part_count = 0;   // MIME entities seen, including the top level
    std::vector<LimitHit> limits_hit;
    bool malformed = false;       // structure was broken (e.g. missing boundary, bad base64)
    bool truncated = false;       // input ended inside a multipart: its closing boundary never came

    // First top-level header with this name (case-insensitive), or nullptr.
    const Header* find(std::string_view name) const;
};

// Parses one message. Never throws for bad input; std::bad_alloc may escape.
ParsedMessage parse(std::string_view raw, const Limits& limits = {});

// The top-level header fields of a message as parse() keeps them in
// ParsedMessage::headers, reading the header section only.
std::vector<Header> parse_header(std::string_view raw, const Limits& limits = {});

// Whether parse() would find a header field ("Name: value") before the body:
// the first line that is not a stray continuation must be one. Lines end at
// LF, or at CR in mail without any LF, as in parse(). Reads the header section only.
bool has_header_field(std::string_view raw);

// Decodes RFC 2047 encoded words ("=?charset?B|Q?...?=") in a header value to UTF-8.
std::string decode_header_value(std::string_view value);

// Converts bytes in `charset` to UTF-8. Unknown or invalid charsets fall back to
// windows-1252; invalid sequences become U+FFFD. Valid UTF-8 input with an empty
// charset is passed through.
std::string to_utf8(std::string_view bytes, std::string_view charset);

// Appends code point `cp` to `out` as UTF-8 (surrogates and values past U+10FFFF become U+FFFD).
void append_utf8(std::string& out, char32_t cp);

// Visible text of an HTML document, with its links. Scripts, styles and comments dropped.
struct HtmlText {
    std::string text;
    std::vector<Link> links;
};
HtmlText reduce_html(std::string_view html);

}  // namespace mailsift::mime
