// mailsift — the command-line companion: learn, unlearn, classify, explain,
// tokens, stats, contacts. Argument parsing and output formats live here; all
// mail logic is in the engine.
//
// Exit codes (also in man/mailsift.1):
//   0 success (a message already learned is success)
//   1 some input could not be read or used; the rest was processed
//   2 usage error
//   3 database or configuration error; the failing batch changed nothing
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "mailsift/engine/filter.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/store/database.hpp"
#include "message_source.hpp"

namespace {

using namespace mailsift;

constexpr int exit_ok = 0, exit_input = 1, exit_usage = 2, exit_environment = 3;

const char* const main_help = R"(usage: mailsift [--db PATH] [--config PATH] COMMAND [ARGS]

Train and run the mailsift naive-Bayes spam filter.

commands:
  learn    (--spam|--ham) [--files-from LIST] [PATH...]  learn messages as spam or ham
  unlearn  (--spam|--ham) [--files-from LIST] [PATH...]  forget messages learned as spam or ham
  correct  (--spam|--ham) [--signature ID]... [PATH...]   correct mailsiftd's verdict on messages
  classify [--json] [--files-from LIST] [PATH...]         print a verdict per message
  explain  PATH                                           show why a message scores as it does
  tokens   PATH                                           print the features of one message
  stats    [--json]                                       show what the database holds
  contacts (add|remove|list) [ADDRESS...]                 manage known correspondents

PATH is a message file, an mbox file or a directory (maildir, or one message
per file); '-' or no PATH reads one message from standard input.

options:
  --db PATH       database file (else $MAILSIFT_DB, else 'database' in the
                  configuration file, else ~/.local/share/mailsift/mailsift.db)
  --config PATH   configuration file (else $MAILSIFT_CONFIG, else
                  /etc/mailsift/mailsift.conf when it exists)
  -h, --help      show help; 'mailsift COMMAND --help' for one command
  --version       show the version

exit status: 0 ok, 1 some input unusable, 2 usage error, 3 database or
configuration error. See mailsift(1).
)";

struct CommandHelp {
    const char* name;
    const char* text;
};

const CommandHelp command_help[] = {
    {"learn", R"(usage: mailsift learn (--spam|--ham) [--files-from LIST] [PATH...]

Learn each message as spam or ham. A message already learned with the same
label is left as it is (success); one learned with the other label is moved.
Senders of messages learned as ham become contacts. Messages are committed in
batches (batch_messages, default 1000): an error rolls back only its batch.
)"},
    {"unlearn", R"(usage: mailsift unlearn (--spam|--ham) [--files-from LIST] [PATH...]

Forget messages previously learned with that label. A message that was not
learned so is reported and left alone (success).
)"},
    {"correct", R"(usage: mailsift correct (--spam|--ham) [--signature ID]... [--files-from LIST] [PATH...]

Correct mailsiftd's verdict. A message carrying an X-Mailsift-Signature that
the database knows is trained on exactly the features mailsiftd scored (so
headers added later by delivery or the mail client do not matter), and the
correction counts toward the error rates in 'mailsift stats'; any other
message is learned as it is. A message already learned in the other class is
moved; one already in the requested class is a success with a note.
--signature ID corrects a scan without the message (repeatable). With neither
PATH nor --signature, one message is read from standard input, as a Dovecot
IMAPSieve or sieve-pipe rule sends it.
)"},
    {"classify", R"(usage: mailsift classify [--json] [--files-from LIST] [PATH...]

Print one line per message: PATH<TAB>VERDICT<TAB>PROBABILITY<TAB>LOG_ODDS
(verdict spam, unsure or ham; mbox messages as PATH#N). With --json, one JSON
object per line with the same fields and the top reasons.
)"},
    {"explain", R"(usage: mailsift explain PATH

Show the verdict of one message and the features that pushed it most toward
spam and toward ham, with their counts in the model.
)"},
    {"tokens", R"(usage: mailsift tokens PATH

Print every feature of one message with its count (FEATURE<TAB>COUNT), as the
model sees it.
)"},
    {"stats", R"(usage: mailsift stats [--json]

Show the database used, its size and schema version, messages and features
learned per class, and the number of contacts.
)"},
    {"contacts", R"(usage: mailsift contacts (add|remove|list) [ADDRESS...]

add and remove take addresses; list prints ADDRESS<TAB>SOURCE<TAB>ADDED (UTC).
)"},
};

[[noreturn]] void usage_error(const std::string& msg) {
    std::cerr << "mailsift: " << msg << "\n(try 'mailsift --help')\n";
    std::exit(exit_usage);
}

struct Global {
    std::optional<std::string> db;
    std::optional<std::string> config;
};

struct Args {
    std::string command;
    std::vector<std::string> rest;
};

std::string json_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    for (const unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out.push_back(static_cast<char>(c));
                }
        }
    }
    return out;
}

