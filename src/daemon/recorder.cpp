// Recorder: batches writes off the scoring path; see recorder.hpp.
#include "recorder.hpp"

#include <ctime>

#include "log.hpp"

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

void Recorder::scan(store::Scan s) {
    std::lock_guard lock(mutex_);
    if (pending_.scans.size() >= options_.max_queued_scans) {
        ++counters_["scans_dropped"];
        return;
    }
    pending_.scans.push_back(std::move(s));
}

void Recorder::contact(std::string address, std::string source, std::int64_t now) {
    std::lock_guard lock(mutex_);
    pending_.contacts.push_back({std::move(address), std::move(source), now});
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

void Recorder::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait_for(lock, options_.interval, [&] { return stopping_ || flush_requests_ > flushes_done_; });
        const std::uint64_t requested = flush_requests_;
        write_batch(lock);
        flushes_done_ = requested;
        written_.notify_all();
        if (stopping_) {
            write_batch(lock);
            return;
        }
    }
}

// Called with the lock held; releases it while writing.
void Recorder::write_batch(std::unique_lock<std::mutex>& lock) {
    store::Recording batch;
    std::swap(batch, pending_);
    for (const auto& [name, n] : counters_) {
        if (n != 0) batch.counter_increments.emplace_back(name, n);
    }
    counters_.clear();
    const auto now = std::chrono::steady_clock::now();
    const bool prune = now - last_prune_ > std::chrono::hours(1);
    if (batch.scans.empty() && batch.contacts.empty() && batch.counter_increments.empty() && !prune) return;
    lock.unlock();
    std::string problem;
    try {
        // Never create the database: a missing one means "no model", not "empty model".
        if (!std::filesystem::exists(options_.database)) throw std::runtime_error(options_.database.string() + ": no such database");
        store::Database db(options_.database, store::Database::Mode::read_write, std::chrono::seconds(5));
        db.record(batch);
        if (prune) {
            const std::int64_t cutoff = static_cast<std::int64_t>(std::time(nullptr)) - options_.keep_scans.count();
            const std::size_t pruned = db.prune_scans(cutoff);
            if (pruned > 0) log_info("pruned " + std::to_string(pruned) + " signatures older than the keep time");
        }
    } catch (const std::exception& e) {
        problem = e.what();
    }
    lock.lock();
    if (prune && problem.empty()) last_prune_ = now;
    if (!problem.empty() && problem != last_problem_) {
        log_warning("could not record " + std::to_string(batch.scans.size()) +
                    " signature(s) and counters (scoring goes on): " + problem);
    }
    last_problem_ = problem;
}

}  // namespace mailsift::daemon
