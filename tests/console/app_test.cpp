// The console's routes, request by request, on a real SQLite model and a real
// accounts file: every security rule of the console has a case here that
// fails without it (headers, sessions, roles, CSRF, sign-in limits, expiry),
// and learning trains the model exactly once.
#include "mailsift/console/app.hpp"

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "../support/temp_dir.hpp"
#include "app_support.hpp"
#include "mailsift/store/database.hpp"

using namespace console_test;
namespace fs = std::filesystem;
namespace http = boost::beast::http;
using namespace mailsift;
using namespace mailsift::console;
using nlohmann::json;

TEST_CASE("every answer carries the security headers", "[console]") {
    Console c;
    const auto s = c.sign_in("root", admin_password);
    for (const auto& r : {c.send(http::verb::get, "/status"), c.send(http::verb::get, "/api/status"),
                          c.send(http::verb::get, "/api/status", "", s.token), c.send(http::verb::get, "/static/console.js"),
                          c.send(http::verb::get, "/nowhere"), c.send(http::verb::post, "/api/scan", "x", s.token)}) {
        const std::string csp = str(r["Content-Security-Policy"]);
        CHECK(csp.find("script-src 'self'") != std::string::npos);
        CHECK(csp.find("frame-ancestors 'none'") != std::string::npos);
        CHECK(csp.find("default-src 'none'") != std::string::npos);
        CHECK(csp.find("unsafe-inline") == std::string::npos);
        CHECK(str(r["X-Content-Type-Options"]) == "nosniff");
        CHECK(str(r["Strict-Transport-Security"]).empty());  // plain HTTP (loopback): no HSTS
    }
    // Under TLS, every answer tells the browser to come back only over HTTPS.
    Console tls(true);
    for (const auto& r : {tls.send(http::verb::get, "/status"), tls.send(http::verb::get, "/static/console.js"),
                          tls.send(http::verb::post, "/api/login", "{}"), tls.send(http::verb::get, "/nowhere")}) {
        CHECK(str(r["Strict-Transport-Security"]) == "max-age=31536000");
    }
    Response early{http::status::payload_too_large, 11};  // what the server answers before the App
    add_security_headers(early, true);
    CHECK(str(early["Strict-Transport-Security"]) == "max-age=31536000");
}

TEST_CASE("each route takes the body it needs: a message to scan or learn, a few KiB for the rest", "[console]") {
    Console c;
    const std::size_t message = c.settings.limits.max_message_bytes + 64 * 1024;
    CHECK(c.app->max_body_bytes(http::verb::post, "/api/scan") == message);
    CHECK(c.app->max_body_bytes(http::verb::post, "/api/learn?class=spam") == message);
    // A sign-in from anybody, before any account is known: 4 KiB, not a message's size.
    CHECK(c.app->max_body_bytes(http::verb::post, "/api/login") == small_body_bytes);
    CHECK(small_body_bytes == 4096);
    CHECK(c.app->max_body_bytes(http::verb::post, "/api/correct") == small_body_bytes);
    CHECK(c.app->max_body_bytes(http::verb::post, "/api/logout") == small_body_bytes);
    CHECK(c.app->max_body_bytes(http::verb::get, "/api/history?q=x") == small_body_bytes);
    CHECK(c.app->max_body_bytes(http::verb::get, "/api/scan") == small_body_bytes);
}

TEST_CASE("the page has no inline script and loads nothing from another host", "[console]") {
    Console c;
    const auto r = c.send(http::verb::get, "/");
    const std::string& page = r.body();
    REQUIRE(page.find("<script src=\"/static/console.js\"") != std::string::npos);
    CHECK(page.find("<script>") == std::string::npos);
    CHECK_FALSE(std::regex_search(page, std::regex(R"(\son[a-z]+\s*=)")));  // no onclick= and the like
    CHECK(page.find("style=") == std::string::npos);
    CHECK(page.find("http://") == std::string::npos);
    CHECK(page.find("https://") == std::string::npos);
    CHECK(page.find("//") == std::string::npos);
    const std::string js = c.send(http::verb::get, "/static/console.js").body();
    CHECK(js.find("innerHTML") == std::string::npos);  // mail reaches the page as text only
    CHECK(js.find("insertAdjacentHTML") == std::string::npos);
    CHECK(js.find("eval(") == std::string::npos);
}

TEST_CASE("without a session, pages answer 401 and APIs refuse", "[console]") {
    Console c;
    for (const char* page : {"/", "/status", "/scan", "/config", "/history"}) {
        const auto r = c.send(http::verb::get, page);
        CHECK(r.result() == http::status::unauthorized);
        CHECK(r.body().find("login-form") != std::string::npos);  // the sign-in form, and no data
    }
    for (const char* api : {"/api/status", "/api/config", "/api/session"}) {
        CHECK(c.send(http::verb::get, api).result() == http::status::unauthorized);
    }
    CHECK(c.send(http::verb::post, "/api/learn?class=spam", fixture("spam_investment.eml")).result() ==
          http::status::unauthorized);
    CHECK(c.send(http::verb::get, "/api/status", "", "forged-token").result() == http::status::unauthorized);
    CHECK(c.status_calls == 0);
    CHECK(c.stats().messages.spam == 5);
}

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

