// Engine tests of the linear scorer's rehearsal and refit after learn, and of the score parts a
// message's score is kept in.
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
            const auto full = engine::explain(f.model(), raw);
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
