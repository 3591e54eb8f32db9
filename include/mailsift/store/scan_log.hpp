// mailsift::store — the scan log part of the store (one role of Database):
// scans, the history, corrections and counters. Knows nothing of the model's
// counts: a correction trains through a TrainingBatch (training_batch.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mailsift/model/score.hpp"
#include "mailsift/store/common.hpp"
#include "mailsift/store/contact_store.hpp"

namespace mailsift::store {

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
    // The step it took in its user's layer (per_user): `feature` added to each
    // of `slots`, not to the bias; no slots: none. Whose layer, for mail from
    // which sender: what `stats --user` and `forget-user` read.
    struct Layer {
        float feature = 0.0f;
        std::vector<std::uint32_t> slots;
        std::string user;
        std::string sender;
    };
    Layer layer;
    // The sender it made a contact (a correction to ham), removed again; "": none.
    std::string contact;
    // Its site part (the counts, the site's step and replays, the contact) was
    // taken back when another user corrected the same sender's mail the other
    // way, or never taken (per_user: opposite corrections cancel in the site,
    // Trainer::train): undoing it takes back its layer's step alone.
    bool site_cancelled = false;
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
    // The signature (or digest) it is keyed by; set by WriteTransaction::standing_sender_corrections.
    std::optional<Digest> signature;
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

// A message's trail keeps every correction of it that stands and the latest
// undone_kept undone ones (WriteTransaction::mark_undone deletes older undone
// ones): a message moved in and out of Junk again and again does not grow the
// store, and what stands (what the model holds) keeps its record.
inline constexpr std::size_t undone_kept = 4;

// A deferred correction whose scan is written now (WriteTransaction::take_ready_corrections).
struct ReadyCorrection {
    Scan scan;
    Class to = Class::ham;
    std::string by;  // Correction::by of the request
};

// A deferred correction, as dropped (WriteTransaction::drop_deferred_correction).
struct DeferredCorrection {
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
    // The users (per_user keys) the scans were scored for, each once: kept
    // with the latest time (ScanLog::delivered_to).
    std::vector<std::pair<std::string, std::int64_t>> delivered;
};

// Corrections of scanned messages since some time.
struct CorrectionCounts {
    std::uint64_t false_positives = 0;  // said spam, corrected to ham
    std::uint64_t false_negatives = 0;  // said ham, corrected to spam
    std::uint64_t unsure_to_spam = 0;
    std::uint64_t unsure_to_ham = 0;
};

// What one call of Database::prune_scans removed, and whether more is older
// than its cut-off (the caller comes back for it: recorder.cpp).
struct ScanPrune {
    std::size_t scans = 0, lines = 0;  // signatures and history lines
    bool more = false;
};

// The scan log: what mailsiftd scored (the scans, kept signature_days under
// their X-Mailsift-Signature), the console's history of every message, the
// corrections of those verdicts (and those waiting for their scan), and the
// daemon's counters. Every method throws Error for an environment failure.
class ScanLog {
public:
    virtual ~ScanLog() = default;
    ScanLog(const ScanLog&) = delete;
    ScanLog& operator=(const ScanLog&) = delete;

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
    // Every correction that stepped `user`'s layer (per_user: CorrectionUndo::layer),
    // undone ones included, oldest first, each with its undo record; "": every
    // user's. Found by corrections.layer_user (an index of those alone).
    virtual std::vector<CorrectionRecord> layer_corrections(std::string_view user) = 0;
    // Users with a layer (standing corrections that stepped one), and those corrections.
    struct LayerCensus {
        std::uint64_t users = 0;
        std::uint64_t corrections = 0;
    };
    virtual LayerCensus layer_census() = 0;
    // Did mailsiftd record a scan for `user` (a per_user key; Recording::delivered)?
    virtual bool delivered_to(std::string_view user) = 0;
    virtual std::vector<std::pair<std::string, std::int64_t>> counters() = 0;

protected:
    ScanLog() = default;
};

}  // namespace mailsift::store
