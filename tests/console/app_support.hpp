// What the console's App tests share: a trained model, an accounts file with
// an admin and a viewer, and an App over both, with its audit lines kept.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../support/paths.hpp"
#include "../support/temp_dir.hpp"
#include "mailsift/console/app.hpp"
#include "mailsift/engine/filter.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/trainer.hpp"
#include "mailsift/store/database.hpp"

namespace console_test {

namespace fs = std::filesystem;
namespace http = boost::beast::http;
using namespace mailsift;
using namespace mailsift::console;
using nlohmann::json;

inline std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline std::string str(boost::beast::string_view v) { return std::string(v.data(), v.size()); }

inline const std::string admin_password = "admin password 1";
inline const std::string viewer_password = "viewer password 1";

// A trained model, an accounts file with an admin and a viewer, and an App over both.
struct Console {
    testing::TempDir dir{"console-app"};
    fs::path db = dir.path / "model.db";
    fs::path users = dir.path / "console-users";
    engine::Settings settings;
    std::unique_ptr<store::Database> read_db;
    std::shared_ptr<engine::Filter> filter;
    std::unique_ptr<App> app;
    Clock::time_point now = Clock::now();
    int status_calls = 0;
    std::vector<std::string> audited;         // the audit lines, in order
    std::map<unsigned, int> answers;          // answers by status

    explicit Console(bool tls = false, engine::PerUser per_user = engine::PerUser::off) {
        settings.train_margin = 0;  // learn every message given
        settings.per_user = per_user;
        {
            const auto w = store::open(db.string(), store::Database::Mode::read_write);
            engine::Trainer t(*w, settings);
            for (const char* name : {"s1", "s2", "s3", "s4", "s5"}) {
                const auto raw = slurp(fs::path(MAILSIFT_TEST_DATA) / "corpus" / (std::string(name) + ".eml"));
                t.learn(raw, raw.size(), store::Class::spam, 1);
            }
            for (const char* name : {"h1", "h2", "h3", "h4", "h5"}) {
                const auto raw = slurp(fs::path(MAILSIFT_TEST_DATA) / "corpus" / (std::string(name) + ".eml"));
                t.learn(raw, raw.size(), store::Class::ham, 1);
            }
            t.commit();
        }
        update_accounts(users, std::nullopt, [](Accounts& a) {
            a.add("root", Role::admin, admin_password);
            a.add("watcher", Role::viewer, viewer_password);
        });
        read_db = store::open(db.string(), store::Database::Mode::read_only);
        filter = std::make_shared<engine::Filter>(*read_db, settings);
        filter->refresh();
        Services services{.status = [this] { ++status_calls; return json{{"messages", {{"total", 7}}}}; },
                          .model = [this] { return filter->model(); },
                          .audit = [this](const AuditEvent& e) { audited.push_back(audit_line(e)); },
                          .answered = [this](unsigned status) { ++answers[status]; }};
        app = std::make_unique<App>(AppOptions{.accounts = users, .database = db, .config = {}, .settings = settings,
                                               .tls = tls, .trusted_proxies = {"192.0.2.80"}, .sessions = {},
                                               .sign_in = {}, .devices = {}},
                                    std::move(services));
    }

    Response send(http::verb method, const std::string& target, const std::string& body = "",
                  const std::string& cookie = "", const std::string& csrf = "",
                  const std::string& type = "application/json", const std::string& client = "192.0.2.1") {
        Request req{method, target, 11};
        req.set(http::field::host, "console.example:8443");
        if (!cookie.empty()) req.set(http::field::cookie, "other=1; mailsift_session=" + cookie);
        if (!csrf.empty()) req.set("X-CSRF-Token", csrf);
        if (!type.empty() && method == http::verb::post) req.set(http::field::content_type, type);
        req.body() = body;
        req.prepare_payload();
        return app->handle(req, client, now);
    }

    struct SignedIn {
        std::string token, csrf, set_cookie, device_cookie;
    };
    SignedIn sign_in(const std::string& name, const std::string& password) {
        const auto r = send(http::verb::post, "/api/login", json{{"name", name}, {"password", password}}.dump());
        REQUIRE(r.result() == http::status::ok);
        SignedIn s;
        s.set_cookie = str(r[http::field::set_cookie]);
        for (const auto& f : r) {
            if (f.name() == http::field::set_cookie && str(f.value()).starts_with("mailsift_device=")) {
                s.device_cookie = str(f.value());
            }
        }
        const auto start = s.set_cookie.find('=') + 1;
        s.token = s.set_cookie.substr(start, s.set_cookie.find(';') - start);
        s.csrf = json::parse(r.body())["csrf"];
        return s;
    }

    // GET /api/history + `query` as `token`, which must answer 200: its JSON.
    json history_page(const std::string& query, const std::string& token) {
        const auto r = send(http::verb::get, "/api/history" + query, "", token);
        INFO(query << ": " << r.body());
        REQUIRE(r.result() == http::status::ok);
        return json::parse(r.body());
    }

    store::Statistics stats() {
        const auto d = store::open(db.string(), store::Database::Mode::read_only);
        return d->statistics();
    }
};

inline std::string fixture(const std::string& name) { return slurp(fs::path(MAILSIFT_TEST_DATA) / "messages" / name); }

// Adds to `r` the scan of `raw` as mailsiftd's recorder writes it, and
// returns its history line (signature, time 1000, verdict, the envelope of
// carol's meeting notes), for the caller to change and add.
inline store::HistoryEntry add_scan(store::Recording& r, const std::string& raw, const engine::Classification& scored) {
    const auto id = engine::message_digest(raw);
    r.scans.push_back({id, 1000, scored.score.verdict, scored.features});
    store::HistoryEntry e;
    e.signature = id;
    e.scanned_at = 1000;
    e.verdict = scored.score.verdict;
    e.probability = scored.score.probability;
    e.action = "accepted";
    e.sender = "<carol@university.example>";
    e.recipients = "<team@example.org>";
    e.size = raw.size();
    return e;
}


}  // namespace console_test
