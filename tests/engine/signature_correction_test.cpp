// Engine tests of corrections by signature: what was scanned is trained, once, before or after
// its scan; signatures as text; train_on_error.
#include <sqlite3.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>

#include "../support/fixture.hpp"
#include "../support/paths.hpp"
#include "../support/temp_dir.hpp"
#include "engine_support.hpp"
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mailsift/engine/explain.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/scan_record.hpp"
#include "mailsift/engine/trainer.hpp"
#include "mailsift/engine/model_settings.hpp"
#include "mailsift/store/sqlite_database.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/features/feature_hash.hpp"
#include "mailsift/features/slots.hpp"
#include "mailsift/features/view.hpp"

using namespace mailsift;
using mailsift::testing::fixture;
using TempDir = mailsift::testing::TempDir;
using namespace mailsift::engine_test;

TEST_CASE("A correction by signature trains what was scanned and moves on a second opinion", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    const store::Digest id = engine::message_digest("any bytes: the daemon's digest of what it scanned");
    store::Recording rec;
    rec.scans.push_back({id, 1000, model::Verdict::spam, "w:scanned\t2\nhdr:from:friend@example.org\t1\n"});
    db.record(rec);
    REQUIRE(db.find_scan(id).has_value());

    // The delivered copy gained headers on the way; only the signature matters.
    const std::string delivered = "Received: from somewhere\nX-Mailsift-Status: Yes, score=0.9990\n"
                                  "X-Mailsift-Signature: " + engine::signature_text(id) +
                                  "\nFrom: friend@example.org\nSubject: hi\n\ncompletely different body\n";
    engine::Trainer t(db, engine::Settings{});
    auto o = t.correct(delivered, delivered.size(), store::Class::ham, 2000);
    REQUIRE(o.by_signature);
    REQUIRE(o.result == store::LearnResult::learned);
    t.commit();
    auto counts = db.load_counts(model::TermFrequency::raw);
    REQUIRE(counts.features.at(features::feature_id("w:scanned")).ham == 2);
    REQUIRE(counts.features.count(features::feature_id("w:completely")) == 0);
    REQUIRE(db.load_contacts().contains("friend@example.org"));
    REQUIRE(db.corrections_since(0).false_positives == 1);

    SECTION("the same correction again changes nothing") {
        REQUIRE(t.correct(delivered, delivered.size(), store::Class::ham, 3000).result ==
                store::LearnResult::already_learned);
        t.commit();
        REQUIRE(db.load_counts(model::TermFrequency::raw).messages.ham == 1);
        REQUIRE(db.corrections_since(0).false_positives == 1);
    }
    SECTION("the other direction undoes the first and learns it so, by signature alone") {
        const auto flipped = t.correct_signature(id, store::Class::spam, 3000);
        REQUIRE(flipped->result == store::LearnResult::learned);
        REQUIRE(flipped->superseded);
        t.commit();
        counts = db.load_counts(model::TermFrequency::raw);
        REQUIRE(counts.messages.ham == 0);
        REQUIRE(counts.messages.spam == 1);
        REQUIRE(counts.features.at(features::feature_id("w:scanned")).spam == 2);
    }
    SECTION("an unknown signature is reported, and a message without one is learned as it is") {
        REQUIRE_FALSE(t.correct_signature(engine::message_digest("never scanned"), store::Class::spam, 1));
        const std::string plain = "From: a@example.org\nSubject: plain\n\nplain words\n";
        const auto p = t.correct(plain, plain.size(), store::Class::spam, 1);
        REQUIRE_FALSE(p.by_signature);
        REQUIRE(p.result == store::LearnResult::learned);
    }
}

