// Recorder: batches writes off the scoring path; see recorder.hpp.
#include "recorder.hpp"

#include <malloc.h>

#include <ctime>
#include <iterator>
#include <utility>

#include "log.hpp"
#include "mailsift/engine/trainer.hpp"

namespace mailsift::daemon {

Recorder::Recorder(Options options) : options_(std::move(options)), thread_([this] { run(); }) {}

Recorder::~Recorder() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void Recorder::scan(const store::Digest& id, std::int64_t scanned_at, model::Verdict verdict, std::string_view lines,
                    std::string_view user) {
    std::shared_ptr<const store::ScanPacker> packer;
    {
        std::lock_guard lock(packer_mutex_);
        packer = packer_;
    }
    store::PackedScan p;
    try {
        p = packer->pack(id, scanned_at, verdict, lines);
    } catch (const std::exception& e) {  // out of memory in the compressor: the scan goes, the verdict stays
        log_warning(std::string("could not pack a scan to record (dropped): ") + e.what());
        std::lock_guard lock(mutex_);
        ++counters_["scans_dropped"];
        if (options_.metrics) options_.metrics->scans_dropped(1);
        return;
    }
    const std::size_t bytes = cost(p);
    std::lock_guard lock(mutex_);
    if (pending_bytes_ + bytes > options_.max_queued_bytes) {
        ++counters_["scans_dropped"];
        if (options_.metrics) options_.metrics->scans_dropped(1);
        return;
    }
    const bool was_ready = batch_ready();
    pending_.packed.push_back(std::move(p));
    if (!user.empty()) {
        const auto it = pending_users_.find(user);
        if (it == pending_users_.end()) pending_users_.emplace(std::string(user), scanned_at);
        else it->second = std::max(it->second, scanned_at);
    }
    pending_bytes_ += bytes;
    if (options_.metrics) options_.metrics->scans_waiting(pending_.packed.size());
    // A batch is ready: write it now rather than at the interval.
    if (!was_ready && batch_ready() && failures_ == 0) wake_.notify_one();
}

void Recorder::contact(std::string address, std::string source, std::int64_t now) {
    std::lock_guard lock(mutex_);
    pending_.contacts.push_back({std::move(address), std::move(source), now});
}

void Recorder::history(store::HistoryEntry entry) {
    std::lock_guard lock(mutex_);
    pending_.history.push_back(std::move(entry));
}

void Recorder::count(const std::string& name, std::int64_t n) {
    std::lock_guard lock(mutex_);
    counters_[name] += n;
}

void Recorder::flush() {
    std::unique_lock lock(mutex_);
    const std::uint64_t ticket = ++flush_requests_;
    wake_.notify_all();
    written_.wait(lock, [&] { return flushes_done_ >= ticket || stopping_; });
}

void Recorder::write_queued_scans(store::Database& db) {
    store::Recording queued;
    {
        std::lock_guard lock(mutex_);
        std::swap(queued.packed, pending_.packed);
        pending_bytes_ = 0;
        queued.delivered.assign(pending_users_.begin(), pending_users_.end());
        pending_users_.clear();
        if (options_.metrics) options_.metrics->scans_waiting(0);
    }
    if (queued.packed.empty()) return;
    try {
        db.record(queued);
    } catch (...) {
        std::lock_guard lock(mutex_);
        restore(queued);  // in front of what came since, within the queue's bound
        if (options_.metrics) options_.metrics->scans_waiting(pending_.packed.size());
        throw;
    }
}

void Recorder::model_changed(bool behind) {
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (!refit_requested_) refit_requested_at_ = now;
    refit_requested_ = true;
    if (refit_due_ || (behind && now - refit_requested_at_ < options_.refit_max_delay)) return;
    refit_due_ = true;  // nothing to refit (a refit's own change, a start), or changes that never pause
    if (!refit_failed_) wake_.notify_one();
}

void Recorder::model_settled() {
    std::lock_guard lock(mutex_);
    if (!refit_requested_ || refit_due_) return;
    refit_due_ = true;
    if (!refit_failed_) wake_.notify_one();
}

void Recorder::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait_for(lock, options_.interval, [&] {
            return stopping_ || flush_requests_ > flushes_done_ ||
                   (failures_ == 0 && (batch_ready() || (refit_due_ && !refit_failed_)));  // after a failure: the interval
        });
        const std::uint64_t requested = flush_requests_;
        const bool final_write = stopping_;
        write_batch(lock);
        flushes_done_ = requested;
        written_.notify_all();
        if (final_write) return;
        if (stopping_) {  // asked to stop while writing: what came in meanwhile
            write_batch(lock);
            return;
        }
    }
}

