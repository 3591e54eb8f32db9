// mailsift::store — the database behind the model: feature and class counts,
// trained-message digests, scans, corrections, contacts, counters; loading
// the in-memory model. One interface (Database), one backend per kind of
// store (SqliteDatabase, sqlite_database.hpp: the embedded default).
//
// Owns every SQL statement in the program. Knows nothing about MIME or milter.
// Contract, for every backend:
//  - The schema is versioned by mailsift. A database from a newer schema is
//    refused, never modified.
//  - A TrainingBatch is one write transaction: either every message in it is
//    learned or none is. Each learned message keeps its exact feature list, so
//    unlearning or moving it restores the counts exactly (counts never go negative).
//  - Readers load a Counts snapshot and never query per feature; data_version()
//    tells them when another connection has committed, model_sequence() whether
//    the counts changed, and model_changes_since() which features did.
//  - Environment failures (missing file, locked, read-only, disk full) throw
//    store::Error naming the path and SQLite's message.
//  - Class totals always equal the sums of the feature rows: pruning lowers them
//    by what it removes, and unlearning a message whose features were pruned
//    subtracts only what the rows still hold (never below zero, never re-creating
//    a removed row).
#pragma once

#include <array>
#include <span>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mailsift/features/extractor.hpp"
#include "mailsift/model/linear.hpp"
#include "mailsift/model/naive_bayes.hpp"