TEST_CASE("a state-changing request needs the session's CSRF token", "[console]") {
    Console c;
    const auto s = c.sign_in("root", admin_password);
    const auto other = c.sign_in("root", admin_password);
    const std::string msg = fixture("spam_investment.eml");
    CHECK(c.send(http::verb::post, "/api/learn?class=spam", msg, s.token).result() == http::status::forbidden);
    CHECK(c.send(http::verb::post, "/api/learn?class=spam", msg, s.token, other.csrf).result() ==
          http::status::forbidden);
    CHECK(c.send(http::verb::post, "/api/logout", "", s.token).result() == http::status::forbidden);
    CHECK(c.stats().messages.spam == 5);
    CHECK(c.send(http::verb::post, "/api/learn?class=spam", msg, s.token, s.csrf).result() == http::status::ok);
    CHECK(c.stats().messages.spam == 6);
}

TEST_CASE("a viewer sees, an admin acts", "[console]") {
    Console c;
    const auto v = c.sign_in("watcher", viewer_password);
    CHECK(c.send(http::verb::get, "/api/status", "", v.token).result() == http::status::ok);
    CHECK(c.send(http::verb::get, "/api/config", "", v.token).result() == http::status::ok);
    const std::string msg = fixture("spam_investment.eml");
    // A scan changes nothing: the viewer, offered the Scan page, may use it.
    const auto scanned = c.send(http::verb::post, "/api/scan", msg, v.token, v.csrf);
    CHECK(scanned.result() == http::status::ok);
    CHECK(json::parse(scanned.body()).contains("verdict"));
    CHECK(c.send(http::verb::post, "/api/learn?class=spam", msg, v.token, v.csrf).result() == http::status::forbidden);
    CHECK(c.send(http::verb::post, "/api/correct", json{{"signature", std::string(32, '0')}, {"class", "spam"}}.dump(),
                 v.token, v.csrf)
              .result() == http::status::forbidden);
    CHECK(c.stats().messages.spam == 5);
}

TEST_CASE("The audit line is one fixed format, every value one word", "[console]") {
    AuditEvent e;
    e.event = "sign-in";
    e.outcome = "failed";
    e.account = "admin\nconsole audit: event=sign-in outcome=ok";  // a name typed to forge a line
    e.client = "2001:db8::1";
    CHECK(audit_line(e) ==
          "console audit: event=sign-in outcome=failed account=admin?console?audit:?event?sign-in?outcome?ok role=- "
          "client=2001:db8::1 target=-");
    e.forwarded = "198.51.100.7";
    e.account = std::string(100, 'a');
    CHECK(audit_line(e) == "console audit: event=sign-in outcome=failed account=" + std::string(64, 'a') +
                               " role=- client=2001:db8::1 forwarded=198.51.100.7 target=-");
    CHECK(audit_word("") == "-");
    CHECK(audit_word("spam:0123abcd") == "spam:0123abcd");
}

