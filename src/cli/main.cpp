// mailsift — the command-line companion: learn, unlearn, classify, explain,
// tokens, stats, contacts, and the administration commands top, prune,
// export, import and backup. Argument parsing and output formats live here;
// all mail logic is in the engine, all SQL in the store.
//
// Exit codes (also in man/mailsift.1):
//   0 success (a message already learned is success)
//   1 some input could not be read or used; the rest was processed
//   2 usage error
//   3 database or configuration error; the failing batch changed nothing
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "mailsift/engine/filter.hpp"
#include "mailsift/evaluation/metrics.hpp"
#include "mailsift/evaluation/plots.hpp"
#include "mailsift/evaluation/runner.hpp"
#include "mailsift/evaluation/tuner.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/store/database.hpp"
#include "message_source.hpp"
#include "pipeline.hpp"

namespace {

using namespace mailsift;

constexpr int exit_ok = 0, exit_input = 1, exit_usage = 2, exit_environment = 3;

const char* const main_help = R"(usage: mailsift [--db PATH] [--config PATH] COMMAND [ARGS]

Train and run the mailsift naive-Bayes spam filter.

commands:
  learn    (--spam|--ham) [--files-from LIST] [PATH...] | --index FILE
                                                          learn messages as spam or ham
  unlearn  (--spam|--ham) [--files-from LIST] [PATH...]  forget messages learned as spam or ham
  correct  (--spam|--ham) [--quiet] [--signature ID]... [PATH...]
                                                          correct mailsiftd's verdict on messages
  evaluate (--spam DIR --ham DIR | --index FILE) [--split every:N|fraction:F | --folds K] [--json]
                                                          measure accuracy on a labelled corpus
  tune     (--spam DIR --ham DIR | --index FILE) [--budget SECONDS] [--seed N]
                                                          search settings on held-out training data
  classify [--json] [--files-from LIST] [PATH...]         print a verdict per message
  explain  PATH                                           show why a message scores as it does
  tokens   PATH | --signature ID                          print the features of one message
  stats    [--json]                                       show what the database holds
  contacts (add|remove|list) [ADDRESS...] | import FILE   manage known correspondents
  top      [--spam|--ham] [--min-count K] [N]             the most telling features
  prune    [--signatures-older-than DAYS] [--features-unseen-days DAYS]
                                                          expire signatures and one-off features
  export   FILE                                           write the whole model as text
  import   FILE                                           load an export into an empty database
  backup   [--force] FILE                                 copy the live database to FILE

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
       mailsift learn --index FILE

Learn each message as spam or ham. A message already learned with the same
label is left as it is (success); one learned with the other label is moved.
Senders of messages learned as ham become contacts. Messages are committed in
batches (batch_messages, default 5000): an error rolls back only its batch.
With train_margin > 0 (thick-threshold training), a message the model already
scores on the right side by at least that many log-odds is not learned
("already known"); errors and messages within the margin are.
--index FILE learns a labelled corpus in its order, each message with its own
label: TREC lines "spam PATH" or "ham PATH", PATH relative to FILE (a file,
an mbox or a folder, all of it with that label). Learning
mail in the order it arrived, rather than all of one class first, is what
train_margin is made for.
)"},
    {"unlearn", R"(usage: mailsift unlearn (--spam|--ham) [--files-from LIST] [PATH...]

Forget messages previously learned with that label. A message that was not
learned so is reported and left alone (success).
)"},
    {"correct", R"(usage: mailsift correct (--spam|--ham) [--quiet] [--signature ID]... [--files-from LIST] [PATH...]

Correct mailsiftd's verdict. A message carrying an X-Mailsift-Signature that
the database knows is trained on exactly the features mailsiftd scored (so
headers added later by delivery or the mail client do not matter), and the
correction counts toward the error rates in 'mailsift stats'; any other
message is learned as it is (a tagged one under its signature, so that the
scan, written every stats_interval, finds it learned). A message already
learned in the other class is moved; one already in the requested class is a
success with a note.
--signature ID corrects a scan without the message (repeatable). With neither
PATH nor --signature, one message is read from standard input, as a Dovecot
IMAPSieve or sieve-pipe rule sends it. --quiet prints nothing but errors: no
summary, no note for a message already learned (what a pipe program wants, as
Dovecot logs anything on standard error as an error).
)"},
    {"evaluate", R"(usage: mailsift evaluate (--spam PATH... --ham PATH... | --index FILE)
                         [--split every:N | --split fraction:F | --split head:F |
                          --folds K | --online [--train-on-error]]
                         [--train-margin LOG_ODDS] [--json] [--plot DIR]
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
--train-margin overrides it (0 learns every message). Reports n, AUC, 1-ROCA%, false positive and
negative rates at the configured thresholds, unsure share, FNR at FPR <= 0.1%
and <= 1%, lam%, a confusion table, a reliability table (predicted P(spam) vs
observed spam share) with its expected calibration error and worst bin of at
least 30 messages, and throughput; --json prints it as one JSON object.
--plot DIR writes roc.svg (log-scale false-positive rate), histogram.svg
(log-odds by class) and reliability.svg there. --scores FILE writes one line
per tested message, in the order tested: PATH, label, verdict, P(spam) and
log-odds, tab-separated. Progress is shown on a terminal only.
)"},
    {"tune", R"(usage: mailsift tune (--spam PATH... --ham PATH... | --index FILE)
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
       mailsift tokens --signature ID

Print every feature of one message with its count (FEATURE<TAB>COUNT), as the
model sees it. With --signature, print instead the features mailsiftd scored
and recorded under that X-Mailsift-Signature: what a correction of it trains.
)"},
    {"stats", R"(usage: mailsift stats [--json]

Show the database used, its size and schema version, messages and features
learned per class, and the number of contacts.
)"},
    {"contacts", R"(usage: mailsift contacts (add|remove|list) [ADDRESS...]
       mailsift contacts import FILE

add and remove take addresses; list prints ADDRESS<TAB>SOURCE<TAB>ADDED (UTC).
import reads FILE ('-' for standard input): one address per line (blank lines
and '#' comments ignored) or vCards, whose EMAIL lines are used (EMAIL:,
EMAIL;TYPE=work:, in any case). Imported contacts have the source 'imported'.
Prints how many were added and how many were already there; a line that is
not an address is reported as FILE:LINE (exit 1), the others are imported.
)"},
    {"top", R"(usage: mailsift top [--spam|--ham] [--min-count K] [N]

Print the N (default 20) features that point most strongly toward spam and
toward ham (only one direction with --spam or --ham), ranked by the model's
smoothed log-odds weight ln P(f|spam) - ln P(f|ham), among the features seen
at least K times in all (default 5) so that one-off tokens do not dominate.
Counts are in the columns the configured term_frequency uses: messages
containing the feature (boolean) or occurrences (raw). Each line gives RANK,
WEIGHT, SPAM count, HAM count and FEATURE.
)"},
    {"prune", R"(usage: mailsift prune [--signatures-older-than DAYS] [--features-unseen-days DAYS]

In one transaction, delete the signatures mailsiftd recorded more than DAYS
ago (default: signature_days of the configuration, 14), and the features
seen exactly once in all (one occurrence, in either class) that have not
been learned for DAYS (default 90). The class totals drop by what the removed
features held, so the model stays consistent; learned messages that named
them can still be unlearned exactly. Prints what was removed.
)"},
    {"export", R"(usage: mailsift export FILE

Write the whole model (class totals, features, learned messages with their
feature lists, contacts) to FILE ('-' for standard output) in the text format
described in mailsift(1), FORMAT. FILE is created mode 0640 or replaced.
Signatures, corrections and mailsiftd's counters are not part of it.
)"},
    {"import", R"(usage: mailsift import FILE

Load a model written by 'mailsift export' from FILE ('-' for standard input)
into a new or empty database, in one transaction. A database that already
holds a model is refused (exit 3). A line not in the format is reported as
FILE:LINE: what is wrong (exit 1), and the database is left as it was.
)"},
    {"backup", R"(usage: mailsift backup [--force] FILE

Copy the database to FILE with SQLite's online backup API while mailsiftd and
others may go on writing; the copy holds what was committed when it began.
It is written beside FILE and moved into place when complete. An existing
FILE is refused (exit 1) unless --force.
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

// A TREC index: lines "spam PATH" or "ham PATH", PATH relative to the index's
// folder, in the order given. Exits with exit_input, naming the line, when the
// file is unreadable or a line is not of that form.
struct IndexEntry {
    std::string path;
    bool spam = false;
};

std::vector<IndexEntry> read_index(const std::filesystem::path& index) {
    std::ifstream in(index);
    if (!in) {
        std::cerr << "mailsift: " << index.string() << ": cannot read index\n";
        std::exit(exit_input);
    }
    std::vector<IndexEntry> out;
    std::string line;
    for (std::size_t n = 1; std::getline(in, line); ++n) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        const auto sp = line.find(' ');
        const std::string kind = line.substr(0, sp);
        if (sp == std::string::npos || (kind != "spam" && kind != "ham")) {
            std::cerr << "mailsift: " << index.string() << ":" << n << ": expected 'spam PATH' or 'ham PATH'\n";
            std::exit(exit_input);
        }
        out.push_back({(index.parent_path() / line.substr(sp + 1)).string(), kind == "spam"});
    }
    return out;
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
    // learn --index FILE: a labelled corpus learned in its order, each message
    // with its own label (thick-threshold training wants arrival order, not
    // all of one class first).
    std::unordered_map<std::string, store::Class> index_labels;  // message file -> its label
    MessageArgs args;
    if (const auto at = std::find(rest.begin(), rest.end(), "--index"); learning && at != rest.end()) {
        if (at + 1 == rest.end()) usage_error("learn: --index needs a file");
        if (rest.size() != 2) usage_error("learn: --index takes no --spam, --ham, --files-from or PATH besides");
        const std::filesystem::path index = *(at + 1);
        for (const auto& e : read_index(index)) {
            // An entry may be a folder: each message file in it gets the entry's label.
            std::vector<std::string> files{e.path};
            try {
                files = cli::list_message_files(e.path);
            } catch (const std::exception&) {
                // unreadable: reported, and counted as refused, when it is read
            }
            for (auto& f : files) {
                index_labels[f] = e.spam ? store::Class::spam : store::Class::ham;
                args.paths.push_back(std::move(f));
            }
        }
        if (args.paths.empty()) usage_error("learn: " + index.string() + " lists no message");
    } else {
        args = parse_message_args(command, rest, true, false);
    }
    const bool by_index = !index_labels.empty();
    // The label of an input message in --index mode: its file's, also for PATH#N of an mbox.
    auto label_of = [&](const std::string& input_label) -> std::optional<store::Class> {
        auto it = index_labels.find(input_label);
        if (it == index_labels.end()) it = index_labels.find(input_label.substr(0, input_label.rfind('#')));
        if (it == index_labels.end()) return std::nullopt;
        return it->second;
    };
    std::size_t learned_by_class[2] = {0, 0};  // --index: [spam, ham]
    store::Database db(ctx.db_path, store::Database::Mode::read_write);
    engine::Trainer trainer(db, ctx.settings);
    const std::int64_t now = std::time(nullptr);
    int status = exit_ok;
    std::size_t n_refused = 0;  // inputs that are not mail (or not readable); the rest is learned
    try {
    if (learning) {
        // Parsing and features on every core; the database, in input order, on this thread.
        const std::function<engine::Trainer::Prepared(const cli::InputMessage&)> prepare =
            [&](const cli::InputMessage& m) {
                return m.error.empty() ? trainer.prepare(m.raw, m.size_bytes) : engine::Trainer::Prepared{};
            };
        const std::function<bool(cli::InputMessage&, engine::Trainer::Prepared&)> learn =
            [&](cli::InputMessage& m, engine::Trainer::Prepared& p) {
                if (!m.error.empty()) {
                    report(m.label, m.error);
                    ++n_refused;
                    status = exit_input;
                    return true;
                }
                // "Already learned" is success: a mail client moving a message twice must not see a failure.
                const std::optional<store::Class> label = by_index ? label_of(m.label) : args.label;
                if (!label) {  // not reachable: every input path is an index entry's
                    report(m.label, "no label for it in the index; not learned");
                    ++n_refused;
                    status = exit_input;
                    return true;
                }
                const store::Class c = *label;
                const auto outcome = trainer.learn_prepared(p, c, now);
                if (outcome.problem == engine::MessageProblem::none && !outcome.confident &&
                    outcome.result != store::LearnResult::already_learned) {
                    ++learned_by_class[c == store::Class::spam ? 0 : 1];
                }
                if (outcome.problem != engine::MessageProblem::none) {
                    report(m.label, std::string(engine::describe(outcome.problem)) + "; not learned");
                    ++n_refused;
                    status = exit_input;
                }
                return true;
            };
        cli::for_each_message_parallel<engine::Trainer::Prepared>(
            args.paths, ctx.settings.limits.max_message_bytes, cli::worker_threads(), prepare, learn);
    } else {
        cli::for_each_message(args.paths, ctx.settings.limits.max_message_bytes, [&](cli::InputMessage& m) {
            if (!m.error.empty()) {
                report(m.label, m.error);
                status = exit_input;
                return true;
            }
            const auto r = trainer.unlearn(m.raw, *args.label);
            if (r == store::UnlearnResult::not_learned) {
                report(m.label, std::string("was not learned as ") + store::to_string(*args.label) + "; nothing to unlearn");
            } else if (r == store::UnlearnResult::learned_as_other_class) {
                report(m.label, std::string("is learned as ") +
                                    (*args.label == store::Class::spam ? "ham" : "spam") + ", not " +
                                    store::to_string(*args.label) + "; left as it is");
            }
            return true;
        });
    }
    trainer.commit();
    } catch (const store::Error& e) {
        // Say what is kept: every batch committed before the error; the open one rolled back.
        const auto& done = trainer.committed();
        const std::size_t lost = trainer.in_batch();
        std::cerr << "mailsift: " << e.what() << "\nmailsift: " << command << " stopped: "
                  << (learning ? done.learned + done.moved : done.unlearned) << " message(s) "
                  << (learning ? "learned" : "unlearned") << " in earlier batches are kept, the batch in progress ("
                  << lost << " message(s)) was rolled back; run the same command again to go on\n";
        return exit_environment;
    }
    const auto& c = trainer.counts();
    if (learning && by_index) {
        // learned and moved together, by the label they now have
        std::cout << "learned " << learned_by_class[0] << " as spam and " << learned_by_class[1] << " as ham ("
                  << c.moved << " of them moved from the other class), " << c.already_learned << " already learned";
        if (c.confident > 0) std::cout << ", " << c.confident << " already known (scored right beyond train_margin)";
        if (n_refused > 0) std::cout << ", " << n_refused << " refused (not mail or not readable: see above)";
        std::cout << "\n";
    } else if (learning) {
        std::cout << "learned " << c.learned << " as " << store::to_string(*args.label) << ", " << c.moved
                  << " moved from " << (*args.label == store::Class::spam ? "ham" : "spam") << ", "
                  << c.already_learned << " already learned";
        if (c.confident > 0) std::cout << ", " << c.confident << " already known (scored right beyond train_margin)";
        if (n_refused > 0) std::cout << ", " << n_refused << " refused (not mail or not readable: see above)";
        std::cout << "\n";
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
    bool quiet = false;
    for (std::size_t i = 0; i < rest.size(); ++i) {
        if (rest[i] == "--quiet" || rest[i] == "-q") {
            quiet = true;
        } else if (rest[i] == "--signature") {
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
    std::size_t by_signature = 0, as_message = 0, confirmed = 0;
    auto note_result = [&](const std::string& label, const engine::Trainer::CorrectOutcome& o) {
        if (quiet) return;
        if (o.confirmed) {
            ++confirmed;
            report(label, std::string("mailsiftd already said ") + store::to_string(to) +
                              " with confidence; not trained (train_on_error)");
        } else if (o.result == store::LearnResult::already_learned) {
            report(label, std::string("already learned as ") + store::to_string(to));
        }
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
            report(text, "unknown signature (not written yet: mailsiftd writes scans every stats_interval; "
                         "or expired, pruned, or scanned with another database)");
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
        note_result(m.label, o);
        return true;
    });
    trainer.commit();
    if (quiet) return status;
    const auto& c = trainer.counts();
    std::cout << "corrected to " << store::to_string(to) << ": " << by_signature << " by signature, " << as_message
              << " as the message; " << c.learned << " learned, " << c.moved << " moved, " << c.already_learned
              << " already " << store::to_string(to);
    if (confirmed > 0) std::cout << ", " << confirmed << " confirmed without training";
    std::cout << "\n";
    return status;
}

// The labelled corpus of evaluate and tune: --spam PATH... --ham PATH... or
// --index FILE. Consumes those arguments from `args` and returns the rest.
struct CorpusArgs {
    std::vector<evaluation::LabelledMessage> corpus;
    std::vector<std::string> rest;
};

CorpusArgs take_corpus(const std::string& command, const std::vector<std::string>& args) {
    CorpusArgs out;
    bool have_index = false;
    // Which list bare paths after --spam/--ham belong to: 0 none, 1 spam, 2 ham.
    int label = 0;
    auto add_path = [&](const std::string& path, bool spam) {
        try {
            for (auto& f : cli::list_message_files(path)) out.corpus.push_back({std::move(f), spam});
        } catch (const std::exception& e) {
            std::cerr << "mailsift: " << e.what() << "\n";
            std::exit(exit_input);
        }
    };
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= args.size()) usage_error(command + ": " + a + " needs a value");
            return args[++i];
        };
        if (a == "--spam" || a == "--ham") {
            const bool spam = a == "--spam";
            label = spam ? 1 : 2;
            add_path(value(), spam);
        } else if (a == "--index") {
            have_index = true;
            for (auto& e : read_index(value())) out.corpus.push_back({std::move(e.path), e.spam});
        } else if (label != 0 && !a.empty() && a[0] != '-') {
            add_path(a, label == 1);  // more paths for the last --spam/--ham
        } else {
            out.rest.push_back(a);
            if (a == "--split" || a == "--folds" || a == "--plot" || a == "--budget" || a == "--seed") {
                if (i + 1 < args.size()) out.rest.push_back(args[++i]);
            }
            label = 0;
        }
    }
    if (!have_index) {
        // The development split's order: all paths sorted.
        std::sort(out.corpus.begin(), out.corpus.end(), [](const auto& x, const auto& y) { return x.path < y.path; });
    }
    std::size_t n_spam = 0;
    for (const auto& m : out.corpus) n_spam += m.spam ? 1 : 0;
    if (n_spam == 0 || n_spam == out.corpus.size()) usage_error(command + ": needs both spam and ham messages");
    return out;
}

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

