// End-to-end tests of the real `mailsift` binary: learn --index, evaluate (split, online, deployed
// models), tune and bulk runs, on real SQLite files.
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
