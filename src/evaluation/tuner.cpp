// Coordinate search over the settings; see tuner.hpp for the rules.
#include "mailsift/evaluation/tuner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <random>

namespace mailsift::evaluation {

namespace {

struct Candidate {
    std::string line;  // the configuration line that sets it
    std::function<void(engine::Settings&)> apply;
};

struct Axis {
    std::string name;
    std::vector<Candidate> values;
};

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

Candidate boolean(const std::string& key, bool features::Options::*member, bool on) {
    return {key + " = " + (on ? "on" : "off"), [member, on](engine::Settings& s) { s.features.*member = on; }};
}

Axis sizes(const std::string& key, std::initializer_list<std::size_t> values,
           void (*set)(engine::Settings&, std::size_t)) {
    Axis axis{key, {}};
    for (std::size_t n : values) {
        axis.values.push_back({key + " = " + std::to_string(n), [set, n](engine::Settings& s) { set(s, n); }});
    }
    return axis;
}

std::vector<Axis> axes() {
    std::vector<Axis> out;
    Axis alpha{"alpha", {}};
    for (double a : {0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0}) {
        alpha.values.push_back({"alpha = " + num(a), [a](engine::Settings& s) { s.model.alpha = a; }});
    }
    out.push_back(alpha);
    out.push_back({"term_frequency",
                   {{"term_frequency = boolean",
                     [](engine::Settings& s) { s.model.term_frequency = model::TermFrequency::boolean; }},
                    {"term_frequency = raw", [](engine::Settings& s) { s.model.term_frequency = model::TermFrequency::raw; }}}});
    const std::pair<const char*, bool features::Options::*> switches[] = {
        {"features.headers", &features::Options::headers},   {"features.subject", &features::Options::subject},
        {"features.patterns", &features::Options::patterns}, {"features.urls", &features::Options::urls},
        {"features.mime_shape", &features::Options::mime_shape}};
    for (const auto& [key, member] : switches) {
        out.push_back({key, {boolean(key, member, true), boolean(key, member, false)}});
    }
    out.push_back(sizes("length_norm_features", {0, 5, 10, 20, 40},
                        [](engine::Settings& s, std::size_t n) { s.model.length_norm_features = n; }));
    out.push_back(sizes("header_length_norm_features", {0, 3, 5, 10},
                        [](engine::Settings& s, std::size_t n) { s.model.header_length_norm_features = n; }));
    out.push_back(sizes("features.min_token_bytes", {1, 2, 3},
                        [](engine::Settings& s, std::size_t n) { s.features.min_token_bytes = n; }));
    out.push_back(sizes("features.max_token_bytes", {20, 40, 80},
                        [](engine::Settings& s, std::size_t n) { s.features.max_token_bytes = n; }));
    return out;
}

// Strictly better: lower 1-ROCA%, or the same within 1e-4 and a lower FNR at the strict budget.
bool better(const Report& a, const Report& b) {
    if (a.one_minus_roca_percent < b.one_minus_roca_percent - 1e-4) return true;
    if (a.one_minus_roca_percent > b.one_minus_roca_percent + 1e-4) return false;
    return a.fnr_at_fpr_01_percent < b.fnr_at_fpr_01_percent - 1e-9;
}

}  // namespace

TuneResult tune(const std::vector<LabelledMessage>& corpus, const engine::Settings& start, const TuneOptions& options,
                const std::filesystem::path& work_dir, const Loader& load, const Progress& progress) {
    const auto started = std::chrono::steady_clock::now();
    auto spent = [&] { return std::chrono::steady_clock::now() - started >= options.budget; };
    Plan plan;
    plan.mode = Plan::Mode::split_every;
    plan.every = options.holdout_every;

    TuneResult result;
    result.best = start;
    std::size_t trial_no = 0;
    auto evaluate_settings = [&](const engine::Settings& s, std::vector<Scored>* keep) {
        Run r = run(corpus, plan, s, work_dir, load);
        if (progress) progress(++trial_no, 0);
        if (keep != nullptr) *keep = r.scored;
        return evaluation::evaluate(r.scored);
    };
    std::vector<Scored> best_scores;
    result.report = evaluate_settings(result.best, &best_scores);
    result.trials.push_back({"start", result.report, true});
    std::vector<std::string> chosen;  // lines for the settings that changed

    std::vector<Axis> order = axes();
    std::mt19937_64 rng(options.seed);
    std::shuffle(order.begin(), order.end(), rng);
    std::map<std::string, std::string> line_for_axis;
    for (bool improved = true; improved && !spent();) {
        improved = false;
        for (const auto& axis : order) {
            for (const auto& candidate : axis.values) {
                if (spent()) break;
                if (const auto it = line_for_axis.find(axis.name); it != line_for_axis.end() && it->second == candidate.line) {
                    continue;  // already the current value
                }
                engine::Settings trial = result.best;
                candidate.apply(trial);
                std::vector<Scored> scores;
                const Report r = evaluate_settings(trial, &scores);
                const bool wins = better(r, result.report);
                result.trials.push_back({candidate.line, r, wins});
                if (wins) {
                    result.best = trial;
                    result.report = r;
                    best_scores = std::move(scores);
                    line_for_axis[axis.name] = candidate.line;
                    improved = true;
                }
            }
        }
    }
    result.budget_spent = spent();

    // Thresholds from the held-out scores of the best settings.
    std::vector<double> ham, spam;
    for (const auto& s : best_scores) (s.spam ? spam : ham).push_back(s.log_odds);
    std::sort(ham.begin(), ham.end(), std::greater<>());
    std::sort(spam.begin(), spam.end());
    if (!ham.empty() && !spam.empty()) {
        const auto k = std::min(ham.size() - 1, static_cast<std::size_t>(options.max_fpr * static_cast<double>(ham.size())));
        const auto j = std::min(spam.size() - 1, static_cast<std::size_t>(options.max_fnr * static_cast<double>(spam.size())));
        result.spam_log_odds = std::ceil(ham[k]) + 1.0;
        result.ham_log_odds = std::floor(spam[j]) - 1.0;
        if (result.ham_log_odds > result.spam_log_odds) {
            const double mid = std::round((result.ham_log_odds + result.spam_log_odds) / 2);
            result.ham_log_odds = result.spam_log_odds = mid;
        }
    }
    for (const auto& [axis, line] : line_for_axis) result.config_lines.push_back(line);
    result.config_lines.push_back("spam_log_odds = " + num(result.spam_log_odds));
    result.config_lines.push_back("ham_log_odds = " + num(result.ham_log_odds));
    return result;
}

}  // namespace mailsift::evaluation
