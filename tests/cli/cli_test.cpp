// End-to-end tests of the real `mailsift` binary on real SQLite files: --help, versions, usage,
// learn and classify, bad input, the database path, and what the model shows. The
// administration commands, evaluate, corrections and console-user have files of their own.
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

TEST_CASE("Every command has --help", "[cli]") {
    Sandbox sb;
    for (const char* c : {"learn", "unlearn", "correct", "evaluate", "tune", "classify", "explain", "tokens", "stats", "contacts",
                          "console-user", "forget-user", "top", "prune", "export", "import", "backup"}) {
        const auto r = sb.run(std::string(c) + " --help");
        INFO(c);
        REQUIRE(r.status == 0);
        REQUIRE(r.out.find(std::string("usage: mailsift ") + c) != std::string::npos);
    }
    const auto r = sb.run("--help");
    REQUIRE(r.status == 0);
    REQUIRE(r.out.find("exit status") != std::string::npos);
}

TEST_CASE("Both programs print the project's version and license, and the installed man pages carry both", "[cli]") {
    Sandbox sb;
    const std::string v = mailsift::version;
    REQUIRE(v.find('.') != std::string::npos);  // CMake's project() version, or MAILSIFT_VERSION
    const auto r = sb.run("--version");
    CHECK(r.status == 0);
    CHECK(r.out == "mailsift " + v + "\n" + mailsift::license_notice);
    CHECK(r.out.find("Apache License, Version 2.0") != std::string::npos);
    const fs::path daemon_out = sb.dir / "mailsiftd.out";
    const int rc = std::system((std::string(MAILSIFTD) + " --version >" + daemon_out.string() + " 2>&1").c_str());
    CHECK(rc == 0);
    CHECK(slurp(daemon_out) == "mailsiftd " + v + "\n" + mailsift::license_notice);
    for (const char* page : {"mailsift.1", "mailsift.conf.5", "mailsiftd.8"}) {
        const std::string built = slurp(fs::path(MAILSIFT_BINARY_DIR) / "man" / page);
        INFO(page);
        CHECK(built.find("\"mailsift " + v + "\"") != std::string::npos);
        CHECK(built.find("@MAILSIFT_VERSION@") == std::string::npos);
        CHECK(built.find(".SH COPYRIGHT") != std::string::npos);
        CHECK(built.find("Apache License, Version 2.0") != std::string::npos);
    }
}

TEST_CASE("Usage errors exit 2 with a message", "[cli]") {
    Sandbox sb;
    REQUIRE(sb.run("").status == 2);
    REQUIRE(sb.run("frobnicate").status == 2);
    const auto r = sb.mailsift("learn " + data + "/ham_build_report.eml");
    REQUIRE(r.status == 2);
    REQUIRE(r.err.find("--spam or --ham") != std::string::npos);
    REQUIRE(sb.mailsift("learn --spam --ham x").status == 2);
}

TEST_CASE("Arguments: OPTION=VALUE, '--', and a command's words that name other commands", "[cli]") {
    Sandbox sb;
    // A message file named like a command, and one whose name starts with '-'.
    fs::copy_file(data + "/spam_money_offer.eml", sb.dir / "stats");
    fs::copy_file(data + "/ham_meeting_notes.eml", sb.dir / "-notes.eml");
    const auto spam = sb.run("--db=" + sb.db() + " learn --spam stats");
    REQUIRE(spam.status == 0);
    REQUIRE(spam.out.find("learned 1 as spam") != std::string::npos);
    REQUIRE(sb.mailsift("learn --ham -- -notes.eml").out.find("learned 1 as ham") != std::string::npos);
    REQUIRE(sb.mailsift("learn --ham -notes.eml").status == 2);  // without '--' it is an option, and unknown

    // "contacts import FILE" imports contacts: it is not the import command.
    std::ofstream(sb.dir / "import") << "carol@example.org\n";
    const auto contacts = sb.mailsift("contacts import import");
    REQUIRE(contacts.status == 0);
    REQUIRE(contacts.out.find("added 1 contacts") != std::string::npos);
    REQUIRE(sb.mailsift("contacts list").out.find("carol@example.org\timported\t") != std::string::npos);

    // A missing value names the option; an unknown option or a stray word names itself.
    const auto missing = sb.mailsift("top --min-count");
    REQUIRE(missing.status == 2);
    REQUIRE(missing.err.find("top: --min-count needs a value") != std::string::npos);
    const auto unknown = sb.mailsift("classify --hot " + data);
    REQUIRE(unknown.status == 2);
    REQUIRE(unknown.err.find("classify: unknown option '--hot'") != std::string::npos);
    const auto stray = sb.mailsift("stats now");
    REQUIRE(stray.status == 2);
    REQUIRE(stray.err.find("stats: unexpected argument 'now'") != std::string::npos);
    REQUIRE(sb.mailsift("top --min-count=1 --spam=1 3").status == 0);
}

