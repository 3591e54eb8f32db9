// Store administration on real SQLite files and, where it holds for every backend, on a real
// PostgreSQL too (FOR_EACH_BACKEND): schema 3 (last_seen), pruning and the model's consistency
// afterwards, online backup.
#include <sqlite3.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "mailsift/store/training_batch.hpp"
#include "../support/backends.hpp"
#include "../support/temp_dir.hpp"
#include "store_support.hpp"
#include <filesystem>
#include <fstream>

#include "mailsift/store/sqlite_database.hpp"

using namespace mailsift;
using TempDir = mailsift::testing::TempDir;
using mailsift::testing::digest;
using mailsift::testing::terms;
using mailsift::testing::Raw;
using mailsift::testing::require_consistent;
using mailsift::testing::export_of;
using store::Class;
using Database = store::SqliteDatabase;

namespace {

std::optional<std::int64_t> last_seen(const mailsift::testing::TestStore& raw, model::FeatureId id) {
    return raw.value("SELECT last_seen FROM features WHERE id = " + std::to_string(static_cast<std::int64_t>(id)));
}
std::optional<std::int64_t> last_seen(const std::filesystem::path& p, model::FeatureId id) {
    return Raw(p).value("SELECT last_seen FROM features WHERE id = " + std::to_string(static_cast<std::int64_t>(id)));
}

}  // namespace

TEST_CASE("A version 2 database is upgraded to version 3 and its features get a last-seen time", "[store]") {
    TempDir dir;
    const auto path = dir.path / "old.db";
    {
        Database db(path, Database::Mode::read_write);
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{10, 1}}), 1000);
        b.learn(digest(2), Class::ham, terms({{11, 2}}), 2000);
        b.commit();
    }
    {
        // Make it what mailsift 0.1 with schema 2 wrote.
        Raw raw(path);
        raw.exec(std::string(mailsift::testing::scans_as_schema_3) +
                 "ALTER TABLE features DROP COLUMN last_seen; PRAGMA user_version = 2");
    }
    {
        Database reader(path, Database::Mode::read_only);  // upgrades through a short-lived writer
        const auto c = reader.load_counts(model::TermFrequency::raw);
        REQUIRE(c.features.at(10).spam == 1);
        REQUIRE(c.features.at(11).ham == 2);
    }
    REQUIRE(Raw(path).value("PRAGMA user_version") == store::schema_version);
    // Unknown before the upgrade: last seen no later than the newest learned message.
    REQUIRE(last_seen(path, 10) == 2000);
    REQUIRE(last_seen(path, 11) == 2000);
    require_consistent(path);
}

TEST_CASE("Committing a batch stamps the features it learned with the batch's time", "[store]") {
    FOR_EACH_BACKEND(path);
    const auto opened = path.open();
    store::Database& db = *opened;
    {
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{10, 1}, {11, 1}}), 100);
        b.commit();
    }
    {
        store::TrainingBatch b(db);
        b.learn(digest(2), Class::spam, terms({{11, 1}, {12, 1}}), 150);
        b.learn(digest(3), Class::ham, terms({{12, 1}}), 200);  // the batch's time is its latest
        b.commit();
    }
    REQUIRE(last_seen(path, 10) == 100);
    REQUIRE(last_seen(path, 11) == 200);
    REQUIRE(last_seen(path, 12) == 200);

    SECTION("unlearning does not make a feature recent") {
        store::TrainingBatch b(db);
        REQUIRE(b.unlearn(digest(2), Class::spam) == store::UnlearnResult::unlearned);
        b.commit();
        REQUIRE(last_seen(path, 11) == 200);
        REQUIRE(last_seen(path, 12) == 200);
    }
    SECTION("moving a message to the other class is learning it there") {
        store::TrainingBatch b(db);
        REQUIRE(b.learn(digest(1), Class::ham, terms({{10, 1}, {11, 1}}), 300) == store::LearnResult::moved);
        b.commit();
        REQUIRE(last_seen(path, 10) == 300);
        REQUIRE(last_seen(path, 11) == 300);
        REQUIRE(last_seen(path, 12) == 200);
    }
    require_consistent(path);
}

