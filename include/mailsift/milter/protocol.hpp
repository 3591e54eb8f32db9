// mailsift::milter — the milter protocol (Sendmail 8.14 / Postfix, version 6),
// as typed values and a pure codec. No sockets, no I/O, no knowledge of spam.
//
// Wire format, both directions: a 4-byte big-endian length that counts the
// command letter and its data, then the letter, then the data. Strings are
// NUL-terminated. Letters and flag values follow libmilter's mfdef.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace mailsift::milter {

inline constexpr std::uint32_t protocol_version = 6;

// MTA -> filter command letters.
enum class CommandLetter : char {
    abort = 'A',                // SMFIC_ABORT: forget the current message
    body = 'B',                 // SMFIC_BODY: a body chunk
    connect = 'C',              // SMFIC_CONNECT: client host, family, port, address
    macros = 'D',               // SMFIC_MACRO: macros for the next command
    end_of_body = 'E',          // SMFIC_BODYEOB: end of message (may carry a last chunk)
    helo = 'H',                 // SMFIC_HELO
    quit_new_connection = 'K',  // SMFIC_QUIT_NC: end the connection's state, keep the socket
    header = 'L',               // SMFIC_HEADER: name, value
    mail = 'M',                 // SMFIC_MAIL: sender and ESMTP arguments
    end_of_headers = 'N',       // SMFIC_EOH
    negotiate = 'O',            // SMFIC_OPTNEG: version, actions, protocol steps
    quit = 'Q',                 // SMFIC_QUIT: close the connection
    rcpt = 'R',                 // SMFIC_RCPT: recipient and ESMTP arguments
    data = 'T',                 // SMFIC_DATA
    unknown = 'U',              // SMFIC_UNKNOWN: an SMTP command the MTA did not know
};

// Filter -> MTA reply letters.
enum class ReplyLetter : char {
    accept = 'a',         // SMFIR_ACCEPT: accept the message, stop filtering it
    continue_ = 'c',      // SMFIR_CONTINUE
    discard = 'd',        // SMFIR_DISCARD: accept and silently drop
    add_header = 'h',     // SMFIR_ADDHEADER: name, value (only after end of body)
    insert_header = 'i',  // SMFIR_INSHEADER: index, name, value
    change_header = 'm',  // SMFIR_CHGHEADER: index (1-based among same-name headers), name, value ("" deletes)
    negotiate = 'O',      // SMFIC_OPTNEG echoed: version, actions, protocol steps
    progress = 'p',       // SMFIR_PROGRESS: still working, reset the MTA's timer
    quarantine = 'q',     // SMFIR_QUARANTINE: reason
    reject = 'r',         // SMFIR_REJECT
    tempfail = 't',       // SMFIR_TEMPFAIL
    reply_code = 'y',     // SMFIR_REPLYCODE: "[45]dd x.y.z text"
};

// Actions the filter may take (SMFIF_*), negotiated by AND with the MTA's offer.
namespace action {
inline constexpr std::uint32_t add_headers = 0x001;
inline constexpr std::uint32_t change_body = 0x002;
inline constexpr std::uint32_t add_recipient = 0x004;
inline constexpr std::uint32_t delete_recipient = 0x008;
inline constexpr std::uint32_t change_headers = 0x010;
inline constexpr std::uint32_t quarantine = 0x020;
inline constexpr std::uint32_t change_from = 0x040;
inline constexpr std::uint32_t add_recipient_params = 0x080;
inline constexpr std::uint32_t set_symbol_list = 0x100;
}  // namespace action

// Protocol steps (SMFIP_*): steps the MTA may skip, and steps it need not wait for a reply to.
namespace step {
inline constexpr std::uint32_t no_connect = 1u << 0;
inline constexpr std::uint32_t no_helo = 1u << 1;
inline constexpr std::uint32_t no_mail = 1u << 2;
inline constexpr std::uint32_t no_rcpt = 1u << 3;
inline constexpr std::uint32_t no_body = 1u << 4;
inline constexpr std::uint32_t no_headers = 1u << 5;
inline constexpr std::uint32_t no_end_of_headers = 1u << 6;
inline constexpr std::uint32_t no_reply_header = 1u << 7;
inline constexpr std::uint32_t no_unknown = 1u << 8;
inline constexpr std::uint32_t no_data = 1u << 9;
inline constexpr std::uint32_t skip = 1u << 10;
inline constexpr std::uint32_t rcpt_rejected = 1u << 11;
inline constexpr std::uint32_t no_reply_connect = 1u << 12;
inline constexpr std::uint32_t no_reply_helo = 1u << 13;
inline constexpr std::uint32_t no_reply_mail = 1u << 14;
inline constexpr std::uint32_t no_reply_rcpt = 1u << 15;
inline constexpr std::uint32_t no_reply_data = 1u << 16;
inline constexpr std::uint32_t no_reply_unknown = 1u << 17;
inline constexpr std::uint32_t no_reply_end_of_headers = 1u << 18;
inline constexpr std::uint32_t no_reply_body = 1u << 19;
inline constexpr std::uint32_t header_leading_space = 1u << 20;
}  // namespace step

