// Engine tests: real parsing, real SQLite files, fixture messages from tests/data.
#include <sqlite3.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>

#include "../support/fixture.hpp"
#include "../support/paths.hpp"
#include "../support/temp_dir.hpp"
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mailsift/engine/explain.hpp"
#include "mailsift/engine/filter.hpp"
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

namespace {

const char* const spam_fixtures[] = {"spam_money_offer.eml", "spam_cheap_pills.eml", "spam_investment.eml"};
const char* const ham_fixtures[] = {"ham_meeting_notes.eml", "ham_patch_review.eml", "ham_build_report.eml"};

void train_fixtures(store::Database& db, const engine::Settings& s) {
    engine::Trainer t(db, s);
    for (auto f : spam_fixtures) t.learn(fixture(f), fixture(f).size(), store::Class::spam, 1000);
    for (auto f : ham_fixtures) t.learn(fixture(f), fixture(f).size(), store::Class::ham, 1000);
    t.commit();
}

const std::string new_spam =
    "From: Lottery <win@prize-center.example>\nSubject: You WON a FREE prize!!!\n\n"
    "CONGRATULATIONS! You have WON $250,000. Claim your FREE prize now, limited offer, act now!!!\n";
const std::string new_ham =
    "From: Carol <carol@university.example>\nSubject: Re: the seminar\nDate: Thu, 5 Sep 2002 10:00:00 +0000\n"
    "Message-ID: <c1@university.example>\n\n"
    "Thanks for the notes. I will review the draft of the paper and the patch before the meeting.\n";

}  // namespace

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

TEST_CASE("Settings are parsed into typed values with line-numbered errors", "[engine]") {
    const auto s = engine::parse_settings(
        "# comment\n"
        "database = /var/lib/mailsift/m.db\n"
        "alpha = 0.5\n"
        "term_frequency = raw   # trailing comment\n"
        "spam_threshold = 0.95\n"
        "ham_threshold = 0.2\n"
        "features.urls = off\n"
        "features.relay_path = on\n"
        "limits.max_message_bytes = 2M\n",
        "test.conf");
    REQUIRE(s.database == "/var/lib/mailsift/m.db");
    REQUIRE(s.model.alpha == 0.5);
    REQUIRE(s.model.term_frequency == model::TermFrequency::raw);
    REQUIRE(s.model.spam_threshold == 0.95);
    REQUIRE_FALSE(s.features.urls);
    REQUIRE(s.features.relay_path);
    REQUIRE_FALSE(s.features.dates);  // off unless asked for
    REQUIRE(s.limits.max_message_bytes == 2 * 1024 * 1024);

    REQUIRE_THROWS_WITH(engine::parse_settings("alpha = 0.5\nbogus = 1\n", "x.conf"),
                        "x.conf:2: unknown setting 'bogus'");
    REQUIRE_THROWS_WITH(engine::parse_settings("alpha = -1\n", "x.conf"), Catch::Contains("x.conf:1: invalid value"));
    REQUIRE_THROWS_WITH(engine::parse_settings("spam_threshold\n", "x.conf"), Catch::Contains("key = value"));
    REQUIRE_THROWS_WITH(engine::parse_settings("spam_threshold = 0.3\nham_threshold = 0.5\n", "x.conf"),
                        Catch::Contains("must not exceed"));
}

TEST_CASE("The linear scorer's settings are checked, and one size serves weights and slots", "[engine]") {
    const auto s = engine::parse_settings("model = linear\nlinear_hash_bits = 16\nlinear_step = 2\n"
                                          "linear_replay_margin = 0\n", "x.conf");
    REQUIRE(s.scorer == engine::Scorer::linear);
    REQUIRE(s.linear.hash_bits == 16);
    REQUIRE(s.slots.bits == 16);
    REQUIRE(s.linear.step == 2.0);
    REQUIRE(s.linear.replay_margin == 0.0);
    for (const char* bad : {"linear_step = 0\n", "linear_step = 101\n", "linear_nb_rate = -1\n", "linear_temperature = 0\n",
                            "linear_replay_margin = -3\n", "linear_hash_bits = 30\n", "model = svm\n"}) {
        REQUIRE_THROWS_AS(engine::parse_settings(bad, "x.conf"), engine::ConfigError);
    }
}

