// classify, explain and tokens: what the model makes of messages, changing nothing.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "mailsift/engine/contacts.hpp"
#include "mailsift/engine/explain.hpp"
#include "mailsift/engine/filter.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/message_checks.hpp"
#include "mailsift/engine/model_settings.hpp"
#include "mailsift/features/slots.hpp"
#include "message_source.hpp"
#include "pipeline.hpp"

namespace mailsift::cli {
namespace {

const char* const classify_help = R"(usage: mailsift classify [--json] [--files-from LIST] [PATH...]

Print one line per message: PATH<TAB>VERDICT<TAB>PROBABILITY<TAB>LOG_ODDS
(verdict spam, unsure or ham; mbox messages as PATH#N). With --json, one JSON
object per line with the same fields and the top reasons.
)";

const char* const explain_help = R"(usage: mailsift explain PATH

Show the verdict of one message and the features that pushed it most toward
spam and toward ham, with their counts in the model. With model = linear,
also every term of the linear score: the bias, the weighted naive-Bayes input
and the weight of each of the message's slots (byte 4-grams, printed in
quotes, and features), the largest listed and the rest summed; they add up to
the log-odds that classify prints.
)";

const char* const tokens_help = R"(usage: mailsift tokens PATH
       mailsift tokens --signature ID

Print every feature of one message with its count (FEATURE<TAB>COUNT), as the
model sees it. With --signature, print instead the features mailsiftd scored
and recorded under that X-Mailsift-Signature: what a correction of it trains.
)";

struct ClassifyOptions {
    bool json = false;
    std::string files_from;
    CLI::Option* files_from_given = nullptr;
    std::vector<std::string> paths;
};

Json reasons_json(const std::vector<engine::Reason>& reasons) {
    Json out = Json::array();
    for (const auto& r : reasons) out.push_back({{"feature", r.feature}, {"log_odds", json_number(r.log_odds)}});
    return out;
}

int classify(const Context& ctx, const ClassifyOptions& o) {
    struct {
        bool json;
        std::vector<std::string> paths;
    } args{o.json, message_paths(o.paths, o.files_from_given->count() > 0 ? std::optional(o.files_from)
                                                                            : std::nullopt)};
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_only);
    store::Database& db = *opened;
    engine::Settings configured = ctx.settings;
    if (!args.json) configured.reasons = 0;  // nothing to print them in
    const mime::Limits& limits = configured.limits;
    int status = exit_ok;
    std::string line;
    struct Scored {
        engine::MessageProblem problem = engine::MessageProblem::none;
        engine::Classification classification;
    };
    const auto score = [&](const engine::Filter& filter, const InputMessage& m) {
        Scored r;
        if (!m.error.empty()) return r;
        r.problem = engine::check_message(m.raw, m.size_bytes, limits);
        if (engine::refused(r.problem)) return r;
        r.classification = filter.classify(m.raw);
        return r;
    };
    const std::function<bool(InputMessage&, Scored&)> print = [&](InputMessage& m, Scored& r) {
        if (!m.error.empty()) {
            report(m.label, m.error);
            status = exit_input;
            return true;
        }
        const auto problem = r.problem;
        if (engine::refused(problem)) {
            report(m.label, std::string(engine::describe(problem)) + "; not classified");
            status = exit_input;
            return true;
        }
        // Notes, not failures: mailsiftd scores such mail the same way.
        if (problem == engine::MessageProblem::too_large) {
            report(m.label, std::string("note: ") + engine::describe(problem) + "; scored on the first " +
                                std::to_string(limits.max_message_bytes) + " bytes");
        }
        const engine::Classification& c = r.classification;
        if (c.truncated) {
            report(m.label, std::string("note: ") + engine::describe(engine::MessageProblem::truncated_mime) +
                                "; scored on what was read");
        }
        const char* verdict = model::to_string(c.score.verdict);
        if (args.json) {
            const Json out = {{"path", m.label},
                              {"verdict", verdict},
                              {"probability", json_number(c.score.probability, 8)},
                              {"log_odds", json_number(c.score.log_odds, 8)},
                              {"toward_spam", reasons_json(c.toward_spam)},
                              {"toward_ham", reasons_json(c.toward_ham)}};
            std::cout << json_line(out);
        } else {
            line.assign(m.label);
            line += '\t';
            line += verdict;
            line += '\t';
            line += number(c.score.probability, 8);
            line += '\t';
            line += number(c.score.log_odds, 8);
            line += '\n';
            std::cout << line;
        }
        return true;
    };
    auto one_by_one = [&](const engine::Filter& filter, InputMessage& m) {
        Scored r = score(filter, m);
        print(m, r);
    };
    if (few_message_files(args.paths, few_messages)) {
        // A few messages: read first, and scored by a filter that reads only
        // their features' rows. An mbox or stdin that holds more goes on with
        // the whole model, one message at a time, as it reads them.
        std::vector<InputMessage> held;
        std::optional<engine::Filter> whole;
        for_each_message(args.paths, limits.max_message_bytes, [&](InputMessage& m) {
            if (whole) {
                one_by_one(*whole, m);
                return true;
            }
            held.push_back(std::move(m));
            if (held.size() > few_messages) {
                whole.emplace(db, configured);
                report_setting_notes(whole->setting_notes());
                for (auto& h : held) one_by_one(*whole, h);
                held.clear();
            }
            return true;
        });
        if (!whole) {
            std::vector<std::string_view> raws;
            for (const auto& h : held) {
                if (h.error.empty() && !engine::refused(engine::check_message(h.raw, h.size_bytes, limits))) {
                    raws.push_back(h.raw);
                }
            }
            db.for_few_messages();
            const engine::Filter filter(db, configured, raws);
            report_setting_notes(filter.setting_notes());
            for (auto& h : held) one_by_one(filter, h);
        }
        return status;
    }
    // A batch: the whole model, read once; parsing, features and scoring on
    // every core, reports and output in input order.
    const engine::Filter filter(db, configured);
    report_setting_notes(filter.setting_notes());
    const std::function<Scored(const InputMessage&)> work = [&](const InputMessage& m) { return score(filter, m); };
    for_each_message_parallel<Scored>(args.paths, limits.max_message_bytes, worker_threads(), work, print);
    return status;
}

