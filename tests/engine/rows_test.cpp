// Engine tests of reading only the rows a command needs: a trainer, a shared linear cache and a
// filter for some messages learn and score exactly as the whole model does.
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
            const auto ex = engine::explain(whole.model(), m), ey = engine::explain(some.model(), m);
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
