// mailsift::engine settings — the configuration file, parsed once into typed values.
//
// Format: one `key = value` per line; '#' starts a comment; unknown keys and
// bad values are errors naming the line. Both programs read the same file.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include "mailsift/features/extractor.hpp"
#include "mailsift/mime/message.hpp"
#include "mailsift/model/naive_bayes.hpp"

namespace mailsift::engine {

struct Settings {
    std::filesystem::path database;  // empty: not set in the file
    model::Parameters model;
    features::Options features;
    mime::Limits limits;
    std::size_t reasons = 5;          // contributions reported in each direction
    std::size_t batch_messages = 1000;  // messages per training transaction
};

class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// `source` names the text in errors ("/etc/mailsift/mailsift.conf:12: ...").
Settings parse_settings(std::string_view text, const std::string& source);
Settings load_settings(const std::filesystem::path& path);

// The system-wide configuration file, used when it exists and none is named.
inline constexpr const char* system_config_path = "/etc/mailsift/mailsift.conf";

// $XDG_DATA_HOME/mailsift/mailsift.db, else $HOME/.local/share/mailsift/mailsift.db,
// else ./mailsift.db: a path an unprivileged user can write.
std::filesystem::path default_database_path();

}  // namespace mailsift::engine
