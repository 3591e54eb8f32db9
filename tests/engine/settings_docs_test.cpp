// Settings are declared once (engine/settings.cpp); these tests hold the
// places that describe them to that declaration: mailsift.conf(5) documents
// every setting with its default, and the shipped mailsift.conf shows every
// administrator's setting (and no other) with its default. A setting left out
// of either, or documented with a default it does not have, fails here.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "../support/paths.hpp"
#include "mailsift/engine/model_settings.hpp"
#include "mailsift/engine/settings.hpp"

using namespace mailsift;

namespace {

std::string source_file(const std::string& relative) {
    std::ifstream in(std::string(MAILSIFT_TEST_DATA) + "/../../" + relative);
    REQUIRE(in);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// The man page's entries: a line that starts with a key in bold and says
// " = " ("\fBkey\fR = \fItype\fR (default \fBvalue\fR)"; several keys may share
// one), each key with the default the line gives in bold ("" when it gives none).
std::map<std::string, std::string> man_entries(const std::string& page) {
    std::map<std::string, std::string> out;
    std::istringstream in(page);
    for (std::string line; std::getline(in, line);) {
        // A line ending in a backslash goes on on the next (roff's escaped newline).
        for (std::string more; line.ends_with('\\') && std::getline(in, more);) line = line.substr(0, line.size() - 1) + more;
        const auto eq = line.find(" = ");
        if (!line.starts_with("\\fB") || eq == std::string::npos) continue;
        std::string value;
        if (const auto d = line.find("(default \\fB"); d != std::string::npos) {
            const auto from = d + 12;
            value = line.substr(from, line.find("\\fR", from) - from);
        }
        for (std::size_t at = 0; (at = line.find("\\fB", at)) != std::string::npos && at < eq;) {
            const auto end = line.find("\\fR", at);
            out[line.substr(at + 3, end - at - 3)] = value;
            at = end;
        }
    }
    return out;
}

}  // namespace

TEST_CASE("mailsift.conf(5) documents every setting, with the default it has", "[engine]") {
    const engine::Settings defaults;
    const auto entries = man_entries(source_file("man/mailsift.conf.5"));
    const auto names = engine::setting_names();
    REQUIRE(names.size() >= 70);
    for (const auto& name : names) {
        INFO(name);
        const auto it = entries.find(name);
        REQUIRE(it != entries.end());
        if (!it->second.empty()) CHECK(it->second == engine::setting_value(defaults, name));
    }
    // And nothing documented as a setting that is none.
    for (const auto& [key, value] : entries) {
        INFO(key);
        CHECK(engine::setting_kind(key).has_value());
    }
}

TEST_CASE("The shipped mailsift.conf shows every administrator's setting, and only those, with its default",
          "[engine]") {
    const engine::Settings defaults;
    std::set<std::string> shown;
    std::istringstream in(source_file("etc/mailsift/mailsift.conf"));
    for (std::string line; std::getline(in, line);) {
        // "key = value" or "#key = value" (a commented default); "# prose" is neither.
        if (line.starts_with("# ") || line == "#" || line.find('=') == std::string::npos) continue;
        if (line.starts_with("#")) line.erase(0, 1);
        if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
        const std::string key = line.substr(0, line.find_first_of(" ="));
        INFO(line);
        REQUIRE(engine::setting_kind(key).has_value());
        CHECK(shown.insert(key).second);  // once
        // The packaged database path, and the console's example address and files, are not defaults.
        if (key == "database" || key.starts_with("console_")) continue;
        CHECK(engine::setting_value(engine::parse_settings(line, "mailsift.conf"), key) ==
              engine::setting_value(defaults, key));
    }
    for (const auto& name : engine::setting_names()) {
        INFO(name);
        const bool administrator = engine::setting_kind(name) == engine::SettingKind::administrator;
        CHECK(shown.contains(name) == administrator);
        CHECK(engine::is_model_setting(name) == (engine::setting_kind(name) == engine::SettingKind::model));
    }
}
