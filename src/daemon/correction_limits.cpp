// What one peer of the correction socket may take; see correction_limits.hpp.
#include "correction_limits.hpp"

namespace mailsift::daemon {

namespace {

constexpr std::int64_t minute = 60;
constexpr std::size_t most_remembered = 4096;  // peers and users kept; older windows are dropped beyond

template <class Map>
void forget_old(Map& m, std::int64_t now, std::int64_t Map::mapped_type::*at) {
    if (m.size() < most_remembered) return;
    for (auto i = m.begin(); i != m.end();) i = now - i->second.*at >= minute ? m.erase(i) : std::next(i);
}

}  // namespace

bool CorrectionLimits::admit(uid_t uid, std::size_t most) {
    std::lock_guard lock(mutex_);
    std::size_t& n = open_[uid];
    if (n >= most) {
        if (n == 0) open_.erase(uid);
        return false;
    }
    ++n;
    return true;
}

void CorrectionLimits::release(uid_t uid) {
    std::lock_guard lock(mutex_);
    const auto i = open_.find(uid);
    if (i == open_.end()) return;
    if (--i->second == 0) open_.erase(i);
}

bool CorrectionLimits::take(const std::string& user, std::size_t n, std::size_t per_minute, std::int64_t now,
                            std::int64_t& wait) {
    if (per_minute == 0) return true;
    std::lock_guard lock(mutex_);
    forget_old(rates_, now, &Window::start);
    Window& w = rates_[user];
    if (now - w.start >= minute) w = Window{now, 0};
    if (w.taken + n > per_minute) {
        wait = w.start + minute - now;
        return false;
    }
    w.taken += n;
    return true;
}

std::string CorrectionLimits::refusal_line(const std::string& peer, const std::string& why, std::int64_t now) {
    std::lock_guard lock(mutex_);
    forget_old(logged_, now, &Logged::at);
    auto [i, fresh] = logged_.try_emplace(peer);
    Logged& l = i->second;
    if (!fresh && now - l.at < log_interval.count()) {
        ++l.quiet;
        return {};
    }
    std::string line = "refused a correction request from " + peer + ": " + why;
    if (l.quiet > 0) {
        line += " (and " + std::to_string(l.quiet) + " more refused from it in the " +
                std::to_string(now - l.at) + " s before, not logged)";
    }
    l = Logged{now, 0};
    return line;
}

}  // namespace mailsift::daemon
