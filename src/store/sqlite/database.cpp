// The SQLite backend's connection: opening (and creating) the file, errors in
// words, what tells a reader the database changed, and statistics. Its other
// jobs have a file each: schema.cpp, counts.cpp (counts and learned messages),
// scans.cpp, contacts.cpp, maintenance.cpp (prune, backup), export.cpp.
#include "internal.hpp"

#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>

namespace mailsift::store {

namespace {

// flock() on a directory, released when it goes out of scope.
class DirectoryLock {
public:
    DirectoryLock() = default;
    ~DirectoryLock() {
        if (fd_ >= 0) ::close(fd_);  // releases the lock
    }
    DirectoryLock(const DirectoryLock&) = delete;
    DirectoryLock& operator=(const DirectoryLock&) = delete;
    void lock(const std::filesystem::path& dir) {
        fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd_ < 0) return;  // then no turns: the creation itself reports what is wrong with the directory
        while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
        }
    }

private:
    int fd_ = -1;
};

}  // namespace

// ---- SqliteDatabase ----

SqliteDatabase::SqliteDatabase(std::filesystem::path path, Mode mode, std::chrono::milliseconds busy_timeout, Create create)
    : path_(std::move(path)), mode_(mode), busy_timeout_(busy_timeout) {
    std::error_code ec;
    bool exists = std::filesystem::exists(path_, ec);
    // Not "missing" when it cannot be looked at (a directory this user may not
    // enter): creating one, or removing a "stale" log, would be wrong, and the
    // reason is what the user needs to hear.
    if (ec) throw Error(path_, "cannot open database: " + ec.message());
    if (mode_ == Mode::read_write && create == Create::never && !exists) throw Error(path_, "no such database");
    if (mode_ == Mode::read_only && !exists) {
        throw Error(path_, "no such database (train one first with 'mailsift learn')");
    }
    if (!exists && path_.has_parent_path()) {
        const auto dir = path_.parent_path();
        if (!std::filesystem::exists(dir, ec)) {
            std::filesystem::create_directories(dir, ec);
            if (ec) throw Error(path_, "cannot create directory " + dir.string() + ": " + ec.message());
            ::chmod(dir.c_str(), 0750);
        }
    }
    // Processes that create the database at the same moment take turns (a lock on
    // its directory, held until the new file is set up): one creates it, the
    // others find it made; none removes another's fresh -wal as a stale one.
    DirectoryLock creating;
    if (!exists && mode_ == Mode::read_write) {
        creating.lock(path_.has_parent_path() ? path_.parent_path() : std::filesystem::path("."));
        exists = std::filesystem::exists(path_, ec);
    }
    if (!exists && mode_ == Mode::read_write) {
        // A -wal or -shm without its database belongs to a deleted one: SQLite would
        // apply that old log to the new file (and share the old index), so it goes first.
        for (const char* suffix : {"-wal", "-shm", "-journal"}) {
            const std::string companion = path_.string() + suffix;
            if (::unlink(companion.c_str()) != 0 && errno != ENOENT) {
                throw Error(companion, std::string("left by a deleted database and cannot be removed: ") + std::strerror(errno));
            }
        }
    }
    const int flags = mode_ == Mode::read_only     ? SQLITE_OPEN_READONLY
                      : create == Create::never ? SQLITE_OPEN_READWRITE
                                                : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    // The database is created 0640 (umask 027) so other local users cannot read what was learned.
    const mode_t old_mask = exists ? 0 : ::umask(027);
    const int rc = sqlite3_open_v2(path_.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
    if (!exists) ::umask(old_mask);
    if (rc != SQLITE_OK) {
        const std::string msg = db_ ? error_text() : sqlite3_errstr(rc);
        sqlite3_close(db_);
        db_ = nullptr;
        throw Error(path_, "cannot open database: " + msg);
    }
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, static_cast<int>(busy_timeout.count()));
    if (mode_ == Mode::read_only) {
        // A reader leaves the log to the writers: closing the last connection
        // would otherwise checkpoint it, a write that a command reading one
        // message's rows (a classify from a delivery recipe) pays for in full.
        // Writers keep SQLite's default: the last to close checkpoints and
        // removes the log, so that the next to open has none to recover.
        sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    }
    try {
        // Is it an SQLite database at all? Reading the schema tells.
        exec("SELECT count(*) FROM sqlite_schema");
        if (mode_ == Mode::read_write) {
            // SQLite quietly opens a file it may not write read-only; a writer says so at once.
            if (sqlite3_db_readonly(db_, "main") == 1) {
                fail("cannot write the database: permission denied (uid " + std::to_string(::geteuid()) +
                     " may only read it)");
            }
            // Switching a new file to WAL needs it to itself for a moment, and SQLite
            // answers BUSY at once rather than waiting: when several processes
            // create the database together, wait for the others here.
            const auto deadline = std::chrono::steady_clock::now() + busy_timeout_;
            while (sqlite3_exec(db_, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr) != SQLITE_OK) {
                if ((sqlite3_errcode(db_) & 0xFF) != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline) {
                    fail("cannot switch the database to WAL: " + error_text());
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
            exec("PRAGMA synchronous = NORMAL");
            // A training batch touches tens of thousands of feature rows; SQLite's
            // default 2 MiB page cache would read and write the same pages over again.
            exec("PRAGMA cache_size = -32768");
            migrate();
        } else {
            const int version = user_version();
            check_version(version);
            if (version < schema_version) {
                // An older database is upgraded in place once, through a short-lived
                // writer; a reader that may not write says so.
                try {
                    SqliteDatabase upgrade(path_, Mode::read_write, busy_timeout);
                } catch (const Error& e) {
                    fail("database schema version " + std::to_string(version) + " is older than this mailsift's (" +
                         std::to_string(schema_version) + ") and could not be upgraded: " + e.what());
                }
            }
        }
        st_ = std::make_unique<Statements>(db_, path_);
        dictionaries_ = std::make_unique<ScanDictionaries>();
    } catch (...) {
        sqlite3_close(db_);
        db_ = nullptr;
        throw;
    }
}

void SqliteDatabase::for_few_messages() {
    if (mode_ == Mode::read_write) exec("PRAGMA cache_size = -2000");  // SQLite's default; see the constructor
    few_messages_ = true;
}

void SqliteDatabase::for_recording() {
    if (mode_ == Mode::read_write) exec("PRAGMA cache_size = -2000");  // SQLite's default; see the constructor
}

void SqliteDatabase::for_requests() {
    if (mode_ != Mode::read_write) return;
    // A hook of our own replaces SQLite's, which checkpoints inside the commit.
    sqlite3_wal_hook(
        db_,
        [](void* self, sqlite3*, const char*, int pages) {
            static_cast<SqliteDatabase*>(self)->log_pages_ = pages;
            return SQLITE_OK;
        },
        this);
}

void SqliteDatabase::checkpoint() noexcept {
    constexpr int sqlite_default_pages = 1000;  // SQLITE_DEFAULT_WAL_AUTOCHECKPOINT
    if (log_pages_ < sqlite_default_pages) return;
    log_pages_ = 0;
    sqlite3_wal_checkpoint_v2(db_, "main", SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
}

SqliteDatabase::~SqliteDatabase() {
    dictionaries_.reset();
    st_.reset();
    if (db_ != nullptr) sqlite3_close(db_);
}

void SqliteDatabase::fail(const std::string& what) const { throw Error(path_, what); }

std::string SqliteDatabase::error_text() const {
    if (db_ == nullptr) return "out of memory";
    const int rc = sqlite3_extended_errcode(db_);
    switch (rc & 0xFF) {
        case SQLITE_BUSY: {
            const auto ms = busy_timeout_.count();
            const std::string waited = ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
            return "database is locked by another process (waited " + waited + "); try again when it has finished";
        }
        case SQLITE_READONLY:
            return std::string(sqlite3_errmsg(db_)) + " (no permission to write the file, its directory, or its -wal/-shm files)";
        case SQLITE_FULL:
            return "database or disk is full (no space left where the database is; nothing of this transaction was written)";
        default: return sqlite3_errmsg(db_);
    }
}

void SqliteDatabase::exec(const char* sql) {
    char* err = nullptr;
    if (const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err); rc != SQLITE_OK) {
        const int primary = rc & 0xFF;
        std::string msg = err && primary != SQLITE_BUSY && primary != SQLITE_FULL && primary != SQLITE_READONLY ? err : error_text();
        sqlite3_free(err);
        if (msg == "file is not a database") msg = "not a mailsift database (file is not an SQLite database)";
        fail(msg);
    }
}

std::uint64_t SqliteDatabase::data_version() {
    Use s(st_->data_version);
    if (sqlite3_step(*s) != SQLITE_ROW) fail(std::string("cannot read data_version: ") + error_text());
    return static_cast<std::uint64_t>(sqlite3_column_int64(*s, 0));
}

std::string SqliteDatabase::contacts_fingerprint() {
    Statement q(db_, "SELECT count(*) || ':' || coalesce(max(added_at), 0) || ':' || coalesce(sum(length(address)), 0) FROM contacts",
                path_);
    if (sqlite3_step(q.get()) != SQLITE_ROW) fail(std::string("cannot read contacts: ") + error_text());
    const auto* t = sqlite3_column_text(q.get(), 0);
    return t ? reinterpret_cast<const char*>(t) : "";
}

std::string SqliteDatabase::feature_text(model::FeatureId id) {
    Use s(st_->feature_text);
    sqlite3_bind_int64(*s, 1, static_cast<sqlite3_int64>(id));
    if (sqlite3_step(*s) == SQLITE_ROW) return reinterpret_cast<const char*>(sqlite3_column_text(*s, 0));
    return {};
}

Statistics SqliteDatabase::statistics() {
    Statistics st;
    st.schema_version = schema_version;
    {
        Statement q(db_, "SELECT class, messages, occurrences FROM classes", path_);
        while (sqlite3_step(q.get()) == SQLITE_ROW) {
            const bool spam = sqlite3_column_int(q.get(), 0) == 1;
            (spam ? st.messages.spam : st.messages.ham) = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 1));
            (spam ? st.occurrences.spam : st.occurrences.ham) =
                static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 2));
        }
    }
    {
        Statement q(db_, "SELECT count(*) FROM features", path_);
        if (sqlite3_step(q.get()) == SQLITE_ROW) st.distinct_features = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0));
    }
    {
        Statement q(db_, "SELECT count(*) FROM contacts", path_);
        if (sqlite3_step(q.get()) == SQLITE_ROW) st.contacts = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0));
    }
    {
        Statement q(db_, "SELECT count(*) FROM signatures", path_);
        if (sqlite3_step(q.get()) == SQLITE_ROW) st.signatures = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0));
    }
    std::error_code ec;
    const auto size = std::filesystem::file_size(path_, ec);
    st.file_bytes = ec ? 0 : size;
    return st;
}

}  // namespace mailsift::store
