// mailsift — the command-line companion: learn, unlearn, correct, evaluate,
// tune, classify, explain, tokens, stats, contacts, and the administration
// commands top, prune, export, import and backup. This file holds the options
// every command shares and the dispatch; each command family is its own file
// (train, evaluate, inspect, admin, transfer, contacts), arguments are parsed
// by CLI11. All mail logic is in the engine, all SQL in the store.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <string>

#include "command.hpp"
#include "mailsift/version.hpp"

namespace {

using namespace mailsift;
using namespace mailsift::cli;

const char* const main_help = R"(usage: mailsift [--db PATH] [--config PATH] COMMAND [ARGS]

Train and run the mailsift naive-Bayes spam filter.

commands:
  learn    (--spam|--ham) [--files-from LIST] [PATH...] | --index FILE
                                                          learn messages as spam or ham
  unlearn  (--spam|--ham) [--files-from LIST] [PATH...]  forget messages learned as spam or ham
  correct  (--spam|--ham|--undo) [--quiet] [--signature ID]... [PATH...]
                                                          correct mailsiftd's verdict, or undo a correction
  evaluate (--spam DIR --ham DIR | --index FILE) [--split every:N|fraction:F | --folds K] [--json]
                                                          measure accuracy on a labelled corpus
  tune     (--spam DIR --ham DIR | --index FILE) [--budget SECONDS] [--seed N]
                                                          search settings on held-out training data
  classify [--json] [--files-from LIST] [PATH...]         print a verdict per message
  explain  PATH                                           show why a message scores as it does
  tokens   PATH | --signature ID                          print the features of one message
  stats    [--json] [--user USER]                         show what the database holds, or a user's layer
  forget-user [--json] USER                               take back what a user's layer learned
  contacts (add|remove|list) [ADDRESS...] | import FILE   manage known correspondents
  console-user (add|passwd|role|remove|list) [NAME] [--role viewer|admin]
                                                          manage the web console's accounts
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

bool is_option(const std::string& arg) { return arg.size() > 1 && arg[0] == '-'; }

// What went wrong in a parse, said as the rest of our messages say it.
std::string parse_problem(const CLI::ParseError& e) {
    const std::string what = e.what();
    // CLI11: "--files-from: 1 required TEXT missing"
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
        if (const auto colon = what.find(':'); colon != std::string::npos && is_option(what.substr(0, colon))) {
            return what.substr(0, colon) + " needs a value";
        }
    }
    return what;
}

// The command a parse (or a failed one) got to, or nullptr.
const Registry::Command* parsed_command(const Registry& registry) {
    for (const auto& c : registry.commands()) {
        if (c.app->parsed()) return &c;
    }
    return nullptr;
}

// A command of a few messages reads the linear weights through a memory map
// (store::Database::for_few_messages): a read error there is a SIGBUS, not an
// error code. Say what it is; the transaction it interrupted never committed.
void map_read_failed(int) {
    static const char text[] = "mailsift: error: reading the database failed (an I/O error in its memory-mapped file)\n";
    [[maybe_unused]] const auto n = ::write(2, text, sizeof text - 1);
    ::_exit(exit_environment);
}

}  // namespace

int main(int argc, char** argv) {
    std::ios::sync_with_stdio(false);
    ::signal(SIGBUS, map_read_failed);
    CLI::App app{"mailsift"};
    app.set_help_flag("-h,--help");  // our text, printed below
    std::string db, config;
    CLI::Option* db_given = app.add_option("--db", db);
    CLI::Option* config_given = app.add_option("--config", config);
    bool version = false;
    app.add_flag("--version", version);
    Registry registry(app);
    add_training_commands(registry);
    add_evaluation_commands(registry);
    add_inspection_commands(registry);
    add_admin_commands(registry);
    add_transfer_commands(registry);
    add_contacts_command(registry);
    add_console_user_command(registry);
    add_user_commands(registry);
    // One command: after it, a word like "import" or "stats" is its argument
    // (contacts import FILE, learn --spam stats), never a second command.
    app.require_subcommand(0, 1);
    // Set after the subcommands were added, so that they do not inherit it: an
    // unknown word before any command is reported by name below.
    app.allow_extras();
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        const auto* c = parsed_command(registry);
        std::cout << (c != nullptr ? c->help : main_help);
        return exit_ok;
    } catch (const CLI::ParseError& e) {
        const auto* c = parsed_command(registry);
        usage_error((c != nullptr ? c->app->get_name() + ": " : std::string()) + parse_problem(e));
    }
    if (version) {
        std::cout << "mailsift " << mailsift::version << "\n" << mailsift::license_notice;
        return exit_ok;
    }
    if (const auto extra = app.remaining(); !extra.empty()) {
        usage_error((is_option(extra.front()) ? "unknown option '" : "unknown command '") + extra.front() + "'");
    }
    const auto* command = parsed_command(registry);
    if (command == nullptr) usage_error("no command given");
    for (const auto& extra : command->app->remaining()) {
        if (extra == "--") continue;  // CLI11 keeps the end-of-options mark among the extras
        usage_error(command->app->get_name() + (is_option(extra) ? ": unknown option '" : ": unexpected argument '") +
                    extra + "'");
    }
    try {
        std::optional<std::filesystem::path> config_path, db_path;
        if (config_given->count() > 0) config_path = config;
        if (db_given->count() > 0) db_path = db;
        engine::Resolved r = engine::resolve(config_path, db_path);
        const Context ctx{std::move(r.settings), std::move(r.database), std::move(r.database_source)};
        return command->run(ctx);
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
