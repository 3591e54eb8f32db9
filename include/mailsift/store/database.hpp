// mailsift::store — the database behind mailsift, one connection to it and
// its roles: the model (model_store.hpp), the scan log (scan_log.hpp), the
// contacts (contact_store.hpp) and maintenance (maintenance.hpp); writes of
// the model go through a TrainingBatch (training_batch.hpp). One backend per
// kind of store: SQLite (sqlite_database.hpp, the embedded default) and
// PostgreSQL (a fleet).
//
// Owns every SQL statement in the program. Knows nothing about MIME or milter.
// Contract, for every backend:
//  - The schema is versioned by mailsift. A database from a newer schema is
//    refused, never modified.
//  - data_version() (model_store.hpp) tells readers when another connection
//    has committed; the roles say what changed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "mailsift/store/common.hpp"
#include "mailsift/store/contact_store.hpp"
#include "mailsift/store/maintenance.hpp"
#include "mailsift/store/model_store.hpp"
#include "mailsift/store/scan_log.hpp"

namespace mailsift::store {

class TrainingBatch;
class WriteTransaction;

// The store, whatever holds it: one connection that plays every role. Open it
// with open(); hand a part only the role it uses (a ModelStore&, a ScanLog&).
// Every method throws Error for an environment failure (missing, locked,
// unreachable, read-only, full).
class Database : public ModelStore, public ScanLog, public ContactStore, public Maintenance {
public:
    enum class Mode : std::uint8_t { read_only, read_write };
    enum class Create : std::uint8_t { if_missing, never };

    ~Database() override = default;

    virtual Mode mode() const = 0;

    // This connection serves a command of a few messages (a classify, learn or
    // correct of a handful, one process each): it touches a few hundred pages,
    // so the page cache sized for a training batch is memory it would only fill
    // once, and the one large read it makes, the linear weights, is cheaper
    // mapped than copied page by page. SQLite goes back to its default cache
    // (2 MiB) and maps the file while it reads the weights; PostgreSQL has
    // nothing to size.
    virtual void for_few_messages() {}
    // This connection writes one batch of scans and history lines and closes
    // (mailsiftd's recorder opens one a write): the pages it dirties fit
    // SQLite's default cache (2 MiB), and the cache sized for a training
    // batch would be filled and freed again at every write, most of a busy
    // daemon's memory (issue 59). Nothing on PostgreSQL.
    virtual void for_recording() {}
    // This connection serves one request of a few messages after another for
    // as long as the process lives (mailsiftd's correction socket): it keeps a
    // writer's cache (a correction reads and dirties a few hundred pages of
    // the features, the same pages again and again), and it leaves copying its
    // log back into the database to checkpoint(), which the server calls once
    // it has answered, rather than do it inside a commit, before the answer.
    virtual void for_requests() {}
    // After for_requests(): copies the log back into the database when it
    // holds SQLite's 1,000 pages or more, as a commit would have (about three
    // corrections). Nothing on PostgreSQL. Never throws: what it could not
    // copy stays in the log, and the next call copies it.
    virtual void checkpoint() noexcept {}

protected:
    Database() = default;

private:
    friend class TrainingBatch;
    // Whether other processes write at the same time, so that a TrainingBatch
    // keeps what it did to replay it after a RetryableError.
    virtual bool concurrent_writers() const { return false; }
    // Opens the write transaction of a TrainingBatch (read_write only).
    virtual std::unique_ptr<WriteTransaction> begin_write() = 0;
};

// Opens the database at `location`: a PostgreSQL connection URI
// (postgresql://USER@HOST:PORT/DB?..., or postgres://), else a file path
// (SQLite). In read_write mode a missing database (file, or mailsift's schema
// in an existing PostgreSQL database) is created unless Create::never. A
// locked database is waited for up to `busy_timeout`, then an Error is thrown.
std::unique_ptr<Database> open(const std::string& location, Database::Mode mode,
                               std::chrono::milliseconds busy_timeout = std::chrono::seconds(10),
                               Database::Create create = Database::Create::if_missing);
// Whether `location` names a PostgreSQL database rather than a file.
bool is_postgresql(std::string_view location);
// `location` as messages show it: a URI without its password, a path as given.
std::string display_location(std::string_view location);

}  // namespace mailsift::store
