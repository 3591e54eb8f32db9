// mailsift::console sessions — who is signed in to the web console, and the
// limits on signing in.
//
// A session is created when a password checks out (accounts.hpp) and named
// by a random token of 256 bits that the browser keeps in a cookie; each
// session also has its own CSRF token, which every state-changing request must
// carry. Sessions end on logout, after `idle` without a request and after
// `absolute` whatever happens. Tokens are looked up by their BLAKE2b digest,
// so the lookup's timing says nothing about a token, and CSRF tokens are
// compared in constant time. SignInLimiter bounds password guessing per client
// address.
//
// Time comes in as a value (steady time points); nothing here knows HTTP.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mailsift/console/accounts.hpp"

namespace mailsift::console {

using Clock = std::chrono::steady_clock;

struct Session {
    std::string account;
    Role role = Role::viewer;
    std::string csrf;  // what a state-changing request must carry
    Clock::time_point created;
    Clock::time_point last_seen;
};

struct SessionLimits {
    std::chrono::seconds idle{30 * 60};
    std::chrono::seconds absolute{12 * 3600};
    std::size_t max_sessions = 1000;  // the oldest goes when a new one would pass this
};

// Not thread-safe: the console's one I/O thread owns it.
class Sessions {
public:
    explicit Sessions(SessionLimits limits = {}) : limits_(limits) {}

    // A new session: its token (43 characters, base64url, 256 random bits) and
    // the CSRF token its state-changing requests must carry.
    struct Created {
        std::string token;
        std::string csrf;
    };
    Created create(std::string account, Role role, Clock::time_point now);
    // The live session named by `token`, its last_seen moved to `now`; nullopt
    // (and the session dropped) when it is unknown or expired.
    std::optional<Session> find(std::string_view token, Clock::time_point now);
    // Ends the session (logout); false when there was none.
    bool end(std::string_view token);
    // Ends every session of `account` (its password or role changed, or it was removed).
    std::size_t end_all_of(std::string_view account);
    std::size_t size() const { return by_digest_.size(); }

private:
    SessionLimits limits_;
    std::unordered_map<std::string, Session> by_digest_;  // BLAKE2b(token) -> session
};

// Constant-time equality of a presented CSRF token and the session's.
bool csrf_matches(const Session& s, std::string_view presented);

// A random token: `bytes` random bytes in base64url without padding.
std::string random_token(std::size_t bytes = 32);

// Password guesses per client address: at most `attempts` failures in `window`;
// then signing in from that address is refused until the oldest failure leaves
// the window. A success clears the address's failures.
struct SignInLimits {
    std::size_t attempts = 5;
    std::chrono::seconds window{300};
    std::size_t max_addresses = 10000;  // addresses tracked; the stalest go first
    // Password checks from all addresses together (Argon2id, 64 MiB, about
    // 0.1 s of a core each): this many a second on average, up to `burst` at once.
    double checks_per_second = 1.0;
    double burst = 5.0;
};

// Paces work to `per_second` on average, `burst` at once: reserve() takes a
// turn and says how long its caller must wait for it (zero: go now). Turns are
// granted in the order asked for, however many are waiting, so a flood waits
// longer rather than getting more; what bounds the queue is the caller's (the
// server's connection limit).
class Pacer {
public:
    Pacer(double per_second, double burst) : rate_(per_second), burst_(burst), tokens_(burst) {}
    Clock::duration reserve(Clock::time_point now);

private:
    double rate_, burst_;
    double tokens_;  // below zero: turns already promised ahead of this one
    Clock::time_point filled_{};
    bool started_ = false;
};

class SignInLimiter {
public:
    explicit SignInLimiter(SignInLimits limits = {}) : limits_(limits) {}
    // How long `address` must wait before its next attempt (zero: it may try now).
    std::chrono::seconds wait(const std::string& address, Clock::time_point now);
    void failed(const std::string& address, Clock::time_point now);
    void succeeded(const std::string& address);
    // Whether a password may be checked now, from any address (takes one of
    // the checks the global budget allows); false: answer without checking.
    bool may_check(Clock::time_point now);

private:
    void forget_old(Clock::time_point now);
    SignInLimits limits_;
    std::unordered_map<std::string, std::vector<Clock::time_point>> failures_;
    double tokens_ = -1.0;  // the budget's bucket; < 0: full, not yet used
    Clock::time_point filled_{};
};

}  // namespace mailsift::console
