// Signing in to the console and its sessions, request by request through the App, on a real SQLite
// model and a real accounts file: strict cookies (Secure under TLS), wrong passwords and the limits
// per address, a trusted browser let through a flood of guesses, sign-in as JSON from the console's
// own origin only; sessions that expire, end at sign-out or when their account changes, and a
// damaged accounts file that lets nobody in.
#include "mailsift/console/app.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>

#include "app_support.hpp"

using namespace console_test;
namespace fs = std::filesystem;
namespace http = boost::beast::http;
using namespace mailsift;
using namespace mailsift::console;
using nlohmann::json;

TEST_CASE("signing in sets strict session and device cookies, Secure under TLS", "[console]") {
    SECTION("plain HTTP on loopback") {
        Console c;
        const auto s = c.sign_in("root", admin_password);
        CHECK(s.set_cookie.find("HttpOnly") != std::string::npos);
        CHECK(s.set_cookie.find("SameSite=Strict") != std::string::npos);
        CHECK(s.set_cookie.find("Secure") == std::string::npos);
        CHECK(s.device_cookie.find("; HttpOnly; SameSite=Strict") != std::string::npos);
        CHECK(s.device_cookie.find("Secure") == std::string::npos);
        CHECK(s.token.size() >= 43);  // 256 random bits, base64url
        const auto r = c.send(http::verb::get, "/api/session", "", s.token);
        REQUIRE(r.result() == http::status::ok);
        CHECK(json::parse(r.body())["role"] == "admin");
        CHECK(c.send(http::verb::get, "/status", "", s.token).result() == http::status::ok);
    }
    SECTION("TLS") {
        Console c(true);
        const auto s = c.sign_in("root", admin_password);
        CHECK(s.set_cookie.find("; Secure") != std::string::npos);
        CHECK(s.device_cookie.find("; Secure") != std::string::npos);
    }
}

TEST_CASE("a wrong password is refused, and sign-ins are limited per address", "[console]") {
    Console c;
    auto attempt = [&](const std::string& pw, const std::string& client) {
        c.now += std::chrono::seconds(10);  // within the budget of checks from all addresses
        return c.send(http::verb::post, "/api/login", json{{"name", "root"}, {"password", pw}}.dump(), "", "",
                      "application/json", client);
    };
    CHECK(attempt("wrong password", "192.0.2.7").result() == http::status::unauthorized);
    CHECK(c.send(http::verb::post, "/api/login", json{{"name", "nobody"}, {"password", admin_password}}.dump())
              .result() == http::status::unauthorized);
    for (int i = 0; i < 4; ++i) CHECK(attempt("wrong password", "192.0.2.7").result() == http::status::unauthorized);
    const auto limited = attempt(admin_password, "192.0.2.7");  // even the right one, now
    CHECK(limited.result() == http::status::too_many_requests);
    CHECK(!str(limited[http::field::retry_after]).empty());
    CHECK(attempt(admin_password, "192.0.2.8").result() == http::status::ok);  // another address is not held
    c.now += std::chrono::minutes(6);
    CHECK(attempt(admin_password, "192.0.2.7").result() == http::status::ok);
}

TEST_CASE("signing in to one's own account does not clear the guesses at another from the same address", "[console]") {
    Console c;
    auto attempt = [&](const std::string& name, const std::string& pw) {
        c.now += std::chrono::seconds(10);  // within the budget of checks from all addresses
        return c.send(http::verb::post, "/api/login", json{{"name", name}, {"password", pw}}.dump(), "", "",
                      "application/json", "192.0.2.9");
    };
    for (int i = 0; i < 4; ++i) CHECK(attempt("root", "a guess").result() == http::status::unauthorized);
    CHECK(attempt("watcher", viewer_password).result() == http::status::ok);  // the viewer's own sign-in
    CHECK(attempt("root", "one more guess").result() == http::status::unauthorized);
    CHECK(attempt("root", admin_password).result() == http::status::too_many_requests);  // five guesses: held
    // Signing in to the account that failed forgets its failures (from a trusted device, after the wait).
    c.now += std::chrono::minutes(6);
    CHECK(attempt("root", admin_password).result() == http::status::ok);
}

