// learn, unlearn and correct: the commands that change what the model learned.
#include <algorithm>
#include <chrono>
#include <pwd.h>
#include <unistd.h>
#include <ctime>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "command.hpp"
#include "correction_client.hpp"
#include "mailsift/engine/user_layers.hpp"
#include "mailsift/engine/correction_job.hpp"
#include "mailsift/engine/correction_owner.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/message_checks.hpp"
#include "mailsift/engine/trainer.hpp"
#include "message_source.hpp"
#include "pipeline.hpp"

namespace mailsift::cli {
namespace {

const char* const learn_help = R"(usage: mailsift learn (--spam|--ham) [--user ADDRESS] [--files-from LIST] [PATH...]
       mailsift learn --index FILE [--user ADDRESS]

Learn each message as spam or ham. A message already learned with the same
label is left as it is (success); one learned with the other label is moved.
Senders of messages learned as ham become contacts. Messages are committed in
batches (batch_messages, default 5000): an error rolls back only its batch.
With train_margin > 0 (thick-threshold training), a message the model as it
was when the command started already scores on the right side by at least
that many log-odds is not learned ("already known"); errors and messages
within the margin are. So the order of the messages does not matter: on an
empty model, learn --spam JUNK then learn --ham INBOX learns every message.
--index FILE learns a labelled corpus in its order, each message with its own
label: TREC lines "spam PATH" or "ham PATH", PATH relative to FILE (a file,
an mbox or a folder, all of it with that label).
--user ADDRESS: the messages are that user's (a user's first training from
their folders): with per_user set, their layer learns them with the site's
model (ignored with per_user = off).
)";

const char* const unlearn_help = R"(usage: mailsift unlearn (--spam|--ham) [--files-from LIST] [PATH...]

Forget messages previously learned with that label. A message that was not
learned so is reported and left alone (success).
)";

const char* const correct_help = R"(usage: mailsift correct (--spam|--ham|--undo) [--quiet] [--user ADDRESS] [--signature ID]... [--files-from LIST] [PATH...]

Correct mailsiftd's verdict. A message carrying an X-Mailsift-Signature that
the database knows is trained on exactly the features mailsiftd scored (so
headers added later by delivery or the mail client do not matter), and the
correction counts toward the error rates in 'mailsift stats'; any other
message is learned as it is (a tagged one under its signature, so that the
scan, written every stats_interval, finds it learned). A tagged message
delivered less than twice stats_interval before (its topmost Received: field)
whose scan is not written yet is waited for, up to that long after delivery, so
that a move made the moment mail arrives trains what it trains later. A message
already learned in the other class is moved; one already in the requested class
is a success with a note.
--signature ID corrects a scan without the message (repeatable); one not
written yet is kept and trained when mailsiftd writes it. With neither
PATH nor --signature, one message is read from standard input, as a Dovecot
IMAPSieve or sieve-pipe rule sends it. --quiet prints nothing but errors: no
summary, no note for a message already learned (what a pipe program wants, as
Dovecot logs anything on standard error as an error).
With per_user set (mailsift.conf(5)), a correction of a copy mailsiftd scored
for one recipient also trains that recipient's layer, so their next copies of
such mail follow them; --user ADDRESS names the user instead (an alias).
With correct_socket set, the corrections are handed to mailsiftd, which
applies them (the user running this needs no access to the database); with
nothing listening there, they are applied here if this user may write it.
--undo undoes the latest correction of each message (by its signature) that
still stands, made by mistake: the model goes back to what it was before it
(the message unlearned, or moved back to the class it was learned as; the
linear scorer's step and a contact the correction added taken back), and the
correction stays in the history's trail, marked undone, counted nowhere.
Undoing again undoes the correction before. One still waiting for its scan is
withdrawn. Correcting to the other class is not an undo: it learns the
message as that class. A message with no correction to undo is reported, and
the exit status is 1.
)";

// The trainer for these inputs: of a few messages only their rows of the model
// are read (command.hpp, few_messages), on a connection sized for that;
// otherwise the whole model.
engine::Trainer trainer_for(store::Database& db, const Context& ctx, const std::vector<std::string>& paths) {
    using Reads = engine::Trainer::Reads;
    if (!few_messages_in(paths, few_messages)) return engine::Trainer(db, ctx.settings, Reads::whole_model);
    db.for_few_messages();
    return engine::Trainer(db, ctx.settings, Reads::rows);
}

// The label and messages of learn, unlearn and correct.
struct TrainOptions {
    bool spam = false, ham = false, quiet = false;
    bool undo = false;  // correct --undo
    std::string files_from, index;
    CLI::Option* files_from_given = nullptr;
    CLI::Option* index_given = nullptr;
    std::vector<std::string> paths;
    std::vector<std::string> signatures;  // correct --signature
    std::string user;                     // learn, correct --user: whose mail (per_user)

