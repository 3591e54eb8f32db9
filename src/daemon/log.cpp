// The log writer (log.hpp): every line escaped in one place, written with one
// write() so that concurrent lines never interleave. Log lines carry a syslog
// priority prefix ("<3>") that journald understands.
#include "log.hpp"

#include <unistd.h>

#include <cstdint>
#include <mutex>

namespace mailsift::daemon {

namespace {

constexpr char hex_digits[] = "0123456789abcdef";

void append_byte_escape(std::string& out, unsigned char c) {
    out += "\\x";
    out.push_back(hex_digits[c >> 4]);
    out.push_back(hex_digits[c & 0xf]);
}

// The length of the valid UTF-8 sequence at the start of `s` and its code
// point, or 0 when it is not one (overlong forms, surrogates and code points
// past U+10FFFF are not).
std::size_t utf8_sequence(std::string_view s, char32_t& cp) {
    const auto b0 = static_cast<unsigned char>(s[0]);
    std::size_t n = 0;
    char32_t min = 0;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
        n = 2, cp = b0 & 0x1f, min = 0x80;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
        n = 3, cp = b0 & 0x0f, min = 0x800;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
        n = 4, cp = b0 & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (s.size() < n) return 0;
    for (std::size_t i = 1; i < n; ++i) {
        const auto b = static_cast<unsigned char>(s[i]);
        if ((b & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (b & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

// Characters that are valid but end a line or hide text on a terminal.
bool unsafe_code_point(char32_t cp) {
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 || cp == 0x200e || cp == 0x200f ||
           (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

void append_escaped(std::string& out, std::string_view message, std::size_t budget) {
    const std::size_t limit = out.size() + budget;
    std::size_t i = 0;
    while (i < message.size()) {
        const std::size_t before = out.size();
        const auto c = static_cast<unsigned char>(message[i]);
        std::size_t used = 1;
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            append_byte_escape(out, c);
        } else if (c < 0x80) {
            out.push_back(static_cast<char>(c));
        } else if (char32_t cp = 0; (used = utf8_sequence(message.substr(i), cp)) == 0) {
            used = 1;
            append_byte_escape(out, c);
        } else if (unsafe_code_point(cp)) {
            out += "\\u{";
            for (int shift = cp > 0xffff ? 20 : 12; shift >= 0; shift -= 4) out.push_back(hex_digits[(cp >> shift) & 0xf]);
            out += "}";
        } else {
            out.append(message.substr(i, used));
        }
        if (out.size() > limit) {
            out.resize(before);  // the whole character or escape, or none of it
            out += "...[cut]";
            return;
        }
        i += used;
    }
}

void write_line(const std::string& line) {
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
    (void)ignored;
}

}  // namespace

std::string log_line(LogLevel level, std::string_view message, bool audit) {
    std::string line = level == LogLevel::error ? "<3>error: " : level == LogLevel::warning ? "<4>warning: " : "<6>";
    line.reserve(line.size() + message.size() + 16);
    if (!audit && level == LogLevel::info && message.starts_with(audit_prefix)) line += "(not audit) ";
    append_escaped(line, message, max_log_line_bytes);
    line.push_back('\n');
    return line;
}

std::string clip_field(std::string_view value, std::size_t max_bytes) {
    if (value.size() <= max_bytes) return std::string(value);
    std::size_t end = max_bytes;
    // Back off the continuation bytes of a sequence the cut would split.
    while (end > 0 && (static_cast<unsigned char>(value[end]) & 0xc0) == 0x80) --end;
    return std::string(value.substr(0, end)) + "...";
}

void log(LogLevel level, std::string_view message) { write_line(log_line(level, message)); }

void log_audit(std::string_view line) { write_line(log_line(LogLevel::info, line, true)); }

}  // namespace mailsift::daemon
