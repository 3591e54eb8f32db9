// End-to-end tests of the real `mailsift` binary on real SQLite files.
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

struct Sandbox {
    fs::path dir;
    Sandbox() {
        char tmpl[] = "/tmp/mailsift-cli-XXXXXX";
        dir = ::mkdtemp(tmpl);
        ::chmod(dir.c_str(), 0755);
    }
    ~Sandbox() { fs::remove_all(dir); }
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

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

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

namespace {

const std::string contacts_data = std::string(MAILSIFT_TEST_DATA) + "/contacts";

// The first column of the first row of a query on a database file.
std::optional<long long> sql_value(const std::string& path, const std::string& query) {
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

void sql_exec(const std::string& path, const std::string& statements) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    const int rc = sqlite3_exec(db, statements.c_str(), nullptr, nullptr, nullptr);
    INFO(statements << ": " << sqlite3_errmsg(db));
    sqlite3_close(db);
    REQUIRE(rc == SQLITE_OK);
}

// Class totals equal the sums of the feature rows and nothing is negative.
void require_consistent_model(const std::string& path) {
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

struct TopRow {
    int rank = 0;
    double weight = 0;
    unsigned long long spam = 0, ham = 0;
    std::string feature;
};

// The rows of one direction's table in `top` output ("toward spam:" or "toward ham:").
std::vector<TopRow> top_rows(const std::string& out, const std::string& title) {
    std::vector<TopRow> rows;
    const auto at = out.find("\n" + title + "\n");
    if (at == std::string::npos) return rows;
    std::istringstream in(out.substr(at + title.size() + 2));
    std::string line;
    std::getline(in, line);  // column names
    while (std::getline(in, line) && !line.empty() && line != "  (none)") {
        std::istringstream f(line);
        TopRow r;
        REQUIRE(f >> r.rank >> r.weight >> r.spam >> r.ham);
        std::getline(f >> std::ws, r.feature);
        rows.push_back(r);
    }
    return rows;
}

// From an export: class totals (index 0 ham, 1 spam) and feature counts by text.
struct ExportedModel {
    unsigned long long occurrences[2] = {0, 0}, presences[2] = {0, 0};
    std::map<std::string, std::array<unsigned long long, 4>> features;  // spam occ, ham occ, spam pres, ham pres
};

ExportedModel read_export(const std::string& text) {
    ExportedModel m;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> f;
        std::istringstream fields(line);
        for (std::string x; std::getline(fields, x, '\t');) f.push_back(x);
        if (f[0] == "class") {
            const int c = f[1] == "spam" ? 1 : 0;
            m.occurrences[c] = std::stoull(f[3]);
            m.presences[c] = std::stoull(f[4]);
        } else if (f[0] == "feature") {
            m.features[f[7]] = {std::stoull(f[2]), std::stoull(f[3]), std::stoull(f[4]), std::stoull(f[5])};
        }
    }
    return m;
}

}  // namespace

TEST_CASE("Every administration command has --help", "[cli]") {
    Sandbox sb;
    for (const char* c : {"top", "prune", "export", "import", "backup"}) {
        const auto r = sb.run(std::string(c) + " --help");
        INFO(c);
        REQUIRE(r.status == 0);
        REQUIRE(r.out.find(std::string("usage: mailsift ") + c) != std::string::npos);
    }
    REQUIRE(sb.run("contacts import --help").out.find("mailsift contacts import FILE") != std::string::npos);
    const auto r = sb.run("--help");
    for (const char* c : {"top", "prune", "export", "import", "backup"}) {
        INFO(c);
        REQUIRE(r.out.find(std::string("\n  ") + c + " ") != std::string::npos);
    }
}

TEST_CASE("top ranks features by the model's own weights in each direction", "[cli]") {
    Sandbox sb;
    sb.train();
    const auto exported = sb.mailsift("export -");
    REQUIRE(exported.status == 0);
    const ExportedModel m = read_export(exported.out);
    const double alpha = 0.01, v = static_cast<double>(m.features.size());
    // The model's weight from the counts in the columns the configuration uses.
    auto weight = [&](const TopRow& row, bool boolean) {
        const auto& t = boolean ? m.presences : m.occurrences;
        return std::log((static_cast<double>(row.spam) + alpha) / (static_cast<double>(row.ham) + alpha)) +
               std::log((static_cast<double>(t[0]) + alpha * v) / (static_cast<double>(t[1]) + alpha * v));
    };

    SECTION("both directions, strongest first, with the counts and weights the model uses") {
        const auto r = sb.mailsift("top --min-count 2 5");
        REQUIRE(r.status == 0);
        const auto spam = top_rows(r.out, "toward spam:"), ham = top_rows(r.out, "toward ham:");
        REQUIRE(spam.size() == 5);
        REQUIRE(ham.size() == 5);
        for (std::size_t i = 0; i < spam.size(); ++i) {
            INFO(spam[i].feature);
            REQUIRE(spam[i].rank == static_cast<int>(i + 1));
            REQUIRE(spam[i].weight > 0);
            if (i > 0) REQUIRE(spam[i].weight <= spam[i - 1].weight);
            REQUIRE(spam[i].spam + spam[i].ham >= 2);
            const auto& c = m.features.at(spam[i].feature);  // boolean: messages containing it
            REQUIRE(spam[i].spam == c[2]);
            REQUIRE(spam[i].ham == c[3]);
            REQUIRE(spam[i].weight == Approx(weight(spam[i], true)).margin(1e-4));
        }
        for (std::size_t i = 0; i < ham.size(); ++i) {
            INFO(ham[i].feature);
            REQUIRE(ham[i].weight < 0);
            if (i > 0) REQUIRE(ham[i].weight >= ham[i - 1].weight);
            REQUIRE(ham[i].weight == Approx(weight(ham[i], true)).margin(1e-4));
        }
    }
    SECTION("term_frequency = raw ranks by occurrences") {
        std::ofstream(sb.dir / "raw.conf") << "term_frequency = raw\n";
        const auto r = sb.mailsift("--config " + (sb.dir / "raw.conf").string() + " top --ham --min-count 3 4");
        REQUIRE(r.status == 0);
        REQUIRE(r.out.find("toward spam:") == std::string::npos);
        const auto ham = top_rows(r.out, "toward ham:");
        REQUIRE_FALSE(ham.empty());
        REQUIRE(ham.size() <= 4);
        for (const auto& row : ham) {
            INFO(row.feature);
            const auto& c = m.features.at(row.feature);
            REQUIRE(row.spam == c[0]);
            REQUIRE(row.ham == c[1]);
            REQUIRE(row.spam + row.ham >= 3);
            REQUIRE(row.weight == Approx(weight(row, false)).margin(1e-4));
        }
    }
    SECTION("by default only features seen at least five times are ranked") {
        const auto r = sb.mailsift("top");
        REQUIRE(r.status == 0);
        REQUIRE(r.out.find("seen at least 5 times") != std::string::npos);
        auto rows = top_rows(r.out, "toward spam:");
        const auto ham = top_rows(r.out, "toward ham:");
        rows.insert(rows.end(), ham.begin(), ham.end());
        REQUIRE_FALSE(rows.empty());
        for (const auto& row : rows) REQUIRE(row.spam + row.ham >= 5);
    }
    SECTION("bad arguments are usage errors") {
        for (const char* args : {"top 0", "top many", "top 3 4", "top --min-count", "top --min-count 0", "top --hot"}) {
            INFO(args);
            REQUIRE(sb.mailsift(args).status == 2);
        }
    }
}

TEST_CASE("prune expires old signatures and one-off features, and the model stays consistent", "[cli]") {
    Sandbox sb;
    sb.train();
    const std::string db = sb.db();
    sql_exec(db,
             "INSERT INTO signatures (id, scanned_at, verdict, features) VALUES"
             " (randomblob(16), strftime('%s', 'now') - 20 * 86400, 2, 'w:a\t1'),"
             " (randomblob(16), strftime('%s', 'now') - 2 * 86400, 0, 'w:b\t1');"
             "UPDATE features SET last_seen = strftime('%s', 'now') - 100 * 86400;");
    const auto once = *sql_value(db, "SELECT count(*) FROM features WHERE spam_occurrences + ham_occurrences = 1");
    const auto all = *sql_value(db, "SELECT count(*) FROM features");
    REQUIRE(once > 0);

    SECTION("features seen more recently than the cut-off stay") {
        const auto r = sb.mailsift("prune --features-unseen-days 101 --signatures-older-than 30");
        REQUIRE(r.status == 0);
        REQUIRE(r.out.find("removed 0 signatures") != std::string::npos);
        REQUIRE(r.out.find("removed 0 features") != std::string::npos);
        REQUIRE(sql_value(db, "SELECT count(*) FROM features") == all);
    }
    SECTION("the defaults take signature_days from the configuration and 90 days for features") {
        const auto r = sb.mailsift("prune");
        REQUIRE(r.status == 0);
        REQUIRE(r.out.find("removed 1 signatures older than 14 days") != std::string::npos);
        REQUIRE(r.out.find("removed " + std::to_string(once) + " features seen once") != std::string::npos);
        REQUIRE(sql_value(db, "SELECT count(*) FROM features") == all - once);
        REQUIRE(sql_value(db, "SELECT count(*) FROM features WHERE spam_occurrences + ham_occurrences = 1") == 0);
        require_consistent_model(db);

        std::ofstream(sb.dir / "short.conf") << "signature_days = 1\n";
        const auto again = sb.mailsift("--config " + (sb.dir / "short.conf").string() + " prune");
        REQUIRE(again.out.find("removed 1 signatures older than 1 days") != std::string::npos);
        REQUIRE(sql_value(db, "SELECT count(*) FROM signatures") == 0);

        // The learned messages still name the removed features: unlearning and moving stay exact.
        REQUIRE(sb.mailsift("unlearn --spam " + data + "/spam_money_offer.eml").status == 0);
        require_consistent_model(db);
        REQUIRE(sb.mailsift("learn --spam " + data + "/ham_patch_review.eml").out.find("1 moved") != std::string::npos);
        require_consistent_model(db);
        REQUIRE(sb.mailsift("classify " + data + "/spam_investment.eml").status == 0);
        REQUIRE(sb.mailsift("stats").out.find("messages learned:  3 spam, 2 ham") != std::string::npos);
    }
    SECTION("bad arguments are usage errors and change nothing") {
        for (const char* args : {"prune --features-unseen-days -1", "prune --signatures-older-than", "prune 7",
                                 "prune --everything"}) {
            INFO(args);
            REQUIRE(sb.mailsift(args).status == 2);
        }
        REQUIRE(sql_value(db, "SELECT count(*) FROM features") == all);
    }
}

TEST_CASE("prune needs an existing database", "[cli]") {
    Sandbox sb;
    const auto r = sb.mailsift("prune");
    REQUIRE(r.status == 3);
    REQUIRE(r.err.find("no such database") != std::string::npos);
    REQUIRE_FALSE(fs::exists(sb.db()));
}

TEST_CASE("export and import carry the model over exactly", "[cli]") {
    Sandbox sb;
    sb.train();
    REQUIRE(sb.mailsift("contacts add 'Dave <dave@example.net>'").status == 0);
    const auto file = (sb.dir / "model.txt").string();
    const auto r = sb.mailsift("export " + file);
    REQUIRE(r.status == 0);
    REQUIRE(r.out.find("exported ") != std::string::npos);
    const std::string first = slurp(file);
    // Version 4: the settings kept with the model, then (the default scorer is
    // linear) its weights, the last refit's own change (learn refitted as it
    // ended) and its samples come along.
    REQUIRE(first.rfind("mailsift-model\t4\nsetting\t", 0) == 0);
    REQUIRE(first.find("\nlinear\t18\t") != std::string::npos);
    REQUIRE(first.find("\nlinear-refit\t18\t") != std::string::npos);
    REQUIRE(sb.mailsift("export -").out == first);
    struct stat st{};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    REQUIRE((st.st_mode & 0007) == 0);  // as private as the database

    const std::string copy = (sb.dir / "copy.db").string();
    SECTION("from a file") {
        const auto imported = sb.run("--db " + copy + " import " + file);
        REQUIRE(imported.status == 0);
        REQUIRE(imported.out.find("imported ") != std::string::npos);
    }
    SECTION("from standard input") { REQUIRE(sb.run("--db " + copy + " import - < " + file).status == 0); }

    // Byte-identical when exported again, and every fixture scores the same.
    REQUIRE(sb.run("--db " + copy + " export -").out == first);
    const auto before = sb.mailsift("classify " + data), after = sb.run("--db " + copy + " classify " + data);
    REQUIRE(lines(before.out) == 9);
    REQUIRE(after.out == before.out);
    REQUIRE(sb.run("--db " + copy + " contacts list").out == sb.mailsift("contacts list").out);

    // The learned messages came along: learning again is recognised and unlearning is exact.
    const auto again = sb.run("--db " + copy + " learn --spam " + data + "/spam_money_offer.eml");
    REQUIRE(again.out.find("1 already learned") != std::string::npos);
    for (const std::string& db : {sb.db(), copy}) {
        REQUIRE(sb.run("--db " + db + " unlearn --ham " + data + "/ham_meeting_notes.eml").out.find("unlearned 1") !=
                std::string::npos);
    }
    REQUIRE(sb.run("--db " + copy + " export -").out == sb.mailsift("export -").out);
}

TEST_CASE("import refuses a database with a model and malformed files, changing nothing", "[cli][long]") {
    Sandbox sb;
    sb.train();
    const auto file = (sb.dir / "model.txt").string();
    REQUIRE(sb.mailsift("export " + file).status == 0);
    const std::string good = slurp(file);
    const std::string fresh = (sb.dir / "fresh.db").string();

    SECTION("a database that already holds a model") {
        const auto before = sb.mailsift("stats --json").out;
        const auto r = sb.mailsift("import " + file);
        REQUIRE(r.status == 3);
        REQUIRE(lines(r.err) == 1);
        REQUIRE(r.err.find("already holds a model") != std::string::npos);
        REQUIRE(sb.mailsift("stats --json").out == before);
    }
    SECTION("a malformed line is named with its file and line") {
        std::string bad = good;
        const auto third = bad.find('\n', bad.find('\n', bad.find('\n') + 1) + 1);  // end of line 3
        bad.insert(third + 1, "feature\tnot-an-id\n");
        std::ofstream(sb.dir / "bad.txt") << bad;
        const auto bad_file = (sb.dir / "bad.txt").string();
        const auto r = sb.run("--db " + fresh + " import " + bad_file);
        REQUIRE(r.status == 1);
        REQUIRE(lines(r.err) == 1);
        REQUIRE(r.err.find(bad_file + ":4: a 'feature' record has 8 tab-separated fields") != std::string::npos);
        REQUIRE_FALSE(fs::exists(fresh));  // the database this import created is gone again
    }
    SECTION("a truncated file") {
        std::ofstream(sb.dir / "cut.txt") << good.substr(0, good.rfind("end\t"));
        const auto r = sb.run("--db " + fresh + " import " + (sb.dir / "cut.txt").string());
        REQUIRE(r.status == 1);
        REQUIRE(r.err.find("no 'end' line") != std::string::npos);
        REQUIRE_FALSE(fs::exists(fresh));
    }
    SECTION("an existing empty database stays, and empty") {
        REQUIRE(sb.run("--db " + fresh + " contacts list").status == 3);  // read-only commands need it
        REQUIRE(sb.run("--db " + fresh + " contacts add a@example.org").status == 0);
        REQUIRE(sb.run("--db " + fresh + " contacts remove a@example.org").status == 0);
        const auto r = sb.run("--db " + fresh + " import - < /dev/null");
        REQUIRE(r.status == 1);
        REQUIRE(r.err.find("-:1: empty file") != std::string::npos);
        REQUIRE(fs::exists(fresh));
        REQUIRE(sb.run("--db " + fresh + " stats").out.find("distinct features: 0") != std::string::npos);
    }
    SECTION("a missing file") {
        const auto r = sb.run("--db " + fresh + " import " + (sb.dir / "nope.txt").string());
        REQUIRE(r.status == 1);
        REQUIRE(r.err.find("nope.txt: cannot open") != std::string::npos);
        REQUIRE_FALSE(fs::exists(fresh));
    }
    SECTION("usage errors") {
        REQUIRE(sb.mailsift("import").status == 2);
        REQUIRE(sb.mailsift("import a b").status == 2);
        REQUIRE(sb.mailsift("export").status == 2);
    }
}

TEST_CASE("backup copies the live database, and replaces a file only with --force", "[cli]") {
    Sandbox sb;
    sb.train();
    const auto copy = (sb.dir / "backup.db").string();
    const auto r = sb.mailsift("backup " + copy);
    REQUIRE(r.status == 0);
    REQUIRE(r.out.find("copied ") != std::string::npos);
    auto from_schema = [](const std::string& json) { return json.substr(json.find("\"schema_version\"")); };
    const auto original = sb.mailsift("stats --json"), copied = sb.run("--db " + copy + " stats --json");
    REQUIRE(copied.status == 0);
    REQUIRE(from_schema(copied.out) == from_schema(original.out));
    REQUIRE(sb.run("--db " + copy + " export -").out == sb.mailsift("export -").out);

    REQUIRE(sb.mailsift("learn --ham " + data + "/spam_investment.eml").status == 0);  // the live one moves on
    const auto refused = sb.mailsift("backup " + copy);
    REQUIRE(refused.status == 1);
    REQUIRE(refused.err.find(copy + ": already exists; use --force") != std::string::npos);
    REQUIRE(sb.run("--db " + copy + " stats").out.find("messages learned:  3 spam, 3 ham") != std::string::npos);
    REQUIRE(sb.mailsift("backup --force " + copy).status == 0);
    REQUIRE(sb.run("--db " + copy + " stats").out.find("messages learned:  2 spam, 4 ham") != std::string::npos);

    // Neither command ever writes over the database it reads.
    const auto stats = sb.mailsift("stats --json").out;
    const auto onto_itself = sb.mailsift("export " + sb.db());
    REQUIRE(onto_itself.status == 1);
    REQUIRE(onto_itself.err.find("is a file of the database itself") != std::string::npos);
    REQUIRE(sb.mailsift("backup --force " + sb.db()).status == 3);
    REQUIRE(sb.mailsift("stats --json").out == stats);

    REQUIRE(sb.mailsift("backup -").status == 2);
    REQUIRE(sb.mailsift("backup").status == 2);
    const auto missing = sb.run("--db " + (sb.dir / "none.db").string() + " backup " + (sb.dir / "x.db").string());
    REQUIRE(missing.status == 3);
    REQUIRE_FALSE(fs::exists(sb.dir / "x.db"));
}

TEST_CASE("contacts import reads address lists and vCards and names bad lines", "[cli]") {
    Sandbox sb;
    const auto list = sb.mailsift("contacts import " + contacts_data + "/addresses.txt");
    REQUIRE(list.status == 0);
    REQUIRE(list.out == "added 4 contacts, 0 already present\n");
    const auto vcards = sb.mailsift("contacts import " + contacts_data + "/contacts.vcf");
    REQUIRE(vcards.status == 0);
    REQUIRE(vcards.err.empty());
    REQUIRE(vcards.out == "added 4 contacts, 1 already present\n");  // alice@example.org is in both
    const auto shown = sb.mailsift("contacts list").out;
    for (const char* a : {"alice@example.org", "bob@example.net", "carol@example.com", "dave@example.org",
                          "erin@work.example", "erin@home.example", "frank@example.com", "grace@example.net"}) {
        INFO(a);
        REQUIRE(shown.find(std::string(a) + "\timported\t") != std::string::npos);
    }
    REQUIRE(lines(shown) == 8);

    SECTION("again, from standard input: nothing new") {
        const auto r = sb.run("--db " + sb.db() + " contacts import - < " + contacts_data + "/addresses.txt");
        REQUIRE(r.status == 0);
        REQUIRE(r.out == "added 0 contacts, 4 already present\n");
    }
    SECTION("bad lines are reported, the good ones imported") {
        const auto file = contacts_data + "/with_errors.txt";
        const auto r = sb.mailsift("contacts import " + file);
        REQUIRE(r.status == 1);
        REQUIRE(r.err == "mailsift: " + file + ":3: not an email address\nmailsift: " + file +
                             ":5: not an email address\n");
        REQUIRE(r.out == "added 2 contacts, 0 already present\n");
        REQUIRE(lines(sb.mailsift("contacts list").out) == 10);
    }
    SECTION("a missing file") {
        const auto r = sb.mailsift("contacts import " + (sb.dir / "nope.txt").string());
        REQUIRE(r.status == 1);
        REQUIRE(r.err.find("nope.txt: cannot open") != std::string::npos);
    }
    SECTION("usage errors") {
        REQUIRE(sb.mailsift("contacts import").status == 2);
        REQUIRE(sb.mailsift("contacts import a b").status == 2);
    }
}

TEST_CASE("learn --index learns a labelled corpus in its order, each message with its own label", "[cli]") {
    Sandbox sb;
    const std::string corpus = std::string(MAILSIFT_TEST_DATA) + "/corpus";
    std::ofstream(sb.dir / "all.conf") << "train_margin = 0\n";
    const std::string all = "--config " + (sb.dir / "all.conf").string() + " ";
    const auto r = sb.mailsift(all + "learn --index " + corpus + "/index");
    REQUIRE(r.status == 0);
    REQUIRE(r.out == "learned 5 as spam and 5 as ham (0 of them moved from the other class), 0 already learned\n");
    // The same model as learning each class on its own.
    Sandbox by_class;
    std::string spam, ham;
    for (int i = 1; i <= 5; ++i) {
        spam += " " + corpus + "/s" + std::to_string(i) + ".eml";
        ham += " " + corpus + "/h" + std::to_string(i) + ".eml";
    }
    REQUIRE(by_class.mailsift(all + "learn --spam" + spam).status == 0);
    REQUIRE(by_class.mailsift(all + "learn --ham" + ham).status == 0);
    REQUIRE(sb.mailsift("export " + (sb.dir / "a.txt").string()).status == 0);
    REQUIRE(by_class.mailsift("export " + (sb.dir / "b.txt").string()).status == 0);
    // The model: class totals and every feature's counts. Message lines carry the time
    // learned, and a feature line its last_seen (the 7th field): the two sandboxes may
    // learn in different seconds, so those are left out.
    const auto model_lines = [](const fs::path& p) {
        std::istringstream in(slurp(p));
        std::string line, kept;
        while (std::getline(in, line)) {
            if (line.rfind("feature\t", 0) == 0) {
                std::size_t tab = 0;
                for (int i = 0; i < 6 && tab != std::string::npos; ++i) tab = line.find('\t', tab + 1);
                const std::size_t next = tab == std::string::npos ? tab : line.find('\t', tab + 1);
                if (next != std::string::npos) line.erase(tab, next - tab);
                kept += line + "\n";
            } else if (line.rfind("class\t", 0) == 0) {
                kept += line + "\n";
            }
        }
        return kept;
    };
    REQUIRE(lines(model_lines(sb.dir / "a.txt")) > 10);
    REQUIRE(model_lines(sb.dir / "a.txt") == model_lines(sb.dir / "b.txt"));
    // Again: nothing changes. With one label flipped: that message moves.
    REQUIRE(sb.mailsift(all + "learn --index " + corpus + "/index").out.find("10 already learned") != std::string::npos);
    fs::create_directory(sb.dir / "flipped");
    fs::copy_file(corpus + "/s1.eml", sb.dir / "flipped" / "s1.eml");
    std::ofstream(sb.dir / "flipped" / "index") << "ham s1.eml\n";
    const auto moved = sb.mailsift(all + "learn --index " + (sb.dir / "flipped" / "index").string());
    REQUIRE(moved.status == 0);
    REQUIRE(moved.out.find("learned 0 as spam and 1 as ham (1 of them moved from the other class)") != std::string::npos);
    // Thick-threshold training (the default margin) judges each message against the model
    // as the command found it: on an empty model, a Junk folder and then an inbox are
    // learned whole, the same model as arrival order with every message learned.
    Sandbox thick;
    const auto t_spam = thick.mailsift("--config /dev/null learn --spam" + spam);
    REQUIRE(t_spam.out.find("learned 5 as spam") == 0);
    const auto t_ham = thick.mailsift("--config /dev/null learn --ham" + ham);
    REQUIRE(t_ham.out.find("learned 5 as ham") == 0);
    REQUIRE(t_ham.out.find("already known") == std::string::npos);
    REQUIRE(thick.mailsift("export " + (sb.dir / "c.txt").string()).status == 0);
    REQUIRE(model_lines(sb.dir / "c.txt") == model_lines(sb.dir / "a.txt"));
    // Errors: --index with a label or paths is a usage error; an unreadable or malformed index names the problem.
    REQUIRE(sb.mailsift("learn --index " + corpus + "/index --spam").status == 2);
    REQUIRE(sb.mailsift("learn --index").status == 2);
    const auto missing = sb.mailsift("learn --index " + (sb.dir / "none").string());
    REQUIRE(missing.status == 1);
    REQUIRE(missing.err.find("cannot read index") != std::string::npos);
    std::ofstream(sb.dir / "bad.index") << "spam s1.eml\nmaybe s2.eml\n";
    const auto bad = sb.mailsift("learn --index " + (sb.dir / "bad.index").string());
    REQUIRE(bad.status == 1);
    REQUIRE(bad.err.find("bad.index:2: expected 'spam PATH' or 'ham PATH'") != std::string::npos);
}

TEST_CASE("evaluate measures a labelled corpus without touching the live database", "[cli]") {
    Sandbox sb;
    const std::string index = std::string(MAILSIFT_TEST_DATA) + "/corpus/index";
    // The verdicts worked out in tests/data/corpus/README: naive Bayes, which is sure of a
    // disjoint vocabulary from five messages, at a threshold it reaches (the linear
    // scorer learns its weights from errors, and five messages make few).
    std::ofstream(sb.dir / "nb.conf") << "model = naive_bayes\nspam_threshold = 0.9\n";
    const std::string nb = "--config " + (sb.dir / "nb.conf").string() + " ";
    SECTION("a split reports the numbers worked out in tests/data/corpus/README") {
        const auto r = sb.mailsift(nb + "evaluate --index " + index + " --split every:2");
        REQUIRE(r.status == 0);
        REQUIRE(r.out.find("5 tested (2 spam, 3 ham), 5 trained") != std::string::npos);
        REQUIRE(r.out.find("AUC               1.000000") != std::string::npos);
        REQUIRE(r.out.find("1-ROCA%           0.0000") != std::string::npos);
        REQUIRE(r.out.find("  spam                       2       0       0") != std::string::npos);
        REQUIRE(r.out.find("  ham                        0       0       3") != std::string::npos);
        // lam% with no error: hm = ½/4, sm = ½/3; 100·logit⁻¹((logit(1/8) + logit(1/6))/2) = 14.4591.
        REQUIRE(r.out.find("lam%              14.4591") != std::string::npos);
        REQUIRE(r.out.find("calibration       ECE ") != std::string::npos);
        REQUIRE(r.out.find("no bin holds 30 messages") != std::string::npos);
        REQUIRE_FALSE(fs::exists(sb.db()));
    }
    SECTION("cross-validation tests every message once, as JSON") {
        const auto r = sb.mailsift(nb + "evaluate --index " + index + " --folds 5 --train-margin 0 --json");
        REQUIRE(r.status == 0);
        REQUIRE(r.out.find("\"messages\":10,\"spam\":5,\"ham\":5,\"trained\":40") != std::string::npos);
        REQUIRE(r.out.find("\"auc\":1,") != std::string::npos);
        REQUIRE(r.out.find("\"expected_calibration_error\":") != std::string::npos);
        REQUIRE(r.out.find("\"worst_bin\":null") != std::string::npos);
        REQUIRE(r.out.find("\"confusion\":{\"spam\":{\"spam\":5,\"unsure\":0,\"ham\":0}") != std::string::npos);
    }
    SECTION("folders given with --spam and --ham") {
        const std::string dir = std::string(MAILSIFT_TEST_DATA) + "/corpus";
        const auto r = sb.mailsift("--config /dev/null evaluate --spam " + dir + "/s1.eml " + dir + "/s2.eml --ham " +
                                   dir + "/h1.eml " + dir + "/h2.eml --split every:2 --json");
        REQUIRE(r.status == 0);
        REQUIRE(r.out.find("\"messages\":2,") != std::string::npos);
    }
    SECTION("bad input is a clear error") {
        REQUIRE(sb.mailsift("evaluate --spam " + data + "/spam_investment.eml").status == 2);  // no ham
        REQUIRE(sb.mailsift("evaluate --index " + index + " --split every:1").status == 2);
        REQUIRE(sb.mailsift("evaluate --index " + index + " --folds one").status == 2);
        std::ofstream(sb.dir / "bad.index") << "spam a.eml\nmaybe b.eml\n";
        const auto r = sb.mailsift("evaluate --index " + (sb.dir / "bad.index").string());
        REQUIRE(r.status == 1);
        REQUIRE(r.err.find("bad.index:2:") != std::string::npos);
    }
}

namespace {
// The integer after "key": in a flat JSON text (first occurrence after `from`).
long json_int(const std::string& json, const std::string& key, std::size_t from = 0) {
    const auto at = json.find("\"" + key + "\":", from);
    REQUIRE(at != std::string::npos);
    return std::stol(json.substr(at + key.size() + 3));
}
}  // namespace

TEST_CASE("evaluate --online classifies each message before learning it", "[cli]") {
    Sandbox sb;
    const std::string index = std::string(MAILSIFT_TEST_DATA) + "/corpus/index";
    // --train-margin 0: every message learned, whatever the configured training regime.
    const auto all = sb.mailsift("--config /dev/null evaluate --index " + index + " --online --train-margin 0 --json");
    REQUIRE(all.status == 0);
    REQUIRE(json_int(all.out, "messages") == 10);
    REQUIRE(json_int(all.out, "trained") == 10);
    // The first message meets an empty model: log-odds 0, P = ½, so at least one unsure.
    const auto spam_at = all.out.find("\"confusion\":{\"spam\":");
    REQUIRE(json_int(all.out, "unsure", spam_at) >= 1);

    const auto toe = sb.mailsift("--config /dev/null evaluate --index " + index +
                                 " --online --train-on-error --train-margin 0 --json");
    REQUIRE(toe.status == 0);
    // Train on error learns exactly the messages not classified right (unsure counts as wrong).
    const auto t_spam = toe.out.find("\"confusion\":{\"spam\":");
    const auto t_ham = toe.out.find("\"ham\":{", t_spam);
    const long wrong = json_int(toe.out, "unsure", t_spam) + json_int(toe.out, "ham", t_spam + 20) +
                       json_int(toe.out, "spam", t_ham) + json_int(toe.out, "unsure", t_ham);
    REQUIRE(json_int(toe.out, "trained") == wrong);
    REQUIRE(wrong < 10);
    REQUIRE(sb.mailsift("evaluate --index " + index + " --train-on-error").status == 2);  // only with --online
    // The deployed loop: its report, and its options only with it.
    const auto deployed = sb.mailsift("--config /dev/null evaluate --index " + index + " --deployed --batch 2 --json");
    REQUIRE(deployed.status == 0);
    REQUIRE(json_int(deployed.out, "messages") == 5);
    REQUIRE(json_int(deployed.out, "ham_in_junk", deployed.out.find("\"uncorrected\"")) >= 0);
    REQUIRE(sb.mailsift("evaluate --index " + index + " --one-sided").status == 2);
    REQUIRE(sb.mailsift("evaluate --index " + index + " --deployed --split every:3").status == 2);
    REQUIRE(sb.mailsift("evaluate --index " + index + " --deployed --batch 0").status == 2);

    // A thick threshold learns the errors and what scored within the margin: fewer than all,
    // and no fewer than the plain train-on-error run.
    const auto thick = sb.mailsift("--config /dev/null evaluate --index " + index + " --online --train-margin 2 --json");
    REQUIRE(thick.status == 0);
    REQUIRE(json_int(thick.out, "trained") >= 1);
    REQUIRE(json_int(thick.out, "trained") <= 10);
    REQUIRE(sb.mailsift("evaluate --index " + index + " --online --train-margin -1").status == 2);
}

TEST_CASE("evaluate --online scores each message as classify does after learn commands of one message each",
          "[cli]") {
    // Measured as it ships: the online protocol run by hand, one `classify` and
    // one `learn` per message in index order, gives the log-odds evaluate --online
    // reports (the same Trainer, the same combination of the scorers).
    Sandbox sb;
    const std::string corpus = std::string(MAILSIFT_TEST_DATA) + "/corpus";
    const auto conf = sb.dir / "small.conf";
    std::ofstream(conf) << "linear_rehearsal = 3\n";  // replays and refits happen within ten messages
    const std::string with = "--config " + conf.string() + " ";
    const auto scores = sb.dir / "online.scores";
    REQUIRE(sb.mailsift(with + "evaluate --index " + corpus + "/index --online --scores " + scores.string()).status == 0);
    std::vector<double> evaluated;
    {
        std::ifstream in(scores);
        for (std::string line; std::getline(in, line);) evaluated.push_back(std::stod(line.substr(line.rfind('\t') + 1)));
    }
    REQUIRE(evaluated.size() == 10);
    std::ifstream index(corpus + "/index");
    std::size_t i = 0;
    bool some_nonzero = false;
    for (std::string label, file; index >> label >> file; ++i) {
        INFO("message " << i << ": " << file);
        const std::string path = corpus + "/" + file;
        REQUIRE(i < evaluated.size());
        double log_odds = 0.0;  // no database yet: an empty model
        if (fs::exists(sb.db())) {
            const auto c = sb.mailsift(with + "classify " + path);
            REQUIRE(c.status == 0);
            log_odds = std::stod(c.out.substr(c.out.rfind('\t') + 1));
        }
        CHECK(log_odds == Approx(evaluated[i]).margin(1e-4));
        some_nonzero = some_nonzero || std::abs(log_odds) > 0.01;
        REQUIRE(sb.mailsift(with + "learn --" + label + " " + path).status == 0);
    }
    REQUIRE(i == 10);
    REQUIRE(some_nonzero);
}

TEST_CASE("model = linear is evaluated, learned into the store and scored from it", "[cli]") {
    Sandbox sb;
    const std::string index = std::string(MAILSIFT_TEST_DATA) + "/corpus/index";
    const auto conf = sb.dir / "linear.conf";
    std::ofstream(conf) << "model = linear\nlinear_rehearsal = 3\nlinear_epochs = 2\n";
    const std::string with = "--config " + conf.string() + " ";

    const auto online = sb.mailsift(with + "evaluate --index " + index + " --online --train-margin 0 --json");
    REQUIRE(online.status == 0);
    REQUIRE(json_int(online.out, "messages") == 10);
    REQUIRE(json_int(online.out, "trained") == 10);
    // The first message meets an empty model: z = 0, P = ½, unsure.
    REQUIRE(json_int(online.out, "unsure", online.out.find("\"confusion\":{\"spam\":")) >= 1);

    for (const char* order : {"", " --class-sorted"}) {
        const auto split = sb.mailsift(with + "evaluate --index " + index + " --split head:0.6 --json" + order);
        REQUIRE(split.status == 0);
        REQUIRE(json_int(split.out, "messages") == 4);
    }
    REQUIRE(!fs::exists(sb.db()));  // evaluation never touches the live database
    REQUIRE(sb.mailsift(with + "evaluate --index " + index + " --online --class-sorted").status == 2);
    REQUIRE(sb.mailsift("--config /dev/null evaluate --index " + index + " --folds 2 --class-sorted").status == 2);

    // Learned, the weights are in the store: classify scores with them, and so does mailsiftd.
    const std::string spam = data + "/spam_investment.eml";
    REQUIRE(sb.mailsift(with + "learn --index " + index).status == 0);
    auto log_odds = [&](const std::string& conf_args) {
        const auto r = sb.mailsift(conf_args + "classify " + spam);
        REQUIRE(r.status == 0);
        return std::stod(r.out.substr(r.out.rfind('\t') + 1));
    };
    const double linear = log_odds(with);
    std::ofstream(sb.dir / "nb.conf") << "model = naive_bayes\n";
    const double naive_bayes = log_odds("--config " + (sb.dir / "nb.conf").string() + " ");
    REQUIRE(linear != naive_bayes);  // another scorer over the same counts
    // Learning the same messages again moves nothing; learning one the other way moves it.
    REQUIRE(sb.mailsift(with + "learn --index " + index).out.find(", 10 already learned") != std::string::npos);
    REQUIRE(log_odds(with) == linear);
    REQUIRE(sb.mailsift(with + "learn --ham " + spam).status == 0);
    const double moved = log_odds(with);
    REQUIRE(moved < linear);
    REQUIRE(sb.mailsift(with + "learn --ham " + spam).status == 0);
    REQUIRE(log_odds(with) == moved);
    // explain lists every term of the linear score, and they add up to the log-odds classify prints.
    const auto explained = sb.mailsift(with + "explain " + spam);
    REQUIRE(explained.status == 0);
    const auto& e = explained.out;
    const auto section = e.find("linear scorer: log-odds = ");
    REQUIRE(section != std::string::npos);
    auto term = [&](const std::string& label) {  // "  +1.234567  LABEL..." in the linear section
        const auto at = e.find("  " + label, section);
        REQUIRE(at != std::string::npos);
        const auto line = e.rfind('\n', at);
        return std::stod(e.substr(line + 1, at - line - 1));
    };
    const double z = term("= log-odds");
    REQUIRE(z == Approx(moved).margin(1e-5));
    REQUIRE(term("bias") + term("naive Bayes: u") + term("weights of ") == Approx(z).margin(1e-5));
    // The slots: each listed one and the rest add up to the weights' part.
    double slots = 0.0;
    std::size_t listed = 0;
    std::istringstream lines(e.substr(e.find("slots toward spam:")));
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line.find("  weight  ") != std::string::npos || line.find("slots toward") == 0 ||
            line.find("(none)") != std::string::npos) {
            continue;
        }
        slots += std::stod(line);
        if (line.find("the other ") != std::string::npos) break;
        ++listed;
    }
    REQUIRE(listed > 0);
    REQUIRE(slots == Approx(term("weights of ")).margin(1e-4));
    REQUIRE(e.find("\"") != std::string::npos);  // 4-grams are printed in quotes
    const auto daemon_err = sb.dir / "mailsiftd.err";
    const int rc = std::system((std::string(MAILSIFTD) + " --check-config --config " + conf.string() + " --db " + sb.db() +
                                " >/dev/null 2>" + daemon_err.string())
                                   .c_str());
    REQUIRE(WIFEXITED(rc));
    REQUIRE(WEXITSTATUS(rc) == 0);

    std::ofstream(conf) << "model = perceptron\n";
    const auto bad = sb.mailsift(with + "evaluate --index " + index + " --online");
    REQUIRE(bad.status == 3);
    REQUIRE(bad.err.find("model") != std::string::npos);
}