TEST_CASE("a flood of guesses does not lock out a browser that signed in before", "[console]") {
    Console c;
    auto login = [&](const std::string& name, const std::string& pw, const std::string& device,
                     const std::string& client) {
        Request req{http::verb::post, "/api/login", 11};
        req.set(http::field::host, "console.example:8443");
        req.set(http::field::content_type, "application/json");
        if (!device.empty()) req.set(http::field::cookie, "mailsift_device=" + device);
        req.body() = json{{"name", name}, {"password", pw}}.dump();
        req.prepare_payload();
        return c.app->handle(req, client, c.now);
    };
    // The first sign-in hands out a device cookie, for the sign-in route only.
    const auto first = login("root", admin_password, "", "192.0.2.1");
    REQUIRE(first.result() == http::status::ok);
    std::string device;
    for (const auto& f : first) {
        const std::string v = str(f.value());
        if (f.name() == http::field::set_cookie && v.starts_with("mailsift_device=")) device = v;
    }
    REQUIRE(!device.empty());
    CHECK(device.find("; Path=/api/login;") != std::string::npos);
    CHECK(device.find("; HttpOnly") != std::string::npos);
    CHECK(device.find("; SameSite=Strict") != std::string::npos);
    CHECK(device.find("; Max-Age=2592000") != std::string::npos);
    const std::string token = device.substr(16, device.find(';') - 16);
    CHECK(token.size() == 43);

    // Guesses from ever-new addresses use up what everyone else shares.
    int refused = 0;
    for (int i = 0; i < 20; ++i) {
        refused += login("root", "guess", "", "198.51.100." + std::to_string(i)).result() ==
                           http::status::too_many_requests
                       ? 1
                       : 0;
    }
    CHECK(refused >= 15);
    CHECK(login("root", admin_password, "", "192.0.2.1").result() == http::status::too_many_requests);
    // The browser that signed in before is let through, and is not given another device.
    const auto trusted = login("root", admin_password, token, "198.51.100.1");
    CHECK(trusted.result() == http::status::ok);
    CHECK(str(trusted[http::field::set_cookie]).starts_with("mailsift_session="));
    CHECK(std::distance(trusted.base().equal_range(http::field::set_cookie).first,
                        trusted.base().equal_range(http::field::set_cookie).second) == 1);
    // Only for its own account: the device does not vouch for another name.
    CHECK(login("watcher", viewer_password, token, "192.0.2.1").result() == http::status::too_many_requests);
    // A device that keeps failing is no longer trusted.
    for (int i = 0; i < 5; ++i) {
        c.now += std::chrono::seconds(1);
        CHECK(login("root", "guess", token, "192.0.2.1").result() == http::status::unauthorized);
    }
    CHECK(login("root", admin_password, token, "192.0.2.1").result() == http::status::too_many_requests);
}

TEST_CASE("sign-in only as JSON, and not from another origin", "[console]") {
    Console c;
    const std::string body = json{{"name", "root"}, {"password", admin_password}}.dump();
    CHECK(c.send(http::verb::post, "/api/login", body, "", "", "application/x-www-form-urlencoded").result() ==
          http::status::unsupported_media_type);
    Request req{http::verb::post, "/api/login", 11};
    req.set(http::field::host, "console.example:8443");
    req.set(http::field::content_type, "application/json");
    req.set(http::field::origin, "https://evil.example");
    req.body() = body;
    req.prepare_payload();
    CHECK(c.app->handle(req, "192.0.2.1", c.now).result() == http::status::forbidden);
    req.set(http::field::origin, "https://console.example:8443");
    CHECK(c.app->handle(req, "192.0.2.1", c.now).result() == http::status::ok);
}

TEST_CASE("sessions expire when idle, at their age limit, and end at sign-out", "[console]") {
    Console c;
    auto s = c.sign_in("root", admin_password);
    c.now += std::chrono::minutes(29);
    CHECK(c.send(http::verb::get, "/api/session", "", s.token).result() == http::status::ok);
    c.now += std::chrono::minutes(31);
    CHECK(c.send(http::verb::get, "/api/session", "", s.token).result() == http::status::unauthorized);

    s = c.sign_in("root", admin_password);
    for (int i = 0; i < 12 * 4; ++i) {
        c.now += std::chrono::minutes(15);  // kept busy
        c.send(http::verb::get, "/api/session", "", s.token);
    }
    CHECK(c.send(http::verb::get, "/api/session", "", s.token).result() == http::status::unauthorized);

    s = c.sign_in("root", admin_password);
    const auto out = c.send(http::verb::post, "/api/logout", "", s.token, s.csrf);
    CHECK(out.result() == http::status::ok);
    CHECK(str(out[http::field::set_cookie]).find("Max-Age=0") != std::string::npos);
    CHECK(c.send(http::verb::get, "/api/session", "", s.token).result() == http::status::unauthorized);
}

TEST_CASE("a new password or role, or a removed account, ends its sessions", "[console]") {
    Console c;
    const auto root = c.sign_in("root", admin_password);
    const auto watcher = c.sign_in("watcher", viewer_password);
    update_accounts(c.users, std::nullopt, [](Accounts& a) { a.set_role("watcher", Role::admin); });
    CHECK(c.send(http::verb::get, "/api/session", "", watcher.token).result() == http::status::unauthorized);
    CHECK(c.send(http::verb::get, "/api/session", "", root.token).result() == http::status::ok);
    update_accounts(c.users, std::nullopt, [](Accounts& a) { a.set_password("root", "a brand new password"); });
    CHECK(c.send(http::verb::get, "/api/session", "", root.token).result() == http::status::unauthorized);
    CHECK(c.send(http::verb::post, "/api/login", json{{"name", "root"}, {"password", admin_password}}.dump()).result() ==
          http::status::unauthorized);
    const auto again = c.sign_in("root", "a brand new password");
    update_accounts(c.users, std::nullopt, [](Accounts& a) { a.remove("root"); });
    CHECK(c.send(http::verb::get, "/api/session", "", again.token).result() == http::status::unauthorized);
}

TEST_CASE("a damaged accounts file lets nobody in", "[console]") {
    Console c;
    const auto s = c.sign_in("root", admin_password);
    std::ofstream(c.users, std::ios::app) << "this line is not an account\n";
    CHECK(c.send(http::verb::get, "/api/session", "", s.token).result() == http::status::service_unavailable);
    CHECK(c.send(http::verb::post, "/api/login", json{{"name", "root"}, {"password", admin_password}}.dump()).result() ==
          http::status::service_unavailable);
}
