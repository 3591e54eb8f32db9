#include "command.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "message_source.hpp"

namespace mailsift::cli {

CLI::App* Registry::add(const std::string& name, const char* help) {
    CLI::App* sub = app_.add_subcommand(name);
    // Help is ours (the texts the man page mirrors); main.cpp prints it for -h/--help.
    sub->set_help_flag("-h,--help");
    // Unknown words are kept and reported by main.cpp in our words, not CLI11's.
    sub->allow_extras();
    commands_.push_back({sub, help, nullptr});
    return sub;
}

void Registry::set_run(CLI::App* sub, Run run) {
    for (auto& c : commands_) {
        if (c.app == sub) c.run = std::move(run);
    }
}

void usage_error(const std::string& message) {
    std::cerr << "mailsift: " << message << "\n(try 'mailsift --help')\n";
    std::exit(exit_usage);
}

void report(const std::string& label, const std::string& problem) {
    std::cerr << "mailsift: " << label << ": " << problem << "\n";
}

void report_setting_notes(const std::vector<std::string>& notes) {
    static std::set<std::string> said;
    for (const auto& n : notes) {
        if (said.insert(n).second) std::cerr << "mailsift: warning: " << n << "\n";
    }
}

std::string number(double v, int digits) {
    if (std::isinf(v)) return v > 0 ? "1e308" : "-1e308";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    return buf;
}

Json json_number(double v, int digits) {
    const double rounded = std::strtod(number(v, digits).c_str(), nullptr);
    // A whole value prints as an integer ("auc":1), as number() prints it, not as 1.0.
    if (rounded == std::trunc(rounded) && std::fabs(rounded) < 1e15) return static_cast<std::int64_t>(rounded);
    return rounded;
}

std::string json_line(const Json& j) {
    return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::vector<std::string> message_paths(const std::vector<std::string>& paths,
                                       const std::optional<std::string>& files_from) {
    std::vector<std::string> out = paths;
    if (files_from) {
        try {
            auto more = read_path_list(*files_from);
            out.insert(out.end(), more.begin(), more.end());
        } catch (const std::exception& e) {
            std::cerr << "mailsift: " << e.what() << "\n";
            std::exit(exit_input);
        }
    } else if (out.empty()) {
        out.push_back("-");
    }
    return out;
}

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
    if (store::is_postgresql(ctx.db_path.string())) {
        store::open(ctx.db_path.string(), store::Database::Mode::read_only);  // throws when there is no model
    } else if (!std::filesystem::exists(ctx.db_path)) {
        throw store::Error(ctx.db_path, "no such database (train one first with 'mailsift learn')");
    }
}

std::string printable(std::string_view text) {
    std::string out;
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out.push_back(ch);
        } else {
            char buf[5];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        }
    }
    return out;
}

}  // namespace mailsift::cli
