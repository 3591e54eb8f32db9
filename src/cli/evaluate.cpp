// evaluate and tune: accuracy on a labelled corpus and a search for settings,
// both in temporary databases (the live one is never touched).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "mailsift/evaluation/metrics.hpp"
#include "mailsift/evaluation/plots.hpp"
#include "mailsift/evaluation/runner.hpp"
#include "mailsift/evaluation/tuner.hpp"
#include "message_source.hpp"

namespace mailsift::cli {
namespace {

const char* const evaluate_help = R"(usage: mailsift evaluate (--spam PATH... --ham PATH... | --index FILE)
                         [--split every:N | --split fraction:F | --split head:F |
                          --folds K | --online [--train-on-error] |
                          --deployed [--split head:F] [--batch N] [--one-sided]]
                         [--class-sorted] [--train-margin LOG_ODDS] [--json]
                         [--plot DIR]
                         [--scores FILE]

Measure accuracy on a labelled corpus, in a temporary database (the live one
is never touched), with the current settings. --spam and --ham take message
files or folders (repeatable); --index FILE takes TREC lines "spam|ham PATH",
paths relative to FILE. Messages are taken in sorted path order (index order
with --index). --split every:N (default every:5) tests every Nth message and
trains on the rest; --split fraction:F tests a deterministic F of them;
--split head:F is chronological: the first F (in corpus order) trains, the
rest is tested; --folds K cross-validates; --online follows the TREC protocol: messages in
order, each classified and then learned with its label (with
--train-on-error only when it was not classified right). Training is the
configured regime (train_margin, as mailsift learn does it) in every mode;
--train-margin overrides it (0 learns every message). A split or fold trains
as one learn command; with --class-sorted as two, all training spam and then
all training ham, as learn --spam then learn --ham would. Splits and folds
train in a temporary database as learn does (and refit the linear scorer as
each command ends); --online does too, each message a learn command of its
own (judged by train_margin against the model just before it), and scores
each message as classify would after the messages before it were learned.
--deployed measures the loop users run: the first half (--split head:F: the
first F) learned class by class, as the README teaches, then the rest scored
as mailsiftd scores it, N at a time (--batch, default 100), every scan
recorded; after each N, every spam left in the inbox (scored ham or unsure)
is corrected to spam and every ham in Junk to ham, as 'mailsift correct' of
the delivered copy does, one command a move (--one-sided: users never look
in Junk, only spam in the inbox is corrected). It reports the users' moves,
and ham in Junk, spam in the inbox and unsure of the same model never
corrected, on the same messages. Reports n, AUC, 1-ROCA%, false positive and
negative rates at the configured thresholds, unsure share, FNR at FPR <= 0.1%
and <= 1%, lam%, a confusion table, a reliability table (predicted P(spam) vs
observed spam share) with its expected calibration error and worst bin of at
least 30 messages, and throughput; --json prints it as one JSON object.
--plot DIR writes roc.svg (log-scale false-positive rate), histogram.svg
(log-odds by class) and reliability.svg there. --scores FILE writes one line
per tested message, in the order tested: PATH, label, verdict, P(spam) and
log-odds, tab-separated. Progress is shown on a terminal only.
)";

const char* const tune_help = R"(usage: mailsift tune (--spam PATH... --ham PATH... | --index FILE)
                     [--budget SECONDS] [--seed N] [--json]

Search the model's settings (alpha, term frequency, length normalisation of
content and headers, feature switches, token lengths) on training data only: every 5th message is held out, the rest
trained, in temporary databases. Coordinate search from the current
settings, in an order shuffled by --seed (default 1), until a round changes
nothing or --budget seconds (default 300) are spent; deterministic for a seed.
Then picks log-odds thresholds on the held-out scores (at most 0.1% of ham
above the spam threshold, at most 0.5% of spam below the ham threshold) and
prints every trial, the best held-out metrics (calibration too) and the configuration lines to
use. Give it training data only, and judge the result with 'evaluate' on
data it never saw.
)";

