// Configuration parsing: a file's "key = value" lines through the table
// (setting_table.cpp), one setting by name, and where the configuration and
// the database are found.
#include "mailsift/engine/settings.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "setting_values.hpp"

namespace mailsift::engine {

using setting_values::setting_table;
using setting_values::trim;

Settings parse_settings(std::string_view text, const std::string& source) {
    Settings s;
    std::size_t line_no = 0;
    while (!text.empty()) {
        ++line_no;
        const std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        line = trim(line);
        if (line.empty()) continue;
        const std::string where = source + ":" + std::to_string(line_no) + ": ";
        const std::size_t eq = line.find('=');
        if (eq == std::string_view::npos) throw ConfigError(where + "expected 'key = value'");
        const std::string_view key = trim(line.substr(0, eq));
        const std::string_view value = trim(line.substr(eq + 1));
        const auto it = setting_table().find(key);
        if (it == setting_table().end()) throw ConfigError(where + "unknown setting '" + std::string(key) + "'");
        if (!it->second.set(s, value)) {
            throw ConfigError(where + "invalid value '" + std::string(value) + "' for " + std::string(key));
        }
        s.given.emplace_back(std::string(key), std::string(value));
    }
    if (s.model.ham_threshold > s.model.spam_threshold) {
        throw ConfigError(source + ": ham_threshold must not exceed spam_threshold");
    }
    if (s.model.ham_log_odds && s.model.spam_log_odds && *s.model.ham_log_odds > *s.model.spam_log_odds) {
        throw ConfigError(source + ": ham_log_odds must not exceed spam_log_odds");
    }
    if (s.features.min_token_bytes > s.features.max_token_bytes) {
        throw ConfigError(source + ": features.min_token_bytes must not exceed features.max_token_bytes");
    }
    return s;
}

void set_setting(Settings& settings, std::string_view name, std::string_view value) {
    const auto it = setting_table().find(name);
    if (it == setting_table().end()) throw ConfigError("unknown setting '" + std::string(name) + "'");
    if (!it->second.set(settings, value)) {
        throw ConfigError("invalid value '" + std::string(value) + "' for " + std::string(name));
    }
}

std::string setting_value(const Settings& settings, std::string_view name) {
    const auto it = setting_table().find(name);
    if (it == setting_table().end()) throw ConfigError("unknown setting '" + std::string(name) + "'");
    return it->second.show(settings);
}

std::optional<SettingKind> setting_kind(std::string_view name) {
    const auto it = setting_table().find(name);
    if (it == setting_table().end()) return std::nullopt;
    return it->second.kind;
}

std::vector<std::string> setting_names() {
    std::vector<std::string> names;
    for (const auto& [name, entry] : setting_table()) names.push_back(name);
    return names;
}

Settings load_settings(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError(path.string() + ": cannot read configuration file");
    std::ostringstream buf;
    buf << in.rdbuf();
    return parse_settings(buf.str(), path.string());
}

Resolved resolve(const std::optional<std::filesystem::path>& config, const std::optional<std::filesystem::path>& database) {
    Resolved r;
    if (config) {
        r.config = *config;
    } else if (const char* env = std::getenv("MAILSIFT_CONFIG"); env != nullptr && *env != '\0') {
        r.config = env;
    } else if (std::filesystem::exists(system_config_path)) {
        r.config = system_config_path;
    }
    if (!r.config.empty()) r.settings = load_settings(r.config);
    if (database) {
        r.database = *database;
        r.database_source = "--db";
    } else if (const char* env = std::getenv("MAILSIFT_DB"); env != nullptr && *env != '\0') {
        r.database = env;
        r.database_source = "MAILSIFT_DB";
    } else if (!r.settings.database.empty()) {
        r.database = r.settings.database;
        r.database_source = "configuration file " + r.config.string();
    } else {
        r.database = default_database_path();
        r.database_source = "default";
    }
    return r;
}

std::filesystem::path default_database_path() {
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg == '/') {
        return std::filesystem::path(xdg) / "mailsift" / "mailsift.db";
    }
    if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
        return std::filesystem::path(home) / ".local" / "share" / "mailsift" / "mailsift.db";
    }
    return "mailsift.db";
}

}  // namespace mailsift::engine
