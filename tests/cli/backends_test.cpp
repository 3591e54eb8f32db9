// The real `mailsift` binary on both stores: every command, run the same way
// on an SQLite file and on a database of the private PostgreSQL that CTest
// starts (tests/support/postgres.sh), gives the same answers; and what a
// PostgreSQL store does differently (no file: pg_dump for backups; a server
// that is away) is a clear error with exit 3.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <cmath>
#include <sstream>
#include <tuple>
#include <string>
#include <thread>

#include "../support/backends.hpp"
#include "../support/paths.hpp"
#include "cli_support.hpp"

namespace fs = std::filesystem;
using namespace mailsift::cli_test;
using mailsift::testing::TestStore;

namespace {

Result run(const fs::path& dir, const std::string& args) {
    const auto out = dir / "stdout", err = dir / "stderr";
    const std::string cmd = "cd " + dir.string() + " && env -u MAILSIFT_DB -u MAILSIFT_CONFIG HOME=" + dir.string() + " " +
                            cli + " " + args + " >" + out.string() + " 2>" + err.string();
    const int rc = std::system(cmd.c_str());
    return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(out), slurp(err)};
}

// Times that depend on the second a command ran: an export's last_seen,
// learned_at and added_at fields, the ADDED column of contacts list.
std::string without_times(const std::string& s) {
    static const std::regex feature(R"(^(feature\t[0-9a-f]{16}(\t[0-9]+){4})\t-?[0-9]+\t)", std::regex::multiline);
    static const std::regex message(R"(^(message\t[0-9a-f]{32}\t(spam|ham))\t-?[0-9]+\t)", std::regex::multiline);
    static const std::regex contact(R"(^(contact\t[^\t]*\t[^\t]*)\t-?[0-9]+$)", std::regex::multiline);
    static const std::regex listed(R"(^([^\t\n]+\t[^\t\n]+)\t[0-9]{4}-[0-9]{2}-[0-9]{2}[^\n]*$)", std::regex::multiline);
    std::string out = std::regex_replace(s, feature, "$1\tT\t");
    out = std::regex_replace(out, message, "$1\tT\t");
    out = std::regex_replace(out, contact, "$1\tT");
    return std::regex_replace(out, listed, "$1\tT");
}

}  // namespace

