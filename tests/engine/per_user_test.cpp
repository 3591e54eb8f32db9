// The per-user layer (per_user, issue 44), on every backend: a correction of
// one user's copy moves that user's verdicts on mail from its sender more than
// anyone else's, and the site learns it as with per_user off; a user who never
// corrected is scored by the site's model; the scan remembers whom it was
// scored for, and an undo takes the layer's step back.
#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <set>
#include <sstream>
#include <thread>

#include "../support/backends.hpp"
#include "../support/model_state.hpp"
#include "mailsift/engine/correction_owner.hpp"
#include "mailsift/engine/filter.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/message_checks.hpp"
#include "mailsift/engine/scan_record.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/engine/trainer.hpp"
#include "mailsift/engine/user_layers.hpp"
#include "mailsift/features/slots.hpp"

using namespace mailsift;

namespace {

const std::string newsletter =
    "From: Weekly Deals <news@deals.example>\nSubject: This week's gadget deals and tips\n\n"
    "Our editors picked this week's best gadget deals, with tips on laptops and phones.\n";

// A copy as mailsiftd delivered it, tagged with the scan's signature.
std::string delivered(const store::Digest& id) {
    return "X-Mailsift-Status: No, score=0.4000\nX-Mailsift-Signature: " + engine::signature_text(id) + "\n" + newsletter;
}

engine::Settings per_recipient() {
    engine::Settings settings;
    settings.per_user = engine::PerUser::recipient;
    return settings;
}

// The same words from another sender.
const std::string other_sender =
    "From: A Colleague <pat@work.example>\nSubject: This week's gadget deals and tips\n\n"
    "Our editors picked this week's best gadget deals, with tips on laptops and phones.\n";

// A message's log-odds for `user` ("" : the site's model alone).
double score(store::Database& db, const std::string& message, const std::string& user) {
    return engine::Filter(db, per_recipient()).classify(message, nullptr, false, false, nullptr, user).score.log_odds;
}

// The newsletter's.
double score(store::Database& db, const std::string& user) { return score(db, newsletter, user); }

// mailsiftd's scan of the newsletter for `user`, recorded; its signature.
store::Digest record_scan(store::Database& db, const std::string& user) {
    const auto scanned = engine::Filter(db, per_recipient()).classify(newsletter, nullptr, true, false, nullptr, user);
    REQUIRE(engine::recorded_user(scanned.features) == user);
    const store::Digest id = engine::message_digest(newsletter);
    store::Recording rec;
    rec.scans.push_back({id, 1500, model::Verdict::ham, scanned.features});
    rec.delivered.emplace_back(user, 1500);  // as mailsiftd's recorder writes it
    db.record(rec);
    return id;
}

// mailsiftd scored mail for `user` (store::ScanLog::delivered_to).
void deliver(store::Database& db, const std::string& user) {
    store::Recording rec;
    rec.delivered.emplace_back(user, 1500);
    db.record(rec);
}

}  // namespace

TEST_CASE("A user's layer: a few slots for one user and one sender, none without either", "[engine][per_user]") {
    const auto alice = features::personal_slots("alice@example.org", "news@deals.example", 18);
    const auto bob = features::personal_slots("bob@example.org", "news@deals.example", 18);
    const auto alice_other = features::personal_slots("alice@example.org", "boss@work.example", 18);
    CHECK(features::personal_slots("", "news@deals.example", 18).empty());
    CHECK(features::personal_slots("alice@example.org", "", 18).empty());
    for (const auto* s : {&alice, &bob, &alice_other}) {
        CHECK(std::is_sorted(s->begin(), s->end()));
        CHECK(std::adjacent_find(s->begin(), s->end()) == s->end());
        CHECK(!s->empty());
        CHECK(s->size() <= features::personal_slot_count);
        CHECK(std::all_of(s->begin(), s->end(), [](std::uint32_t x) { return x < (1u << 18); }));
    }
    CHECK(alice != bob);
    CHECK(alice != alice_other);
    CHECK(features::personal_slots("alice@example.org", "news@deals.example", 18) == alice);
    std::vector<std::uint32_t> slots = {5, 9};
    features::insert_slot(7, slots);
    features::insert_slot(9, slots);
    CHECK(slots == std::vector<std::uint32_t>{5, 7, 9});
}

