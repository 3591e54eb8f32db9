// Ordered parallel map over the CLI's messages: a reader thread reads them
// (for_each_message), worker threads turn each into a result, and the calling
// thread consumes the results one by one in input order. Batch commands use it
// to parse and featurize on every core while output and database writes stay
// on one thread, in the order the messages were given.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <pthread.h>
#include <optional>
#include <thread>
#include <vector>

#include "message_source.hpp"

namespace mailsift::cli {

// Threads for the parallel part: the machine's cores (at least one).
inline std::size_t worker_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

// Reads every message under `paths` (as for_each_message) and calls
// `work(message)` on up to `threads` threads and then `consume(message, result)`
// on the calling thread, in input order. At most `window` messages are held at
// once, so memory stays bounded however many are read. `work` must be safe to
// run concurrently; `consume` returning false stops reading (messages already
// in flight are dropped unconsumed). An exception from `work` or `consume` is
// rethrown here after every thread has stopped. Returns false when reading
// stopped early.
template <typename Result>
bool for_each_message_parallel(const std::vector<std::string>& paths, std::size_t max_bytes, std::size_t threads,
                               const std::function<Result(const InputMessage&)>& work,
                               const std::function<bool(InputMessage&, Result&)>& consume,
                               std::size_t window = 256) {
    struct Item {
        InputMessage message;
        std::optional<Result> result;
    };
    threads = std::max<std::size_t>(1, threads);
    window = std::max<std::size_t>(2, window);
    // Messages change hands in runs, not one by one: a worker claims up to
    // `max_run` at a time and publishes their results together, the consumer
    // takes every finished message at the front at once, and the reader is woken
    // only when the window is half empty. Handing over each message alone cost
    // eight futex calls and a wake-up per message, a fifth of a classify's CPU.
    const std::size_t max_run = std::clamp<std::size_t>(window / (4 * threads), 1, 32);
    std::mutex mu;
    // One condition per waiter, each notified only when its condition may have
    // changed: waking every thread for every event costs more than the work.
    std::condition_variable room;       // the reader: the window has room
    std::condition_variable work_ready; // workers: an unclaimed message, or the end
    std::condition_variable front_done; // the consumer: the next message's result
    std::deque<Item> items;             // items.front() is the next to consume
    std::size_t consumed = 0;           // messages taken off the front so far
    std::size_t claimed = 0;            // messages handed to workers so far (>= consumed)
    bool reading_done = false;
    bool stop = false;
    std::exception_ptr failure;

    auto halt = [&] {  // with mu held
        stop = true;
        room.notify_all();
        work_ready.notify_all();
        front_done.notify_all();
    };
    auto fail = [&](std::exception_ptr e) {
        std::lock_guard lock(mu);
        if (!failure) failure = std::move(e);
        halt();
    };

    std::thread reader([&] {
        pthread_setname_np(pthread_self(), "mailsift-read");  // names show in top and perf
        try {
            for_each_message(paths, max_bytes, [&](InputMessage& m) {
                std::unique_lock lock(mu);
                room.wait(lock, [&] { return stop || items.size() < window; });
                if (stop) return false;
                items.push_back({std::move(m), std::nullopt});
                // A signal with no waiter is no system call; busy workers come back
                // for the next run by themselves.
                work_ready.notify_one();
                return true;
            });
        } catch (...) {
            fail(std::current_exception());
        }
        std::lock_guard lock(mu);
        reading_done = true;
        work_ready.notify_all();
        front_done.notify_all();
    });

    std::vector<std::thread> workers;
    for (std::size_t t = 0; t < threads; ++t) {
        workers.emplace_back([&] {
            pthread_setname_np(pthread_self(), "mailsift-work");
            std::vector<Item*> run;
            std::vector<std::optional<Result>> results;
            std::unique_lock lock(mu);
            for (;;) {
                work_ready.wait(lock, [&] { return stop || claimed < consumed + items.size() || reading_done; });
                const std::size_t unclaimed = consumed + items.size() - claimed;
                if (stop || unclaimed == 0) return;  // stopped, or read and all claimed
                // A fair share of what is waiting, so that the other workers get
                // some too, and at most max_run so that the consumer is not kept waiting.
                const std::size_t n = std::clamp<std::size_t>(unclaimed / threads, 1, max_run);
                const std::size_t first = claimed;
                claimed += n;
                // std::deque keeps element addresses while only its ends change, and
                // the consumer does not take an item before its result is set.
                run.clear();
                for (std::size_t seq = first; seq < first + n; ++seq) run.push_back(&items[seq - consumed]);
                lock.unlock();
                results.clear();
                try {
                    for (Item* item : run) results.emplace_back(work(item->message));
                } catch (...) {
                    fail(std::current_exception());
                    return;
                }
                lock.lock();
                for (std::size_t i = 0; i < n; ++i) run[i]->result = std::move(results[i]);
                // Everything before `first` is consumed only once its results are in,
                // so the consumer waits for this run exactly when it starts at the front.
                if (first == consumed) front_done.notify_one();
            }
        });
    }

    bool completed = true;
    std::vector<Item> ready;
    try {
        for (;;) {
            std::unique_lock lock(mu);
            front_done.wait(lock, [&] {
                return stop || (!items.empty() && items.front().result) || (items.empty() && reading_done);
            });
            if (stop || items.empty()) break;  // failed, or everything read and consumed
            ready.clear();
            while (!items.empty() && items.front().result) {
                ready.push_back(std::move(items.front()));
                items.pop_front();
            }
            consumed += ready.size();
            if (items.size() <= window / 2) room.notify_one();
            lock.unlock();
            for (Item& item : ready) {
                if (!consume(item.message, *item.result)) {
                    completed = false;
                    break;
                }
            }
            if (!completed) break;
        }
    } catch (...) {
        fail(std::current_exception());
    }
    {
        std::lock_guard lock(mu);
        halt();
    }
    reader.join();
    for (auto& w : workers) w.join();
    if (failure) std::rethrow_exception(failure);
    return completed;
}

}  // namespace mailsift::cli
