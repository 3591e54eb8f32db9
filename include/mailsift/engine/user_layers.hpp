// mailsift::engine user layers — the per-user layer (per_user, issues 44
// and 58) in one room: whose layer a message is scored and corrected with
// (mailsiftd's milter, `evaluate --deployed` and the correction routes all
// choose it here), the sender it is keyed by, the step a correction takes in
// it, and what a layer holds, read from the corrections that stepped it
// (`mailsift stats --user`, `--users`, `forget-user`, the console's Users page).
//
// A layer is one weight for each sender the user corrected
// (features::personal_slots, the slots); each correction's undo record keeps
// its step in the layer, with the user and the sender, so the layer can be
// read, and taken back, from the corrections alone (Trainer: the step taken,
// undone, forgotten; an export leaves it out, correction_codec).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mailsift/engine/settings.hpp"
#include "mailsift/store/scan_log.hpp"

namespace mailsift::mime {
struct ParsedMessage;
}

namespace mailsift::engine {

// --- Whose layer

// The user of a message with the one recipient `address` (in angle brackets
// or not): the address or its domain, lower-cased; nullopt when per_user is
// off or the address is not one (no '@', or a control byte).
std::optional<std::string> user_of(PerUser per_user, std::string_view address);

// The user a message is scored and corrected for, from its recipients as the
// milter has them (RCPT TO): the one recipient's; several, or none: nullopt,
// the site's model alone, so that no verdict shows what another recipient
// taught. mailsiftd and `evaluate --deployed` both choose it here.
std::optional<std::string> message_user(PerUser per_user, const std::vector<std::string>& recipients);

// --- Keyed by which sender: the From address, as the features hold it

// The sender of a message (its From's address, lower-cased; "" without one).
std::string layer_sender(const mime::ParsedMessage& message);
// The sender a feature names, when it is the From's ("hdr:from:ADDRESS"), as
// a scan's lines and a message's features hold it; nullopt for any other.
std::optional<std::string_view> layer_sender_of(std::string_view feature_text);

// --- The step a correction takes in it

// The linear score at which a verdict becomes spam (`spam`), or at or below
// which ham: on the log-odds when set, else on P = sigma(z / temperature).
double verdict_cutoff(const Settings& settings, bool spam);
// How far a correction moves the user's score for the sender (log-odds, >= 0):
// the learner's own step (`learned`), or as much more as puts the corrected
// copy, scored `user_z` for the user before, per_user_margin past the
// verdict's cutoff on their side, whatever the site says of the sender (a
// passive-aggressive step's margin, Crammer et al. 2006), at most per_user_cap.
double layer_move(const Settings& settings, double user_z, bool spam, double learned);

// --- What it holds

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