TEST_CASE("evaluate --split head:F is chronological, and --scores writes one line per tested message", "[cli]") {
    Sandbox sb;
    const std::string index = std::string(MAILSIFT_TEST_DATA) + "/corpus/index";
    const auto scores = sb.dir / "scores.tsv";
    const auto r = sb.mailsift("--config /dev/null evaluate --index " + index + " --split head:0.6 --json --scores " +
                               scores.string());
    REQUIRE(r.status == 0);
    REQUIRE(json_int(r.out, "messages") == 4);  // the last 4 of 10
    REQUIRE(json_int(r.out, "trained") == 6);
    // The tested messages are the last four lines of the index, in its order.
    std::ifstream idx(index);
    std::vector<std::string> tail;
    for (std::string line; std::getline(idx, line);) tail.push_back(line);
    tail.erase(tail.begin(), tail.end() - 4);
    std::ifstream in(scores);
    std::size_t n = 0;
    for (std::string line; std::getline(in, line); ++n) {
        std::istringstream f(line);
        std::string path, label, verdict, p, lo;
        REQUIRE(std::getline(f, path, '\t'));
        REQUIRE(std::getline(f, label, '\t'));
        REQUIRE(std::getline(f, verdict, '\t'));
        REQUIRE(std::getline(f, p, '\t'));
        REQUIRE(std::getline(f, lo));
        REQUIRE(n < tail.size());
        const auto sp = tail[n].find(' ');
        REQUIRE(label == tail[n].substr(0, sp));
        REQUIRE(path.size() >= tail[n].size() - sp - 1);
        REQUIRE(path.substr(path.size() - (tail[n].size() - sp - 1)) == tail[n].substr(sp + 1));
        REQUIRE((verdict == "spam" || verdict == "ham" || verdict == "unsure"));
        REQUIRE(std::stod(p) >= 0.0);
        REQUIRE(std::stod(p) <= 1.0);
        (void)std::stod(lo);
    }
    REQUIRE(n == 4);
    // On a pipe (as here) no progress line is written.
    REQUIRE(r.err.find('\r') == std::string::npos);
    REQUIRE(sb.mailsift("evaluate --index " + index + " --split head:1").status == 2);
}