TEST_CASE("Every command gives the same answers on SQLite and on PostgreSQL", "[cli][postgresql][long]") {
    TestStore lite("sqlite"), pg("postgresql");
    const fs::path dir = lite.dir().path;
    auto same = [&](const std::string& args, int status = 0) {
        INFO("mailsift " << args);
        const Result a = run(dir, "--db " + lite.location() + " " + args);
        const Result b = run(dir, "--db '" + pg.location() + "' " + args);
        INFO("sqlite: " << a.status << "\n" << a.out << a.err << "\npostgresql: " << b.status << "\n" << b.out << b.err);
        REQUIRE(a.status == status);
        REQUIRE(b.status == status);
        REQUIRE(without_times(a.out) == without_times(b.out));
        return a;
    };
    REQUIRE(same("learn --spam " + data + "/spam_money_offer.eml " + data + "/spam_cheap_pills.eml").status == 0);
    same("learn --ham " + data + "/ham_meeting_notes.eml " + data + "/ham_patch_review.eml " + data + "/mbox_two_messages.mbox");
    same("learn --spam " + data + "/spam_money_offer.eml");  // already learned
    const std::string scores = same("classify " + data).out;
    REQUIRE(std::count(scores.begin(), scores.end(), '\n') == 9);  // 8 files, one an mbox of two
    // Two spam and four ham learned: a learned spam is called spam, an unseen one is not called ham.
    REQUIRE(scores.find("spam_cheap_pills.eml\tspam\t") != std::string::npos);
    REQUIRE(scores.find("spam_investment.eml\tham\t") == std::string::npos);
    same("classify --json " + data + "/spam_investment.eml");
    same("explain " + data + "/ham_build_report.eml");
    same("tokens " + data + "/spam_investment.eml");
    same("top");
    same("contacts add carol@example.org dave@example.org");
    same("contacts remove dave@example.org");
    const std::string list = (dir / "contacts.txt").string();
    std::ofstream(list) << "# friends\nerin@example.org\nnot an address\n";
    same("contacts import " + list, 1);  // the line that is not an address
    REQUIRE(same("contacts list").out.find("carol@example.org\tmanual") != std::string::npos);
    same("unlearn --spam " + data + "/spam_cheap_pills.eml");
    same("unlearn --spam " + data + "/spam_cheap_pills.eml");  // not learned
    same("correct --spam " + data + "/ham_patch_review.eml");  // moved
    same("correct --ham " + data + "/ham_build_report.eml");   // learned as it is
    same("learn --ham " + data + "/truncated_multipart.eml");
    // Prune cuts at the second it runs: a second later, what both learned lies before it on both.
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    same("prune --features-unseen-days 0");
    same("classify " + data);

    // The text lines of stats that are about the model, not the store.
    auto model_lines = [](const std::string& stats) {
        std::string out;
        std::istringstream in(stats);
        for (std::string line; std::getline(in, line);) {
            if (line.rfind("database", 0) == 0 || line.rfind("file size", 0) == 0 || line.rfind("schema", 0) == 0) continue;
            out += line + "\n";
        }
        return out;
    };
    const Result sa = run(dir, "--db " + lite.location() + " stats");
    const Result sp = run(dir, "--db '" + pg.location() + "' stats");
    REQUIRE(sa.status == 0);
    REQUIRE(sp.status == 0);
    REQUIRE(model_lines(sa.out) == model_lines(sp.out));
    REQUIRE(sp.out.find("database:          " + pg.location() + " (from --db)") != std::string::npos);

    // Both stores export the same model, and an export moves between them exactly.
    const std::string from_lite = (dir / "lite.txt").string(), from_pg = (dir / "pg.txt").string();
    REQUIRE(run(dir, "--db " + lite.location() + " export " + from_lite).status == 0);
    REQUIRE(run(dir, "--db '" + pg.location() + "' export " + from_pg).status == 0);
    REQUIRE(without_times(slurp(from_lite)) == without_times(slurp(from_pg)));
    TestStore pg2("postgresql");
    REQUIRE(run(dir, "--db '" + pg2.location() + "' import " + from_lite).status == 0);
    const std::string round = (dir / "round.txt").string();
    REQUIRE(run(dir, "--db '" + pg2.location() + "' export " + round).status == 0);
    REQUIRE(slurp(round) == slurp(from_lite));  // byte for byte, times included
    const Result again = run(dir, "--db '" + pg2.location() + "' import " + from_lite);
    REQUIRE(again.status == 3);
    REQUIRE(again.err.find("already holds a model") != std::string::npos);
    const fs::path back = dir / "back.db";
    REQUIRE(run(dir, "--db " + back.string() + " import " + from_pg).status == 0);
    REQUIRE(run(dir, "--db " + back.string() + " export -").out == slurp(from_pg));
}