// The labelled corpus of evaluate and tune: --spam PATH... --ham PATH... or --index FILE.
struct CorpusOptions {
    std::vector<std::string> spam, ham, index;

    void add_to(CLI::App* sub) {
        sub->add_option("--spam", spam);
        sub->add_option("--ham", ham);
        sub->add_option("--index", index)->allow_extra_args(false);
    }

    std::vector<evaluation::LabelledMessage> corpus(const std::string& command) const {
        std::vector<evaluation::LabelledMessage> out;
        auto add_path = [&](const std::string& path, bool is_spam) {
            try {
                for (auto& f : list_message_files(path)) out.push_back({std::move(f), is_spam});
            } catch (const std::exception& e) {
                std::cerr << "mailsift: " << e.what() << "\n";
                std::exit(exit_input);
            }
        };
        for (const auto& p : spam) add_path(p, true);
        for (const auto& p : ham) add_path(p, false);
        for (const auto& file : index) {
            for (auto& e : read_index(file)) out.push_back({std::move(e.path), e.spam});
        }
        if (index.empty()) {
            // The development split's order: all paths sorted.
            std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.path < y.path; });
        }
        std::size_t n_spam = 0;
        for (const auto& m : out) n_spam += m.spam ? 1 : 0;
        if (n_spam == 0 || n_spam == out.size()) usage_error(command + ": needs both spam and ham messages");
        return out;
    }
};

// A temporary directory removed with everything in it when this goes out of scope.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        char tmpl[] = "/tmp/mailsift-evaluate-XXXXXX";
        const char* dir = ::mkdtemp(tmpl);
        if (dir == nullptr) throw store::Error("/tmp", std::string("cannot create a temporary directory: ") + std::strerror(errno));
        path = dir;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

// The calibration summary under a reliability table: ECE over the 10 bins and
// the worst bin holding enough messages to mean something.
void print_calibration(const evaluation::Report& r) {
    std::printf("calibration       ECE %.4f", r.expected_calibration_error);
    if (r.worst_bin) {
        const auto& b = r.reliability[*r.worst_bin];
        std::printf(", worst bin of >= %zu messages %.1f-%.1f off by %.4f (%zu messages)\n",
                    evaluation::Report::min_messages_for_worst_bin, b.low, b.high, r.worst_bin_gap, b.messages);
    } else {
        std::printf(", no bin holds %zu messages\n", evaluation::Report::min_messages_for_worst_bin);
    }
}

struct EvaluateOptions {
    CorpusOptions corpus;
    std::string split, folds, plot, train_margin, scores;
    CLI::Option *split_given = nullptr, *folds_given = nullptr, *plot_given = nullptr, *margin_given = nullptr,
                *scores_given = nullptr;
    bool online = false, train_on_error = false, class_sorted = false, json = false;
    bool deployed = false, one_sided = false;
    std::string batch;
    CLI::Option* batch_given = nullptr;
};

bool given(const CLI::Option* o) { return o != nullptr && o->count() > 0; }