TEST_CASE("Learn then classify prints one tab-separated verdict per message", "[cli]") {
    Sandbox sb;
    sb.train();
    const auto r = sb.mailsift("classify " + data);
    // The directory also holds a truncated message: real mail, scored, with a note.
    REQUIRE(r.status == 0);
    REQUIRE(r.err.find("truncated_multipart.eml: note: truncated MIME") != std::string::npos);
    REQUIRE(r.out.find("truncated_multipart.eml\t") != std::string::npos);
    std::istringstream in(r.out);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        ++n;
        std::istringstream f(line);
        std::string path, verdict, prob, lo;
        REQUIRE(std::getline(f, path, '\t'));
        REQUIRE(std::getline(f, verdict, '\t'));
        REQUIRE(std::getline(f, prob, '\t'));
        REQUIRE(std::getline(f, lo));
        REQUIRE((verdict == "spam" || verdict == "ham" || verdict == "unsure"));
        const double p = std::stod(prob), l = std::stod(lo);
        REQUIRE(p >= 0.0);
        REQUIRE(p <= 1.0);
        if (path.find("/spam_") != std::string::npos) REQUIRE(l > 0);
        if (path.find("/ham_") != std::string::npos) REQUIRE(l < 0);
    }
    REQUIRE(n == 9);  // 8 files, one of them an mbox with two messages
    REQUIRE(r.out.find("mbox_two_messages.mbox#1\t") != std::string::npos);
    REQUIRE(r.out.find("mbox_two_messages.mbox#2\t") != std::string::npos);
}

TEST_CASE("learn with train_margin leaves out what the model already knows, and says so", "[cli]") {
    Sandbox sb;
    sb.train();
    // A copy of a learned spam with one more line: a new message the model knows well.
    std::ofstream(sb.dir / "copy.eml") << slurp(data + "/spam_money_offer.eml") << "one more line\n";
    std::ofstream(sb.dir / "margin.conf") << "model = naive_bayes\ntrain_margin = 1\n";
    const std::string conf = "--config " + (sb.dir / "margin.conf").string() + " ";
    const auto stats = sb.mailsift("stats --json").out;
    const auto r = sb.mailsift(conf + "learn --spam " + (sb.dir / "copy.eml").string());
    REQUIRE(r.status == 0);
    REQUIRE(r.out == "learned 0 as spam, 0 moved from ham, 0 already learned, 1 already known (scored right beyond "
                     "train_margin)\n");
    REQUIRE(sb.mailsift("stats --json").out == stats);
    // Nothing to unlearn, and with the other label it is an error the model makes: learned.
    REQUIRE(sb.mailsift("unlearn --spam " + (sb.dir / "copy.eml").string()).err.find("was not learned") !=
            std::string::npos);
    const auto h = sb.mailsift(conf + "learn --ham " + (sb.dir / "copy.eml").string());
    REQUIRE(h.out.find("learned 1 as ham") == 0);
}

TEST_CASE("classify --json carries the same fields and the reasons", "[cli]") {
    Sandbox sb;
    sb.train();
    const auto r = sb.mailsift("classify --json " + data + "/spam_investment.eml");
    REQUIRE(r.status == 0);
    REQUIRE(lines(r.out) == 1);
    REQUIRE(r.out.find("\"verdict\":\"") != std::string::npos);
    REQUIRE(r.out.find("\"probability\":") != std::string::npos);
    REQUIRE(r.out.find("\"log_odds\":") != std::string::npos);
    REQUIRE(r.out.find("\"toward_spam\":[{\"feature\":") != std::string::npos);
}

TEST_CASE("A message on standard input is classified", "[cli]") {
    Sandbox sb;
    sb.train();
    const auto r = sb.run("--db " + sb.db() + " classify < " + data + "/spam_cheap_pills.eml");
    REQUIRE(r.status == 0);
    REQUIRE(r.out.rfind("-\t", 0) == 0);
}

