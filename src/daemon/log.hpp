// mailsiftd's log: one line per event on standard error, which systemd's
// journal (or the terminal in --foreground) records. Thread-safe.
#pragma once

#include <string_view>

namespace mailsift::daemon {

enum class LogLevel { error, warning, info };

void log(LogLevel level, std::string_view message);
inline void log_error(std::string_view m) { log(LogLevel::error, m); }
inline void log_warning(std::string_view m) { log(LogLevel::warning, m); }
inline void log_info(std::string_view m) { log(LogLevel::info, m); }

}  // namespace mailsift::daemon