TEST_CASE("A PostgreSQL store's own errors are clear and exit 3", "[cli][postgresql]") {
    TestStore pg("postgresql");
    const fs::path dir = pg.dir().path;
    REQUIRE(run(dir, "--db '" + pg.location() + "' learn --spam " + data + "/spam_money_offer.eml").status == 0);

    SECTION("backup points to pg_dump") {
        const Result r = run(dir, "--db '" + pg.location() + "' backup " + (dir / "copy.db").string());
        REQUIRE(r.status == 3);
        REQUIRE(r.err.find("pg_dump") != std::string::npos);
        REQUIRE_FALSE(fs::exists(dir / "copy.db"));
    }
    SECTION("a database that does not exist") {
        const std::string missing = pg.location() + "_none";
        const Result r = run(dir, "--db '" + missing + "' stats");
        REQUIRE(r.status == 3);
        REQUIRE(r.err.find("cannot connect") != std::string::npos);
        REQUIRE(r.err.find("_none") != std::string::npos);
    }
    SECTION("a database without mailsift's schema is not created by readers") {
        mailsift::testing::postgres_admin("CREATE DATABASE " + pg.location().substr(pg.location().rfind('/') + 1) + "_empty");
        const std::string empty = pg.location() + "_empty";
        const Result r = run(dir, "--db '" + empty + "' classify " + data + "/spam_money_offer.eml");
        mailsift::testing::postgres_admin("DROP DATABASE " + pg.location().substr(pg.location().rfind('/') + 1) + "_empty");
        REQUIRE(r.status == 3);
        REQUIRE(r.err.find("no mailsift database here") != std::string::npos);
    }
    SECTION("a server that is not there, and a password that is never printed") {
        // A port nothing listens on: the private server's, plus one, is not promised free; bind one and close it.
        const std::string uri = "postgresql://mailsift:s3cret@127.0.0.1:1/none";
        const Result r = run(dir, "--db '" + uri + "' learn --ham " + data + "/ham_meeting_notes.eml");
        REQUIRE(r.status == 3);
        REQUIRE(r.err.find("cannot connect") != std::string::npos);
        REQUIRE(r.err.find("s3cret") == std::string::npos);
        REQUIRE(r.err.find("mailsift:***@127.0.0.1:1/none") != std::string::npos);
    }
    SECTION("a schema newer than this mailsift is refused, never changed") {
        pg.exec("UPDATE mailsift_schema SET version = 99");
        for (const char* cmd : {"stats", "learn --ham ", "classify "}) {
            const std::string args = std::string(cmd) + (std::string(cmd) == "stats" ? "" : data + "/ham_meeting_notes.eml");
            const Result r = run(dir, "--db '" + pg.location() + "' " + args);
            INFO(cmd << ": " << r.err);
            REQUIRE(r.status == 3);
            REQUIRE(r.err.find("database schema version 99 is newer than this mailsift supports") != std::string::npos);
        }
        REQUIRE(pg.value("SELECT version FROM mailsift_schema") == 99);
        REQUIRE(pg.value("SELECT messages FROM classes WHERE class = 1") == 1);
    }
    SECTION("tables that are not mailsift's are left alone") {
        const std::string other = pg.location().substr(pg.location().rfind('/') + 1) + "_other";
        mailsift::testing::postgres_admin("CREATE DATABASE " + other);
        const std::string uri = pg.location() + "_other";
        TestStore* none = nullptr;
        (void)none;
        {
            const std::string create = "psql '" + uri + "' -qc 'CREATE TABLE accounts (id int)' >/dev/null 2>&1";
            REQUIRE(std::system(create.c_str()) == 0);
        }
        const Result r = run(dir, "--db '" + uri + "' learn --ham " + data + "/ham_meeting_notes.eml");
        mailsift::testing::postgres_admin("DROP DATABASE " + other + " WITH (FORCE)");
        REQUIRE(r.status == 3);
        REQUIRE(r.err.find("not a mailsift database") != std::string::npos);
    }
}

namespace {

// `n` small messages, each from its own sender (so that no message is scored
// with the sender of another as a contact), words drawn from one vocabulary
// so that the parts share most features; every third is spam.
void write_corpus(const fs::path& dir, int n) {
    fs::create_directories(dir);
    const char* const words[] = {"meeting", "offer", "free", "invoice", "patch", "review", "cheap", "pills",
                                 "money",   "agenda", "notes", "winner", "click", "release", "build", "report"};
    unsigned seed = 12345;
    auto next = [&] { return seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7FFF; };
    for (int i = 0; i < n; ++i) {
        std::ofstream m(dir / ("m" + std::to_string(i) + ".eml"));
        m << "From: Sender " << i << " <sender" << i << "@host" << i << ".example>\n"
          << "To: me@example.net\nSubject: " << words[next() % 16] << " " << words[next() % 16] << "\n\n";
        for (int w = 0; w < 40; ++w) m << words[next() % 16] << (w % 10 == 9 ? "\n" : " ");
        m << "unique" << i << "\n";
    }
}

// Splits an index of `n` corpus messages (every third spam) into `dir`/corpus/index and
// four interleaved parts, part0..part3 (the parts touch the same features all the time).
void write_parts(const fs::path& dir, int n) {
    std::ofstream whole(dir / "corpus" / "index");
    std::ofstream part[4];
    for (int p = 0; p < 4; ++p) part[p].open(dir / "corpus" / ("part" + std::to_string(p)));
    for (int i = 0; i < n; ++i) {
        const std::string line = std::string(i % 3 == 0 ? "spam" : "ham") + " m" + std::to_string(i) + ".eml\n";
        whole << line;
        part[i % 4] << line;
    }
}

// Runs four `mailsift learn --index corpus/partN` at once on `location`, and requires each to succeed.
void learn_parts_at_once(const fs::path& dir, const std::string& location, const std::string& conf) {
    std::string parallel = "cd " + dir.string() + " && env -u MAILSIFT_DB HOME=" + dir.string() + " sh -c '";
    for (int p = 0; p < 4; ++p) {
        parallel += "(" + cli + " --db \"" + location + "\" " + conf + " learn --index corpus/part" +
                    std::to_string(p) + " >out" + std::to_string(p) + " 2>&1; echo $? >rc" + std::to_string(p) + ") & ";
    }
    parallel += "wait'";
    REQUIRE(std::system(parallel.c_str()) == 0);
    for (int p = 0; p < 4; ++p) {
        INFO("learner " << p << ": " << slurp(dir / ("out" + std::to_string(p))));
        REQUIRE(slurp(dir / ("rc" + std::to_string(p))) == "0\n");
    }
}

}  // namespace