TEST_CASE("The shipped example configuration parses with every setting uncommented", "[engine]") {
    std::ifstream in(std::string(MAILSIFT_TEST_DATA) + "/../../etc/mailsift/mailsift.conf");
    REQUIRE(in);
    std::string text, line;
    int settings = 0;
    while (std::getline(in, line)) {
        // "#key = value" lines are the documented defaults; "# prose" lines stay comments.
        if (line.size() > 1 && line[0] == '#' && line[1] != ' ' && line.find('=') != std::string::npos) {
            line.erase(0, 1);
            ++settings;
        }
        text += line + "\n";
    }
    REQUIRE(settings >= 20);
    const auto s = engine::parse_settings(text, "etc/mailsift/mailsift.conf");
    const engine::Settings defaults;
    // The file documents the defaults: uncommenting it changes nothing but the database path.
    REQUIRE(s.scorer == defaults.scorer);
    REQUIRE(s.model.alpha == defaults.model.alpha);
    REQUIRE(s.model.term_frequency == defaults.model.term_frequency);
    REQUIRE(s.model.spam_threshold == defaults.model.spam_threshold);
    REQUIRE(s.model.ham_threshold == defaults.model.ham_threshold);
    REQUIRE(s.model.length_norm_features == defaults.model.length_norm_features);
    REQUIRE(s.model.header_length_norm_features == defaults.model.header_length_norm_features);
    REQUIRE(s.model.calibration_temperature == defaults.model.calibration_temperature);
    REQUIRE(s.features.max_features == defaults.features.max_features);
    REQUIRE(s.limits.max_message_bytes == defaults.limits.max_message_bytes);
    REQUIRE(s.limits.max_header_bytes == defaults.limits.max_header_bytes);
    REQUIRE(s.daemon.listen == defaults.daemon.listen);
    REQUIRE(s.daemon.socket_mode == defaults.daemon.socket_mode);
    REQUIRE(s.daemon.read_timeout == defaults.daemon.read_timeout);
    REQUIRE(s.daemon.on_error == defaults.daemon.on_error);
    REQUIRE(s.daemon.reject_threshold == defaults.daemon.reject_threshold);
    REQUIRE(s.daemon.reject_reply == defaults.daemon.reject_reply);
    REQUIRE(s.daemon.skip_authenticated == defaults.daemon.skip_authenticated);
}

TEST_CASE("Daemon settings are parsed and checked", "[engine]") {
    const auto s = engine::parse_settings(
        "listen = unix:/run/mailsift/mailsiftd.sock\n"
        "socket_mode = 0600\n"
        "on_error = tempfail\n"
        "reject_threshold = 0.999\n"
        "quarantine_threshold = off\n"
        "subject_tag = [SPAM]\n"
        "read_timeout = 30\n",
        "d.conf");
    REQUIRE(s.daemon.listen == "unix:/run/mailsift/mailsiftd.sock");
    REQUIRE(s.daemon.socket_mode == 0600);
    REQUIRE(s.daemon.on_error == engine::DaemonSettings::OnError::tempfail);
    REQUIRE(s.daemon.reject_threshold == 0.999);
    REQUIRE(s.daemon.quarantine_threshold > 1.0);
    REQUIRE(s.daemon.subject_tag == "[SPAM]");
    REQUIRE(s.daemon.read_timeout == std::chrono::seconds(30));
    REQUIRE_THROWS_WITH(engine::parse_settings("listen = tcp:1.2.3.4:5\n", "d.conf"), Catch::Contains("d.conf:1"));
    REQUIRE_THROWS_WITH(engine::parse_settings("socket_mode = 999\n", "d.conf"), Catch::Contains("d.conf:1"));
    REQUIRE_THROWS_WITH(engine::parse_settings("reject_reply = 250 ok\n", "d.conf"), Catch::Contains("d.conf:1"));
    REQUIRE_THROWS_WITH(engine::parse_settings("on_error = drop\n", "d.conf"), Catch::Contains("d.conf:1"));
}

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