TEST_CASE("The user of a message: its one recipient, or that recipient's domain", "[engine][per_user]") {
    using engine::PerUser;
    CHECK(engine::user_of(PerUser::recipient, "<Alice@Example.ORG>") == "alice@example.org");
    CHECK(engine::user_of(PerUser::domain, "<Alice@Example.ORG>") == "example.org");
    CHECK(engine::user_of(PerUser::recipient, " alice@example.org") == "alice@example.org");
    CHECK_FALSE(engine::user_of(PerUser::off, "alice@example.org"));
    for (const char* bad : {"", "<>", "alice", "@example.org", "alice@", "al ice@example.org", "a\x01@example.org"}) {
        INFO(bad);
        CHECK_FALSE(engine::user_of(PerUser::recipient, bad));
    }
    // From the recipients as the milter has them (mailsiftd and evaluate --deployed alike): one, or none.
    CHECK(engine::message_user(PerUser::recipient, {"<Bob@Example.ORG>"}) == "bob@example.org");
    CHECK_FALSE(engine::message_user(PerUser::recipient, {"<bob@example.org>", "<carol@example.org>"}));
    CHECK_FALSE(engine::message_user(PerUser::recipient, {}));
    CHECK_FALSE(engine::message_user(PerUser::off, {"<bob@example.org>"}));
    // The sender a layer is keyed by, from a feature: the From's alone.
    CHECK(engine::layer_sender_of("hdr:from:news@deals.example") == std::optional<std::string_view>("news@deals.example"));
    CHECK_FALSE(engine::layer_sender_of("hdr:from_domain:deals.example"));
    std::string lines = "word:deal\t1\n";
    engine::append_user_line("alice@example.org", lines);
    CHECK(engine::recorded_user(lines) == "alice@example.org");
    CHECK(engine::parse_feature_lines(lines).size() == 1);  // not a feature
    CHECK_FALSE(engine::recorded_user("word:deal\t1\n"));
    CHECK_FALSE(engine::recorded_user("word:deal\t1\n!user:a\x01\t1\n"));
}

TEST_CASE("A correction of one user's copy moves that user's verdict more than another's, and undo takes it back",
          "[engine][per_user]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db);
    const double site_before = score(*db, ""), bob_before = score(*db, "bob@example.org"),
                 carol_before = score(*db, "carol@example.org");
    const double bob_other_before = score(*db, other_sender, "bob@example.org"),
                 carol_other_before = score(*db, other_sender, "carol@example.org");
    // Nobody has corrected anything: every user is scored as the site (collisions aside).
    CHECK(bob_before == Approx(site_before).margin(0.05));
    CHECK(carol_before == Approx(site_before).margin(0.05));

    // mailsiftd scored bob's copy, recording whom for; bob moves it to Junk.
    const store::Digest id = record_scan(*db, "bob@example.org");
    engine::Trainer t(*db, per_recipient());
    const std::string copy = delivered(id);
    REQUIRE(t.correct(copy, copy.size(), store::Class::spam, 2000).by_signature);
    t.commit();

    const double bob_moved = score(*db, "bob@example.org") - bob_before;
    const double carol_moved = score(*db, "carol@example.org") - carol_before;
    const double site_moved = score(*db, "") - site_before;
    CHECK(bob_moved > 0.0);
    CHECK(carol_moved > 0.0);  // the site learned too
    CHECK(bob_moved > carol_moved + 1.0);  // and bob's layer: up to per_user_step more for him
    CHECK(carol_moved == Approx(site_moved).margin(0.05));
    // The layer is bob's for this sender: the same words from another sender move for him as for carol.
    CHECK(score(*db, other_sender, "bob@example.org") - bob_other_before ==
          Approx(score(*db, other_sender, "carol@example.org") - carol_other_before).margin(0.05));

    // Undone: bob's layer goes back with the site's.
    engine::Trainer u(*db, per_recipient());
    REQUIRE(u.undo(copy, 2100).result == engine::Trainer::UndoOutcome::Result::undone);
    u.commit();
    CHECK(score(*db, "bob@example.org") == Approx(bob_before).margin(1e-3));
    CHECK(score(*db, "") == Approx(site_before).margin(1e-3));

    // The site learns from bob's correction what it learns from the same correction with per_user off.
    // (The scan names bob: with per_user off, no layer learns from it.)
    engine::Trainer off(*db, engine::Settings{});
    REQUIRE(off.correct(copy, copy.size(), store::Class::spam, 2200).by_signature);
    off.commit();
    CHECK(score(*db, "bob@example.org") - bob_before == Approx(site_moved).margin(0.05));
    CHECK(score(*db, "") - site_before == Approx(site_moved).margin(1e-3));
}

