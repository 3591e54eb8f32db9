// End-to-end tests of the real `mailsift` binary on real SQLite files.
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

const std::string cli = MAILSIFT_CLI;
const std::string data = std::string(MAILSIFT_TEST_DATA) + "/messages";

struct Result {
    int status = -1;
    std::string out;
    std::string err;
};

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

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
    for (const char* c : {"learn", "unlearn", "classify", "explain", "tokens", "stats", "contacts"}) {
        const auto r = sb.run(std::string(c) + " --help");
        INFO(c);
        REQUIRE(r.status == 0);
        REQUIRE(r.out.find(std::string("usage: mailsift ") + c) != std::string::npos);
    }
    const auto r = sb.run("--help");
    REQUIRE(r.status == 0);
    REQUIRE(r.out.find("exit status") != std::string::npos);
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

TEST_CASE("Learn then classify prints one tab-separated verdict per message", "[cli]") {
    Sandbox sb;
    sb.train();
    const auto r = sb.mailsift("classify " + data);
    // The directory also holds a truncated message: scored, reported, exit 1.
    REQUIRE(r.status == 1);
    REQUIRE(r.err.find("truncated_multipart.eml: truncated MIME") != std::string::npos);
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
        check("junk", sb.dir / "junk.bin", "not an RFC 822 message");
    }
    SECTION("truncated MIME") { check("truncated", fs::path(data) / "truncated_multipart.eml", "truncated MIME"); }
    SECTION("a 50 MB message") {
        std::ofstream f(sb.dir / "huge.eml", std::ios::binary);
        f << "From: big@example.org\nSubject: huge\n\n";
        const std::string line(1000, 'a');
        for (int i = 0; i < 50 * 1024; ++i) f << line << '\n';
        f.close();
        check("huge", sb.dir / "huge.eml", "larger than");
        const auto r = sb.mailsift("classify " + (sb.dir / "huge.eml").string());
        REQUIRE(r.status == 1);
        REQUIRE(lines(r.out) == 1);  // still scored, on a prefix
        REQUIRE(r.err.find("scored on the first") != std::string::npos);
    }
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