TEST_CASE("Bugs found by fuzz_config: nan, overflowing sizes and DEL are refused", "[engine]") {
    // Each reproducer was accepted before: NaN passes every "d < lo || d > hi" check,
    // a size with a unit wrapped around, milliseconds overflowed the clock, DEL is a control character.
    for (const char* name : {"spam_threshold_nan.conf", "quarantine_threshold_nan.conf", "size_unit_overflow.conf",
                             "refresh_interval_negative.conf", "subject_tag_del.conf"}) {
        INFO(name);
        std::ifstream in(std::string(MAILSIFT_TEST_DATA) + "/fuzz/" + name, std::ios::binary);
        REQUIRE(in);
        std::stringstream text;
        text << in.rdbuf();
        REQUIRE_THROWS_AS(engine::parse_settings(text.str(), name), engine::ConfigError);
    }
    REQUIRE_THROWS_AS(engine::parse_settings("alpha = inf\n", "x.conf"), engine::ConfigError);
    REQUIRE_THROWS_AS(engine::parse_settings("calibration_temperature = nan\n", "x.conf"), engine::ConfigError);
    // The limits themselves still parse.
    REQUIRE(engine::parse_settings("refresh_interval = 86400000\n", "x.conf").daemon.refresh_interval ==
            std::chrono::milliseconds(86'400'000));
    REQUIRE(engine::parse_settings("limits.max_message_bytes = 64M\n", "x.conf").limits.max_message_bytes == 64u << 20);
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

TEST_CASE("The settings a model is trained with are kept with it and win over a changed configuration", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    const engine::Settings first = engine::parse_settings("linear_step = 2\nlinear_ngram_bytes = 1000\n"
                                                          "features.word_pairs = on\n", "first.conf");
    // An empty store records nothing until a training commits.
    REQUIRE(db.model_settings().empty());
    {
        const engine::Filter f(db, first);
        REQUIRE(f.setting_notes().empty());
    }
    REQUIRE(db.model_settings().empty());
    train_fixtures(db, first);
    const std::string recorded = db.model_settings();
    REQUIRE(recorded == engine::model_settings_text(first));
    REQUIRE_THAT(recorded, Catch::Contains("linear_step = 2\n") && Catch::Contains("features.word_pairs = on\n") &&
                               Catch::Contains("linear_ngram_bytes = 1000\n"));
    REQUIRE_THAT(recorded, !Catch::Contains("spam_threshold") && !Catch::Contains("alpha"));
    const auto scored = engine::Filter(db, first).classify(new_spam).score.log_odds;

    // Another configuration: the model's settings are in force, each disagreement is named once,
    // what the file may change (a threshold, alpha) is the file's, and the score is the model's.
    const engine::Settings changed = engine::parse_settings("linear_step = 8\nfeatures.word_pairs = off\n"
                                                            "spam_threshold = 0.9\n", "changed.conf");
    const engine::Filter f(db, changed);
    REQUIRE(f.settings().linear.step == 2.0);
    REQUIRE(f.settings().features.word_pairs);
    REQUIRE(f.settings().slots.ngram_bytes == 1000);  // not in the file: taken over without a note
    REQUIRE(f.settings().model.spam_threshold == 0.9);
    REQUIRE(f.setting_notes().size() == 2);
    REQUIRE_THAT(f.setting_notes()[0], Catch::Contains("features.word_pairs = off") && Catch::Contains("trained with on"));
    REQUIRE_THAT(f.setting_notes()[1], Catch::Contains("linear_step = 8") && Catch::Contains("trained with 2"));
    REQUIRE(f.classify(new_spam).score.log_odds == scored);
    engine::Trainer t(db, changed);
    REQUIRE(t.settings().linear.step == 2.0);
    REQUIRE(t.setting_notes() == f.setting_notes());
    t.learn(new_ham, new_ham.size(), store::Class::ham, 3000);
    t.commit();
    REQUIRE(db.model_settings() == recorded);  // never rewritten

    // A record from a newer mailsift: what is unknown is left out and said; the rest is used.
    const auto odd = engine::with_model_settings(engine::Settings{}, "linear_step = 3\nlinear_wings = 2\nnonsense\n", 0);
    REQUIRE(odd.settings.linear.step == 3.0);
    REQUIRE(odd.notes.size() == 2);
    // A store trained before settings were recorded keeps the size of its weights.
    const auto old = engine::with_model_settings(engine::parse_settings("linear_hash_bits = 16\n", "x"), "", 20);
    REQUIRE(old.settings.linear.hash_bits == 20);
    REQUIRE(old.settings.slots.bits == 20);
    REQUIRE(old.notes.size() == 1);
}

TEST_CASE("A filter made before the first training sees the settings it records, and says it is stale", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    engine::Filter f(db, engine::Settings{});
    {
        // Another program, configured otherwise, trains the empty store first.
        store::SqliteDatabase writer(dir.path / "m.db", store::Database::Mode::read_write);
        train_fixtures(writer, engine::parse_settings("linear_step = 2\n", "other.conf"));
    }
    REQUIRE(f.refresh());
    REQUIRE(f.settings_stale());
    const engine::Filter again(db, engine::Settings{});
    REQUIRE(again.settings().linear.step == 2.0);
    REQUIRE_FALSE(again.settings_stale());
    // The same settings recorded: not stale.
    TempDir dir2;
    store::SqliteDatabase db2(dir2.path / "m.db", store::Database::Mode::read_write);
    engine::Filter g(db2, engine::Settings{});
    {
        store::SqliteDatabase writer(dir2.path / "m.db", store::Database::Mode::read_write);
        train_fixtures(writer, engine::Settings{});
    }
    REQUIRE(g.refresh());
    REQUIRE_FALSE(g.settings_stale());
}

TEST_CASE("With model = linear, learn keeps rehearsal samples and a long enough command refits on both classes", "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    const engine::Settings s = engine::parse_settings("model = linear\nlinear_rehearsal = 20\ntrain_margin = 0\n", "x.conf");
    auto message = [](bool spam, int i) {
        return std::string("From: ") + (spam ? "deals" : "colleague") + std::to_string(i) + "@example.org\nSubject: " +
               (spam ? "CHEAP pills, FREE offer " : "minutes of the meeting ") + std::to_string(i) + "\n\n" +
               (spam ? "Buy now and save $99, click here, limited offer number " : "The patch review is attached, item ") +
               std::to_string(i) + "\n";
    };
    engine::Trainer t(db, s);
    // The README's recipe: all the spam, then all the ham.
    for (int i = 0; i < 60; ++i) t.learn(message(true, i), message(true, i).size(), store::Class::spam, 1);
    for (int i = 0; i < 60; ++i) t.learn(message(false, i), message(false, i).size(), store::Class::ham, 1);
    t.commit();
    const auto before = db.linear_weights_since(0);
    REQUIRE(before.seen_spam == 60);
    REQUIRE(before.seen_ham == 60);
    const auto samples = db.linear_samples();
    REQUIRE(samples.size() == 40);  // 20 of each class
    // A sample keeps the message's view (features/view.hpp), not its raw bytes.
    REQUIRE(samples.front().prefix.rfind("From:", 0) == 0);
    REQUIRE(samples.front().prefix.rfind("From: ", 0) == std::string::npos);

    REQUIRE(t.refit_linear() == 40);
    const auto after = db.linear_weights_since(0);
    REQUIRE(after.sequence > before.sequence);
    REQUIRE(after.bias != before.bias);
    // The refit is in the store: a filter reading it scores as the trainer's model does.
    const engine::Filter f(db, s);
    REQUIRE(f.model()->linear->bias() == Approx(after.bias));
    REQUIRE(f.classify(new_spam).score.log_odds > f.classify(new_ham).score.log_odds);
    // Not due again until refit_after more messages are learned; learning the same ones again learns none.
    REQUIRE(t.refit_linear() == 0);
    for (int i = 0; i < 60; ++i) t.learn(message(true, i), message(true, i).size(), store::Class::spam, 2);
    t.commit();
    REQUIRE(t.refit_linear() == 0);
    REQUIRE(db.linear_weights_since(0).bias == after.bias);
}

TEST_CASE("The parts a message's score is kept in add up to it and name the strongest slots as explain does",
          "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    for (const std::string scorer : {"linear", "naive_bayes"}) {
        INFO("model = " << scorer);
        engine::Settings s = engine::parse_settings("model = " + scorer + "\n", "x.conf");
        if (scorer == "linear") train_fixtures(db, s);
        engine::Filter f(db, s);
        for (const std::string& raw : {new_spam, new_ham, fixture("spam_cheap_pills.eml")}) {
            const auto c = f.classify(raw, nullptr, false, true);
            REQUIRE(c.parts);
            CHECK_FALSE(f.classify(raw).parts);  // only when asked for
            // Kept as text and read back: the same parts.
            const std::string text = engine::encode(*c.parts);
            CHECK(text.size() < 1500);
            const auto p = engine::decode_score_parts(text);
            REQUIRE(p);
            CHECK(p->log_odds == Approx(c.score.log_odds).epsilon(1e-8));  // kept to nine digits
            CHECK(p->prior_log_odds == Approx(f.model()->snapshot.prior_log_odds()).epsilon(1e-8));
            REQUIRE(p->toward_spam.size() == c.toward_spam.size());
            REQUIRE(p->toward_ham.size() == c.toward_ham.size());
            for (std::size_t i = 0; i < c.toward_spam.size(); ++i) {
                CHECK(p->toward_spam[i].feature == c.toward_spam[i].feature.substr(0, 80));
                CHECK(p->toward_spam[i].log_odds == Approx(c.toward_spam[i].log_odds).epsilon(1e-8));
                CHECK(p->toward_spam[i].counts == c.toward_spam[i].counts);
            }
            if (scorer == "naive_bayes") {
                CHECK_FALSE(p->linear);
                CHECK(p->nb_log_odds == Approx(c.score.log_odds).epsilon(1e-8));
                continue;
            }
            REQUIRE(p->linear);
            const auto& l = *p->linear;
            // bias + u x input + the listed slots + the others = the score.
            double sum = l.score.bias + l.score.nb_weight * l.score.nb_input + l.split.others_sum;
            for (const auto& w : l.split.toward_spam) sum += w.weight;
            for (const auto& w : l.split.toward_ham) sum += w.weight;
            CHECK(sum == Approx(c.score.log_odds).margin(1e-6));
            CHECK(l.split.toward_spam.size() <= s.reasons);
            CHECK(l.split.toward_ham.size() <= s.reasons);
            CHECK(l.split.others + l.split.toward_spam.size() + l.split.toward_ham.size() == l.slots);
            // The same strongest slots, spelled the same, as the full explanation's split.
            const auto full = engine::explain(f, raw);
            REQUIRE(full.linear);
            const auto expected = full.linear->split(s.reasons);
            REQUIRE(l.slots == full.linear->slots.size());
            REQUIRE(l.split.toward_spam.size() == expected.toward_spam.size());
            REQUIRE(l.split.toward_ham.size() == expected.toward_ham.size());
            for (std::size_t i = 0; i < expected.toward_spam.size(); ++i) {
                CHECK(l.split.toward_spam[i].weight == Approx(expected.toward_spam[i].weight).epsilon(1e-8));
                CHECK(l.split.toward_spam[i].source == expected.toward_spam[i].source.substr(0, 80) +
                                                           (expected.toward_spam[i].source.size() > 80 ? "..." : ""));
            }
            for (std::size_t i = 0; i < expected.toward_ham.size(); ++i) {
                CHECK(l.split.toward_ham[i].weight == Approx(expected.toward_ham[i].weight).epsilon(1e-8));
                CHECK_FALSE(l.split.toward_ham[i].source.empty());
            }
            CHECK(l.split.others_sum == Approx(expected.others_sum).margin(1e-6));
        }
    }
}

