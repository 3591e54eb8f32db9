// console_status(): see console_status.hpp.
#include "console_status.hpp"

namespace mailsift::daemon {

using nlohmann::json;

namespace {

// The upper bound of the histogram bucket holding quantile q (as Prometheus'
// histogram_quantile would bound it); null when nothing was scored, "+Inf"
// beyond the last bound.
json quantile(const Metrics::Figures& f, double q) {
    if (f.latency_count == 0) return nullptr;
    const double rank = q * static_cast<double>(f.latency_count);
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < Metrics::latency_bounds.size(); ++b) {
        seen += f.latency_buckets[b];
        if (static_cast<double>(seen) >= rank) return Metrics::latency_bounds[b];
    }
    return "+Inf";
}

json series_json(const Metrics::Series& s) {
    json verdicts = json::object(), actions = json::object();
    for (std::size_t v = 0; v < Metrics::verdicts; ++v) {
        json counts = json::array();
        for (const auto& step : s.by_verdict) counts.push_back(step[v]);
        verdicts[Metrics::name(static_cast<Metrics::Verdict>(v))] = counts;
    }
    for (std::size_t a = 0; a < Metrics::actions; ++a) {
        json counts = json::array();
        for (const auto& step : s.by_action) counts.push_back(step[a]);
        actions[Metrics::name(static_cast<Metrics::Action>(a))] = counts;
    }
    return {{"start", s.start_ms / 1000}, {"step_seconds", s.step.count()}, {"by_verdict", verdicts}, {"by_action", actions}};
}

}  // namespace

json console_status(const Metrics& metrics) {
    const Metrics::Figures f = metrics.figures();
    json by_verdict = json::object(), by_action = json::object();
    std::uint64_t total = 0;
    for (std::size_t v = 0; v < Metrics::verdicts; ++v) {
        std::uint64_t n = 0;
        for (std::size_t a = 0; a < Metrics::actions; ++a) n += f.messages[v][a];
        by_verdict[Metrics::name(static_cast<Metrics::Verdict>(v))] = n;
        total += n;
    }
    for (std::size_t a = 0; a < Metrics::actions; ++a) {
        std::uint64_t n = 0;
        for (std::size_t v = 0; v < Metrics::verdicts; ++v) n += f.messages[v][a];
        by_action[Metrics::name(static_cast<Metrics::Action>(a))] = n;
    }
    const double seconds = 1000.0;
    return {
        {"now", static_cast<double>(f.now_ms) / seconds},
        {"started", static_cast<double>(f.started_ms) / seconds},
        {"messages", {{"total", total}, {"by_verdict", by_verdict}, {"by_action", by_action}}},
        {"scoring_seconds",
         {{"count", f.latency_count},
          {"mean", f.latency_count == 0 ? json(nullptr)
                                        : json(static_cast<double>(f.latency_sum_us) / 1e6 / static_cast<double>(f.latency_count))},
          {"p50", quantile(f, 0.50)},
          {"p90", quantile(f, 0.90)},
          {"p99", quantile(f, 0.99)}}},
        {"milter", {{"sessions", f.sessions}, {"open", f.sessions_open}, {"protocol_errors", f.protocol_errors}}},
        {"model",
         {{"features", f.model_features},
          {"spam", f.model_spam},
          {"ham", f.model_ham},
          {"age_seconds", f.model_changed_ms == 0 ? json(nullptr)
                                                  : json(static_cast<double>(f.now_ms - f.model_changed_ms) / seconds)},
          {"last_refresh", f.model_checked_ms == 0 ? json(nullptr) : json(static_cast<double>(f.model_checked_ms) / seconds)}}},
        {"store",
         {{"up", f.outage_started_ms == 0},
          {"read_errors", f.store_errors},
          {"write_failures", f.record_failures},
          {"outages", f.outages}}},
        {"scan_buffer", {{"waiting", f.scans_waiting}, {"dropped", f.scans_dropped}}},
        {"hour", series_json(metrics.series(std::chrono::seconds(60), 60))},
        {"day", series_json(metrics.series(std::chrono::seconds(600), 144))},
    };
}

}  // namespace mailsift::daemon
