// App::authenticated(): what the server keeps a connection by when it is full
// (server.hpp, slots.hpp) — true after a request with a valid session or a
// successful sign-in, and after nothing else.
#include "mailsift/console/app.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "../support/temp_dir.hpp"

namespace fs = std::filesystem;
namespace http = boost::beast::http;
using namespace mailsift;
using namespace mailsift::console;
using nlohmann::json;

namespace {

const std::string password = "admin password 1";

struct SignInConsole {
    testing::TempDir dir{"console-authenticated"};
    fs::path users = dir.path / "console-users";
    std::unique_ptr<App> app;
    Clock::time_point now = Clock::now();

    SignInConsole() {
        update_accounts(users, std::nullopt, [](Accounts& a) { a.add("root", Role::admin, password); });
        app = std::make_unique<App>(AppOptions{.accounts = users, .database = dir.path / "model.db", .config = {},
                                               .settings = {}, .tls = false, .trusted_proxies = {}, .sessions = {},
                                               .sign_in = {}, .devices = {}},
                                    Services{});
    }

    Response send(http::verb method, const std::string& target, const std::string& body = "",
                  const std::string& token = "", const std::string& csrf = "") {
        Request req{method, target, 11};
        req.set(http::field::host, "127.0.0.1:8080");
        if (!token.empty()) req.set(http::field::cookie, "mailsift_session=" + token);
        if (!csrf.empty()) req.set("X-CSRF-Token", csrf);
        if (method == http::verb::post) req.set(http::field::content_type, "application/json");
        req.body() = body;
        req.prepare_payload();
        return app->handle(req, "192.0.2.1", now);
    }
};

std::string token_of(const Response& r) {
    const std::string cookie(r[http::field::set_cookie]);
    const auto start = cookie.find('=') + 1;
    return cookie.substr(start, cookie.find(';') - start);
}

}  // namespace

TEST_CASE("A request counts as authenticated with a valid session or a sign-in, never without", "[console]") {
    SignInConsole c;
    CHECK_FALSE(c.app->authenticated());
    for (const char* target : {"/", "/status", "/api/session", "/api/status", "/static/console.js", "/nowhere"}) {
        c.send(http::verb::get, target);
        CHECK_FALSE(c.app->authenticated());
    }
    c.send(http::verb::get, "/api/session", "", "forged-token");
    CHECK_FALSE(c.app->authenticated());
    const auto wrong = c.send(http::verb::post, "/api/login", json{{"name", "root"}, {"password", "guess"}}.dump());
    REQUIRE(wrong.result() == http::status::unauthorized);
    CHECK_FALSE(c.app->authenticated());

    const auto in = c.send(http::verb::post, "/api/login", json{{"name", "root"}, {"password", password}}.dump());
    REQUIRE(in.result() == http::status::ok);
    CHECK(c.app->authenticated());
    const std::string token = token_of(in);
    const std::string csrf = json::parse(in.body())["csrf"];

    // A request after it without the cookie is not, whatever came before on the App.
    c.send(http::verb::get, "/api/session");
    CHECK_FALSE(c.app->authenticated());
    CHECK(c.send(http::verb::get, "/api/session", "", token).result() == http::status::ok);
    CHECK(c.app->authenticated());
    CHECK(c.send(http::verb::get, "/status", "", token).result() == http::status::ok);
    CHECK(c.app->authenticated());

    // Signed out, the session no longer counts.
    CHECK(c.send(http::verb::post, "/api/logout", "", token, csrf).result() == http::status::ok);
    c.send(http::verb::get, "/api/session", "", token);
    CHECK_FALSE(c.app->authenticated());
}
