// export, import and backup: the model as text, and a copy of the live database.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"

namespace mailsift::cli {
namespace {

const char* const export_help = R"(usage: mailsift export FILE

Write the whole model (class totals, features, learned messages with their
feature lists, contacts) to FILE ('-' for standard output) in the text format
described in mailsift(1), FORMAT. FILE is created mode 0640 or replaced.
Signatures, corrections and mailsiftd's counters are not part of it, nor are
the per-user layers those corrections made (per_user): their steps are taken
out of the weights written, and a note on standard error says how many.
)";

const char* const import_help = R"(usage: mailsift import FILE

Load a model written by 'mailsift export' from FILE ('-' for standard input)
into a new or empty database, in one transaction. A database that already
holds a model is refused (exit 3). A line not in the format is reported as
FILE:LINE: what is wrong (exit 1), and the database is left as it was.
)";

const char* const backup_help = R"(usage: mailsift backup [--force] FILE

Copy the database to FILE with SQLite's online backup API while mailsiftd and
others may go on writing; the copy holds what was committed when it began.
It is written beside FILE and moved into place when complete. An existing
FILE is refused (exit 1) unless --force.
)";

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

// On standard error (an export may go to standard output): what the weights leave out.
void layers_left_out(const store::ModelSummary& sum) {
    if (sum.layer_corrections_left_out == 0) return;
    std::fprintf(stderr,
                 "mailsift: export: the per-user layers are left out of the weights: %llu correction(s) of %llu "
                 "user(s), which an export does not carry; they stay in this database\n",
                 static_cast<unsigned long long>(sum.layer_corrections_left_out),
                 static_cast<unsigned long long>(sum.layer_users_left_out));
}

int export_model(const Context& ctx, const std::vector<std::string>& rest) {
    const std::string file = file_argument("export", rest, true);
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_only);
    store::Database& db = *opened;
    if (file == "-") {
        const store::ModelSummary sum = db.export_model(std::cout);
        std::cout.flush();
        if (!std::cout) return report("-", "cannot write standard output"), exit_input;
        layers_left_out(sum);
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
    layers_left_out(sum);
    return exit_ok;
}

int import_model(const Context& ctx, const std::vector<std::string>& rest) {
    const std::string file = file_argument("import", rest, true);
    std::ifstream in_file;
    if (file != "-") {
        in_file.open(file, std::ios::binary);
        if (!in_file) return report(file, std::string("cannot open: ") + std::strerror(errno)), exit_input;
    }
    std::istream& in = file == "-" ? std::cin : in_file;
    // A database this import creates is removed again when the import fails.
    // (On PostgreSQL the one transaction of the import leaves nothing behind.)
    const bool existed = store::is_postgresql(ctx.db_path.string()) || std::filesystem::exists(ctx.db_path);
    auto forget_new_database = [&] {
        if (existed) return;
        std::error_code ec;
        for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(ctx.db_path.string() + suffix, ec);
    };
    store::ModelSummary sum;
    try {
        const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_write);
        store::Database& db = *opened;
        sum = db.import_model(in, file);
    } catch (...) {
        forget_new_database();
        throw;
    }
    std::printf("imported %llu features, %llu learned messages and %llu contacts into %s\n",
                static_cast<unsigned long long>(sum.features), static_cast<unsigned long long>(sum.messages),
                static_cast<unsigned long long>(sum.contacts), store::display_location(ctx.db_path.string()).c_str());
    return exit_ok;
}

int backup(const Context& ctx, bool force, const std::vector<std::string>& files) {
    const std::string file = file_argument("backup", files, false);
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_only);
    store::Database& db = *opened;
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

}  // namespace

void add_transfer_commands(Registry& r) {
    {
        CLI::App* sub = r.add("export", export_help);
        auto files = std::make_shared<std::vector<std::string>>();
        sub->add_option("FILE", *files);
        r.set_run(sub, [files](const Context& ctx) { return export_model(ctx, *files); });
    }
    {
        CLI::App* sub = r.add("import", import_help);
        auto files = std::make_shared<std::vector<std::string>>();
        sub->add_option("FILE", *files);
        r.set_run(sub, [files](const Context& ctx) { return import_model(ctx, *files); });
    }
    CLI::App* sub = r.add("backup", backup_help);
    struct Options {
        bool force = false;
        std::vector<std::string> files;
    };
    auto o = std::make_shared<Options>();
    sub->add_flag("--force", o->force);
    sub->add_option("FILE", o->files);
    r.set_run(sub, [o](const Context& ctx) { return backup(ctx, o->force, o->files); });
}

}  // namespace mailsift::cli