TEST_CASE("Pruning removes features seen once and not since the cut-off, and the totals follow", "[store]") {
    FOR_EACH_BACKEND(path);
    const auto opened = path.open();
    store::Database& db = *opened;
    {
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{1, 1}, {2, 1}, {3, 2}}), 100);
        b.learn(digest(2), Class::ham, terms({{1, 1}, {4, 1}}), 100);
        b.commit();
    }
    {
        store::TrainingBatch b(db);
        b.learn(digest(3), Class::spam, terms({{5, 1}}), 1000);
        b.commit();
    }
    store::Recording rec;
    rec.scans.push_back({digest(50), 50, model::Verdict::spam, "w:x\t1\n"});
    rec.scans.push_back({digest(60), 5000, model::Verdict::ham, "w:y\t1\n"});
    db.record(rec);

    const auto r = db.prune(100, 500);
    REQUIRE(r.signatures == 1);
    REQUIRE(r.features == 2);  // 2 (spam) and 4 (ham); 1 is seen twice, 3 twice in one message, 5 recently
    REQUIRE(r.occurrences.spam == 1);
    REQUIRE(r.occurrences.ham == 1);
    REQUIRE(r.presences.spam == 1);
    REQUIRE(r.presences.ham == 1);
    REQUIRE_FALSE(db.find_scan(digest(50)));
    REQUIRE(db.find_scan(digest(60)));
    const auto c = db.load_counts(model::TermFrequency::raw);
    REQUIRE(c.features.size() == 3);
    REQUIRE(c.features.count(2) == 0);
    REQUIRE(c.features.count(4) == 0);
    REQUIRE(c.feature_totals.spam == 4);  // 1 + 2 + 1 of features 1, 3, 5
    REQUIRE(c.feature_totals.ham == 1);
    REQUIRE(c.messages.spam == 2);  // messages are not pruned
    require_consistent(path);

    SECTION("pruning again finds nothing more") {
        const auto again = db.prune(100, 500);
        REQUIRE(again.signatures == 0);
        REQUIRE(again.features == 0);
    }
}

TEST_CASE("Unlearning a message whose features were pruned takes off only what the rows hold", "[store][long]") {
    FOR_EACH_BACKEND(path);
    const auto opened = path.open();
    store::Database& db = *opened;
    {
        store::TrainingBatch b(db);
        b.learn(digest(1), Class::spam, terms({{1, 1}, {2, 1}, {3, 2}}), 100);
        b.learn(digest(2), Class::spam, terms({{1, 1}}), 100);
        b.commit();
    }
    REQUIRE(db.prune(0, 500).features == 1);  // feature 2
    require_consistent(path);

    SECTION("unlearning it leaves no negative count and does not bring the feature back") {
        store::TrainingBatch b(db);
        REQUIRE(b.unlearn(digest(1), Class::spam) == store::UnlearnResult::unlearned);
        b.commit();
        const auto c = db.load_counts(model::TermFrequency::raw);
        REQUIRE(c.features.count(2) == 0);
        REQUIRE(c.features.count(3) == 0);
        REQUIRE(c.features.at(1).spam == 1);
        REQUIRE(c.feature_totals.spam == 1);
        REQUIRE(db.load_counts(model::TermFrequency::boolean).feature_totals.spam == 1);
    }
    SECTION("moving it learns the pruned feature anew in the other class only") {
        store::TrainingBatch b(db);
        REQUIRE(b.learn(digest(1), Class::ham, terms({{1, 1}, {2, 1}, {3, 2}}), 600) == store::LearnResult::moved);
        b.commit();
        const auto c = db.load_counts(model::TermFrequency::raw);
        REQUIRE(c.features.at(2).spam == 0);
        REQUIRE(c.features.at(2).ham == 1);
        REQUIRE(c.feature_totals.spam == 1);
        REQUIRE(c.feature_totals.ham == 4);
    }
    SECTION("a pruned feature learned again in the other class keeps what it holds there") {
        {
            store::TrainingBatch b(db);
            b.learn(digest(5), Class::ham, terms({{2, 1}}), 600);
            b.commit();
        }
        store::TrainingBatch b(db);
        REQUIRE(b.unlearn(digest(1), Class::spam) == store::UnlearnResult::unlearned);
        b.commit();
        const auto c = db.load_counts(model::TermFrequency::raw);
        REQUIRE(c.features.at(2).spam == 0);
        REQUIRE(c.features.at(2).ham == 1);
    }
    SECTION("a pruned feature learned again in the same batch as the unlearning keeps the new count") {
        store::TrainingBatch b(db);
        REQUIRE(b.unlearn(digest(1), Class::spam) == store::UnlearnResult::unlearned);
        b.learn(digest(6), Class::spam, terms({{2, 1}}), 600);
        b.commit();
        const auto c = db.load_counts(model::TermFrequency::raw);
        REQUIRE(c.features.at(2).spam == 1);
        REQUIRE(last_seen(path, 2) == 600);
    }
    SECTION("a message learned and unlearned in one batch leaves nothing behind") {
        store::TrainingBatch b(db);
        b.learn(digest(7), Class::ham, terms({{42, 1}, {1, 1}}), 600);
        REQUIRE(b.unlearn(digest(7), Class::ham) == store::UnlearnResult::unlearned);
        b.commit();
        const auto c = db.load_counts(model::TermFrequency::raw);
        REQUIRE(c.features.count(42) == 0);
        REQUIRE(c.features.at(1).ham == 0);
        REQUIRE(c.messages.ham == 0);
    }
    require_consistent(path);
    // Whatever happened, unlearning everything empties the model exactly.
    {
        store::TrainingBatch b(db);
        for (std::uint8_t d : {1, 2, 5, 6}) {
            b.unlearn(digest(d), Class::spam);
            b.unlearn(digest(d), Class::ham);
        }
        b.commit();
    }
    const auto c = db.load_counts(model::TermFrequency::raw);
    REQUIRE(c.features.empty());
    REQUIRE(c.feature_totals.spam == 0);
    REQUIRE(c.feature_totals.ham == 0);
    require_consistent(path);
}

