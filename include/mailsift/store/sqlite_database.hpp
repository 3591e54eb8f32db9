// mailsift::store::SqliteDatabase — the embedded default: one SQLite file in
// WAL mode, schema versioned with PRAGMA user_version.
//  - read_only: the file must exist. read_write: created (with its directory,
//    0750; the file 0640) when missing, unless Create::never (then a missing
//    file is an Error, even one deleted while it is being opened).
//  - A locked database is waited for up to `busy_timeout`, then an Error
//    names the lock and the wait.
//  - Errors name the path and SQLite's message in words (locked, read-only,
//    disk full).
//  - backup() uses SQLite's online backup API; an existing `dest` (or a -wal,
//    -shm or -journal file of that name, which SQLite would apply to the copy)
//    is an Error unless `replace`.
#pragma once

#include "mailsift/store/database.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace mailsift::store {

class ScanDictionary;

class SqliteDatabase final : public Database {
public:
    SqliteDatabase(std::filesystem::path path, Mode mode, std::chrono::milliseconds busy_timeout = std::chrono::seconds(10),
                   Create create = Create::if_missing);
    ~SqliteDatabase() override;

    const std::filesystem::path& path() const { return path_; }
    Mode mode() const override { return mode_; }

    // The connection (Database). data_version: PRAGMA data_version.
    std::uint64_t data_version() override;
    void for_few_messages() override;
    void for_recording() override;
    void for_requests() override;
    void checkpoint() noexcept override;

    // ModelStore.
    ClassTotals visit_counts(model::TermFrequency tf, const std::function<void(std::size_t)>& size,
                             const std::function<void(model::FeatureId, model::ClassCounts)>& feature) override;
    std::uint64_t model_sequence() override;
    ModelChanges model_changes_since(std::uint64_t sequence, model::TermFrequency tf, std::size_t max_features) override;
    CountsOf counts_of(const std::vector<model::FeatureId>& ids, model::TermFrequency tf) override;
    LinearWeights linear_weights_since(std::uint64_t sequence, const PageVisitor& page = {}) override;
    std::vector<LinearSample> linear_samples() override;
    std::optional<RefitLayer> linear_refit_layer() override;
    std::string model_settings() override;
    std::string feature_text(model::FeatureId id) override;

    // ScanLog.
    std::optional<Scan> find_scan(const Digest& id) override;
    std::vector<HistoryEntry> history(const HistoryQuery& q) override;
    std::uint64_t history_count(const HistoryQuery& q) override;
    void record(const Recording& r) override;
    ScanPacker scan_packer(std::int64_t now) override;
    ScanPrune prune_scans(std::int64_t before, std::size_t batch) override;
    bool has_deferred_corrections() override;
    CorrectionCounts corrections_since(std::int64_t since) override;
    std::vector<CorrectionRecord> corrections_of(const Digest& signature) override;
    std::vector<CorrectionRecord> layer_corrections(std::string_view user) override;
    LayerCensus layer_census() override;
    bool delivered_to(std::string_view user) override;
    std::vector<std::pair<std::string, std::int64_t>> counters() override;

    // ContactStore.
    std::string contacts_fingerprint() override;
    ContactSet load_contacts() override;
    std::vector<Contact> contacts() override;
    bool add_contact(std::string_view address, std::string_view source, std::int64_t now) override;
    bool remove_contact(std::string_view address) override;
    std::size_t add_contacts(const std::vector<Contact>& contacts) override;

    // Maintenance.
    Statistics statistics() override;
    PruneResult prune(std::int64_t signatures_before, std::int64_t features_before) override;
    ModelSummary export_model(std::ostream& out) override;
    ModelSummary import_model(std::istream& in, const std::string& name) override;
    void backup(const std::filesystem::path& dest, bool replace) override;

private:
    friend class SqliteTransaction;
    struct Statements;
    struct ScanDictionaries;
    std::unique_ptr<WriteTransaction> begin_write() override;
    void exec(const char* sql);
    [[noreturn]] void fail(const std::string& what) const;
    // SQLite's last error in words: a lock names the other process and the wait, a full disk says so.
    std::string error_text() const;
    void migrate();
    // Class totals and the change sequence, in the caller's read transaction.
    ClassTotals read_totals(model::TermFrequency tf);
    // The rows of `ids` in the columns `tf` trains on, in the order given, inside the caller's read.
    std::vector<model::Snapshot::Change> rows_of(const std::vector<model::FeatureId>& ids, model::TermFrequency tf);
    int user_version();
    void check_version(int version) const;

    std::filesystem::path path_;
    Mode mode_;
    std::chrono::milliseconds busy_timeout_;
    int log_pages_ = 0;  // for_requests(): the log's pages after the last commit
    bool few_messages_ = false;  // for_few_messages(): the weights are read through a memory map
    sqlite3* db_ = nullptr;
    std::unique_ptr<Statements> st_;
    std::unique_ptr<ScanDictionaries> dictionaries_;
    // The dictionary new scans are compressed with; trains one when due (scans.cpp).
    const ScanDictionary* dictionary_for_new_scans(const Recording& r, std::int64_t now);
    const ScanDictionary* dictionary(std::int64_t id);
    // The grouped text of a signatures row's scan (text rows grouped too); nullopt when damaged.
    std::optional<std::string> stored_scan(sqlite3_stmt* row, int dictionary_column, int features_column);
    void drop_unused_dictionaries();
    // Numbers this write transaction's change of the model (model_changes):
    // `ids` are the features it wrote or deleted (ascending), nullptr for "reload all".
    void log_model_change(const std::vector<model::FeatureId>* ids);
    // The slot deltas written after `since` and not yet folded into pages, in the
    // order written, for weights of 2^hash_bits slots; in the caller's transaction.
    std::vector<LinearWeights::SlotDelta> held_slot_deltas(std::uint64_t since, unsigned hash_bits, const char* damaged);
    void prune_deferred_corrections(std::int64_t before);
    void prune_history(std::int64_t before);
};

}  // namespace mailsift::store
