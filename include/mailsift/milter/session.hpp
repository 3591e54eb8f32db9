// mailsift::milter::Session — the per-connection state machine.
//
// Commands in, replies out, and at the end of each message a Transaction for
// the owner to judge. Pure: no sockets, no clocks, no knowledge of spam.
// Rules it keeps:
//  - negotiation answers version min(offered, 6), and actions and steps that are
//    the AND of what the MTA offered with what the owner wants;
//  - never a reply to Macros, Abort, Quit or QuitNewConnection, nor to a step
//    negotiated as no-reply; EndOfBody's replies are the owner's verdict (judge);
//    every other command gets exactly one reply (Continue);
//  - several messages per connection; Abort resets the message in any state;
//  - message edits (headers, quarantine) go out only after EndOfBody;
//  - a command before negotiation, or an offer older than version 2, gets no
//    reply and sets Outcome::close;
//  - QuitNewConnection forgets the client, HELO, macros and message but keeps
//    the negotiated actions and steps; Negotiate starts a connection afresh;
//  - commands out of the usual order (a body before MAIL FROM, a header after
//    the body, a second MAIL FROM in one message) are still answered as above,
//    as Postfix may legitimately skip steps; Outcome::note says what was odd,
//    at most once per message, for the owner's log.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "mailsift/milter/protocol.hpp"

namespace mailsift::milter {

struct SessionOptions {
    // Actions the owner may take; AND-ed with the MTA's offer.
    std::uint32_t actions = action::add_headers | action::change_headers | action::quarantine;
    // Steps the owner wants skipped or unanswered; AND-ed with the MTA's offer.
    std::uint32_t steps = step::no_unknown | step::no_reply_connect | step::no_reply_helo | step::no_reply_mail |
                          step::no_reply_rcpt | step::no_reply_data | step::no_reply_unknown |
                          step::no_reply_header | step::no_reply_end_of_headers | step::no_reply_body |
                          step::header_leading_space;
    // Message bytes kept (headers as "Name: value\r\n" plus body); the rest is counted, not kept.
    std::size_t max_message_bytes = 4 * 1024 * 1024;
    // Parsed headers kept per message (Transaction::headers); later ones are only
    // counted. Their lines still go into Transaction::message while it has room.
    // Bounds the memory a flood of tiny headers can hold (4 MB of "a:" lines would
    // otherwise be a million Header objects).
    std::size_t max_headers = 1000;
    // Recipients kept per message (Postfix's smtpd_recipient_limit is 1000 too), and
    // distinct macro names kept; the rest are dropped, so neither can grow without bound.
    std::size_t max_recipients = 1000;
    std::size_t max_macros = 256;
    // Header fields whose names start with this prefix (case-insensitively) are
    // counted by name in Transaction::watched, every one of them, past every other
    // cap, so that the owner can delete them all (mailsiftd: "X-Mailsift-").
    // At most max_watched_names distinct names; more sets watched_overflow.
    std::string watched_header_prefix;
    // And fields of exactly these names (case-insensitively), the same way
    // (mailsiftd with spam_headers: X-Spam-Flag and X-Spam-Status).
    std::vector<std::string> watched_header_names;
    std::size_t max_watched_names = 64;
};

// One message as the MTA described it.
struct Transaction {
    std::string client_name;     // from Connect
    std::string client_address;
    char client_family = 'U';
    std::uint16_t client_port = 0;
    std::string helo;
    std::string sender;                       // MAIL FROM argument, as sent (usually "<...>")
    std::vector<std::string> recipients;      // RCPT TO arguments
    // All macros seen so far, names as the MTA sent them (Postfix: "i", "j", "{auth_authen}").
    // Those of stages 'C' and 'H' last for the connection; all others only for the message.
    std::map<std::string, std::string> macros;
    // As received, in order, kept only while their "Name: value\r\n" lines fit
    // max_message_bytes. Names keep the sender's case: compare them
    // case-insensitively. Values are exactly as sent: when
    // step::header_leading_space was negotiated (see Session::steps()) they keep
    // the space after the colon; folded values hold "\n" between lines.
    // At most SessionOptions::max_headers of them; header_count counts all.
    std::vector<Header> headers;
    std::size_t header_count = 0;
    // Fields named with SessionOptions::watched_header_prefix: (name as first
    // sent, how many), whether or not they were kept in `headers`.
    std::vector<std::pair<std::string, std::uint32_t>> watched;
    bool watched_overflow = false;            // more distinct such names than max_watched_names
    std::string message;                      // headers + blank line + body, CRLF line ends, up to the cap
    std::size_t message_bytes = 0;            // full size, even past the cap
    bool truncated = false;                   // message holds only a prefix
};

class Session {
public:
    explicit Session(SessionOptions options = {}) : options_(options) {}

    struct Outcome {
        std::vector<Reply> replies;  // to send now, in order
        bool judge = false;          // EndOfBody: call transaction(), then send the verdict's replies
        bool close = false;          // Quit: close the connection after sending replies
        // For the owner's log: with close, why the connection ends (unless it is
        // a plain Quit); else what was out of the usual order (once per message).
        std::string note;
    };
    Outcome handle(const Command& command);

    // The message completed by the last EndOfBody (valid until the next command).
    const Transaction& transaction() const { return transaction_; }
    // The negotiated actions and steps (0 before negotiation).
    std::uint32_t actions() const { return actions_; }
    std::uint32_t steps() const { return steps_; }
    bool negotiated() const { return negotiated_; }

    // Applies the negotiated options to the owner's end-of-body replies before
    // they are encoded: with header_leading_space the MTA inserts header values
    // verbatim after the colon, so non-empty values get their leading space here.
    void prepare(std::vector<Reply>& replies) const;

private:
    struct Handler;  // one handler per command (session.cpp)

    SessionOptions options_;
    Transaction transaction_;
    bool negotiated_ = false;
    bool judged_ = false;  // the last message was handed out; reset before the next one
    std::uint32_t actions_ = 0;
    std::uint32_t steps_ = 0;
    bool headers_done_ = false;
    // Where the current message is: 0 nothing yet, 1 MAIL FROM seen, 2 a header seen, 3 end of headers or body.
    int stage_ = 0;
    bool noted_ = false;  // the current message already has its note
    std::map<std::string, std::string> connection_macros_;  // stages 'C' and 'H': survive Abort
};

}  // namespace mailsift::milter
