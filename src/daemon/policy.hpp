// What mailsiftd answers for one message: pure functions from a finished milter
// transaction and a verdict (or a failure) to milter replies. No I/O.
//
// Every answer first removes any X-Mailsift-* header that came from outside,
// so nobody can forge our verdict, then adds ours; edits are only sent when the
// MTA granted the action in negotiation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mailsift/engine/scorer.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/features/extractor.hpp"
#include "mailsift/milter/session.hpp"

namespace mailsift::daemon {

enum class Action : std::uint8_t { accepted, tagged_subject, quarantined, rejected, tempfailed, skipped };
const char* to_string(Action a);

struct Answer {
    std::vector<milter::Reply> replies;
    Action action = Action::accepted;
};

// The envelope facts the features module can use.
features::Envelope envelope_of(const milter::Transaction& t);

// Why a message is not scored at all, or "" when it should be.
std::string skip_reason(const milter::Transaction& t, const engine::DaemonSettings& d, std::size_t max_message_bytes);

Answer answer_scored(const milter::Transaction& t, std::uint32_t actions, const engine::Classification& c,
                     const engine::DaemonSettings& d, std::string_view signature);
Answer answer_skipped(const milter::Transaction& t, std::uint32_t actions, std::string_view reason);
// More differently named X-Mailsift-* fields than the session counts
// (milter::Transaction::watched_overflow): they cannot all be removed, so a 5xx.
Answer answer_unremovable_headers();
// Scoring failed (no database, internal error): the configured default action.
Answer answer_failed(const milter::Transaction& t, std::uint32_t actions, const engine::DaemonSettings& d,
                     std::string_view reason);

}  // namespace mailsift::daemon