std::string number(double v, int digits = 6) {
    if (std::isinf(v)) return v > 0 ? "1e308" : "-1e308";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    return buf;
}

struct Context {
    engine::Settings settings;
    std::filesystem::path db_path;
    std::string db_source;  // where the path came from, for stats
};

Context resolve(const Global& g) {
    std::optional<std::filesystem::path> config, db;
    if (g.config) config = *g.config;
    if (g.db) db = *g.db;
    engine::Resolved r = engine::resolve(config, db);
    return Context{std::move(r.settings), std::move(r.database), std::move(r.database_source)};
}

// Parses the PATH... / --files-from part shared by learn, unlearn and classify.
struct MessageArgs {
    std::optional<store::Class> label;
    bool json = false;
    std::vector<std::string> paths;
};

MessageArgs parse_message_args(const std::string& command, const std::vector<std::string>& rest, bool want_label,
                               bool want_json) {
    MessageArgs a;
    std::optional<std::string> files_from;
    bool only_paths = false;
    for (std::size_t i = 0; i < rest.size(); ++i) {
        const std::string& s = rest[i];
        if (!only_paths && s == "--") {
            only_paths = true;
        } else if (!only_paths && want_label && (s == "--spam" || s == "--ham")) {
            const store::Class c = s == "--spam" ? store::Class::spam : store::Class::ham;
            if (a.label && *a.label != c) usage_error(command + ": give either --spam or --ham, not both");
            a.label = c;
        } else if (!only_paths && want_json && s == "--json") {
            a.json = true;
        } else if (!only_paths && s == "--files-from") {
            if (i + 1 >= rest.size()) usage_error(command + ": --files-from needs a file ('-' for standard input)");
            files_from = rest[++i];
        } else if (!only_paths && s.size() > 1 && s[0] == '-' && s != "-") {
            usage_error(command + ": unknown option '" + s + "'");
        } else {
            a.paths.push_back(s);
        }
    }
    if (want_label && !a.label) usage_error(command + ": say --spam or --ham");
    if (files_from) {
        try {
            auto more = cli::read_path_list(*files_from);
            a.paths.insert(a.paths.end(), more.begin(), more.end());
        } catch (const std::exception& e) {
            std::cerr << "mailsift: " << e.what() << "\n";
            std::exit(exit_input);
        }
    } else if (a.paths.empty()) {
        a.paths.push_back("-");
    }
    return a;
}

void report(const std::string& label, const std::string& problem) {
    std::cerr << "mailsift: " << label << ": " << problem << "\n";
}

int cmd_train(const Context& ctx, const std::string& command, const std::vector<std::string>& rest) {
    const bool learning = command == "learn";
    const MessageArgs args = parse_message_args(command, rest, true, false);
    store::Database db(ctx.db_path, store::Database::Mode::read_write);
    engine::Trainer trainer(db, ctx.settings);
    const std::int64_t now = std::time(nullptr);
    int status = exit_ok;
    cli::for_each_message(args.paths, ctx.settings.limits.max_message_bytes, [&](cli::InputMessage& m) {
        if (!m.error.empty()) {
            report(m.label, m.error);
            status = exit_input;
            return true;
        }
        if (learning) {
            // "Already learned" is success: a mail client moving a message twice must not see a failure.
            const auto outcome = trainer.learn(m.raw, m.size_bytes, *args.label, now);
            if (outcome.problem != engine::MessageProblem::none) {
                report(m.label, std::string(engine::describe(outcome.problem)) + "; not learned");
                status = exit_input;
            }
        } else {
            const auto r = trainer.unlearn(m.raw, *args.label);
            if (r == store::UnlearnResult::not_learned) {
                report(m.label, std::string("was not learned as ") + store::to_string(*args.label) + "; nothing to unlearn");
            } else if (r == store::UnlearnResult::learned_as_other_class) {
                report(m.label, std::string("is learned as ") +
                                    (*args.label == store::Class::spam ? "ham" : "spam") + ", not " +
                                    store::to_string(*args.label) + "; left as it is");
            }
        }
        return true;
    });
    trainer.commit();
    const auto& c = trainer.counts();
    if (learning) {
        std::cout << "learned " << c.learned << " as " << store::to_string(*args.label) << ", " << c.moved
                  << " moved from " << (*args.label == store::Class::spam ? "ham" : "spam") << ", "
                  << c.already_learned << " already learned\n";
    } else {
        std::cout << "unlearned " << c.unlearned << " from " << store::to_string(*args.label) << ", " << c.not_learned
                  << " not learned as " << store::to_string(*args.label) << "\n";
    }
    return status;
}

