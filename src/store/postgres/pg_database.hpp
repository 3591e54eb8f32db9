// The PostgreSQL backend: one database shared by every mailsiftd and CLI of a
// fleet. Not part of the store's interface: store::open() makes one for a
// postgresql:// or postgres:// location.
//  - The schema is created and migrated by mailsift in one transaction under an
//    advisory lock, its version kept in mailsift_schema; a newer one is refused.
//  - Writers learn in parallel (messages, contacts) and serialize only their
//    commit: a TrainingBatch takes one transaction-scoped advisory lock before
//    it writes feature rows, class totals and the change log, so rows are
//    never locked in two orders (no deadlock by construction) and the change
//    log is numbered in commit order. A deadlock among the rows written while
//    learning (two writers learning the same messages in opposite orders) or
//    a serialization failure is retried by replaying the batch.
//  - Feature rows are read and written by the batch in one statement each
//    (arrays), not one round trip per feature.
#pragma once

#include <utility>
#include <memory>
#include <string>

#include <map>
#include <optional>
#include <type_traits>

#include "../codec.hpp"
#include "connection.hpp"
#include "mailsift/store/training_batch.hpp"

namespace mailsift::store {

class PgDatabase final : public Database {
public:
    PgDatabase(const std::string& uri, Mode mode, std::chrono::milliseconds lock_timeout = std::chrono::seconds(10),
               Create create = Create::if_missing);
    ~PgDatabase() override;

    Mode mode() const override { return mode_; }
    // The connection (Database).
    std::uint64_t data_version() override;

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

    pg::Connection& connection() { return conn_; }
    // Numbers this transaction's change of the model; the caller holds the commit lock.
    void log_model_change(const std::vector<model::FeatureId>* ids);
    // Takes the lock every committing writer takes, until this transaction ends.
    void lock_commits();
    // Writes the last refit's own change (RefitLayer), in place of the one kept,
    // in the caller's transaction: a refit's (add_linear) and an import's.
    static void put_refit_layer(pg::Connection& c, const RefitLayer& layer);
    // WriteTransaction::add_linear, in the caller's transaction under the commit lock.
    void add_linear(const WriteTransaction::LinearChange& change);
    // WriteTransaction's rehearsal samples, in the caller's transaction.
    void keep_linear_sample(Class c, std::uint64_t position, const Digest& digest, std::string_view blob);
    void keep_model_settings(std::string_view text);
    std::optional<LinearSample> linear_sample(Class c, std::uint64_t position);

private:
    // A row of class, position, prefix and the message's features; nullopt when damaged.
    static std::optional<LinearSample> sample_of(const pg::Result& r, int row);
    // The slot deltas written after `since` and not yet folded into pages, in the
    // order written, for weights of 2^hash_bits slots; in the caller's transaction.
    std::vector<LinearWeights::SlotDelta> held_slot_deltas(std::uint64_t since, unsigned hash_bits, const char* damaged);
    std::unique_ptr<WriteTransaction> begin_write() override;
    bool concurrent_writers() const override { return true; }
    void migrate(Create create);
    // Runs `body` in one transaction (BEGIN ... COMMIT, ROLLBACK on a throw).
    template <class F>
    auto transaction(F&& body, const char* begin = "BEGIN");
    // The same for reads that must see one moment: REPEATABLE READ, READ ONLY.
    template <class F>
    auto snapshot(F&& body) {
        return transaction(std::forward<F>(body), "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    }
    const ScanDictionary* dictionary(std::int64_t id);
    const ScanDictionary* dictionary_for_new_scans(const Recording& r, std::int64_t now);
    std::optional<std::string> stored_scan(const pg::Result& r, int row, int dictionary_column, int features_column);
    void drop_unused_dictionaries();
    void prune_deferred_corrections(std::int64_t before);
    void prune_history(std::int64_t before);
    ClassTotals read_totals(model::TermFrequency tf);
    // The rows of `ids` in the columns `tf` trains on, in the order given, inside the caller's read.
    std::vector<model::Snapshot::Change> rows_of(const std::vector<model::FeatureId>& ids, model::TermFrequency tf);

    Mode mode_;
    std::string uri_;
    pg::Connection conn_;
    struct ScanDictionaries {
        std::map<std::int64_t, ScanDictionary> loaded;
        std::optional<std::int64_t> training_failed_at;  // then no new try for a day
    };
    std::unique_ptr<ScanDictionaries> dictionaries_;
};

// Of the corrections kept with an undo record (`standing`: and not undone, and
// locked FOR UPDATE), those that stepped `user`'s layer, oldest first
// (ScanLog::layer_corrections, WriteTransaction::standing_layer_corrections).
std::vector<CorrectionRecord> layer_corrections_of(pg::Connection& c, std::string_view user, bool standing);
// WriteTransaction::standing_sender_corrections, locked FOR UPDATE.
std::vector<CorrectionRecord> sender_corrections_of(pg::Connection& c, std::string_view sender);

template <class F>
auto PgDatabase::transaction(F&& body, const char* begin) {
    conn_.run(begin);
    try {
        if constexpr (std::is_void_v<decltype(body())>) {
            body();
            conn_.run("COMMIT");
        } else {
            auto r = body();
            conn_.run("COMMIT");
            return r;
        }
    } catch (...) {
        try {
            conn_.run("ROLLBACK");
        } catch (...) {
        }
        throw;
    }
}

}  // namespace mailsift::store
