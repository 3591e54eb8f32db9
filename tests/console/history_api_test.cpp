// The console's history API at its edges (issue 41): what it refuses with a
// 400 that names the parameter, the client address and HELO searchable, a
// "next" only when there are more lines, and every read of the history in the
// audit trail with its account, filter and number of lines.
#include <catch2/catch.hpp>
#include <cctype>
#include <string>

#include "app_support.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/message_checks.hpp"

using namespace console_test;

namespace {

// 20 lines from 192.0.2.N, HELO mxN.example.org, scanned at 3000 + N.
void record_lines(const Console& c) {
    store::Recording r;
    for (int n = 0; n < 20; ++n) {
        store::HistoryEntry e;
        e.signature = engine::message_digest("Subject: line " + std::to_string(n) + "\n\nbody\n");
        e.scanned_at = 3000 + n;
        e.verdict = model::Verdict::ham;
        e.probability = 0.01;
        e.action = "accepted";
        e.sender = "<sender" + std::to_string(n) + "@example.org>";
        e.recipients = "<rcpt@example.net>";
        e.subject = "line " + std::to_string(n);
        e.queue_id = "4Q" + std::to_string(n) + "ABC";
        e.client_address = "192.0.2." + std::to_string(n + 100);
        e.helo = "mx" + std::to_string(n) + ".sender.example";
        r.history.push_back(e);
    }
    store::open(c.db.string(), store::Database::Mode::read_write)->record(r);
}

}  // namespace

TEST_CASE("The history refuses what it would ignore or misread, naming it", "[console]") {
    Console c;
    record_lines(c);
    const auto viewer = c.sign_in("watcher", viewer_password);
    auto refused = [&](const std::string& target, const std::string& says) {
        const auto r = c.send(http::verb::get, target, "", viewer.token);
        INFO(target << ": " << r.body());
        CHECK(r.result() == http::status::bad_request);
        CHECK(r.body().find(says) != std::string::npos);
    };
    refused("/api/history?client_ip=192.0.2.105", "unknown parameter 'client_ip'");
    refused("/api/history?format=csv", "unknown parameter 'format'");  // an export's, not a page's
    refused("/api/history/export?format=csv&limit=5", "unknown parameter 'limit'");
    refused("/api/history?%0a%3Cscript%3E=1", "an unknown parameter");  // not echoed when not a word
    refused("/api/history?q=a%00b", "q holds a control character");
    refused("/api/history?sender=x%0d%0aevil", "sender holds a control character");
    refused("/api/history?q=a&q=b", "q is given twice");
    refused("/api/history?limit=1001", "limit must be a number from 0 to 1000");
    refused("/api/history?limit=-1", "limit must be a number from 0 to 1000");
    CHECK(c.send(http::verb::get, "/api/history?limit=1000", "", viewer.token).result() == http::status::ok);
    CHECK(c.send(http::verb::get, "/api/history?q=&limit=5&", "", viewer.token).result() == http::status::ok);
}

TEST_CASE("The history finds a line by its client address and HELO, and says 'next' only when there is more",
          "[console]") {
    Console c;
    record_lines(c);
    const auto viewer = c.sign_in("watcher", viewer_password);
    auto ask = [&](const std::string& query) { return c.history_page(query, viewer.token); };
    for (const std::string query : {"?q=192.0.2.105", "?client=192.0.2.105", "?q=mx5.sender", "?client=MX5.SENDER"}) {
        const json page = ask(query);
        INFO(query);
        REQUIRE(page["entries"].size() == 1);
        CHECK(page["entries"][0]["queue_id"] == "4Q5ABC");
        CHECK(page["count"] == 1);
    }
    // 20 lines: pages of 10, then 10 and no more; pages of 7: 7, 7, 6.
    json first = ask("?limit=10&order=oldest");
    REQUIRE(first["next"].is_object());
    json second = ask("?limit=10&order=oldest&cursor=" + first["next"]["cursor"].get<std::string>());
    CHECK(second["entries"].size() == 10);
    CHECK(second["entries"][9]["queue_id"] == "4Q19ABC");
    CHECK(second["next"].is_null());
    CHECK(ask("?limit=20")["next"].is_null());
    CHECK(ask("?limit=19")["next"].is_object());
}

TEST_CASE("Every read of the history is audited with its account, filter and number of lines", "[console]") {
    Console c;
    record_lines(c);
    const auto viewer = c.sign_in("watcher", viewer_password);
    c.audited.clear();
    REQUIRE(c.send(http::verb::get, "/api/history?sender=sender1&order=oldest", "", viewer.token).result() ==
            http::status::ok);
    REQUIRE(c.audited.size() == 1);
    // sender1, sender10 ... sender19: 11 lines.
    CHECK(c.audited.back() ==
          "console audit: event=history outcome=ok account=watcher role=viewer client=192.0.2.1 "
          "target=11:sender=sender1&order=oldest");
    const auto r = c.send(http::verb::get, "/api/history/export?format=csv&client=192.0.2.10", "", viewer.token);
    REQUIRE(r.result() == http::status::ok);
    REQUIRE(c.audited.size() == 2);
    // 192.0.2.100 ... 192.0.2.109: 10 lines.
    CHECK(c.audited.back() ==
          "console audit: event=export outcome=ok account=watcher role=viewer client=192.0.2.1 "
          "target=csv:10:format=csv&client=192.0.2.10");
    CHECK(r.body().rfind("time_utc,", 0) == 0);
    // A refused request reads nothing and is not a read.
    CHECK(c.send(http::verb::get, "/api/history?bogus=1", "", viewer.token).result() == http::status::bad_request);
    CHECK(c.audited.size() == 2);
}

TEST_CASE("A filter carrying a line break or a forged audit line stays one word of one audit line", "[console]") {
    Console c;
    record_lines(c);
    const auto viewer = c.sign_in("watcher", viewer_password);
    const std::string forged = "<6>console audit: event=sign-in outcome=failed account=admin role=- client=203.0.113.77 target=-";
    c.audited.clear();
    // A CR/LF or a NUL in any filter, the client filter included: refused, nothing read, nothing logged.
    for (const std::string name : {"q", "client", "sender", "queue_id"}) {
        for (const std::string breaker : {"%0d%0a", "%0a", "%00"}) {
            const auto r = c.send(http::verb::get, "/api/history?" + name + "=x" + breaker + "y", "", viewer.token);
            CHECK(r.result() == http::status::bad_request);
        }
    }
    CHECK(c.audited.empty());
    // Without a control character it is searched for, and the audit line keeps it as one word.
    std::string encoded;
    for (const unsigned char ch : forged) {
        static constexpr char hex[] = "0123456789ABCDEF";
        if (std::isalnum(ch)) encoded += static_cast<char>(ch);
        else encoded += std::string("%") + hex[ch >> 4] + hex[ch & 15];
    }
    for (const std::string name : {"q", "client"}) {
        REQUIRE(c.send(http::verb::get, "/api/history?" + name + "=" + encoded, "", viewer.token).result() ==
                http::status::ok);
        const std::string line = c.audited.back();
        CHECK(line.rfind("console audit: event=history outcome=ok account=watcher role=viewer client=192.0.2.1 target=0:" +
                             name + "=%3C6%3Econsole%20audit",
                         0) == 0);
        CHECK(line.find('\n') == std::string::npos);
        CHECK(line.find(' ', line.find("target=")) == std::string::npos);  // the target is one word
        CHECK(line.find("client=203.0.113.77") == std::string::npos);
    }
}
