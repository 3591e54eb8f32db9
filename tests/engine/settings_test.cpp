// Engine tests of the settings: parsing, checks, the shipped configuration, the daemon's, the
// settings kept with a model, and every value read back.
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
