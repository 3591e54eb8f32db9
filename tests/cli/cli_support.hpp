// What the CLI's test files share: the program under test, the sample messages,
// what a run of it returned, a sandbox to run it in, and reads of its database.
#pragma once

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "../support/paths.hpp"

namespace mailsift::cli_test {

inline const std::string cli = MAILSIFT_CLI;
inline const std::string data = std::string(MAILSIFT_TEST_DATA) + "/messages";

struct Result {
    int status = -1;
    std::string out;
    std::string err;
};

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

struct Sandbox {
    std::filesystem::path dir;
    Sandbox() {
        char tmpl[] = "/tmp/mailsift-cli-XXXXXX";
        dir = ::mkdtemp(tmpl);
        ::chmod(dir.c_str(), 0755);
    }
    ~Sandbox() { std::filesystem::remove_all(dir); }
    std::string db() const { return (dir / "mailsift.db").string(); }

    // Runs a shell command line with the CLI; stdout and stderr captured.
    Result run(const std::string& args, const std::string& prefix = "") const {
        const auto out = dir / "stdout", err = dir / "stderr";
        const std::string cmd = "cd " + dir.string() + " && env -u MAILSIFT_DB -u MAILSIFT_CONFIG HOME=" + dir.string() +
                                " " + prefix + cli + " " + args + " >" + out.string() + " 2>" + err.string();
        const int rc = std::system(cmd.c_str());
        Result r;
        r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
        r.out = slurp(out);
        r.err = slurp(err);
        return r;
    }
    Result mailsift(const std::string& args) const { return run("--db " + db() + " " + args); }

    void train() const {
        REQUIRE(mailsift("learn --spam " + data + "/spam_money_offer.eml " + data + "/spam_cheap_pills.eml " + data +
                         "/spam_investment.eml")
                    .status == 0);
        REQUIRE(mailsift("learn --ham " + data + "/ham_meeting_notes.eml " + data + "/ham_patch_review.eml " + data +
                         "/ham_build_report.eml")
                    .status == 0);
    }
};

inline std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

// The first column of the first row of a query on a database file.
inline std::optional<long long> sql_value(const std::string& path, const std::string& query) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    const int rc = sqlite3_prepare_v2(db, query.c_str(), -1, &s, nullptr);
    INFO(query << ": " << sqlite3_errmsg(db));
    REQUIRE(rc == SQLITE_OK);
    std::optional<long long> v;
    if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

inline void sql_exec(const std::string& path, const std::string& statements) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    const int rc = sqlite3_exec(db, statements.c_str(), nullptr, nullptr, nullptr);
    INFO(statements << ": " << sqlite3_errmsg(db));
    sqlite3_close(db);
    REQUIRE(rc == SQLITE_OK);
}

// Class totals equal the sums of the feature rows and nothing is negative.
inline void require_consistent_model(const std::string& path) {
    for (const auto& [cls, name] : {std::pair{"1", "spam"}, std::pair{"0", "ham"}}) {
        INFO(name);
        REQUIRE(sql_value(path, std::string("SELECT occurrences FROM classes WHERE class = ") + cls) ==
                sql_value(path, std::string("SELECT coalesce(sum(") + name + "_occurrences), 0) FROM features"));
        REQUIRE(sql_value(path, std::string("SELECT presences FROM classes WHERE class = ") + cls) ==
                sql_value(path, std::string("SELECT coalesce(sum(") + name + "_presences), 0) FROM features"));
    }
    REQUIRE(sql_value(path, "SELECT count(*) FROM features WHERE spam_occurrences < 0 OR ham_occurrences < 0"
                            " OR spam_presences < 0 OR ham_presences < 0") == 0);
}

// The integer after "key": in a flat JSON text (first occurrence after `from`).
inline long json_int(const std::string& json, const std::string& key, std::size_t from = 0) {
    const auto at = json.find("\"" + key + "\":", from);
    REQUIRE(at != std::string::npos);
    return std::stol(json.substr(at + key.size() + 3));
}

}  // namespace mailsift::cli_test