TEST_CASE("A tagged message is one message: corrected before its scan is written, it still trains once", "[engine]") {
    // The order an IMAPSieve script meets: the user moves the message at once,
    // before mailsiftd has written its scan; later corrections find the scan.
    TempDir dir;
    const store::Digest id = engine::message_digest("what mailsiftd scanned");
    const std::string delivered = "Return-Path: <w@prize.example>\nX-Mailsift-Status: No, score=0.1000\n"
                                  "X-Mailsift-Signature: " + engine::signature_text(id) +
                                  "\nFrom: w@prize.example\nSubject: you won\n\nclaim your prize\n";
    REQUIRE(engine::message_signature(delivered) == id);
    REQUIRE(engine::message_identity(delivered) == id);
    REQUIRE(engine::message_identity("Subject: untagged\n\nbody\n") == engine::message_digest("Subject: untagged\n\nbody\n"));
    const std::string forged_then_ours = "X-Mailsift-Signature: 0000forged\n" + delivered;
    REQUIRE(engine::message_signature(forged_then_ours) == id);

    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    {
        engine::Trainer t(db, engine::Settings{});
        const auto first = t.correct(delivered, delivered.size(), store::Class::spam, 1000);
        REQUIRE_FALSE(first.by_signature);  // no scan yet: the message as it is
        REQUIRE(first.result == store::LearnResult::learned);
        t.commit();
    }
    REQUIRE(db.corrections_since(0).false_negatives == 1);  // the verdict from its X-Mailsift-Status
    const auto once_as_spam = db.load_counts(model::TermFrequency::raw);

    // Now the scan arrives, with features the delivered copy lacks (the envelope).
    store::Recording rec;
    rec.scans.push_back({id, 900, model::Verdict::ham, "w:claim\t1\nenv:helo:prize.example\t1\n"});
    db.record(rec);
    {
        store::SqliteDatabase other(dir.path / "m.db", store::Database::Mode::read_write);  // a second process
        engine::Trainer t(other, engine::Settings{});
        REQUIRE(t.correct(delivered, delivered.size(), store::Class::spam, 2000).result ==
                store::LearnResult::already_learned);
        REQUIRE(t.correct_signature(id, store::Class::spam, 2000)->result == store::LearnResult::already_learned);
        REQUIRE(t.learn(delivered, delivered.size(), store::Class::spam, 2000).result ==
                store::LearnResult::already_learned);
        t.commit();
    }
    const auto again = db.load_counts(model::TermFrequency::raw);
    REQUIRE(again.messages == once_as_spam.messages);
    REQUIRE(again.features == once_as_spam.features);
    REQUIRE(db.corrections_since(0).false_negatives == 1);

    SECTION("corrected the other way, it is one ham") {
        engine::Trainer t(db, engine::Settings{});
        const auto flipped = t.correct(delivered, delivered.size(), store::Class::ham, 3000);
        REQUIRE(flipped.result == store::LearnResult::learned);  // the spam correction undone first
        REQUIRE(flipped.superseded);
        t.commit();
        const auto after = db.load_counts(model::TermFrequency::raw);
        REQUIRE(after.messages == model::ClassCounts{0, 1});
        // The scan's features, once, as ham; nothing of the first form is left. Not
        // its envelope: the linear scorer's model does not learn what it never scores.
        REQUIRE(after.features.size() == 1);
        REQUIRE_FALSE(after.features.contains(features::feature_id("env:helo:prize.example")));
        REQUIRE(after.features.at(features::feature_id("w:claim")) == model::ClassCounts{0, 1});
    }
    SECTION("unlearning the delivered copy takes it out") {
        engine::Trainer t(db, engine::Settings{});
        REQUIRE(t.unlearn(delivered, store::Class::spam) == store::UnlearnResult::unlearned);
        t.commit();
        const auto after = db.load_counts(model::TermFrequency::raw);
        REQUIRE(after.messages == model::ClassCounts{0, 0});
        REQUIRE(after.features.empty());
    }
}