evaluation::Plan plan_of(const EvaluateOptions& o) {
    evaluation::Plan plan;
    if (given(o.split_given)) {
        const std::string& v = o.split;
        try {
            if (v.rfind("every:", 0) == 0) {
                plan.mode = evaluation::Plan::Mode::split_every;
                plan.every = std::stoul(v.substr(6));
                if (plan.every < 2) throw std::out_of_range("every");
            } else if (v.rfind("fraction:", 0) == 0 || v.rfind("head:", 0) == 0) {
                const bool head = v[0] == 'h';
                plan.mode = head ? evaluation::Plan::Mode::split_head : evaluation::Plan::Mode::split_fraction;
                plan.fraction = std::stod(v.substr(head ? 5 : 9));
                if (!(plan.fraction > 0 && plan.fraction < 1)) throw std::out_of_range("fraction");
            } else {
                throw std::invalid_argument("split");
            }
        } catch (const std::exception&) {
            usage_error("evaluate: --split takes every:N (N >= 2), fraction:F or head:F (0 < F < 1)");
        }
    }
    if (given(o.folds_given)) {
        try {
            plan.mode = evaluation::Plan::Mode::folds;
            plan.folds = std::stoul(o.folds);
        } catch (const std::exception&) {
            plan.folds = 0;
        }
        if (plan.folds < 2) usage_error("evaluate: --folds takes a number of folds, at least 2");
    }
    if (o.online) plan.mode = evaluation::Plan::Mode::online;
    if (o.deployed) {
        if (o.online || given(o.folds_given)) usage_error("evaluate: --deployed takes no --online or --folds");
        if (given(o.split_given) && plan.mode != evaluation::Plan::Mode::split_head) {
            usage_error("evaluate: --deployed takes --split head:F (what is learned first), no other split");
        }
        if (!given(o.split_given)) plan.fraction = 0.5;
        plan.mode = evaluation::Plan::Mode::deployed;
        if (given(o.batch_given)) {
            try {
                plan.batch = std::stoul(o.batch);
            } catch (const std::exception&) {
                plan.batch = 0;
            }
            if (plan.batch < 1) usage_error("evaluate: --batch takes a number of messages, at least 1");
        }
        plan.one_sided = o.one_sided;
    } else if (given(o.batch_given) || o.one_sided) {
        usage_error("evaluate: --batch and --one-sided go with --deployed");
    }
    plan.class_sorted = o.class_sorted;
    plan.train_on_error = o.train_on_error;
    if (plan.class_sorted && (plan.mode == evaluation::Plan::Mode::online || plan.mode == evaluation::Plan::Mode::folds ||
                              plan.mode == evaluation::Plan::Mode::deployed)) {
        usage_error("evaluate: --class-sorted goes with --split");
    }
    if (plan.train_on_error && plan.mode != evaluation::Plan::Mode::online) {
        usage_error("evaluate: --train-on-error goes with --online");
    }
    return plan;
}

Json bin_json(const evaluation::ReliabilityBin& b) {
    return Json{{"low", json_number(b.low)}, {"high", json_number(b.high)}, {"messages", b.messages}};
}

// --deployed: what the users did, and the same model never corrected.
Json deployed_json(const evaluation::Run& run) {
    if (!run.deployed) return nullptr;
    const auto& d = *run.deployed;
    const auto u = evaluation::evaluate(d.uncorrected);
    return Json{{"moved_to_junk", d.moved_to_junk},
                {"moved_from_junk", d.moved_from_junk},
                {"uncorrected",
                 {{"ham_in_junk", u.confusion.ham_as_spam},
                  {"spam_in_inbox", u.confusion.spam_as_ham + u.confusion.spam_as_unsure},
                  {"unsure_percent", json_number(u.unsure_percent)},
                  {"one_minus_roca_percent", json_number(u.one_minus_roca_percent, 6)},
                  {"fnr_at_fpr_0.1_percent", json_number(u.fnr_at_fpr_01_percent)},
                  {"expected_calibration_error", json_number(u.expected_calibration_error, 6)}}}};
}

void print_deployed(const evaluation::Run& run) {
    if (!run.deployed) return;
    const auto& d = *run.deployed;
    const auto u = evaluation::evaluate(d.uncorrected);
    std::printf("\nusers' moves      %zu to Junk (spam left in the inbox), %zu out of Junk (ham)\n", d.moved_to_junk,
                d.moved_from_junk);
    std::printf("never corrected   ham in Junk %zu, spam in the inbox %zu, unsure %.3f%%, 1-ROCA%% %.4f, "
                "FNR at FPR<=0.1%% %.3f%%, ECE %.4f\n",
                u.confusion.ham_as_spam, u.confusion.spam_as_ham + u.confusion.spam_as_unsure, u.unsure_percent,
                u.one_minus_roca_percent, u.fnr_at_fpr_01_percent, u.expected_calibration_error);
}

