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


}  // namespace mailsift::engine
