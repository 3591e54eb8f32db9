// libsodium, initialised before first use by the console's files (accounts, sessions).
#pragma once

#include <sodium.h>

#include "mailsift/console/accounts.hpp"

namespace mailsift::console {

// sodium_init() is thread-safe and does its work once; it fails only without a
// usable random source.
inline void ensure_sodium() {
    if (sodium_init() < 0) throw AccountsError("libsodium cannot be initialised (no random source)");
}

}  // namespace mailsift::console
