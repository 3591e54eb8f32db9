// Maintenance: pruning old signatures and rare features, and online backup.
#include "internal.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <system_error>

namespace mailsift::store {

PruneResult SqliteDatabase::prune(std::int64_t signatures_before, std::int64_t features_before) {
    if (mode_ != Mode::read_write) fail("database was opened read-only");
    PruneResult r;
    std::int64_t held[4] = {0, 0, 0, 0};  // what the pruned features held: spam, ham occurrences; spam, ham presences
    exec("BEGIN IMMEDIATE");
    try {
        {
            Statement q(db_, "DELETE FROM signatures WHERE scanned_at < ?1", path_);
            sqlite3_bind_int64(q.get(), 1, signatures_before);
            if (sqlite3_step(q.get()) != SQLITE_DONE) fail(std::string("cannot prune signatures: ") + error_text());
            r.signatures = static_cast<std::uint64_t>(sqlite3_changes(db_));
            drop_unused_dictionaries();
            prune_deferred_corrections(signatures_before);
            prune_history(signatures_before);
        }
        // Seen exactly once in all, and not since the cut-off.
        const std::string once = " FROM features WHERE spam_occurrences + ham_occurrences = 1 AND last_seen < ?1";
        {
            Statement q(db_,
                        ("SELECT count(*), coalesce(sum(spam_occurrences), 0), coalesce(sum(ham_occurrences), 0),"
                         " coalesce(sum(spam_presences), 0), coalesce(sum(ham_presences), 0)" + once)
                            .c_str(),
                        path_);
            sqlite3_bind_int64(q.get(), 1, features_before);
            if (sqlite3_step(q.get()) != SQLITE_ROW) fail(std::string("cannot read features: ") + error_text());
            r.features = static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), 0));
            for (int k = 0; k < 4; ++k) held[k] = sqlite3_column_int64(q.get(), k + 1);
        }
        {
            Statement q(db_, ("DELETE" + once).c_str(), path_);
            sqlite3_bind_int64(q.get(), 1, features_before);
            if (sqlite3_step(q.get()) != SQLITE_DONE) fail(std::string("cannot prune features: ") + error_text());
        }
        const struct {
            int cls;
            std::int64_t occ, pres;
        } totals[] = {{1, held[0], held[2]}, {0, held[1], held[3]}};
        for (const auto& t : totals) {
            Use s(st_->update_class);
            sqlite3_bind_int(*s, 1, t.cls);
            sqlite3_bind_int64(*s, 2, 0);
            sqlite3_bind_int64(*s, 3, -t.occ);
            sqlite3_bind_int64(*s, 4, -t.pres);
            if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot update totals: ") + error_text());
        }
        if (r.features > 0) log_model_change(nullptr);
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    r.occurrences = {static_cast<std::uint64_t>(held[0]), static_cast<std::uint64_t>(held[1])};
    r.presences = {static_cast<std::uint64_t>(held[2]), static_cast<std::uint64_t>(held[3])};
    return r;
}

// ---- backup ----

void SqliteDatabase::backup(const std::filesystem::path& dest, bool replace) {
    namespace fs = std::filesystem;
    const std::string target = dest.string();
    const std::string companions[] = {target + "-wal", target + "-journal", target + "-shm"};
    auto present = [](const std::string& p) {
        struct stat st{};
        return ::lstat(p.c_str(), &st) == 0;
    };
    // Never write over the live database or its logs.
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        std::error_code ec;
        const fs::path live = path_.string() + suffix;
        if (present(target) && present(live.string()) && fs::equivalent(dest, live, ec)) {
            throw Error(dest, std::string("is the database") + (*suffix ? "'s own " + std::string(suffix + 1) : " itself"));
        }
    }
    if (!replace) {
        if (present(target)) throw Error(dest, "already exists; not replaced");
        // A log left by an earlier database of this name would be applied to the copy.
        for (const auto& p : {companions[0], companions[1]}) {
            if (present(p)) throw Error(p, "already exists and would be applied to the copy; not replaced");
        }
    }
    const fs::path dir = dest.has_parent_path() ? dest.parent_path() : fs::path(".");
    std::string temp = (dir / (dest.filename().string() + ".partial-XXXXXX")).string();
    const int fd = ::mkstemp(temp.data());
    if (fd < 0) throw Error(dest, std::string("cannot create the copy: ") + std::strerror(errno));
    ::fchmod(fd, 0640);  // as private as the database itself
    ::close(fd);
    sqlite3* out = nullptr;
    try {
        auto copy_failed = [&](const std::string& what) {
            throw Error(dest, "cannot write the copy: " + what);
        };
        if (sqlite3_open_v2(temp.c_str(), &out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
            copy_failed(out ? sqlite3_errmsg(out) : "out of memory");
        }
        sqlite3_backup* b = sqlite3_backup_init(out, "main", db_, "main");
        if (b == nullptr) copy_failed(sqlite3_errmsg(out));
        // All pages in one step: one read transaction on the source, which in WAL mode
        // lets writers go on, and a copy of the state when it began. (Smaller steps
        // would restart whenever another connection commits, maybe without end.)
        const auto deadline = std::chrono::steady_clock::now() + busy_timeout_;
        int rc;
        do {
            rc = sqlite3_backup_step(b, -1);
            const int primary = rc & 0xFF;
            if ((primary == SQLITE_BUSY || primary == SQLITE_LOCKED) && std::chrono::steady_clock::now() < deadline) {
                sqlite3_sleep(50);
                rc = SQLITE_OK;
            }
        } while (rc == SQLITE_OK);
        sqlite3_backup_finish(b);
        if (rc != SQLITE_DONE) copy_failed(sqlite3_errmsg(out));
        const int closed = sqlite3_close(out);
        out = nullptr;
        if (closed != SQLITE_OK) copy_failed(sqlite3_errstr(closed));
        if (replace) {
            for (const auto& p : companions) {
                if (::unlink(p.c_str()) != 0 && errno != ENOENT) {
                    throw Error(p, std::string("cannot remove the old database's file: ") + std::strerror(errno));
                }
            }
            if (::rename(temp.c_str(), target.c_str()) != 0) {
                throw Error(dest, std::string("cannot move the copy into place: ") + std::strerror(errno));
            }
        } else {
            // link() will not replace a file that appeared meanwhile; rename() would.
            if (::link(temp.c_str(), target.c_str()) != 0) {
                const int e = errno;
                throw Error(dest, e == EEXIST ? std::string("already exists; not replaced")
                                              : std::string("cannot move the copy into place: ") + std::strerror(e));
            }
            ::unlink(temp.c_str());
        }
    } catch (...) {
        if (out != nullptr) sqlite3_close(out);
        ::unlink(temp.c_str());
        ::unlink((temp + "-journal").c_str());
        throw;
    }
}

}  // namespace mailsift::store
