// mailsiftd's log: one line per event on standard error, which systemd's
// journal (or the terminal in --foreground) records. Thread-safe.
//
// Every line passes through log_line(), so that nothing a message, an SMTP
// client or a console visitor sends can end a line, start another, or pass for
// a line of another writer, whatever the fields hold:
//   - a backslash becomes "\\"; CR, LF and TAB "\r", "\n", "\t"; every other
//     control character (C0, DEL) and every byte that is not part of valid
//     UTF-8 "\xHH";
//   - the Unicode characters that end a line or hide text in a terminal (C1
//     controls U+0080-U+009F, U+2028/U+2029, the bidirectional overrides and
//     isolates, U+200E/U+200F) "\u{HHHH}";
//   - a line is cut at max_log_line_bytes of escaped text, marked "...[cut]";
//   - only log_audit() writes a line that begins "console audit:": any other
//     message that would is prefixed with "(not audit) ". The shipped fail2ban
//     filter (etc/fail2ban/filter.d/mailsiftd-console.conf) is anchored on it.
// Fields from the wire are shortened where they are put into a message
// (clip_field), so that one long field cannot push the rest out of the line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mailsift::daemon {

enum class LogLevel { error, warning, info };

inline constexpr std::size_t max_log_line_bytes = 4096;
inline constexpr std::string_view audit_prefix = "console audit:";

// The bytes written for one event: its syslog priority prefix ("<3>error: ",
// "<4>warning: ", "<6>"), `message` escaped as above, and one '\n'. `audit`:
// the line is the console's audit line (log_audit).
std::string log_line(LogLevel level, std::string_view message, bool audit = false);

// `value` cut to at most `max_bytes` (never inside a UTF-8 sequence), "..."
// appended when it was cut. Escaping is log_line's, not this.
std::string clip_field(std::string_view value, std::size_t max_bytes = 128);

void log(LogLevel level, std::string_view message);
inline void log_error(std::string_view m) { log(LogLevel::error, m); }
inline void log_warning(std::string_view m) { log(LogLevel::warning, m); }
inline void log_info(std::string_view m) { log(LogLevel::info, m); }
// The console's audit line (console::audit_line), at info.
void log_audit(std::string_view line);

}  // namespace mailsift::daemon
