// Console sessions, CSRF tokens and the sign-in limiter, with time as values.
#include "mailsift/console/sessions.hpp"

#include <catch2/catch.hpp>
#include <set>
#include <string>

using namespace mailsift::console;
using namespace std::chrono_literals;

TEST_CASE("Tokens are 256 random bits in base64url, never the same twice", "[console]") {
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        const std::string t = random_token();
        CHECK(t.size() == 43);  // 32 bytes, no padding
        CHECK(t.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == std::string::npos);
        seen.insert(t);
    }
    CHECK(seen.size() == 1000);
    CHECK(random_token(16).size() == 22);
}

TEST_CASE("A session lives until logout, idleness or its absolute limit", "[console]") {
    const Clock::time_point t0{};
    Sessions s(SessionLimits{30min, 12h, 1000});
    const std::string token = s.create("alice", Role::admin, t0).token;
    REQUIRE(s.size() == 1);

    SECTION("it is found by its token only") {
        const auto found = s.find(token, t0 + 1min);
        REQUIRE(found);
        CHECK(found->account == "alice");
        CHECK(found->role == Role::admin);
        CHECK(found->csrf.size() == 43);
        CHECK(found->csrf != token);
        CHECK_FALSE(s.find(token.substr(0, 42), t0 + 1min));
        CHECK_FALSE(s.find(token + "x", t0 + 1min));
        CHECK_FALSE(s.find("", t0 + 1min));
        CHECK_FALSE(s.find(found->csrf, t0 + 1min));  // the CSRF token is no session token
    }
    SECTION("each request moves the idle limit; a gap longer than it ends the session") {
        CHECK(s.find(token, t0 + 29min));
        CHECK(s.find(token, t0 + 58min));  // 29 min after the last request
        CHECK_FALSE(s.find(token, t0 + 88min));
        CHECK(s.size() == 0);  // dropped, not kept
        CHECK_FALSE(s.find(token, t0 + 89min));
    }
    SECTION("however busy, a session ends after the absolute limit") {
        for (auto t = t0; t < t0 + 12h; t += 20min) REQUIRE(s.find(token, t));
        CHECK_FALSE(s.find(token, t0 + 12h));
    }
    SECTION("logout ends it, once") {
        CHECK(s.end(token));
        CHECK_FALSE(s.find(token, t0 + 1min));
        CHECK_FALSE(s.end(token));
    }
    SECTION("a changed account ends all of its sessions and only those") {
        const std::string second = s.create("alice", Role::admin, t0).token;
        const std::string bob = s.create("bob", Role::viewer, t0).token;
        CHECK(s.end_all_of("alice") == 2);
        CHECK_FALSE(s.find(token, t0 + 1min));
        CHECK_FALSE(s.find(second, t0 + 1min));
        CHECK(s.find(bob, t0 + 1min));
    }
}

TEST_CASE("Sessions are bounded: the one seen longest ago goes first", "[console]") {
    const Clock::time_point t0{};
    Sessions s(SessionLimits{30min, 12h, 3});
    const std::string a = s.create("a", Role::viewer, t0).token;
    const std::string b = s.create("b", Role::viewer, t0 + 1s).token;
    const std::string c = s.create("c", Role::viewer, t0 + 2s).token;
    REQUIRE(s.find(a, t0 + 3s));  // a was seen last now; b is the stalest
    const std::string d = s.create("d", Role::viewer, t0 + 4s).token;
    CHECK(s.size() == 3);
    CHECK_FALSE(s.find(b, t0 + 5s));
    CHECK(s.find(a, t0 + 5s));
    CHECK(s.find(c, t0 + 5s));
    CHECK(s.find(d, t0 + 5s));
}

TEST_CASE("A CSRF token matches only itself", "[console]") {
    Sessions s;
    const Clock::time_point t0{};
    const auto created = s.create("alice", Role::admin, t0);
    const auto session = s.find(created.token, t0);
    REQUIRE(session);
    CHECK(session->csrf == created.csrf);
    CHECK(created.csrf != created.token);
    CHECK(csrf_matches(*session, session->csrf));
    std::string wrong = session->csrf;
    wrong.back() = wrong.back() == 'A' ? 'B' : 'A';
    CHECK_FALSE(csrf_matches(*session, wrong));
    CHECK_FALSE(csrf_matches(*session, ""));
    CHECK_FALSE(csrf_matches(*session, session->csrf.substr(1)));
    Session empty;
    CHECK_FALSE(csrf_matches(empty, ""));  // a session without a token accepts nothing
}