TEST_CASE("Learning again is success and changes nothing, and the other label moves", "[cli]") {
    Sandbox sb;
    sb.train();
    const auto before = sb.mailsift("stats --json").out;
    const auto again = sb.mailsift("learn --spam " + data + "/spam_money_offer.eml");
    REQUIRE(again.status == 0);
    REQUIRE(again.out.find("1 already learned") != std::string::npos);
    REQUIRE(sb.mailsift("stats --json").out == before);

    const auto moved = sb.mailsift("learn --ham " + data + "/spam_money_offer.eml");
    REQUIRE(moved.status == 0);
    REQUIRE(moved.out.find("1 moved from spam") != std::string::npos);
    REQUIRE(sb.mailsift("stats --json").out.find("\"messages\":{\"spam\":2,\"ham\":4}") != std::string::npos);

    const auto unlearned = sb.mailsift("unlearn --ham " + data + "/spam_money_offer.eml");
    REQUIRE(unlearned.status == 0);
    REQUIRE(sb.mailsift("stats --json").out.find("\"messages\":{\"spam\":2,\"ham\":3}") != std::string::npos);
}

TEST_CASE("A list of paths is read with the files-from option", "[cli]") {
    Sandbox sb;
    sb.train();
    std::ofstream(sb.dir / "list") << data << "/spam_investment.eml\n" << data << "/ham_build_report.eml\n";
    const auto r = sb.mailsift("classify --files-from " + (sb.dir / "list").string());
    REQUIRE(r.status == 0);
    REQUIRE(lines(r.out) == 2);
}

TEST_CASE("Bad input gets a one-line error, a non-zero exit and no change", "[cli]") {
    Sandbox sb;
    sb.train();
    const auto before = sb.mailsift("stats --json").out;
    auto check = [&](const std::string& what, const fs::path& file, const std::string& expected) {
        INFO(what);
        const auto r = sb.mailsift("learn --spam " + file.string());
        REQUIRE(r.status == 1);
        REQUIRE(lines(r.err) == 1);
        REQUIRE(r.err.find(file.string()) != std::string::npos);
        REQUIRE(r.err.find(expected) != std::string::npos);
        REQUIRE(sb.mailsift("stats --json").out == before);
    };
    SECTION("a missing file") { check("missing", sb.dir / "nope.eml", "no such file"); }
    SECTION("an unreadable file") {
        // Root reads any file, so drop to an unprivileged user for this one when root.
        const auto file = sb.dir / "secret.eml";
        std::ofstream(file) << "From: a@example.org\nSubject: x\n\nbody\n";
        ::chmod(file.c_str(), 0);
        const std::string prefix = ::geteuid() == 0 ? "setpriv --reuid=nobody --regid=nogroup --clear-groups " : "";
        const auto r = sb.run("tokens " + file.string(), prefix);
        REQUIRE(r.status == 1);
        REQUIRE(r.err.find(file.string() + ": cannot open: Permission denied") != std::string::npos);
    }
    SECTION("an empty file") {
        std::ofstream(sb.dir / "empty.eml");
        check("empty", sb.dir / "empty.eml", "empty");
    }
    SECTION("binary junk") {
        std::ofstream f(sb.dir / "junk.bin", std::ios::binary);
        for (int i = 0; i < 4096; ++i) f.put(static_cast<char>((i * 7919) & 0xFF));
        f.close();
        check("junk", sb.dir / "junk.bin", "not a message: no header field line");
    }
    SECTION("text without a header field") {
        check("no header", fs::path(MAILSIFT_TEST_DATA) / "real_mail/not_mail_no_header.txt", "no header field line");
    }
}

TEST_CASE("Large and truncated mail is learned and scored on what was read", "[cli]") {
    Sandbox sb;
    sb.train();
    SECTION("truncated MIME") {
        const auto r = sb.mailsift("learn --spam " + data + "/truncated_multipart.eml");
        REQUIRE(r.status == 0);
        REQUIRE(r.out.find("learned 1 as spam") != std::string::npos);
    }
    SECTION("a 50 MB message") {
        std::ofstream f(sb.dir / "huge.eml", std::ios::binary);
        f << "From: big@example.org\nSubject: huge\n\n";
        const std::string line(1000, 'a');
        for (int i = 0; i < 50 * 1024; ++i) f << line << '\n';
        f.close();
        const auto l = sb.mailsift("learn --spam " + (sb.dir / "huge.eml").string());
        REQUIRE(l.status == 0);
        REQUIRE(l.out.find("learned 1 as spam") != std::string::npos);
        const auto r = sb.mailsift("classify " + (sb.dir / "huge.eml").string());
        REQUIRE(r.status == 0);
        REQUIRE(lines(r.out) == 1);  // scored, on a prefix
        REQUIRE(r.err.find("note: message is larger than") != std::string::npos);
        REQUIRE(r.err.find("scored on the first") != std::string::npos);
    }
}

