// The console's History, request by request, on what mailsiftd recorded in a real SQLite model: the
// list and its paging (every line of a burst within one second once), a line's explanation, a click
// that corrects it as mailsift correct does, the filters by each field, the orders, the count of
// matches and the export as CSV or JSON. Its refusals at the edges are history_api_test.cpp's.
#include "mailsift/console/app.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "mailsift/engine/scorer.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/score_parts.hpp"
#include "mailsift/store/database.hpp"

using namespace console_test;
namespace fs = std::filesystem;
namespace http = boost::beast::http;
using namespace mailsift;
using namespace mailsift::console;
using nlohmann::json;

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