TEST_CASE("correct --user names the layer, whatever the scan recorded (an alias), once mailsiftd delivered to it", "[engine][per_user]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db);
    const double alias_before = score(*db, "robert@example.org"), bob_before = score(*db, "bob@example.org");
    const store::Digest id = record_scan(*db, "bob@example.org");
    const std::string copy = delivered(id);
    {
        // A name mailsiftd never delivered to starts no layer: refused, nothing changed.
        const testing::ModelState before = testing::model_state(*db);
        engine::Trainer t(*db, per_recipient());
        t.set_user("robert@example.org");
        REQUIRE_THROWS_AS(t.correct(copy, copy.size(), store::Class::spam, 2000), engine::NotYours);
        REQUIRE_THROWS_AS(t.correct(newsletter, newsletter.size(), store::Class::spam, 2000), engine::NotYours);
        t.commit();
        const testing::ModelState after = testing::model_state(*db);
        testing::require_same_counts(after.counts, before.counts);
        CHECK(after.weights == before.weights);
        CHECK(db->layer_corrections("robert@example.org").empty());
        CHECK(db->corrections_of(id).empty());
    }
    deliver(*db, "robert@example.org");
    engine::Trainer t(*db, per_recipient());
    t.set_user("robert@example.org");
    REQUIRE(t.correct(copy, copy.size(), store::Class::spam, 2000).by_signature);
    t.commit();
    CHECK(score(*db, "robert@example.org") - alias_before > score(*db, "bob@example.org") - bob_before + 1.0);
}

TEST_CASE("forget_user takes back a user's layer once, keeps what the site learned, and undo then takes the site's step",
          "[engine][per_user]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db);
    const double bob_before = score(*db, "bob@example.org"), carol_before = score(*db, "carol@example.org");
    const store::Digest id = record_scan(*db, "bob@example.org");
    engine::Trainer t(*db, per_recipient());
    const std::string copy = delivered(id);
    REQUIRE(t.correct(copy, copy.size(), store::Class::spam, 2000).by_signature);
    t.commit();
    const double carol_moved = score(*db, "carol@example.org") - carol_before;
    const double layer = score(*db, "bob@example.org") - bob_before - carol_moved;
    REQUIRE(layer > 1.0);

    // What the layer holds, read from the corrections.
    const auto held = engine::user_layer(db->layer_corrections("bob@example.org"));
    CHECK(held.to_spam == 1);
    CHECK(held.to_ham == 0);
    REQUIRE(held.senders.size() == 1);
    CHECK(held.senders[0].address == "news@deals.example");
    CHECK(held.senders[0].log_odds == Approx(layer).margin(0.05));
    CHECK(held.senders[0].last_at == 2000);
    CHECK(db->layer_corrections("carol@example.org").empty());

    engine::Trainer f(*db, per_recipient());
    CHECK(f.forget_user("bob@example.org").size() == 1);
    f.commit();
    CHECK(score(*db, "bob@example.org") - bob_before == Approx(carol_moved).margin(0.05));  // the site's share stays
    CHECK(engine::user_layer(db->layer_corrections("bob@example.org")).senders.empty());
    engine::Trainer again(*db, per_recipient());
    CHECK(again.forget_user("bob@example.org").empty());  // nothing twice
    again.commit();
    CHECK(score(*db, "bob@example.org") - bob_before == Approx(carol_moved).margin(0.05));

    // The correction stands, and its undo takes back the site's step alone.
    engine::Trainer u(*db, per_recipient());
    REQUIRE(u.undo(copy, 2100).result == engine::Trainer::UndoOutcome::Result::undone);
    u.commit();
    CHECK(score(*db, "bob@example.org") == Approx(bob_before).margin(1e-3));
    CHECK(score(*db, "carol@example.org") == Approx(carol_before).margin(1e-3));
}