// Reads exactly one message for explain/tokens.
std::optional<InputMessage> one_message(const std::string& command, const std::vector<std::string>& given) {
    std::vector<std::string> paths = given;
    if (paths.size() > 1) usage_error(command + ": takes one message");
    if (paths.empty()) paths.push_back("-");
    std::optional<InputMessage> first;
    for_each_message(paths, engine::Settings{}.limits.max_message_bytes * 16, [&](InputMessage& m) {
        first = std::move(m);
        return false;
    });
    return first;
}

// The linear scorer's part of explain: every term of its sum, which is the
// log-odds classify prints.
void explain_linear(const engine::LinearExplanation& l, const engine::Settings& settings) {
    const model::LinearScore& z = l.score;
    std::printf("\nlinear scorer: log-odds = bias + u x naive-Bayes input + the weights of the message's slots\n");
    std::printf("  %+12.6f  bias\n", z.bias);
    std::printf("  %+12.6f  naive Bayes: u %.6f x input %+.6f (log-odds %s / nb_temperature %s%s)\n",
                z.nb_weight * z.nb_input, z.nb_weight, z.nb_input, number(l.nb_log_odds, 6).c_str(),
                number(settings.linear.nb_temperature).c_str(),
                l.clipped ? (", clipped to +-" + number(settings.linear.nb_clip)).c_str() : "");
    std::printf("  %+12.6f  weights of %zu slots (below)\n", z.features, l.slots.size());
    std::printf("  %+12.6f  = log-odds\n", z.z());
    const engine::SlotSplit split = l.split(15);
    auto list = [](const char* title, const std::vector<engine::SlotWeight>& slots) {
        std::printf("\n%s\n  %12s  %s\n", title, "weight", "slot: its 4-grams and features");
        for (const auto& w : slots) std::printf("  %+12.6f  %u: %s\n", w.weight, w.slot, w.source.c_str());
        if (slots.empty()) std::printf("  (none)\n");
    };
    list("slots toward spam:", split.toward_spam);
    list("slots toward ham:", split.toward_ham);
    std::printf("  %+12.6f  the other %zu slots together\n", split.others_sum, split.others);
}

