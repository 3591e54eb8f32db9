// mailsift::mime — the date-time of RFC 5322 section 3.3 (and the obsolete
// forms of 4.3), as a Date: field or the end of a Received: field writes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mailsift::mime {

// Seconds since the Unix epoch of "[Day,] D Mon YYYY HH:MM[:SS] ZONE", where
// ZONE is +hhmm/-hhmm or an obsolete name (UT, GMT, Z, EST, EDT, CST, CDT,
// MST, MDT, PST, PDT); a comment after it is ignored. nullopt for anything
// else, or a field out of range. Never throws.
std::optional<std::int64_t> parse_date_time(std::string_view text);

// The date-time a Received: field ends with (after its last ';').
std::optional<std::int64_t> received_time(std::string_view received);

}  // namespace mailsift::mime
