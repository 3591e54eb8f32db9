// Console accounts: the file, Argon2id hashes through libsodium (accounts.hpp).
#include "mailsift/console/accounts.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sodium.hpp"

namespace mailsift::console {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

bool is_argon2_hash(std::string_view h) {
    return h.starts_with("$argon2id$") || h.starts_with("$argon2i$");
}

void check_password(std::string_view password) {
    if (password.size() < min_password_bytes) {
        throw AccountRefused("the password is too short: at least " + std::to_string(min_password_bytes) + " characters");
    }
    if (password.size() > max_password_bytes) {
        throw AccountRefused("the password is too long: at most " + std::to_string(max_password_bytes) + " bytes");
    }
    if (password.find_first_of("\r\n") != std::string_view::npos || password.find('\0') != std::string_view::npos) {
        throw AccountRefused("the password holds a line break or a NUL byte");
    }
}

// Writes all of `data` to fd; false with errno set.
bool write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

}  // namespace

const char* to_string(Role r) { return r == Role::admin ? "admin" : "viewer"; }

std::optional<Role> parse_role(std::string_view text) {
    if (text == "viewer") return Role::viewer;
    if (text == "admin") return Role::admin;
    return std::nullopt;
}

bool valid_account_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    for (const char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                        c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

std::string hash_password(std::string_view password) {
    ensure_sodium();
    std::array<char, crypto_pwhash_STRBYTES> out{};
    if (crypto_pwhash_str(out.data(), password.data(), password.size(), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                          crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0) {
        throw AccountsError("cannot hash the password: out of memory (Argon2id needs " +
                            std::to_string(crypto_pwhash_MEMLIMIT_INTERACTIVE >> 20) + " MiB)");
    }
    return std::string(out.data());
}

bool verify_password(const std::string& hash, std::string_view password) {
    ensure_sodium();
    if (!is_argon2_hash(hash)) return false;
    return crypto_pwhash_str_verify(hash.c_str(), password.data(), password.size()) == 0;
}

Accounts Accounts::load(const std::filesystem::path& path) {
    Accounts a;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return a;  // no accounts yet
    std::ifstream in(path);
    if (!in) throw AccountsError(path.string() + ": cannot read the console accounts: " + errno_text(errno));
    std::string line;
    for (std::size_t n = 1; std::getline(in, line); ++n) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const std::size_t first = line.find_first_not_of(" \t");
        if (first == std::string::npos || line[first] == '#') continue;
        const std::string where = path.string() + ":" + std::to_string(n) + ": ";
        const std::size_t c1 = line.find(':');
        const std::size_t c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
        if (c2 == std::string::npos) throw AccountsError(where + "expected NAME:ROLE:HASH");
        Account acc;
        acc.name = line.substr(0, c1);
        const std::string role = line.substr(c1 + 1, c2 - c1 - 1);
        acc.hash = line.substr(c2 + 1);
        if (!valid_account_name(acc.name)) throw AccountsError(where + "'" + acc.name + "' is not an account name");
        const auto r = parse_role(role);
        if (!r) throw AccountsError(where + "the role '" + role + "' is neither viewer nor admin");
        acc.role = *r;
        if (!is_argon2_hash(acc.hash)) throw AccountsError(where + "the password hash is not an Argon2 hash");
        if (a.find(acc.name) != nullptr) throw AccountsError(where + "'" + acc.name + "' is there twice");
        a.accounts_.push_back(std::move(acc));
    }
    if (in.bad()) throw AccountsError(path.string() + ": read error");
    return a;
}

void Accounts::save(const std::filesystem::path& path, std::optional<unsigned> group) const {
    std::ostringstream text;
    text << "# mailsift web console accounts, NAME:ROLE:HASH (Argon2id).\n"
            "# Written by 'mailsift console-user'; see mailsift(1).\n";
    for (const Account& a : accounts_) text << a.name << ':' << to_string(a.role) << ':' << a.hash << '\n';

    struct stat old {};
    const bool existed = ::stat(path.c_str(), &old) == 0;
    std::string tmp = path.string() + ".XXXXXX";
    const int fd = ::mkstemp(tmp.data());
    if (fd < 0) throw AccountsError(path.string() + ": cannot write the console accounts: " + errno_text(errno));
    auto fail = [&](const std::string& what) {
        const int e = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        throw AccountsError(path.string() + ": " + what + ": " + errno_text(e));
    };
    // The hashes are not the passwords, but they let an attacker guess offline: not for everyone.
    if (::fchmod(fd, existed ? (old.st_mode & 07777) : 0640) != 0) fail("cannot set the file's mode");
    if (existed) {
        if (::fchown(fd, old.st_uid, old.st_gid) != 0 && errno != EPERM) fail("cannot keep the file's owner");
    } else if (group) {
        // Only root may give a file away; anyone else keeps their own group.
        if (::fchown(fd, static_cast<uid_t>(-1), static_cast<gid_t>(*group)) != 0 && errno != EPERM) {
            fail("cannot set the file's group");
        }
    }
    if (!write_all(fd, text.str())) fail("cannot write the console accounts");
    if (::fsync(fd) != 0) fail("cannot write the console accounts");
    if (::close(fd) != 0) {
        const int e = errno;
        ::unlink(tmp.c_str());
        throw AccountsError(path.string() + ": cannot write the console accounts: " + errno_text(e));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        ::unlink(tmp.c_str());
        throw AccountsError(path.string() + ": cannot replace the console accounts: " + errno_text(e));
    }
}

const Account* Accounts::find(std::string_view name) const {
    for (const Account& a : accounts_) {
        if (a.name == name) return &a;
    }
    return nullptr;
}

Account* Accounts::find_mutable(std::string_view name) {
    for (Account& a : accounts_) {
        if (a.name == name) return &a;
    }
    return nullptr;
}

void check_account_name(std::string_view name) {
    if (!valid_account_name(name)) {
        throw AccountRefused("'" + std::string(name) + "' is not an account name: 1-64 of A-Z a-z 0-9 . _ -");
    }
}

void Accounts::add(std::string_view name, Role role, std::string_view password) {
    check_account_name(name);
    if (find(name) != nullptr) throw AccountRefused("'" + std::string(name) + "' exists already");
    check_password(password);
    accounts_.push_back({std::string(name), role, hash_password(password)});
}

void Accounts::set_password(std::string_view name, std::string_view password) {
    Account* a = find_mutable(name);
    if (a == nullptr) throw AccountRefused("no account '" + std::string(name) + "'");
    check_password(password);
    a->hash = hash_password(password);
}

void Accounts::set_role(std::string_view name, Role role) {
    Account* a = find_mutable(name);
    if (a == nullptr) throw AccountRefused("no account '" + std::string(name) + "'");
    a->role = role;
}

void Accounts::remove(std::string_view name) {
    for (auto it = accounts_.begin(); it != accounts_.end(); ++it) {
        if (it->name == name) {
            accounts_.erase(it);
            return;
        }
    }
    throw AccountRefused("no account '" + std::string(name) + "'");
}

std::optional<Role> Accounts::authenticate(std::string_view name, std::string_view password) const {
    // An unknown name costs the same as a known one: a hash of a random password, made once.
    static const std::string decoy = [] {
        ensure_sodium();
        std::array<unsigned char, 32> random{};
        randombytes_buf(random.data(), random.size());
        return hash_password(std::string_view(reinterpret_cast<const char*>(random.data()), random.size()));
    }();
    const Account* a = find(name);
    const bool ok = verify_password(a != nullptr ? a->hash : decoy, password);
    if (a == nullptr || !ok) return std::nullopt;
    return a->role;
}

AccountsLock::AccountsLock(const std::filesystem::path& path) {
    const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) throw AccountsError(dir.string() + ": cannot open the accounts file's directory: " + errno_text(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
        if (errno == EINTR) continue;
        const int e = errno;
        ::close(fd_);
        throw AccountsError(dir.string() + ": cannot lock: " + errno_text(e));
    }
}

AccountsLock::~AccountsLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace mailsift::console