TEST_CASE("Kept score parts survive awkward text and refuse what they did not write", "[engine]") {
    engine::ScoreParts p;
    p.log_odds = -3.25;
    p.prior_log_odds = 0.125;
    p.nb_log_odds = -1e-7;
    p.toward_spam.push_back({"subject:tab\there\nand newline", 1.5, {3, 1}});
    // 79 ASCII bytes then a two-byte letter: cut before the letter, not inside it.
    p.toward_ham.push_back({std::string(79, 'a') + "é and more", -0.5, {0, 7}});
    p.linear.emplace();
    p.linear->score = {0.5, 0.75, -2.0, -2.25, };
    p.linear->slots = 12;
    p.linear->clipped = true;
    p.linear->split.toward_spam.push_back({0.25, 4242, "\"ab\\x00c\""});
    p.linear->split.others = 11;
    p.linear->split.others_sum = -2.5;
    const auto back = engine::decode_score_parts(engine::encode(p));
    REQUIRE(back);
    CHECK(back->log_odds == p.log_odds);
    CHECK(back->nb_log_odds == p.nb_log_odds);
    CHECK(back->toward_spam[0].feature == "subject:tab here and newline");
    CHECK(back->toward_spam[0].counts == model::ClassCounts{3, 1});
    CHECK(back->toward_ham[0].feature == std::string(79, 'a') + "...");
    REQUIRE(back->linear);
    CHECK(back->linear->score.z() == p.linear->score.z());
    CHECK(back->linear->clipped);
    CHECK(back->linear->slots == 12);
    CHECK(back->linear->split.toward_spam[0].slot == 4242);
    CHECK(back->linear->split.toward_spam[0].source == "\"ab\\x00c\"");
    CHECK(back->linear->split.others_sum == -2.5);
    for (const std::string bad : {"", "mailsift-parts\t2\t1\t2\t3", "mailsift-parts\t1\t1\t2", "mailsift-parts\t1\tx\t2\t3",
                                  "mailsift-parts\t1\t1\t2\t3\n+\t1\t2\tfeature", "mailsift-parts\t1\t1\t2\t3\nS\t1\t2\tx",
                                  "mailsift-parts\t1\t1\t2\t3\n?"}) {
        INFO(bad);
        CHECK_FALSE(engine::decode_score_parts(bad));
    }
}