// Called with the lock held; releases it while writing.
void Recorder::write_batch(std::unique_lock<std::mutex>& lock) {
    store::Recording batch;
    std::swap(batch, pending_);
    pending_bytes_ = 0;
    batch.delivered.assign(pending_users_.begin(), pending_users_.end());
    pending_users_.clear();
    for (const auto& [name, n] : counters_) {
        if (n != 0) batch.counter_increments.emplace_back(name, n);
    }
    counters_.clear();
    const auto now = std::chrono::steady_clock::now();
    // Expiry: a pass an hour, one batch a write until it is done.
    const bool prune = pruning_ || !last_prune_ || now - *last_prune_ > std::chrono::hours(1);
    // Due, or asked for and the daemon stopping (its last write).
    const bool refit = refit_requested_ && (refit_due_ || stopping_);
    if (refit) refit_requested_ = refit_due_ = false;
    if (batch.packed.empty() && batch.contacts.empty() && batch.counter_increments.empty() && batch.history.empty() &&
        batch.delivered.empty() && !prune && !refit) {
        return;
    }
    lock.unlock();
    std::string problem;
    bool pruned_ok = false, refitted_ok = !refit;
    store::ScanPrune pruned;
    try {
        // Never create the database: a missing one means "no model", not "empty model"
        // (and one deleted while it is being opened stays deleted).
        const auto opened = store::open(options_.database.string(), store::Database::Mode::read_write, std::chrono::seconds(5),
                           store::Database::Create::never);
        store::Database& db = *opened;
        db.for_recording();
        db.record(batch);
        apply_deferred_corrections(db);
        if (refit) refitted_ok = refit_linear(db);
        if (prune) {
            // Committed above already: a pruning failure must not put the batch back.
            try {
                const std::int64_t cutoff = static_cast<std::int64_t>(std::time(nullptr)) - options_.keep_scans.count();
                pruned = db.prune_scans(cutoff, options_.prune_batch);
                pruned_ok = true;
            } catch (const std::exception& e) {
                log_warning(std::string("could not prune old signatures (trying again later): ") + e.what());
            }
        }
        // Committed above already: without a new packer, scans are packed as before.
        try {
            auto packer = std::make_shared<const store::ScanPacker>(db.scan_packer(static_cast<std::int64_t>(std::time(nullptr))));
            std::lock_guard packer_lock(packer_mutex_);
            packer_ = std::move(packer);
        } catch (const std::exception& e) {
            log_warning(std::string("could not read the dictionary new scans are compressed with (trying again at "
                                    "the next write): ") + e.what());
        }
    } catch (const std::exception& e) {
        problem = e.what();
    }
    // What the messages since the last write left freed in the scoring
    // threads' arenas, and this write in its own, goes back to the system: at
    // 512 connections glibc kept 60 MiB of it, freed but not returned, and
    // more as the run went on (issue 59). A few milliseconds a write.
    ::malloc_trim(0);
    lock.lock();
    if (!refitted_ok) refit_requested_ = refit_due_ = true;  // again at the interval (or with the next write)
    refit_failed_ = !refitted_ok;
    if (pruned_ok) {
        pruned_.scans += pruned.scans;
        pruned_.lines += pruned.lines;
        pruning_ = pruned.more;
        if (!pruning_) {
            last_prune_ = now;
            if (pruned_.scans + pruned_.lines > 0) {
                log_info("pruned " + std::to_string(pruned_.scans) + " signatures and " +
                         std::to_string(pruned_.lines) + " history lines older than the keep time");
            }
            pruned_ = {};
        }
    }
    const auto outage_began = outage_began_;
    if (!problem.empty()) {
        // Nothing is lost: counters go back (and are written with the next batch that
        // succeeds), as do scans and contacts up to the queue's cap (beyond it, counted).
        for (const auto& [name, n] : batch.counter_increments) counters_[name] += n;
        ++counters_["record_failures"];
        restore(batch);
        if (stopping_) {
            log_warning("stopping: " + std::to_string(pending_.packed.size()) +
                        " signature(s) and the counters kept in memory cannot be written and are lost: " + problem);
        } else if (failures_++ == 0) {  // once per outage, not once per retry
            outage_began_ = std::chrono::steady_clock::now();
            log_warning("could not record " + std::to_string(pending_.packed.size()) +
                        " signature(s) and the counters; keeping them in memory and retrying every " +
                        std::to_string(options_.interval.count()) + " ms (scoring goes on): " + problem);
        }
    } else if (failures_ > 0) {
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - outage_began);
        log_info("recording works again after " + std::to_string(failures_) + " failed attempt(s) over " +
                 std::to_string(seconds.count()) + " s; the signatures and counters kept in memory are written (" +
                 std::to_string(batch.packed.size()) + " signature(s))");
        failures_ = 0;
    }
    if (options_.metrics) options_.metrics->recorder_write(problem.empty(), pending_.packed.size());
}

