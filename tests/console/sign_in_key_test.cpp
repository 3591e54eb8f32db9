// What the console's sign-in limiter counts a request under (issue 41): the
// address a trusted proxy forwarded for, not the proxy's (behind nginx, five
// wrong passwords from anyone made everyone wait), nobody else's
// X-Forwarded-For, and an IPv6 address by its /64 (one host holds a /64: it
// could otherwise guess on from a new address each time).
#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "app_support.hpp"

using namespace console_test;
using namespace std::chrono_literals;

namespace {

// A sign-in from `client` (the peer), with `forwarded` as X-Forwarded-For when given.
http::status sign_in(Console& c, const std::string& client, const std::string& forwarded, const std::string& password) {
    c.now += 10s;  // a password check a time: the check budget (0.1/s) refills
    Request req{http::verb::post, "/api/login", 11};
    req.set(http::field::host, "console.example:8443");
    req.set(http::field::content_type, "application/json");
    if (!forwarded.empty()) req.set("X-Forwarded-For", forwarded);
    req.body() = json{{"name", "root"}, {"password", password}}.dump();
    req.prepare_payload();
    return c.app->handle(req, client, c.now).result();
}

}  // namespace

TEST_CASE("Behind a trusted proxy, failed sign-ins count against the address it forwarded for", "[console]") {
    Console c;  // trusts 192.0.2.80 as its proxy
    for (int i = 0; i < 5; ++i) CHECK(sign_in(c, "192.0.2.80", "198.51.100.1", "wrong") == http::status::unauthorized);
    CHECK(sign_in(c, "192.0.2.80", "198.51.100.1", admin_password) == http::status::too_many_requests);
    // Another browser behind the same proxy is not made to wait.
    CHECK(sign_in(c, "192.0.2.80", "198.51.100.2", admin_password) == http::status::ok);
    // Only the last address counts (the one the proxy saw), not what a client prepended.
    CHECK(sign_in(c, "192.0.2.80", "198.51.100.2, 198.51.100.1", admin_password) == http::status::too_many_requests);
}

TEST_CASE("A peer that is no trusted proxy is counted by its own address, whatever it forwards", "[console]") {
    Console c;
    for (int i = 0; i < 5; ++i) {
        CHECK(sign_in(c, "192.0.2.7", "198.51.100." + std::to_string(i), "wrong") == http::status::unauthorized);
    }
    CHECK(sign_in(c, "192.0.2.7", "198.51.100.9", admin_password) == http::status::too_many_requests);
}

TEST_CASE("IPv6 sign-ins are counted by their /64", "[console]") {
    Console c;
    for (int i = 1; i <= 5; ++i) {
        CHECK(sign_in(c, "2001:db8:0:7::" + std::to_string(i), "", "wrong") == http::status::unauthorized);
    }
    CHECK(sign_in(c, "2001:db8:0:7:ffff::1", "", admin_password) == http::status::too_many_requests);
    CHECK(sign_in(c, "2001:db8:0:8::1", "", admin_password) == http::status::ok);  // the next /64
}