TEST_CASE("Every setting's value reads back as itself", "[engine]") {
    const engine::Settings defaults;
    const auto names = engine::setting_names();
    REQUIRE(names.size() >= 70);
    for (const auto& name : names) {
        INFO(name);
        const std::string v = engine::setting_value(defaults, name);
        if (v.empty()) continue;  // not set (socket_group, subject_tag, ...): nothing to read back
        CHECK(engine::setting_value(engine::parse_settings(name + " = " + v, "x.conf"), name) == v);
        // A switch shows the value it was given: the other one reads back as the other one.
        const bool is_switch = v == "on" || v == "off";
        // ("off" for no address or path, or for no layer, is no switch.)
        if (is_switch && name.find("listen") == std::string::npos && name.find("threshold") == std::string::npos &&
            name.find("log_odds") == std::string::npos && name != "correct_socket" &&
            name != "per_user") {
            const std::string other = v == "on" ? "off" : "on";
            CHECK(engine::setting_value(engine::parse_settings(name + " = " + other, "x.conf"), name) == other);
        }
    }
    CHECK(engine::setting_value(engine::parse_settings("limits.max_message_bytes = 8M\nreject_threshold = 0.999\n"
                                                       "socket_mode = 0600\nsignature_days = 30\n",
                                                       "x.conf"),
                                "limits.max_message_bytes") == "8M");
    CHECK(engine::setting_value(engine::parse_settings("correct_socket = /run/mailsift/correct.sock\n", "x.conf"),
                                "correct_socket") == "/run/mailsift/correct.sock");
    CHECK_THROWS_AS(engine::parse_settings("correct_socket = relative.sock\n", "x.conf"), engine::ConfigError);
    CHECK(engine::setting_value(engine::parse_settings("correct_socket_mode = 0666\n", "x.conf"), "correct_socket_mode") ==
          "0666");
    const auto set = engine::parse_settings("reject_threshold = 0.999\nsocket_mode = 0600\nsignature_days = 30\n"
                                            "spam_log_odds = 12.5\nmodel = naive_bayes\n", "x.conf");
    CHECK(engine::setting_value(set, "reject_threshold") == "0.999");
    CHECK(engine::setting_value(defaults, "reject_threshold") == "off");
    CHECK(engine::setting_value(set, "socket_mode") == "0600");
    CHECK(engine::setting_value(set, "signature_days") == "30");
    CHECK(engine::setting_value(set, "spam_log_odds") == "12.5");
    CHECK(engine::setting_value(set, "model") == "naive_bayes");
    CHECK_THROWS_AS(engine::setting_value(defaults, "no_such_setting"), engine::ConfigError);
}