namespace mailsift::store {

inline constexpr int schema_version = 18;

class Error : public std::runtime_error {
public:
    Error(const std::filesystem::path& path, const std::string& what)
        : std::runtime_error(path.string() + ": " + what), path_(path) {}
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// A write that lost a race with another writer (a deadlock, a serialization
// failure, the same message learned by two at once): nothing of the
// transaction was written, and doing it again can succeed. TrainingBatch
// does that by itself.
class RetryableError : public Error {
public:
    using Error::Error;
};

// A refit of the linear scorer that another writer's refit of the same
// samples or later ones got to first (WriteTransaction::LinearChange::
// refit_mark): its batch is rolled back, nothing is lost.
class RefitSuperseded : public std::runtime_error {
public:
    RefitSuperseded() : std::runtime_error("the linear scorer was refitted by another writer meanwhile") {}
};

// A model export that is not in the documented format (mailsift(1), FORMAT):
// the message is "NAME:LINE: what is wrong".
class FormatError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

enum class Class : std::uint8_t { ham = 0, spam = 1 };
const char* to_string(Class c);

// A feature of one message as trained: id, count in the message, and its text
// (kept so that explanations and statistics can name it).
struct TrainTerm {
    model::FeatureId id = 0;
    std::uint32_t count = 0;
    std::string_view text;
};

// 16-byte content digest identifying a trained message.
using Digest = std::array<std::uint8_t, 16>;

enum class LearnResult : std::uint8_t {
    learned,          // new message, counted in the class
    already_learned,  // same digest, same class: nothing changed
    moved,            // same digest, other class: unlearned there, learned here
};

enum class UnlearnResult : std::uint8_t { unlearned, not_learned, learned_as_other_class };

struct Contact {
    std::string address;
    std::string source;
    std::int64_t added_at = 0;  // seconds since the epoch
};

// Contacts held in memory for the features module's lookup.
class ContactSet final : public features::Contacts {
public:
    explicit ContactSet(std::unordered_set<std::string> addresses) : addresses_(std::move(addresses)) {}
    ContactSet() = default;
    bool contains(std::string_view address) const override {
        return addresses_.find(std::string(address)) != addresses_.end();
    }
    std::size_t size() const { return addresses_.size(); }
    void add(std::string address) { addresses_.insert(std::move(address)); }

private:
    std::unordered_set<std::string> addresses_;
};

// What mailsiftd scored, recorded under its X-Mailsift-Signature id.
struct Scan {
    Digest id{};
    std::int64_t scanned_at = 0;
    model::Verdict verdict = model::Verdict::unsure;
    std::string features;  // "feature<TAB>count" lines, as scored
};

class ScanDictionary;  // the store's own (a zstd dictionary of a database's scans)

// A scan in its stored form: the features grouped and compressed by a
// ScanPacker on the thread that scored them, so that what waits for the
// recorder's writer is a few hundred bytes rather than the feature text, and
// the writer only writes.
struct PackedScan {
    Digest id{};
    std::int64_t scanned_at = 0;
    model::Verdict verdict = model::Verdict::unsure;
    std::shared_ptr<const ScanDictionary> dictionary;  // what `blob` was compressed with; null: none
    std::string blob;
};

// Packs scans with the dictionary a database gave (Database::scan_packer), or
// none. pack() may be called from any number of threads at once.
class ScanPacker {
public:
    ScanPacker() = default;  // no dictionary: before the database is first read
    explicit ScanPacker(std::shared_ptr<const ScanDictionary> dictionary) : dictionary_(std::move(dictionary)) {}
    // `lines` as Scan::features ("feature<TAB>count" lines).
    PackedScan pack(const Digest& id, std::int64_t scanned_at, model::Verdict verdict, std::string_view lines) const;

private:
    std::shared_ptr<const ScanDictionary> dictionary_;
};

// One line of the console's history: what mailsiftd did with a message, kept
// as long as its scan (signature_days) and pruned with it.
// One line per delivery: the same content delivered twice is two lines, each
// with its own id and its own envelope, sharing a signature.
struct HistoryEntry {
    // The line's own number, given by the store when it is recorded (record()
    // ignores what is here): ascending in the order lines were recorded, so
    // that it orders the lines of one second.
    std::int64_t id = 0;
    // The message's signature (its content digest, X-Mailsift-Signature): what
    // its corrections are keyed by. None for a message let through unscored.
    std::optional<Digest> signature;
    std::int64_t scanned_at = 0;  // seconds since the epoch
    // False for a message mailsiftd let through unscored (action "skipped",
    // `reason` says why): it has no verdict or probability.
    bool scored = true;
    model::Verdict verdict = model::Verdict::unsure;
    double probability = 0.0;
    std::string action;      // accepted, tagged, quarantined, rejected, tempfailed, skipped
    std::string reason;      // why a skipped message was not scored ("authenticated sender", ...), else ""
    std::string sender;      // MAIL FROM, as sent
    std::string recipients;  // RCPT TO, as sent, separated by ", "
    std::string from;        // the From: header field, decoded
    std::string to;          // the To: header field, decoded
    std::string subject;     // the Subject: header field, decoded; "" when history_subjects = off
    std::string message_id;  // the Message-ID: header field, as sent ("<...>")
    std::string queue_id;    // the MTA's queue ID (the milter macro "i"), "" when the MTA sent none
    std::string client_address;  // the SMTP client's address, as the MTA gave it at connect
    std::string helo;            // what the SMTP client said in HELO or EHLO
    std::uint64_t size = 0;  // the message's bytes
    // Its score taken apart as it was scored (engine::encode of ScoreParts;
    // opaque here), "" when none was kept. Read only when HistoryQuery asks.
    std::string explanation;
    // Read, never written with the line: the message's latest correction
    // (corrections keyed by its signature), when it has one.
    struct Corrected {
        Class to = Class::ham;
        std::int64_t at = 0;
        std::string by;  // Correction::by
    };
    std::optional<Corrected> corrected;
};

// Which history entries to read: up to `limit`, in `order`. Every text filter
// matches a line whose field holds it, ASCII case ignored; empty: any.
struct HistoryQuery {
    std::optional<model::Verdict> verdict;  // only this verdict (skipped lines have none)
    std::string action;                     // only this action ("skipped" included)
    // only those whose sender, recipients, From, To, Subject, queue ID,
    // Message-ID, client address or HELO hold it
    std::string text;
    std::string sender;      // MAIL FROM
    std::string recipient;   // RCPT TO or the To: header field
    std::string subject;
    std::string client;      // the SMTP client's address or its HELO name holds it
    std::string queue_id;    // the whole queue ID, as given (case kept); "": any
    std::string message_id;  // the Message-ID, with or without its angle brackets; "": any
    std::int64_t since = INT64_MIN;  // only those scanned at or after this
    std::int64_t before = INT64_MAX;  // only those scanned before this
    // newest: scanned_at descending, a second's lines last recorded first (id
    // descending); oldest: scanned_at ascending, then id ascending, so that
    // each is the other reversed and lines keep their arrival order within a
    // second. spammiest: probability descending; hammiest: ascending; ties in
    // either in arrival order (id ascending). The probability orders leave out
    // skipped lines (they have none).
    enum class Order { newest, oldest, spammiest, hammiest } order = Order::newest;
    // The page after a line: the lines that come after it in `order` (ties
    // past its id, which is unique), so that lines of one second or one
    // probability are never skipped nor repeated. The line's scanned_at,
    // probability and id.
    struct After {
        std::int64_t scanned_at = 0;
        double probability = 0.0;
        std::int64_t id = 0;
    };
    std::optional<After> after;
    std::size_t limit = 100;
    std::optional<std::int64_t> id;   // only this line
    // Only the lines of this message (every delivery of it). Not indexed: a
    // scan of the lines, in `order`, for a lookup of one or a few.
    std::optional<Digest> signature;
    bool explanations = false;        // with HistoryEntry::explanation (a few hundred bytes each)
};

// What undoing a correction takes (Trainer::undo): the model as it was
// before it. Recorded with every correction since SQLite schema 16 and
// PostgreSQL schema 11; a correction recorded before cannot be undone.
struct CorrectionUndo {
    // How its message was learned before it: nullopt, not at all (undo
    // unlearns it); the other class (undo moves it back).
    std::optional<Class> was;
    // The linear scorer's step it took, subtracted again: `feature` added to
    // each of `slots` (as many times as a slot is listed) and to the bias,
    // `nb_weight` to the naive-Bayes input's weight. hash_bits 0: none.
    unsigned hash_bits = 0;
    float feature = 0.0f;
    double nb_weight = 0.0;
    std::vector<std::uint32_t> slots;
    // The rehearsal replays it took (steps on kept messages of the other
    // class, Trainer::rehearse), each subtracted again as the step above.
    struct Replay {
        float feature = 0.0f;
        double nb_weight = 0.0;
        std::vector<std::uint32_t> slots;
    };
    std::vector<Replay> replays;
    // The sender it made a contact (a correction to ham), removed again; "": none.
    std::string contact;
};

// One correction of a verdict mailsiftd gave, kept for the error rates and
// the history (who corrected what, when, to what).
struct Correction {
    model::Verdict verdict = model::Verdict::unsure;  // what mailsiftd said
    Class to = Class::ham;
    std::int64_t at = 0;
    // The scan corrected (its signature); nullopt for a tagged message
    // corrected without its scan (the verdict read from its X-Mailsift-Status).
    std::optional<Digest> signature;
    // Who: "console:NAME" for a console account, "cli:USER" for the Unix user
    // who ran mailsift; "" when not known.
    std::string by;
    // Set for a correction of a signature: what undoing it takes.
    std::optional<CorrectionUndo> undo;
};

// A correction as recorded: a line's trail (Database::corrections_of) and
// what an undo reads (WriteTransaction::latest_correction).
struct CorrectionRecord {
    std::int64_t id = 0;  // ascending as recorded
    model::Verdict verdict = model::Verdict::unsure;
    Class to = Class::ham;
    std::int64_t at = 0;
    std::string by;
    // What undoing it takes (latest_correction reads it; corrections_of says
    // only whether there is one: an empty CorrectionUndo); nullopt: recorded
    // before undo was, it cannot be undone.
    std::optional<CorrectionUndo> undo;
    // Undone: when and by whom (Correction::by's form); 0 while it stands. An
    // undone correction counts nowhere: not in the error rates, not as the
    // line's latest.
    std::int64_t undone_at = 0;
    std::string undone_by;
};

// A deferred correction whose scan is written now (WriteTransaction::take_ready_corrections).
struct ReadyCorrection {
    Scan scan;
    Class to = Class::ham;
    std::string by;  // Correction::by of the request
};

// What the daemon's recorder writes in one transaction.
struct Recording {
    std::vector<Scan> scans;
    // Written as they are when the database holds their dictionary (a scan
    // packed for another database, one since replaced, is packed again).
    std::vector<PackedScan> packed;
    std::vector<Contact> contacts;
    std::vector<std::pair<std::string, std::int64_t>> counter_increments;
    std::vector<HistoryEntry> history;
};

// Corrections of scanned messages since some time.
struct CorrectionCounts {
    std::uint64_t false_positives = 0;  // said spam, corrected to ham
    std::uint64_t false_negatives = 0;  // said ham, corrected to spam
    std::uint64_t unsure_to_spam = 0;
    std::uint64_t unsure_to_ham = 0;
};

struct Statistics {
    model::ClassCounts messages;
    model::ClassCounts occurrences;  // feature occurrences learned per class
    std::uint64_t distinct_features = 0;
    std::uint64_t contacts = 0;
    std::uint64_t signatures = 0;
    int schema_version = 0;
    std::uint64_t file_bytes = 0;
};

// What one call of Database::prune_scans removed, and whether more is older
// than its cut-off (the caller comes back for it: recorder.cpp).
struct ScanPrune {
    std::size_t scans = 0, lines = 0;  // signatures and history lines
    bool more = false;
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
};

// The linear scorer's weights (model::LinearModel) as the store keeps them:
// the state, and the weights in pages of linear_page_slots floats (a page
// never written holds zeros). Learners add their steps to what is stored, so
// concurrent learners add up rather than overwrite each other.
inline constexpr std::size_t linear_page_slots = 1024;
struct LinearWeights {
    unsigned hash_bits = 0;  // 0: nothing learned yet (bias 0, nb_weight 1, every weight 0)
    double bias = 0.0;
    double nb_weight = 1.0;
    std::uint64_t sequence = 0;  // model_sequence() of the same read
    // Messages offered to each class's rehearsal sample so far (spam, ham).
    std::uint64_t seen_spam = 0, seen_ham = 0;
    // Samples taken out of use so far (their corrections undone).
    std::uint64_t samples_dropped = 0;
    // The samples' version: every message offered and every sample dropped is a new one.
    std::uint64_t samples_version() const { return seen_spam + seen_ham + samples_dropped; }
    // samples_version() as the last refit of the weights over the samples read
    // it (engine::Trainer::refit_linear): below it, the samples changed since,
    // and mailsiftd refits.
    std::uint64_t refit_mark = 0;
    // The pages asked for: number, linear_page_slots floats.
    std::vector<std::pair<std::uint32_t, std::vector<float>>> pages;
    // Added to those weights after the pages, in this order: the steps written
    // since the pages last took them in (a step of a few messages is kept as
    // its slots, not as the pages it falls on; see WriteTransaction::add_linear).
    struct SlotDelta {
        std::uint32_t slot = 0;
        float delta = 0.0f;
    };
    std::vector<SlotDelta> deltas;
};
// The slot deltas a store keeps before it folds them into its pages, as a
// share of the slots: a reader adds at most this many to the pages it reads.
inline constexpr std::size_t linear_fold_share = 8;  // 2^hash_bits / 8 slot deltas
inline std::size_t linear_fold_slots(unsigned hash_bits) { return (std::size_t{1} << hash_bits) / linear_fold_share; }

// What the last refit of the linear scorer added to the weights (already in
// them): its slot deltas (ascending, each once, none 0), bias and u. The next
// refit starts from the weights without it, so that refits replace one
// another instead of piling up: logistic regression without a penalty grows
// its weights with every pass over samples it separates, and mailsiftd refits
// after every correction (engine::Trainer::refit, docs/accuracy.md issue 42).
struct RefitLayer {
    unsigned hash_bits = 0;
    double bias = 0.0, nb_weight = 0.0;
    std::vector<LinearWeights::SlotDelta> slots;
};

// A learned message kept for the linear scorer's rehearsal (a uniform sample
// of each class): the start of the message, whose 4-grams it replays, and the
// features it is learned with (the messages table's), for the naive-Bayes input.
struct LinearSample {
    Class c = Class::ham;
    std::string prefix;
    std::vector<std::pair<model::FeatureId, std::uint32_t>> terms;
};

class TrainingBatch;
class WriteTransaction;

// The model's database, whatever holds it. Every method throws Error for an
// environment failure (missing, locked, unreachable, read-only, full).
class Database {
public:
    enum class Mode : std::uint8_t { read_only, read_write };
    enum class Create : std::uint8_t { if_missing, never };

