// What is wrong with the bytes given as a message (message_checks.hpp).
#include "mailsift/engine/message_checks.hpp"

#include <cstring>

namespace mailsift::engine {

const char* describe(MessageProblem p) {
    switch (p) {
        case MessageProblem::none: return "ok";
        case MessageProblem::empty: return "empty input, not a message";
        case MessageProblem::not_a_message: return "not a message: no header field line (Name: value) before the body";
        case MessageProblem::too_large: return "message is larger than limits.max_message_bytes";
        case MessageProblem::truncated_mime: return "truncated MIME message (a multipart boundary never closes)";
    }
    return "unknown problem";
}

std::string_view without_from_line(std::string_view raw) {
    if (!raw.starts_with("From ")) return raw;
    const std::size_t nl = raw.find('\n');
    return nl == std::string_view::npos ? std::string_view() : raw.substr(nl + 1);
}

MessageProblem check_message(std::string_view raw, std::size_t size_bytes, const mime::Limits& limits) {
    if (size_bytes == 0 || raw.empty()) return MessageProblem::empty;
    // The MIME parser's own rule: whatever else the message holds, broken
    // lines, 8-bit bytes or NULs, it copes with, as mailsiftd's does.
    if (!mime::has_header_field(raw)) return MessageProblem::not_a_message;
    if (size_bytes > limits.max_message_bytes) return MessageProblem::too_large;
    return MessageProblem::none;
}

}  // namespace mailsift::engine
