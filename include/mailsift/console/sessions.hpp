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
// address and the password checks of all of them; TrustedDevices lets the
// browsers that signed in before past a flood of guesses.
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

// A token bucket: `per_second` tokens on average, `burst` at once; it starts full.
class TokenBucket {
public:
    TokenBucket(double per_second, double burst) : rate_(per_second), burst_(burst), tokens_(burst) {}
    // Takes a token if there is one (true); otherwise takes nothing (false).
    bool take(Clock::time_point now);
    // Takes a turn whatever the bucket holds and says how long its caller must
    // wait for it (zero: go now). Turns are granted in the order asked for,
    // however many are waiting, so a flood waits longer rather than getting
    // more; what bounds the queue is the caller's (the server's connection limit).
    Clock::duration reserve(Clock::time_point now);
    // A turn reserved and not to be used after all (its caller is gone before
    // it came): the next caller's wait is one turn shorter.
    void give_back(Clock::time_point now);

private:
    void refill(Clock::time_point now);
    double rate_, burst_;
    double tokens_;  // below zero: turns already promised ahead of this one
    Clock::time_point filled_{};
    bool started_ = false;
};

// Password guesses per client address: at most `attempts` failures in `window`;
// then signing in from that address is refused until the oldest failure leaves
// the window. A success clears the address's failures.
//
// And password checks from all addresses together (Argon2id, 64 MiB, about
// 0.1-0.2 s of a core each, and its memory traffic slows the milter however
// low the console thread's priority): sign-ins from a trusted device (one that
// signed in to that account before, TrustedDevices) share
// `trusted_checks_per_second`; every other sign-in shares `checks_per_second`,
// one every ten seconds. So a flood of guesses from ever-new addresses costs
// the mail about 2 % of a core, and the administrators, signing in from their
// own browsers, are not locked out by it.
struct SignInLimits {
    std::size_t attempts = 5;
    std::chrono::seconds window{300};
    std::size_t max_addresses = 10000;  // addresses tracked; the stalest go first
    double checks_per_second = 0.1;
    double burst = 5.0;
    double trusted_checks_per_second = 1.0;
    double trusted_burst = 5.0;
};

class SignInLimiter {
public:
    explicit SignInLimiter(SignInLimits limits = {})
        : limits_(limits),
          untrusted_(limits.checks_per_second, limits.burst),
          trusted_(limits.trusted_checks_per_second, limits.trusted_burst) {}
    // How long `address` must wait before its next attempt (zero: it may try now).
    std::chrono::seconds wait(const std::string& address, Clock::time_point now);
    // A failed sign-in from `address` to `account` (the name as given).
    void failed(const std::string& address, std::string_view account, Clock::time_point now);
    // A sign-in from `address` to `account` succeeded: that account's failures
    // from there are forgotten, not the others' (signing in to one's own
    // account must not clear the count of guesses at someone else's).
    void succeeded(const std::string& address, std::string_view account);
    // Whether a password may be checked now (takes one of the checks its
    // budget allows, a trusted device's or everyone else's); false: answer
    // without checking.
    bool may_check(Clock::time_point now, bool trusted_device);

private:
    void forget_old(Clock::time_point now);
    SignInLimits limits_;
    struct Failure {
        Clock::time_point at;
        std::string account;
    };
    std::unordered_map<std::string, std::vector<Failure>> failures_;  // by address, oldest first
    TokenBucket untrusted_, trusted_;
};

// Devices that have signed in to an account before: OWASP's "device cookies"
// (Authentication Cheat Sheet). A successful sign-in hands the browser a
// random token (256 bits, kept here by its BLAKE2b digest only, like a
// session's); a later sign-in to the same account that presents it is
// checked from the trusted budget and is not held by its address's failures.
// A device that fails `attempts` times in a row is no longer trusted. Kept in
// memory: a restart forgets them, and the next sign-in is an untrusted one.
struct DeviceLimits {
    std::chrono::seconds lifetime{30 * 24 * 3600};
    std::size_t attempts = 5;
    std::size_t max_devices = 1000;  // the oldest goes when a new one would pass this
};

class TrustedDevices {
public:
    explicit TrustedDevices(DeviceLimits limits = {}) : limits_(limits) {}
    // A new device token for `account`.
    std::string issue(std::string account, Clock::time_point now);
    // Whether `token` is a live device of `account`.
    bool trusted(std::string_view token, std::string_view account, Clock::time_point now) const;
    // A sign-in from the device failed (it goes after `attempts` in a row) or succeeded.
    void failed(std::string_view token);
    void succeeded(std::string_view token);
    // Forgets every device of `account` (its password or role changed, or it was removed).
    std::size_t forget(std::string_view account);
    std::size_t size() const { return by_digest_.size(); }

private:
    struct Device {
        std::string account;
        Clock::time_point issued;
        std::size_t failures = 0;
    };
    DeviceLimits limits_;
    std::unordered_map<std::string, Device> by_digest_;
};

}  // namespace mailsift::console