namespace {
std::string numbered(bool spam, int i) {
    return std::string("From: ") + (spam ? "deals" : "colleague") + std::to_string(i) + "@example.org\nSubject: " +
           (spam ? "CHEAP pills, FREE offer " : "minutes of the meeting ") + std::to_string(i) + "\n\n" +
           (spam ? "Buy now and save $99, click here, limited offer number " : "The patch review is attached, item ") +
           std::to_string(i) + (i % 3 == 0 ? " and a word only this one has: w" + std::to_string(i * 7919) : "") + "\n";
}
// The fixtures, then 20 numbered spam and 20 ham, refitted.
void train_forty(store::Database& db, const engine::Settings& s) {
    train_fixtures(db, s);
    engine::Trainer t(db, s);
    for (int i = 0; i < 20; ++i) t.learn(numbered(true, i), numbered(true, i).size(), store::Class::spam, 1500);
    for (int i = 0; i < 20; ++i) t.learn(numbered(false, i), numbered(false, i).size(), store::Class::ham, 1500);
    t.commit();
    t.refit_linear();
}
std::string exported(store::Database& db) {
    std::ostringstream out;
    db.export_model(out);
    return out.str();
}
}  // namespace

TEST_CASE("A trainer reading only the rows it needs learns exactly what one reading the whole model learns",
          "[engine]") {
    TempDir dir;
    const engine::Settings s = engine::parse_settings("linear_rehearsal = 6\n", "x.conf");
    store::SqliteDatabase rows_db(dir.path / "rows.db", store::Database::Mode::read_write);
    store::SqliteDatabase whole_db(dir.path / "whole.db", store::Database::Mode::read_write);
    for (store::Database* db : {static_cast<store::Database*>(&rows_db), static_cast<store::Database*>(&whole_db)}) {
        train_forty(*db, s);
    }
    REQUIRE(exported(rows_db) == exported(whole_db));
    // The same commands through both kinds of trainer: a learn of new messages,
    // one already learned as the other class (moved), corrections, a refit.
    auto commands = [&](store::Database& db, engine::Trainer::Reads reads) {
        {
            engine::Trainer t(db, s, reads);
            for (int i = 20; i < 24; ++i) t.learn(numbered(true, i), numbered(true, i).size(), store::Class::spam, 2000);
            t.learn(numbered(false, 3), numbered(false, 3).size(), store::Class::spam, 2000);  // moved
            t.learn(new_spam, new_spam.size(), store::Class::spam, 2000);
            t.commit();
            REQUIRE(t.counts().moved == 1);
            REQUIRE(t.refit_linear() > 0);  // due: a tenth of the samples held
        }
        {
            engine::Trainer t(db, s, reads);
            t.correct(new_ham, new_ham.size(), store::Class::ham, 2100);
            t.correct(numbered(true, 5), numbered(true, 5).size(), store::Class::ham, 2100);
            t.commit();
        }
    };
    commands(rows_db, engine::Trainer::Reads::rows);
    commands(whole_db, engine::Trainer::Reads::whole_model);
    REQUIRE(exported(rows_db) == exported(whole_db));
    const auto a = rows_db.linear_weights_since(0), b = whole_db.linear_weights_since(0);
    REQUIRE(a.bias == b.bias);
    REQUIRE(a.seen_spam == b.seen_spam);
}

