// Engine tests of the model apart from the store: a ModelSource builds
// immutable Models, and classify scores with a Model alone.
#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>

#include "../support/temp_dir.hpp"
#include "engine_support.hpp"
#include "mailsift/engine/model_source.hpp"
#include "mailsift/engine/scorer.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/engine/trainer.hpp"
#include "mailsift/store/sqlite_database.hpp"

using namespace mailsift;
using TempDir = mailsift::testing::TempDir;
using namespace mailsift::engine_test;

TEST_CASE("A model scores after its store is closed and deleted, as it did before", "[engine]") {
    for (const char* conf : {"model = linear\n", "model = naive_bayes\n"}) {
        CAPTURE(conf);
        TempDir dir;
        const auto path = dir.path / "m.db";
        const engine::Settings s = engine::parse_settings(conf, "x.conf");
        std::shared_ptr<const engine::Model> model;
        engine::Classification spam_before, ham_before;
        {
            store::SqliteDatabase db(path, store::Database::Mode::read_write);
            train_fixtures(db, s);
            engine::ModelSource source(db, db, s);
            model = source.model();
            spam_before = engine::classify(model, new_spam);
            ham_before = engine::classify(model, new_ham);
        }
        std::filesystem::remove(path);
        REQUIRE_FALSE(std::filesystem::exists(path));
        const auto spam_after = engine::classify(model, new_spam);
        const auto ham_after = engine::classify(model, new_ham);
        REQUIRE(spam_after.score.log_odds == spam_before.score.log_odds);
        REQUIRE(ham_after.score.log_odds == ham_before.score.log_odds);
        REQUIRE(spam_after.score.log_odds > ham_after.score.log_odds);  // a model, not an empty one
    }
}

TEST_CASE("A refresh builds a new model and leaves the one already taken as it was", "[engine]") {
    TempDir dir;
    const engine::Settings s = engine::parse_settings("", "x.conf");
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    train_fixtures(db, s);
    store::SqliteDatabase reader(dir.path / "m.db", store::Database::Mode::read_only);
    engine::ModelSource source(reader, reader, s);
    const auto taken = source.model();
    const double before = engine::classify(taken, new_spam).score.log_odds;
    REQUIRE_FALSE(source.refresh());  // nothing committed since
    REQUIRE(source.model() == taken);
    {
        engine::Trainer t(db, s);
        t.learn(new_spam, new_spam.size(), store::Class::ham, 2000);  // taught the other way
        t.commit();
    }
    REQUIRE(source.refresh());
    const auto fresh = source.model();
    REQUIRE(fresh != taken);
    REQUIRE(fresh->snapshot.messages().ham == taken->snapshot.messages().ham + 1);
    REQUIRE(engine::classify(fresh, new_spam).score.log_odds < before);
    REQUIRE(engine::classify(taken, new_spam).score.log_odds == before);  // the old one unchanged
    REQUIRE(fresh->settings == taken->settings);  // the settings in force, shared
}

TEST_CASE("A model made for some messages refuses another, and the source reads nothing more", "[engine]") {
    TempDir dir;
    const engine::Settings s = engine::parse_settings("", "x.conf");
    store::SqliteDatabase db(dir.path / "m.db", store::Database::Mode::read_write);
    train_fixtures(db, s);
    const std::string_view some[] = {new_spam};
    store::SqliteDatabase reader(dir.path / "m.db", store::Database::Mode::read_only);
    engine::ModelSource partial(reader, reader, s, some);
    engine::ModelSource whole(reader, reader, s);
    REQUIRE(engine::classify(partial.model(), new_spam).score.log_odds ==
            engine::classify(whole.model(), new_spam).score.log_odds);
    REQUIRE_THROWS_AS(engine::classify(partial.model(), new_ham), std::logic_error);
    {
        engine::Trainer t(db, s);
        t.learn(new_ham, new_ham.size(), store::Class::ham, 2000);
        t.commit();
    }
    REQUIRE_FALSE(partial.refresh());
    REQUIRE(whole.refresh());
}
