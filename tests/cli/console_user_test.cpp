// End-to-end tests of the real `mailsift console-user`: the accounts file, its hashes, its
// group, and concurrent changes.
#include <pwd.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../support/paths.hpp"
#include "cli_support.hpp"
#include "mailsift/version.hpp"

namespace fs = std::filesystem;
using namespace mailsift::cli_test;

namespace {

// A configuration naming an accounts file in the sandbox.
std::string console_config(const Sandbox& sb) {
    const fs::path conf = sb.dir / "console.conf";
    std::ofstream(conf) << "console_users = " << (sb.dir / "console-users").string() << "\n";
    return "--config " + conf.string() + " ";
}

// " < FILE" holding `password` on one line, for --password-stdin.
std::string password_from(const Sandbox& sb, const std::string& password) {
    static int n = 0;
    const fs::path f = sb.dir / ("password" + std::to_string(++n));
    std::ofstream(f) << password << "\n";
    return " < " + f.string();
}

}  // namespace

TEST_CASE("console-user keeps Argon2id hashes in a file its group may read, never the password", "[cli][console]") {
    Sandbox sb;
    const std::string conf = console_config(sb);
    const fs::path file = sb.dir / "console-users";
    auto r = sb.run(conf + "console-user add alice --role admin --password-stdin" + password_from(sb, "alice long secret"));
    REQUIRE(r.status == 0);
    CHECK(r.out.find("added alice (admin)") != std::string::npos);
    r = sb.run(conf + "console-user add bob --role viewer --password-stdin" + password_from(sb, "bob long secret"));
    REQUIRE(r.status == 0);
    struct stat st {};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0640);
    const std::string text = slurp(file);
    CHECK(text.find("alice:admin:$argon2id$") != std::string::npos);
    CHECK(text.find("bob:viewer:$argon2id$") != std::string::npos);
    CHECK(text.find("long secret") == std::string::npos);
    r = sb.run(conf + "console-user list");
    CHECK(r.status == 0);
    CHECK(r.out == "alice\tadmin\nbob\tviewer\n");

    SECTION("passwd and role change one account; remove takes it away") {
        const std::string before = slurp(file);
        r = sb.run(conf + "console-user passwd bob --password-stdin" + password_from(sb, "bob new long secret"));
        CHECK(r.status == 0);
        const std::string after = slurp(file);
        CHECK(after != before);
        CHECK(after.substr(0, after.find("bob:")) == before.substr(0, before.find("bob:")));  // alice untouched
        CHECK(sb.run(conf + "console-user role bob admin").status == 0);
        CHECK(sb.run(conf + "console-user remove alice").status == 0);
        CHECK(sb.run(conf + "console-user list").out == "bob\tadmin\n");
    }
    SECTION("what is refused says why, exits non-zero and changes nothing") {
        const std::string before = slurp(file);
        r = sb.run(conf + "console-user add carol --role viewer --password-stdin" + password_from(sb, "short"));
        CHECK(r.status == 1);
        CHECK(r.err.find("too short") != std::string::npos);
        r = sb.run(conf + "console-user add alice --role viewer --password-stdin" + password_from(sb, "alice other secret"));
        CHECK(r.status == 1);
        CHECK(r.err.find("exists already") != std::string::npos);
        r = sb.run(conf + "console-user add 'c:d' --role viewer --password-stdin" + password_from(sb, "a long enough one"));
        CHECK(r.status == 1);
        CHECK(sb.run(conf + "console-user remove carol").status == 1);
        CHECK(sb.run(conf + "console-user passwd carol --password-stdin" + password_from(sb, "a long enough one")).status == 1);
        CHECK(sb.run(conf + "console-user add carol --role root --password-stdin").status == 2);
        CHECK(sb.run(conf + "console-user add carol").status == 2);
        CHECK(sb.run(conf + "console-user frobnicate").status == 2);
        // No terminal to ask on (setsid: no controlling terminal) and no --password-stdin.
        r = sb.run(conf + "console-user add carol --role viewer", "setsid -w ");
        INFO(r.err);
        CHECK(r.status == 2);
        CHECK(r.err.find("--password-stdin") != std::string::npos);
        CHECK(slurp(file) == before);
    }
    SECTION("a damaged file is an error naming its line, and is left alone") {
        std::ofstream(file, std::ios::app) << "mallory\n";
        const std::string before = slurp(file);
        r = sb.run(conf + "console-user list");
        CHECK(r.status == 3);
        CHECK(r.err.find(file.string() + ":5: expected NAME:ROLE:HASH") != std::string::npos);
        CHECK(sb.run(conf + "console-user remove bob").status == 3);
        CHECK(slurp(file) == before);
    }
}

TEST_CASE("A new accounts file gets the group of the daemon's user, who must read it", "[cli][console]") {
    Sandbox sb;
    const fs::path conf = sb.dir / "console.conf";
    const fs::path file = sb.dir / "console-users";
    std::ofstream(conf) << "console_users = " << file.string() << "\nuser = nobody\n";
    const auto r = sb.run("--config " + conf.string() + " console-user add alice --role viewer --password-stdin" +
                          password_from(sb, "alice long secret"));
    REQUIRE(r.status == 0);
    struct stat st {};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    const passwd* nobody = ::getpwnam("nobody");
    REQUIRE(nobody != nullptr);
    // Only root may give a file to another group; anyone else keeps their own.
    CHECK(st.st_gid == (::geteuid() == 0 ? nobody->pw_gid : ::getegid()));
    CHECK((st.st_mode & 0777) == 0640);
}

TEST_CASE("console-user changes made at the same time are all kept", "[cli][console]") {
    Sandbox sb;
    const std::string conf = console_config(sb);
    std::string script;
    for (int i = 0; i < 6; ++i) {
        script += "printf 'a long password %d\\n' | " + cli + " " + conf + "console-user add user" + std::to_string(i) +
                  " --role viewer --password-stdin & ";
    }
    script += "wait; true";
    REQUIRE(std::system(("cd " + sb.dir.string() + " && (" + script + ") >/dev/null 2>&1").c_str()) == 0);
    const auto r = sb.run(conf + "console-user list");
    REQUIRE(r.status == 0);
    CHECK(lines(r.out) == 6);
    for (int i = 0; i < 6; ++i) CHECK(r.out.find("user" + std::to_string(i) + "\tviewer") != std::string::npos);
}