TEST_CASE("tune searches settings on held-out data and prints configuration lines", "[cli][long]") {
    Sandbox sb;
    const std::string index = std::string(MAILSIFT_TEST_DATA) + "/corpus/index";
    const auto a = sb.mailsift("--config /dev/null tune --index " + index + " --budget 60 --seed 7 --json");
    REQUIRE(a.status == 0);
    REQUIRE(a.out.find("{\"trials\":[{\"change\":\"start\"") == 0);
    REQUIRE(a.out.find("\"spam_log_odds = ") != std::string::npos);
    REQUIRE(a.out.find("\"ham_log_odds = ") != std::string::npos);
    REQUIRE(a.out.find("\"budget_spent\":false") != std::string::npos);  // a tiny corpus converges
    REQUIRE(a.out.find("\"expected_calibration_error\":") != std::string::npos);
    REQUIRE(a.err.find('\r') == std::string::npos);  // no progress lines on a pipe
    // Deterministic for a seed.
    REQUIRE(sb.mailsift("--config /dev/null tune --index " + index + " --budget 60 --seed 7 --json").out == a.out);
    REQUIRE_FALSE(fs::exists(sb.db()));
    // The printed lines are a configuration mailsift accepts.
    const auto text = sb.mailsift("--config /dev/null tune --index " + index + " --budget 60");
    const auto at = text.out.find("configuration lines:\n");
    REQUIRE(at != std::string::npos);
    std::ofstream(sb.dir / "tuned.conf") << text.out.substr(at + 21);
    REQUIRE(sb.mailsift("--config " + (sb.dir / "tuned.conf").string() + " evaluate --index " + index).status == 0);
    REQUIRE(sb.mailsift("tune --index " + index + " --budget 0").status == 2);
}

