// What mailsiftd has done since it started, for Prometheus: counters and
// gauges updated by the scoring threads, the I/O thread, the refresher and the
// recorder without locks (atomics), rendered in the Prometheus text
// exposition format (version 0.0.4) on request. Serving it over HTTP is
// metrics_http.hpp's job; this file knows nothing of sockets.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace mailsift::daemon {

class Metrics {
public:
    // Upper bounds of the scoring-latency histogram, in seconds.
    static constexpr std::array<double, 10> latency_bounds = {0.0005, 0.001, 0.002, 0.005, 0.01,
                                                             0.025,  0.05,  0.1,   0.25,  1.0};
    enum class Verdict : std::uint8_t { ham, unsure, spam, skipped, error, count };
    enum class Action : std::uint8_t { accepted, tagged, quarantined, rejected, tempfailed, skipped, count };

    static constexpr std::size_t verdicts = static_cast<std::size_t>(Verdict::count);
    static constexpr std::size_t actions = static_cast<std::size_t>(Action::count);
    // The console's counters: sign-ins by outcome, answers by HTTP status (the
    // console's statuses; any other counts as "other"), corrections by role.
    static constexpr std::array<std::string_view, 4> sign_in_outcomes = {"ok", "failed", "limited", "refused"};
    static constexpr std::array<unsigned, 13> console_statuses = {200, 400, 401, 403, 404, 405, 413,
                                                                  415, 422, 429, 431, 503, 0};  // 0: other
    static constexpr std::array<std::string_view, 2> roles = {"admin", "viewer"};
    static const char* name(Verdict v);
    static const char* name(Action a);

    Metrics();

    // Everything render() shows, read once: the console's status page takes
    // the same figures, so the two always agree.
    struct Figures {
        std::int64_t now_ms = 0, started_ms = 0;
        std::array<std::array<std::uint64_t, actions>, verdicts> messages{};
        std::array<std::uint64_t, latency_bounds.size() + 1> latency_buckets{};  // not cumulative; last: +Inf
        std::uint64_t latency_count = 0, latency_sum_us = 0;
        std::uint64_t sessions = 0, protocol_errors = 0;
        std::int64_t sessions_open = 0;
        std::uint64_t model_features = 0, model_spam = 0, model_ham = 0;
        std::int64_t model_changed_ms = 0, model_checked_ms = 0;  // 0: never
        std::uint64_t store_errors = 0, record_failures = 0, scans_dropped = 0, scans_waiting = 0;
        std::uint64_t linear_refits = 0;
        std::uint64_t layer_users = 0, layer_corrections = 0;
        std::uint64_t socket_applied = 0, socket_refused = 0;
        std::int64_t outage_started_ms = 0;  // 0: the store answers
        std::uint64_t outage_ms_total = 0, outages = 0;
        std::array<std::uint64_t, sign_in_outcomes.size()> console_sign_ins{};
        std::array<std::uint64_t, console_statuses.size()> console_answers{};
        std::array<std::uint64_t, roles.size()> console_corrections{};
    };
    Figures figures() const;

    // Messages answered per `step` over the last `steps` of them (oldest first,
    // the current one last), by verdict and by action; at most a day back.
    struct Series {
        std::int64_t start_ms = 0;  // the first step's start
        std::chrono::seconds step{60};
        std::vector<std::array<std::uint32_t, verdicts>> by_verdict;
        std::vector<std::array<std::uint32_t, actions>> by_action;
    };
    Series series(std::chrono::seconds step, std::size_t steps) const;

    // A message answered: its verdict, the action taken, and the time from end of data to answer.
    void message(Verdict v, Action a, double seconds);
    void session_opened() {
        sessions_.fetch_add(1, std::memory_order_relaxed);
        sessions_open_.fetch_add(1, std::memory_order_relaxed);
    }
    void session_closed() { sessions_open_.fetch_sub(1, std::memory_order_relaxed); }
    void protocol_error() { protocol_errors_.fetch_add(1, std::memory_order_relaxed); }

