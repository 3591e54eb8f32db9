// mailsift::engine — what is wrong with the bytes given as a message, looked
// at before parsing (check_message), and the mbox "From " line a saved
// message may start with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mailsift/mime/message.hpp"

namespace mailsift::engine {

// What is wrong with the bytes given as a message. Only `empty` and
// `not_a_message` refuse it (refused()): everything an MTA would deliver is
// mail, NUL bytes, bare CR or LF, 8-bit or malformed headers, a missing body,
// unknown charsets and broken MIME included, and is learned and scored the way
// mailsiftd scores it. The others are notes on what was read.
enum class MessageProblem : std::uint8_t {
    none,
    empty,            // no bytes at all
    not_a_message,    // not a single header field line ("Name: value") in the header section
    too_large,        // larger than limits.max_message_bytes: learned and scored on that prefix
    truncated_mime,   // a multipart whose closing boundary never came: learned and scored on what was read
};
const char* describe(MessageProblem p);
constexpr bool refused(MessageProblem p) { return p == MessageProblem::empty || p == MessageProblem::not_a_message; }

// The message without an mbox "From " envelope line at its very start (a
// message saved from a mailbox file has one; it is not part of the message).
std::string_view without_from_line(std::string_view raw);

// A cheap look at the bytes before parsing. `size_bytes` is the full size of
// the input (it may exceed raw.size()). Never `truncated_mime`: that takes the parse.
MessageProblem check_message(std::string_view raw, std::size_t size_bytes, const mime::Limits& limits);

}  // namespace mailsift::engine