    virtual ~Database() = default;
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    virtual Mode mode() const = 0;

    // Changes whenever another connection commits.
    virtual std::uint64_t data_version() = 0;
    // Changes when the contacts change (a reader reloads them then; counts
    // changes are told by model_sequence()).
    virtual std::string contacts_fingerprint() = 0;

    // All counts for the model, in the columns `tf` trains on.
    model::Counts load_counts(model::TermFrequency tf);
    // The same, streamed in one read transaction: `size(n)` first with the
    // number of features, then `feature(id, counts)` for each; returns the
    // class counts (messages, feature totals) of that same read.
    struct ClassTotals {
        model::ClassCounts messages, feature_totals;
        std::uint64_t sequence = 0;  // model_sequence() of that read
    };
    virtual ClassTotals visit_counts(model::TermFrequency tf, const std::function<void(std::size_t)>& size,
                                     const std::function<void(model::FeatureId, model::ClassCounts)>& feature) = 0;
    // The number of the last committed write that changed the model's counts:
    // it grows with every training batch, prune and import, on any connection.
    virtual std::uint64_t model_sequence() = 0;
    // What changed in the model after the write numbered `sequence`, in one read
    // transaction: the class totals now, and the counts now (in the columns `tf`
    // trains on) of every feature written or deleted since. `listed` is false
    // when the changes cannot be told feature by feature (older than the hour
    // the list is kept, a prune or an import among them, or more than
    // `max_features` features): the reader then reloads with visit_counts().
    struct ModelChanges {
        ClassTotals totals;
        bool listed = true;
        std::vector<model::Snapshot::Change> features;  // by id, each once; present false: the row is gone
    };
    virtual ModelChanges model_changes_since(std::uint64_t sequence, model::TermFrequency tf,
                                             std::size_t max_features) = 0;
    // The counts of `ids` (each once) as they are now, in one read: the class
    // totals, the number of feature rows (V, the vocabulary of the smoothing)
    // and each id's row in the columns `tf` trains on, in the order given
    // (present false: no row). What a command scoring a few messages reads
    // instead of visit_counts(); not inside a TrainingBatch (TrainingBatch::stored_counts).
    struct CountsOf {
        ClassTotals totals;
        std::uint64_t vocabulary = 0;
        std::vector<model::Snapshot::Change> features;
    };
    virtual CountsOf counts_of(const std::vector<model::FeatureId>& ids, model::TermFrequency tf) = 0;
    // The linear scorer's state, the pages written after the change numbered
    // `sequence` (0: every page there is) and the slot deltas written after it,
    // in one read transaction. With
    // `page`, each page is handed to it (its number and linear_page_slots
    // weights, valid during the call) instead of kept in LinearWeights::pages:
    // a reader copies a megabyte of weights once, not twice.
    using PageVisitor = std::function<void(std::uint32_t page, std::span<const float> weights)>;
    virtual LinearWeights linear_weights_since(std::uint64_t sequence, const PageVisitor& page = {}) = 0;
    // The state alone (hash_bits, bias, the samples' counts and refit mark,
    // the sequence): no page or slot delta is written after the highest change number.
    LinearWeights linear_state() {
        return linear_weights_since(static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
    }
    // Every rehearsal sample whose message is still learned as its class, in one read.
    virtual std::vector<LinearSample> linear_samples() = 0;
    // The last refit's own change to the weights; nullopt when none is kept
    // (no refit yet, or a store imported or written before schema 18 / 13).
    virtual std::optional<RefitLayer> linear_refit_layer() = 0;
    // The settings the model was trained with ("name = value" lines,
    // engine/model_settings.hpp), or "" when none are recorded yet.
    virtual std::string model_settings() = 0;
    virtual ContactSet load_contacts() = 0;
    virtual Statistics statistics() = 0;
    // Text of a feature id, or "" when unknown.
    virtual std::string feature_text(model::FeatureId id) = 0;

    virtual std::optional<Scan> find_scan(const Digest& id) = 0;
    // The console's history (Recording::history), as `q` asks.
    virtual std::vector<HistoryEntry> history(const HistoryQuery& q) = 0;
    // How many lines match `q`'s filters (its after, limit and order aside).
    virtual std::uint64_t history_count(const HistoryQuery& q) = 0;
    // One transaction; read_write only.
    virtual void record(const Recording& r) = 0;
    // The packer for scans recorded from now on: with the newest dictionary,
    // after learning a new one from the scans recorded when one is due
    // (read_write; read_only gives the newest as it is).
    virtual ScanPacker scan_packer(std::int64_t now) = 0;
    // Deletes scans and history lines recorded before `before`, the oldest
    // first, at most `batch` of each, in one short transaction (and the
    // corrections deferred before then whose scan never came).
    virtual ScanPrune prune_scans(std::int64_t before, std::size_t batch) = 0;
    // This connection serves a command of a few messages (a classify, learn or
    // correct of a handful, one process each): it touches a few hundred pages,
    // so the page cache sized for a training batch is memory it would only fill
    // once, and the one large read it makes, the linear weights, is cheaper
    // mapped than copied page by page. SQLite goes back to its default cache
    // (2 MiB) and maps the file while it reads the weights; PostgreSQL has
    // nothing to size.
    virtual void for_few_messages() {}
    // Whether a correction waits for its scan (TrainingBatch::defer_correction):
    // a cheap read that spares the recorder a write lock when none does.
    virtual bool has_deferred_corrections() = 0;
    // Corrections since `since` by their net effect: of the corrections of one
    // signature, only the latest counts (so ham, then spam, then back to ham
    // counts as nothing), and only where it is in the period.
    virtual CorrectionCounts corrections_since(std::int64_t since) = 0;
    // Every correction of a signature, undone ones included, oldest first:
    // the trail a history line shows.
    virtual std::vector<CorrectionRecord> corrections_of(const Digest& signature) = 0;
    virtual std::vector<std::pair<std::string, std::int64_t>> counters() = 0;

    virtual std::vector<Contact> contacts() = 0;
    virtual bool add_contact(std::string_view address, std::string_view source, std::int64_t now) = 0;  // false: already there
    virtual bool remove_contact(std::string_view address) = 0;                                          // false: not there
    // Adds contacts in one transaction; returns how many were not there yet.
    virtual std::size_t add_contacts(const std::vector<Contact>& contacts) = 0;

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

// What a backend does inside the one write transaction of a TrainingBatch,
// which keeps the arithmetic; destroying it uncommitted rolls back.
class WriteTransaction {
public:
    virtual ~WriteTransaction() = default;

    struct StoredMessage {
        Class c = Class::ham;
        std::string features;  // encode_terms() form
    };
    virtual std::optional<StoredMessage> find_message(const Digest& digest) = 0;
    virtual void insert_message(const Digest& digest, Class c, std::int64_t learned_at, std::string_view features) = 0;
    virtual void delete_message(const Digest& digest) = 0;

    // Spam, ham occurrences; spam, ham presences.
    using Row = std::array<std::int64_t, 4>;
    // The rows of `ids` (ascending as the store orders them), nullopt where there is none.
    virtual std::vector<std::optional<Row>> read_features(const std::vector<model::FeatureId>& ids) = 0;
    struct FeatureWrite {
        model::FeatureId id = 0;
        Row change{};
        std::string_view text;   // for a new row
        std::int64_t last_seen;  // 0: leave it
    };
    // Adds each change to its row (created when missing) and deletes the rows
    // of `deletes`, in the order given.
    virtual void write_features(const std::vector<FeatureWrite>& upserts, const std::vector<model::FeatureId>& deletes) = 0;
    struct ClassChange {
        std::int64_t messages = 0, occurrences = 0, presences = 0;
    };
    virtual void add_to_classes(const ClassChange& spam, const ClassChange& ham) = 0;
    // Adds to the linear scorer's stored state and weights (a missing page is
    // zeros), under the number of this transaction's change, so
    // log_model_change() must follow. A change of few slots is kept as slot
    // deltas (a correction writes kilobytes, not every page its message falls
    // on); when the kept deltas would pass linear_fold_slots(), they and the
    // change are added to the pages, in the order they were written, and the
    // deltas removed: the weights are the same floats either way. A store
    // whose weights have another hash_bits is an Error (fail()).
    struct LinearChange {
        unsigned hash_bits = 0;
        double bias = 0.0, nb_weight = 0.0;
        std::int64_t seen_spam = 0, seen_ham = 0;  // added to LinearWeights' counts
        // A refit's change: LinearWeights::refit_mark becomes this one if it is
        // higher. `refit_exclusive` (mailsiftd's refit of samples that changed):
        // written only while the stored mark is below this one, otherwise
        // RefitSuperseded (another writer refitted these samples already), so
        // that a fleet refits once. A learn command's refit, due because it
        // learned, is always written, as it was before the mark.
        std::optional<std::uint64_t> refit_mark;
        bool refit_exclusive = false;
        // Added to LinearWeights::samples_dropped (an undone correction's
        // sample): a new version of the samples, which mailsiftd refits without it.
        std::uint64_t samples_dropped = 0;
        // A refit's own change, kept in place of the last one's (RefitLayer).
        const RefitLayer* refit_layer = nullptr;
        // The weights' change, one way or the other (not both): dense pages
        // (page number, linear_page_slots floats to add), or the slots it
        // changes (ascending, each once, none 0): what a batch of a few
        // messages sums, without a table of every slot.
        std::vector<std::pair<std::uint32_t, const float*>> pages;
        std::vector<LinearWeights::SlotDelta> slots;
    };
    virtual void add_linear(const LinearChange& change) = 0;
    // Messages the linear scorer learned without their counts (known beyond
    // train_margin): recorded so that learning them again is recognised.
    virtual std::optional<Class> find_uncounted(const Digest& digest) = 0;
    // Inserts it (`was` none) or changes its class from `was`; when another
    // writer got there first, RetryableError (as insert_message).
    virtual void put_uncounted(const Digest& digest, Class c, std::optional<Class> was) = 0;
    virtual void delete_uncounted(const Digest& digest) = 0;
    // The rehearsal sample of class `c` at `position`: `blob` is
    // encode_linear_sample() of the message's prefix, `digest` its learned message.
    virtual void keep_linear_sample(Class c, std::uint64_t position, const Digest& digest, std::string_view blob) = 0;
    // The sample there, with its message's features, when its message is still learned as `c`.
    virtual std::optional<LinearSample> linear_sample(Class c, std::uint64_t position) = 0;
    // Records the settings the model is trained with, unless some are recorded
    // already: the first training's stay (Database::model_settings()).
    virtual void keep_model_settings(std::string_view text) = 0;
    // Numbers this transaction's change of the model: `ids` the features it
    // wrote or deleted (ascending), nullptr for "reload all".
    virtual void log_model_change(const std::vector<model::FeatureId>* ids) = 0;

    // false: the address was a contact already.
    virtual bool add_contact(std::string_view address, std::string_view source, std::int64_t now) = 0;
    virtual bool remove_contact(std::string_view address) = 0;  // false: not there
    virtual void record_correction(const Correction& c) = 0;
    // The latest correction of `signature` that stands (not undone), with what undoing it takes.
    virtual std::optional<CorrectionRecord> latest_correction(const Digest& signature) = 0;
    virtual void mark_undone(std::int64_t correction_id, std::int64_t at, std::string_view by) = 0;
    virtual void defer_correction(const Digest& signature, Class to, std::int64_t now, std::string_view by) = 0;
    // The class the dropped one asked for; nullopt: none was waiting.
    virtual std::optional<Class> drop_deferred_correction(const Digest& signature) = 0;
    virtual std::vector<ReadyCorrection> take_ready_corrections(std::size_t limit) = 0;
    virtual void commit() = 0;
    // Throws the backend's Error (naming the database) with `what`.
    [[noreturn]] virtual void fail(const std::string& what) const = 0;
};

// One write transaction of learn/unlearn operations. Feature-count changes are
// summed in memory and written once per distinct feature at commit(), which
// also sets the last_seen of every feature learned in the batch to the latest
// `now` given to learn(). Destroying an uncommitted batch rolls it back.
class TrainingBatch {
public:
    explicit TrainingBatch(Database& db);
    ~TrainingBatch();
    TrainingBatch(const TrainingBatch&) = delete;
    TrainingBatch& operator=(const TrainingBatch&) = delete;

    // One step of the linear scorer: `step` over `slots` (and the bias and
    // the weight of the naive-Bayes input), added to the stored weights at commit.
    struct LinearStep {
        unsigned hash_bits = 0;
        std::vector<model::Slot> slots;
        model::LinearModel::Step step;
    };
    // With `linear`, its step is added when the message is learned or moved,
    // never when it was already learned: learning again moves nothing.
    LearnResult learn(const Digest& digest, Class c, const std::vector<TrainTerm>& terms, std::int64_t now,
                      const LinearStep* linear = nullptr);
    // A message the naive-Bayes counts already know beyond train_margin, learned
    // by the linear scorer alone: its step is added, its counts are not, and it
    // is recorded so that learning it again moves nothing (already_learned),
    // the other way moves it (moved), and unlearning forgets it. A message
    // learned with its counts is left to learn() (the same result as there).
    LearnResult learn_uncounted(const Digest& digest, Class c, const LinearStep& linear);
    // A step not tied to one message's learning (rehearsal), added whatever happens.
    void add_linear(const LinearStep& step);
    // Weights to add as they are (2^hash_bits of them), with the bias and u: a
    // refit of the samples as `refit_mark` counts them (LinearChange::refit_mark;
    // commit() throws RefitSuperseded when another writer's refit came first).
    // `layer`, when given, is the refit's own change (RefitLayer), kept in
    // place of the last one's; without it the last one's stays as it was.
    void add_linear_weights(unsigned hash_bits, std::vector<float> delta, double bias, double nb_weight,
                            std::uint64_t refit_mark, bool exclusive = true,
                            std::optional<RefitLayer> layer = std::nullopt);
    // A correction undone: its message's rehearsal sample is out of use, and the
    // next refit is due however few messages were learned since (LinearChange::samples_dropped).
    void drop_linear_sample(unsigned hash_bits);
    // Counts a message offered to class `c`'s rehearsal sample, and keeps it at
    // `position` (nullopt: offered, not kept). `prefix` is the start of the message.
    // The count is written at commit even when the batch holds no step.
    void offer_linear_sample(unsigned hash_bits, Class c, std::optional<std::uint64_t> position, const Digest& digest,
                             std::string_view prefix);
    // The settings the model is trained with: recorded at commit when the
    // batch changed the model and none are recorded yet (keep_model_settings()).
    void keep_model_settings(std::string text) { model_settings_ = std::move(text); }
    // The rows the store holds for `ids`, in the columns `tf` trains on, as they
    // were before this batch (its changes are written at commit); nothing for an
    // id without a row. What a trainer reading only some rows reads mid-batch.
    std::vector<std::optional<model::ClassCounts>> stored_counts(const std::vector<model::FeatureId>& ids,
                                                                 model::TermFrequency tf);
    // The rehearsal sample there, this batch's writes included (linear_sample()).
    std::optional<LinearSample> linear_sample(Class c, std::uint64_t position);
    UnlearnResult unlearn(const Digest& digest, Class c);
    // The class a message is learned as (this batch included, uncounted ones too), or nothing.
    std::optional<Class> learned_class(const Digest& digest);
    // Adds a contact inside this transaction (e.g. the sender of a ham
    // message); false when it was one already.
    bool add_contact(std::string_view address, std::string_view source, std::int64_t now);
    bool remove_contact(std::string_view address);
    // Notes that a message mailsiftd judged `c.verdict` was corrected to `c.to`.
    void record_correction(const Correction& c);
    // The latest standing correction of `signature` (WriteTransaction::latest_correction).
    std::optional<CorrectionRecord> latest_correction(const Digest& signature);
    // Marks a correction undone; the caller has put the model back.
    void mark_undone(std::int64_t correction_id, std::int64_t at, std::string_view by);
    // A correction by signature whose scan is not written yet: kept (the last
    // label given wins, with its `by`) until the scan arrives and
    // take_ready_corrections() finds it.
    void defer_correction(const Digest& signature, Class to, std::int64_t now, std::string_view by);
    // At most `limit` deferred corrections whose scan is now written, oldest
    // first, each taken out of the waiting list (in this transaction: trained
    // with it, or not at all).
    std::vector<ReadyCorrection> take_ready_corrections(std::size_t limit);
    // Forgets a deferred correction of `signature`: a later one has its say,
    // or it is undone before its scan came. The class it asked for; nullopt:
    // none was waiting.
    std::optional<Class> drop_deferred_correction(const Digest& signature);
    void commit();

private:
    struct Delta {
        // Learned in this batch, less what was unlearned again in this batch: never negative.
        std::int64_t occurrences_spam = 0, occurrences_ham = 0;
        std::int64_t presence_spam = 0, presence_ham = 0;
        // Unlearned messages learned in earlier batches: subtracted at commit only
        // as far as the stored row still holds it (the row may have been pruned).
        std::int64_t removed_occurrences_spam = 0, removed_occurrences_ham = 0;
        std::int64_t removed_presence_spam = 0, removed_presence_ham = 0;
        std::uint32_t text_offset = 0, text_bytes = 0;  // in texts_; 0 bytes = none yet
        bool learned = false;                           // learned in this batch: last_seen moves
    };
    struct DigestHash {
        std::size_t operator()(const Digest& d) const noexcept;
    };
    void count(Class c, model::FeatureId id, std::int64_t n, std::string_view text, bool earlier);
    void remove_stored(const Digest& digest, Class c, const std::string& blob);

    LearnResult learn_now(const Digest& digest, Class c, const std::vector<TrainTerm>& terms, std::int64_t now,
                          const LinearStep* linear);
    void add_linear_now(const LinearStep& step);
    LearnResult learn_uncounted_now(const Digest& digest, Class c, const LinearStep& linear);
    void start_linear(unsigned hash_bits);
    void dense_linear();  // the steps' sums from linear_sparse_ into linear_delta_, from now on
    UnlearnResult unlearn_now(const Digest& digest, Class c);
    void commit_now();
    // Runs `op`; after a RetryableError starts the transaction again, replays
    // what the batch did before, and runs `op` again (a few times at most).
    template <class Op>
    auto retrying(Op&& op);
    void restart();
    void remember(std::function<void(TrainingBatch&)> op) {
        if (replayable_) done_.push_back(std::move(op));
    }

    Database& db_;
    bool replayable_;
    bool restart_needed_ = false;
    std::vector<std::function<void(TrainingBatch&)>> done_;  // what to replay after a RetryableError
    std::unique_ptr<WriteTransaction> tx_;  // null once committed
    Delta& delta(model::FeatureId id);
    // The batch's deltas, with an open-addressing index (slot -> position + 1,
    // 0 empty): one probe per feature of a learned message and no allocation
    // per new feature, on the single thread every write goes through.
    std::vector<std::pair<model::FeatureId, Delta>> deltas_;
    std::vector<std::uint32_t> delta_slots_;
    std::string texts_;  // arena for the texts of features new in this batch
    std::int64_t messages_spam_ = 0, messages_ham_ = 0;
    std::int64_t latest_ = 0;                             // the batch's time: latest `now` given to learn()
    std::unordered_set<Digest, DigestHash> learned_here_;  // messages learned in this batch
    // The linear steps of the batch, summed: per slot, and the bias and u.
    // Per slot in linear_sparse_ while they touch few slots (a correction:
    // a few thousand of the 2^18), in the dense linear_delta_ beyond (a
    // training batch, a refit). The same sums either way: each slot's steps
    // are added from 0 in the order given.
    unsigned linear_bits_ = 0;  // 0: none yet
    std::unordered_map<std::uint32_t, float> linear_sparse_;
    std::vector<float> linear_delta_;  // empty until dense_linear()
    std::vector<bool> linear_dirty_;  // by page
    double linear_bias_ = 0.0, linear_nb_weight_ = 0.0;
    std::int64_t linear_seen_spam_ = 0, linear_seen_ham_ = 0;
    std::optional<std::uint64_t> linear_refit_mark_;
    std::optional<RefitLayer> linear_refit_layer_;
    bool linear_refit_exclusive_ = false;
    std::uint64_t linear_samples_dropped_ = 0;
    std::string model_settings_;  // "": none to record
};

}  // namespace mailsift::store
