// Engine tests: learning and scoring the fixtures, the thick threshold, contacts, refreshing the
// model, the digest, what cannot be learned, and the linear scorer's stored steps. Settings,
// corrections by signature, score parts and reading by rows have files of their own.
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
#include "mailsift/engine/filter.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/message_checks.hpp"
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

TEST_CASE("A model trained on fixtures separates new spam from new ham", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    engine::Settings s;
    train_fixtures(db, s);
    engine::Filter f(db, s);
    const auto spam = f.classify(new_spam);
    const auto ham = f.classify(new_ham);
    REQUIRE(spam.score.log_odds > 0);
    REQUIRE(ham.score.log_odds < 0);
    // Eight messages make a small model: the linear scorer keeps its scores
    // modest (a learned message moves its own score by at most linear_step).
    REQUIRE(spam.score.log_odds > ham.score.log_odds + 1);
    REQUIRE_FALSE(spam.toward_spam.empty());
    REQUIRE_FALSE(spam.toward_spam[0].feature.empty());
    REQUIRE(spam.toward_spam[0].log_odds > 0);
}

TEST_CASE("Learning the same messages twice changes nothing", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    engine::Settings s;
    train_fixtures(db, s);
    const auto before = db.load_counts(model::TermFrequency::raw);
    engine::Trainer t(db, s);
    const std::string m = fixture("spam_cheap_pills.eml");
    REQUIRE(t.learn(m, m.size(), store::Class::spam, 2000).result == store::LearnResult::already_learned);
    t.commit();
    const auto after = db.load_counts(model::TermFrequency::raw);
    REQUIRE(after.messages.spam == before.messages.spam);
    REQUIRE(after.feature_totals.spam == before.feature_totals.spam);
    REQUIRE(after.features == before.features);
}

TEST_CASE("With train_margin, learn skips what the model already knows and learns errors and near misses", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    engine::Settings s;
    s.scorer = engine::Scorer::naive_bayes;  // the margin is on the counts' log-odds, which classify shows alone
    train_fixtures(db, s);
    double log_odds = 0;
    {
        engine::Filter f(db, s);
        log_odds = f.classify(new_spam).score.log_odds;
    }
    REQUIRE(log_odds > 1.0);
    const auto before = db.load_counts(model::TermFrequency::raw);
    const auto counts_now = [&] { return db.load_counts(model::TermFrequency::raw); };

    SECTION("scored right beyond the margin: not learned, however often it is given") {
        s.train_margin = log_odds - 0.01;
        engine::Trainer t(db, s);
        for (int i = 0; i < 2; ++i) {
            const auto o = t.learn(new_spam, new_spam.size(), store::Class::spam, 2000);
            REQUIRE(o.problem == engine::MessageProblem::none);
            REQUIRE(o.confident);
        }
        t.commit();
        REQUIRE(t.counts().confident == 2);
        REQUIRE(t.counts().learned == 0);
        REQUIRE(counts_now().features == before.features);
        REQUIRE(counts_now().messages == before.messages);
    }
    SECTION("within the margin: learned, then already learned") {
        s.train_margin = log_odds + 0.01;
        engine::Trainer t(db, s);
        REQUIRE_FALSE(t.learn(new_spam, new_spam.size(), store::Class::spam, 2000).confident);
        t.commit();
        REQUIRE(counts_now().messages.spam == before.messages.spam + 1);
        // The in-memory model learned it too: now far beyond the margin, yet a message
        // in the store is reported as such, never as "already known".
        const auto again = t.learn(new_spam, new_spam.size(), store::Class::spam, 2000);
        REQUIRE_FALSE(again.confident);
        REQUIRE(again.result == store::LearnResult::already_learned);
    }
    SECTION("an error is learned whatever the margin, and a correction always trains") {
        s.train_margin = 1000;
        engine::Trainer t(db, s);
        const auto o = t.learn(new_spam, new_spam.size(), store::Class::ham, 2000);
        REQUIRE_FALSE(o.confident);
        REQUIRE(o.result == store::LearnResult::learned);
        const std::string other = new_spam + "and a second copy\n";
        const auto c = t.correct(other, other.size(), store::Class::spam, 2000);
        REQUIRE(c.problem == engine::MessageProblem::none);
        REQUIRE(c.result == store::LearnResult::learned);
        t.commit();
        REQUIRE(counts_now().messages.ham == before.messages.ham + 1);
        REQUIRE(counts_now().messages.spam == before.messages.spam + 1);
    }
}