int run_evaluate(const Context& ctx, const EvaluateOptions& o) {
    const auto corpus = o.corpus.corpus("evaluate");
    const evaluation::Plan plan = plan_of(o);
    const bool json = o.json;
    std::optional<std::filesystem::path> plot_dir, scores_file;
    if (given(o.plot_given)) plot_dir = o.plot;
    if (given(o.scores_given)) scores_file = o.scores;
    std::optional<double> train_margin;
    if (given(o.margin_given)) {
        try {
            train_margin = std::stod(o.train_margin);
        } catch (const std::exception&) {
            train_margin = -1;
        }
        if (!(*train_margin >= 0)) usage_error("evaluate: --train-margin takes log-odds >= 0");
    }
    const TempDir dir;

    const auto max_bytes = ctx.settings.limits.max_message_bytes;
    const auto started = std::chrono::steady_clock::now();
    // Progress only on a terminal: a pipe or a log gets no carriage-return lines.
    const bool terminal = ::isatty(STDERR_FILENO) != 0;
    bool progress_shown = false;
    engine::Settings settings = ctx.settings;
    if (train_margin) settings.train_margin = *train_margin;
    const auto run = evaluation::run(
        corpus, plan, settings, dir.path,
        [&](const std::string& path) { return read_message_file(path, max_bytes); },
        [&](std::size_t done, std::size_t total) {
            if (terminal && std::chrono::steady_clock::now() - started > std::chrono::seconds(3)) {
                std::cerr << "evaluate: " << done << "/" << total << "\r" << std::flush;
                progress_shown = true;
            }
        });
    if (progress_shown) std::cerr << "\n";
    if (scores_file) {
        // One line per scored message, in the order scored: PATH LABEL VERDICT P(spam) LOG_ODDS.
        std::ofstream out(*scores_file, std::ios::binary);
        for (std::size_t i = 0; i < run.scored.size(); ++i) {
            const auto& s = run.scored[i];
            out << run.scored_paths[i] << '\t' << (s.spam ? "spam" : "ham") << '\t' << model::to_string(s.verdict)
                << '\t' << number(s.probability, 10) << '\t' << number(s.log_odds, 10) << '\n';
        }
        if (!out) {
            std::cerr << "mailsift: " << scores_file->string() << ": cannot write scores\n";
            return exit_input;
        }
    }
    const auto r = evaluation::evaluate(run.scored);
    const double train_rate = run.train_seconds > 0 ? static_cast<double>(run.trained) / run.train_seconds : 0;
    const double score_rate = run.score_seconds > 0 ? static_cast<double>(r.messages) / run.score_seconds : 0;
    const auto& c = r.confusion;
    if (plot_dir) {
        std::error_code ec;
        std::filesystem::create_directories(*plot_dir, ec);
        const std::pair<const char*, std::string> plots[] = {{"roc.svg", evaluation::roc_svg(r)},
                                                             {"histogram.svg", evaluation::histogram_svg(r)},
                                                             {"reliability.svg", evaluation::reliability_svg(r)}};
        for (const auto& [name, svg] : plots) {
            std::ofstream out(*plot_dir / name, std::ios::binary);
            out << svg;
            if (!out) {
                std::cerr << "mailsift: " << (*plot_dir / name).string() << ": cannot write plot\n";
                return exit_input;
            }
        }
    }
    if (json) {
        Json reliability = Json::array();
        for (const auto& b : r.reliability) {
            Json bin = bin_json(b);
            bin["mean_predicted"] = json_number(b.mean_predicted);
            bin["observed_spam"] = json_number(b.observed_spam);
            reliability.push_back(std::move(bin));
        }
        Json worst = nullptr;
        if (r.worst_bin) {
            worst = bin_json(r.reliability[*r.worst_bin]);
            worst["gap"] = json_number(r.worst_bin_gap, 6);
        }
        const Json out = {
            {"messages", r.messages},
            {"spam", r.spam},
            {"ham", r.ham},
            {"trained", run.trained},
            {"unusable", run.unreadable},
            {"auc", json_number(r.auc, 10)},
            {"one_minus_roca_percent", json_number(r.one_minus_roca_percent, 6)},
            {"false_positive_percent", json_number(r.false_positive_percent)},
            {"false_negative_percent", json_number(r.false_negative_percent)},
            {"unsure_percent", json_number(r.unsure_percent)},
            {"fnr_at_fpr_0.1_percent", json_number(r.fnr_at_fpr_01_percent)},
            {"fnr_at_fpr_1_percent", json_number(r.fnr_at_fpr_1_percent)},
            {"lam_percent", json_number(r.lam_percent)},
            {"confusion",
             {{"spam", {{"spam", c.spam_as_spam}, {"unsure", c.spam_as_unsure}, {"ham", c.spam_as_ham}}},
              {"ham", {{"spam", c.ham_as_spam}, {"unsure", c.ham_as_unsure}, {"ham", c.ham_as_ham}}}}},
            {"reliability", std::move(reliability)},
            {"expected_calibration_error", json_number(r.expected_calibration_error, 6)},
            {"worst_bin", std::move(worst)},
            {"deployed", deployed_json(run)},
            {"train_messages_per_second", json_number(train_rate)},
            {"score_messages_per_second", json_number(score_rate)},
        };
        std::cout << json_line(out);
        return exit_ok;
    }
    std::printf("messages          %zu tested (%zu spam, %zu ham), %zu trained, %zu unusable\n", r.messages, r.spam,
                r.ham, run.trained, run.unreadable);
    std::printf("AUC               %.6f\n1-ROCA%%           %.4f\n", r.auc, r.one_minus_roca_percent);
    std::printf("false positives   %.3f%% of ham (%zu)\nfalse negatives   %.3f%% of spam (%zu)\n",
                r.false_positive_percent, c.ham_as_spam, r.false_negative_percent, c.spam_as_ham);
    std::printf("unsure            %.3f%% of messages (%zu spam, %zu ham)\n", r.unsure_percent, c.spam_as_unsure,
                c.ham_as_unsure);
    std::printf("FNR at FPR<=0.1%%  %.3f%%\nFNR at FPR<=1%%    %.3f%%\nlam%%              %.4f\n",
                r.fnr_at_fpr_01_percent, r.fnr_at_fpr_1_percent, r.lam_percent);
    std::printf("\nconfusion (rows: truth)   spam  unsure     ham\n");
    std::printf("  spam                  %6zu  %6zu  %6zu\n", c.spam_as_spam, c.spam_as_unsure, c.spam_as_ham);
    std::printf("  ham                   %6zu  %6zu  %6zu\n", c.ham_as_spam, c.ham_as_unsure, c.ham_as_ham);
    std::printf("\nreliability  P(spam) bin   messages  mean predicted  observed spam\n");
    for (const auto& b : r.reliability) {
        if (b.messages == 0) continue;
        std::printf("             %.1f-%.1f       %8zu  %14.4f  %13.4f\n", b.low, b.high, b.messages, b.mean_predicted,
                    b.observed_spam);
    }
    print_calibration(r);
    print_deployed(run);
    std::printf("\nthroughput        train %.0f msgs/s, score %.0f msgs/s\n", train_rate, score_rate);
    return exit_ok;
}