TEST_CASE("Trainers that share a linear cache learn exactly what trainers reading the whole table learn", "[engine]") {
    TempDir dir;
    const engine::Settings s = engine::parse_settings("linear_rehearsal = 6\n", "x.conf");
    store::SqliteDatabase cached_db(dir.path / "cached.db", store::Database::Mode::read_write);
    store::SqliteDatabase fresh_db(dir.path / "fresh.db", store::Database::Mode::read_write);
    for (store::Database* db : {static_cast<store::Database*>(&cached_db), static_cast<store::Database*>(&fresh_db)}) {
        train_forty(*db, s);
    }
    engine::Trainer::LinearCache cache;
    // One request after another, as mailsiftd's correction socket serves them;
    // between them, what other writers do: a learn without the cache, a refit
    // (whole pages rewritten), and a trainer of other linear parameters.
    auto request = [&](store::Database& db, bool use_cache, const engine::Settings& settings, int i) {
        engine::Trainer t(db, settings, engine::Trainer::Reads::rows);
        if (use_cache) t.use_linear_cache(cache);
        t.correct(numbered(i % 2 == 0, 100 + i), numbered(i % 2 == 0, 100 + i).size(),
                  i % 2 == 0 ? store::Class::ham : store::Class::spam, 2000 + i);
        t.commit();
    };
    const engine::Settings other = engine::parse_settings("linear_rehearsal = 6\nlinear_step = 2\n", "x.conf");
    for (store::Database* db : {static_cast<store::Database*>(&cached_db), static_cast<store::Database*>(&fresh_db)}) {
        const bool use_cache = db == &cached_db;
        for (int i = 0; i < 4; ++i) request(*db, use_cache, s, i);
        {
            engine::Trainer t(*db, s);  // another writer
            t.learn(numbered(true, 50), numbered(true, 50).size(), store::Class::spam, 2100);
            t.commit();
        }
        request(*db, use_cache, s, 4);
        {
            engine::Trainer t(*db, s);
            t.learn(new_ham, new_ham.size(), store::Class::ham, 2200);
            t.commit();
            REQUIRE(t.refit_linear_if_behind() > 0);  // as mailsiftd's recorder refits
        }
        for (int i = 5; i < 8; ++i) request(*db, use_cache, s, i);
        request(*db, use_cache, other, 8);  // not the cached weights' parameters: read afresh
        request(*db, use_cache, s, 9);
    }
    REQUIRE(cache.weights != nullptr);
    REQUIRE(cache.sequence > 0);
    REQUIRE(exported(cached_db) == exported(fresh_db));
    const auto a = cached_db.linear_weights_since(0), b = fresh_db.linear_weights_since(0);
    REQUIRE(a.bias == b.bias);
    REQUIRE(a.nb_weight == b.nb_weight);
    REQUIRE(a.seen_spam == b.seen_spam);
    // The cache holds the store's weights as of its sequence: those the last
    // request read, before its own step.
    std::uint64_t sequence = 0;
    const auto now = engine::load_linear(cached_db, s, nullptr, 0, sequence);
    const auto since = engine::load_linear(cached_db, s, cache.weights.get(), cache.sequence, sequence);
    REQUIRE(std::equal(now->weights().begin(), now->weights().end(), since->weights().begin(), since->weights().end()));
    REQUIRE(now->bias() == since->bias());
}

