// The console's undo of a correction (issue 41 item 7): POST /api/undo puts
// the model back as it was before the correction (the counts return
// exactly), the line keeps its trail of corrections (/api/explanation's
// "corrections", undone ones with who undid them), only an admin may undo,
// and an undo that finds nothing to undo is a 409 that says why.
#include <catch2/catch.hpp>
#include <string>

#include "app_support.hpp"
#include "mailsift/engine/scorer.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/message_checks.hpp"

using namespace console_test;

namespace {

// A scan of `raw` and its history line, as mailsiftd's recorder writes them: its signature.
store::Digest record_line(Console& c, const std::string& raw) {
    store::Recording r;
    store::HistoryEntry e = add_scan(r, raw, c.filter->classify(raw, nullptr, true, true));
    e.subject = "Notes";
    r.history.push_back(e);
    store::open(c.db.string(), store::Database::Mode::read_write)->record(r);
    return *e.signature;
}

model::Counts counts(const Console& c) {
    return store::open(c.db.string(), store::Database::Mode::read_only)->load_counts(model::TermFrequency::raw);
}

void check_same(const model::Counts& a, const model::Counts& b) {
    CHECK(a.messages == b.messages);
    CHECK(a.feature_totals == b.feature_totals);
    CHECK(a.features.size() == b.features.size());
    CHECK(a.features == b.features);
}

std::string body_of(const std::string& signature) { return json{{"signature", signature}}.dump(); }

}  // namespace