struct TuneOptions {
    CorpusOptions corpus;
    std::string budget, seed;
    CLI::Option *budget_given = nullptr, *seed_given = nullptr;
    bool json = false;
};

int run_tune(const Context& ctx, const TuneOptions& o) {
    const auto corpus = o.corpus.corpus("tune");
    evaluation::TuneOptions options;
    const bool json = o.json;
    try {
        if (given(o.budget_given)) {
            const long b = std::stol(o.budget);
            if (b < 1) throw std::out_of_range("budget");
            options.budget = std::chrono::seconds(b);
        }
    } catch (const std::logic_error&) {
        usage_error("tune: --budget takes a positive whole number");
    }
    try {
        if (given(o.seed_given)) options.seed = std::stoull(o.seed);
    } catch (const std::logic_error&) {
        usage_error("tune: --seed takes a positive whole number");
    }
    const TempDir dir;
    const auto max_bytes = ctx.settings.limits.max_message_bytes;
    const bool terminal = ::isatty(STDERR_FILENO) != 0;  // progress on a terminal only
    const auto result = evaluation::tune(
        corpus, ctx.settings, options, dir.path,
        [&](const std::string& path) { return read_message_file(path, max_bytes); },
        [&](std::size_t trial, std::size_t) {
            if (terminal) std::cerr << "tune: trial " << trial << "\r" << std::flush;
        });
    if (terminal) std::cerr << "\n";
    const auto& r = result.report;
    if (json) {
        Json trials = Json::array();
        for (const auto& t : result.trials) {
            trials.push_back({{"change", t.change},
                              {"one_minus_roca_percent", json_number(t.report.one_minus_roca_percent)},
                              {"fnr_at_fpr_0.1_percent", json_number(t.report.fnr_at_fpr_01_percent)},
                              {"kept", t.kept}});
        }
        const Json best = {{"one_minus_roca_percent", json_number(r.one_minus_roca_percent)},
                           {"fnr_at_fpr_0.1_percent", json_number(r.fnr_at_fpr_01_percent)},
                           {"expected_calibration_error", json_number(r.expected_calibration_error, 6)},
                           {"worst_bin_gap", r.worst_bin ? json_number(r.worst_bin_gap, 6) : Json(nullptr)}};
        const Json out = {{"trials", std::move(trials)},
                          {"best", best},
                          {"config", result.config_lines},
                          {"budget_spent", result.budget_spent}};
        std::cout << json_line(out);
        return exit_ok;
    }
    std::printf("%-36s %10s %12s  %s\n", "trial (held out: every 5th)", "1-ROCA%", "FNR@0.1%FPR", "");
    for (const auto& t : result.trials) {
        std::printf("%-36s %10.4f %11.3f%%  %s\n", t.change.c_str(), t.report.one_minus_roca_percent,
                    t.report.fnr_at_fpr_01_percent, t.kept ? "kept" : "");
    }
    std::printf("\nbest on the held-out part: 1-ROCA%% %.4f, FNR at FPR<=0.1%% %.3f%%%s\n", r.one_minus_roca_percent,
                r.fnr_at_fpr_01_percent, result.budget_spent ? " (budget spent)" : "");
    print_calibration(r);
    std::printf("\nconfiguration lines:\n");
    for (const auto& line : result.config_lines) std::printf("%s\n", line.c_str());
    return exit_ok;
}

}  // namespace

