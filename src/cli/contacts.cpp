// contacts: the correspondents whose mail counts as known (add, remove, list, import).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "command.hpp"
#include "mailsift/features/extractor.hpp"

namespace mailsift::cli {
namespace {

const char* const contacts_help = R"(usage: mailsift contacts (add|remove|list) [ADDRESS...]
       mailsift contacts import FILE

add and remove take addresses; list prints ADDRESS<TAB>SOURCE<TAB>ADDED (UTC).
import reads FILE ('-' for standard input): one address per line (blank lines
and '#' comments ignored) or vCards, whose EMAIL lines are used (EMAIL:,
EMAIL;TYPE=work:, in any case). Imported contacts have the source 'imported'.
Prints how many were added and how many were already there; a line that is
not an address is reported as FILE:LINE (exit 1), the others are imported.
)";

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

int import_contacts(const Context& ctx, const std::string& file) {
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
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_write);
    store::Database& db = *opened;
    const std::size_t added = db.add_contacts(contacts);
    std::printf("added %zu contacts, %zu already present\n", added, contacts.size() - added);
    return status;
}

int contacts(const Context& ctx, const std::vector<std::string>& rest) {
    if (rest.empty()) usage_error("contacts: say add, remove, list or import");
    const std::string& action = rest[0];
    if (action == "list") {
        if (rest.size() > 1) usage_error("contacts list: takes no addresses");
        const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_only);
        store::Database& db = *opened;
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
        return import_contacts(ctx, rest[1]);
    }
    if (action != "add" && action != "remove") usage_error("contacts: unknown action '" + action + "'");
    if (rest.size() < 2) usage_error("contacts " + action + ": give one or more addresses");
    const auto opened = store::open(ctx.db_path.string(), store::Database::Mode::read_write);
    store::Database& db = *opened;
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

void add_contacts_command(Registry& r) {
    CLI::App* sub = r.add("contacts", contacts_help);
    auto args = std::make_shared<std::vector<std::string>>();
    sub->add_option("ACTION", *args);  // add|remove|list|import, then its addresses or FILE
    r.set_run(sub, [args](const Context& ctx) { return contacts(ctx, *args); });
}

}  // namespace mailsift::cli
