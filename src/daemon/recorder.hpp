// The daemon's only writer: scans (features under their signature), contacts
// from outgoing mail, and counters, queued by scoring threads without waiting
// and written by one thread in a transaction every few seconds, or as soon as
// a batch of scans is ready (batch_bytes of them: a busy server). A scan is
// packed (grouped and compressed, store::ScanPacker) on the scoring thread
// that queues it, so the queue holds a few hundred bytes a scan and the writer
// only writes; the queue is bounded by those bytes. If the database cannot be
// written (missing, locked, read-only, disk full), the problem is said once in
// the log and the batch stays in memory to be retried every interval:
// counters are never lost (each failed attempt is counted as
// record_failures), scans are kept up to max_queued_bytes and contacts up to
// max_queued_contacts (the oldest beyond are dropped and counted as
// scans_dropped and contacts_dropped). Scoring never waits for it and mail is
// never held for it. After each write it trains the corrections that came by
// signature before their scan (mailsift correct --signature, deferred in the
// database), and takes the database's packer for the scans that follow. And
// when the scorer saw the model change (model_changed()), it refits the linear
// scorer if messages were learned since its last refit — the corrections of
// `mailsift correct`, the console's, its own deferred ones — here, off the
// scoring path (engine::Trainer::refit_linear_if_behind): once the changes
// pause (model_settled(): a refresh found the model as the last one left
// it), or refit_max_delay after the first change it has not refitted, so
// that a user moving 200 messages, or a provider's steady stream of
// corrections, costs a refit per pause or per refit_max_delay rather than
// refits back to back on a core of their own.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "mailsift/engine/settings.hpp"
#include "mailsift/store/database.hpp"
#include "metrics.hpp"

namespace mailsift::daemon {

class Recorder {
public:
    struct Options {
        std::filesystem::path database;
        std::chrono::milliseconds interval{5000};
        // Scans waiting, in their packed size plus their bookkeeping: about 60,000 scans
        // (a quarter of an hour at 70 messages a second); beyond (an outage), the
        // oldest are dropped and counted as scans_dropped.
        std::size_t max_queued_bytes = 32u << 20;
        // Scans waiting that start a write before the interval is up (about 2,000 scans).
        std::size_t batch_bytes = 1u << 20;
        std::size_t max_queued_contacts = 20000;  // beyond: the oldest dropped (contacts_dropped)
        // Console history lines (up to about 1 KB each with its explanation);
        // beyond: the oldest dropped (history_dropped).
        std::size_t max_queued_history = 60000;
        std::chrono::seconds keep_scans{14 * 86400};
        // Expiry deletes at most this many scans and as many history lines per
        // write, each batch its own short transaction, and comes back at the
        // next interval while more are old: a backlog (a million lines after
        // signature_days is lowered) never holds the write lock, or this
        // thread, for long. 2,000 lines took 0.19 s on SQLite with a million
        // and its six indexes (bench/history_scale.sh; 5,000: 0.34 s with four);
        // 2,000 a write is still 400 a second at the default interval, far
        // beyond any site's mail.
        std::size_t prune_batch = 2000;
        // A refit waits for the model's changes to pause, at most this long.
        std::chrono::milliseconds refit_max_delay{30000};
        engine::Settings settings;  // how a deferred correction is trained, and the linear scorer refitted
        Metrics* metrics = nullptr;  // told of each write attempt and what waits
    };
    explicit Recorder(Options options);
    ~Recorder();  // writes what is queued, then stops
    Recorder(const Recorder&) = delete;
    Recorder& operator=(const Recorder&) = delete;

    // Packs the scan ("feature<TAB>count" lines, as scored) on the calling thread, then queues it;
    // `user`: the per_user key it was scored for, recorded as delivered to (store::Recording::delivered).
    void scan(const store::Digest& id, std::int64_t scanned_at, model::Verdict verdict, std::string_view lines,
              std::string_view user = {});
    void contact(std::string address, std::string source, std::int64_t now);
    // A line of the console's history (written with the scans, pruned with them).
    void history(store::HistoryEntry entry);
    void count(const std::string& name, std::int64_t n = 1);
    // Writes now and waits for it (tests, shutdown).
    void flush();
    // Writes the scans queued and not yet being written on the caller's
    // connection, now: the correction socket's, before it corrects (this
    // thread may be busy refitting). When they cannot be written they go back
    // to the queue, and the error is thrown.
    void write_queued_scans(store::Database& db);
    // The scorer loaded a changed model. `behind` (messages learned since the
    // last refit): refit the linear scorer when the changes pause
    // (model_settled()) or refit_max_delay after the first change not
    // refitted; otherwise at once, which finds nothing to refit and counts
    // the users with a layer again. A failure is tried again at the interval.
    void model_changed(bool behind = true);
    // The scorer found the model unchanged since it last loaded it: the
    // refit model_changed() asked for is due now.
    void model_settled();

private:
    void run();
    void write_batch(std::unique_lock<std::mutex>& lock);
    void restore(store::Recording& batch);
    void apply_deferred_corrections(store::Database& db);
    bool refit_linear(store::Database& db);  // false: failed, said in the log
    // What a packed scan holds of the queue's bytes.
    static std::size_t cost(const store::PackedScan& p) { return sizeof p + p.blob.capacity(); }
    bool batch_ready() const { return pending_bytes_ >= std::min(options_.batch_bytes, options_.max_queued_bytes / 2); }

    Options options_;
    std::mutex mutex_;
    std::condition_variable wake_, written_;
    store::Recording pending_;  // its packed scans and contacts
    std::size_t pending_bytes_ = 0;  // cost() of pending_.packed
    std::map<std::string, std::int64_t, std::less<>> pending_users_;  // pending_.delivered, each user once
    std::mutex packer_mutex_;
    std::shared_ptr<const store::ScanPacker> packer_ = std::make_shared<const store::ScanPacker>();
    std::map<std::string, std::int64_t> counters_;
    std::uint64_t flush_requests_ = 0, flushes_done_ = 0;
    bool stopping_ = false;
    std::uint64_t failures_ = 0;  // failed attempts since the last write that succeeded
    std::chrono::steady_clock::time_point outage_began_{};  // the first of those
    // When the last expiry pass ended; none yet: the first write runs one (the
    // clock's epoch is the boot, so a default time point would wait for the
    // machine's first hour of uptime).
    std::optional<std::chrono::steady_clock::time_point> last_prune_;
    bool refit_requested_ = false, refit_failed_ = false;  // model_changed(); the last refit failed
    bool refit_due_ = false;  // model_settled(), or refit_max_delay passed, since refit_requested_
    std::chrono::steady_clock::time_point refit_requested_at_{};  // the first change not refitted
    std::string refit_problem_;  // the last refit's failure, said once (this thread only)
    bool pruning_ = false;                                // a pass has more to delete
    store::ScanPrune pruned_;                             // what this pass deleted so far
    std::thread thread_;
};

}  // namespace mailsift::daemon
