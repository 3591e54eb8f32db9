// mailsift::store — maintenance of the whole store (one role of Database):
// statistics, prune, export (mailsift(1), FORMAT), import, backup.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>

#include "mailsift/model/naive_bayes.hpp"
#include "mailsift/store/common.hpp"

namespace mailsift::store {

struct Statistics {
    model::ClassCounts messages;
    model::ClassCounts occurrences;  // feature occurrences learned per class
    std::uint64_t distinct_features = 0;
    std::uint64_t contacts = 0;
    std::uint64_t signatures = 0;
    int schema_version = 0;
    std::uint64_t file_bytes = 0;
};

// What Database::prune removed.
struct PruneResult {
    std::uint64_t signatures = 0;
    std::uint64_t features = 0;
    model::ClassCounts occurrences;  // taken off the class totals
    model::ClassCounts presences;
};

// Records in a model export.
struct ModelSummary {
    std::uint64_t features = 0;
    std::uint64_t messages = 0;
    std::uint64_t contacts = 0;
    // Export: the per-user layers' steps taken out of the weights written (the
    // corrections that made them are not part of an export), of how many users.
    std::uint64_t layer_corrections_left_out = 0;
    std::uint64_t layer_users_left_out = 0;
};

// What an administrator does to the whole store: its statistics, pruning,
// export and import, backup. Every method throws Error for an environment failure.
class Maintenance {
public:
    virtual ~Maintenance() = default;
    Maintenance(const Maintenance&) = delete;
    Maintenance& operator=(const Maintenance&) = delete;

    virtual Statistics statistics() = 0;

    // One transaction; read_write only. Deletes signatures scanned before
    // `signatures_before`, and features seen exactly once in all (one occurrence,
    // either class) whose last_seen is before `features_before`, taking what those
    // rows held off the class totals.
    virtual PruneResult prune(std::int64_t signatures_before, std::int64_t features_before) = 0;

    // Writes the whole model (class totals, features, learned messages,
    // contacts) in the text format of mailsift(1), FORMAT, from one read
    // transaction. Does not check `out`; the caller does.
    virtual ModelSummary export_model(std::ostream& out) = 0;
    // Loads an export into this database, which must hold no model yet (else
    // Error), in one transaction. Input not in the format throws FormatError
    // ("NAME:LINE: ...") and changes nothing.
    virtual ModelSummary import_model(std::istream& in, const std::string& name) = 0;

    // Copies the live database to the file `dest` while other connections may
    // go on writing: the copy is the committed state when the copy began, and
    // `dest` never holds a partial copy. An existing `dest` is an Error unless
    // `replace`.
    virtual void backup(const std::filesystem::path& dest, bool replace) = 0;

protected:
    Maintenance() = default;
};

}  // namespace mailsift::store
