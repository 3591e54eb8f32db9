// Store tests of the database itself, on real SQLite files in a temporary directory: a new one's
// schema, WAL and permissions, when a connection serving requests copies its log in, and what is
// refused (missing, newer, foreign, not a database, read-only, locked); and contacts, one by one or
// in bulk, on every backend (FOR_EACH_BACKEND: on a real PostgreSQL too).
#include "mailsift/store/training_batch.hpp"
#include "mailsift/store/sqlite_database.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "../support/backends.hpp"
#include "../support/temp_dir.hpp"
#include "store_support.hpp"
#include <filesystem>
#include <fstream>

using namespace mailsift;
using TempDir = mailsift::testing::TempDir;
using mailsift::testing::digest;
using mailsift::testing::terms;
using store::Class;
using Database = store::SqliteDatabase;

TEST_CASE("A new database is created with the current schema and WAL", "[store]") {
    TempDir dir;
    const auto path = dir.path / "sub" / "model.db";
    {
        Database db(path, Database::Mode::read_write);
        REQUIRE(db.statistics().schema_version == store::schema_version);
    }
    REQUIRE(std::filesystem::exists(path));
    struct stat st{};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    REQUIRE((st.st_mode & 0007) == 0);  // no access for others
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &s, nullptr);
    REQUIRE(sqlite3_step(s) == SQLITE_ROW);
    REQUIRE(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 0))) == "wal");
    sqlite3_finalize(s);
    sqlite3_close(raw);
}

TEST_CASE("A connection serving requests copies its log into the database after answering, not inside a commit",
          "[store]") {
    TempDir dir;
    const auto path = dir.path / "model.db";
    // One commit of well over SQLite's 1,000 pages of log: 200,000 feature rows
    // at random ids, and 400 messages' rows.
    auto big_commit = [](store::Database& db, std::uint8_t round) {
        store::TrainingBatch b(db);
        for (std::uint32_t m = 0; m < 400; ++m) {
            std::vector<store::TrainTerm> t;
            for (std::uint64_t j = 0; j < 500; ++j) {
                t.push_back({((std::uint64_t{round} << 40) + m * 1000 + j) * 0x9E3779B97F4A7C15ULL, 1, "f"});
            }
            store::Digest d{};
            d[0] = static_cast<std::uint8_t>(m & 0xff);
            d[1] = static_cast<std::uint8_t>(m >> 8);
            d[2] = round;
            REQUIRE(b.learn(d, Class::spam, t, 100) == store::LearnResult::learned);
        }
        b.commit();
    };
    const auto main_file = [&] { return std::filesystem::file_size(path); };
    {
        Database db(path, Database::Mode::read_write);
        const auto before = main_file();
        big_commit(db, 1);
        CHECK(main_file() > before);  // SQLite's way: the commit copied its log into the database
    }
    {
        Database db(path, Database::Mode::read_write);
        db.for_requests();
        const auto before = main_file();
        big_commit(db, 2);
        CHECK(main_file() == before);  // committed to the log alone
        CHECK(db.load_counts(model::TermFrequency::raw).messages.spam == 800);
        db.checkpoint();
        CHECK(main_file() > before);
        db.checkpoint();  // nothing new in the log: nothing to do
    }
    Database again(path, Database::Mode::read_only);
    CHECK(again.load_counts(model::TermFrequency::raw).messages.spam == 800);
}

TEST_CASE("Bad databases are refused with a clear error", "[store]") {
    TempDir dir;
    SECTION("a missing database opened for reading") {
        REQUIRE_THROWS_WITH(Database(dir.path / "none.db", Database::Mode::read_only),
                            Catch::Contains("no such database"));
    }
    SECTION("a database from a newer schema is not touched") {
        const auto path = dir.path / "new.db";
        { Database db(path, Database::Mode::read_write); }
        sqlite3* raw = nullptr;
        sqlite3_open(path.c_str(), &raw);
        sqlite3_exec(raw, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
        sqlite3_close(raw);
        REQUIRE_THROWS_WITH(Database(path, Database::Mode::read_write), Catch::Contains("newer"));
        REQUIRE_THROWS_WITH(Database(path, Database::Mode::read_only), Catch::Contains("newer"));
    }
    SECTION("a file that is not a database") {
        const auto path = dir.path / "junk.db";
        std::ofstream(path) << std::string(4096, 'x');
        REQUIRE_THROWS_WITH(Database(path, Database::Mode::read_write), Catch::Contains("not a"));
    }
    SECTION("someone else's SQLite database") {
        const auto path = dir.path / "other.db";
        sqlite3* raw = nullptr;
        sqlite3_open(path.c_str(), &raw);
        sqlite3_exec(raw, "CREATE TABLE t(x)", nullptr, nullptr, nullptr);
        sqlite3_close(raw);
        REQUIRE_THROWS_WITH(Database(path, Database::Mode::read_write), Catch::Contains("not a mailsift database"));
    }
    SECTION("training through a read-only connection") {
        const auto path = dir.path / "ro.db";
        { Database db(path, Database::Mode::read_write); }
        Database db(path, Database::Mode::read_only);
        REQUIRE_THROWS_AS(store::TrainingBatch(db), store::Error);
    }
}

TEST_CASE("A locked database makes training fail cleanly, not corrupt", "[store]") {
    TempDir dir;
    const auto path = dir.path / "m.db";
    { Database db(path, Database::Mode::read_write); }
    sqlite3* locker = nullptr;
    sqlite3_open(path.c_str(), &locker);
    REQUIRE(sqlite3_exec(locker, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
    {
        Database db(path, Database::Mode::read_write, std::chrono::milliseconds(100));
        REQUIRE_THROWS_WITH(store::TrainingBatch(db), Catch::Contains("locked"));
        // A reader still loads the model while the writer holds the lock (WAL).
        REQUIRE(db.load_counts(model::TermFrequency::raw).messages.spam == 0);
    }
    sqlite3_exec(locker, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(locker);
    // Once the lock is gone, training proceeds on an intact database.
    Database db(path, Database::Mode::read_write);
    store::TrainingBatch b(db);
    b.learn(digest(1), Class::ham, terms({{1, 1}}), 1);
    b.commit();
    REQUIRE(db.load_counts(model::TermFrequency::raw).messages.ham == 1);
}

TEST_CASE("Contacts are added, listed and removed", "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened = store_.open();
    store::Database& db = *opened;
    REQUIRE(db.add_contact("a@example.org", "manual", 5));
    REQUIRE_FALSE(db.add_contact("a@example.org", "manual", 6));
    REQUIRE(db.load_contacts().contains("a@example.org"));
    REQUIRE(db.contacts().at(0).source == "manual");
    REQUIRE(db.remove_contact("a@example.org"));
    REQUIRE_FALSE(db.remove_contact("a@example.org"));
    REQUIRE_FALSE(db.load_contacts().contains("a@example.org"));
}

TEST_CASE("Contacts added in bulk report how many were new", "[store]") {
    FOR_EACH_BACKEND(store_);
    const auto opened = store_.open();
    store::Database& db = *opened;
    db.add_contact("a@example.org", "manual", 1);
    const std::vector<store::Contact> list = {
        {"a@example.org", "imported", 2}, {"b@example.org", "imported", 2}, {"b@example.org", "imported", 2}};
    REQUIRE(db.add_contacts(list) == 1);
    const auto all = db.contacts();
    REQUIRE(all.size() == 2);
    REQUIRE(all[0].source == "manual");  // an existing contact keeps its source
    REQUIRE(all[1].source == "imported");
}
