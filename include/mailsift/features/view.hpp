// mailsift::features view — the one text of a message that the linear scorer's
// byte 4-grams read, the same wherever the message is met: at the milter (CRLF
// line ends, headers rebuilt from name and value), in a mailbox or a Junk folder
// (LF line ends, the delivery path's trace fields in front, mailsift's own
// X-Mailsift-* fields at the end of the header block), or in a file given to
// the CLI (perhaps with an mbox "From " line).
//
// The view is the message's header fields, in order, each as "Name:value\n" with
// its folding undone and the space after the colon dropped, then "\n" and the
// body with every CRLF turned into LF, cut at `max_bytes`. Left out, because
// the delivery path adds or rewrites them after the milter has scored the
// message, or because they are mailsift's own verdict:
//   Received, Return-Path, Delivered-To, X-Original-To, Envelope-To,
//   X-Envelope-From, X-Envelope-To and every X-Mailsift-* field.
// (Received fields also carry where and when a corpus was collected; SpamAssassin
// keeps only the last two and rspamd none: ../shared/ACCURACY.md, "Traps".)
// A rehearsal sample keeps the view; the scorer's slots are always taken from
// a view (slots.hpp), never from raw bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mailsift::features {

// Replaces `out` with the view of `raw`, at most `max_bytes` long.
void message_view(std::string_view raw, std::size_t max_bytes, std::string& out);
inline std::string message_view(std::string_view raw, std::size_t max_bytes) {
    std::string out;
    message_view(raw, max_bytes, out);
    return out;
}
// Whether a header field of this name is left out of the view.
bool left_out_of_view(std::string_view name);

}  // namespace mailsift::features
