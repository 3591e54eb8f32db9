// mailsift::console accounts — who may use the web console, and as what.
//
// The accounts file (`console_users` in mailsift.conf) holds one account per
// line, `NAME:ROLE:HASH`, blank lines and '#' comments allowed. ROLE is
// `viewer` (status, history, explanations) or `admin` (also correct, learn and
// scan). HASH is libsodium's crypto_pwhash_str encoding of Argon2id, a
// memory-hard hash carrying its own salt and cost (`$argon2id$v=19$m=...`):
// the password itself is never stored. The CLI (`mailsift console-user`)
// writes the file; mailsiftd only reads it.
//
// Knows nothing of HTTP, sessions or the store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mailsift::console {

enum class Role : std::uint8_t { viewer, admin };
const char* to_string(Role r);
std::optional<Role> parse_role(std::string_view text);

// 1-64 of A-Z a-z 0-9 . _ - (it is shown in pages and logs, and ':' separates fields).
bool valid_account_name(std::string_view name);
// Throws AccountRefused saying what a name may be, unless valid_account_name.
void check_account_name(std::string_view name);
// Passwords shorter than this are refused: an Argon2 hash does not save a guessable one.
constexpr std::size_t min_password_bytes = 10;
constexpr std::size_t max_password_bytes = 4096;

// A file that cannot be read, written or understood (its path, and the line).
class AccountsError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};
// A change refused: a bad name or password, an account that exists or does not.
class AccountRefused : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Argon2id through libsodium at its "interactive" cost (64 MiB, 2 passes:
// about 0.1 s on one core). Throws AccountsError if libsodium fails (out of memory).
std::string hash_password(std::string_view password);
// Constant time in the password (libsodium); false for a malformed hash.
bool verify_password(const std::string& hash, std::string_view password);

struct Account {
    std::string name;
    Role role = Role::viewer;
    std::string hash;
};

class Accounts {
public:
    // The accounts in `path`; none if it does not exist. Throws AccountsError
    // naming PATH:LINE for a line that is not NAME:ROLE:HASH.
    static Accounts load(const std::filesystem::path& path);
    // Writes every account to `path` at once (a new file renamed over the old),
    // keeping the old file's owner, group and mode; a new file gets mode 0640
    // and, when `group` is given and we may, that group (the daemon's user reads it).
    void save(const std::filesystem::path& path, std::optional<unsigned> group = std::nullopt) const;

    const std::vector<Account>& all() const { return accounts_; }
    const Account* find(std::string_view name) const;

    // Throw AccountRefused saying what is wrong: a bad name, a password too short
    // or too long, an account that exists (add) or does not (set_*, remove).
    void add(std::string_view name, Role role, std::string_view password);
    void set_password(std::string_view name, std::string_view password);
    void set_role(std::string_view name, Role role);
    void remove(std::string_view name);

    // The account's role when `password` is its password. One hash is verified
    // whether or not the name exists, so the time taken does not tell which.
    std::optional<Role> authenticate(std::string_view name, std::string_view password) const;

private:
    Account* find_mutable(std::string_view name);
    std::vector<Account> accounts_;
};

// Runs `change` on the accounts in `path` and saves them, with the directory
// locked (flock) so that two changes at once do not lose one.
template <class Change>
void update_accounts(const std::filesystem::path& path, std::optional<unsigned> group, Change&& change);

// The lock update_accounts holds: the directory of `path`, flock'ed exclusively.
class AccountsLock {
public:
    explicit AccountsLock(const std::filesystem::path& path);
    ~AccountsLock();
    AccountsLock(const AccountsLock&) = delete;
    AccountsLock& operator=(const AccountsLock&) = delete;

private:
    int fd_ = -1;
};

template <class Change>
void update_accounts(const std::filesystem::path& path, std::optional<unsigned> group, Change&& change) {
    AccountsLock lock(path);
    Accounts accounts = Accounts::load(path);
    change(accounts);
    accounts.save(path, group);
}

}  // namespace mailsift::console
