// Console sessions and the sign-in limiter (sessions.hpp).
#include "mailsift/console/sessions.hpp"

#include <algorithm>
#include <vector>

#include "sodium.hpp"

namespace mailsift::console {

namespace {

// The key a session is kept under: BLAKE2b-256 of its token.
std::string digest(std::string_view token) {
    unsigned char out[crypto_generichash_BYTES];
    crypto_generichash(out, sizeof out, reinterpret_cast<const unsigned char*>(token.data()), token.size(), nullptr, 0);
    return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

// Drops the entry of `map` whose age(value) is smallest, the stalest: how each
// bounded table here makes room.
template <class Map, class Age>
void drop_stalest(Map& map, Age age) {
    if (map.empty()) return;
    map.erase(std::min_element(map.begin(), map.end(),
                               [&](const auto& a, const auto& b) { return age(a.second) < age(b.second); }));
}

}  // namespace

std::string random_token(std::size_t bytes) {
    ensure_sodium();
    std::vector<unsigned char> raw(bytes);
    randombytes_buf(raw.data(), raw.size());
    std::string out(sodium_base64_ENCODED_LEN(bytes, sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
    sodium_bin2base64(out.data(), out.size(), raw.data(), raw.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    out.resize(std::char_traits<char>::length(out.c_str()));
    return out;
}

Sessions::Created Sessions::create(std::string account, Role role, Clock::time_point now) {
    // Full: the session seen longest ago goes (its user signs in again).
    if (by_digest_.size() >= limits_.max_sessions) drop_stalest(by_digest_, [](const Session& s) { return s.last_seen; });
    Created c{random_token(), random_token()};
    by_digest_[digest(c.token)] = Session{std::move(account), role, c.csrf, now, now};
    return c;
}

std::optional<Session> Sessions::find(std::string_view token, Clock::time_point now) {
    const auto it = by_digest_.find(digest(token));
    if (it == by_digest_.end()) return std::nullopt;
    Session& s = it->second;
    if (now - s.last_seen >= limits_.idle || now - s.created >= limits_.absolute) {
        by_digest_.erase(it);
        return std::nullopt;
    }
    s.last_seen = now;
    return s;
}

bool Sessions::end(std::string_view token) { return by_digest_.erase(digest(token)) > 0; }

std::size_t Sessions::end_all_of(std::string_view account) {
    return std::erase_if(by_digest_, [&](const auto& kv) { return kv.second.account == account; });
}

bool csrf_matches(const Session& s, std::string_view presented) {
    if (presented.size() != s.csrf.size() || s.csrf.empty()) return false;
    return sodium_memcmp(presented.data(), s.csrf.data(), s.csrf.size()) == 0;
}

void SignInLimiter::forget_old(Clock::time_point now) {
    for (auto it = failures_.begin(); it != failures_.end();) {
        auto& list = it->second;
        std::erase_if(list, [&](const Failure& f) { return now - f.at >= limits_.window; });
        it = list.empty() ? failures_.erase(it) : std::next(it);
    }
}

std::chrono::seconds SignInLimiter::wait(const std::string& address, Clock::time_point now) {
    const auto it = failures_.find(address);
    if (it == failures_.end()) return std::chrono::seconds(0);
    auto& list = it->second;
    std::erase_if(list, [&](const Failure& f) { return now - f.at >= limits_.window; });
    if (list.size() < limits_.attempts) return std::chrono::seconds(0);
    // The oldest failure still counted leaves the window at its time + window.
    const auto left = list.front().at + limits_.window - now;
    return std::max(std::chrono::seconds(1), std::chrono::ceil<std::chrono::seconds>(left));
}

void SignInLimiter::failed(const std::string& address, std::string_view account, Clock::time_point now) {
    if (!failures_.contains(address) && failures_.size() >= limits_.max_addresses) {
        forget_old(now);
        if (failures_.size() >= limits_.max_addresses) {
            // Still full: the address whose last failure is oldest goes.
            drop_stalest(failures_, [](const std::vector<Failure>& list) { return list.back().at; });
        }
    }
    // The name as given, bounded: a guess is not stored whole.
    failures_[address].push_back({now, std::string(account.substr(0, 64))});
}

void SignInLimiter::succeeded(const std::string& address, std::string_view account) {
    const auto it = failures_.find(address);
    if (it == failures_.end()) return;
    std::erase_if(it->second, [&](const Failure& f) { return f.account == account; });
    if (it->second.empty()) failures_.erase(it);
}

void TokenBucket::refill(Clock::time_point now) {
    if (started_) {
        const double elapsed = std::chrono::duration<double>(now - filled_).count();
        tokens_ = std::min(burst_, tokens_ + std::max(0.0, elapsed) * rate_);
    }
    started_ = true;
    filled_ = now;
}

bool TokenBucket::take(Clock::time_point now) {
    refill(now);
    if (tokens_ < 1.0) return false;
    tokens_ -= 1.0;
    return true;
}

Clock::duration TokenBucket::reserve(Clock::time_point now) {
    refill(now);
    tokens_ -= 1.0;
    if (tokens_ >= 0.0) return Clock::duration::zero();
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(-tokens_ / rate_));
}

void TokenBucket::give_back(Clock::time_point now) {
    refill(now);
    tokens_ = std::min(burst_, tokens_ + 1.0);
}

bool SignInLimiter::may_check(Clock::time_point now, bool trusted_device) {
    return (trusted_device ? trusted_ : untrusted_).take(now);
}

std::string TrustedDevices::issue(std::string account, Clock::time_point now) {
    std::erase_if(by_digest_, [&](const auto& kv) { return now - kv.second.issued >= limits_.lifetime; });
    if (by_digest_.size() >= limits_.max_devices) drop_stalest(by_digest_, [](const Device& d) { return d.issued; });
    std::string token = random_token();
    by_digest_[digest(token)] = Device{std::move(account), now, 0};
    return token;
}

bool TrustedDevices::trusted(std::string_view token, std::string_view account, Clock::time_point now) const {
    if (token.empty()) return false;
    const auto it = by_digest_.find(digest(token));
    return it != by_digest_.end() && it->second.account == account && now - it->second.issued < limits_.lifetime;
}

void TrustedDevices::failed(std::string_view token) {
    const auto it = by_digest_.find(digest(token));
    if (it != by_digest_.end() && ++it->second.failures >= limits_.attempts) by_digest_.erase(it);
}

void TrustedDevices::succeeded(std::string_view token) {
    const auto it = by_digest_.find(digest(token));
    if (it != by_digest_.end()) it->second.failures = 0;
}

std::size_t TrustedDevices::forget(std::string_view account) {
    return std::erase_if(by_digest_, [&](const auto& kv) { return kv.second.account == account; });
}

}  // namespace mailsift::console
