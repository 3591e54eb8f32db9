// The bytes of a correction between `mailsift correct` and mailsiftd's
// correction socket (correct_socket): one request, one answer, then the
// connection closes. Text lines, with each message as a counted run of bytes:
//
//   request  MAILSIFT-CORRECT 1 ACTION COUNT BODY_BYTES [USER]\n
//                                      ACTION: spam, ham or undo; USER: whose
//                                      copies they are (correct --user), an address
//            then BODY_BYTES bytes of COUNT inputs, each
//              signature HEX32\n
//              message SIZE_BYTES LENGTH\n  and LENGTH bytes of the message
//   answer   MAILSIFT-CORRECT 1 ok COUNT\n  and a line per input, in order:
//              correct PROBLEM RESULT BY_SIGNATURE CONFIRMED DEFERRED\n
//              undo RESULT TO WAS\n        TO: ham|spam; WAS: ham|spam|none
//            or MAILSIFT-CORRECT 1 error WHY\n  (nothing was applied)
//
// PROBLEM and RESULT are the numbers of engine::MessageProblem,
// store::LearnResult and Trainer::UndoOutcome::Result; the flags are 0 or 1.
// Nothing read is trusted: each side checks every count and number against
// its bounds, and a request or answer off the format is a WireError.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "mailsift/engine/correction_job.hpp"

namespace mailsift::engine {

class WireError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct CorrectionRequest {
    CorrectionAction action = CorrectionAction::spam;
    std::string user;  // "": none said (a scan's own recipient then decides)
    std::vector<CorrectionInput> inputs;
};

inline constexpr std::size_t max_correction_head_bytes = 128;  // the request's first line, its '\n' included
inline constexpr std::size_t max_correction_inputs = 64;       // inputs in one request (the CLI sends more as more requests)
inline constexpr std::size_t max_correction_answer_bytes = 64 * 1024;
// The body a request may hold: 16 MiB, or one message of max_message_bytes
// (the CLI sends more as more requests).
constexpr std::size_t max_correction_body_bytes(std::size_t max_message_bytes) {
    constexpr std::size_t most = 16u << 20, framing = 4096;
    return max_message_bytes + framing > most ? max_message_bytes + framing : most;
}

std::string encode_request(const CorrectionRequest& request);

struct RequestHead {
    CorrectionAction action = CorrectionAction::spam;
    std::size_t count = 0;
    std::size_t body_bytes = 0;
    std::string user;  // valid_user() and without a space, or ""
};
// The first line without its '\n'. `max_body_bytes`: the largest body the reader accepts.
RequestHead parse_request_head(std::string_view line, std::size_t max_body_bytes);
// The body the head announced; a message longer than `max_message_bytes` is refused.
CorrectionRequest parse_request_body(const RequestHead& head, std::string_view body, std::size_t max_message_bytes);

std::string encode_answer(const std::vector<CorrectionResult>& results);
// `why` on one line, without control characters, at most 1,000 bytes.
std::string encode_refusal(std::string_view why);

struct CorrectionAnswer {
    std::string refused;  // not empty: mailsiftd applied nothing, and says why
    std::vector<CorrectionResult> results;
};
// The whole answer; `expected`: how many inputs the request held.
CorrectionAnswer parse_answer(std::string_view text, std::size_t expected);

}  // namespace mailsift::engine