TEST_CASE("An untagged message corrected for a named user is a correction of theirs: shown, undone, forgotten",
          "[engine][per_user]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db);
    deliver(*db, "bob@example.org");
    const double bob_before = score(*db, "bob@example.org");
    const testing::ModelState model_before = testing::model_state(*db);

    // No X-Mailsift-Signature (learned from a folder by hand, or never scanned): its step in bob's layer is recorded.
    engine::Trainer t(*db, per_recipient());
    t.set_user("bob@example.org");
    REQUIRE(t.correct(newsletter, newsletter.size(), store::Class::spam, 2000).result == store::LearnResult::learned);
    t.commit();
    const auto held = engine::user_layer(db->layer_corrections("bob@example.org"));
    CHECK(held.to_spam == 1);
    REQUIRE(held.senders.size() == 1);
    CHECK(held.senders[0].address == "news@deals.example");
    CHECK(held.senders[0].log_odds > 1.0);

    // Undone by the message itself: the model and the layer as they were.
    engine::Trainer u(*db, per_recipient());
    REQUIRE(u.undo(newsletter, 2100).result == engine::Trainer::UndoOutcome::Result::undone);
    u.commit();
    const testing::ModelState model_after = testing::model_state(*db);
    testing::require_same_counts(model_after.counts, model_before.counts);
    testing::require_weights_near(model_after, model_before);
    CHECK(score(*db, "bob@example.org") == Approx(bob_before).margin(1e-3));
    CHECK(engine::user_layer(db->layer_corrections("bob@example.org")).senders.empty());

    // Corrected again, then forgotten with the layer: bob is scored as before, the site keeps what it learned.
    engine::Trainer again(*db, per_recipient());
    again.set_user("bob@example.org");
    REQUIRE(again.correct(newsletter, newsletter.size(), store::Class::spam, 2200).result == store::LearnResult::learned);
    again.commit();
    const double carol = score(*db, "carol@example.org");
    engine::Trainer f(*db, per_recipient());
    CHECK(f.forget_user("bob@example.org").size() == 1);
    f.commit();
    CHECK(score(*db, "bob@example.org") == Approx(carol).margin(0.05));
}

namespace {

// The verdict `user` gets for the newsletter.
model::Verdict verdict(store::Database& db, const std::string& user, const engine::Settings& settings) {
    return engine::Filter(db, settings).classify(newsletter, nullptr, false, false, nullptr, user).score.verdict;
}

// The site made sure the newsletter is ham: its issues learned as ham until it scores far below ham's cutoff.
void site_sure_of_newsletter(store::Database& db) {
    engine::Trainer t(db, engine::Settings{});
    for (int n = 0; n < 12; ++n) {
        const std::string issue = newsletter + "Issue " + std::to_string(n) + " of the weekly deals.\n";
        t.learn(issue, issue.size(), store::Class::ham, 1000 + n);
    }
    t.commit();
}

}  // namespace

TEST_CASE("Decisive for the user: one correction of a sender the site is sure of puts their copies on their side",
          "[engine][per_user]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db);
    site_sure_of_newsletter(*db);
    const engine::Settings settings = per_recipient();
    const double carol_before = score(*db, "carol@example.org");
    REQUIRE(verdict(*db, "bob@example.org", settings) == model::Verdict::ham);
    REQUIRE(carol_before < -3.0);  // sure, not just on the ham side
    const double bob_other_before = score(*db, other_sender, "bob@example.org"),
                 carol_other_before = score(*db, other_sender, "carol@example.org");

    // bob moves his copy to Junk once: his next copies are spam, past the cutoff by per_user_margin.
    const store::Digest id = record_scan(*db, "bob@example.org");
    engine::Trainer t(*db, settings);
    const std::string copy = delivered(id);
    REQUIRE(t.correct(copy, copy.size(), store::Class::spam, 2000).by_signature);
    t.commit();
    CHECK(verdict(*db, "bob@example.org", settings) == model::Verdict::spam);
    // carol never corrected: still ham (the site took the step it takes with per_user off); bob's layer took the rest.
    CHECK(verdict(*db, "carol@example.org", settings) == model::Verdict::ham);
    CHECK(score(*db, "bob@example.org") - score(*db, "carol@example.org") > settings.per_user_margin);
    // bob's layer is for this sender alone: the same words from another sender move for him as for carol.
    CHECK(score(*db, other_sender, "bob@example.org") - bob_other_before ==
          Approx(score(*db, other_sender, "carol@example.org") - carol_other_before).margin(0.05));
    // What the layer took is what stats --user shows, and within per_user_cap.
    const auto held = engine::user_layer(db->layer_corrections("bob@example.org"));
    REQUIRE(held.senders.size() == 1);
    CHECK(held.senders[0].log_odds > settings.per_user_step);  // more than the learner's own step: the margin's
    CHECK(held.senders[0].log_odds <= settings.per_user_cap + 1e-3);

    // He takes it back (it was a mistake): his copies go back to the site's verdict.
    engine::Trainer u(*db, settings);
    REQUIRE(u.undo(copy, 2100).result == engine::Trainer::UndoOutcome::Result::undone);
    u.commit();
    CHECK(verdict(*db, "bob@example.org", settings) == model::Verdict::ham);
}