int cmd_evaluate(const Context& ctx, const std::vector<std::string>& args) {
    const CorpusArgs parsed = take_corpus("evaluate", args);
    const auto& corpus = parsed.corpus;
    const auto& rest = parsed.rest;
    evaluation::Plan plan;
    bool json = false;
    std::optional<std::filesystem::path> plot_dir, scores_file;
    std::optional<double> train_margin;
    for (std::size_t i = 0; i < rest.size(); ++i) {
        const std::string& a = rest[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= rest.size()) usage_error("evaluate: " + a + " needs a value");
            return rest[++i];
        };
        if (a == "--split") {
            const std::string v = value();
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
        } else if (a == "--folds") {
            try {
                plan.mode = evaluation::Plan::Mode::folds;
                plan.folds = std::stoul(value());
            } catch (const std::exception&) {
                plan.folds = 0;
            }
            if (plan.folds < 2) usage_error("evaluate: --folds takes a number of folds, at least 2");
        } else if (a == "--online") {
            plan.mode = evaluation::Plan::Mode::online;
        } else if (a == "--train-on-error") {
            plan.train_on_error = true;
        } else if (a == "--json") {
            json = true;
        } else if (a == "--plot") {
            plot_dir = value();
        } else if (a == "--train-margin") {
            try {
                train_margin = std::stod(value());
            } catch (const std::exception&) {
                train_margin = -1;
            }
            if (!(*train_margin >= 0)) usage_error("evaluate: --train-margin takes log-odds >= 0");
        } else if (a == "--scores") {
            scores_file = value();
        } else {
            usage_error("evaluate: unknown argument '" + a + "'");
        }
    }
    if (plan.train_on_error && plan.mode != evaluation::Plan::Mode::online) {
        usage_error("evaluate: --train-on-error goes with --online");
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
        [&](const std::string& path) { return cli::read_message_file(path, max_bytes); },
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
        std::ostringstream o;
        o << "{\"messages\":" << r.messages << ",\"spam\":" << r.spam << ",\"ham\":" << r.ham
          << ",\"trained\":" << run.trained << ",\"unusable\":" << run.unreadable << ",\"auc\":" << number(r.auc, 10)
          << ",\"one_minus_roca_percent\":" << number(r.one_minus_roca_percent, 6)
          << ",\"false_positive_percent\":" << number(r.false_positive_percent)
          << ",\"false_negative_percent\":" << number(r.false_negative_percent)
          << ",\"unsure_percent\":" << number(r.unsure_percent)
          << ",\"fnr_at_fpr_0.1_percent\":" << number(r.fnr_at_fpr_01_percent)
          << ",\"fnr_at_fpr_1_percent\":" << number(r.fnr_at_fpr_1_percent) << ",\"lam_percent\":" << number(r.lam_percent)
          << ",\"confusion\":{\"spam\":{\"spam\":" << c.spam_as_spam << ",\"unsure\":" << c.spam_as_unsure
          << ",\"ham\":" << c.spam_as_ham << "},\"ham\":{\"spam\":" << c.ham_as_spam << ",\"unsure\":" << c.ham_as_unsure
          << ",\"ham\":" << c.ham_as_ham << "}},\"reliability\":[";
        for (std::size_t i = 0; i < r.reliability.size(); ++i) {
            const auto& b = r.reliability[i];
            o << (i ? "," : "") << "{\"low\":" << number(b.low) << ",\"high\":" << number(b.high)
              << ",\"messages\":" << b.messages << ",\"mean_predicted\":" << number(b.mean_predicted)
              << ",\"observed_spam\":" << number(b.observed_spam) << "}";
        }
        o << "],\"expected_calibration_error\":" << number(r.expected_calibration_error, 6) << ",\"worst_bin\":";
        if (r.worst_bin) {
            const auto& b = r.reliability[*r.worst_bin];
            o << "{\"low\":" << number(b.low) << ",\"high\":" << number(b.high) << ",\"messages\":" << b.messages
              << ",\"gap\":" << number(r.worst_bin_gap, 6) << "}";
        } else {
            o << "null";
        }
        o << ",\"train_messages_per_second\":" << number(train_rate) << ",\"score_messages_per_second\":"
          << number(score_rate) << "}\n";
        std::cout << o.str();
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
    std::printf("\nthroughput        train %.0f msgs/s, score %.0f msgs/s\n", train_rate, score_rate);
    return exit_ok;
}

