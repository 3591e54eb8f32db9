// mailsift::engine user layers — what a user's layer (per_user, issue 44)
// holds, read from the corrections that stepped it: `mailsift stats --user`
// and `mailsift forget-user` report it.
//
// A layer is one weight for each sender the user corrected
// (features::personal_slots); each correction's undo record keeps its step in
// the layer, with the user and the sender, so the layer can be read, and
// taken back, from the corrections alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mailsift/engine/settings.hpp"
#include "mailsift/store/scan_log.hpp"

namespace mailsift::engine {

// The key of a user's layer for `name` as an administrator gives it: an
// address, keyed under `per_user` (recipient when off: the layers a database
// holds are whatever it was trained with), or a domain, lower-cased; nullopt
// when it is neither.
std::optional<std::string> layer_key(PerUser per_user, std::string_view name);

struct UserLayer {
    struct Sender {
        std::string address;
        double log_odds = 0.0;        // what the layer adds to the user's score for it (collisions aside)
        std::size_t corrections = 0;  // standing corrections of its mail
        std::int64_t last_at = 0;     // the latest
    };
    std::size_t to_spam = 0, to_ham = 0;  // standing corrections that stepped the layer
    std::size_t undone = 0;               // undone since (their step taken back)
    std::vector<Sender> senders;          // by |log_odds|, largest first
};

// The layer the corrections describe (ScanLog::layer_corrections' records of one user).
UserLayer user_layer(const std::vector<store::CorrectionRecord>& corrections);

// Every user with a layer, as `stats --users` lists them: the most standing
// corrections first (then the latest first, then by name), from
// ScanLog::layer_corrections("") (every user's records). A user whose
// corrections are all undone has no layer and is not listed.
struct LayerUser {
    std::string user;
    std::size_t to_spam = 0, to_ham = 0;  // standing corrections
    std::size_t senders = 0;              // senders they corrected
    std::int64_t last_at = 0;             // the latest standing correction
};
std::vector<LayerUser> layer_users(const std::vector<store::CorrectionRecord>& corrections);

// What mailsiftd got wrong for a user, as their corrections tell: the
// standing corrections that stepped their layer, by what mailsiftd had said,
// per message delivered to them in the history kept (HistoryQuery::recipient:
// the lines whose RCPT TO or To: holds the key). Only corrections made since
// the oldest of those lines count, so that a history pruned after keep_scans
// does not leave corrections without their messages.
struct UserErrors {
    std::uint64_t messages = 0;       // history lines delivered to them
    std::int64_t since = 0;           // the oldest one's time; 0: none
    std::size_t false_positives = 0;  // said spam, corrected to ham
    std::size_t false_negatives = 0;  // said ham, corrected to spam
    std::size_t unsure = 0;           // said unsure, corrected either way
    // Percent of `messages`; 0 without any.
    double false_positive_percent() const;
    double false_negative_percent() const;
};

// `key` as layer_key() gives it; `corrections` as layer_corrections(key) read them.
UserErrors user_errors(store::ScanLog& log, const std::string& key,
                       const std::vector<store::CorrectionRecord>& corrections);

// Their JSON, one shape for `stats --user --json` and the console's Users page
// (Json: an nlohmann::json type, which this module does not depend on).
template <class Json>
Json user_errors_json(const UserErrors& e) {
    return Json{{"since", e.since},
                {"false_positives", e.false_positives},
                {"false_negatives", e.false_negatives},
                {"unsure", e.unsure},
                {"false_positive_percent", e.false_positive_percent()},
                {"false_negative_percent", e.false_negative_percent()}};
}


}  // namespace mailsift::engine