TEST_CASE("The thick threshold judges a learn against the model as it was when the trainer started", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    engine::Settings s;
    s.train_margin = 0.5;
    engine::Trainer t(db, s);
    // Spam, then ham, then spam again that the growing model would know by now: the
    // trainer started on an empty model, so all of it is learned, in any order.
    for (auto f : spam_fixtures) REQUIRE_FALSE(t.learn(fixture(f), fixture(f).size(), store::Class::spam, 1).confident);
    for (auto f : ham_fixtures) REQUIRE_FALSE(t.learn(fixture(f), fixture(f).size(), store::Class::ham, 1).confident);
    REQUIRE_FALSE(t.learn(new_spam, new_spam.size(), store::Class::spam, 1).confident);
    t.commit();
    REQUIRE(t.counts().confident == 0);
    REQUIRE(db.statistics().messages.spam == 4);
    // The next command starts from that model and leaves out what it knows.
    engine::Trainer next(db, s);
    const std::string copy = new_spam + "one more line\n";
    REQUIRE(next.learn(copy, copy.size(), store::Class::spam, 2).confident);
}

TEST_CASE("Until both classes are learned, the thick threshold learns everything", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    engine::Settings s;
    s.train_margin = 1;
    engine::Trainer t(db, s);
    // Spam only, sorted by class as 'learn --spam DIR' gives it: all of it is learned,
    // however sure a spam-only model is; then ham with a margin in force.
    for (auto f : spam_fixtures) REQUIRE_FALSE(t.learn(fixture(f), fixture(f).size(), store::Class::spam, 1).confident);
    t.commit();
    REQUIRE(db.statistics().messages.spam == 3);
    model::Snapshot one_class(model::Counts{{3, 0}, {}, {}}, s.model);
    REQUIRE_FALSE(engine::known_beyond_margin(one_class, 100.0, true, 1.0));
    model::Snapshot both(model::Counts{{3, 1}, {}, {}}, s.model);
    REQUIRE(engine::known_beyond_margin(both, 100.0, true, 1.0));
    REQUIRE_FALSE(engine::known_beyond_margin(both, 100.0, false, 1.0));  // wrong side
    REQUIRE_FALSE(engine::known_beyond_margin(both, 0.5, true, 1.0));     // within the margin
    REQUIRE_FALSE(engine::known_beyond_margin(both, 100.0, true, 0.0));   // off
}

TEST_CASE("A snapshot unlearns exactly what it learned", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    engine::Settings s;
    train_fixtures(db, s);
    engine::Filter f(db, s);
    model::Snapshot snap = f.model()->snapshot;
    const auto bag = f.features_of(new_spam);
    std::vector<model::Term> terms;
    for (const auto& e : bag.entries()) terms.push_back({e.id, e.count, features::is_header_feature(bag.text(e))});
    const double before = model::score(terms, snap).log_odds;
    snap.learn(terms, true);
    REQUIRE(model::score(terms, snap).log_odds > before);
    snap.unlearn(terms, true);
    REQUIRE(model::score(terms, snap).log_odds == Approx(before));
    REQUIRE(snap.messages() == f.model()->snapshot.messages());
}

TEST_CASE("Senders of ham become contacts and then count as known", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    engine::Settings s;
    train_fixtures(db, s);
    REQUIRE(db.load_contacts().contains("alice@university.example"));
    REQUIRE_FALSE(db.load_contacts().contains("winner@lucky-prizes.example"));
    engine::Filter f(db, s);
    const auto bag = f.features_of(fixture("ham_meeting_notes.eml"));
    REQUIRE(bag.count("hdr:sender_in_contacts") == 1);
}

