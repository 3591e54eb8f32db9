// The daemon's only writer: scans (features under their signature), contacts
// from outgoing mail, and counters, queued by scoring threads without waiting
// and written by one thread in a transaction every few seconds, or as soon as
// half of max_queued_scans are waiting (a busy server). If the
// database cannot be written (missing, locked, read-only, disk full), the
// problem is said once in the log and the batch stays in memory to be retried
// every interval: counters are never lost (each failed attempt is counted as
// record_failures), scans and contacts are kept up to max_queued_scans each
// (the oldest beyond are dropped and counted as scans_dropped and
// contacts_dropped). Scoring never waits for it and mail is never held for it.
// After each write it trains the corrections that came by signature before
// their scan (mailsift correct --signature, deferred in the database).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mailsift/engine/filter.hpp"
#include "mailsift/store/database.hpp"
#include "metrics.hpp"

namespace mailsift::daemon {

class Recorder {
public:
    struct Options {
        std::filesystem::path database;
        std::chrono::milliseconds interval{5000};
        std::size_t max_queued_scans = 20000;   // beyond: drop (counted as scans_dropped)
        std::chrono::seconds keep_scans{14 * 86400};
        engine::Settings settings;  // how a deferred correction is trained (train_on_error, batch size)
        Metrics* metrics = nullptr;  // told of each write attempt and what waits
    };
    explicit Recorder(Options options);
    ~Recorder();  // writes what is queued, then stops
    Recorder(const Recorder&) = delete;
    Recorder& operator=(const Recorder&) = delete;

    void scan(store::Scan s);
    void contact(std::string address, std::string source, std::int64_t now);
    void count(const std::string& name, std::int64_t n = 1);
    // Writes now and waits for it (tests, shutdown).
    void flush();

private:
    void run();
    void write_batch(std::unique_lock<std::mutex>& lock);
    void restore(store::Recording& batch);
    void apply_deferred_corrections(store::Database& db);
    // Scans queued that start a write before the interval is up (half the cap).
    std::size_t early_write_at() const { return std::max<std::size_t>(1, options_.max_queued_scans / 2); }

    Options options_;
    std::mutex mutex_;
    std::condition_variable wake_, written_;
    store::Recording pending_;
    std::map<std::string, std::int64_t> counters_;
    std::uint64_t flush_requests_ = 0, flushes_done_ = 0;
    bool stopping_ = false;
    std::uint64_t failures_ = 0;  // failed attempts since the last write that succeeded
    std::chrono::steady_clock::time_point outage_began_{};  // the first of those
    std::chrono::steady_clock::time_point last_prune_{};
    std::thread thread_;
};

}  // namespace mailsift::daemon