TEST_CASE("Real mail with defects is learned, classified and explained, and a batch learns all but what is not mail", "[cli]") {
    Sandbox sb;
    sb.train();
    const fs::path real = fs::path(MAILSIFT_TEST_DATA) / "real_mail";
    // Each defect, and a feature that shows the message was read past it.
    const std::vector<std::pair<std::string, std::string>> cases{
        {"nul_bytes.eml", "w:replica"},              // NUL bytes in the body (Big5 spam)
        {"bare_cr.eml", "w:thursday"},               // lines end in a bare CR: the body is still found
        {"crlf_and_lf.eml", "w:budget"},             // CRLF and LF mixed
        {"eight_bit_headers.eml", "s:grüße"},        // raw 8-bit header bytes
        {"malformed_headers.eml", "w:lottery"},      // a stray continuation, a line without a colon
        {"no_body.eml", "s:nothing"},                // no empty line, no body
        {"unknown_charset.eml", "w:inheritance"},    // charset=x-no-such-charset
        {"truncated_base64.eml", "w:invoice"},       // broken base64 in a multipart that never closes
    };
    for (const auto& [file, feature] : cases) {
        INFO(file);
        const std::string path = (real / file).string();
        const auto t = sb.mailsift("tokens " + path);
        REQUIRE(t.status == 0);
        REQUIRE(t.out.find(feature + "\t") != std::string::npos);
        const auto c = sb.mailsift("classify " + path);
        REQUIRE(c.status == 0);
        REQUIRE(lines(c.out) == 1);
        REQUIRE(sb.mailsift("explain " + path).status == 0);
    }
    // One batch: every real message learned, the two that are not mail refused and named.
    std::ofstream(sb.dir / "empty.eml").close();
    const auto r = sb.mailsift("learn --spam " + real.string() + " " + (sb.dir / "empty.eml").string());
    REQUIRE(r.status == 1);
    REQUIRE(r.out == "learned 8 as spam, 0 moved from ham, 0 already learned, 2 refused (not mail or not readable: see above)\n");
    REQUIRE(lines(r.err) == 2);
    REQUIRE(r.err.find("not_mail_no_header.txt: not a message") != std::string::npos);
    REQUIRE(r.err.find("empty.eml: empty input") != std::string::npos);
    const auto stats = sb.mailsift("stats --json").out;
    REQUIRE(stats.find("\"messages\":{\"spam\":11,\"ham\":3}") != std::string::npos);  // train() and the 8
}

TEST_CASE("Database problems exit 3 naming the file", "[cli]") {
    Sandbox sb;
    SECTION("a missing database for classify") {
        const auto r = sb.mailsift("classify " + data + "/ham_build_report.eml");
        REQUIRE(r.status == 3);
        REQUIRE(r.err.find(sb.db()) != std::string::npos);
        REQUIRE(r.err.find("no such database") != std::string::npos);
        REQUIRE_FALSE(fs::exists(sb.db()));
    }
    SECTION("a database from a newer schema") {
        sb.train();
        sqlite3* db = nullptr;
        REQUIRE(sqlite3_open(sb.db().c_str(), &db) == SQLITE_OK);
        REQUIRE(sqlite3_exec(db, "PRAGMA user_version = 42", nullptr, nullptr, nullptr) == SQLITE_OK);
        sqlite3_close(db);
        const auto r = sb.mailsift("learn --spam " + data + "/spam_investment.eml");
        REQUIRE(r.status == 3);
        REQUIRE(r.err.find("newer") != std::string::npos);
    }
    SECTION("a read-only database") {
        sb.train();
        const auto before = sb.mailsift("stats --json").out;
        // Root ignores file modes, so run as an unprivileged user when we are root.
        const std::string prefix = ::geteuid() == 0 ? "setpriv --reuid=nobody --regid=nogroup --clear-groups " : "";
        ::chmod(sb.db().c_str(), 0644);
        ::chmod(sb.dir.c_str(), 0555);
        const auto r = sb.run("--db " + sb.db() + " learn --spam " + data + "/ham_patch_review.eml", prefix);
        ::chmod(sb.dir.c_str(), 0755);
        REQUIRE(r.status == 3);
        REQUIRE(r.err.find(sb.db()) != std::string::npos);
        REQUIRE(sb.mailsift("stats --json").out == before);
    }
}