    // The refresher, after each look at the store.
    void model_refreshed(std::uint64_t features, std::uint64_t spam_messages, std::uint64_t ham_messages,
                         bool changed);
    void store_error() { store_errors_.fetch_add(1, std::memory_order_relaxed); }

    // The recorder, after each write attempt: whether it worked, and what is still waiting.
    void recorder_write(bool ok, std::size_t scans_waiting);
    void scans_dropped(std::uint64_t n) { scans_dropped_.fetch_add(n, std::memory_order_relaxed); }
    void scans_waiting(std::size_t n) { scans_waiting_.store(n, std::memory_order_relaxed); }
    // The recorder refitted the linear scorer after the model changed (Recorder::model_changed).
    void linear_refitted() { linear_refits_.fetch_add(1, std::memory_order_relaxed); }
    // The recorder, after the model changed, with per_user set: the layers the store holds.
    void per_user_layers(std::uint64_t users, std::uint64_t corrections) {
        layer_users_.store(users, std::memory_order_relaxed);
        layer_corrections_.store(corrections, std::memory_order_relaxed);
    }
    // The correction socket: inputs applied, requests refused (nothing applied).
    void socket_corrections(std::uint64_t applied) { socket_applied_.fetch_add(applied, std::memory_order_relaxed); }
    void socket_refused() { socket_refused_.fetch_add(1, std::memory_order_relaxed); }

    // The console: an audited event (console/audit.hpp), and an answer's status.
    void console_event(std::string_view event, std::string_view outcome, std::string_view role);
    void console_answer(unsigned status);

    // The text exposition format.
    std::string render() const;

private:
    static std::int64_t now_ms();

    // The last day, a minute a slot (slot = minute % 1440, reset when reused).
    struct Minute {
        std::int64_t minute = -1;  // minutes since the epoch; -1: unused
        std::array<std::uint32_t, verdicts> by_verdict{};
        std::array<std::uint32_t, actions> by_action{};
    };
    static constexpr std::size_t minutes_kept = 1440;
    mutable std::mutex minutes_mutex_;
    std::array<Minute, minutes_kept> minutes_{};

    std::array<std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(Action::count)>,
               static_cast<std::size_t>(Verdict::count)>
        messages_{};
    std::array<std::atomic<std::uint64_t>, latency_bounds.size() + 1> latency_buckets_{};  // last: +Inf
    std::atomic<std::uint64_t> latency_count_{0};
    std::atomic<std::uint64_t> latency_sum_us_{0};
    std::atomic<std::uint64_t> sessions_{0}, protocol_errors_{0};
    std::atomic<std::int64_t> sessions_open_{0};
    std::atomic<std::uint64_t> model_features_{0}, model_spam_{0}, model_ham_{0};
    std::atomic<std::int64_t> model_changed_ms_{0}, model_checked_ms_{0};  // 0: never
    std::atomic<std::uint64_t> store_errors_{0}, record_failures_{0}, scans_dropped_{0}, linear_refits_{0};
    std::atomic<std::uint64_t> layer_users_{0}, layer_corrections_{0};
    std::atomic<std::uint64_t> scans_waiting_{0};
    std::atomic<std::uint64_t> socket_applied_{0}, socket_refused_{0};
    std::atomic<std::int64_t> outage_started_ms_{0};  // 0: the store answers
    std::atomic<std::uint64_t> outage_ms_total_{0};    // closed outages
    std::atomic<std::uint64_t> outages_{0};
    std::array<std::atomic<std::uint64_t>, sign_in_outcomes.size()> console_sign_ins_{};
    std::array<std::atomic<std::uint64_t>, console_statuses.size()> console_answers_{};
    std::array<std::atomic<std::uint64_t>, roles.size()> console_corrections_{};
    std::int64_t started_ms_;
};

}  // namespace mailsift::daemon