// ---- commands (MTA -> filter) ----

struct Negotiate {
    std::uint32_t version = 0;
    std::uint32_t actions = 0;
    std::uint32_t steps = 0;
};
struct Macros {
    char stage = 0;  // the command letter the macros belong to
    std::vector<std::pair<std::string, std::string>> values;
};
struct Connect {
    std::string hostname;
    char family = 'U';  // '4', '6', 'L' (unix socket), 'U' (unknown)
    std::uint16_t port = 0;
    std::string address;
};
struct Helo {
    std::string name;
};
struct Mail {
    std::vector<std::string> args;  // args[0] is the sender, e.g. "<a@example.org>"
};
struct Rcpt {
    std::vector<std::string> args;  // args[0] is the recipient
};
struct Data {};
struct Unknown {
    std::string command;
};
struct Header {
    std::string name;
    std::string value;
};
struct EndOfHeaders {};
struct Body {
    std::string chunk;
};
struct EndOfBody {
    std::string chunk;  // usually empty
};
struct Abort {};
struct Quit {};
struct QuitNewConnection {};

using Command = std::variant<Negotiate, Macros, Connect, Helo, Mail, Rcpt, Data, Unknown, Header, EndOfHeaders, Body,
                             EndOfBody, Abort, Quit, QuitNewConnection>;

// ---- replies (filter -> MTA) ----

struct NegotiateReply {
    std::uint32_t version = protocol_version;
    std::uint32_t actions = 0;
    std::uint32_t steps = 0;
};
struct Continue {};
struct Accept {};
struct Reject {};
struct Tempfail {};
struct Discard {};
struct Progress {};
struct ReplyCode {
    std::string text;  // already validated and formatted: see format_smtp_reply
};
struct AddHeader {
    std::string name;
    std::string value;
};
struct InsertHeader {
    std::uint32_t index = 0;
    std::string name;
    std::string value;
};
struct ChangeHeader {
    std::uint32_t index = 1;  // 1-based among headers with this name
    std::string name;
    std::string value;  // empty: delete the header
};
struct Quarantine {
    std::string reason;
};

using Reply = std::variant<NegotiateReply, Continue, Accept, Reject, Tempfail, Discard, Progress, ReplyCode, AddHeader,
                           InsertHeader, ChangeHeader, Quarantine>;

// ---- codec ----

enum class DecodeError : std::uint8_t {
    none,
    frame_too_large,  // the announced length exceeds max_frame_bytes
    empty_frame,      // length 0: no command letter
    unknown_command,  // a letter not in CommandLetter
    malformed,        // the data does not fit the command's layout
};
const char* describe(DecodeError e);

// Bytes in, commands out. Handles partial input and several frames per feed;
// call next() until need_more after each feed(). A frame's announced length is
// checked against max_frame_bytes as soon as its 4 bytes arrive, before the
// frame is waited for or stored. Layouts with strings are strict (missing NUL,
// missing field, unknown address family, macro name without value, or trailing
// bytes: malformed); T, N, A, Q, K ignore any data and O any bytes after its
// three numbers, as libmilter does.
// After an error the decoder stays failed and drops input: close the connection.
class Decoder {
public:
    explicit Decoder(std::size_t max_frame_bytes = 1024 * 1024) : max_frame_bytes_(max_frame_bytes) {}

    void feed(std::string_view bytes);

    enum class Status : std::uint8_t { need_more, command, error };
    // Takes the next complete command, if any, into `out`.
    Status next(Command& out);
    DecodeError error() const { return error_; }
    std::size_t buffered_bytes() const { return buffer_.size() - consumed_; }
    // Gives the buffer back when it holds nothing: the connection will not
    // read for a while (its message is being judged).
    void release_if_empty();

private:
    std::size_t max_frame_bytes_;
    std::string buffer_;
    std::size_t consumed_ = 0;
    DecodeError error_ = DecodeError::none;
};

// Appends the wire form of `reply` to `out`. Strings are cut at an embedded NUL.
void encode(const Reply& reply, std::string& out);

// Formats an SMTP reply for ReplyCode: code "4dd" or "5dd", enhanced status
// "x.y.z" whose class digit matches, and text, which may hold several lines
// ("\n"-separated, sent as "550-5.7.1 first" ... "550 5.7.1 last"). '%' is
// doubled, as the MTA treats the text as a format string. Lines are joined by
// CRLF with none at the end; one trailing "\n" is ignored; an empty line gets no
// space after the status ("550 5.7.1"). Returns nothing when the code or status
// is invalid or the text has CR, NUL, TAB, DEL or other control bytes.
std::optional<std::string> format_smtp_reply(std::string_view code, std::string_view enhanced, std::string_view text);

}  // namespace mailsift::milter