TEST_CASE("Four processes learning parts of a corpus at once end with the model of one learning it all",
          "[cli][postgresql]") {
    FOR_EACH_BACKEND(store_);
    const fs::path dir = store_.dir().path;
    write_corpus(dir / "corpus", 400);
    // train_margin = 0: every message is learned, whatever the model knew when it came
    // (with a margin, what is learned depends on the order, on any store).
    std::ofstream(dir / "all.conf") << "model = naive_bayes\ntrain_margin = 0\nbatch_messages = 25\n";
    write_parts(dir, 400);
    const std::string conf = "--config " + (dir / "all.conf").string();
    learn_parts_at_once(dir, store_.location(), conf);

    TestStore one(store_.kind());
    REQUIRE(run(dir, "--db '" + one.location() + "' " + conf + " learn --index corpus/index").status == 0);
    const Result four = run(dir, "--db '" + store_.location() + "' export -");
    const Result all = run(dir, "--db '" + one.location() + "' export -");
    REQUIRE(four.status == 0);
    REQUIRE(all.status == 0);
    REQUIRE(all.out.find("class\tspam\t134\t") != std::string::npos);
    REQUIRE(all.out.find("end\t") != std::string::npos);
    // Class totals, every feature's counts, every message with its features, the contacts.
    REQUIRE(without_times(four.out) == without_times(all.out));
}

TEST_CASE("Two processes learning the same messages at once, in opposite orders, learn each once", "[cli][postgresql]") {
    FOR_EACH_BACKEND(store_);
    const fs::path dir = store_.dir().path;
    write_corpus(dir / "corpus", 200);
    std::ofstream(dir / "all.conf") << "model = naive_bayes\ntrain_margin = 0\nbatch_messages = 20\n";
    std::ofstream forward(dir / "corpus" / "forward"), backward(dir / "corpus" / "backward");
    for (int i = 0; i < 200; ++i) {
        forward << (i % 3 == 0 ? "spam" : "ham") << " m" << i << ".eml\n";
        const int j = 199 - i;
        backward << (j % 3 == 0 ? "spam" : "ham") << " m" << j << ".eml\n";
    }
    forward.close();
    backward.close();
    // Both write the same message rows in opposite orders: on PostgreSQL they wait
    // for each other, deadlock or find a row the other just committed, and retry.
    const std::string conf = "--config " + (dir / "all.conf").string();
    std::string parallel = "cd " + dir.string() + " && env -u MAILSIFT_DB HOME=" + dir.string() + " sh -c '";
    for (const char* part : {"forward", "backward"}) {
        parallel += std::string("(") + cli + " --db \"" + store_.location() + "\" " + conf + " learn --index corpus/" +
                    part + " >out-" + part + " 2>&1; echo $? >rc-" + part + ") & ";
    }
    parallel += "wait'";
    REQUIRE(std::system(parallel.c_str()) == 0);
    for (const char* part : {"forward", "backward"}) {
        INFO(part << ": " << slurp(dir / (std::string("out-") + part)));
        REQUIRE(slurp(dir / (std::string("rc-") + part)) == "0\n");
    }
    TestStore one(store_.kind());
    REQUIRE(run(dir, "--db '" + one.location() + "' " + conf + " learn --index corpus/forward").status == 0);
    const Result two = run(dir, "--db '" + store_.location() + "' export -");
    const Result all = run(dir, "--db '" + one.location() + "' export -");
    REQUIRE(all.out.find("class\tspam\t67\t") != std::string::npos);
    REQUIRE(without_times(two.out) == without_times(all.out));
}

