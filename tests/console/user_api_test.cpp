// The console's view of a user's layer (per_user, issue 44 item 4): GET
// /api/user?name=USER says what that user's corrections taught their layer,
// by sender, how many history lines were delivered to them and the error
// rates their corrections reveal among those; any signed-in
// account may read it, the audit trail says who did, and a name that is
// neither an address nor a domain is refused.
#include <catch2/catch.hpp>
#include <ctime>
#include <string>

#include "app_support.hpp"
#include "mailsift/engine/scorer.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/message_checks.hpp"

using namespace console_test;

TEST_CASE("The console shows a user's layer: their corrections by sender, their history lines and error rates", "[console]") {
    Console c(false, engine::PerUser::recipient);
    const std::string raw = fixture("ham_meeting_notes.eml");
    // mailsiftd scored alice's copy for her, and recorded its history line.
    store::Recording r;
    store::HistoryEntry e = add_scan(r, raw, c.filter->classify(raw, nullptr, true, true, nullptr, "alice@example.org"));
    e.recipients = "<alice@example.org>";
    r.history.push_back(e);
    store::open(c.db.string(), store::Database::Mode::read_write)->record(r);
    const auto admin = c.sign_in("root", admin_password);
    const auto viewer = c.sign_in("watcher", viewer_password);
    auto user = [&](const std::string& name) { return c.send(http::verb::get, "/api/user?name=" + name, "", viewer.token); };

    auto before = user("alice%40example.org");
    REQUIRE(before.result() == http::status::ok);
    CHECK(json::parse(before.body())["senders"] == json::array());
    CHECK(json::parse(before.body())["history_lines"] == 1);

    const auto corrected = c.send(http::verb::post, "/api/correct",
                                  json{{"signature", engine::signature_text(*e.signature)}, {"class", "spam"}}.dump(),
                                  admin.token, admin.csrf);
    REQUIRE(corrected.result() == http::status::ok);
    const auto after = user("Alice%40Example.ORG");
    REQUIRE(after.result() == http::status::ok);
    const json j = json::parse(after.body());
    CHECK(j["user"] == "alice@example.org");
    CHECK(j["per_user"] == "recipient");
    CHECK(j["corrections"]["to_spam"] == 1);
    CHECK(j["corrections"]["to_ham"] == 0);
    REQUIRE(j["senders"].size() == 1);
    CHECK(j["senders"][0]["sender"] == "alice@university.example");
    CHECK(j["senders"][0]["log_odds"].get<double>() > 1.0);
    CHECK(j["senders"][0]["corrections"] == 1);
    // Her error rates: the one message delivered to her, which mailsiftd let
    // through and she moved to Junk.
    REQUIRE(e.verdict == model::Verdict::ham);
    CHECK(j["history_lines"] == 1);
    CHECK(j["errors"]["since"] == 1000);
    CHECK(j["errors"]["false_negatives"] == 1);
    CHECK(j["errors"]["false_positives"] == 0);
    CHECK(j["errors"]["unsure"] == 0);
    CHECK(j["errors"]["false_negative_percent"].get<double>() == Approx(100.0));
    CHECK(j["errors"]["false_positive_percent"].get<double>() == 0.0);
    CHECK(json::parse(user("bob%40example.org").body())["senders"] == json::array());
    CHECK(c.audited.back().find("user") != std::string::npos);
    CHECK(c.audited.back().find("watcher") != std::string::npos);

    for (const char* bad : {"", "alice", "%3Cscript%3E%40x", "a%0D%40example.org", "example.org%3Cb%3E", "a%00b%40example.org",
                            "a%40example.org%0A%3C6%3Econsole%20audit%3A%20sign-in%20ok"}) {
        INFO(bad);
        CHECK(user(bad).result() == http::status::bad_request);
    }
    CHECK(c.send(http::verb::get, "/api/user?name=alice%40example.org").result() == http::status::unauthorized);

    // The history is pruned past her corrected message: a correction without
    // its message in the history counts in no rate (its step stays in the layer).
    const std::int64_t later = static_cast<std::int64_t>(std::time(nullptr)) + 3600;
    {
        const auto db = store::open(c.db.string(), store::Database::Mode::read_write);
        store::Recording newer;
        store::HistoryEntry n = e;
        n.signature.reset();
        n.scanned_at = later;
        newer.history.push_back(n);
        db->record(newer);
        REQUIRE(db->prune_scans(later - 60, 100).lines == 1);
    }
    const json pruned = json::parse(user("alice%40example.org").body());
    CHECK(pruned["history_lines"] == 1);
    CHECK(pruned["errors"]["since"] == later);
    CHECK(pruned["errors"]["false_negatives"] == 0);
    CHECK(pruned["errors"]["false_negative_percent"].get<double>() == 0.0);
    CHECK(pruned["corrections"]["to_spam"] == 1);
}

TEST_CASE("The console lists every user with a layer, the most corrections first, to any signed-in account", "[console]") {
    Console c(false, engine::PerUser::recipient);
    const auto admin = c.sign_in("root", admin_password);
    const auto viewer = c.sign_in("watcher", viewer_password);
    auto users = [&] { return c.send(http::verb::get, "/api/users", "", viewer.token); };
    auto empty = users();
    REQUIRE(empty.result() == http::status::ok);
    CHECK(json::parse(empty.body())["users"] == json::array());
    CHECK(json::parse(empty.body())["total"] == 0);
    CHECK(json::parse(empty.body())["per_user"] == "recipient");

    // mailsiftd scored alice's copy and bob's; an admin corrects both of alice's messages and one of bob's.
    store::Recording r;
    std::vector<store::Digest> ids;
    for (const auto& [name, user] : std::vector<std::pair<std::string, std::string>>{
             {"ham_meeting_notes.eml", "alice@example.org"},
             {"ham_patch_review.eml", "alice@example.org"},
             {"ham_build_report.eml", "bob@example.org"}}) {
        const std::string raw = fixture(name);
        const store::HistoryEntry e = add_scan(r, raw, c.filter->classify(raw, nullptr, true, true, nullptr, user));
        ids.push_back(*e.signature);
    }
    store::open(c.db.string(), store::Database::Mode::read_write)->record(r);
    for (const auto& id : ids) {
        REQUIRE(c.send(http::verb::post, "/api/correct", json{{"signature", engine::signature_text(id)}, {"class", "spam"}}.dump(),
                       admin.token, admin.csrf)
                    .result() == http::status::ok);
    }
    const json j = json::parse(users().body());
    REQUIRE(j["users"].size() == 2);
    CHECK(j["total"] == 2);
    CHECK(j["users"][0]["user"] == "alice@example.org");  // 2 corrections
    CHECK(j["users"][0]["to_spam"] == 2);
    CHECK(j["users"][0]["senders"].get<int>() >= 1);
    CHECK(j["users"][1]["user"] == "bob@example.org");
    CHECK(j["users"][1]["to_spam"] == 1);
    CHECK(c.audited.back().find("users") != std::string::npos);
    CHECK(c.send(http::verb::get, "/api/users").result() == http::status::unauthorized);
}