TEST_CASE("The database path comes from --db, MAILSIFT_DB, the configuration file, or the default", "[cli]") {
    Sandbox sb;
    const std::string msg = data + "/ham_build_report.eml";
    SECTION("MAILSIFT_DB") {
        const auto r = sb.run("learn --ham " + msg, "MAILSIFT_DB=" + (sb.dir / "env.db").string() + " ");
        REQUIRE(r.status == 0);
        REQUIRE(fs::exists(sb.dir / "env.db"));
    }
    SECTION("the configuration file") {
        std::ofstream(sb.dir / "m.conf") << "database = " << (sb.dir / "conf.db").string() << "\n";
        REQUIRE(sb.run("--config " + (sb.dir / "m.conf").string() + " learn --ham " + msg).status == 0);
        const auto r = sb.run("--config " + (sb.dir / "m.conf").string() + " stats");
        REQUIRE(r.out.find("conf.db (from configuration file") != std::string::npos);
    }
    SECTION("the default for an unprivileged user") {
        REQUIRE(sb.run("learn --ham " + msg).status == 0);
        REQUIRE(fs::exists(sb.dir / ".local/share/mailsift/mailsift.db"));
        REQUIRE(sb.run("stats").out.find("(from default)") != std::string::npos);
    }
    SECTION("a broken configuration file") {
        std::ofstream(sb.dir / "bad.conf") << "alpha = banana\n";
        const auto r = sb.run("--config " + (sb.dir / "bad.conf").string() + " stats");
        REQUIRE(r.status == 3);
        REQUIRE(r.err.find("bad.conf:1") != std::string::npos);
    }
}

TEST_CASE("A database keeps the settings its model was trained with: stats lists them, and a configuration that "
          "disagrees is warned about and does not change a score",
          "[cli]") {
    Sandbox sb;
    const std::string msg = data + "/spam_money_offer.eml";
    std::ofstream(sb.dir / "first.conf") << "linear_step = 2\nfeatures.word_pairs = on\n";
    const std::string first = "--config " + (sb.dir / "first.conf").string() + " ";
    REQUIRE(sb.mailsift(first + "learn --spam " + data + "/spam_cheap_pills.eml " + msg).status == 0);
    REQUIRE(sb.mailsift(first + "learn --ham " + data + "/ham_build_report.eml").status == 0);
    const auto stats = sb.mailsift("--config /dev/null stats");
    REQUIRE(stats.out.find("settings kept with the model") != std::string::npos);
    REQUIRE(stats.out.find("  linear_step = 2\n") != std::string::npos);
    REQUIRE(stats.out.find("  features.word_pairs = on\n") != std::string::npos);
    REQUIRE(stats.out.find("spam_threshold") == std::string::npos);
    const auto json = sb.mailsift("--config /dev/null stats --json").out;
    REQUIRE(json.find("\"model_settings\":{") != std::string::npos);
    REQUIRE(json.find("\"linear_step\":\"2\"") != std::string::npos);
    REQUIRE(json.find("\"linear_hash_bits\":\"18\"") != std::string::npos);

    const auto before = sb.mailsift(first + "classify " + msg);
    REQUIRE(before.status == 0);
    REQUIRE(before.err.empty());
    std::ofstream(sb.dir / "changed.conf") << "linear_step = 8\nlinear_hash_bits = 16\n";
    const std::string changed = "--config " + (sb.dir / "changed.conf").string() + " ";
    const auto after = sb.mailsift(changed + "classify " + msg);
    REQUIRE(after.status == 0);
    REQUIRE(after.out == before.out);
    REQUIRE(after.err.find("warning: the configuration sets linear_hash_bits = 16, but the model in this database was "
                           "trained with 18; using 18") != std::string::npos);
    REQUIRE(after.err.find("linear_step = 8") != std::string::npos);
    // Training with it goes on with the model's settings, and says so once.
    const auto learned = sb.mailsift(changed + "learn --ham " + data + "/ham_meeting_notes.eml");
    REQUIRE(learned.status == 0);
    const auto first_note = learned.err.find("linear_hash_bits = 16");
    REQUIRE(first_note != std::string::npos);
    REQUIRE(learned.err.find("linear_hash_bits = 16", first_note + 1) == std::string::npos);
    REQUIRE(sb.mailsift(changed + "stats").out.find("warning:           the configuration sets linear_step = 8") !=
            std::string::npos);
}