TEST_CASE("The filter refreshes its model only when the database changed", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    store::SqliteDatabase reader(dir.path / "m.db", store::Database::Mode::read_only);
    engine::Settings s;
    engine::Filter f(reader, s);
    REQUIRE_FALSE(f.refresh());
    REQUIRE(f.model()->snapshot.vocabulary() == 0);
    train_fixtures(db, s);
    REQUIRE(f.refresh());
    REQUIRE(f.model()->snapshot.vocabulary() > 0);
    REQUIRE(f.model()->snapshot.messages().spam == 3);
    REQUIRE_FALSE(f.refresh());
}

TEST_CASE("A model refreshed by the changes scores exactly as one reloaded from scratch", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    store::SqliteDatabase reader(dir.path / "m.db", store::Database::Mode::read_only);
    for (const auto tf : {model::TermFrequency::raw, model::TermFrequency::boolean}) {
        engine::Settings s;
        s.model.term_frequency = tf;
        engine::Filter live(reader, s);
        auto same_as_reloaded = [&](bool expect_reload) {
            REQUIRE(live.refresh());
            const auto m = live.model();
            REQUIRE(m->reloaded == expect_reload);
            store::SqliteDatabase fresh_db(dir.path / "m.db", store::Database::Mode::read_only);
            engine::Filter fresh(fresh_db, s);
            const auto f = fresh.model();
            REQUIRE(f->reloaded);
            REQUIRE(m->sequence == f->sequence);
            REQUIRE(m->snapshot.vocabulary() == f->snapshot.vocabulary());
            REQUIRE(m->snapshot.messages() == f->snapshot.messages());
            for (const auto& text : {new_spam, new_ham, fixture("spam_investment.eml"), fixture("ham_patch_review.eml")}) {
                REQUIRE(live.classify(text).score.log_odds == fresh.classify(text).score.log_odds);
            }
        };
        engine::Trainer t(db, s);
        const std::string spam = fixture("spam_money_offer.eml"), ham = fixture("ham_meeting_notes.eml");
        t.learn(spam, spam.size(), store::Class::spam, 1000);
        t.commit();
        same_as_reloaded(false);
        t.learn(ham, ham.size(), store::Class::ham, 1000);
        t.learn(new_spam, new_spam.size(), store::Class::spam, 1000);
        t.commit();
        same_as_reloaded(false);
        t.learn(new_spam, new_spam.size(), store::Class::ham, 1000);  // moved: rows change in both classes
        REQUIRE(t.unlearn(spam, store::Class::spam) == store::UnlearnResult::unlearned);  // rows go
        t.commit();
        same_as_reloaded(false);
        REQUIRE(db.prune(0, 5000).features > 0);  // pruned: reread
        same_as_reloaded(true);
        REQUIRE_FALSE(live.refresh());
        // Clean up for the other term-frequency mode.
        for (const auto& [text, c] : {std::pair{ham, store::Class::ham}, std::pair{new_spam, store::Class::ham}}) {
            t.unlearn(text, c);
        }
        t.commit();
    }
}

TEST_CASE("The digest ignores our own X-Mailsift headers", "[engine]") {
    const std::string plain = "From: a@example.org\nSubject: hi\n\nbody\n";
    const std::string tagged =
        "From: a@example.org\nX-Mailsift-Status: Yes, score=0.99\n\tcontinued\nSubject: hi\n\nbody\n";
    REQUIRE(engine::message_digest(plain) == engine::message_digest(tagged));
    REQUIRE(engine::message_digest(plain) != engine::message_digest(plain + "more\n"));
}

