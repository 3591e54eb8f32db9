// What one peer of the correction socket may take (issue 58): connections at
// once per Unix user, corrections a minute per user corrected for, and one
// log line a minute per peer for its refusals, so that no peer can hold the
// socket, keep the worker to itself, or fill the log. Thread-safe: the I/O
// thread admits connections, the worker counts corrections, and either may
// refuse.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace mailsift::daemon {

class CorrectionLimits {
public:
    // Refusals of one peer are logged at most once in this.
    static constexpr std::chrono::seconds log_interval{60};

    // A connection of `uid`: false when it holds `most` already.
    bool admit(uid_t uid, std::size_t most);
    void release(uid_t uid);

    // `n` corrections for `user` (a corrector's name) at `now`: false, and
    // nothing counted, when that would pass `per_minute` within the minute
    // (0: no limit); `wait` is then how long until the minute ends.
    bool take(const std::string& user, std::size_t n, std::size_t per_minute, std::int64_t now, std::int64_t& wait);

    // A refusal of `peer`'s request for `why`: its log line (a warning), or
    // "" when one was logged for that peer in the last log_interval (counted,
    // and said with the next).
    std::string refusal_line(const std::string& peer, const std::string& why, std::int64_t now);

private:
    struct Window {
        std::int64_t start = 0;
        std::size_t taken = 0;
    };
    struct Logged {
        std::int64_t at = 0;
        std::size_t quiet = 0;  // refusals since, not logged
    };
    std::mutex mutex_;
    std::map<uid_t, std::size_t> open_;
    std::map<std::string, Window> rates_;
    std::map<std::string, Logged> logged_;
};

}  // namespace mailsift::daemon
