// The standing corrections of one sender's mail, whoever's layer they stepped
// (WriteTransaction::standing_sender_corrections: per_user, opposite corrections
// cancel in the site), on every backend; and a store from before the column.
#include <catch2/catch.hpp>

#include "../support/backends.hpp"
#include "mailsift/store/training_batch.hpp"
#include "store_support.hpp"

using namespace mailsift;
using mailsift::testing::digest;
using store::Class;

namespace {

store::CorrectionUndo layer_of(const std::string& user, const std::string& sender) {
    store::CorrectionUndo undo;
    undo.layer = {0.5f, {1, 2}, user, sender};
    return undo;
}

}  // namespace

TEST_CASE("A sender's standing corrections, every user's, with their signatures, undone ones left out", "[store]") {
    FOR_EACH_BACKEND(s);
    const auto db = s.open();
    store::TrainingBatch b(*db);
    b.record_correction({model::Verdict::ham, Class::spam, 1000, digest(1), "cli:bob", layer_of("bob@example.org", "news@deals.example")});
    b.record_correction({model::Verdict::spam, Class::ham, 1100, digest(2), "cli:alice", layer_of("alice@example.org", "news@deals.example")});
    b.record_correction({model::Verdict::ham, Class::spam, 1200, digest(3), "cli:bob", layer_of("bob@example.org", "boss@work.example")});
    b.record_correction({model::Verdict::ham, Class::spam, 1300, digest(4), "cli:root", store::CorrectionUndo{}});  // no layer
    b.commit();

    store::TrainingBatch t(*db);
    auto found = t.standing_sender_corrections("news@deals.example");
    REQUIRE(found.size() == 2);
    CHECK(found[0].signature == digest(1));
    CHECK(found[0].to == Class::spam);
    CHECK(found[0].undo->layer.user == "bob@example.org");
    CHECK(found[1].signature == digest(2));
    CHECK(found[1].undo->layer.user == "alice@example.org");
    CHECK(t.standing_sender_corrections("").empty());
    CHECK(t.standing_sender_corrections("nobody@example.org").empty());

    // Cancelled in the site: the record says so from now on, and still names the sender.
    store::CorrectionUndo cancelled = *found[0].undo;
    cancelled.site_cancelled = true;
    t.set_correction_undo(found[0].id, cancelled);
    t.mark_undone(found[1].id, 1400, "cli:alice");
    t.commit();
    store::TrainingBatch again(*db);
    found = again.standing_sender_corrections("news@deals.example");
    REQUIRE(found.size() == 1);  // alice's undone
    CHECK(found[0].undo->site_cancelled);
    again.commit();
}

TEST_CASE("A store from before corrections.layer_sender gains it, its corrections of no sender", "[store]") {
    // SQLite schema 19, PostgreSQL 14: no corrections.layer_sender.
    FOR_EACH_BACKEND(s);
    {
        const auto opened = s.open();
        store::TrainingBatch b(*opened);
        b.record_correction({model::Verdict::ham, Class::spam, 1000, digest(1), "cli:bob", layer_of("bob@example.org", "news@deals.example")});
        b.commit();
    }
    s.exec("DROP INDEX corrections_layer_sender");
    s.exec("ALTER TABLE corrections DROP COLUMN layer_sender");
    const bool sqlite = s.kind() == "sqlite";
    s.exec(sqlite ? "PRAGMA user_version = 19" : "UPDATE mailsift_schema SET version = 14");
    const auto db = s.open();
    CHECK(s.value(sqlite ? "PRAGMA user_version" : "SELECT version FROM mailsift_schema") ==
          db->statistics().schema_version);
    store::TrainingBatch b(*db);
    CHECK(b.standing_sender_corrections("news@deals.example").empty());  // recorded before: found by no sender
    b.record_correction({model::Verdict::ham, Class::spam, 2000, digest(2), "cli:bob", layer_of("bob@example.org", "news@deals.example")});
    CHECK(b.standing_sender_corrections("news@deals.example").size() == 1);
    b.commit();
    CHECK(db->layer_corrections("bob@example.org").size() == 2);  // both in bob's layer, as before
}

TEST_CASE("The users mailsiftd delivered to are kept, each once, and a store from before learns those with a layer",
          "[store]") {
    FOR_EACH_BACKEND(s);
    {
        const auto db = s.open();
        CHECK_FALSE(db->delivered_to("bob@example.org"));
        store::Recording r;
        r.delivered = {{"bob@example.org", 1000}, {"example.net", 1100}};
        db->record(r);
        r.delivered = {{"bob@example.org", 900}};  // an older time: the latest stays
        db->record(r);
        CHECK(db->delivered_to("bob@example.org"));
        CHECK(db->delivered_to("example.net"));
        CHECK_FALSE(db->delivered_to("alice@example.org"));
        CHECK(s.value("SELECT last_at FROM delivered_users WHERE name = 'bob@example.org'") == 1000);
        store::TrainingBatch b(*db);
        b.record_correction({model::Verdict::ham, Class::spam, 1200, digest(1), "cli:carol", layer_of("carol@example.org", "news@deals.example")});
        b.commit();
    }
    // SQLite schema 20, PostgreSQL 15: no table of them; carol has a layer, so was delivered to.
    s.exec("DROP TABLE delivered_users");
    const bool sqlite = s.kind() == "sqlite";
    s.exec(sqlite ? "PRAGMA user_version = 20" : "UPDATE mailsift_schema SET version = 15");
    const auto db = s.open();
    CHECK(db->delivered_to("carol@example.org"));
    CHECK_FALSE(db->delivered_to("bob@example.org"));  // delivered to before: known again with the next scan
}