TEST_CASE("The digest reads through what the transport changes: mbox line, line ends, spaces after a colon", "[engine]") {
    const std::string file = "From: Ann <a@example.org>\nSubject: a folded\n  subject\nTo:b@example.org\n\nline one\nline two\n";
    const auto crlf = [](std::string s) {
        for (std::size_t at = 0; (at = s.find('\n', at)) != std::string::npos; at += 2) s.insert(at, "\r");
        return s;
    };
    // As mailsiftd rebuilds it from Postfix's frames (value without its space: "Name: value"),
    // and from Sendmail's (the space kept: "Name:" + " value"), CRLF throughout.
    const std::string postfix = crlf("From: Ann <a@example.org>\nSubject: a folded\n  subject\nTo: b@example.org\n\nline one\nline two\n");
    const std::string sendmail = crlf("From: Ann <a@example.org>\nSubject:  a folded\n  subject\nTo: b@example.org\n\nline one\nline two\n");
    const auto id = engine::message_digest(file);
    CHECK(engine::message_digest(postfix) == id);
    CHECK(engine::message_digest(sendmail) == id);
    CHECK(engine::message_digest("From ann@example.org Thu Apr 12 10:00:00 2007\n" + file) == id);
    CHECK(engine::message_digest(crlf(file)) == id);
    CHECK(engine::message_digest("From ann@example.org Thu Apr 12 10:00:00 2007\r\n" + crlf(file)) == id);
    // What the message says still counts: its body, its folding, a field's name and value.
    CHECK(engine::message_digest(file + "line three\n") != id);
    CHECK(engine::message_digest(crlf(file) + "\r\n") != id);
    std::string unfolded = file;
    unfolded.replace(unfolded.find("\n  subject"), 10, " subject");
    CHECK(engine::message_digest(unfolded) != id);
    std::string renamed = file;
    renamed.replace(renamed.find("To:"), 3, "Cc:");
    CHECK(engine::message_digest(renamed) != id);
    std::string spaced_body = file;
    spaced_body.replace(spaced_body.find("line one"), 8, "line  one");
    CHECK(engine::message_digest(spaced_body) != id);

    // The digest these bytes had before: only where it differs, and it differs by message.
    const std::string plain = "From: a@example.org\nSubject: hi\n\nbody\n";
    CHECK_FALSE(engine::earlier_message_digest(plain));
    CHECK_FALSE(engine::earlier_message_digest("From: a@example.org\nX-Mailsift-Status:  Yes\nSubject: hi\n\nbody\n"));
    const auto earlier = engine::earlier_message_digest(crlf(plain));
    REQUIRE(earlier);
    CHECK(*earlier != engine::message_digest(crlf(plain)));
    CHECK(engine::earlier_message_digest(crlf(plain + "more\n")) != earlier);
}