TEST_CASE("A copy flipped between Junk and the inbox again and again leaves one correction and one step in the layer",
          "[engine][per_user]") {
    // Issue 58: 20 flips in 0.8 s added 20 rows and 20 steps that mostly cancelled.
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db);
    const engine::Settings settings = per_recipient();
    const store::Digest id = record_scan(*db, "bob@example.org");
    const std::string copy = delivered(id);
    for (int i = 0; i < 21; ++i) {  // spam, ham, ..., spam: the last word is spam
        engine::Trainer t(*db, settings);
        const auto o = t.correct(copy, copy.size(), i % 2 == 0 ? store::Class::spam : store::Class::ham, 2000 + i);
        REQUIRE(o.by_signature);
        CHECK(o.superseded == (i > 0));
        t.commit();
    }
    CHECK(verdict(*db, "bob@example.org", settings) == model::Verdict::spam);
    // One standing correction, and the layer holds its step alone: what bob's
    // copy scores above carol's (the site's) is what that correction accounts for.
    const auto held = engine::user_layer(db->layer_corrections("bob@example.org"));
    CHECK(held.to_spam == 1);
    CHECK(held.to_ham == 0);
    REQUIRE(held.senders.size() == 1);
    CHECK(held.senders[0].log_odds <= settings.per_user_cap + 1e-3);
    CHECK(score(*db, "bob@example.org") - score(*db, "carol@example.org") ==
          Approx(held.senders[0].log_odds).margin(0.05));
    const auto trail = db->corrections_of(id);
    CHECK(trail.size() == 1 + store::undone_kept);
    CHECK(std::count_if(trail.begin(), trail.end(), [](const auto& r) { return r.undone_at == 0; }) == 1);
}

TEST_CASE("per_user_cap bounds what one correction teaches a layer", "[engine][per_user]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db);
    site_sure_of_newsletter(*db);
    engine::Settings settings = per_recipient();
    settings.per_user_cap = 2.0;
    const store::Digest id = record_scan(*db, "bob@example.org");
    engine::Trainer t(*db, settings);
    const std::string copy = delivered(id);
    REQUIRE(t.correct(copy, copy.size(), store::Class::spam, 2000).by_signature);
    t.commit();
    const auto held = engine::user_layer(db->layer_corrections("bob@example.org"));
    REQUIRE(held.senders.size() == 1);
    CHECK(held.senders[0].log_odds == Approx(2.0).margin(1e-3));
    // Not enough to move a sender the site is this sure of: his copies stay ham until he corrects again.
    CHECK(verdict(*db, "bob@example.org", settings) != model::Verdict::spam);
}

namespace {

// bob's copy as the mailbox got it: delivered `ago` seconds before now (its topmost Received:).
std::string delivered_ago(const store::Digest& id, std::int64_t now, std::int64_t ago) {
    char when[64];
    const std::time_t t = static_cast<std::time_t>(now - ago);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(when, sizeof when, "%a, %d %b %Y %H:%M:%S +0000", &tm);
    return "Received: from mail.example.org by imap.example.org with LMTP id 7F; " + std::string(when) + "\n" +
           delivered(id);
}

}  // namespace