TEST_CASE("Failed sign-ins from one address are limited, others are not", "[console]") {
    const Clock::time_point t0{};
    SignInLimiter l(SignInLimits{3, 300s, 10000});
    const std::string x = "192.0.2.1", y = "192.0.2.2";
    CHECK(l.wait(x, t0) == 0s);
    l.failed(x, "admin", t0);
    l.failed(x, "admin", t0 + 10s);
    CHECK(l.wait(x, t0 + 10s) == 0s);
    l.failed(x, "admin", t0 + 20s);
    CHECK(l.wait(x, t0 + 20s) == 280s);  // until the first failure is 300 s old
    CHECK(l.wait(y, t0 + 20s) == 0s);
    CHECK(l.wait(x, t0 + 299s) == 1s);
    CHECK(l.wait(x, t0 + 300s) == 0s);  // two failures left in the window
    l.failed(x, "admin", t0 + 301s);
    CHECK(l.wait(x, t0 + 301s) == 9s);  // the one at 10 s leaves at 310 s

    SECTION("signing in to the account that failed clears its failures") {
        l.succeeded(x, "admin");
        CHECK(l.wait(x, t0 + 302s) == 0s);
    }
    SECTION("signing in to another account clears nothing: a viewer cannot reset the guesses at the admin") {
        l.succeeded(x, "viewer");
        CHECK(l.wait(x, t0 + 302s) == 8s);
        l.succeeded(y, "admin");  // nor can anybody elsewhere
        CHECK(l.wait(x, t0 + 302s) == 8s);
    }
}

TEST_CASE("The sign-in limiter tracks a bounded number of addresses", "[console]") {
    const Clock::time_point t0{};
    SignInLimiter l(SignInLimits{1, 300s, 100});
    for (int i = 0; i < 1000; ++i) l.failed("10.0.0." + std::to_string(i), "admin", t0 + std::chrono::seconds(i % 50));
    // The newest are still limited; the memory stayed bounded by dropping the stalest.
    CHECK(l.wait("10.0.0.999", t0 + 60s) > 0s);
    std::size_t limited = 0;
    for (int i = 0; i < 1000; ++i) limited += l.wait("10.0.0." + std::to_string(i), t0 + 60s) > 0s ? 1 : 0;
    CHECK(limited <= 100);
}

TEST_CASE("Password checks from all addresses together keep to a budget", "[console]") {
    const Clock::time_point t0{};
    SignInLimits limits;
    limits.checks_per_second = 2.0;
    limits.burst = 4.0;
    SignInLimiter l(limits);
    for (int i = 0; i < 4; ++i) CHECK(l.may_check(t0, false));  // the burst
    CHECK_FALSE(l.may_check(t0, false));
    CHECK_FALSE(l.may_check(t0 + 400ms, false));  // 0.8 of a check earned
    CHECK(l.may_check(t0 + 500ms, false));        // one
    CHECK_FALSE(l.may_check(t0 + 500ms, false));
    std::size_t allowed = 0;  // a minute of asking 100 times a second
    for (int ms = 1000; ms < 61000; ms += 10) allowed += l.may_check(t0 + std::chrono::milliseconds(ms), false) ? 1 : 0;
    CHECK(allowed >= 119);
    CHECK(allowed <= 121);
    CHECK(l.may_check(t0 + 3600s, false));  // refilled after a quiet hour, but no more than the burst
    for (int i = 0; i < 3; ++i) CHECK(l.may_check(t0 + 3600s, false));
    CHECK_FALSE(l.may_check(t0 + 3600s, false));

    SECTION("trusted devices have a budget of their own that the flood does not touch") {
        for (int i = 0; i < 5; ++i) CHECK(l.may_check(t0 + 3600s, true));
        CHECK_FALSE(l.may_check(t0 + 3600s, true));
        CHECK_FALSE(l.may_check(t0 + 3600s, false));  // the other budget is still spent
        CHECK(l.may_check(t0 + 3601s, true));         // one a second
    }
    SECTION("by default, untrusted sign-ins get one check every ten seconds after a burst of five") {
        SignInLimiter d;
        for (int i = 0; i < 5; ++i) CHECK(d.may_check(t0, false));
        CHECK_FALSE(d.may_check(t0 + 9s, false));
        CHECK(d.may_check(t0 + 10s, false));
        CHECK_FALSE(d.may_check(t0 + 10s, false));
    }
}