TEST_CASE("Bulk classify and learn on all cores keep input order and results", "[cli]") {
    // Many messages of very different sizes, so parallel workers finish out of order.
    Sandbox sb;
    sb.train();
    const fs::path many = sb.dir / "many";
    fs::create_directory(many);
    std::vector<std::string> names;
    for (int i = 0; i < 600; ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "m%04d.eml", i);
        std::ofstream out(many / name, std::ios::binary);
        out << "From: sender" << i << "@example.org\nSubject: message " << i << "\n\n";
        const int words = (i % 7 == 0) ? 20000 : 5 + i % 13;  // a few large ones among small ones
        for (int w = 0; w < words; ++w) out << ((w + i) % 3 == 0 ? "cheap offer " : "meeting notes ");
        out << "\n";
        names.push_back(name);
    }
    const auto bulk = sb.mailsift("classify " + many.string());
    REQUIRE(bulk.status == 0);
    std::istringstream in(bulk.out);
    std::string line;
    std::size_t i = 0;
    while (std::getline(in, line)) {
        REQUIRE(i < names.size());
        INFO(line);
        // Input order (sorted paths), and the same line as classifying the message alone.
        REQUIRE(line.rfind((many / names[i]).string() + "\t", 0) == 0);
        if (i % 50 == 0) REQUIRE(sb.mailsift("classify " + (many / names[i]).string()).out == line + "\n");
        ++i;
    }
    REQUIRE(i == names.size());

    // Learning them in bulk equals learning them one file at a time.
    Sandbox one;
    one.train();
    // Every message learned (no thick threshold: nearly all 600 would be "already known"),
    // into the counts alone: they are exact, the linear scorer's weights an online fit.
    std::ofstream(sb.dir / "all.conf") << "model = naive_bayes\ntrain_margin = 0\n";
    const std::string all = "--config " + (sb.dir / "all.conf").string() + " ";
    REQUIRE(sb.mailsift(all + "learn --spam " + many.string()).out == "learned 600 as spam, 0 moved from ham, 0 already learned\n");
    for (std::size_t k = 0; k < names.size(); k += 100) {
        std::string chunk = "learn --spam";
        for (std::size_t j = k; j < k + 100; ++j) {
            chunk += ' ';
            chunk += (many / names[j]).string();
        }
        REQUIRE(one.mailsift(all + chunk).status == 0);
    }
    // The exported models match but for the times things were learned (seconds apart).
    auto without_times = [](const std::string& model) {
        std::istringstream in(model);
        std::string line, out;
        while (std::getline(in, line)) {
            std::vector<std::string> f;
            std::istringstream fields(line);
            for (std::string x; std::getline(fields, x, '\t');) f.push_back(x);
            if (f.size() == 8 && f[0] == "feature") f[6].clear();
            if (f.size() == 5 && f[0] == "message") f[3].clear();
            if (f.size() == 4 && f[0] == "contact") f[3].clear();
            for (const auto& x : f) out += x + '|';
            out += '\n';
        }
        return out;
    };
    const std::string exported = without_times(sb.mailsift("export -").out);
    REQUIRE(exported.find("class|spam|603|") != std::string::npos);
    REQUIRE(exported == without_times(one.mailsift("export -").out));
}

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