TEST_CASE("A filter made for some messages scores them exactly as the whole model does, and refuses others",
          "[engine]") {
    TempDir dir;
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    for (const char* conf : {"model = linear\n", "model = naive_bayes\n"}) {
        INFO(conf);
        const engine::Settings s = engine::parse_settings(conf, "x.conf");
        if (db.model_settings().empty()) {
            train_fixtures(db, s);
            engine::Trainer t(db, s);
            for (int i = 0; i < 12; ++i) t.learn(numbered(i % 2 == 0, i), numbered(i % 2 == 0, i).size(),
                                                  i % 2 == 0 ? store::Class::spam : store::Class::ham, 1500);
            t.commit();
        }
        engine::Settings with_reasons = s;
        with_reasons.reasons = 15;
        const engine::Filter whole(db, with_reasons);
        const std::vector<std::string> messages = {new_spam, new_ham, numbered(true, 3), numbered(false, 99)};
        std::vector<std::string_view> views(messages.begin(), messages.end());
        db.for_few_messages();  // as the CLI does: the weights read through a memory map
        const engine::Filter some(db, with_reasons, views);
        REQUIRE(some.model()->snapshot.vocabulary() == whole.model()->snapshot.vocabulary());
        REQUIRE(some.model()->snapshot.vocabulary() > 0);
        if (s.scorer == engine::Scorer::linear) {
            // Only the weights of these messages' slots are read, not the whole table.
            REQUIRE(some.model()->linear->partial());
            REQUIRE(some.model()->linear->covered().size() > 100);
            REQUIRE(some.model()->linear->covered().size() < some.model()->linear->size() / 8);
            REQUIRE(some.model()->linear->size() == whole.model()->linear->size());
        }
        for (const auto& m : messages) {
            const auto x = whole.classify(m, nullptr, true, true), y = some.classify(m, nullptr, true, true);
            REQUIRE(x.score.log_odds == y.score.log_odds);
            REQUIRE(x.score.probability == y.score.probability);
            REQUIRE(x.features == y.features);
            REQUIRE(engine::encode(*x.parts) == engine::encode(*y.parts));
            REQUIRE(x.toward_spam.size() == y.toward_spam.size());
            for (std::size_t i = 0; i < x.toward_spam.size(); ++i) {
                REQUIRE(x.toward_spam[i].feature == y.toward_spam[i].feature);
                REQUIRE(x.toward_spam[i].counts == y.toward_spam[i].counts);
            }
            const auto ex = engine::explain(whole, m), ey = engine::explain(some, m);
            REQUIRE(ex.prior_log_odds == ey.prior_log_odds);
            REQUIRE(ex.features == ey.features);
            REQUIRE(ex.linear.has_value() == ey.linear.has_value());
            if (ex.linear) {
                REQUIRE(ex.linear->score.z() == ey.linear->score.z());
                REQUIRE(ex.linear->slots.size() == ey.linear->slots.size());
                for (std::size_t i = 0; i < ex.linear->slots.size(); ++i) {
                    REQUIRE(ex.linear->slots[i].weight == ey.linear->slots[i].weight);
                }
            }
        }
        REQUIRE_THROWS_AS(some.classify(numbered(true, 12345)), std::logic_error);
        engine::Filter refreshed(db, with_reasons, views);
        REQUIRE_FALSE(refreshed.refresh());
    }
}