TEST_CASE("A correction at once after delivery trains what it trains once the scan is written, the layer too",
          "[engine][per_user]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db);
    const engine::Settings settings = per_recipient();
    const auto now = static_cast<std::int64_t>(std::time(nullptr));
    // mailsiftd has scored bob's copy; its recorder writes the scan a moment after he moved it.
    const auto scanned = engine::Filter(*db, settings).classify(newsletter, nullptr, true, false, nullptr, "bob@example.org");
    const store::Digest id = engine::message_digest(newsletter);
    store::Recording rec;
    rec.scans.push_back({id, now, model::Verdict::ham, scanned.features});
    auto recorder = s.open();
    std::string recorder_problem;  // no Catch assertion off the test's thread
    std::thread later([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(400));
        try {
            recorder->record(rec);
        } catch (const std::exception& e) {
            recorder_problem = e.what();
        }
    });
    engine::Trainer t(*db, settings);
    t.set_scan_wait(std::chrono::seconds(10));
    const std::string copy = delivered_ago(id, now, 1);
    const auto o = t.correct(copy, copy.size(), store::Class::spam, now);
    t.commit();
    later.join();
    CHECK(recorder_problem.empty());
    CHECK(o.by_signature);  // the scan's, with whom it was scored for
    const auto held = engine::user_layer(db->layer_corrections("bob@example.org"));
    CHECK(held.to_spam == 1);
    REQUIRE(held.senders.size() == 1);
    CHECK(held.senders[0].address == "news@deals.example");
}

TEST_CASE("A message delivered long ago whose scan is gone is learned as it is, without waiting for it",
          "[engine][per_user]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db);
    const auto now = static_cast<std::int64_t>(std::time(nullptr));
    engine::Trainer t(*db, per_recipient());
    t.set_scan_wait(std::chrono::seconds(10));
    const std::string copy = delivered_ago(engine::message_digest(newsletter), now, 3600);
    const auto o = t.correct(copy, copy.size(), store::Class::spam, now);
    t.commit();
    CHECK_FALSE(o.by_signature);
    CHECK(o.result == store::LearnResult::learned);
    // Received: in the future, or none: a clock not to trust, no wait either.
    engine::Trainer u(*db, per_recipient());
    u.set_scan_wait(std::chrono::seconds(10));
    const std::string future = delivered_ago(engine::message_digest(other_sender), now, -3600);
    CHECK_FALSE(u.correct(future, future.size(), store::Class::spam, now).by_signature);
}

namespace {

// `user`'s own copy of the newsletter (its To: theirs), as mailsiftd scanned
// it for them, recorded; the copy as delivered, tagged with the scan's signature.
std::string delivered_copy(store::Database& db, const std::string& user) {
    const std::string message = "To: <" + user + ">\n" + newsletter;
    const auto scanned = engine::Filter(db, per_recipient()).classify(message, nullptr, true, false, nullptr, user);
    const store::Digest id = engine::message_digest(message);
    store::Recording rec;
    rec.scans.push_back({id, 1500, model::Verdict::ham, scanned.features});
    db.record(rec);
    return "X-Mailsift-Status: No, score=0.4000\nX-Mailsift-Signature: " + engine::signature_text(id) + "\n" + message;
}

engine::Trainer::CorrectOutcome correct_copy(store::Database& db, const std::string& copy, store::Class c,
                                             std::int64_t at) {
    engine::Trainer t(db, per_recipient());
    const auto o = t.correct(copy, copy.size(), c, at);
    t.commit();
    return o;
}

}  // namespace

