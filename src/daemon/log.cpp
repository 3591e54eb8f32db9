// Log lines carry a syslog priority prefix ("<3>") that journald understands.
#include "log.hpp"

#include <unistd.h>

#include <mutex>
#include <string>

namespace mailsift::daemon {

void log(LogLevel level, std::string_view message) {
    static std::mutex mutex;
    const char* prefix = level == LogLevel::error ? "<3>error: " : level == LogLevel::warning ? "<4>warning: " : "<6>";
    std::string line(prefix);
    line.append(message);
    line.push_back('\n');
    std::lock_guard lock(mutex);
    // One write per line so concurrent lines never interleave.
    ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
    (void)ignored;
}

}  // namespace mailsift::daemon
