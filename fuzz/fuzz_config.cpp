// libFuzzer harness: engine::parse_settings on arbitrary text.
//
// Invariants (settings.hpp, mailsift.conf(5)):
//   - it returns settings or throws engine::ConfigError, whose message names the
//     source; nothing else escapes;
//   - accepted settings lie in the documented ranges (NaN is in no range;
//     refresh_interval 10 to 86400000 ms, at most a day);
//   - every integer setting holds exactly the value its last line in the file
//     says (a key given twice takes the later value), computed here from the
//     documented syntax, "digits [unit]" with K/k/KiB = 1024 and M/MiB = 1048576;
//     a value whose product does not fit must be refused, not wrapped;
//   - subject_tag, documented "no control characters", has none (C0 or DEL);
//     reject_reply has the documented shape "[45].. ".
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "mailsift/engine/settings.hpp"

namespace engine = mailsift::engine;
using mailsift::fuzz::printable;

namespace {

constexpr const char* source = "fuzz.conf";

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

// key -> value of its last line, by the documented file format.
std::map<std::string, std::string, std::less<>> last_values(std::string_view text) {
    std::map<std::string, std::string, std::less<>> out;
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        line = line.substr(0, line.find('#'));
        const std::size_t eq = line.find('=');
        if (eq == std::string_view::npos) continue;
        out[std::string(trim(line.substr(0, eq)))] = std::string(trim(line.substr(eq + 1)));
    }
    return out;
}

enum class Integer : std::uint8_t { ok, not_integer, too_large };

// "digits [blanks] [unit]" per mailsift.conf(5), with overflow detected.
Integer reference_integer(std::string_view v, std::uint64_t& out) {
    std::size_t i = 0;
    std::uint64_t n = 0;
    bool too_large = false;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') {
        if (__builtin_mul_overflow(n, 10u, &n) || __builtin_add_overflow(n, static_cast<unsigned>(v[i] - '0'), &n)) {
            too_large = true;
        }
        ++i;
    }
    if (i == 0) return Integer::not_integer;
    const std::string_view unit = trim(v.substr(i));
    std::uint64_t mul = 1;
    if (unit == "K" || unit == "k" || unit == "KiB") mul = 1024;
    else if (unit == "M" || unit == "MiB") mul = 1024 * 1024;
    else if (!unit.empty()) return Integer::not_integer;
    if (too_large || __builtin_mul_overflow(n, mul, &out)) return Integer::too_large;
    return Integer::ok;
}

bool no_controls(std::string_view s) {
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) return false;
    }
    return true;
}

bool in(double v, double lo, double hi) { return v >= lo && v <= hi; }  // false for NaN

void check_ranges(const engine::Settings& s) {
    const auto& m = s.model;
    const auto& d = s.daemon;
    FUZZ_CHECK("range-alpha", m.alpha > 0.0 && m.alpha <= 100.0, "alpha " + std::to_string(m.alpha));
    FUZZ_CHECK("range-temperature", in(m.calibration_temperature, 0.01, 1000.0),
               "calibration_temperature " + std::to_string(m.calibration_temperature));
    FUZZ_CHECK("range-thresholds",
               in(m.spam_threshold, 0.0, 1.0) && in(m.ham_threshold, 0.0, 1.0) && m.ham_threshold <= m.spam_threshold,
               "spam_threshold " + std::to_string(m.spam_threshold) + " ham_threshold " + std::to_string(m.ham_threshold));
    for (const auto& lo : {m.spam_log_odds, m.ham_log_odds}) {
        FUZZ_CHECK("range-log-odds", !lo || (std::isfinite(*lo) && *lo > -1e6 && *lo < 1e6),
                   "log-odds threshold " + std::to_string(lo ? *lo : 0.0));
    }
    FUZZ_CHECK("range-log-odds-order", !m.spam_log_odds || !m.ham_log_odds || *m.ham_log_odds <= *m.spam_log_odds,
               "ham_log_odds above spam_log_odds");
    FUZZ_CHECK("range-length-norm", m.length_norm_features <= 100000 && m.header_length_norm_features <= 100000,
               "length_norm_features " + std::to_string(m.length_norm_features));
    FUZZ_CHECK("range-reasons", s.reasons <= 1000, "reasons " + std::to_string(s.reasons));
    FUZZ_CHECK("range-batch", s.batch_messages >= 1, "batch_messages 0");
    const auto& f = s.features;
    FUZZ_CHECK("range-tokens",
               f.min_token_bytes >= 1 && f.max_token_bytes >= 1 && f.min_token_bytes <= f.max_token_bytes,
               "token bytes " + std::to_string(f.min_token_bytes) + ".." + std::to_string(f.max_token_bytes));
    FUZZ_CHECK("range-max-features", f.max_features >= 1, "features.max_features 0");
    const auto& l = s.limits;
    FUZZ_CHECK("range-limits",
               l.max_message_bytes >= 1024 && l.max_depth >= 1 && l.max_parts >= 1 && l.max_headers >= 1 &&
                   l.max_header_bytes >= 64,
               "limits " + std::to_string(l.max_message_bytes) + " " + std::to_string(l.max_header_bytes));
    FUZZ_CHECK("range-listen",
               (d.listen.starts_with("inet:") && d.listen.size() > 5) || (d.listen.starts_with("unix:") && d.listen.size() > 5),
               "listen " + printable(d.listen));
    FUZZ_CHECK("range-socket-mode", d.socket_mode <= 0777, "socket_mode " + std::to_string(d.socket_mode));
    FUZZ_CHECK("range-threads", d.threads >= 1 && d.threads <= 256, "threads " + std::to_string(d.threads));
    FUZZ_CHECK("range-frame", d.max_frame_bytes >= 65536 && d.max_frame_bytes <= 256u * 1024 * 1024,
               "max_frame_bytes " + std::to_string(d.max_frame_bytes));
    for (const auto secs : {d.read_timeout, d.drain_timeout, d.stats_interval}) {
        FUZZ_CHECK("range-seconds", secs.count() >= 1 && secs.count() <= 86400, "seconds " + std::to_string(secs.count()));
    }
    FUZZ_CHECK("range-refresh", d.refresh_interval.count() >= 10 && d.refresh_interval.count() <= 86'400'000,
               "refresh_interval " + std::to_string(d.refresh_interval.count()) + " ms");
    FUZZ_CHECK("range-signature-days",
               d.signature_keep.count() % 86400 == 0 && d.signature_keep.count() >= 86400 &&
                   d.signature_keep.count() <= 3650LL * 86400,
               "signature_keep " + std::to_string(d.signature_keep.count()) + " s");
    for (const double t : {d.reject_threshold, d.quarantine_threshold}) {
        FUZZ_CHECK("range-daemon-threshold", in(t, 0.0, 1.0) || t == 2.0, "threshold " + std::to_string(t));
    }
    FUZZ_CHECK("range-subject-tag", no_controls(d.subject_tag), "subject_tag " + printable(d.subject_tag));
    // Only the shape is promised when the file is read; the daemon's formatter judges the rest.
    FUZZ_CHECK("range-reject-reply",
               d.reject_reply.size() >= 4 && (d.reject_reply[0] == '4' || d.reject_reply[0] == '5') &&
                   d.reject_reply[3] == ' ',
               "reject_reply " + printable(d.reject_reply));
}