TEST_CASE("Four processes learning with model = linear at once keep exact counts and add up their weights",
          "[cli][postgresql][long]") {
    FOR_EACH_BACKEND(store_);
    const fs::path dir = store_.dir().path;
    write_corpus(dir / "corpus", 240);
    std::ofstream(dir / "linear.conf") << "model = linear\ntrain_margin = 0\nlinear_rehearsal = 30\nbatch_messages = 20\n";
    write_parts(dir, 240);
    const std::string conf = "--config " + (dir / "linear.conf").string();
    learn_parts_at_once(dir, store_.location(), conf);
    TestStore one(store_.kind());
    REQUIRE(run(dir, "--db '" + one.location() + "' " + conf + " learn --index corpus/index").status == 0);
    const Result four = run(dir, "--db '" + store_.location() + "' export -");
    const Result all = run(dir, "--db '" + one.location() + "' export -");
    REQUIRE(four.status == 0);
    REQUIRE(all.status == 0);
    // The counts are exact whatever the order; the weights are an online fit of
    // another order, so they are compared for what must hold: each learner's
    // messages offered to the samples once, and steps that moved the bias.
    auto counts = [](const std::string& e) { return without_times(e.substr(0, e.find("\nlinear\t"))); };
    REQUIRE(counts(four.out) == counts(all.out));
    auto linear_line = [](const std::string& e) {
        const auto at = e.find("\nlinear\t");
        REQUIRE(at != std::string::npos);
        std::istringstream f(e.substr(at + 1, e.find('\n', at + 1) - at - 1));
        std::string kind, bits, bias, u, seen_spam, seen_ham;
        f >> kind >> bits >> bias >> u >> seen_spam >> seen_ham;
        return std::tuple{std::stoi(bits), std::stod(bias), std::stoull(seen_spam) + std::stoull(seen_ham)};
    };
    const auto [bits4, bias4, seen4] = linear_line(four.out);
    const auto [bits1, bias1, seen1] = linear_line(all.out);
    REQUIRE(bits4 == 18);
    REQUIRE(seen1 == 240);
    REQUIRE(seen4 == 240);
    REQUIRE(bias4 != 0.0);
    REQUIRE(std::isfinite(bias4));
    // Every learner's work is in the store, each message once: learning it all again learns nothing.
    const Result again = run(dir, "--db '" + store_.location() + "' " + conf + " learn --index corpus/index");
    REQUIRE(again.out.find(", 240 already learned") != std::string::npos);
    REQUIRE(run(dir, "--db '" + store_.location() + "' export -").out == four.out);
}

TEST_CASE("With model = linear, learn, classify, explain, correct and export agree on SQLite and on PostgreSQL",
          "[cli][postgresql]") {
    TestStore lite("sqlite"), pg("postgresql");
    const fs::path dir = lite.dir().path;
    write_corpus(dir / "corpus", 150);
    {
        std::ofstream spam(dir / "corpus" / "spam.list"), ham(dir / "corpus" / "ham.list");
        for (int i = 0; i < 150; ++i) (i % 3 == 0 ? spam : ham) << (dir / "corpus" / ("m" + std::to_string(i) + ".eml")).string() << "\n";
    }
    std::ofstream(dir / "linear.conf") << "model = linear\nlinear_rehearsal = 40\n";
    const std::string conf = "--config " + (dir / "linear.conf").string() + " ";
    auto same = [&](const std::string& args, int status = 0) {
        INFO("mailsift " << args);
        const Result a = run(dir, conf + "--db " + lite.location() + " " + args);
        const Result b = run(dir, conf + "--db '" + pg.location() + "' " + args);
        INFO("sqlite: " << a.status << "\n" << a.out << a.err << "\npostgresql: " << b.status << "\n" << b.out << b.err);
        REQUIRE(a.status == status);
        REQUIRE(b.status == status);
        REQUIRE(without_times(a.out) == without_times(b.out));
        return a;
    };
    // The README's recipe: a Junk folder, then an inbox (the second refits: 100 messages).
    same("learn --spam --files-from " + (dir / "corpus" / "spam.list").string());
    same("learn --ham --files-from " + (dir / "corpus" / "ham.list").string());
    same("classify " + data);
    const std::string explained = same("explain " + data + "/spam_investment.eml").out;
    REQUIRE(explained.find("linear scorer: log-odds = ") != std::string::npos);
    same("correct --spam " + data + "/ham_patch_review.eml");
    same("unlearn --spam " + data + "/ham_patch_review.eml");
    same("classify " + data);
    const std::string exported = same("export -").out;
    // Version 4 (a refit's own change is kept): the settings kept with the
    // model lead, identical on both stores, and so is the last refit's change.
    REQUIRE(exported.rfind("mailsift-model\t4\nsetting\tfeatures.", 0) == 0);
    REQUIRE(exported.find("\nlinear-refit\t18\t") != std::string::npos);
    REQUIRE(exported.find("\nsetting\tlinear_step\t4\n") != std::string::npos);
    REQUIRE(exported.find("\nlinear-sample\tham\t39\t") != std::string::npos);  // the ham sample is full
}
