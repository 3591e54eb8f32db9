// End-to-end tests of the real `mailsift` binary's administration commands (top, prune, export,
// import, backup, contacts import) on real SQLite files.
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

const std::string contacts_data = std::string(MAILSIFT_TEST_DATA) + "/contacts";

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