int cmd_correct(const Context& ctx, const std::vector<std::string>& rest) {
    // --signature is ours; everything else is the shared message syntax.
    std::vector<std::string> message_args;
    std::vector<std::string> signatures;
    for (std::size_t i = 0; i < rest.size(); ++i) {
        if (rest[i] == "--signature") {
            if (i + 1 >= rest.size()) usage_error("correct: --signature needs an id");
            signatures.push_back(rest[++i]);
        } else {
            message_args.push_back(rest[i]);
        }
    }
    MessageArgs args = parse_message_args("correct", message_args, true, false);
    const bool only_signatures = !signatures.empty() && args.paths == std::vector<std::string>{"-"} &&
                                 std::find(message_args.begin(), message_args.end(), "-") == message_args.end();
    if (only_signatures) args.paths.clear();
    const store::Class to = *args.label;
    store::Database db(ctx.db_path, store::Database::Mode::read_write);
    engine::Trainer trainer(db, ctx.settings);
    const std::int64_t now = std::time(nullptr);
    int status = exit_ok;
    std::size_t by_signature = 0, as_message = 0;
    auto note_result = [&](const std::string& label, store::LearnResult r) {
        if (r == store::LearnResult::already_learned) report(label, std::string("already learned as ") + store::to_string(to));
    };
    for (const auto& text : signatures) {
        const auto id = engine::parse_signature(text);
        if (!id) {
            report(text, "not a signature (32 hexadecimal digits)");
            status = exit_input;
            continue;
        }
        const auto r = trainer.correct_signature(*id, to, now);
        if (!r) {
            report(text, "unknown signature (expired, pruned, or scanned by another database)");
            status = exit_input;
            continue;
        }
        ++by_signature;
        note_result(text, *r);
    }
    cli::for_each_message(args.paths, ctx.settings.limits.max_message_bytes, [&](cli::InputMessage& m) {
        if (!m.error.empty()) {
            report(m.label, m.error);
            status = exit_input;
            return true;
        }
        const auto o = trainer.correct(m.raw, m.size_bytes, to, now);
        if (o.problem != engine::MessageProblem::none) {
            report(m.label, std::string(engine::describe(o.problem)) + "; not learned");
            status = exit_input;
            return true;
        }
        ++(o.by_signature ? by_signature : as_message);
        note_result(m.label, o.result);
        return true;
    });
    trainer.commit();
    const auto& c = trainer.counts();
    std::cout << "corrected to " << store::to_string(to) << ": " << by_signature << " by signature, " << as_message
              << " as the message; " << c.learned << " learned, " << c.moved << " moved, " << c.already_learned
              << " already " << store::to_string(to) << "\n";
    return status;
}

void print_reasons_json(std::ostream& out, const char* key, const std::vector<engine::Reason>& reasons) {
    out << ",\"" << key << "\":[";
    for (std::size_t i = 0; i < reasons.size(); ++i) {
        if (i) out << ',';
        out << "{\"feature\":\"" << json_escape(reasons[i].feature) << "\",\"log_odds\":" << number(reasons[i].log_odds)
            << "}";
    }
    out << ']';
}

