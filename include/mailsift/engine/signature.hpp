// mailsift::engine — what a message is known by: its digest (the same
// whichever way it came), the X-Mailsift-Signature mailsiftd tags it with,
// and the verdict word of X-Mailsift-Status. Corrections, undo and the scan
// log key messages by these.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mailsift/mime/message.hpp"
#include "mailsift/model/score.hpp"
#include "mailsift/store/common.hpp"

namespace mailsift::engine {

// Same message, same digest, whichever way it came: our own X-Mailsift-*
// fields are left out (a message we tagged is recognised when it comes back
// for correction), and so are what the transport changes: an mbox "From "
// line, CRLF or LF line ends, the spaces after a field's colon (read as one).
// So mailsiftd's digest of a message rebuilt from milter frames is the digest
// of the same message in a file, and its rehearsal draws are evaluate's.
store::Digest message_digest(std::string_view raw);
// message_digest(), and the digest mailsift gave the same bytes before it
// read through line ends, mbox lines and field spacing (stores of 2026-11-28
// and before), or nothing when that is the same: what a message learned then
// is stored under. One pass over the message when nothing differs.
struct MessageDigests {
    store::Digest now{};
    std::optional<store::Digest> earlier;
};
MessageDigests message_digests(std::string_view raw);
inline std::optional<store::Digest> earlier_message_digest(std::string_view raw) { return message_digests(raw).earlier; }

// The X-Mailsift-Signature form of a digest (32 lower-case hex digits), and back.
std::string signature_text(const store::Digest& d);
std::optional<store::Digest> parse_signature(std::string_view text);

// The signature mailsiftd tagged a message with: the last well-formed
// X-Mailsift-Signature of its header (mailsiftd removes forged ones when the MTA
// lets it, and adds its own after them), or nothing.
std::optional<store::Digest> message_signature(const std::vector<mime::Header>& headers);
std::optional<store::Digest> message_signature(std::string_view raw);  // reads the header section
// What a message is learned, unlearned and corrected under: its signature, else
// its message_digest(). So a delivered message and its recorded scan are one
// message, whichever way and whenever it is corrected.
store::Digest message_identity(std::string_view raw);

// The verdict word that starts X-Mailsift-Status ("Yes", "No", "Unsure"), and
// the verdict of such a header value ("No, score=0.1000, ...").
const char* verdict_word(model::Verdict v);
std::optional<model::Verdict> verdict_of_status(std::string_view status);

}  // namespace mailsift::engine