int explain(const Context& ctx, const std::vector<std::string>& paths) {
    auto m = one_message("explain", paths);
    if (!m) usage_error("explain: no message");
    if (!m->error.empty()) return report(m->label, m->error), exit_input;
    const auto problem = engine::check_message(m->raw, m->size_bytes, ctx.settings.limits);
    if (engine::refused(problem)) return report(m->label, engine::describe(problem)), exit_input;
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_only);
    store::Database& db = *opened;
    engine::Settings configured = ctx.settings;
    if (configured.reasons < 15) configured.reasons = 15;
    const std::string_view raw = m->raw;
    db.for_few_messages();
    const engine::Filter filter(db, configured, std::span(&raw, 1));  // the rows of this message only
    report_setting_notes(filter.setting_notes());
    const engine::Settings& settings = filter.settings();
    const engine::Explanation e = engine::explain(filter.model(), m->raw);
    const auto& c = e.classification;
    std::printf("%s: %s, P(spam) = %s, log-odds = %s\n", m->label.c_str(), model::to_string(c.score.verdict),
                number(c.score.probability, 6).c_str(), number(c.score.log_odds, 6).c_str());
    std::printf("model: %llu spam and %llu ham messages learned, %zu features; prior log-odds %s\n",
                static_cast<unsigned long long>(e.spam_messages), static_cast<unsigned long long>(e.ham_messages),
                e.features, number(e.prior_log_odds, 4).c_str());
    std::printf("thresholds: spam at P >= %s, ham at P <= %s\n", number(settings.model.spam_threshold).c_str(),
                number(settings.model.ham_threshold).c_str());
    auto table = [](const char* title, const std::vector<engine::Reason>& reasons) {
        std::printf("\n%s\n  %10s  %8s  %8s  %s\n", title, "log-odds", "spam", "ham", "feature");
        for (const auto& r : reasons) {
            std::printf("  %+10.3f  %8llu  %8llu  %s\n", r.log_odds, static_cast<unsigned long long>(r.counts.spam),
                        static_cast<unsigned long long>(r.counts.ham), r.feature.c_str());
        }
        if (reasons.empty()) std::printf("  (none)\n");
    };
    const bool linear = settings.scorer == engine::Scorer::linear;
    table(linear ? "naive-Bayes input, toward spam:" : "toward spam:", c.toward_spam);
    table(linear ? "naive-Bayes input, toward ham:" : "toward ham:", c.toward_ham);
    if (e.linear) explain_linear(*e.linear, settings);
    if (c.prefix_only) std::printf("\nnote: a parsing limit was hit; scored on what was read\n");
    return exit_ok;
}

// tokens --signature ID: the recorded scan, as correct would train it.
int recorded_tokens(const Context& ctx, const std::string& text) {
    const auto id = engine::parse_signature(text);
    if (!id) usage_error("tokens: '" + text + "' is not a signature (32 hexadecimal digits)");
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_only);
    store::Database& db = *opened;
    const auto scan = db.find_scan(*id);
    if (!scan) {
        report(text, "no scan recorded under this signature (not written yet, expired, pruned, "
                     "or scanned with another database)");
        return exit_input;
    }
    std::cout << scan->features;
    return exit_ok;
}

struct TokensOptions {
    std::string signature;
    CLI::Option* signature_given = nullptr;
    std::vector<std::string> paths;
};

int tokens(const Context& ctx, const TokensOptions& o) {
    if (o.signature_given->count() > 0) {
        if (!o.paths.empty()) usage_error("tokens: --signature takes one id and no message");
        return recorded_tokens(ctx, o.signature);
    }
    auto m = one_message("tokens", o.paths);
    if (!m) usage_error("tokens: no message");
    if (!m->error.empty()) return report(m->label, m->error), exit_input;
    const auto problem = engine::check_message(m->raw, m->size_bytes, ctx.settings.limits);
    if (engine::refused(problem)) return report(m->label, engine::describe(problem)), exit_input;
    // Contacts come from the database when there is one; tokens works without it.
    // So do the features the model was trained with (model_settings.hpp).
    store::ContactSet contacts;
    engine::Settings settings = ctx.settings;
    if (store::is_postgresql(ctx.db_path.string()) || std::filesystem::exists(ctx.db_path)) {
        const auto db = store::open(ctx.db_path.string(), store::Database::Mode::read_only);
        contacts = db->load_contacts();
        auto kept = engine::model_settings(*db, ctx.settings);
        report_setting_notes(kept.notes);
        settings = std::move(kept.settings);
    }
    const auto parsed = mime::parse(m->raw, settings.limits);
    const engine::StoredContacts lookup(contacts);
    const auto bag = features::extract(parsed, nullptr, &lookup, settings.features);
    std::string out;
    for (const auto& f : bag.sorted()) {
        out += f.text;
        out += '\t';
        out += std::to_string(f.count);
        out += '\n';
    }
    std::cout << out;
    return exit_ok;
}

}  // namespace

void add_inspection_commands(Registry& r) {
    {
        CLI::App* sub = r.add("classify", classify_help);
        auto o = std::make_shared<ClassifyOptions>();
        sub->add_flag("--json", o->json);
        o->files_from_given = sub->add_option("--files-from", o->files_from);
        sub->add_option("PATH", o->paths);
        r.set_run(sub, [o](const Context& ctx) { return classify(ctx, *o); });
    }
    {
        CLI::App* sub = r.add("explain", explain_help);
        auto paths = std::make_shared<std::vector<std::string>>();
        sub->add_option("PATH", *paths);
        r.set_run(sub, [paths](const Context& ctx) { return explain(ctx, *paths); });
    }
    CLI::App* sub = r.add("tokens", tokens_help);
    auto o = std::make_shared<TokensOptions>();
    o->signature_given = sub->add_option("--signature", o->signature);
    sub->add_option("PATH", o->paths);
    r.set_run(sub, [o](const Context& ctx) { return tokens(ctx, *o); });
}

}  // namespace mailsift::cli
