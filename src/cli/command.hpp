// What every command of the mailsift CLI shares: exit codes, how a command is
// registered with the argument parser (CLI11) and run, the resolved settings,
// error reporting and number formatting. main.cpp parses and dispatches; each
// command family lives in its own file and registers itself here.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mailsift/engine/settings.hpp"
#include "mailsift/store/database.hpp"

namespace mailsift::cli {

// Exit codes (also in man/mailsift.1):
//   0 success (a message already learned is success)
//   1 some input could not be read or used; the rest was processed
//   2 usage error
//   3 database or configuration error; the failing batch changed nothing
constexpr int exit_ok = 0, exit_input = 1, exit_usage = 2, exit_environment = 3;

// The settings and database a command runs with (--db, --config, environment, file).
struct Context {
    engine::Settings settings;
    std::filesystem::path db_path;
    std::string db_source;  // where the path came from, for stats
};

using Run = std::function<int(const Context&)>;

// The commands the parser knows: each family adds its subcommands with their
// options, its help text, and what to run once the arguments are parsed.
class Registry {
public:
    explicit Registry(CLI::App& app) : app_(app) {}

    // A subcommand named `name`; `help` is what -h/--help prints (not CLI11's generated text).
    CLI::App* add(const std::string& name, const char* help);
    // What `sub` runs once its arguments are parsed (its options live in the closure).
    void set_run(CLI::App* sub, Run run);

    struct Command {
        CLI::App* app;
        const char* help;
        Run run;
    };
    const std::vector<Command>& commands() const { return commands_; }

private:
    CLI::App& app_;
    std::vector<Command> commands_;
};

// The families (train.cpp, evaluate.cpp, inspect.cpp, admin.cpp, transfer.cpp, contacts.cpp,
// console_users.cpp).
void add_training_commands(Registry& r);    // learn, unlearn, correct
void add_evaluation_commands(Registry& r);  // evaluate, tune
void add_inspection_commands(Registry& r);  // classify, explain, tokens
void add_admin_commands(Registry& r);       // stats, top, prune
void add_transfer_commands(Registry& r);    // export, import, backup
void add_contacts_command(Registry& r);     // contacts add|remove|list|import
void add_console_user_command(Registry& r); // console-user add|passwd|role|remove|list (console_users.cpp)
void add_user_commands(Registry& r);        // forget-user (users.cpp)
// stats --user USER: what USER's layer holds (users.cpp).
int user_stats(const Context& ctx, const std::string& user, bool json);
// stats --users: every user with a layer, the most corrections first.
int users_stats(const Context& ctx, bool json);

// A command given at most this many messages (classify, explain, learn,
// unlearn, correct) reads only the rows of the model those messages need, as
// a sieve or procmail recipe runs it once per message; more read the whole
// model once (docs/performance.md has where the two cost the same).
constexpr std::size_t few_messages = 64;

// Commands that change an existing database do not create one: throws
// store::Error when ctx names none.
void require_database(const Context& ctx);

// Prints "mailsift: MESSAGE" and a pointer to --help, exits with exit_usage.
[[noreturn]] void usage_error(const std::string& message);
// A sender's address as it came in a From header, or a name as the command
// line gave it, printable: a byte outside printable ASCII as \xHH (nothing
// from the wire, or pasted from it, reaches a terminal or a log raw).
std::string printable(std::string_view text);

// "mailsift: LABEL: PROBLEM" on standard error.
void report(const std::string& label, const std::string& problem);
// "mailsift: warning: NOTE" on standard error for each note on the settings
// kept with the model (engine/model_settings.hpp), each once per run.
void report_setting_notes(const std::vector<std::string>& notes);

// `v` with `digits` significant digits ("%g"); infinities as +-1e308.
std::string number(double v, int digits = 6);

// JSON output: keys in the order written; a number rounded as number() rounds
// it (a whole one as an integer); bytes that are not UTF-8 (paths and features
// come from mail) replaced with U+FFFD, where hand-written JSON passed them on.
using Json = nlohmann::ordered_json;
Json json_number(double v, int digits = 6);
std::string json_line(const Json& j);

// The message paths of learn, unlearn, correct and classify: PATH... plus the
// lines of --files-from LIST; exits with exit_input when LIST is unreadable.
std::vector<std::string> message_paths(const std::vector<std::string>& paths,
                                       const std::optional<std::string>& files_from);

// A TREC index: lines "spam PATH" or "ham PATH", PATH relative to the index's
// folder, in the order given. Exits with exit_input, naming the line, when the
// file is unreadable or a line is not of that form.
struct IndexEntry {
    std::string path;
    bool spam = false;
};
std::vector<IndexEntry> read_index(const std::filesystem::path& index);

// A whole number in [min, max] for an option or argument, else a usage error.
std::uint64_t whole_number(const std::string& command, const std::string& what, const std::string& text,
                           std::uint64_t min, std::uint64_t max);

}  // namespace mailsift::cli