TEST_CASE("Sign-ins, sign-outs, scans, learns, corrections and account changes are audited, with who and from where",
          "[console]") {
    Console c;
    auto last = [&] { return c.audited.empty() ? std::string() : c.audited.back(); };
    // A failed sign-in: the name as given, no role, the client.
    CHECK(c.send(http::verb::post, "/api/login", json{{"name", "root"}, {"password", "guess"}}.dump(), "", "",
                 "application/json", "192.0.2.44")
              .result() == http::status::unauthorized);
    CHECK(last() == "console audit: event=sign-in outcome=failed account=root role=- client=192.0.2.44 target=-");
    const auto admin = c.sign_in("root", admin_password);
    CHECK(last() == "console audit: event=sign-in outcome=ok account=root role=admin client=192.0.2.1 target=-");
    const std::string msg = fixture("spam_investment.eml");
    const auto signature = engine::signature_text(engine::message_identity(engine::without_from_line(msg)));
    REQUIRE(c.send(http::verb::post, "/api/learn?class=spam", msg, admin.token, admin.csrf).result() == http::status::ok);
    CHECK(last() == "console audit: event=learn outcome=learned account=root role=admin client=192.0.2.1 target=spam:" +
                        signature);
    REQUIRE(c.send(http::verb::post, "/api/correct", json{{"signature", signature}, {"class", "ham"}}.dump(), admin.token,
                   admin.csrf)
                .result() == http::status::ok);
    // (No scan of it is recorded here, so the correction is kept until mailsiftd writes one.)
    CHECK(last() == "console audit: event=correct outcome=deferred account=root role=admin client=192.0.2.1 target=ham:" +
                        signature);
    REQUIRE(c.send(http::verb::post, "/api/scan", msg, admin.token, admin.csrf).result() == http::status::ok);
    CHECK(last().starts_with("console audit: event=scan outcome="));
    CHECK(last().ends_with(" account=root role=admin client=192.0.2.1 target=" + signature));
    // A viewer's correction is refused, and says so.
    const auto viewer = c.sign_in("watcher", viewer_password);
    CHECK(c.send(http::verb::post, "/api/correct", json{{"signature", signature}, {"class", "spam"}}.dump(), viewer.token,
                 viewer.csrf)
              .result() == http::status::forbidden);
    CHECK(last() == "console audit: event=correct outcome=forbidden account=watcher role=viewer client=192.0.2.1 target=-");
    CHECK(c.send(http::verb::post, "/api/logout", "", viewer.token, viewer.csrf).result() == http::status::ok);
    CHECK(last() == "console audit: event=sign-out outcome=ok account=watcher role=viewer client=192.0.2.1 target=-");
    // The limiter's refusals: five failures from one address, then 429.
    for (int i = 0; i < 6; ++i) {
        c.now += std::chrono::seconds(10);
        c.send(http::verb::post, "/api/login", json{{"name", "root"}, {"password", "guess"}}.dump(), "", "",
               "application/json", "192.0.2.45");
    }
    CHECK(last() == "console audit: event=sign-in outcome=limited account=root role=- client=192.0.2.45 target=-");
    // Behind a configured proxy, the address it forwarded for; anybody else's X-Forwarded-For is not believed.
    auto via = [&](const std::string& peer) {
        Request req{http::verb::post, "/api/login", 11};
        req.set(http::field::host, "console.example:8443");
        req.set(http::field::content_type, "application/json");
        req.set("X-Forwarded-For", "203.0.113.9, 198.51.100.23");
        req.body() = json{{"name", "nobody"}, {"password", "x"}}.dump();
        req.prepare_payload();
        c.now += std::chrono::seconds(10);
        c.app->handle(req, peer, c.now);
        return last();
    };
    CHECK(via("192.0.2.80") ==
          "console audit: event=sign-in outcome=failed account=nobody role=- client=192.0.2.80 forwarded=198.51.100.23 target=-");
    CHECK(via("192.0.2.81") == "console audit: event=sign-in outcome=failed account=nobody role=- client=192.0.2.81 target=-");
    // An account added, its role changed, removed with mailsift console-user: seen and audited at the next request.
    auto touch = [&](auto change) {
        update_accounts(c.users, std::nullopt, change);
        c.send(http::verb::get, "/api/status", "", admin.token);
    };
    touch([](Accounts& a) { a.add("carol", Role::viewer, "carol's long password"); });
    CHECK(std::count(c.audited.begin(), c.audited.end(),
                     "console audit: event=account outcome=added account=carol role=viewer client=local target=-") == 1);
    touch([](Accounts& a) { a.set_role("carol", Role::admin); });
    CHECK(last() == "console audit: event=account outcome=role-changed account=carol role=admin client=local target=-");
    touch([](Accounts& a) { a.remove("carol"); });
    CHECK(last() == "console audit: event=account outcome=removed account=carol role=admin client=local target=-");
    // Every answer is counted by its status.
    CHECK(c.answers[401] >= 1);
    CHECK(c.answers[403] == 1);
    CHECK(c.answers[429] >= 1);
    CHECK(c.answers[200] >= 5);
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

TEST_CASE("learn trains once, and the other class moves it", "[console]") {
    Console c;
    const auto s = c.sign_in("root", admin_password);
    const std::string msg = fixture("spam_investment.eml");
    auto learn = [&](const char* cls) {
        const auto r = c.send(http::verb::post, std::string("/api/learn?class=") + cls, msg, s.token, s.csrf,
                              "message/rfc822");
        REQUIRE(r.result() == http::status::ok);
        return json::parse(r.body())["result"].get<std::string>();
    };
    CHECK(learn("spam") == "learned");
    CHECK(c.stats().messages.spam == 6);
    CHECK(learn("spam") == "already learned");
    CHECK(c.stats().messages.spam == 6);
    CHECK(learn("ham") == "moved from the other class");
    CHECK(c.stats().messages.spam == 5);
    CHECK(c.stats().messages.ham == 6);
    CHECK(c.send(http::verb::post, "/api/learn?class=eggs", msg, s.token, s.csrf).result() == http::status::bad_request);
    CHECK(c.send(http::verb::post, "/api/learn?class=spam", "", s.token, s.csrf).result() ==
          http::status::unprocessable_entity);
    CHECK(c.send(http::verb::post, "/api/learn?class=spam", "not a message at all", s.token, s.csrf).result() ==
          http::status::unprocessable_entity);
    CHECK(c.stats().messages.ham == 6);
}

TEST_CASE("a scan's explanation adds up to its score and changes nothing", "[console]") {
    Console c;
    const auto s = c.sign_in("root", admin_password);
    const auto r = c.send(http::verb::post, "/api/scan", fixture("spam_money_offer.eml"), s.token, s.csrf,
                          "message/rfc822");
    REQUIRE(r.result() == http::status::ok);
    const json j = json::parse(r.body());
    const auto direct = c.filter->classify(fixture("spam_money_offer.eml"));
    CHECK(j["verdict"] == model::to_string(direct.score.verdict));
    CHECK(j["log_odds"].get<double>() == Approx(direct.score.log_odds));
    REQUIRE(j.contains("linear"));  // the default scorer
    const auto& l = j["linear"];
    CHECK(l["bias"].get<double>() + l["nb_term"].get<double>() + l["slots_sum"].get<double>() ==
          Approx(j["log_odds"].get<double>()).margin(1e-9));
    double listed = l["others_sum"].get<double>();
    for (const auto& x : l["toward_spam"]) listed += x["weight"].get<double>();
    for (const auto& x : l["toward_ham"]) listed += x["weight"].get<double>();
    CHECK(listed == Approx(l["slots_sum"].get<double>()).margin(1e-6));
    // And the naive-Bayes input: prior, the features listed, the others, to its log-odds.
    const json& nb = j["nb_sum"];
    double nb_listed = 0.0;
    for (const auto* side : {&j["toward_spam"], &j["toward_ham"]}) {
        for (const auto& x : *side) nb_listed += x["log_odds"].get<double>();
    }
    CHECK(nb["listed"].get<double>() == Approx(nb_listed).margin(1e-6));
    CHECK(nb["log_odds"].get<double>() == Approx(l["nb_log_odds"].get<double>()));
    CHECK(nb["prior"].get<double>() == Approx(j["model"]["prior_log_odds"].get<double>()));
    CHECK(nb["prior"].get<double>() + nb["listed"].get<double>() + nb["others"].get<double>() ==
          Approx(nb["log_odds"].get<double>()).margin(1e-6));
    CHECK(j["signature"].get<std::string>().size() == 32);
    CHECK(j["subject"] == "YOU HAVE WON $1,000,000 !!!");
    // Saved from a mailbox file, with its "From " line: the same message.
    const auto saved = c.send(http::verb::post, "/api/scan",
                              "From someone@example.org Thu Aug 22 12:46:39 2002\n" + fixture("spam_money_offer.eml"),
                              s.token, s.csrf, "message/rfc822");
    REQUIRE(saved.result() == http::status::ok);
    CHECK(json::parse(saved.body())["log_odds"] == j["log_odds"]);
    CHECK(c.stats().messages.spam == 5);
    CHECK(c.stats().messages.ham == 5);
}

TEST_CASE("status comes from the daemon, with the corrections, and configuration hides passwords", "[console]") {
    Console c;
    const auto s = c.sign_in("watcher", viewer_password);
    const json st = json::parse(c.send(http::verb::get, "/api/status", "", s.token).body());
    CHECK(st["messages"]["total"] == 7);
    CHECK(st["corrections"]["day"]["false_positives"] == 0);
    CHECK(c.status_calls == 1);

    engine::Settings settings = engine::parse_settings(
        "database = postgresql://mailsift:s3cret-word@db.example/mailsift\nreasons = 7\n", "test.conf");
    App app(AppOptions{.accounts = c.users, .database = c.db, .config = "/etc/mailsift/mailsift.conf",
                       .settings = settings, .tls = false, .trusted_proxies = {}, .sessions = {}, .sign_in = {},
                       .devices = {}},
            Services{});
    Request login{http::verb::post, "/api/login", 11};
    login.set(http::field::content_type, "application/json");
    login.body() = json{{"name", "watcher"}, {"password", viewer_password}}.dump();
    login.prepare_payload();
    const auto in = app.handle(login, "192.0.2.1", c.now);
    REQUIRE(in.result() == http::status::ok);
    const std::string cookie = str(in[http::field::set_cookie]);
    Request get{http::verb::get, "/api/config", 11};
    get.set(http::field::cookie, cookie.substr(0, cookie.find(';')));
    const auto r = app.handle(get, "192.0.2.1", c.now);
    REQUIRE(r.result() == http::status::ok);
    CHECK(r.body().find("s3cret-word") == std::string::npos);
    const json cfg = json::parse(r.body());
    CHECK(cfg["given"][1]["key"] == "reasons");
    CHECK(cfg["given"][1]["value"] == "7");
    // Every other setting, with the value it has (its default), as the file would say it.
    std::map<std::string, std::string> defaults;
    for (const auto& d : cfg["defaults"]) defaults[d["key"].get<std::string>()] = d["value"].get<std::string>();
    CHECK(defaults.size() + 2 == engine::setting_names().size());
    CHECK(defaults.at("alpha") == engine::setting_value(engine::Settings{}, "alpha"));
    CHECK(defaults.at("limits.max_message_bytes") == "4M");
    CHECK(defaults.at("reject_threshold") == "off");
    CHECK(defaults.count("reasons") == 0);  // given, so listed with the given ones
}

TEST_CASE("Older reaches every line of a burst scanned within one second, and only once", "[console]") {
    Console c;
    std::set<std::string> recorded;
    {
        store::Recording r;
        for (int n = 0; n < 250; ++n) {
            store::HistoryEntry e;
            e.signature = engine::message_digest("From: burst@example.org\nSubject: " + std::to_string(n) + "\n\nbody\n");
            e.scanned_at = 1700000000;
            e.action = "accepted";
            e.subject = "burst " + std::to_string(n);
            r.history.push_back(e);
            recorded.insert(engine::signature_text(*e.signature));
        }
        store::open(c.db.string(), store::Database::Mode::read_write)->record(r);
    }
    const auto viewer = c.sign_in("watcher", viewer_password);
    std::set<std::string> seen;
    std::string next = "?q=burst";
    int pages = 0;
    for (;;) {
        const auto r = c.send(http::verb::get, "/api/history" + next, "", viewer.token);
        REQUIRE(r.result() == http::status::ok);
        const json page = json::parse(r.body());
        ++pages;
        REQUIRE(pages <= 3);
        for (const auto& e : page["entries"]) REQUIRE(seen.insert(e["signature"].get<std::string>()).second);
        if (page["next"].is_null()) break;
        CHECK(page["entries"].size() == 100);
        CHECK(page["count"] == 250);
        next = "?q=burst&cursor=" + page["next"]["cursor"].get<std::string>();
    }
    CHECK(pages == 3);
    CHECK(seen == recorded);
    // The form an earlier console paged with (before = the line's time, after = its id) still pages: a
    // second's lines newest first, the last recorded first.
    const auto first = json::parse(c.send(http::verb::get, "/api/history?q=burst", "", viewer.token).body());
    CHECK(first["entries"][0]["subject"] == "burst 249");
    CHECK(first["entries"][1]["subject"] == "burst 248");
    const auto& last = first["entries"].back();
    const auto legacy = c.send(http::verb::get,
                               "/api/history?q=burst&before=1700000000&after=" + std::to_string(last["id"].get<std::int64_t>()),
                               "", viewer.token);
    REQUIRE(legacy.result() == http::status::ok);
    const json second = json::parse(legacy.body());
    REQUIRE(second["entries"].size() == 100);
    CHECK(second["entries"][0]["subject"] == "burst 149");
    for (const auto& e : second["entries"]) CHECK(e["id"].get<std::int64_t>() < last["id"].get<std::int64_t>());
    CHECK(c.send(http::verb::get, "/api/history?cursor=1_2_3", "", viewer.token).result() == http::status::bad_request);
    // A whole second alone, as the console asked before, starts below that second.
    const auto by_time = c.send(http::verb::get, "/api/history?before=1700000000", "", viewer.token);
    REQUIRE(by_time.result() == http::status::ok);
    CHECK(json::parse(by_time.body())["entries"].empty());
    CHECK(c.send(http::verb::get, "/api/history?before=1700000000&after=xyz", "", viewer.token).result() ==
          http::status::bad_request);
    CHECK(c.send(http::verb::get, "/api/history?after=" + std::string(32, 'a'), "", viewer.token).result() ==
          http::status::bad_request);
}

TEST_CASE("History lists what mailsiftd recorded, and a click corrects it as mailsift correct does", "[console]") {
    Console c;
    const std::string raw = fixture("ham_meeting_notes.eml");
    const auto scored = c.filter->classify(raw, nullptr, true, true);
    const auto id = engine::message_digest(raw);
    REQUIRE(scored.parts);
    {
        store::Recording r;
        store::HistoryEntry e = add_scan(r, raw, scored);
        e.from = "Carol <carol@university.example>";
        e.subject = "Notes & <b>minutes</b>";
        e.explanation = engine::encode(*scored.parts);
        r.history.push_back(e);
        e.explanation.clear();  // a line written before explanations were kept
        e.signature = engine::message_digest("From: x@y\n\nother\n");
        e.scanned_at = 900;
        e.verdict = model::Verdict::spam;
        e.subject = "Cheap pills";
        r.history.push_back(e);
        const auto w = store::open(c.db.string(), store::Database::Mode::read_write);
        w->record(r);
    }
    const auto viewer = c.sign_in("watcher", viewer_password);
    auto list = [&](const std::string& query) {
        const auto r = c.send(http::verb::get, "/api/history" + query, "", viewer.token);
        REQUIRE(r.result() == http::status::ok);
        return json::parse(r.body())["entries"];
    };
    auto rows = list("");
    REQUIRE(rows.size() == 2);
    CHECK(rows[0]["signature"] == engine::signature_text(id));
    CHECK(rows[0]["id"].is_number_integer());
    CHECK(rows[0]["id"] != rows[1]["id"]);
    CHECK(rows[0]["subject"] == "Notes & <b>minutes</b>");
    CHECK(rows[0]["scanned_at"] == 1000);
    CHECK(list("?verdict=spam").size() == 1);
    CHECK(list("?q=%3Cb%3Eminutes").size() == 1);  // "<b>minutes", URL-encoded
    CHECK(list("?q=cheap+PILLS").size() == 1);
    CHECK(list("?q=nobody").empty());
    CHECK(list("?before=1000").size() == 1);
    CHECK(c.send(http::verb::get, "/api/history?verdict=eggs", "", viewer.token).result() == http::status::bad_request);
    CHECK(c.send(http::verb::get, "/api/history").result() == http::status::unauthorized);
    CHECK_FALSE(rows[0].contains("explanation"));  // a page of the list carries none

    // One click on a line: its explanation as mailsiftd kept it, which a viewer may read, and which adds up.
    auto explained = [&](const std::string& signature) {
        return c.send(http::verb::get, "/api/explanation?signature=" + signature, "", viewer.token);
    };
    const auto r = explained(engine::signature_text(id));
    REQUIRE(r.result() == http::status::ok);
    // By the line's own id, as the console asks now: the same line; an id no line has: 404; not an id: 400.
    const auto by_id = c.send(http::verb::get, "/api/explanation?id=" + std::to_string(rows[0]["id"].get<std::int64_t>()),
                              "", viewer.token);
    REQUIRE(by_id.result() == http::status::ok);
    CHECK(json::parse(by_id.body())["subject"] == "Notes & <b>minutes</b>");
    CHECK(json::parse(by_id.body())["explanation"].is_object());
    CHECK(c.send(http::verb::get, "/api/explanation?id=999999", "", viewer.token).result() == http::status::not_found);
    CHECK(c.send(http::verb::get, "/api/explanation?id=1x", "", viewer.token).result() == http::status::bad_request);
    const json line = json::parse(r.body());
    CHECK(line["subject"] == "Notes & <b>minutes</b>");
    const json& x = line["explanation"];
    CHECK(x["log_odds"].get<double>() == Approx(scored.score.log_odds));
    REQUIRE(x.contains("linear"));  // the default scorer
    const json& l = x["linear"];
    double sum = l["bias"].get<double>() + l["nb_term"].get<double>() + l["others_sum"].get<double>();
    for (const auto& w : l["toward_spam"]) sum += w["weight"].get<double>();
    for (const auto& w : l["toward_ham"]) sum += w["weight"].get<double>();
    CHECK(sum == Approx(scored.score.log_odds).margin(1e-6));
    CHECK(l["toward_spam"].size() + l["toward_ham"].size() > 0);
    CHECK(x["toward_ham"].size() == scored.toward_ham.size());  // the naive-Bayes input's features
    // The naive-Bayes part adds up to the naive-Bayes log-odds it feeds the linear scorer with.
    const json& nb = x["nb_sum"];
    double listed = 0.0;
    for (const auto* side : {&x["toward_spam"], &x["toward_ham"]}) {
        for (const auto& r : *side) listed += r["log_odds"].get<double>();
    }
    CHECK(nb["listed"].get<double>() == Approx(listed).margin(1e-6));
    CHECK(nb["prior"].get<double>() == Approx(x["prior_log_odds"].get<double>()));
    CHECK(nb["log_odds"].get<double>() == Approx(l["nb_log_odds"].get<double>()));
    CHECK(nb["prior"].get<double>() + nb["listed"].get<double>() + nb["others"].get<double>() ==
          Approx(nb["log_odds"].get<double>()).margin(1e-6));
    const auto older = explained(engine::signature_text(engine::message_digest("From: x@y\n\nother\n")));
    REQUIRE(older.result() == http::status::ok);
    CHECK(json::parse(older.body())["explanation"].is_null());
    CHECK(explained(std::string(32, '0')).result() == http::status::not_found);
    CHECK(explained("nonsense").result() == http::status::bad_request);
    CHECK(c.send(http::verb::get, "/api/explanation?signature=" + engine::signature_text(id)).result() ==
          http::status::unauthorized);

    const std::string spam_body = json{{"signature", engine::signature_text(id)}, {"class", "spam"}}.dump();
    CHECK(c.send(http::verb::post, "/api/correct", spam_body, viewer.token, viewer.csrf).result() == http::status::forbidden);
    const auto admin = c.sign_in("root", admin_password);
    CHECK(c.send(http::verb::post, "/api/correct", spam_body, admin.token).result() == http::status::forbidden);
    CHECK(c.stats().messages.spam == 5);
    auto correct = [&](const std::string& body) {
        const auto r = c.send(http::verb::post, "/api/correct", body, admin.token, admin.csrf);
        REQUIRE(r.result() == http::status::ok);
        return json::parse(r.body())["result"].get<std::string>();
    };
    CHECK(correct(spam_body) == "learned");
    CHECK(c.stats().messages.spam == 6);
    CHECK(correct(spam_body) == "already learned");
    CHECK(c.stats().messages.spam == 6);
    // The other way: the spam correction undone, then learned as ham.
    CHECK(correct(json{{"signature", engine::signature_text(id)}, {"class", "ham"}}.dump()) ==
          "its correction the other way undone; learned");
    CHECK(c.stats().messages.spam == 5);
    CHECK(c.stats().messages.ham == 6);
    CHECK(c.send(http::verb::post, "/api/correct", json{{"signature", "xyz"}, {"class", "spam"}}.dump(), admin.token,
                 admin.csrf)
              .result() == http::status::bad_request);
    // The correction stays on the line after a reload: the latest, by whom, when.
    rows = list("");
    REQUIRE(rows[0]["signature"] == engine::signature_text(id));
    REQUIRE(rows[0]["corrected"].is_object());
    CHECK(rows[0]["corrected"]["class"] == "ham");
    CHECK(rows[0]["corrected"]["by"] == "console:root");
    CHECK(rows[0]["corrected"]["at"].get<std::int64_t>() > 1000);
    CHECK(rows[1]["corrected"].is_null());
    // Said ham, corrected to spam, then back to ham: no false negative on the status page.
    REQUIRE(scored.score.verdict == model::Verdict::ham);
    const auto status = c.send(http::verb::get, "/api/status", "", viewer.token);
    REQUIRE(status.result() == http::status::ok);
    const json st = json::parse(status.body());
    CHECK(st["corrections"]["day"]["false_negatives"] == 0);
    CHECK(st["corrections"]["day"]["false_positives"] == 0);
}

TEST_CASE("History filters by each field, sorts by time or P(spam), counts the matches and exports them",
          "[console]") {
    Console c;
    {
        store::Recording r;
        for (int n = 0; n < 12; ++n) {
            store::HistoryEntry e;
            e.signature = engine::message_digest("Subject: line " + std::to_string(n) + "\n\nbody\n");
            e.scanned_at = 2000 + n;
            e.verdict = n % 3 == 0 ? model::Verdict::spam : model::Verdict::ham;
            e.probability = n / 20.0;
            e.action = n % 3 == 0 ? "rejected" : "accepted";
            e.sender = "<sender" + std::to_string(n) + "@example.org>";
            e.recipients = "<rcpt" + std::to_string(n % 2) + "@example.net>";
            e.to = n == 5 ? "Someone Else <else@example.com>" : "";
            e.subject = n == 7 ? "=HYPERLINK(\"http://x\"), \"quoted\"" : "line " + std::to_string(n);
            e.queue_id = "4Q" + std::to_string(n) + "ABC";
            e.message_id = "<m" + std::to_string(n) + "@example.org>";
            e.client_address = "192.0.2." + std::to_string(n);
            e.helo = "mx" + std::to_string(n) + ".example.org";
            r.history.push_back(e);
        }
        store::HistoryEntry skipped;
        skipped.scanned_at = 2100;
        skipped.scored = false;
        skipped.action = "skipped";
        skipped.reason = "authenticated sender";
        skipped.sender = "<user@example.org>";
        r.history.push_back(skipped);
        store::open(c.db.string(), store::Database::Mode::read_write)->record(r);
    }
    const auto viewer = c.sign_in("watcher", viewer_password);
    auto ask = [&](const std::string& query) { return c.history_page(query, viewer.token); };
    auto subjects = [&](const std::string& query) {
        std::vector<std::string> out;
        const json page = ask(query);  // kept: a range over a temporary's member would dangle
        for (const auto& e : page["entries"]) out.push_back(e["queue_id"].get<std::string>());
        return out;
    };
    CHECK(ask("")["count"] == 13);
    CHECK(subjects("?queue_id=4Q3ABC") == std::vector<std::string>{"4Q3ABC"});
    CHECK(subjects("?queue_id=4Q3").empty());  // a queue ID is matched whole
    CHECK(subjects("?message_id=m4%40example.org") == std::vector<std::string>{"4Q4ABC"});
    CHECK(subjects("?message_id=%3Cm4%40example.org%3E") == std::vector<std::string>{"4Q4ABC"});
    CHECK(subjects("?sender=SENDER11") == std::vector<std::string>{"4Q11ABC"});
    CHECK(subjects("?recipient=else%40example.com") == std::vector<std::string>{"4Q5ABC"});  // the To: header
    CHECK(ask("?recipient=rcpt1")["count"] == 6);
    CHECK(subjects("?subject=line+10") == std::vector<std::string>{"4Q10ABC"});
    CHECK(ask("?verdict=spam")["count"] == 4);
    CHECK(ask("?action=rejected")["count"] == 4);
    CHECK(ask("?since=2003&until=2006")["count"] == 3);
    const json skipped = ask("?action=skipped");
    REQUIRE(skipped["entries"].size() == 1);
    CHECK(skipped["entries"][0]["scored"] == false);
    CHECK(skipped["entries"][0]["verdict"].is_null());
    CHECK(skipped["entries"][0]["reason"] == "authenticated sender");
    CHECK(skipped["entries"][0]["signature"].is_null());  // let through unscored: no signature, an id of its own
    CHECK(skipped["entries"][0]["id"].is_number_integer());
    const json one = ask("?queue_id=4Q2ABC")["entries"][0];
    CHECK(one["client_address"] == "192.0.2.2");
    CHECK(one["helo"] == "mx2.example.org");
    CHECK(one["message_id"] == "<m2@example.org>");
    // Sorted by P(spam), paged with the cursor: every scored line once, in order; the skipped one has none.
    for (const std::string order : {"spammiest", "hammiest", "oldest", "newest"}) {
        std::vector<double> ps;
        std::vector<std::int64_t> times;
        std::string query = "?limit=5&order=" + order;
        for (int pages = 0; pages < 5; ++pages) {
            const json page = ask(query);
            CHECK(page["count"] == (order == "spammiest" || order == "hammiest" ? 12 : 13));
            for (const auto& e : page["entries"]) {
                ps.push_back(e["probability"].is_null() ? -1.0 : e["probability"].get<double>());
                times.push_back(e["scanned_at"].get<std::int64_t>());
            }
            if (page["next"].is_null()) break;
            query = "?limit=5&order=" + order + "&cursor=" + page["next"]["cursor"].get<std::string>();
        }
        INFO(order);
        if (order == "spammiest") {
            CHECK(ps.size() == 12);
            CHECK(std::is_sorted(ps.rbegin(), ps.rend()));
        } else if (order == "hammiest") {
            CHECK(ps.size() == 12);
            CHECK(std::is_sorted(ps.begin(), ps.end()));
        } else {
            CHECK(times.size() == 13);
            if (order == "oldest") CHECK(std::is_sorted(times.begin(), times.end()));
            else CHECK(std::is_sorted(times.rbegin(), times.rend()));
        }
    }
    CHECK(c.send(http::verb::get, "/api/history?order=random", "", viewer.token).result() == http::status::bad_request);
    CHECK(c.send(http::verb::get, "/api/history?action=eaten", "", viewer.token).result() == http::status::bad_request);
    CHECK(c.send(http::verb::get, "/api/history?since=yesterday", "", viewer.token).result() == http::status::bad_request);

    // The export: the same filter, every match, as an attachment.
    const auto csv = c.send(http::verb::get, "/api/history/export?format=csv&recipient=rcpt1&order=oldest", "", viewer.token);
    REQUIRE(csv.result() == http::status::ok);
    CHECK(std::string(csv[http::field::content_type]).rfind("text/csv", 0) == 0);
    CHECK(std::string(csv[http::field::content_disposition]).find("attachment; filename=\"mailsift-history-") == 0);
    const std::string body = csv.body();
    CHECK(body.rfind("time_utc,scanned_at,id,signature,queue_id,message_id,verdict,probability,action,", 0) == 0);
    CHECK(std::count(body.begin(), body.end(), '\n') == 1 + 6);
    CHECK(body.find(",4Q1ABC,") < body.find(",4Q3ABC,"));  // oldest first
    // A Subject a spreadsheet would run is text, and quotes are doubled.
    CHECK(body.find("\"'=HYPERLINK(\"\"http://x\"\"), \"\"quoted\"\"\"") != std::string::npos);
    const auto as_json = c.send(http::verb::get, "/api/history/export?format=json&verdict=spam", "", viewer.token);
    REQUIRE(as_json.result() == http::status::ok);
    const json exported = json::parse(as_json.body());
    REQUIRE(exported.is_array());
    CHECK(exported.size() == 4);
    CHECK(exported[0]["queue_id"] == "4Q9ABC");
    CHECK(c.send(http::verb::get, "/api/history/export?format=xls", "", viewer.token).result() == http::status::bad_request);
    CHECK(c.send(http::verb::get, "/api/history/export?format=csv").result() == http::status::unauthorized);
}
