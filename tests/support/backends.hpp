// A fresh, empty database of each store backend for one test: an SQLite file
// in a temporary directory, or a new database on the private PostgreSQL that
// CTest starts for the suite (fixture "postgres", tests/support/postgres.sh).
//
// CTest sets MAILSIFT_TEST_POSTGRES to the file holding that server's URI;
// then a test that runs FOR_EACH_BACKEND runs on both, and a missing or
// unreachable server fails it (never skips). Run by hand without the
// variable, the tests use SQLite alone.
#pragma once

#include <libpq-fe.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mailsift/store/database.hpp"
#include "temp_dir.hpp"

namespace mailsift::testing {

inline std::vector<std::string> backends() {
    std::vector<std::string> out{"sqlite"};
    if (std::getenv("MAILSIFT_TEST_POSTGRES") != nullptr) out.emplace_back("postgresql");
    return out;
}

// The URI of the server's maintenance database "postgres".
inline std::string postgres_admin_uri() {
    const char* file = std::getenv("MAILSIFT_TEST_POSTGRES");
    REQUIRE(file != nullptr);
    std::ifstream in(file);
    std::string uri;
    std::getline(in, uri);
    if (uri.empty()) FAIL("MAILSIFT_TEST_POSTGRES=" << file << ": the private PostgreSQL did not start (see the 'postgres: start' test)");
    return uri;
}

// Runs one statement on the maintenance database.
inline void postgres_admin(const std::string& sql) {
    PGconn* c = PQconnectdb(postgres_admin_uri().c_str());
    if (PQstatus(c) != CONNECTION_OK) {
        const std::string error = PQerrorMessage(c);
        PQfinish(c);
        FAIL("cannot connect to the private PostgreSQL: " << error);
    }
    PGresult* r = PQexec(c, sql.c_str());
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    const std::string error = PQresultErrorMessage(r);
    PQclear(r);
    PQfinish(c);
    if (!ok) FAIL(sql << ": " << error);
}

class TestStore {
public:
    explicit TestStore(std::string kind) : kind_(std::move(kind)) {
        if (kind_ == "sqlite") {
            location_ = (dir_.path / "m.db").string();
            return;
        }
        static std::atomic<int> counter{0};
        name_ = "mailsift_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
        postgres_admin("CREATE DATABASE " + name_);
        const std::string admin = postgres_admin_uri();
        location_ = admin.substr(0, admin.rfind('/') + 1) + name_;
    }
    ~TestStore() {
        if (!name_.empty()) {
            try {
                postgres_admin("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
            } catch (...) {
            }
        }
    }
    TestStore(const TestStore&) = delete;
    TestStore& operator=(const TestStore&) = delete;

    const std::string& kind() const { return kind_; }
    const std::string& location() const { return location_; }
    const TempDir& dir() const { return dir_; }
    std::unique_ptr<store::Database> open(store::Database::Mode mode = store::Database::Mode::read_write) const {
        return store::open(location_, mode);
    }

    // SQL straight on the database (the same statement on both backends), for
    // checks the store's interface does not offer: the first column of the
    // first row as an integer, nullopt when there is no row or it is NULL.
    std::optional<std::int64_t> value(const std::string& sql) const {
        std::optional<std::int64_t> v;
        if (kind_ == "sqlite") {
            sqlite3* db = nullptr;
            REQUIRE(sqlite3_open(location_.c_str(), &db) == SQLITE_OK);
            sqlite3_stmt* st = nullptr;
            INFO(sql << ": " << sqlite3_errmsg(db));
            REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
            const int rc = sqlite3_step(st);
            if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) v = sqlite3_column_int64(st, 0);
            const bool ok = rc == SQLITE_ROW || rc == SQLITE_DONE;
            sqlite3_finalize(st);
            sqlite3_close(db);
            REQUIRE(ok);
            return v;
        }
        PGconn* c = PQconnectdb(location_.c_str());
        REQUIRE(PQstatus(c) == CONNECTION_OK);
        PGresult* r = PQexec(c, sql.c_str());
        const bool ok = PQresultStatus(r) == PGRES_TUPLES_OK || PQresultStatus(r) == PGRES_COMMAND_OK;
        const std::string error = PQresultErrorMessage(r);
        if (ok && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)) {
            v = std::stoll(PQgetvalue(r, 0, 0));
        }
        PQclear(r);
        PQfinish(c);
        INFO(sql << ": " << error);
        REQUIRE(ok);
        return v;
    }
    void exec(const std::string& sql) const { value(sql); }

private:
    std::string kind_;
    TempDir dir_;
    std::string location_;
    std::string name_;  // PostgreSQL: the database made for this test
};

}  // namespace mailsift::testing

// Declares `NAME`, a TestStore of each backend in turn (Catch2 runs the test once per backend).
#define FOR_EACH_BACKEND(NAME)                                                                   \
    const std::string NAME##_kind = GENERATE(from_range(mailsift::testing::backends()));        \
    INFO("backend: " << NAME##_kind);                                                            \
    mailsift::testing::TestStore NAME(NAME##_kind)