TEST_CASE("A backup is taken while another connection is writing", "[store]") {
    TempDir dir;
    const auto path = dir.path / "live.db";
    Database writer(path, Database::Mode::read_write);
    {
        store::TrainingBatch b(writer);
        b.learn(digest(1), Class::spam, terms({{1, 1}, {2, 3}}), 100);
        b.commit();
    }
    Database source(path, Database::Mode::read_only, std::chrono::milliseconds(200));
    const std::string committed = export_of(source);
    const auto copy = dir.path / "copy.db";
    {
        // The writer holds the write lock with changes not yet committed.
        store::TrainingBatch open(writer);
        open.learn(digest(2), Class::ham, terms({{3, 1}}), 200);
        source.backup(copy, false);
        open.commit();
    }
    Database restored(copy, Database::Mode::read_only);
    REQUIRE(export_of(restored) == committed);  // the committed state, not the open transaction
    const auto a = restored.statistics();
    REQUIRE(a.messages.spam == 1);
    REQUIRE(a.messages.ham == 0);
    REQUIRE(a.schema_version == store::schema_version);
    REQUIRE(export_of(writer) != committed);
    // No temporary file is left beside it.
    std::size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
        if (e.path().filename().string().find("partial") != std::string::npos) ++files;
    }
    REQUIRE(files == 0);
}

TEST_CASE("A backup does not replace a file unless asked to", "[store]") {
    TempDir dir;
    const auto path = dir.path / "live.db";
    Database db(path, Database::Mode::read_write);
    db.add_contact("a@example.org", "manual", 1);
    const auto dest = dir.path / "copy.db";
    SECTION("an existing file") {
        std::ofstream(dest) << "precious";
        REQUIRE_THROWS_WITH(db.backup(dest, false), Catch::Contains("already exists"));
        std::ifstream in(dest);
        std::string content;
        std::getline(in, content);
        REQUIRE(content == "precious");
        db.backup(dest, true);
        REQUIRE(Database(dest, Database::Mode::read_only).contacts().size() == 1);
    }
    SECTION("a stale write-ahead log of that name") {
        std::ofstream(dest.string() + "-wal") << "old log";
        REQUIRE_THROWS_WITH(db.backup(dest, false), Catch::Contains("-wal: already exists"));
        REQUIRE_FALSE(std::filesystem::exists(dest));
        db.backup(dest, true);
        REQUIRE_FALSE(std::filesystem::exists(dest.string() + "-wal"));
        REQUIRE(Database(dest, Database::Mode::read_only).contacts().size() == 1);
    }
    SECTION("the database itself or its write-ahead log") {
        REQUIRE_THROWS_WITH(db.backup(path, true), Catch::Contains("is the database itself"));
        REQUIRE(std::filesystem::exists(path.string() + "-wal"));  // open connections keep it
        REQUIRE_THROWS_WITH(db.backup(path.string() + "-wal", true), Catch::Contains("is the database's own wal"));
        REQUIRE(db.contacts().size() == 1);
        REQUIRE(Database(path, Database::Mode::read_only).contacts().size() == 1);
    }
}
