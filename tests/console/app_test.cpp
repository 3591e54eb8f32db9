// The console's routes, request by request, on a real SQLite model and a real
// accounts file: every security rule of a request has a case here that fails
// without it (headers, body sizes, the page, no session, CSRF, roles), the audit
// trail says who did what from where, learning trains the model exactly once, a
// scan explains its score, and the status and configuration pages hide
// passwords. Signing in and sessions are sign_in_test.cpp's, the History
// history_list_test.cpp's.
#include "mailsift/console/app.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "mailsift/console/accounts.hpp"
#include "mailsift/console/audit.hpp"
#include "mailsift/engine/scorer.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/message_checks.hpp"
#include "mailsift/engine/settings.hpp"
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
    // Its scripts, each a file of the console's own, in the order they run: what
    // every page shares first, each page's, and the start (session.js) last.
    std::vector<std::string> scripts;
    const std::regex script(R"re(<script src="/static/([a-z]+\.js)" defer></script>)re");
    for (auto i = std::sregex_iterator(page.begin(), page.end(), script); i != std::sregex_iterator(); ++i) {
        scripts.push_back((*i)[1]);
    }
    CHECK(scripts == std::vector<std::string>{"console.js", "status.js", "history.js", "explain.js", "corrections.js",
                                              "scan.js", "users.js", "config.js", "session.js"});
    std::size_t tags = 0;
    for (auto at = page.find("<script"); at != std::string::npos; at = page.find("<script", at + 1)) ++tags;
    CHECK(tags == scripts.size());  // no other script element
    for (const auto& name : scripts) {
        INFO(name);
        const auto js = c.send(http::verb::get, "/static/" + name);
        REQUIRE(js.result() == http::status::ok);
        CHECK(str(js[http::field::content_type]).starts_with("text/javascript"));
        CHECK(js.body().find("innerHTML") == std::string::npos);  // mail reaches the page as text only
        CHECK(js.body().find("insertAdjacentHTML") == std::string::npos);
        CHECK(js.body().find("eval(") == std::string::npos);
    }
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
