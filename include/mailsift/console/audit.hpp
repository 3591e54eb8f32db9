// mailsift::console audit trail: one line per sign-in (succeeded, failed,
// refused by the limiter), sign-out, scan, learn, correction, undo and account
// change, in a fixed format that a regular expression can match (the shipped
// fail2ban filter, etc/fail2ban/filter.d/mailsiftd-console.conf, matches failed
// sign-ins):
//
//   console audit: event=EVENT outcome=OUTCOME account=NAME role=ROLE client=ADDRESS [forwarded=ADDRESS] target=WHAT
//
// Every value is one word: a character outside A-Z a-z 0-9 . _ : @ / + - (a
// name typed at the sign-in may hold anything, a newline included) becomes
// '?', a value is cut at 64 characters, and an empty one is "-"; the target
// alike but longer (audit_target). Events: sign-in, sign-out, scan, learn,
// correct, undo (a correction undone: undone, withdrawn, or why not, with
// CLASS:SIGNATURE), account, and every read of the history: history (a page) and
// export, whose target says how many lines and with which filter. The line is
// mailsiftd's to write (daemon::log_audit, the only writer whose lines begin
// "console audit:"); the console only says what happened (Services::audit).
#pragma once

#include <string>
#include <string_view>

namespace mailsift::console {

struct AuditEvent {
    std::string event;      // sign-in, sign-out, scan, learn, correct, undo, account, history, export
    std::string outcome;    // sign-in: ok, failed, limited, refused; learn/correct: what the store did; ...
    std::string account;    // the account acted as (at a sign-in: the name given)
    std::string role;       // admin, viewer, or "" when not known (a failed sign-in)
    std::string client;     // the peer's address
    std::string forwarded;  // the address a trusted proxy forwarded for ("": no proxy; not shown)
    std::string target;     // what was acted on: a signature, a class, an account's change
};

// The event's line, without a newline.
std::string audit_line(const AuditEvent& e);

// One word of the line: see above.
std::string audit_word(std::string_view value);

// The target, one word too, but up to max_audit_target characters ("..."
// after them) and with the characters of a URL's query string kept (= & % ,):
// a history page or export names the filter it was asked with, as
// "[FORMAT:]LINES:QUERY" (csv:240:sender=alice%40example.org&order=oldest).
inline constexpr std::size_t max_audit_target = 512;
std::string audit_target(std::string_view value);

}  // namespace mailsift::console