void add_evaluation_commands(Registry& r) {
    {
        CLI::App* sub = r.add("evaluate", evaluate_help);
        auto o = std::make_shared<EvaluateOptions>();
        o->corpus.add_to(sub);
        o->split_given = sub->add_option("--split", o->split);
        o->folds_given = sub->add_option("--folds", o->folds);
        sub->add_flag("--online", o->online);
        sub->add_flag("--train-on-error", o->train_on_error);
        sub->add_flag("--deployed", o->deployed);
        o->batch_given = sub->add_option("--batch", o->batch);
        sub->add_flag("--one-sided", o->one_sided);
        sub->add_flag("--class-sorted", o->class_sorted);
        o->margin_given = sub->add_option("--train-margin", o->train_margin);
        sub->add_flag("--json", o->json);
        o->plot_given = sub->add_option("--plot", o->plot);
        o->scores_given = sub->add_option("--scores", o->scores);
        r.set_run(sub, [o](const Context& ctx) { return run_evaluate(ctx, *o); });
    }
    CLI::App* sub = r.add("tune", tune_help);
    auto o = std::make_shared<TuneOptions>();
    o->corpus.add_to(sub);
    o->budget_given = sub->add_option("--budget", o->budget);
    o->seed_given = sub->add_option("--seed", o->seed);
    sub->add_flag("--json", o->json);
    r.set_run(sub, [o](const Context& ctx) { return run_tune(ctx, *o); });
}

}  // namespace mailsift::cli
