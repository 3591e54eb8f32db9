// Metrics: atomics in, Prometheus text out (see metrics.hpp).
#include "metrics.hpp"

#include <algorithm>
#include <charconv>

namespace mailsift::daemon {

namespace {

constexpr const char* verdict_names[] = {"ham", "unsure", "spam", "skipped", "error"};
constexpr const char* action_names[] = {"accepted", "tagged", "quarantined", "rejected", "tempfailed", "skipped"};

// The shortest text that reads back as `v` ("0.0005", not "0.00050000000000000001").
std::string number(double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

void family(std::string& out, const char* name, const char* type, const char* help) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
}

void sample(std::string& out, const std::string& name, const std::string& value) {
    out += name;
    out += ' ';
    out += value;
    out += '\n';
}

}  // namespace

const char* Metrics::name(Verdict v) { return verdict_names[static_cast<std::size_t>(v)]; }
const char* Metrics::name(Action a) { return action_names[static_cast<std::size_t>(a)]; }

Metrics::Metrics() : started_ms_(now_ms()) {}

std::int64_t Metrics::now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

void Metrics::message(Verdict v, Action a, double seconds) {
    messages_[static_cast<std::size_t>(v)][static_cast<std::size_t>(a)].fetch_add(1, std::memory_order_relaxed);
    std::size_t bucket = 0;
    while (bucket < latency_bounds.size() && seconds > latency_bounds[bucket]) ++bucket;
    latency_buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
    latency_count_.fetch_add(1, std::memory_order_relaxed);
    latency_sum_us_.fetch_add(static_cast<std::uint64_t>(seconds * 1e6), std::memory_order_relaxed);
    const std::int64_t minute = now_ms() / 60000;
    std::lock_guard lock(minutes_mutex_);
    Minute& m = minutes_[static_cast<std::size_t>(minute) % minutes_kept];
    if (m.minute != minute) m = Minute{.minute = minute};
    ++m.by_verdict[static_cast<std::size_t>(v)];
    ++m.by_action[static_cast<std::size_t>(a)];
}

Metrics::Series Metrics::series(std::chrono::seconds step, std::size_t steps) const {
    Series out;
    out.step = step;
    const std::int64_t step_min = std::max<std::int64_t>(1, step.count() / 60);
    const std::int64_t now_min = now_ms() / 60000;
    const std::int64_t last = now_min - now_min % step_min;  // the current step's first minute
    const std::int64_t first = last - static_cast<std::int64_t>(steps - 1) * step_min;
    out.start_ms = first * 60000;
    out.by_verdict.assign(steps, {});
    out.by_action.assign(steps, {});
    std::lock_guard lock(minutes_mutex_);
    for (const Minute& m : minutes_) {
        if (m.minute < first || m.minute > now_min || m.minute <= now_min - static_cast<std::int64_t>(minutes_kept)) continue;
        const auto i = static_cast<std::size_t>((m.minute - first) / step_min);
        for (std::size_t v = 0; v < verdicts; ++v) out.by_verdict[i][v] += m.by_verdict[v];
        for (std::size_t a = 0; a < actions; ++a) out.by_action[i][a] += m.by_action[a];
    }
    return out;
}

Metrics::Figures Metrics::figures() const {
    constexpr auto r = std::memory_order_relaxed;
    Figures f;
    f.now_ms = now_ms();
    f.started_ms = started_ms_;
    for (std::size_t v = 0; v < verdicts; ++v) {
        for (std::size_t a = 0; a < actions; ++a) f.messages[v][a] = messages_[v][a].load(r);
    }
    for (std::size_t b = 0; b < latency_buckets_.size(); ++b) f.latency_buckets[b] = latency_buckets_[b].load(r);
    f.latency_count = latency_count_.load(r);
    f.latency_sum_us = latency_sum_us_.load(r);
    f.sessions = sessions_.load(r);
    f.protocol_errors = protocol_errors_.load(r);
    f.sessions_open = sessions_open_.load(r);
    f.model_features = model_features_.load(r);
    f.model_spam = model_spam_.load(r);
    f.model_ham = model_ham_.load(r);
    f.model_changed_ms = model_changed_ms_.load(r);
    f.model_checked_ms = model_checked_ms_.load(r);
    f.store_errors = store_errors_.load(r);
    f.record_failures = record_failures_.load(r);
    f.scans_dropped = scans_dropped_.load(r);
    f.scans_waiting = scans_waiting_.load(r);
    f.linear_refits = linear_refits_.load(r);
    f.layer_users = layer_users_.load(r);
    f.layer_corrections = layer_corrections_.load(r);
    f.socket_applied = socket_applied_.load(r);
    f.socket_refused = socket_refused_.load(r);
    f.outage_started_ms = outage_started_ms_.load(r);
    f.outage_ms_total = outage_ms_total_.load(r);
    f.outages = outages_.load(r);
    for (std::size_t i = 0; i < sign_in_outcomes.size(); ++i) f.console_sign_ins[i] = console_sign_ins_[i].load(r);
    for (std::size_t i = 0; i < console_statuses.size(); ++i) f.console_answers[i] = console_answers_[i].load(r);
    for (std::size_t i = 0; i < roles.size(); ++i) f.console_corrections[i] = console_corrections_[i].load(r);
    return f;
}

void Metrics::console_event(std::string_view event, std::string_view outcome, std::string_view role) {
    constexpr auto r = std::memory_order_relaxed;
    if (event == "sign-in") {
        for (std::size_t i = 0; i < sign_in_outcomes.size(); ++i) {
            if (sign_in_outcomes[i] == outcome) console_sign_ins_[i].fetch_add(1, r);
        }
    } else if (event == "correct" && outcome != "forbidden") {
        for (std::size_t i = 0; i < roles.size(); ++i) {
            if (roles[i] == role) console_corrections_[i].fetch_add(1, r);
        }
    }
}

void Metrics::console_answer(unsigned status) {
    std::size_t i = 0;
    while (i + 1 < console_statuses.size() && console_statuses[i] != status) ++i;  // the last: other
    console_answers_[i].fetch_add(1, std::memory_order_relaxed);
}

void Metrics::model_refreshed(std::uint64_t features, std::uint64_t spam_messages, std::uint64_t ham_messages,
                              bool changed) {
    const std::int64_t now = now_ms();
    model_features_.store(features, std::memory_order_relaxed);
    model_spam_.store(spam_messages, std::memory_order_relaxed);
    model_ham_.store(ham_messages, std::memory_order_relaxed);
    if (changed) model_changed_ms_.store(now, std::memory_order_relaxed);
    model_checked_ms_.store(now, std::memory_order_relaxed);
}

void Metrics::recorder_write(bool ok, std::size_t scans_waiting) {
    scans_waiting_.store(scans_waiting, std::memory_order_relaxed);
    const std::int64_t now = now_ms();
    if (!ok) {
        record_failures_.fetch_add(1, std::memory_order_relaxed);
        std::int64_t none = 0;
        if (outage_started_ms_.compare_exchange_strong(none, now)) outages_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    const std::int64_t began = outage_started_ms_.exchange(0);
    if (began != 0) outage_ms_total_.fetch_add(static_cast<std::uint64_t>(now - began), std::memory_order_relaxed);
}

std::string Metrics::render() const {
    const Figures f = figures();
    const std::int64_t now = f.now_ms;
    auto u = [](std::uint64_t v) { return std::to_string(v); };
    std::string out;
    out.reserve(8192);

    family(out, "mailsift_messages_total", "counter", "Messages answered, by verdict and by the action taken.");
    for (std::size_t v = 0; v < verdicts; ++v) {
        for (std::size_t a = 0; a < actions; ++a) {
            const auto n = f.messages[v][a];
            // Every pair that happened, and each verdict's 'accepted' always, so the series exist from the start.
            if (n == 0 && a != 0) continue;
            sample(out,
                   std::string("mailsift_messages_total{verdict=\"") + verdict_names[v] + "\",action=\"" +
                       action_names[a] + "\"}",
                   std::to_string(n));
        }
    }

    family(out, "mailsift_scoring_seconds", "histogram",
           "Time from the end of a message to mailsiftd's answer (parse, features, score, answer).");
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b < latency_bounds.size(); ++b) {
        cumulative += f.latency_buckets[b];
        sample(out, "mailsift_scoring_seconds_bucket{le=\"" + number(latency_bounds[b]) + "\"}", std::to_string(cumulative));
    }
    cumulative += f.latency_buckets[latency_bounds.size()];
    sample(out, "mailsift_scoring_seconds_bucket{le=\"+Inf\"}", std::to_string(cumulative));
    sample(out, "mailsift_scoring_seconds_sum", number(static_cast<double>(f.latency_sum_us) / 1e6));
    sample(out, "mailsift_scoring_seconds_count", u(f.latency_count));

    family(out, "mailsift_milter_sessions_total", "counter", "MTA connections accepted.");
    sample(out, "mailsift_milter_sessions_total", u(f.sessions));
    family(out, "mailsift_milter_sessions_open", "gauge", "MTA connections open now.");
    sample(out, "mailsift_milter_sessions_open", std::to_string(f.sessions_open));
    family(out, "mailsift_milter_protocol_errors_total", "counter",
           "MTA connections closed for a broken milter frame or command.");
    sample(out, "mailsift_milter_protocol_errors_total", u(f.protocol_errors));

    family(out, "mailsift_console_sign_ins_total", "counter",
           "Sign-ins to the web console, by outcome (ok; failed: wrong name or password; limited: answered 429; refused: malformed).");
    for (std::size_t i = 0; i < sign_in_outcomes.size(); ++i) {
        sample(out, "mailsift_console_sign_ins_total{outcome=\"" + std::string(sign_in_outcomes[i]) + "\"}",
               u(f.console_sign_ins[i]));
    }
    family(out, "mailsift_console_requests_total", "counter", "Answers of the web console, by HTTP status.");
    for (std::size_t i = 0; i < console_statuses.size(); ++i) {
        const std::string status = console_statuses[i] == 0 ? "other" : std::to_string(console_statuses[i]);
        sample(out, "mailsift_console_requests_total{status=\"" + status + "\"}", u(f.console_answers[i]));
    }
    family(out, "mailsift_console_corrections_total", "counter", "Corrections made in the web console, by the account's role.");
    for (std::size_t i = 0; i < roles.size(); ++i) {
        sample(out, "mailsift_console_corrections_total{role=\"" + std::string(roles[i]) + "\"}", u(f.console_corrections[i]));
    }

    family(out, "mailsift_model_features", "gauge", "Distinct features in the model mailsiftd scores with.");
    sample(out, "mailsift_model_features", u(f.model_features));
    family(out, "mailsift_model_messages", "gauge", "Messages the model was trained on, by class.");
    sample(out, "mailsift_model_messages{class=\"spam\"}", u(f.model_spam));
    sample(out, "mailsift_model_messages{class=\"ham\"}", u(f.model_ham));
    family(out, "mailsift_model_age_seconds", "gauge",
           "Seconds since the model in memory last changed (loaded, or brought up to the store's changes); -1: none yet.");
    sample(out, "mailsift_model_age_seconds",
           f.model_changed_ms == 0 ? "-1" : number(static_cast<double>(now - f.model_changed_ms) / 1000.0));
    family(out, "mailsift_model_last_refresh_timestamp_seconds", "gauge",
           "When mailsiftd last looked at the store for changes (Unix time); 0: never.");
    sample(out, "mailsift_model_last_refresh_timestamp_seconds", number(static_cast<double>(f.model_checked_ms) / 1000.0));

    family(out, "mailsift_store_errors_total", "counter", "Failed reads of the store by the model refresher.");
    sample(out, "mailsift_store_errors_total", u(f.store_errors));
    family(out, "mailsift_store_write_failures_total", "counter",
           "Failed writes of scans, contacts and counters (each retried at the next interval).");
    sample(out, "mailsift_store_write_failures_total", u(f.record_failures));
    const std::int64_t began = f.outage_started_ms;
    family(out, "mailsift_store_up", "gauge", "1 when the last write to the store worked, 0 during an outage.");
    sample(out, "mailsift_store_up", began == 0 ? "1" : "0");
    family(out, "mailsift_store_outages_total", "counter", "Times the store stopped taking writes.");
    sample(out, "mailsift_store_outages_total", u(f.outages));
    family(out, "mailsift_store_outage_seconds_total", "counter",
           "Seconds the store did not take writes, the current outage included.");
    const double open = began == 0 ? 0.0 : static_cast<double>(now - began) / 1000.0;
    sample(out, "mailsift_store_outage_seconds_total", number(static_cast<double>(f.outage_ms_total) / 1000.0 + open));

    family(out, "mailsift_scan_buffer_depth", "gauge", "Scans waiting in memory to be written to the store.");
    sample(out, "mailsift_scan_buffer_depth", u(f.scans_waiting));
    family(out, "mailsift_scans_dropped_total", "counter", "Scans dropped because the buffer was full during an outage.");
    sample(out, "mailsift_scans_dropped_total", u(f.scans_dropped));
    family(out, "mailsift_linear_refits_total", "counter",
           "Refits of the linear scorer after the model changed (corrections learned since the last).");
    sample(out, "mailsift_linear_refits_total", u(f.linear_refits));
    family(out, "mailsift_per_user_layers", "gauge",
           "Users whose corrections stepped a layer of their own (per_user; 0 with it off), as the store holds them.");
    sample(out, "mailsift_per_user_layers", u(f.layer_users));
    family(out, "mailsift_per_user_layer_corrections", "gauge", "The standing corrections those layers hold.");
    sample(out, "mailsift_per_user_layer_corrections", u(f.layer_corrections));

    family(out, "mailsift_socket_corrections_total", "counter",
           "Corrections applied from correct_socket; refused: requests that applied nothing.");
    sample(out, "mailsift_socket_corrections_total{outcome=\"applied\"}", u(f.socket_applied));
    sample(out, "mailsift_socket_corrections_total{outcome=\"refused\"}", u(f.socket_refused));

    family(out, "mailsift_start_time_seconds", "gauge", "When mailsiftd started (Unix time).");
    sample(out, "mailsift_start_time_seconds", number(static_cast<double>(f.started_ms) / 1000.0));
    return out;
}

}  // namespace mailsift::daemon