TEST_CASE("A message learned under its earlier digest is not learned twice, and unlearns", "[engine]") {
    TempDir dir;
    const auto path = dir.path / "m.db";
    const std::string message = "From: a@example.org\r\nSubject: Cheap pills online\r\n\r\nBuy cheap pills online now\r\n";
    const auto earlier = engine::earlier_message_digest(message);
    REQUIRE(earlier);
    engine::Settings s;
    {
        store::SqliteDatabase db(path, store::Database::Mode::read_write);
        engine::Trainer t(db, s);
        REQUIRE(t.learn(message, message.size(), store::Class::spam, 1000).result == store::LearnResult::learned);
        t.commit();
    }
    {
        // As a store written before message_digest() read through line ends holds it.
        sqlite3* raw = nullptr;
        REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
        const auto now = engine::message_digest(message);
        for (const char* table : {"messages", "linear_samples"}) {
            sqlite3_stmt* st = nullptr;
            const std::string sql = std::string("UPDATE ") + table + " SET digest = ?1 WHERE digest = ?2";
            REQUIRE(sqlite3_prepare_v2(raw, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
            sqlite3_bind_blob(st, 1, earlier->data(), static_cast<int>(earlier->size()), SQLITE_TRANSIENT);
            sqlite3_bind_blob(st, 2, now.data(), static_cast<int>(now.size()), SQLITE_TRANSIENT);
            REQUIRE(sqlite3_step(st) == SQLITE_DONE);
            sqlite3_finalize(st);
        }
        REQUIRE(sqlite3_changes(raw) == 1);  // its rehearsal sample
        sqlite3_close(raw);
    }
    store::SqliteDatabase db(path, store::Database::Mode::read_write);
    const auto learned = [&] { return db.load_counts(model::TermFrequency::raw).messages; };
    REQUIRE(learned().spam == 1);
    engine::Trainer t(db, s);
    CHECK(t.learn(message, message.size(), store::Class::spam, 2000).result == store::LearnResult::already_learned);
    CHECK(t.learn(message, message.size(), store::Class::ham, 2000).result == store::LearnResult::moved);
    t.commit();
    CHECK(learned().spam == 0);
    CHECK(learned().ham == 1);
    CHECK(t.unlearn(message, store::Class::ham) == store::UnlearnResult::unlearned);
    t.commit();
    CHECK(learned().ham == 0);
    CHECK(db.linear_samples().empty());
}

TEST_CASE("Messages that cannot be learned are recognised", "[engine]") {
    mime::Limits limits;
    REQUIRE(engine::check_message("", 0, limits) == engine::MessageProblem::empty);
    REQUIRE(engine::check_message(std::string("\x7f" "ELF\0\0\0", 7), 7, limits) == engine::MessageProblem::not_a_message);
    REQUIRE(engine::check_message("just some words\n", 16, limits) == engine::MessageProblem::not_a_message);
    REQUIRE(engine::check_message("just some words\nFrom: a@example.org\n\nbody", 40, limits) ==
            engine::MessageProblem::not_a_message);  // the parser would read it all as body
    REQUIRE(engine::check_message("\nFrom: a@example.org\n", 21, limits) == engine::MessageProblem::not_a_message);
    // Real mail, however broken: NUL bytes, bare CR, a stray continuation first, no body, 8-bit headers.
    const std::string nul("Subject: x\0y\n\nbo\0dy", 20);
    REQUIRE(engine::check_message(nul, nul.size(), limits) == engine::MessageProblem::none);
    REQUIRE(engine::check_message("From: a@example.org\rSubject: x\r\rbody\r", 38, limits) == engine::MessageProblem::none);
    REQUIRE(engine::check_message("  stray\nFrom: a@example.org\n\nbody", 34, limits) == engine::MessageProblem::none);
    REQUIRE(engine::check_message("From : a@example.org", 20, limits) == engine::MessageProblem::none);
    REQUIRE(engine::check_message("Subject: Gr\xfc\xdf\n\nx", 17, limits) == engine::MessageProblem::none);
    for (auto p : {engine::MessageProblem::empty, engine::MessageProblem::not_a_message}) REQUIRE(engine::refused(p));
    for (auto p : {engine::MessageProblem::none, engine::MessageProblem::too_large, engine::MessageProblem::truncated_mime})
        REQUIRE_FALSE(engine::refused(p));
    REQUIRE(engine::check_message("Subject: x\n\nbody", 16, limits) == engine::MessageProblem::none);
    REQUIRE(engine::check_message("Subject: x\n\nbody", limits.max_message_bytes + 1, limits) ==
            engine::MessageProblem::too_large);
}

TEST_CASE("What is not mail is refused and not learned, broken mail is learned", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    engine::Trainer t(db, engine::Settings{});
    REQUIRE(t.learn("", 0, store::Class::spam, 1).problem == engine::MessageProblem::empty);
    REQUIRE(t.learn("\x01\x02 junk", 7, store::Class::spam, 1).problem == engine::MessageProblem::not_a_message);
    t.commit();
    REQUIRE(db.statistics().messages.spam == 0);
    REQUIRE(db.statistics().distinct_features == 0);
    // A multipart whose closing boundary never came is learned on what was read, as mailsiftd scores it.
    const std::string truncated = fixture("truncated_multipart.eml");
    REQUIRE(t.learn(truncated, truncated.size(), store::Class::spam, 1).problem == engine::MessageProblem::none);
    // Larger than the limit: learned on the prefix.
    const std::string big = "Subject: big\n\nlarge offer\n";
    REQUIRE(t.learn(big, engine::Settings{}.limits.max_message_bytes + 1, store::Class::spam, 1).problem ==
            engine::MessageProblem::none);
    t.commit();
    REQUIRE(db.statistics().messages.spam == 2);
}

TEST_CASE("With model = linear, learning steps the stored weights and a refreshed filter scores with them", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    store::SqliteDatabase writer(dir.path / "m.db", store::Database::Mode::read_write);  // another connection, as learn is
    engine::Settings s = engine::parse_settings("model = linear\n", "x.conf");
    engine::Filter f(db, s);
    // Empty: the linear scorer is the calibrated naive Bayes (u = 1, no weights), z = 0.
    REQUIRE(f.classify(new_spam).score.log_odds == 0.0);
    train_fixtures(writer, s);
    REQUIRE(f.refresh());
    const auto m = f.model();
    REQUIRE(m->linear);
    REQUIRE(m->linear_sequence == db.model_sequence());
    REQUIRE(m->linear->bias() != 0.0);

    // The score is b + u·nb(x) + Σ w over the message's slots, nb(x) the naive-Bayes log-odds over
    // nb_temperature, clipped to ±nb_clip (LinearParameters' constants).
    for (const std::string& raw : {new_spam, new_ham}) {
        const auto bag = f.features_of(raw);
        std::vector<model::Slot> slots;
        features::message_slots(features::message_view(raw, s.slots.ngram_bytes), bag, s.slots, slots);
        const double nb = model::score(engine::scoring_terms(bag), m->snapshot).log_odds;
        const double input = std::clamp(nb / s.linear.nb_temperature, -s.linear.nb_clip, s.linear.nb_clip);
        double expected = m->linear->bias() + m->linear->nb_weight() * input;
        for (const auto j : slots) expected += m->linear->weight(j);
        const auto c = f.classify(raw);
        REQUIRE(c.score.log_odds == Approx(expected).epsilon(1e-9));
        REQUIRE(c.score.probability == Approx(model::probability_from_log_odds(expected / s.linear.temperature)));
    }
    REQUIRE(f.classify(new_spam).score.log_odds > f.classify(new_ham).score.log_odds);

    // A later batch: the refreshed weights are those of a filter that reads everything anew.
    {
        engine::Trainer t(writer, s);
        t.learn(new_spam, new_spam.size(), store::Class::spam, 2000);
        t.commit();
    }
    REQUIRE(f.refresh());
    REQUIRE_FALSE(f.model()->reloaded);
    const engine::Filter fresh(db, s);
    const auto a = f.model()->linear, b = fresh.model()->linear;
    REQUIRE(a->bias() == b->bias());
    REQUIRE(a->nb_weight() == b->nb_weight());
    REQUIRE(std::equal(a->weights().begin(), a->weights().end(), b->weights().begin(), b->weights().end()));
    REQUIRE(f.classify(new_ham).score.log_odds == fresh.classify(new_ham).score.log_odds);

    // A configuration that gives the weights another size scores with the model's, and says so.
    const engine::Settings other = engine::parse_settings("model = linear\nlinear_hash_bits = 16\n", "x.conf");
    const engine::Filter resized(db, other);
    REQUIRE(resized.settings().linear.hash_bits == s.linear.hash_bits);
    REQUIRE(resized.settings().slots.bits == s.linear.hash_bits);
    REQUIRE(resized.setting_notes().size() == 1);
    REQUIRE_THAT(resized.setting_notes()[0], Catch::Contains("linear_hash_bits = 16") &&
                                                 Catch::Contains("trained with " + std::to_string(s.linear.hash_bits)));
    REQUIRE(resized.classify(new_ham).score.log_odds == fresh.classify(new_ham).score.log_odds);
}