TEST_CASE("classify of a few messages reads only their rows and prints what classify of a batch prints", "[cli]") {
    Sandbox sb;
    sb.train();
    const std::vector<std::string> names = {"spam_investment.eml", "ham_build_report.eml", "truncated_multipart.eml"};
    // A batch: more than 64 files, so the whole model is read once.
    fs::create_directories(sb.dir / "batch");
    std::string mbox;
    for (int i = 0; i < 70; ++i) {
        const std::string name = names[static_cast<std::size_t>(i) % names.size()];
        const std::string text = slurp(fs::path(data) / name);
        std::ofstream(sb.dir / "batch" / (std::to_string(100 + i) + "-" + name)) << text;
        mbox += "From sender@example.org Thu Nov 26 10:00:00 2026\n" + text + (text.ends_with("\n") ? "" : "\n");
    }
    std::ofstream(sb.dir / "all.mbox") << mbox;
    const auto batch = sb.mailsift("classify " + (sb.dir / "batch").string());
    REQUIRE(batch.status == 0);
    // What each line says after its path: verdict, probability, log-odds.
    auto scores = [](const std::string& out) {
        std::vector<std::string> v;
        std::istringstream in(out);
        for (std::string line; std::getline(in, line);) v.push_back(line.substr(line.find('\t')));
        return v;
    };
    const auto whole = scores(batch.out);
    REQUIRE(whole.size() == 70);
    // A few files: their rows only; the same scores.
    std::string few_args;
    for (const auto& n : names) few_args += " " + data + "/" + n;
    const auto few = sb.mailsift("classify" + few_args);
    REQUIRE(few.status == 0);
    REQUIRE(scores(few.out) == std::vector<std::string>(whole.begin(), whole.begin() + 3));
    // One message on standard input, as a delivery recipe gives it.
    const auto one = sb.mailsift("classify < " + data + "/spam_investment.eml");
    REQUIRE(scores(one.out) == std::vector<std::string>{whole[0]});
    // One file, an mbox of 70: past 64 messages it goes on with the whole model, and says the same.
    const auto in_mbox = sb.mailsift("classify " + (sb.dir / "all.mbox").string());
    REQUIRE(in_mbox.status == 0);
    REQUIRE(scores(in_mbox.out) == whole);
    // explain of one message adds up to what classify of the batch printed.
    const auto explained = sb.mailsift("explain " + data + "/spam_investment.eml");
    const std::string log_odds = whole[0].substr(whole[0].rfind('\t') + 1);
    REQUIRE(explained.out.find("log-odds = " + std::to_string(std::stod(log_odds)).substr(0, 5)) != std::string::npos);
}

TEST_CASE("tokens, explain, stats and contacts show what the model sees", "[cli]") {
    Sandbox sb;
    sb.train();
    const auto tokens = sb.mailsift("tokens " + data + "/spam_money_offer.eml");
    REQUIRE(tokens.status == 0);
    REQUIRE(tokens.out.find("pat:money\t") != std::string::npos);
    REQUIRE(tokens.out.find("s:won\t1\n") != std::string::npos);

    const auto explain = sb.mailsift("explain " + data + "/spam_investment.eml");
    REQUIRE(explain.status == 0);
    REQUIRE(explain.out.find("toward spam:") != std::string::npos);
    REQUIRE(explain.out.find("log-odds") != std::string::npos);

    const auto stats = sb.mailsift("stats");
    REQUIRE(stats.out.find("messages learned:  3 spam, 3 ham") != std::string::npos);
    REQUIRE(stats.out.find(sb.db()) != std::string::npos);

    REQUIRE(sb.mailsift("contacts add 'Dave <dave@example.net>'").status == 0);
    const auto list = sb.mailsift("contacts list");
    REQUIRE(list.out.find("dave@example.net\tmanual\t") != std::string::npos);
    REQUIRE(list.out.find("alice@university.example\tlearned-ham\t") != std::string::npos);
    REQUIRE(sb.mailsift("contacts remove dave@example.net").status == 0);
    REQUIRE(sb.mailsift("contacts list").out.find("dave@") == std::string::npos);
    REQUIRE(sb.mailsift("contacts add not-an-address").status == 1);
}

// ---- administration: top, prune, export, import, backup, contacts import ----