    // The layer --user names under the configured per_user ("" for none);
    // a usage error when it is not an address. `login`: a Unix login is a
    // user too (correct --user: a system user, as Dovecot's imap.user names
    // them), whose layers are their scans' (engine/correction_owner.hpp): "".
    std::string user_key(const std::string& command, const engine::Settings& settings, bool login = false) const {
        if (user.empty()) return {};
        if (login && engine::valid_login(user)) return {};
        if (!engine::user_of(engine::PerUser::recipient, user)) {
            usage_error(command + ": --user " + printable(user) + (login ? ": neither an address (user@domain) nor a login"
                                                               : ": not an address (user@domain)"));
        }
        return engine::user_of(settings.per_user, user).value_or("");
    }

    // The one label asked for, else a usage error.
    store::Class label(const std::string& command) const {
        if (spam && ham) usage_error(command + ": give either --spam or --ham, not both");
        if (!spam && !ham) usage_error(command + ": say --spam or --ham");
        return spam ? store::Class::spam : store::Class::ham;
    }
    std::optional<std::string> list() const {
        if (files_from_given == nullptr || files_from_given->count() == 0) return std::nullopt;
        return files_from;
    }
};

std::shared_ptr<TrainOptions> add_message_options(CLI::App* sub) {
    auto o = std::make_shared<TrainOptions>();
    sub->add_flag("--spam", o->spam);
    sub->add_flag("--ham", o->ham);
    o->files_from_given = sub->add_option("--files-from", o->files_from);
    sub->add_option("PATH", o->paths);
    return o;
}