TEST_CASE("Undo in the console puts the counts back, keeps the trail, and refuses what it cannot undo", "[console]") {
    Console c;
    const std::string raw = fixture("ham_meeting_notes.eml");
    const auto id = record_line(c, raw);
    const std::string sig = engine::signature_text(id);
    const auto admin = c.sign_in("root", admin_password);
    const auto viewer = c.sign_in("watcher", viewer_password);
    auto post = [&](const std::string& target, const std::string& body, const Console::SignedIn& who) {
        return c.send(http::verb::post, target, body, who.token, who.csrf);
    };
    auto line = [&] {
        const auto r = c.send(http::verb::get, "/api/explanation?signature=" + sig, "", viewer.token);
        REQUIRE(r.result() == http::status::ok);
        return json::parse(r.body());
    };
    auto false_negatives = [&] {
        c.now += std::chrono::seconds(2);  // past the status answer kept for a second
        const auto r = c.send(http::verb::get, "/api/status", "", viewer.token);
        REQUIRE(r.result() == http::status::ok);
        return json::parse(r.body())["corrections"]["day"]["false_negatives"].get<int>();
    };
    CHECK(line()["corrections"] == json::array());  // never corrected: an empty trail

    const model::Counts before = counts(c);
    REQUIRE(before.messages.spam == 5);
    REQUIRE(before.messages.ham == 5);
    const auto corrected = post("/api/correct", json{{"signature", sig}, {"class", "spam"}}.dump(), admin);
    REQUIRE(corrected.result() == http::status::ok);
    CHECK(json::parse(corrected.body())["result"] == "learned");
    const model::Counts after_correction = counts(c);
    CHECK(after_correction.messages.spam == 6);
    CHECK(after_correction.messages.ham == 5);
    CHECK(after_correction.feature_totals.spam > before.feature_totals.spam);
    REQUIRE(c.history_page("", viewer.token)["entries"][0]["corrected"].is_object());
    REQUIRE(line()["verdict"] == "ham");
    CHECK(false_negatives() == 1);
    json trail = line()["corrections"];
    REQUIRE(trail.size() == 1);
    CHECK(trail[0]["undoable"] == true);
    CHECK(trail[0]["undone_at"].is_null());
    CHECK(trail[0]["undone_by"].is_null());

    // A viewer may read the trail but not undo: 403, audited, nothing changed.
    c.audited.clear();
    CHECK(post("/api/undo", body_of(sig), viewer).result() == http::status::forbidden);
    REQUIRE(c.audited.size() == 1);
    CHECK(c.audited.back() == "console audit: event=undo outcome=forbidden account=watcher role=viewer client=192.0.2.1 target=-");
    CHECK(counts(c).messages == after_correction.messages);
    // Without the CSRF token, or without a session (the body is not even read): refused.
    CHECK(c.send(http::verb::post, "/api/undo", body_of(sig), admin.token).result() == http::status::forbidden);
    CHECK(c.send(http::verb::post, "/api/undo", body_of(sig)).result() == http::status::unauthorized);
    Request head{http::verb::post, "/api/undo", 11};
    CHECK_FALSE(c.app->body_allowed(head, c.now));
    head.set(http::field::cookie, "mailsift_session=" + admin.token);
    CHECK(c.app->body_allowed(head, c.now));
    CHECK(c.app->max_body_bytes(http::verb::post, "/api/undo") == small_body_bytes);
    // Malformed: 400, nothing undone, no audit line; a GET: 405.
    c.audited.clear();
    for (const std::string& bad : {std::string("{"), std::string("[]"), std::string("{\"signature\": 5}"),
                                  std::string("{\"class\": \"spam\"}"), std::string("{\"signature\": \"xyz\"}"),
                                  "{\"signature\": \"" + sig + "0\"}",
                                  // From the wire: a CR/LF, a NUL and a forged audit line in the one field.
                                  "{\"signature\": \"" + sig + "\\r\\n\"}",
                                  "{\"signature\": \"" + sig + "\\u0000\"}",
                                  "{\"signature\": \"" + sig + "\\n<6>console audit: event=sign-in outcome=failed "
                                  "account=admin role=- client=203.0.113.77 target=-\"}"}) {
        INFO(bad);
        CHECK(post("/api/undo", bad, admin).result() == http::status::bad_request);
    }
    CHECK(c.audited.empty());
    CHECK(c.send(http::verb::get, "/api/undo", "", admin.token).result() == http::status::method_not_allowed);
    CHECK(counts(c).messages == after_correction.messages);
    CHECK(line()["corrections"][0]["undone_at"].is_null());

    // The undo: the counts exactly as before the correction, the trail kept, marked.
    c.audited.clear();
    const auto undone = post("/api/undo", body_of(sig), admin);
    INFO(undone.body());
    REQUIRE(undone.result() == http::status::ok);
    const json u = json::parse(undone.body());
    CHECK(u["signature"] == sig);
    CHECK(u["undone"] == true);
    CHECK(u["class"] == "spam");
    CHECK(u["now"] == "not learned");
    CHECK(u["result"] == "undid its correction to spam; now not learned");
    check_same(counts(c), before);
    REQUIRE(c.audited.size() == 1);
    CHECK(c.audited.back() == "console audit: event=undo outcome=undone account=root role=admin client=192.0.2.1 target=spam:" + sig);
    const json after = line();
    CHECK(after["corrected"].is_null());
    trail = after["corrections"];
    REQUIRE(trail.size() == 1);
    CHECK(trail[0]["to"] == "spam");
    CHECK(trail[0]["by"] == "console:root");
    CHECK(trail[0]["at"].is_number_integer());
    CHECK(trail[0]["undone_by"] == "console:root");
    CHECK(trail[0]["undone_at"].get<std::int64_t>() >= trail[0]["at"].get<std::int64_t>());
    CHECK(trail[0]["undoable"] == false);
    CHECK(c.history_page("", viewer.token)["entries"][0]["corrected"].is_null());
    CHECK(false_negatives() == 0);  // an undone correction counts nowhere

    // Nothing left to undo: 409 saying so, audited, the counts untouched.
    c.audited.clear();
    const auto again = post("/api/undo", body_of(sig), admin);
    CHECK(again.result() == http::status::conflict);
    CHECK(json::parse(again.body())["error"] == "no correction of this message to undo");
    REQUIRE(c.audited.size() == 1);
    CHECK(c.audited.back() == "console audit: event=undo outcome=nothing account=root role=admin client=192.0.2.1 target=-:" + sig);
    check_same(counts(c), before);
    CHECK(line()["corrections"].size() == 1);
}

