// End-to-end tests of the real `mailsift` binary's corrections by signature: a forged signature,
// tokens --signature, correct --quiet, on real SQLite files.
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

TEST_CASE("A forged signature in a correction trains only what that signature recorded, once", "[cli][security]") {
    // A user who moves a message to Junk controls its text, X-Mailsift-Signature
    // included. Whatever signature they write, a correction trains the features
    // mailsiftd recorded under it (never the text at hand), and only once.
    Sandbox sb;
    sb.train();
    const std::string db = sb.db();
    const std::string victim = "0123456789abcdef0123456789abcdef";
    sql_exec(db, "INSERT INTO signatures (id, scanned_at, verdict, features) VALUES (x'" + victim +
                     "', strftime('%s', 'now'), 0, 'w:recordedword\t1\n');");
    const auto spam_messages = [&] { return *sql_value(db, "SELECT messages FROM classes WHERE class = 1"); };
    const auto spam_presences = [&](const std::string& text) {
        return sql_value(db, "SELECT spam_presences FROM features WHERE text = '" + text + "'");
    };
    const long long before = spam_messages();
    std::ofstream(sb.dir / "forged.eml") << "From: mallory@example.net\nSubject: injected\nX-Mailsift-Signature: " << victim
                                         << "\n\ninjectedword injectedword\n";
    const auto r = sb.mailsift("correct --spam " + (sb.dir / "forged.eml").string());
    REQUIRE(r.status == 0);
    REQUIRE(r.out.find("1 by signature") != std::string::npos);
    REQUIRE(spam_messages() == before + 1);
    REQUIRE(spam_presences("w:recordedword") == std::optional<long long>(1));
    REQUIRE_FALSE(spam_presences("w:injectedword").has_value());  // the text at hand trained nothing
    REQUIRE_FALSE(spam_presences("s:injected").has_value());

    // Replaying it, with any text, trains nothing more.
    std::ofstream(sb.dir / "again.eml") << "Subject: other\nX-Mailsift-Signature: " << victim << "\n\nmore words\n";
    const auto again = sb.mailsift("correct --spam " + (sb.dir / "again.eml").string() + " --signature " + victim);
    REQUIRE(again.status == 0);  // already learned is success, and says so for both
    REQUIRE(again.out.find("2 by signature") != std::string::npos);
    REQUIRE(again.out.find("0 learned") != std::string::npos);
    REQUIRE(again.err.find("already learned as spam") != std::string::npos);
    REQUIRE(spam_messages() == before + 1);
    REQUIRE(spam_presences("w:recordedword") == std::optional<long long>(1));

    // A signature nobody recorded: the message is learned as itself, and the
    // forged header is not one of its features.
    std::ofstream(sb.dir / "unknown.eml") << "Subject: hello\nX-Mailsift-Signature: ffffffffffffffffffffffffffffffff\n\nplainword\n";
    const auto unknown = sb.mailsift("correct --spam " + (sb.dir / "unknown.eml").string());
    REQUIRE(unknown.status == 0);
    REQUIRE(unknown.out.find("0 by signature, 1 as the message") != std::string::npos);
    REQUIRE(spam_presences("w:plainword") == std::optional<long long>(1));
    REQUIRE(*sql_value(db, "SELECT count(*) FROM features WHERE text LIKE '%mailsift%' OR text LIKE '%ffffffff%'") == 0);
}

TEST_CASE("tokens --signature prints the features recorded under a signature, and says when there are none",
          "[cli]") {
    Sandbox sb;
    sb.train();
    const std::string db = sb.db();
    const std::string id = "00112233445566778899aabbccddeeff";
    sql_exec(db, "INSERT INTO signatures (id, scanned_at, verdict, features) VALUES (x'" + id +
                     "', strftime('%s', 'now'), 2, 'w:zulu\t1\nhdr:from:a@b.c\t2\n');");
    const auto r = sb.mailsift("tokens --signature " + id);
    REQUIRE(r.status == 0);
    REQUIRE(r.out == "w:zulu\t1\nhdr:from:a@b.c\t2\n");

    const auto unknown = sb.mailsift("tokens --signature ffffffffffffffffffffffffffffffff");
    REQUIRE(unknown.status == 1);
    REQUIRE(unknown.out.empty());
    REQUIRE(unknown.err.find("no scan recorded") != std::string::npos);

    REQUIRE(sb.mailsift("tokens --signature nothex").status == 2);
    REQUIRE(sb.mailsift("tokens --signature").status == 2);
    REQUIRE(sb.mailsift("tokens --signature " + id + " extra.eml").status == 2);
}

TEST_CASE("correct --quiet prints nothing for a message corrected twice, and still reports errors", "[cli]") {
    Sandbox sb;
    sb.train();
    const std::string msg = (sb.dir / "m.eml").string();
    std::ofstream(msg) << "From: someone@example.net\nSubject: twice\n\nwords for a quiet correction\n";
    const auto first = sb.mailsift("correct --spam --quiet " + msg);
    REQUIRE(first.status == 0);
    REQUIRE(first.out.empty());
    REQUIRE(first.err.empty());
    const auto again = sb.mailsift("correct --spam -q " + msg);
    REQUIRE(again.status == 0);
    REQUIRE(again.out.empty());
    REQUIRE(again.err.empty());  // "already learned as spam" is no error
    const auto loud = sb.mailsift("correct --spam " + msg);
    REQUIRE(loud.err.find("already learned as spam") != std::string::npos);
    const auto bad = sb.mailsift("correct --spam --quiet --signature nothex");
    REQUIRE(bad.status == 1);
    REQUIRE(bad.err.find("not a signature") != std::string::npos);
}