// Committed after the batch: a failure here leaves the corrections waiting for the next write.
void Recorder::apply_deferred_corrections(store::Database& db) {
    try {
        if (!db.has_deferred_corrections()) return;
        // A few corrections: the rows they need, not the whole model (Trainer::Reads).
        engine::Trainer trainer(db, options_.settings, engine::Trainer::Reads::rows);
        const std::size_t n = trainer.apply_deferred_corrections(static_cast<std::int64_t>(std::time(nullptr)));
        if (n > 0) log_info("trained " + std::to_string(n) + " correction(s) made before their scan was written");
    } catch (const std::exception& e) {
        log_warning(std::string("could not train the corrections waiting for their scans (trying again at the "
                                "next write): ") + e.what());
    }
}

// Committed after the batch, and after the deferred corrections it trained.
bool Recorder::refit_linear(store::Database& db) {
    try {
        const auto start = std::chrono::steady_clock::now();
        std::size_t n = 0;
        {
            // The whole model at once: the samples' rows would be read one sample at a time, and held twice.
            engine::Trainer trainer(db, options_.settings);
            n = trainer.refit_linear_if_behind();
        }
        // What the refit read (the samples, the counts) goes back to the system, not to this thread's arena.
        ::malloc_trim(0);
        if (n > 0) {
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
            log_info("refitted the linear scorer over its " + std::to_string(n) +
                     " rehearsal samples, with the messages learned since the last refit, in " +
                     std::to_string(ms.count()) + " ms");
            if (options_.metrics) options_.metrics->linear_refitted();
            std::lock_guard lock(mutex_);
            ++counters_["linear_refits"];
        }
        refit_problem_.clear();
        if (options_.metrics && options_.settings.per_user != engine::PerUser::off) {
            const auto census = db.layer_census();  // an index's entries: what the model's change may have changed
            options_.metrics->per_user_layers(census.users, census.corrections);
        }
        return true;
    } catch (const std::exception& e) {
        // Once per distinct problem, not once per retry (an outage retries every interval).
        if (e.what() != refit_problem_) {
            refit_problem_ = e.what();
            log_warning("could not refit the linear scorer after the model changed (trying again every interval): " +
                        refit_problem_);
        }
        return false;
    }
}

// With the lock held: puts a batch that could not be written back in front of what came since.
namespace {

// The failed batch's `items` go back in front of what came in meanwhile
// (`queued`); beyond `cap`, the oldest are dropped and counted under `dropped`.
template <class T>
void requeue_items(std::vector<T>& items, std::vector<T>& queued, std::size_t cap, std::int64_t& dropped) {
    items.insert(items.end(), std::make_move_iterator(queued.begin()), std::make_move_iterator(queued.end()));
    queued = std::move(items);
    if (queued.size() > cap) {
        const std::size_t excess = queued.size() - cap;
        queued.erase(queued.begin(), queued.begin() + static_cast<std::ptrdiff_t>(excess));
        dropped += static_cast<std::int64_t>(excess);
    }
}

}  // namespace

void Recorder::restore(store::Recording& batch) {
    auto& scans = pending_.packed;
    batch.packed.insert(batch.packed.end(), std::make_move_iterator(scans.begin()), std::make_move_iterator(scans.end()));
    scans = std::move(batch.packed);
    pending_bytes_ = 0;
    for (const auto& p : scans) pending_bytes_ += cost(p);
    // The oldest go first: a correction is likelier for recent mail.
    std::size_t excess = 0;
    while (excess < scans.size() && pending_bytes_ > options_.max_queued_bytes) pending_bytes_ -= cost(scans[excess++]);
    if (excess > 0) {
        scans.erase(scans.begin(), scans.begin() + static_cast<std::ptrdiff_t>(excess));
        counters_["scans_dropped"] += static_cast<std::int64_t>(excess);
        if (options_.metrics) options_.metrics->scans_dropped(excess);
    }
    requeue_items(batch.contacts, pending_.contacts, options_.max_queued_contacts, counters_["contacts_dropped"]);
    requeue_items(batch.history, pending_.history, options_.max_queued_history, counters_["history_dropped"]);
    for (auto& [user, at] : batch.delivered) {  // one entry a user: bounded by the users, not the mail
        auto& kept = pending_users_[std::move(user)];
        kept = std::max(kept, at);
    }
}

}  // namespace mailsift::daemon