TEST_CASE("Opposite corrections of one sender by two users cancel in the site, and each user's layer decides their copies",
          "[engine][per_user]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db);
    const engine::Settings settings = per_recipient();
    const double carol_before = score(*db, "carol@example.org");
    const std::string bobs = delivered_copy(*db, "bob@example.org"), alices = delivered_copy(*db, "alice@example.org");

    // bob moves his copy to Junk: the site learns it, and carol's score moves with it.
    REQUIRE(correct_copy(*db, bobs, store::Class::spam, 2000).result == store::LearnResult::learned);
    const double carol_after_bob = score(*db, "carol@example.org");
    REQUIRE(carol_after_bob > carol_before + 0.5);
    const auto counts_after_bob = db->load_counts(model::TermFrequency::raw).messages;

    // alice moves hers out of Junk: the two cancel in the site; carol is scored as before bob.
    REQUIRE(correct_copy(*db, alices, store::Class::ham, 2100).result == store::LearnResult::learned);
    CHECK(score(*db, "carol@example.org") == Approx(carol_before).margin(1e-3));
    const auto counts_now = db->load_counts(model::TermFrequency::raw).messages;
    CHECK(counts_now.spam == counts_after_bob.spam - 1);  // bob's copy unlearned from the counts
    CHECK(counts_now.ham == counts_after_bob.ham);         // alice's never learned
    // Each user's layer decides their own copies.
    CHECK(verdict(*db, "bob@example.org", settings) == model::Verdict::spam);
    CHECK(verdict(*db, "alice@example.org", settings) != model::Verdict::spam);
    CHECK(engine::user_layer(db->layer_corrections("bob@example.org")).to_spam == 1);
    CHECK(engine::user_layer(db->layer_corrections("alice@example.org")).to_ham == 1);

    // alice's correction again changes nothing.
    const double alice_now = score(*db, "alice@example.org");
    CHECK(correct_copy(*db, alices, store::Class::ham, 2200).result == store::LearnResult::already_learned);
    CHECK(score(*db, "alice@example.org") == Approx(alice_now).margin(1e-6));
    CHECK(score(*db, "carol@example.org") == Approx(carol_before).margin(1e-3));

    // A third user who agrees with bob: nothing left to cancel, the site learns it.
    const std::string daves = delivered_copy(*db, "dave@example.org");
    REQUIRE(correct_copy(*db, daves, store::Class::spam, 2300).result == store::LearnResult::learned);
    CHECK(score(*db, "carol@example.org") > carol_before + 0.5);

    // alice takes hers back: her layer's step alone (the site part she cancelled stays cancelled).
    const double carol_with_dave = score(*db, "carol@example.org");
    engine::Trainer u(*db, settings);
    REQUIRE(u.undo(alices, 2400).result == engine::Trainer::UndoOutcome::Result::undone);
    u.commit();
    CHECK(score(*db, "carol@example.org") == Approx(carol_with_dave).margin(1e-3));
    CHECK(engine::user_layer(db->layer_corrections("alice@example.org")).senders.empty());
}

TEST_CASE("An export leaves the per-user layers out of its weights and says how many, so an import holds none",
          "[engine][per_user]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db);
    const double site_before = score(*db, "");
    const std::string bobs = delivered_copy(*db, "bob@example.org");
    REQUIRE(correct_copy(*db, bobs, store::Class::spam, 2000).result == store::LearnResult::learned);
    const double site_after = score(*db, ""), bob_after = score(*db, "bob@example.org");
    REQUIRE(bob_after > site_after + 1.0);  // bob's layer
    REQUIRE(site_after > site_before);      // and the site's step

    std::stringstream out;
    const auto sum = db->export_model(out);
    CHECK(sum.layer_corrections_left_out == 1);
    CHECK(sum.layer_users_left_out == 1);
    testing::TempDir dir;
    auto copy = store::open((dir.path / "imported.db").string(), store::Database::Mode::read_write);
    copy->import_model(out, "export.txt");
    // The site's step came along; bob's layer did not, and nothing in the copy accounts for one.
    CHECK(score(*copy, "") == Approx(site_after).margin(1e-3));
    CHECK(score(*copy, "bob@example.org") == Approx(site_after).margin(0.05));
    CHECK(copy->layer_corrections("bob@example.org").empty());
}

TEST_CASE("Every user with a layer, the most standing corrections first, undone ones not counted", "[engine][per_user]") {
    auto record = [](std::int64_t id, const std::string& user, const std::string& sender, store::Class to,
                     std::int64_t at, std::int64_t undone_at = 0) {
        store::CorrectionRecord r;
        r.id = id;
        r.to = to;
        r.at = at;
        r.undone_at = undone_at;
        store::CorrectionUndo u;
        u.layer = {0.5f, {1, 2}, user, sender};
        r.undo = u;
        return r;
    };
    const std::vector<store::CorrectionRecord> all = {
        record(1, "bob@example.org", "news@deals.example", store::Class::spam, 100),
        record(2, "alice@example.org", "news@deals.example", store::Class::ham, 200),
        record(3, "alice@example.org", "boss@work.example", store::Class::ham, 300),
        record(4, "carol@example.org", "news@deals.example", store::Class::spam, 400, 450),  // undone: no layer
        record(5, "dave@example.org", "x@y.example", store::Class::spam, 500),
    };
    const auto users = engine::layer_users(all);
    REQUIRE(users.size() == 3);
    CHECK(users[0].user == "alice@example.org");  // 2 corrections
    CHECK(users[0].to_ham == 2);
    CHECK(users[0].senders == 2);
    CHECK(users[0].last_at == 300);
    CHECK(users[1].user == "dave@example.org");  // 1, the latest
    CHECK(users[2].user == "bob@example.org");
    CHECK(users[2].to_spam == 1);
}
