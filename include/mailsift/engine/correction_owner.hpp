// Whose corrections (issue 58): a correction, or its undo, changes what a
// user's mail taught only when it is made by that user, or for them by a
// trusted corrector, or by an administrator.
//
// A trainer's corrector (Trainer::set_corrector) says which: "cli:root",
// "console:NAME" and a trusted peer that names nobody ("socket:root") are
// administrators, who may correct and undo anything; "socket:vmail for
// alice@example.org" (a trusted peer naming the user: the IMAPSieve recipe's
// imap.user) and "socket:alice for alice" (an untrusted peer, always acting
// as its own Unix login) correct for that user only. The trainer refuses
// (NotYours) a correction of a scan recorded for another user, and an undo of
// another user's correction, before it changes anything; a deferred
// correction keeps its corrector, so the same rule holds when its scan
// arrives.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "mailsift/engine/settings.hpp"

namespace mailsift::engine {

// A correction refused because it is another user's to make; nothing was changed.
class NotYours : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The corrector's name for `peer` acting for `user` ("PEER for USER").
std::string corrector_for(std::string_view peer, std::string_view user);
// The user a corrector's name says it acts for; nullopt: an administrator.
std::optional<std::string> acting_for(std::string_view corrector);

// Whether `who` is the user of layer key `key` (a recipient's address, or a
// domain under per_user = domain). `who` is an address (the user as Dovecot
// or the administrator names them), matched under `per_user` as a recipient
// is; or a Unix login, which is the user of the addresses whose local part
// is that login, or the login and an extension (alice+lists@...), as
// Postfix's local delivery makes them one mailbox. A login owns no domain.
bool owns(std::string_view who, std::string_view key, PerUser per_user);

// Whether `name` is a Unix login as a user may be named: not empty, at most
// 32 bytes of letters, digits, '_', '-', '.' (no '@').
bool valid_login(std::string_view name);

// Whether two correctors' names act for the same user (an undo of a
// correction that no layer or scan names the user of: its maker's to undo).
bool same_user(std::string_view a, std::string_view b);

}  // namespace mailsift::engine