TEST_CASE("A trusted device is its account's only, lives a while, and goes after repeated failures", "[console]") {
    const Clock::time_point t0{};
    TrustedDevices d(DeviceLimits{.lifetime = 3600s, .attempts = 3, .max_devices = 10});
    const std::string token = d.issue("root", t0);
    CHECK(token.size() == 43);
    CHECK(d.trusted(token, "root", t0 + 10s));
    CHECK_FALSE(d.trusted(token, "watcher", t0 + 10s));  // another account: not trusted
    CHECK_FALSE(d.trusted("", "root", t0));
    CHECK_FALSE(d.trusted(token.substr(1), "root", t0));
    CHECK_FALSE(d.trusted(random_token(), "root", t0));
    CHECK_FALSE(d.trusted(token, "root", t0 + 3600s));  // expired

    SECTION("failures in a row end the trust; a success in between starts the count again") {
        d.failed(token);
        d.failed(token);
        d.succeeded(token);
        d.failed(token);
        d.failed(token);
        CHECK(d.trusted(token, "root", t0));
        d.failed(token);
        CHECK_FALSE(d.trusted(token, "root", t0));
    }
    SECTION("an account changed or removed forgets its devices") {
        const std::string other = d.issue("watcher", t0);
        CHECK(d.forget("root") == 1);
        CHECK_FALSE(d.trusted(token, "root", t0));
        CHECK(d.trusted(other, "watcher", t0));
    }
    SECTION("the number kept is bounded: the oldest goes") {
        for (int i = 1; i <= 10; ++i) d.issue("root", t0 + std::chrono::seconds(i));
        CHECK(d.size() == 10);
        CHECK_FALSE(d.trusted(token, "root", t0 + 20s));
    }
}

TEST_CASE("A token bucket paces: it serves a burst at once, then one turn per 1/rate, in the order asked", "[console]") {
    const Clock::time_point t0{};
    TokenBucket p(10.0, 3.0);  // 10 a second, 3 at once
    for (int i = 0; i < 3; ++i) CHECK(p.reserve(t0) == Clock::duration::zero());
    // Asked at once, the next ones wait 0.1 s, 0.2 s, 0.3 s: a flood waits longer, it does not get more.
    CHECK(p.reserve(t0) == 100ms);
    CHECK(p.reserve(t0) == 200ms);
    CHECK(p.reserve(t0) == 300ms);
    // Once they have had their turns, a quiet second refills the burst, no more.
    for (int i = 0; i < 3; ++i) CHECK(p.reserve(t0 + 2s) == Clock::duration::zero());
    CHECK(p.reserve(t0 + 2s) == 100ms);
    // Callers that each come back when served (as a connection does): over a
    // minute, 10 a second are served, however many callers there are.
    TokenBucket q(10.0, 1.0);
    std::vector<Clock::time_point> next(64, t0);  // 64 connections
    std::size_t served = 0;
    for (;;) {
        auto c = std::min_element(next.begin(), next.end());
        if (*c >= t0 + 60s) break;
        *c += q.reserve(*c);  // its turn comes then
        if (*c < t0 + 60s) ++served;
    }
    CHECK(served >= 598);
    CHECK(served <= 602);
}

TEST_CASE("A turn given back shortens the next wait, and never fills the bucket past its burst", "[console]") {
    const Clock::time_point t0{};
    TokenBucket p(10.0, 1.0);
    CHECK(p.reserve(t0) == Clock::duration::zero());
    CHECK(p.reserve(t0) == 100ms);
    CHECK(p.reserve(t0) == 200ms);
    p.give_back(t0);  // the one at 200 ms went away
    CHECK(p.reserve(t0) == 200ms);
    // A quiet bucket stays at its burst: one at once, then the pace.
    p.give_back(t0 + 10s);
    p.give_back(t0 + 10s);
    CHECK(p.reserve(t0 + 10s) == Clock::duration::zero());
    CHECK(p.reserve(t0 + 10s) == 100ms);
}