TEST_CASE("Undo in the console takes back the correction that stands, and withdraws one still waiting", "[console]") {
    Console c;
    const auto id = record_line(c, fixture("ham_meeting_notes.eml"));
    const std::string sig = engine::signature_text(id);
    const auto admin = c.sign_in("root", admin_password);
    auto post = [&](const std::string& target, const std::string& body) {
        return c.send(http::verb::post, target, body, admin.token, admin.csrf);
    };
    auto trail = [&] {
        const auto r = c.send(http::verb::get, "/api/explanation?signature=" + sig, "", admin.token);
        REQUIRE(r.result() == http::status::ok);
        return json::parse(r.body());
    };
    const model::Counts before = counts(c);
    REQUIRE(post("/api/correct", json{{"signature", sig}, {"class", "spam"}}.dump()).result() == http::status::ok);
    const model::Counts as_spam = counts(c);
    REQUIRE(post("/api/correct", json{{"signature", sig}, {"class", "ham"}}.dump()).result() == http::status::ok);
    // The other way: the spam correction undone first, then learned as ham.
    CHECK(counts(c).messages.ham == as_spam.messages.ham + 1);
    CHECK(counts(c).messages.spam == before.messages.spam);

    // The ham correction undone: back to before both (the spam one no longer stands).
    const auto r = post("/api/undo", body_of(sig));
    REQUIRE(r.result() == http::status::ok);
    const json u = json::parse(r.body());
    CHECK(u["class"] == "ham");
    CHECK(u["now"] == "not learned");
    CHECK(u["result"] == "undid its correction to ham; now not learned");
    check_same(counts(c), before);
    const json x = trail();
    CHECK_FALSE(x["corrected"].is_object());  // none stands
    const json& t = x["corrections"];
    REQUIRE(t.size() == 2);
    CHECK(t[0]["to"] == "spam");  // oldest first
    CHECK(t[0]["undone_by"] == "console:root");  // by the ham correction
    CHECK(t[0]["undoable"] == false);
    CHECK(t[1]["to"] == "ham");
    CHECK(t[1]["undone_by"] == "console:root");
    CHECK(t[1]["undoable"] == false);

    // A correction of a message whose scan has not come yet trained nothing: withdrawn.
    const std::string waiting = engine::signature_text(engine::message_digest("Subject: not yet\n\nbody\n"));
    REQUIRE(post("/api/correct", json{{"signature", waiting}, {"class", "spam"}}.dump()).result() == http::status::ok);
    const model::Counts before_withdraw = counts(c);
    c.audited.clear();
    const auto w = post("/api/undo", body_of(waiting));
    REQUIRE(w.result() == http::status::ok);
    const json wj = json::parse(w.body());
    CHECK(wj["undone"] == false);
    CHECK(wj["class"] == "spam");
    CHECK(wj["now"].is_null());
    CHECK(wj["result"].get<std::string>().rfind("withdrew its correction", 0) == 0);
    check_same(counts(c), before_withdraw);
    REQUIRE(c.audited.size() == 1);
    CHECK(c.audited.back() ==
          "console audit: event=undo outcome=withdrawn account=root role=admin client=192.0.2.1 target=spam:" + waiting);
    CHECK(post("/api/undo", body_of(waiting)).result() == http::status::conflict);
}

TEST_CASE("The page's corrections script puts what it shows as text only", "[console]") {
    Console c;
    const auto page = c.send(http::verb::get, "/");
    CHECK(page.body().find("<script src=\"/static/corrections.js\" defer>") != std::string::npos);
    const auto r = c.send(http::verb::get, "/static/corrections.js");
    REQUIRE(r.result() == http::status::ok);
    CHECK(str(r[http::field::content_type]).starts_with("text/javascript"));
    const std::string& js = r.body();
    CHECK(js.find("/api/undo") != std::string::npos);
    CHECK(js.find("innerHTML") == std::string::npos);
    CHECK(js.find("insertAdjacentHTML") == std::string::npos);
    CHECK(js.find("eval(") == std::string::npos);
}