TEST_CASE("A correction by signature alone, before its scan, is kept and trained once when the scan arrives",
          "[engine]") {
    // mailsift correct --signature ID the moment a message arrives: no scan yet.
    // Whatever the order of such corrections, corrections of the message itself
    // and the scan's arrival, the end is the model that learned the scan once
    // with the last label given.
    TempDir dir;
    const store::Digest id = engine::message_digest("scanned later");
    const std::string delivered = "X-Mailsift-Status: No, score=0.1000\nX-Mailsift-Signature: " +
                                  engine::signature_text(id) + "\nFrom: w@prize.example\nSubject: won\n\nclaim prize\n";
    const std::string scan_lines = "w:claim\t1\nenv:helo:prize.example\t1\n";
    // The reference: a database that learned the scan once, as `label`.
    int references = 0;
    auto learned_once = [&](store::Class label) {
        store::SqliteDatabase ref(dir.path / ("ref-" + std::to_string(++references) + ".db"), store::Database::Mode::read_write);
        store::Recording rec;
        rec.scans.push_back({id, 900, model::Verdict::ham, scan_lines});
        ref.record(rec);
        engine::Trainer t(ref, engine::Settings{});
        REQUIRE(t.correct_signature(id, label, 1000)->result == store::LearnResult::learned);
        t.commit();
        return ref.load_counts(model::TermFrequency::raw);
    };
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    auto correct_signature = [&](store::Class c) {
        engine::Trainer t(db, engine::Settings{});
        const auto o = t.correct_or_defer_signature(id, c, 1000);
        t.commit();
        return o;
    };
    auto correct_message = [&](store::Class c) {
        engine::Trainer t(db, engine::Settings{});
        t.correct(delivered, delivered.size(), c, 1000);
        t.commit();
    };
    auto scan_arrives = [&] {
        store::Recording rec;
        rec.scans.push_back({id, 900, model::Verdict::ham, scan_lines});
        db.record(rec);
        engine::Trainer t(db, engine::Settings{});
        return t.apply_deferred_corrections(1100);
    };
    auto require_model = [&](const model::Counts& expected) {
        const auto now = db.load_counts(model::TermFrequency::raw);
        REQUIRE(now.messages == expected.messages);
        REQUIRE(now.features == expected.features);
        REQUIRE(now.feature_totals == expected.feature_totals);
    };

    SECTION("deferred, then the scan: trained once; again, and by the message, nothing more") {
        const auto o = correct_signature(store::Class::spam);
        REQUIRE(o.deferred);
        REQUIRE(db.load_counts(model::TermFrequency::raw).messages == model::ClassCounts{0, 0});  // nothing yet
        REQUIRE(db.has_deferred_corrections());
        REQUIRE(scan_arrives() == 1);
        REQUIRE_FALSE(db.has_deferred_corrections());
        require_model(learned_once(store::Class::spam));
        REQUIRE(db.corrections_since(0).false_negatives == 1);
        REQUIRE(correct_signature(store::Class::spam).result == store::LearnResult::already_learned);
        correct_message(store::Class::spam);
        REQUIRE(scan_arrives() == 0);
        require_model(learned_once(store::Class::spam));
        REQUIRE(db.corrections_since(0).false_negatives == 1);
    }
    SECTION("deferred twice with both labels: the last one is trained") {
        REQUIRE(correct_signature(store::Class::spam).deferred);
        REQUIRE(correct_signature(store::Class::ham).deferred);
        REQUIRE(scan_arrives() == 1);
        require_model(learned_once(store::Class::ham));
    }
    SECTION("deferred as spam, then the message corrected to ham: the message's correction is the last") {
        REQUIRE(correct_signature(store::Class::spam).deferred);
        correct_message(store::Class::ham);
        REQUIRE_FALSE(db.has_deferred_corrections());
        scan_arrives();
        const auto counts = db.load_counts(model::TermFrequency::raw);
        REQUIRE(counts.messages == model::ClassCounts{0, 1});  // one ham (as the message: the scan came later)
        // Corrected the other way once more, by signature: the ham correction undone, the scan's features learned as spam.
        REQUIRE(correct_signature(store::Class::spam).result == store::LearnResult::learned);
        require_model(learned_once(store::Class::spam));
    }
    SECTION("the message corrected to ham, then the signature to spam before the scan: spam, once") {
        correct_message(store::Class::ham);
        REQUIRE(correct_signature(store::Class::spam).deferred);
        REQUIRE(scan_arrives() == 1);
        require_model(learned_once(store::Class::spam));
    }
    SECTION("the scan is written first: correct_or_defer trains at once") {
        REQUIRE(scan_arrives() == 0);
        const auto o = correct_signature(store::Class::spam);
        REQUIRE_FALSE(o.deferred);
        REQUIRE(o.result == store::LearnResult::learned);
        require_model(learned_once(store::Class::spam));
    }
    SECTION("a correction whose scan never comes is pruned with the signatures") {
        REQUIRE(correct_signature(store::Class::spam).deferred);
        REQUIRE(db.prune_scans(999, 1000).scans == 0);  // requested at 1000: kept
        REQUIRE(db.has_deferred_corrections());
        db.prune_scans(1001, 1000);
        REQUIRE_FALSE(db.has_deferred_corrections());
        REQUIRE(scan_arrives() == 0);
        REQUIRE(db.load_counts(model::TermFrequency::raw).messages == model::ClassCounts{0, 0});
    }
}

TEST_CASE("Signatures round-trip as text and feature lines parse back", "[engine]") {
    const auto d = engine::message_digest("x");
    REQUIRE(engine::parse_signature(" " + engine::signature_text(d) + "\r") == d);
    REQUIRE_FALSE(engine::parse_signature("xyz"));
    REQUIRE_FALSE(engine::parse_signature(std::string(32, 'g')));
    const auto lines = engine::parse_feature_lines("w:a\t3\nbroken line\nw:tab\tin\t2\nw:zero\t0\n");
    REQUIRE(lines.size() == 2);
    REQUIRE(lines[0] == std::pair<std::string, std::uint32_t>{"w:a", 3});
    REQUIRE(lines[1].first == "w:tab\tin");
}

TEST_CASE("With train_on_error a confident right verdict is confirmed, not trained", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    const store::Digest sure = engine::message_digest("scanned as spam with confidence");
    const store::Digest unsure = engine::message_digest("scanned as unsure");
    store::Recording rec;
    rec.scans.push_back({sure, 1000, model::Verdict::spam, "w:sure\t1\n"});
    rec.scans.push_back({unsure, 1000, model::Verdict::unsure, "w:unsure\t1\n"});
    db.record(rec);
    engine::Settings s;
    s.train_on_error = true;
    engine::Trainer t(db, s);
    const auto confirmed = t.correct_signature(sure, store::Class::spam, 2000);
    REQUIRE(confirmed->confirmed);
    const auto error = t.correct_signature(sure, store::Class::ham, 2000);  // an error: trained
    REQUIRE_FALSE(error->confirmed);
    REQUIRE(error->result == store::LearnResult::learned);
    const auto thick = t.correct_signature(unsure, store::Class::spam, 2000);  // the unsure band: trained
    REQUIRE_FALSE(thick->confirmed);
    t.commit();
    const auto counts = db.load_counts(model::TermFrequency::raw);
    REQUIRE(counts.messages.spam == 1);  // only the unsure one
    REQUIRE(counts.messages.ham == 1);   // the error
    REQUIRE(db.corrections_since(0).false_positives == 1);
    REQUIRE(db.corrections_since(0).unsure_to_spam == 1);
}
