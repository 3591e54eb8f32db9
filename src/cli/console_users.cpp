// console-user: the web console's accounts (add, passwd, role, remove, list).
#include <grp.h>
#include <pwd.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "mailsift/console/accounts.hpp"

namespace mailsift::cli {
namespace {

const char* const console_user_help = R"(usage: mailsift console-user add NAME --role viewer|admin [--password-stdin]
       mailsift console-user passwd NAME [--password-stdin]
       mailsift console-user role NAME viewer|admin
       mailsift console-user remove NAME
       mailsift console-user list

Manages who may sign in to mailsiftd's web console, in the file that
console_users names in mailsift.conf (default /etc/mailsift/console-users).
A viewer sees the status, the history and explanations; an admin may also
correct verdicts, learn and scan messages. Passwords are stored only as
Argon2id hashes; add and passwd ask for the password twice on the terminal,
or read one line from standard input with --password-stdin. A password has at
least 10 characters. list prints NAME<TAB>ROLE. A new file gets mode 0640
and the group of the daemon's `user` (else the group mailsift, which the
systemd unit runs as), so that mailsiftd can read it.

Exit status: 0 done, 1 refused (no such account, it exists, a bad name or
password), 2 usage error, 3 the file cannot be read or written.
)";

struct Args {
    std::vector<std::string> words;  // ACTION NAME [ROLE]
    std::string role;
    bool password_stdin = false;
};

// Reads one line from the terminal without echo; nullopt at end of input.
std::optional<std::string> ask(FILE* tty, const char* prompt) {
    std::fputs(prompt, stderr);
    std::fflush(stderr);
    termios old{};
    const int fd = ::fileno(tty);
    const bool can_hide = ::tcgetattr(fd, &old) == 0;
    if (can_hide) {
        termios quiet = old;
        quiet.c_lflag &= static_cast<tcflag_t>(~ECHO);
        ::tcsetattr(fd, TCSAFLUSH, &quiet);
    }
    std::string line;
    int c;
    bool any = false;
    while ((c = std::fgetc(tty)) != EOF && c != '\n') {
        line.push_back(static_cast<char>(c));
        any = true;
    }
    if (can_hide) ::tcsetattr(fd, TCSAFLUSH, &old);
    std::fputc('\n', stderr);
    if (c == EOF && !any) return std::nullopt;
    return line;
}

// The new password: one line of standard input, or asked twice on the terminal.
std::string new_password(const Args& a) {
    if (a.password_stdin) {
        std::string line;
        if (!std::getline(std::cin, line)) usage_error("console-user: --password-stdin: no line on standard input");
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return line;
    }
    std::unique_ptr<FILE, int (*)(FILE*)> tty(std::fopen("/dev/tty", "r+"), &std::fclose);
    if (!tty) usage_error("console-user: no terminal to ask for the password on: use --password-stdin");
    const auto first = ask(tty.get(), "Password: ");
    const auto second = first ? ask(tty.get(), "Again: ") : std::nullopt;
    if (!first || !second) usage_error("console-user: no password given");
    if (*first != *second) {
        report("console-user", "the two passwords differ; nothing changed");
        std::exit(exit_input);
    }
    return *first;
}

// The group mailsiftd reads a new file as: the primary group of its `user`, else
// the system group `mailsift` (mailsiftd.service runs as User=/Group=mailsift).
std::optional<unsigned> daemon_group(const engine::Settings& s) {
    if (!s.daemon.user.empty()) {
        if (const passwd* pw = ::getpwnam(s.daemon.user.c_str())) return static_cast<unsigned>(pw->pw_gid);
    }
    if (const group* gr = ::getgrnam("mailsift")) return static_cast<unsigned>(gr->gr_gid);
    return std::nullopt;
}

int console_user(const Context& ctx, const Args& a) {
    if (a.words.empty()) usage_error("console-user: say add, passwd, role, remove or list");
    const std::string& action = a.words[0];
    const std::filesystem::path& file = ctx.settings.console.users;
    const auto want = [&](std::size_t n, const char* shape) {
        if (a.words.size() != n) usage_error("console-user " + action + ": expected " + shape);
    };
    if (action != "add" && !a.role.empty()) usage_error("console-user " + action + ": --role is for add");
    if (action != "add" && action != "passwd" && a.password_stdin) {
        usage_error("console-user " + action + ": --password-stdin is for add and passwd");
    }
    try {
        if (action == "list") {
            want(1, "no arguments");
            const console::Accounts accounts = console::Accounts::load(file);
            for (const auto& acc : accounts.all()) {
                std::printf("%s\t%s\n", acc.name.c_str(), console::to_string(acc.role));
            }
            return exit_ok;
        }
        if (action == "add") {
            want(2, "NAME --role viewer|admin");
            if (a.role.empty()) usage_error("console-user add: say --role viewer or --role admin");
            const auto role = console::parse_role(a.role);
            if (!role) usage_error("console-user add: --role is viewer or admin, not '" + a.role + "'");
            const std::string& name = a.words[1];
            console::check_account_name(name);
            // Refused before the password is asked for, when it can be told already.
            if (console::Accounts::load(file).find(name) != nullptr) {
                throw console::AccountRefused("'" + name + "' exists already (passwd changes a password)");
            }
            const std::string password = new_password(a);
            console::update_accounts(file, daemon_group(ctx.settings),
                                     [&](console::Accounts& accs) { accs.add(name, *role, password); });
            std::printf("added %s (%s) to %s\n", name.c_str(), console::to_string(*role), file.c_str());
            return exit_ok;
        }
        if (action == "passwd") {
            want(2, "NAME");
            const std::string& name = a.words[1];
            if (console::Accounts::load(file).find(name) == nullptr) {
                throw console::AccountRefused("no account '" + name + "'");
            }
            const std::string password = new_password(a);
            console::update_accounts(file, daemon_group(ctx.settings),
                                     [&](console::Accounts& accs) { accs.set_password(name, password); });
            std::printf("changed the password of %s\n", name.c_str());
            return exit_ok;
        }
        if (action == "role") {
            want(3, "NAME viewer|admin");
            const auto role = console::parse_role(a.words[2]);
            if (!role) usage_error("console-user role: the role is viewer or admin, not '" + a.words[2] + "'");
            console::update_accounts(file, daemon_group(ctx.settings),
                                     [&](console::Accounts& accs) { accs.set_role(a.words[1], *role); });
            std::printf("%s is now %s\n", a.words[1].c_str(), console::to_string(*role));
            return exit_ok;
        }
        if (action == "remove") {
            want(2, "NAME");
            console::update_accounts(file, daemon_group(ctx.settings),
                                     [&](console::Accounts& accs) { accs.remove(a.words[1]); });
            std::printf("removed %s\n", a.words[1].c_str());
            return exit_ok;
        }
    } catch (const console::AccountRefused& e) {
        report("console-user " + action, e.what());
        return exit_input;
    } catch (const console::AccountsError& e) {
        std::cerr << "mailsift: " << e.what() << "\n";
        return exit_environment;
    }
    usage_error("console-user: unknown action '" + action + "'");
}

}  // namespace

void add_console_user_command(Registry& r) {
    CLI::App* sub = r.add("console-user", console_user_help);
    auto args = std::make_shared<Args>();
    sub->add_option("ACTION", args->words);  // add|passwd|role|remove|list, then NAME [ROLE]
    sub->add_option("--role", args->role);
    sub->add_flag("--password-stdin", args->password_stdin);
    r.set_run(sub, [args](const Context& ctx) { return console_user(ctx, *args); });
}

}  // namespace mailsift::cli