int cmd_tune(const Context& ctx, const std::vector<std::string>& args) {
    const CorpusArgs parsed = take_corpus("tune", args);
    evaluation::TuneOptions options;
    bool json = false;
    for (std::size_t i = 0; i < parsed.rest.size(); ++i) {
        const std::string& a = parsed.rest[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= parsed.rest.size()) usage_error("tune: " + a + " needs a value");
            return parsed.rest[++i];
        };
        try {
            if (a == "--budget") {
                const long b = std::stol(value());
                if (b < 1) throw std::out_of_range("budget");
                options.budget = std::chrono::seconds(b);
            } else if (a == "--seed") {
                options.seed = std::stoull(value());
            } else if (a == "--json") {
                json = true;
            } else {
                usage_error("tune: unknown argument '" + a + "'");
            }
        } catch (const std::logic_error&) {
            usage_error("tune: " + a + " takes a positive whole number");
        }
    }
    const TempDir dir;
    const auto max_bytes = ctx.settings.limits.max_message_bytes;
    const bool terminal = ::isatty(STDERR_FILENO) != 0;  // progress on a terminal only
    const auto result = evaluation::tune(
        parsed.corpus, ctx.settings, options, dir.path,
        [&](const std::string& path) { return cli::read_message_file(path, max_bytes); },
        [&](std::size_t trial, std::size_t) {
            if (terminal) std::cerr << "tune: trial " << trial << "\r" << std::flush;
        });
    if (terminal) std::cerr << "\n";
    const auto& r = result.report;
    if (json) {
        std::ostringstream o;
        o << "{\"trials\":[";
        for (std::size_t i = 0; i < result.trials.size(); ++i) {
            const auto& t = result.trials[i];
            o << (i ? "," : "") << "{\"change\":\"" << json_escape(t.change) << "\",\"one_minus_roca_percent\":"
              << number(t.report.one_minus_roca_percent) << ",\"fnr_at_fpr_0.1_percent\":"
              << number(t.report.fnr_at_fpr_01_percent) << ",\"kept\":" << (t.kept ? "true" : "false") << "}";
        }
        o << "],\"best\":{\"one_minus_roca_percent\":" << number(r.one_minus_roca_percent)
          << ",\"fnr_at_fpr_0.1_percent\":" << number(r.fnr_at_fpr_01_percent)
          << ",\"expected_calibration_error\":" << number(r.expected_calibration_error, 6) << ",\"worst_bin_gap\":";
        if (r.worst_bin) o << number(r.worst_bin_gap, 6);
        else o << "null";
        o << "},\"config\":[";
        for (std::size_t i = 0; i < result.config_lines.size(); ++i) {
            o << (i ? "," : "") << "\"" << json_escape(result.config_lines[i]) << "\"";
        }
        o << "],\"budget_spent\":" << (result.budget_spent ? "true" : "false") << "}\n";
        std::cout << o.str();
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
    // Parsing, features and scoring run on every core; reports and output in input order.
    struct Scored {
        engine::MessageProblem problem = engine::MessageProblem::none;
        engine::Classification classification;
    };
    const std::function<Scored(const cli::InputMessage&)> work = [&](const cli::InputMessage& m) {
        Scored r;
        if (!m.error.empty()) return r;
        r.problem = engine::check_message(m.raw, m.size_bytes, settings.limits);
        if (engine::refused(r.problem)) return r;
        r.classification = filter.classify(m.raw);
        return r;
    };
    const std::function<bool(cli::InputMessage&, Scored&)> print = [&](cli::InputMessage& m, Scored& r) {
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
                                std::to_string(settings.limits.max_message_bytes) + " bytes");
        }
        const engine::Classification& c = r.classification;
        if (c.truncated) {
            report(m.label, std::string("note: ") + engine::describe(engine::MessageProblem::truncated_mime) +
                                "; scored on what was read");
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
    };
    cli::for_each_message_parallel<Scored>(args.paths, settings.limits.max_message_bytes, cli::worker_threads(), work,
                                           print);
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
    if (engine::refused(problem)) return report(m->label, engine::describe(problem)), exit_input;
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

