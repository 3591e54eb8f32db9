// libFuzzer harness: the daemon's log writer (src/daemon/log.hpp) on arbitrary
// messages, at every level, as an ordinary line and as the audit line.
//
// Invariants (log.hpp):
//   - a line is exactly one line: it ends in '\n' and holds no other byte
//     below 0x20, no DEL;
//   - it is valid UTF-8 and holds none of the characters that end a line or
//     hide text (C1 controls, U+2028/U+2029, bidirectional overrides);
//   - it starts with its level's prefix, and only an audit line starts with
//     "<6>console audit:" (what the shipped fail2ban filter is anchored on);
//   - its length is bounded: prefix + max_log_line_bytes + the cut mark;
//   - a message of printable ASCII without a backslash comes out unchanged
//     when it fits;
//   - clip_field cuts to at most its bound plus "..." and never splits a
//     UTF-8 sequence of a valid input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "log.hpp"

namespace daemon = mailsift::daemon;
using mailsift::fuzz::printable;
using mailsift::fuzz::valid_utf8;

namespace {

bool hidden_character(std::string_view line) {
    // Valid UTF-8 by now: look for the encodings of the characters log.hpp escapes.
    for (std::size_t i = 0; i + 1 < line.size(); ++i) {
        const auto a = static_cast<unsigned char>(line[i]);
        const auto b = static_cast<unsigned char>(line[i + 1]);
        if (a == 0xc2 && b >= 0x80 && b <= 0x9f) return true;  // C1
        if (a == 0xe2 && i + 2 < line.size()) {
            const auto c = static_cast<unsigned char>(line[i + 2]);
            if (b == 0x80 && (c == 0x8e || c == 0x8f || (c >= 0xa8 && c <= 0xae))) return true;
            if (b == 0x81 && c >= 0xa6 && c <= 0xa9) return true;
        }
    }
    return false;
}

void check_line(const std::string& line, daemon::LogLevel level, bool audit, std::string_view message) {
    FUZZ_CHECK("one-line", !line.empty() && line.back() == '\n', printable(line));
    for (std::size_t i = 0; i + 1 < line.size(); ++i) {
        const auto c = static_cast<unsigned char>(line[i]);
        FUZZ_CHECK("control", c >= 0x20 && c != 0x7f, "byte " + std::to_string(c) + " at " + std::to_string(i) +
                                                           " of " + printable(line));
    }
    FUZZ_CHECK("utf8", valid_utf8(line), printable(line));
    FUZZ_CHECK("hidden", !hidden_character(line), printable(line));
    const std::string_view prefix = level == daemon::LogLevel::error     ? "<3>error: "
                                    : level == daemon::LogLevel::warning ? "<4>warning: "
                                                                         : "<6>";
    FUZZ_CHECK("prefix", std::string_view(line).starts_with(prefix), printable(line));
    if (!audit) {
        FUZZ_CHECK("audit-anchor", !std::string_view(line).starts_with("<6>console audit:"), printable(line));
    }
    FUZZ_CHECK("bounded", line.size() <= prefix.size() + 12 + daemon::max_log_line_bytes + 9, printable(line));
    bool plain = message.size() <= daemon::max_log_line_bytes && !message.starts_with(daemon::audit_prefix);
    for (const char c : message) plain = plain && c >= 0x20 && c < 0x7f && c != '\\';
    if (plain) {
        FUZZ_CHECK("unchanged", line == std::string(prefix) + std::string(message) + "\n", printable(line));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view message(reinterpret_cast<const char*>(data), size);
    for (const auto level : {daemon::LogLevel::error, daemon::LogLevel::warning, daemon::LogLevel::info}) {
        check_line(daemon::log_line(level, message), level, false, message);
    }
    check_line(daemon::log_line(daemon::LogLevel::info, message, true), daemon::LogLevel::info, true, message);

    const std::size_t bound = size == 0 ? 0 : data[0] % 200;
    const std::string clipped = daemon::clip_field(message, bound);
    FUZZ_CHECK("clip-bound", clipped.size() <= bound + 3, printable(clipped));
    if (valid_utf8(message)) FUZZ_CHECK("clip-utf8", valid_utf8(clipped), printable(clipped));
    return 0;
}
