// mailsift::engine settings — the configuration file, parsed once into typed values.
//
// Format: one `key = value` per line; '#' starts a comment; unknown keys and
// bad values are errors naming the line. Both programs read the same file.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mailsift/features/extractor.hpp"
#include "mailsift/features/slots.hpp"
#include "mailsift/mime/message.hpp"
#include "mailsift/model/linear.hpp"
#include "mailsift/model/naive_bayes.hpp"

namespace mailsift::engine {

// What mailsiftd does with mail; plain values, used only by the daemon.
struct DaemonSettings {
    enum class OnError : std::uint8_t { accept, tempfail };     // scoring failed
    enum class Oversize : std::uint8_t { prefix, skip };        // message over limits.max_message_bytes

    std::string listen = "inet:127.0.0.1:8891";  // Postfix notation: inet:HOST:PORT or unix:PATH
    unsigned socket_mode = 0660;                  // unix socket permissions
    std::string socket_group;                     // unix socket group ("" = the daemon's)
    std::string socket_owner;                     // unix socket owner ("" = `user`, else the daemon's)
    // Where `mailsift correct` hands corrections to mailsiftd, which applies
    // them ("" = off): a mail user needs no access to the database
    // (daemon/correction_server.hpp). The command reads it too.
    std::string correct_socket;
    unsigned correct_socket_mode = 0660;          // its permissions: who may correct
    std::string correct_socket_group;             // its group ("" = the daemon's)
    // Unix users (names or numbers) whose corrections on correct_socket may name
    // the user they are for (correct --user: the IMAPSieve recipe's imap.user),
    // and who correct anything when they name none; any other peer corrects for
    // itself only, as its login (engine/correction_owner.hpp).
    std::vector<std::string> correct_trusted{"root"};
    std::size_t correct_peer_connections = 8;     // connections one Unix user holds at once on it
    std::size_t correct_rate = 3000;              // corrections a minute for one user (0 = no limit)
    std::string user;                             // started as root: run as this user ("" = stay)
    std::size_t threads = 2;                      // scoring threads
    std::size_t max_frame_bytes = 1024 * 1024;    // largest milter frame accepted (a Postfix header can pass 64 KiB)
    std::chrono::seconds read_timeout{300};       // no complete command (or replies left unread) this long: close
    std::chrono::milliseconds refresh_interval{1000};  // how often to look for a changed database
    std::chrono::seconds drain_timeout{30};       // SIGTERM: wait this long for sessions in flight
    OnError on_error = OnError::accept;
    Oversize oversize = Oversize::prefix;
    bool skip_authenticated = true;               // mail from {auth_authen} users is not scored
    bool add_reasons = false;                     // X-Mailsift-Reasons header
    bool spam_headers = false;                    // X-Spam-Flag and X-Spam-Status, as SpamAssassin writes them
    std::string subject_tag;                      // prefix for the Subject of spam ("" = off)
    double reject_threshold = 2.0;                // P(spam) at or above: reject (> 1 = off)
    std::string reject_reply = "550 5.7.1 Message rejected as spam";
    double quarantine_threshold = 2.0;            // P(spam) at or above: quarantine (> 1 = off)
    bool record_signatures = true;                // keep each scan's features for `mailsift correct`
    bool record_history = true;                   // keep a line per message for the console's history
    bool history_subjects = true;                 // ... with its Subject (off: a site that may not keep them)
    std::chrono::seconds signature_keep{14 * 86400};  // how long scans are kept
    bool learn_contacts = true;                   // recipients of authenticated senders become contacts
    std::chrono::seconds stats_interval{5};       // how often scans and counters are written
    std::string metrics_listen;                   // HOST:PORT serving Prometheus metrics ("" = off)
};

// The web console that mailsiftd serves (issue 22; its accounts: console/accounts.hpp).
struct ConsoleSettings {
    std::string listen;                        // HOST:PORT serving the console ("" = off, the default)
    std::filesystem::path users = "/etc/mailsift/console-users";  // NAME:ROLE:HASH, written by `mailsift console-user`
    std::filesystem::path tls_certificate;     // PEM chain; with tls_key: HTTPS (required off loopback)
    std::filesystem::path tls_key;             // PEM private key
    // Addresses of reverse proxies in front of the console: from these peers
    // only, X-Forwarded-For is believed, and the audit trail names the address
    // forwarded for beside the proxy's. Empty (the default): none.
    std::vector<std::string> trusted_proxies;
};

// Which scorer decides: the multinomial naive Bayes alone, or the linear
// scorer (model/linear.hpp) over 4-grams, features and the naive-Bayes log-odds.
enum class Scorer : std::uint8_t { naive_bayes, linear };

// Whose layer a message is scored and corrected with (issue 44): none (the
// site's model alone), its one recipient's, or that recipient's domain's.
enum class PerUser : std::uint8_t { off, recipient, domain };
// Choosing the user, and the rest of the layer: user_layers.hpp.

struct Settings {
    std::filesystem::path database;  // empty: not set in the file
    Scorer scorer = Scorer::linear;
    model::Parameters model;
    model::LinearParameters linear;
    features::SlotOptions slots;
    features::Options features;
    mime::Limits limits;
    std::size_t reasons = 5;          // contributions reported in each direction
    std::size_t batch_messages = 5000;  // messages per training transaction (1000 -> 5000: whole-corpus learn 0.86 -> 0.77 s)
    bool train_on_error = false;        // correct: skip scans whose confident verdict was already right
    PerUser per_user = PerUser::off;    // each mailbox's corrections shape its own verdicts (issue 44)
    // Log-odds one correction moves its user's score for the sender by, at
    // most (the layer's step; the site's is linear.step): 4, the site's.
    double per_user_step = 4.0;
    // Decisive for the user (issue 58): a correction moves the layer at least
    // as far as puts the corrected copy this many log-odds past the verdict's
    // cutoff on the user's side (a passive-aggressive step's margin), and at
    // most per_user_cap log-odds in all.
    double per_user_margin = 2.0;
    double per_user_cap = 20.0;
    // Thick-threshold training (learn, evaluate): a message the model already
    // scores on the right side by at least this many log-odds is not learned;
    // errors and everything within the margin are. 0 = learn every message.
    // 30 (with feature_confidence 1): chosen on the four development corpora in
    // both protocols (docs/accuracy.md, issue 13).
    double train_margin = 30.0;
    DaemonSettings daemon;
    ConsoleSettings console;
    // The `key = value` lines of the file, in order (the console shows them).
    std::vector<std::pair<std::string, std::string>> given;
};

class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// `source` names the text in errors ("/etc/mailsift/mailsift.conf:12: ...").
Settings parse_settings(std::string_view text, const std::string& source);
Settings load_settings(const std::filesystem::path& path);
// Sets the setting `name` from its text as the file would give it; throws
// ConfigError for an unknown name or an invalid value (the checks across
// settings, such as ham_threshold <= spam_threshold, are parse_settings()'s).
void set_setting(Settings& settings, std::string_view name, std::string_view value);
// Every setting the file may hold, in name order.
std::vector<std::string> setting_names();
// Who a setting is for, which says where it is documented and where it lives.
enum class SettingKind {
    administrator,  // how mailsift runs at this site: shown, with its default, in the shipped mailsift.conf
    model,          // what the store's counts and weights are made of: kept with the model (model_settings.hpp)
    scoring,        // how the counts are read and what is learned (`mailsift tune`); changes nothing stored
};
// nullopt: no setting of that name.
std::optional<SettingKind> setting_kind(std::string_view name);
// What `settings` holds for the setting `name`, as the file would say it
// ("on", "4M", "0.995", "off" for an unset threshold); parsing it back gives
// the same value. Throws ConfigError for an unknown name.
std::string setting_value(const Settings& settings, std::string_view name);

// The system-wide configuration file, used when it exists and none is named.
inline constexpr const char* system_config_path = "/etc/mailsift/mailsift.conf";

// The settings and database both programs use, and where each came from.
struct Resolved {
    Settings settings;
    std::filesystem::path config;     // empty: built-in defaults
    std::filesystem::path database;
    std::string database_source;      // "--db", "MAILSIFT_DB", "configuration file PATH", "default"
};
// Configuration: `config`, else $MAILSIFT_CONFIG, else system_config_path when it exists.
// Database: `database`, else $MAILSIFT_DB, else the file's `database`, else default_database_path().
// Throws ConfigError for an unreadable or invalid file.
Resolved resolve(const std::optional<std::filesystem::path>& config, const std::optional<std::filesystem::path>& database);

// $XDG_DATA_HOME/mailsift/mailsift.db, else $HOME/.local/share/mailsift/mailsift.db,
// else ./mailsift.db: a path an unprivileged user can write.
std::filesystem::path default_database_path();

}  // namespace mailsift::engine