// Integer settings hold what their last line says; overflowing values are refused.
// A database line leaves a non-empty path.
void check_integers(const engine::Settings& s, std::string_view text) {
    const auto values = last_values(text);
    FUZZ_CHECK("database-not-empty", values.find("database") == values.end() || !s.database.empty(),
               "an empty database path was accepted");
    const auto& d = s.daemon;
    const std::map<std::string_view, std::uint64_t> actual{
        {"reasons", s.reasons},
        {"batch_messages", s.batch_messages},
        {"threads", d.threads},
        {"max_frame_bytes", d.max_frame_bytes},
        {"read_timeout", static_cast<std::uint64_t>(d.read_timeout.count())},
        {"drain_timeout", static_cast<std::uint64_t>(d.drain_timeout.count())},
        {"stats_interval", static_cast<std::uint64_t>(d.stats_interval.count())},
        {"refresh_interval", static_cast<std::uint64_t>(d.refresh_interval.count())},
        {"signature_days", static_cast<std::uint64_t>(d.signature_keep.count() / 86400)},
        {"length_norm_features", s.model.length_norm_features},
        {"header_length_norm_features", s.model.header_length_norm_features},
        {"features.min_token_bytes", s.features.min_token_bytes},
        {"features.max_token_bytes", s.features.max_token_bytes},
        {"features.max_features", s.features.max_features},
        {"limits.max_message_bytes", s.limits.max_message_bytes},
        {"limits.max_depth", s.limits.max_depth},
        {"limits.max_parts", s.limits.max_parts},
        {"limits.max_headers", s.limits.max_headers},
        {"limits.max_header_bytes", s.limits.max_header_bytes},
    };
    for (const auto& [key, got] : actual) {
        const auto it = values.find(key);
        if (it == values.end()) continue;
        std::uint64_t want = 0;
        const Integer r = reference_integer(it->second, want);
        const std::string what = std::string(key) + " = " + printable(it->second) + " was accepted as " + std::to_string(got);
        FUZZ_CHECK("integer-overflow-accepted", r != Integer::too_large, what + ", but the value does not fit 64 bits");
        FUZZ_CHECK("integer-syntax", r == Integer::ok, what + ", but it is not an integer");
        FUZZ_CHECK("integer-value", got == want, what + ", expected " + std::to_string(want));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::optional<engine::Settings> settings;
    try {
        settings = engine::parse_settings(text, source);
    } catch (const engine::ConfigError& e) {
        const std::string_view what = e.what();
        FUZZ_CHECK("error-names-source", what.starts_with(std::string(source) + ":"),
                   "ConfigError without the source: " + printable(what));
        return 0;
    } catch (const std::exception& e) {
        FUZZ_CHECK("only-config-error", false, std::string("parse_settings threw something else: ") + e.what());
    } catch (...) {
        FUZZ_CHECK("only-config-error", false, "parse_settings threw a non-std::exception");
    }
    check_ranges(*settings);
    check_integers(*settings, text);
    return 0;
}