int cmd_classify(const Context& ctx, const std::vector<std::string>& rest) {
    const MessageArgs args = parse_message_args("classify", rest, false, true);
    store::Database db(ctx.db_path, store::Database::Mode::read_only);
    engine::Settings settings = ctx.settings;
    if (!args.json) settings.reasons = 0;  // nothing to print them in
    engine::Filter filter(db, settings);
    int status = exit_ok;
    std::string line;
    cli::for_each_message(args.paths, settings.limits.max_message_bytes, [&](cli::InputMessage& m) {
        if (!m.error.empty()) {
            report(m.label, m.error);
            status = exit_input;
            return true;
        }
        const auto problem = engine::check_message(m.raw, m.size_bytes, settings.limits);
        if (problem == engine::MessageProblem::empty || problem == engine::MessageProblem::not_a_message) {
            report(m.label, std::string(engine::describe(problem)) + "; not classified");
            status = exit_input;
            return true;
        }
        if (problem == engine::MessageProblem::too_large) {
            report(m.label, std::string(engine::describe(problem)) + "; scored on the first " +
                                std::to_string(settings.limits.max_message_bytes) + " bytes");
            status = exit_input;
        }
        const engine::Classification c = filter.classify(m.raw);
        if (c.truncated) {
            report(m.label, std::string(engine::describe(engine::MessageProblem::truncated_mime)) +
                                "; scored on what was read");
            status = exit_input;
        }
        const char* verdict = model::to_string(c.score.verdict);
        if (args.json) {
            std::ostringstream out;
            out << "{\"path\":\"" << json_escape(m.label) << "\",\"verdict\":\"" << verdict
                << "\",\"probability\":" << number(c.score.probability, 8)
                << ",\"log_odds\":" << number(c.score.log_odds, 8);
            print_reasons_json(out, "toward_spam", c.toward_spam);
            print_reasons_json(out, "toward_ham", c.toward_ham);
            out << "}\n";
            std::cout << out.str();
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
    });
    return status;
}

// Reads exactly one message for explain/tokens.
std::optional<cli::InputMessage> one_message(const std::string& command, const std::vector<std::string>& rest) {
    std::vector<std::string> paths;
    for (const auto& s : rest) {
        if (s.size() > 1 && s[0] == '-') usage_error(command + ": unknown option '" + s + "'");
        paths.push_back(s);
    }
    if (paths.size() > 1) usage_error(command + ": takes one message");
    if (paths.empty()) paths.push_back("-");
    std::optional<cli::InputMessage> first;
    cli::for_each_message(paths, engine::Settings{}.limits.max_message_bytes * 16, [&](cli::InputMessage& m) {
        first = std::move(m);
        return false;
    });
    return first;
}

int cmd_explain(const Context& ctx, const std::vector<std::string>& rest) {
    auto m = one_message("explain", rest);
    if (!m) usage_error("explain: no message");
    if (!m->error.empty()) return report(m->label, m->error), exit_input;
    const auto problem = engine::check_message(m->raw, m->size_bytes, ctx.settings.limits);
    if (problem == engine::MessageProblem::empty || problem == engine::MessageProblem::not_a_message) {
        return report(m->label, engine::describe(problem)), exit_input;
    }
    store::Database db(ctx.db_path, store::Database::Mode::read_only);
    engine::Settings settings = ctx.settings;
    if (settings.reasons < 15) settings.reasons = 15;
    engine::Filter filter(db, settings);
    const auto c = filter.classify(m->raw);
    const auto& snap = filter.model()->snapshot;
    std::printf("%s: %s, P(spam) = %s, log-odds = %s\n", m->label.c_str(), model::to_string(c.score.verdict),
                number(c.score.probability, 6).c_str(), number(c.score.log_odds, 6).c_str());
    std::printf("model: %llu spam and %llu ham messages learned, %zu features; prior log-odds %s\n",
                static_cast<unsigned long long>(snap.messages().spam), static_cast<unsigned long long>(snap.messages().ham),
                snap.vocabulary(), number(snap.prior_log_odds(), 4).c_str());
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
    table("toward spam:", c.toward_spam);
    table("toward ham:", c.toward_ham);
    if (c.prefix_only) std::printf("\nnote: a parsing limit was hit; scored on what was read\n");
    return exit_ok;
}

int cmd_tokens(const Context& ctx, const std::vector<std::string>& rest) {
    auto m = one_message("tokens", rest);
    if (!m) usage_error("tokens: no message");
    if (!m->error.empty()) return report(m->label, m->error), exit_input;
    const auto problem = engine::check_message(m->raw, m->size_bytes, ctx.settings.limits);
    if (problem == engine::MessageProblem::empty || problem == engine::MessageProblem::not_a_message) {
        return report(m->label, engine::describe(problem)), exit_input;
    }
    // Contacts come from the database when there is one; tokens works without it.
    std::optional<store::Database> db;
    store::ContactSet contacts;
    if (std::filesystem::exists(ctx.db_path)) {
        db.emplace(ctx.db_path, store::Database::Mode::read_only);
        contacts = db->load_contacts();
    }
    const auto parsed = mime::parse(m->raw, ctx.settings.limits);
    const auto bag = features::extract(parsed, nullptr, &contacts, ctx.settings.features);
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

int cmd_stats(const Context& ctx, const std::vector<std::string>& rest) {
    bool json = false;
    for (const auto& s : rest) {
        if (s == "--json") json = true;
        else usage_error("stats: unknown argument '" + s + "'");
    }
    store::Database db(ctx.db_path, store::Database::Mode::read_only);
    const auto st = db.statistics();
    const std::string path = std::filesystem::absolute(ctx.db_path).string();
    const std::int64_t now = std::time(nullptr);
    const struct {
        const char* name;
        store::CorrectionCounts counts;
    } periods[] = {{"day", db.corrections_since(now - 86400)},
                   {"week", db.corrections_since(now - 7 * 86400)},
                   {"all", db.corrections_since(0)}};
    const auto counters = db.counters();
    auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    if (json) {
        std::ostringstream out;
        out << "{\"database\":\"" << json_escape(path) << "\",\"database_from\":\"" << json_escape(ctx.db_source)
            << "\",\"file_bytes\":" << st.file_bytes << ",\"schema_version\":" << st.schema_version
            << ",\"messages\":{\"spam\":" << st.messages.spam << ",\"ham\":" << st.messages.ham << "}"
            << ",\"feature_occurrences\":{\"spam\":" << st.occurrences.spam << ",\"ham\":" << st.occurrences.ham << "}"
            << ",\"distinct_features\":" << st.distinct_features << ",\"contacts\":" << st.contacts
            << ",\"signatures\":" << st.signatures << ",\"corrections\":{";
        for (std::size_t i = 0; i < std::size(periods); ++i) {
            const auto& c = periods[i].counts;
            out << (i ? "," : "") << "\"" << periods[i].name << "\":{\"false_positives\":" << c.false_positives
                << ",\"false_negatives\":" << c.false_negatives << ",\"unsure_to_spam\":" << c.unsure_to_spam
                << ",\"unsure_to_ham\":" << c.unsure_to_ham << "}";
        }
        out << "},\"daemon\":{";
        for (std::size_t i = 0; i < counters.size(); ++i) {
            out << (i ? "," : "") << "\"" << json_escape(counters[i].first) << "\":" << counters[i].second;
        }
        out << "}}\n";
        std::cout << out.str();
        return exit_ok;
    }
    std::printf("database:          %s (from %s)\n", path.c_str(), ctx.db_source.c_str());
    std::printf("file size:         %llu bytes\n", u(st.file_bytes));
    std::printf("schema version:    %d\n", st.schema_version);
    std::printf("messages learned:  %llu spam, %llu ham\n", u(st.messages.spam), u(st.messages.ham));
    std::printf("features learned:  %llu spam, %llu ham (occurrences)\n", u(st.occurrences.spam), u(st.occurrences.ham));
    std::printf("distinct features: %llu\n", u(st.distinct_features));
    std::printf("contacts:          %llu\n", u(st.contacts));
    std::printf("signatures kept:   %llu\n", u(st.signatures));
    std::printf("\ncorrections of mailsiftd's verdicts:\n  %-6s %16s %16s %14s %14s\n", "", "false positives",
                "false negatives", "unsure->spam", "unsure->ham");
    for (const auto& p : periods) {
        std::printf("  %-6s %16llu %16llu %14llu %14llu\n", p.name, u(p.counts.false_positives),
                    u(p.counts.false_negatives), u(p.counts.unsure_to_spam), u(p.counts.unsure_to_ham));
    }
    std::int64_t scored = 0;
    for (const auto& [name, value] : counters) {
        if (name == "messages") scored = value;
    }
    std::printf("\nmailsiftd counters (all time):\n");
    if (counters.empty()) std::printf("  (none yet)\n");
    for (const auto& [name, value] : counters) std::printf("  %-22s %lld\n", name.c_str(), static_cast<long long>(value));
    if (scored > 0) {
        // Error rates among scored messages, as corrections revealed them.
        const auto& all = periods[2].counts;
        std::printf("\nobserved error rates (all time): false positives %.3f%%, false negatives %.3f%% of %lld scored\n",
                    100.0 * static_cast<double>(all.false_positives) / static_cast<double>(scored),
                    100.0 * static_cast<double>(all.false_negatives) / static_cast<double>(scored),
                    static_cast<long long>(scored));
    }
    return exit_ok;
}

int cmd_contacts(const Context& ctx, const std::vector<std::string>& rest) {
    if (rest.empty()) usage_error("contacts: say add, remove or list");
    const std::string& action = rest[0];
    if (action == "list") {
        if (rest.size() > 1) usage_error("contacts list: takes no addresses");
        store::Database db(ctx.db_path, store::Database::Mode::read_only);
        for (const auto& c : db.contacts()) {
            char when[32] = "";
            const std::time_t t = static_cast<std::time_t>(c.added_at);
            std::tm tm{};
            gmtime_r(&t, &tm);
            std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
            std::printf("%s\t%s\t%s\n", c.address.c_str(), c.source.c_str(), when);
        }
        return exit_ok;
    }
    if (action != "add" && action != "remove") usage_error("contacts: unknown action '" + action + "'");
    if (rest.size() < 2) usage_error("contacts " + action + ": give one or more addresses");
    store::Database db(ctx.db_path, store::Database::Mode::read_write);
    int status = exit_ok;
    for (std::size_t i = 1; i < rest.size(); ++i) {
        const std::string address = features::address_in(rest[i]);
        if (address.empty()) {
            report(rest[i], "not an email address");
            status = exit_input;
            continue;
        }
        if (action == "add") {
            if (!db.add_contact(address, "manual", std::time(nullptr))) report(address, "already a contact");
        } else if (!db.remove_contact(address)) {
            report(address, "not a contact");
        }
    }
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    std::ios::sync_with_stdio(false);
    Global g;
    Args a;
    int i = 1;
    for (; i < argc; ++i) {
        const std::string s = argv[i];
        if (s == "-h" || s == "--help") {
            std::cout << main_help;
            return exit_ok;
        }
        if (s == "--version") {
            std::cout << "mailsift 0.1.0\n";
            return exit_ok;
        }
        if (s == "--db" || s == "--config") {
            if (i + 1 >= argc) usage_error(s + " needs a path");
            (s == "--db" ? g.db : g.config) = argv[++i];
            continue;
        }
        if (s.rfind("--db=", 0) == 0) { g.db = s.substr(5); continue; }
        if (s.rfind("--config=", 0) == 0) { g.config = s.substr(9); continue; }
        if (!s.empty() && s[0] == '-') usage_error("unknown option '" + s + "'");
        a.command = s;
        break;
    }
    if (a.command.empty()) usage_error("no command given");
    for (++i; i < argc; ++i) a.rest.emplace_back(argv[i]);

    for (const auto& h : command_help) {
        if (a.command == h.name) {
            for (const auto& r : a.rest) {
                if (r == "-h" || r == "--help") {
                    std::cout << h.text;
                    return exit_ok;
                }
            }
        }
    }
    try {
        const Context ctx = resolve(g);
        if (a.command == "learn" || a.command == "unlearn") return cmd_train(ctx, a.command, a.rest);
        if (a.command == "correct") return cmd_correct(ctx, a.rest);
        if (a.command == "classify") return cmd_classify(ctx, a.rest);
        if (a.command == "explain") return cmd_explain(ctx, a.rest);
        if (a.command == "tokens") return cmd_tokens(ctx, a.rest);
        if (a.command == "stats") return cmd_stats(ctx, a.rest);
        if (a.command == "contacts") return cmd_contacts(ctx, a.rest);
        usage_error("unknown command '" + a.command + "'");
    } catch (const engine::ConfigError& e) {
        std::cerr << "mailsift: " << e.what() << "\n";
        return exit_environment;
    } catch (const store::Error& e) {
        std::cerr << "mailsift: " << e.what() << "\n";
        return exit_environment;
    } catch (const std::bad_alloc&) {
        std::cerr << "mailsift: out of memory\n";
        return exit_environment;
    }
}