int train(const Context& ctx, const std::string& command, const TrainOptions& opts) {
    const bool learning = command == "learn";
    struct {
        std::optional<store::Class> label;
        std::vector<std::string> paths;
    } args;
    // learn --index FILE: a labelled corpus learned in its order, each message
    // with its own label (thick-threshold training wants arrival order, not
    // all of one class first).
    std::unordered_map<std::string, store::Class> index_labels;  // message file -> its label
    if (opts.index_given != nullptr && opts.index_given->count() > 0) {
        if (opts.spam || opts.ham || opts.list() || !opts.paths.empty()) {
            usage_error("learn: --index takes no --spam, --ham, --files-from or PATH besides");
        }
        const std::filesystem::path index = opts.index;
        for (const auto& e : read_index(index)) {
            // An entry may be a folder: each message file in it gets the entry's label.
            std::vector<std::string> files{e.path};
            try {
                files = list_message_files(e.path);
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
        args.label = opts.label(command);
        args.paths = message_paths(opts.paths, opts.list());
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
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_write);
    store::Database& db = *opened;
    engine::Trainer trainer = trainer_for(db, ctx, args.paths);
    report_setting_notes(trainer.setting_notes());
    trainer.set_user(opts.user_key(command, ctx.settings));  // learn --user: a user's first training
    const std::int64_t now = std::time(nullptr);
    int status = exit_ok;
    std::size_t n_refused = 0;  // inputs that are not mail (or not readable); the rest is learned
    try {
    if (learning) {
        // Parsing and features on every core; the database, in input order, on this thread.
        const std::function<engine::Trainer::Prepared(const InputMessage&)> prepare =
            [&](const InputMessage& m) {
                return m.error.empty() ? trainer.prepare(m.raw, m.size_bytes) : engine::Trainer::Prepared{};
            };
        const std::function<bool(InputMessage&, engine::Trainer::Prepared&)> learn =
            [&](InputMessage& m, engine::Trainer::Prepared& p) {
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
        for_each_message_parallel<engine::Trainer::Prepared>(
            args.paths, ctx.settings.limits.max_message_bytes, worker_threads(), prepare, learn);
    } else {
        for_each_message(args.paths, ctx.settings.limits.max_message_bytes, [&](InputMessage& m) {
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
    trainer.finish();  // model = linear: refit on both classes' samples when due
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

// The name of the Unix user running this command, or its number when it has none.
std::string unix_user() {
    const uid_t uid = geteuid();
    std::vector<char> buffer(4096);
    passwd entry{};
    passwd* found = nullptr;
    if (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr && found->pw_name) {
        return found->pw_name;
    }
    return std::to_string(uid);
}

// What `correct` says of each input and at the end, from the results alone,
// wherever they were made (here, or by mailsiftd).
class CorrectionReport {
public:
    CorrectionReport(engine::CorrectionAction action, bool quiet) : action_(action), quiet_(quiet) {}

    void result(const std::string& label, const engine::CorrectionResult& r) {
        if (r.undo) return undone(label, r.undone);
        const auto& o = r.correct;
        const char* to = to_name();
        if (o.problem != engine::MessageProblem::none) {
            report(label, std::string(engine::describe(o.problem)) + "; not learned");
            status = exit_input;
            return;
        }
        ++(o.by_signature ? by_signature_ : as_message_);
        if (o.deferred) {
            ++deferred_;
            if (!quiet_) {
                report(label, "no scan recorded under this signature yet: the correction is kept and trained when "
                              "mailsiftd writes the scan (every stats_interval); it is dropped after signature_days "
                              "if none comes (expired, or scanned with another database)");
            }
            return;
        }
        if (o.superseded) ++superseded_;
        if (o.confirmed) {
            ++confirmed_;
            if (!quiet_) {
                report(label, std::string("mailsiftd already said ") + to +
                                  " with confidence; not trained (train_on_error)");
            }
            return;
        }
        if (o.result == store::LearnResult::already_learned) {
            ++already_;
            if (!quiet_) report(label, std::string("already learned as ") + to);
        } else {
            ++(o.result == store::LearnResult::moved ? moved_ : learned_);
        }
    }
    // An input that never reached the model (unreadable, not a signature).
    void refused(const std::string& label, const std::string& why) {
        report(label, why);
        status = exit_input;
    }
    void summary() const {
        if (quiet_) return;
        if (action_ == engine::CorrectionAction::undo) {
            std::cout << "undone: " << undone_ << " corrections, " << withdrawn_ << " withdrawn before their scan\n";
            return;
        }
        const char* to = to_name();
        std::cout << "corrected to " << to << ": " << by_signature_ << " by signature, " << as_message_
                  << " as the message; " << learned_ << " learned, " << moved_ << " moved, " << already_
                  << " already " << to;
        if (confirmed_ > 0) std::cout << ", " << confirmed_ << " confirmed without training";
        if (deferred_ > 0) std::cout << ", " << deferred_ << " waiting for their scan";
        if (superseded_ > 0) std::cout << "; " << superseded_ << " of them had a correction the other way, undone first";
        std::cout << "\n";
    }
    int status = exit_ok;

private:
    const char* to_name() const { return action_ == engine::CorrectionAction::spam ? "spam" : "ham"; }
    void undone(const std::string& label, const engine::Trainer::UndoOutcome& o) {
        using R = engine::Trainer::UndoOutcome::Result;
        if (o.result == R::undone) {
            ++undone_;
            if (!quiet_) {
                report(label, std::string("undid its correction to ") + store::to_string(o.to) + "; now " +
                                  (o.was ? std::string("learned as ") + store::to_string(*o.was) : "not learned"));
            }
        } else if (o.result == R::withdrawn) {
            ++withdrawn_;
            if (!quiet_) {
                report(label, std::string("withdrew its correction to ") + store::to_string(o.to) +
                                  ", which was waiting for its scan");
            }
        } else {
            report(label, engine::undo_problem(o.result));
            status = exit_input;
        }
    }

    engine::CorrectionAction action_;
    bool quiet_;
    std::size_t by_signature_ = 0, as_message_ = 0, learned_ = 0, moved_ = 0, already_ = 0, confirmed_ = 0,
                deferred_ = 0, undone_ = 0, withdrawn_ = 0, superseded_ = 0;
};

// Calls `sink` with each input of `correct` in order: the --signature ids,
// then the messages; what cannot be an input is reported.
void each_correction_input(const Context& ctx, const TrainOptions& opts, const std::vector<std::string>& paths,
                           CorrectionReport& out,
                           const std::function<void(const std::string&, engine::CorrectionInput)>& sink) {
    for (const auto& text : opts.signatures) {
        engine::CorrectionInput in;
        in.signature = engine::parse_signature(text);
        if (!in.signature) {
            out.refused(text, "not a signature (32 hexadecimal digits)");
            continue;
        }
        sink(text, std::move(in));
    }
    for_each_message(paths, ctx.settings.limits.max_message_bytes, [&](InputMessage& m) {
        if (!m.error.empty()) {
            out.refused(m.label, m.error);
            return true;
        }
        engine::CorrectionInput in;
        in.raw = std::move(m.raw);
        in.size_bytes = m.size_bytes;
        sink(m.label, std::move(in));
        return true;
    });
}

// The corrections applied here, in the database.
int correct_in_database(const Context& ctx, const TrainOptions& opts, engine::CorrectionAction action,
                        const std::vector<std::string>& paths, CorrectionReport& out) {
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_write);
    store::Database& db = *opened;
    engine::Trainer trainer = trainer_for(db, ctx, paths);  // the IMAPSieve recipe corrects one at a time
    report_setting_notes(trainer.setting_notes());
    // The history shows who corrected; with --user, for that user only (engine/correction_owner.hpp).
    const std::string key = opts.user_key("correct", ctx.settings, /*login=*/true);
    const std::string by = "cli:" + unix_user();
    trainer.set_corrector(opts.user.empty() ? by : engine::corrector_for(by, opts.user));
    trainer.set_user(key);
    // A message moved the moment it arrived: mailsiftd may not have written its
    // scan yet (it writes every stats_interval); waited for, so that the
    // correction trains the scan and its user's layer, as it would later.
    trainer.set_scan_wait(2 * ctx.settings.daemon.stats_interval + std::chrono::seconds(2));
    const std::int64_t now = std::time(nullptr);
    each_correction_input(ctx, opts, paths, out, [&](const std::string& label, engine::CorrectionInput in) {
        out.result(label, engine::apply_correction(trainer, action, in, now));
    });
    trainer.finish();  // and a refit when one is due (Trainer::refit_due)
    return out.status;
}

int correct(const Context& ctx, const TrainOptions& opts) {
    engine::CorrectionAction action = engine::CorrectionAction::undo;
    if (opts.undo) {
        if (opts.spam || opts.ham) usage_error("correct: --undo takes no --spam or --ham (the correction says which)");
    } else {
        action = opts.label("correct") == store::Class::spam ? engine::CorrectionAction::spam
                                                             : engine::CorrectionAction::ham;
    }
    // With --signature and no PATH, no message is read from standard input.
    std::vector<std::string> paths;
    if (opts.signatures.empty() || !opts.paths.empty() || opts.list()) paths = message_paths(opts.paths, opts.list());
    CorrectionReport out(action, opts.quiet);
    const std::string& socket = ctx.settings.daemon.correct_socket;
    std::string unreachable;  // why mailsiftd's correction socket took nothing
    if (!socket.empty()) {
        auto client = CorrectionClient::connect(
            socket, action, ctx.settings.limits.max_message_bytes,
            [&out](const std::string& label, const engine::CorrectionResult& r) { out.result(label, r); }, unreachable);
        if (client) {
            opts.user_key("correct", ctx.settings, /*login=*/true);  // an address or a login, or a usage error
            client->set_user(opts.user);              // mailsiftd keys it with its per_user
            try {
                each_correction_input(ctx, opts, paths, out, [&](const std::string& label, engine::CorrectionInput in) {
                    client->add(label, std::move(in));
                });
                client->finish();
            } catch (const NotPermitted& e) {
                std::cerr << "mailsift: " << e.what() << "\nmailsift: correct stopped: " << client->answered()
                          << " correction(s) answered before are made\n";
                return exit_input;
            } catch (const std::runtime_error& e) {
                std::cerr << "mailsift: " << e.what() << "\nmailsift: correct stopped: " << client->answered()
                          << " correction(s) answered before are made\n";
                return exit_environment;
            }
            out.summary();
            return out.status;
        }
    }
    // No correction socket, or nothing listening there: here, if this user may write the database.
    try {
        correct_in_database(ctx, opts, action, paths, out);
    } catch (const engine::NotYours& e) {
        std::cerr << "mailsift: " << e.what() << "\n";
        return exit_input;
    } catch (const store::Error& e) {
        if (unreachable.empty()) throw;
        std::cerr << "mailsift: mailsiftd takes no corrections at " << socket << " (" << unreachable
                  << "), and correcting in the database failed: " << e.what()
                  << "\nmailsift: no correction was made; start mailsiftd (correct_socket), or correct as a user "
                     "who may write the database\n";
        return exit_environment;
    }
    out.summary();
    return out.status;
}


}  // namespace

void add_training_commands(Registry& r) {
    for (const char* name : {"learn", "unlearn"}) {
        const bool learning = std::string(name) == "learn";
        CLI::App* sub = r.add(name, learning ? learn_help : unlearn_help);
        auto o = add_message_options(sub);
        if (learning) {
            o->index_given = sub->add_option("--index", o->index);
            sub->add_option("--user", o->user);
        }
        const std::string command = name;
        r.set_run(sub, [o, command](const Context& ctx) { return train(ctx, command, *o); });
    }
    CLI::App* sub = r.add("correct", correct_help);
    auto o = add_message_options(sub);
    sub->add_flag("-q,--quiet", o->quiet);
    sub->add_flag("--undo", o->undo);
    sub->add_option("--user", o->user);
    // One id per --signature: a PATH after it stays a PATH.
    sub->add_option("--signature", o->signatures)->allow_extra_args(false);
    r.set_run(sub, [o](const Context& ctx) { return correct(ctx, *o); });
}

}  // namespace mailsift::cli