// tokens --signature ID: the recorded scan, as correct would train it.
int recorded_tokens(const Context& ctx, const std::vector<std::string>& rest) {
    if (rest.size() != 2) usage_error("tokens: --signature takes one id and no message");
    const auto id = engine::parse_signature(rest[1]);
    if (!id) usage_error("tokens: '" + rest[1] + "' is not a signature (32 hexadecimal digits)");
    store::Database db(ctx.db_path, store::Database::Mode::read_only);
    const auto scan = db.find_scan(*id);
    if (!scan) {
        report(rest[1], "no scan recorded under this signature (not written yet, expired, pruned, "
                        "or scanned with another database)");
        return exit_input;
    }
    std::cout << scan->features;
    return exit_ok;
}

int cmd_tokens(const Context& ctx, const std::vector<std::string>& rest) {
    if (!rest.empty() && rest[0] == "--signature") return recorded_tokens(ctx, rest);
    auto m = one_message("tokens", rest);
    if (!m) usage_error("tokens: no message");
    if (!m->error.empty()) return report(m->label, m->error), exit_input;
    const auto problem = engine::check_message(m->raw, m->size_bytes, ctx.settings.limits);
    if (engine::refused(problem)) return report(m->label, engine::describe(problem)), exit_input;
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

// Latency percentile from mailsiftd's bucket counters ("latency_ms_le_N"): the
// upper bound of the bucket holding that share of messages; -1 when none, and
// infinity when it lies past the last bound.
double latency_percentile(const std::vector<std::pair<std::string, std::int64_t>>& counters, double share) {
    std::vector<std::pair<double, std::int64_t>> buckets;
    std::int64_t total = 0;
    for (const auto& [name, n] : counters) {
        if (name.rfind("latency_ms_le_", 0) == 0) buckets.emplace_back(std::stod(name.substr(14)), n);
        else if (name == "latency_ms_gt_250") buckets.emplace_back(HUGE_VAL, n);
        else continue;
        total += n;
    }
    if (total == 0) return -1;
    std::sort(buckets.begin(), buckets.end());
    std::int64_t seen = 0;
    for (const auto& [bound, n] : buckets) {
        seen += n;
        if (static_cast<double>(seen) >= share * static_cast<double>(total)) return bound;
    }
    return HUGE_VAL;
}

// Why `user` ("" = whoever runs this) could not write the database, or "" when it can:
// mailsiftd records its signatures and counters there. Judged from the file
// modes, the way the kernel would (root may write anything).
std::string write_problem(const std::filesystem::path& db, const std::string& user) {
    uid_t uid = ::geteuid();
    std::vector<gid_t> groups;
    if (user.empty()) {
        groups.resize(static_cast<std::size_t>(std::max(0, ::getgroups(0, nullptr))) + 1);
        groups.resize(static_cast<std::size_t>(std::max(0, ::getgroups(static_cast<int>(groups.size()), groups.data()))));
        groups.push_back(::getegid());
    } else {
        const struct passwd* pw = ::getpwnam(user.c_str());
        if (pw == nullptr) return "user " + user + " does not exist";
        uid = pw->pw_uid;
        int n = 64;
        groups.resize(static_cast<std::size_t>(n));
        if (::getgrouplist(user.c_str(), pw->pw_gid, groups.data(), &n) < 0) {
            groups.resize(static_cast<std::size_t>(n));
            ::getgrouplist(user.c_str(), pw->pw_gid, groups.data(), &n);
        }
        groups.resize(static_cast<std::size_t>(std::max(n, 0)));
    }
    if (uid == 0) return {};
    auto writable = [&](const std::string& p, bool& exists) {
        struct stat st{};
        exists = ::stat(p.c_str(), &st) == 0;
        if (!exists) return false;
        if (st.st_uid == uid) return (st.st_mode & S_IWUSR) != 0;
        if (std::find(groups.begin(), groups.end(), st.st_gid) != groups.end()) return (st.st_mode & S_IWGRP) != 0;
        return (st.st_mode & S_IWOTH) != 0;
    };
    auto mode_of = [](const std::string& p) {
        struct stat st{};
        if (::stat(p.c_str(), &st) != 0) return std::string();
        char buf[64];
        const struct passwd* owner = ::getpwuid(st.st_uid);
        std::snprintf(buf, sizeof buf, "mode %04o, owner ", static_cast<unsigned>(st.st_mode & 07777));
        return std::string(buf) + (owner ? owner->pw_name : std::to_string(st.st_uid));
    };
    bool exists = false;
    const std::string file = db.string();
    if (!writable(file, exists)) return "cannot write " + file + " (" + mode_of(file) + ")";
    // SQLite also writes FILE-wal and FILE-shm beside it, creating them when missing.
    const std::string dir = db.has_parent_path() ? db.parent_path().string() : std::string(".");
    bool dir_exists = false;
    if (writable(dir, dir_exists)) return {};
    for (const char* suffix : {"-wal", "-shm"}) {
        const std::string p = file + suffix;
        if (!writable(p, exists)) {
            return "cannot create or write " + p + " (the directory " + dir + " has " + mode_of(dir) + ")";
        }
    }
    return {};
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
    // mailsiftd writes its signatures and counters here: say when it cannot (they wait in its memory).
    std::vector<std::string> warnings;
    {
        // Only when the configuration names mailsiftd's user: otherwise whoever runs this is no guide.
        const std::string& user = ctx.settings.daemon.user;
        const std::string problem = user.empty() ? std::string() : write_problem(ctx.db_path, user);
        if (!problem.empty()) {
            warnings.push_back("mailsiftd's user " + user + " " + problem +
                               ": mailsiftd keeps its signatures and counters in memory until it can write them");
        }
    }
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
        out << "},\"latency_ms_at_most\":{";
        const double shares[] = {0.5, 0.9, 0.99};
        for (std::size_t i = 0; i < std::size(shares); ++i) {
            const double v = latency_percentile(counters, shares[i]);
            out << (i ? "," : "") << "\"p" << static_cast<int>(shares[i] * 100) << "\":"
                << (v < 0 ? std::string("null") : number(v));
        }
        out << "},\"warnings\":[";
        for (std::size_t i = 0; i < warnings.size(); ++i) out << (i ? "," : "") << "\"" << json_escape(warnings[i]) << "\"";
        out << "]}\n";
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
    for (const auto& w : warnings) std::printf("warning:           %s\n", w.c_str());
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
    if (const double p50 = latency_percentile(counters, 0.5); p50 >= 0) {
        std::printf("  latency (bucket bounds): p50 <= %s ms, p90 <= %s ms, p99 <= %s ms\n", number(p50).c_str(),
                    number(latency_percentile(counters, 0.9)).c_str(), number(latency_percentile(counters, 0.99)).c_str());
    }
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

// ---- administration ----

// A whole number in [min, max] for an option or argument, else a usage error.
std::uint64_t whole_number(const std::string& command, const std::string& what, const std::string& text,
                           std::uint64_t min, std::uint64_t max) {
    std::uint64_t v = 0;
    bool ok = !text.empty() && text.size() <= 12;
    for (const char c : text) {
        if (c < '0' || c > '9') ok = false;
        if (ok) v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (!ok || v < min || v > max) {
        usage_error(command + ": " + what + " must be a whole number from " + std::to_string(min) + " to " +
                    std::to_string(max) + ", not '" + text + "'");
    }
    return v;
}

// Commands that change an existing database do not create one.
void require_database(const Context& ctx) {
    if (!std::filesystem::exists(ctx.db_path)) {
        throw store::Error(ctx.db_path, "no such database (train one first with 'mailsift learn')");
    }
}

constexpr std::uint64_t top_default = 20, top_min_count = 5;

int cmd_top(const Context& ctx, const std::vector<std::string>& rest) {
    bool spam = false, ham = false;
    std::optional<std::uint64_t> limit;
    std::uint64_t min_count = top_min_count;
    for (std::size_t i = 0; i < rest.size(); ++i) {
        const std::string& s = rest[i];
        if (s == "--spam") {
            spam = true;
        } else if (s == "--ham") {
            ham = true;
        } else if (s == "--min-count") {
            if (i + 1 >= rest.size()) usage_error("top: --min-count needs a number");
            min_count = whole_number("top", "--min-count", rest[++i], 1, 1000000000);
        } else if (s.size() > 1 && s[0] == '-') {
            usage_error("top: unknown option '" + s + "'");
        } else if (limit) {
            usage_error("top: give N once");
        } else {
            limit = whole_number("top", "N", s, 1, 1000000);
        }
    }
    if (!spam && !ham) spam = ham = true;
    store::Database db(ctx.db_path, store::Database::Mode::read_only);
    const model::Counts counts = db.load_counts(ctx.settings.model.term_frequency);
    // The weights are the model's own, computed as scoring computes them.
    const model::Snapshot snap(counts, ctx.settings.model);
    struct Row {
        double weight;
        model::FeatureId id;
        model::ClassCounts counts;
    };
    std::vector<Row> toward_spam, toward_ham;
    for (const auto& [id, c] : counts.features) {
        if (c.spam + c.ham < min_count) continue;
        const auto w = snap.weight(id);
        if (!w) continue;
        if (*w > 0) toward_spam.push_back({*w, id, c});
        if (*w < 0) toward_ham.push_back({*w, id, c});
    }
    const std::size_t n = static_cast<std::size_t>(limit.value_or(top_default));
    // Strongest first; ties go to the feature seen more often, then to the lower id.
    auto rank = [n](std::vector<Row>& rows) {
        auto stronger = [](const Row& a, const Row& b) {
            if (std::fabs(a.weight) != std::fabs(b.weight)) return std::fabs(a.weight) > std::fabs(b.weight);
            if (a.counts.spam + a.counts.ham != b.counts.spam + b.counts.ham) {
                return a.counts.spam + a.counts.ham > b.counts.spam + b.counts.ham;
            }
            return a.id < b.id;
        };
        const std::size_t keep = std::min(n, rows.size());
        std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(keep), rows.end(), stronger);
        rows.resize(keep);
    };
    const bool boolean = ctx.settings.model.term_frequency == model::TermFrequency::boolean;
    std::printf("model: %llu spam and %llu ham messages learned, %zu features (term_frequency = %s)\n"
                "ranked by weight among the %zu features seen at least %llu times; counts are %s\n",
                static_cast<unsigned long long>(counts.messages.spam), static_cast<unsigned long long>(counts.messages.ham),
                counts.features.size(), boolean ? "boolean" : "raw", toward_spam.size() + toward_ham.size(),
                static_cast<unsigned long long>(min_count), boolean ? "messages containing the feature" : "occurrences");
    auto table = [&](const char* title, std::vector<Row>& rows) {
        rank(rows);
        std::printf("\n%s\n  %4s  %10s  %8s  %8s  %s\n", title, "rank", "weight", "spam", "ham", "feature");
        std::size_t r = 0;
        for (const auto& row : rows) {
            std::printf("  %4zu  %+10.4f  %8llu  %8llu  %s\n", ++r, row.weight,
                        static_cast<unsigned long long>(row.counts.spam), static_cast<unsigned long long>(row.counts.ham),
                        db.feature_text(row.id).c_str());
        }
        if (rows.empty()) std::printf("  (none)\n");
    };
    if (spam) table("toward spam:", toward_spam);
    if (ham) table("toward ham:", toward_ham);
    return exit_ok;
}

constexpr std::int64_t prune_feature_days = 90, max_days = 1000000;

int cmd_prune(const Context& ctx, const std::vector<std::string>& rest) {
    std::int64_t signature_days = static_cast<std::int64_t>(ctx.settings.daemon.signature_keep.count() / 86400);
    std::int64_t feature_days = prune_feature_days;
    for (std::size_t i = 0; i < rest.size(); ++i) {
        const std::string& s = rest[i];
        if (s == "--signatures-older-than" || s == "--features-unseen-days") {
            if (i + 1 >= rest.size()) usage_error("prune: " + s + " needs a number of days");
            const auto days = static_cast<std::int64_t>(whole_number("prune", s, rest[++i], 0, max_days));
            (s == "--signatures-older-than" ? signature_days : feature_days) = days;
        } else if (s.size() > 1 && s[0] == '-') {
            usage_error("prune: unknown option '" + s + "'");
        } else {
            usage_error("prune: unexpected argument '" + s + "'");
        }
    }
    require_database(ctx);
    store::Database db(ctx.db_path, store::Database::Mode::read_write);
    const std::int64_t now = std::time(nullptr);
    const auto r = db.prune(now - signature_days * 86400, now - feature_days * 86400);
    auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    std::printf("removed %llu signatures older than %lld days\n", u(r.signatures), static_cast<long long>(signature_days));
    std::printf("removed %llu features seen once and not in the last %lld days (%llu spam, %llu ham occurrences)\n",
                u(r.features), static_cast<long long>(feature_days), u(r.occurrences.spam), u(r.occurrences.ham));
    return exit_ok;
}

// The one FILE argument of export, import and backup.
std::string file_argument(const std::string& command, const std::vector<std::string>& args, bool dash_allowed) {
    if (args.size() != 1) {
        usage_error(command + ": give one FILE" + (dash_allowed ? std::string(" ('-' for standard ") +
                                                                      (command == "export" ? "output)" : "input)")
                                                                : std::string()));
    }
    const std::string& f = args[0];
    if (f.size() > 1 && f[0] == '-') usage_error(command + ": unknown option '" + f + "'");
    if (f == "-" && !dash_allowed) usage_error(command + ": FILE must name a file");
    return f;
}

int cmd_export(const Context& ctx, const std::vector<std::string>& rest) {
    const std::string file = file_argument("export", rest, true);
    store::Database db(ctx.db_path, store::Database::Mode::read_only);
    if (file == "-") {
        db.export_model(std::cout);
        std::cout.flush();
        if (!std::cout) return report("-", "cannot write standard output"), exit_input;
        return exit_ok;
    }
    for (const char* suffix : {"", "-wal", "-shm"}) {
        std::error_code ec;
        const std::filesystem::path live = ctx.db_path.string() + suffix;
        if (std::filesystem::exists(file, ec) && std::filesystem::exists(live, ec) &&
            std::filesystem::equivalent(file, live, ec)) {
            return report(file, "is a file of the database itself; export to another file"), exit_input;
        }
    }
    // The export holds what was learned from the users' mail: as private as the database.
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0) return report(file, std::string("cannot create: ") + std::strerror(errno)), exit_input;
    ::close(fd);
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    store::ModelSummary sum;
    try {
        sum = db.export_model(out);
    } catch (...) {
        out.close();
        std::filesystem::remove(file);  // no half export left behind
        throw;
    }
    errno = 0;
    out.close();
    if (!out) {
        const int e = errno;
        std::filesystem::remove(file);
        return report(file, std::string("cannot write: ") + (e != 0 ? std::strerror(e) : "write failed")), exit_input;
    }
    std::printf("exported %llu features, %llu learned messages and %llu contacts to %s\n",
                static_cast<unsigned long long>(sum.features), static_cast<unsigned long long>(sum.messages),
                static_cast<unsigned long long>(sum.contacts), file.c_str());
    return exit_ok;
}

int cmd_import(const Context& ctx, const std::vector<std::string>& rest) {
    const std::string file = file_argument("import", rest, true);
    std::ifstream in_file;
    if (file != "-") {
        in_file.open(file, std::ios::binary);
        if (!in_file) return report(file, std::string("cannot open: ") + std::strerror(errno)), exit_input;
    }
    std::istream& in = file == "-" ? std::cin : in_file;
    // A database this import creates is removed again when the import fails.
    const bool existed = std::filesystem::exists(ctx.db_path);
    auto forget_new_database = [&] {
        if (existed) return;
        std::error_code ec;
        for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(ctx.db_path.string() + suffix, ec);
    };
    store::ModelSummary sum;
    try {
        store::Database db(ctx.db_path, store::Database::Mode::read_write);
        sum = db.import_model(in, file);
    } catch (...) {
        forget_new_database();
        throw;
    }
    std::printf("imported %llu features, %llu learned messages and %llu contacts into %s\n",
                static_cast<unsigned long long>(sum.features), static_cast<unsigned long long>(sum.messages),
                static_cast<unsigned long long>(sum.contacts), ctx.db_path.c_str());
    return exit_ok;
}

int cmd_backup(const Context& ctx, const std::vector<std::string>& rest) {
    bool force = false;
    std::vector<std::string> files;
    for (const auto& s : rest) {
        if (s == "--force") force = true;
        else files.push_back(s);
    }
    const std::string file = file_argument("backup", files, false);
    store::Database db(ctx.db_path, store::Database::Mode::read_only);
    if (!force) {
        // A -wal or -journal file of that name would be applied to the copy: the same as an existing FILE.
        for (const char* suffix : {"", "-wal", "-journal"}) {
            struct stat st{};
            const std::string p = file + suffix;
            if (::lstat(p.c_str(), &st) == 0) {
                return report(p, "already exists; use --force to replace it"), exit_input;
            }
        }
    }
    db.backup(file, force);
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(file, ec);
    std::printf("copied %s to %s (%llu bytes)\n", ctx.db_path.c_str(), file.c_str(),
                static_cast<unsigned long long>(ec ? 0 : bytes));
    return exit_ok;
}

// One line of a contacts file: an address per line, or a vCard.
struct ContactLine {
    enum Kind : std::uint8_t { skip, address, bad } kind = skip;
    std::string text;  // the address, or what is wrong
};

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// features::address_in, and something on both sides of the '@'.
std::string plausible_address(std::string_view text) {
    std::string a = features::address_in(text);
    const std::size_t at = a.find('@');
    if (at == std::string::npos || at == 0 || at + 1 == a.size()) return {};
    return a;
}

ContactLine parse_contact_line(std::string_view raw, bool& in_vcard) {
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    // A folded vCard line continues the previous one; EMAIL values are short, so it is left out.
    if (in_vcard && !raw.empty() && (raw.front() == ' ' || raw.front() == '\t')) return {};
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') return {};
    if (iequals(line, "BEGIN:VCARD") || iequals(line, "END:VCARD")) {
        in_vcard = iequals(line, "BEGIN:VCARD");
        return {};
    }
    // A vCard property: [GROUP.]NAME[;PARAM=VALUE...]:VALUE
    const std::size_t name_end = line.find_first_of(":;");
    if (name_end != std::string_view::npos) {
        std::string_view name = line.substr(0, name_end);
        if (const auto dot = name.rfind('.'); dot != std::string_view::npos) name.remove_prefix(dot + 1);
        if (iequals(name, "EMAIL")) {
            // The value starts after the first ':' outside a quoted parameter value.
            bool quoted = false;
            std::size_t colon = std::string_view::npos;
            for (std::size_t i = name_end; i < line.size() && colon == std::string_view::npos; ++i) {
                if (line[i] == '"') quoted = !quoted;
                else if (line[i] == ':' && !quoted) colon = i;
            }
            const std::string address =
                colon == std::string_view::npos ? std::string() : plausible_address(line.substr(colon + 1));
            if (address.empty()) return {ContactLine::bad, "vCard EMAIL line without an email address"};
            return {ContactLine::address, address};
        }
    }
    if (in_vcard) return {};  // the other properties of a vCard
    const std::string address = plausible_address(line);
    if (address.empty()) return {ContactLine::bad, "not an email address"};
    return {ContactLine::address, address};
}

int cmd_contacts_import(const Context& ctx, const std::string& file) {
    if (file.size() > 1 && file[0] == '-') usage_error("contacts import: unknown option '" + file + "'");
    std::ifstream in_file;
    if (file != "-") {
        in_file.open(file, std::ios::binary);
        if (!in_file) return report(file, std::string("cannot open: ") + std::strerror(errno)), exit_input;
    }
    std::istream& in = file == "-" ? std::cin : in_file;
    const std::int64_t now = std::time(nullptr);
    std::vector<store::Contact> contacts;
    int status = exit_ok;
    bool in_vcard = false;
    std::string line;
    for (std::size_t n = 1; std::getline(in, line); ++n) {
        const ContactLine c = parse_contact_line(line, in_vcard);
        if (c.kind == ContactLine::bad) {
            report(file + ":" + std::to_string(n), c.text);
            status = exit_input;
        } else if (c.kind == ContactLine::address) {
            contacts.push_back({c.text, "imported", now});
        }
    }
    if (in.bad()) {
        report(file, "read error");
        status = exit_input;
    }
    store::Database db(ctx.db_path, store::Database::Mode::read_write);
    const std::size_t added = db.add_contacts(contacts);
    std::printf("added %zu contacts, %zu already present\n", added, contacts.size() - added);
    return status;
}

int cmd_contacts(const Context& ctx, const std::vector<std::string>& rest) {
    if (rest.empty()) usage_error("contacts: say add, remove, list or import");
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
    if (action == "import") {
        if (rest.size() != 2) usage_error("contacts import: give one FILE ('-' for standard input)");
        return cmd_contacts_import(ctx, rest[1]);
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
        if (a.command == "evaluate") return cmd_evaluate(ctx, a.rest);
        if (a.command == "tune") return cmd_tune(ctx, a.rest);
        if (a.command == "classify") return cmd_classify(ctx, a.rest);
        if (a.command == "explain") return cmd_explain(ctx, a.rest);
        if (a.command == "tokens") return cmd_tokens(ctx, a.rest);
        if (a.command == "stats") return cmd_stats(ctx, a.rest);
        if (a.command == "contacts") return cmd_contacts(ctx, a.rest);
        if (a.command == "top") return cmd_top(ctx, a.rest);
        if (a.command == "prune") return cmd_prune(ctx, a.rest);
        if (a.command == "export") return cmd_export(ctx, a.rest);
        if (a.command == "import") return cmd_import(ctx, a.rest);
        if (a.command == "backup") return cmd_backup(ctx, a.rest);
        usage_error("unknown command '" + a.command + "'");
    } catch (const store::FormatError& e) {
        std::cerr << "mailsift: " << e.what() << "\n";
        return exit_input;
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
