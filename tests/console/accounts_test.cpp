// Console accounts on real files: Argon2id hashes, the file format, and what is refused.
#include "mailsift/console/accounts.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;
using namespace mailsift::console;

namespace {

struct TempDir {
    fs::path dir;
    TempDir() {
        char tmpl[] = "/tmp/mailsift-accounts-XXXXXX";
        dir = ::mkdtemp(tmpl);
    }
    ~TempDir() { fs::remove_all(dir); }
};

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

unsigned mode_of(const fs::path& p) {
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("A password is kept as an Argon2id hash that only that password matches", "[console]") {
    const std::string h = hash_password("correct horse battery");
    CHECK(h.starts_with("$argon2id$"));
    CHECK(h.find("correct horse") == std::string::npos);
    CHECK(verify_password(h, "correct horse battery"));
    CHECK_FALSE(verify_password(h, "correct horse batterY"));
    CHECK_FALSE(verify_password(h, ""));
    // A fresh salt each time: the same password never gives the same line twice.
    CHECK(hash_password("correct horse battery") != h);
    CHECK_FALSE(verify_password("not a hash", "correct horse battery"));
}

TEST_CASE("Accounts saved and loaded sign in with their own password and role only", "[console]") {
    TempDir t;
    const fs::path file = t.dir / "console-users";
    CHECK(Accounts::load(file).all().empty());  // no file yet: no accounts

    Accounts a;
    a.add("alice", Role::admin, "alice's long password");
    a.add("bob.viewer", Role::viewer, "bob's long password");
    a.save(file);
    CHECK(mode_of(file) == 0640);
    const std::string text = slurp(file);
    CHECK(text.find("alice:admin:$argon2id$") != std::string::npos);
    CHECK(text.find("bob.viewer:viewer:$argon2id$") != std::string::npos);
    CHECK(text.find("long password") == std::string::npos);

    const Accounts b = Accounts::load(file);
    REQUIRE(b.all().size() == 2);
    CHECK(b.authenticate("alice", "alice's long password") == Role::admin);
    CHECK(b.authenticate("bob.viewer", "bob's long password") == Role::viewer);
    CHECK_FALSE(b.authenticate("alice", "bob's long password"));
    CHECK_FALSE(b.authenticate("carol", "alice's long password"));
    CHECK_FALSE(b.authenticate("", ""));

    SECTION("a new password replaces the old one") {
        Accounts c = b;
        c.set_password("alice", "a brand new password");
        c.save(file);
        const Accounts d = Accounts::load(file);
        CHECK(d.authenticate("alice", "a brand new password") == Role::admin);
        CHECK_FALSE(d.authenticate("alice", "alice's long password"));
    }
    SECTION("a role and a removal change only that account") {
        Accounts c = b;
        c.set_role("bob.viewer", Role::admin);
        c.remove("alice");
        c.save(file);
        const Accounts d = Accounts::load(file);
        REQUIRE(d.all().size() == 1);
        CHECK(d.authenticate("bob.viewer", "bob's long password") == Role::admin);
        CHECK(d.find("alice") == nullptr);
    }
    SECTION("saving keeps the mode an administrator gave the file") {
        REQUIRE(::chmod(file.c_str(), 0600) == 0);
        Accounts c = b;
        c.remove("bob.viewer");
        c.save(file);
        CHECK(mode_of(file) == 0600);
        // and leaves no temporary file behind
        std::size_t files = 0;
        for ([[maybe_unused]] const auto& e : fs::directory_iterator(t.dir)) ++files;
        CHECK(files == 1);
    }
}

TEST_CASE("A change that would make a bad account is refused and changes nothing", "[console]") {
    Accounts a;
    a.add("alice", Role::admin, "alice's long password");
    CHECK_THROWS_AS(a.add("alice", Role::viewer, "another long password"), AccountRefused);
    CHECK_THROWS_AS(a.add("bob", Role::viewer, "short"), AccountRefused);
    CHECK_THROWS_AS(a.add("bob", Role::viewer, "line\nbreak in it"), AccountRefused);
    CHECK_THROWS_AS(a.add("bob:admin", Role::viewer, "a long enough password"), AccountRefused);
    CHECK_THROWS_AS(a.add("", Role::viewer, "a long enough password"), AccountRefused);
    CHECK_THROWS_AS(a.add(std::string(65, 'x'), Role::viewer, "a long enough password"), AccountRefused);
    CHECK_THROWS_AS(a.set_password("carol", "a long enough password"), AccountRefused);
    CHECK_THROWS_AS(a.set_password("alice", "short"), AccountRefused);
    CHECK_THROWS_AS(a.set_role("carol", Role::admin), AccountRefused);
    CHECK_THROWS_AS(a.remove("carol"), AccountRefused);
    REQUIRE(a.all().size() == 1);
    CHECK(a.authenticate("alice", "alice's long password") == Role::admin);
}

TEST_CASE("A damaged accounts file is reported with its line", "[console]") {
    TempDir t;
    const fs::path file = t.dir / "console-users";
    const std::string good = "alice:admin:" + hash_password("alice's long password") + "\n";
    auto error_of = [&](const std::string& text) -> std::string {
        write(file, text);
        try {
            Accounts::load(file);
        } catch (const AccountsError& e) {
            return e.what();
        }
        return "no error";
    };
    CHECK(error_of("# comment\n\n" + good + "bob\n") == file.string() + ":4: expected NAME:ROLE:HASH");
    CHECK(error_of(good + "bob:root:" + hash_password("x") + "\n") ==
          file.string() + ":2: the role 'root' is neither viewer nor admin");
    CHECK(error_of(good + "bob:viewer:secret\n") == file.string() + ":2: the password hash is not an Argon2 hash");
    CHECK(error_of(good + good) == file.string() + ":2: 'alice' is there twice");
    CHECK(error_of("b b:viewer:" + hash_password("x") + "\n") == file.string() + ":1: 'b b' is not an account name");
    // Comments, blank lines and CRLF are fine.
    write(file, "# accounts\r\n\r\n" + good.substr(0, good.size() - 1) + "\r\n");
    CHECK(Accounts::load(file).authenticate("alice", "alice's long password") == Role::admin);
}

TEST_CASE("An unreadable accounts file is an error, not an empty list", "[console]") {
    TempDir t;
    const fs::path file = t.dir / "console-users";
    fs::create_directory(file);  // a directory where the file should be: reading it fails
    CHECK_THROWS_AS(Accounts::load(file), AccountsError);
    CHECK_THROWS_AS(AccountsLock(t.dir / "missing-dir" / "console-users"), AccountsError);
}
