// Configuration parsing: each key has one typed setter; values are checked
// for range here so nothing downstream re-validates strings.
#include "mailsift/engine/settings.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

namespace mailsift::engine {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

bool parse_bool(std::string_view v, bool& out) {
    if (v == "true" || v == "yes" || v == "on" || v == "1") return out = true, true;
    if (v == "false" || v == "no" || v == "off" || v == "0") return out = false, true;
    return false;
}

bool parse_size(std::string_view v, std::size_t& out) {
    std::size_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc{}) return false;
    std::string_view unit = trim(std::string_view(p, static_cast<std::size_t>(v.data() + v.size() - p)));
    std::size_t mul = 1;
    if (unit == "k" || unit == "K" || unit == "KiB") mul = 1024;
    else if (unit == "M" || unit == "MiB") mul = 1024 * 1024;
    else if (!unit.empty()) return false;
    if (n > SIZE_MAX / mul) return false;  // "100000000000000M" must not wrap to a small number
    out = n * mul;
    return true;
}

bool parse_double(std::string_view v, double& out) {
    // std::from_chars for double is in g++ 11+.
    double d = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
    // "nan" and "inf" parse, and NaN passes every range check written as "d < lo || d > hi".
    if (ec != std::errc{} || p != v.data() + v.size() || !std::isfinite(d)) return false;
    out = d;
    return true;
}

// HOST:PORT, the port in digits (the daemon checks the host when it binds).
bool host_port(std::string_view v) {
    const auto colon = v.rfind(':');
    return colon != std::string_view::npos && colon > 0 && colon + 1 < v.size() &&
           v.substr(colon + 1).find_first_not_of("0123456789") == std::string_view::npos;
}

using Setter = std::function<bool(Settings&, std::string_view)>;

Setter boolean(bool features::Options::*member) {
    return [member](Settings& s, std::string_view v) { return parse_bool(v, s.features.*member); };
}

template <typename Struct>
Setter size_in(Struct Settings::*group, std::size_t Struct::*member, std::size_t min) {
    return [group, member, min](Settings& s, std::string_view v) {
        std::size_t n = 0;
        if (!parse_size(v, n) || n < min) return false;
        (s.*group).*member = n;
        return true;
    };
}

// A number in [lo, hi] (lo itself only when low_allowed).
template <typename Struct>
Setter real_in(Struct Settings::*group, double Struct::*member, double lo, double hi, bool low_allowed = true) {
    return [=](Settings& s, std::string_view v) {
        double d = 0;
        if (!parse_double(v, d) || d < lo || (d == lo && !low_allowed) || d > hi) return false;
        (s.*group).*member = d;
        return true;
    };
}

// A log-odds threshold, or "off" (use the probability threshold).
Setter log_odds(std::optional<double> model::Parameters::*member) {
    return [member](Settings& s, std::string_view v) {
        if (v == "off") return s.model.*member = std::nullopt, true;
        double d = 0;
        if (!parse_double(v, d) || !(d > -1e6 && d < 1e6)) return false;
        s.model.*member = d;
        return true;
    };
}

Setter probability(double model::Parameters::*member) {
    return [member](Settings& s, std::string_view v) {
        double d = 0;
        if (!parse_double(v, d) || d < 0.0 || d > 1.0) return false;
        s.model.*member = d;
        return true;
    };
}

Setter seconds(std::chrono::seconds DaemonSettings::*member) {
    return [member](Settings& s, std::string_view v) {
        std::size_t n = 0;
        if (!parse_size(v, n) || n < 1 || n > 86400) return false;
        s.daemon.*member = std::chrono::seconds(n);
        return true;
    };
}

// A probability, or "off".
Setter threshold(double DaemonSettings::*member) {
    return [member](Settings& s, std::string_view v) {
        if (v == "off") return s.daemon.*member = 2.0, true;
        double d = 0;
        if (!parse_double(v, d) || d < 0.0 || d > 1.0) return false;
        s.daemon.*member = d;
        return true;
    };
}

const std::map<std::string, Setter, std::less<>>& setters() {
    static const std::map<std::string, Setter, std::less<>> table{
        {"database", [](Settings& s, std::string_view v) { return !v.empty() && (s.database = std::string(v), true); }},
        {"console_users",
         [](Settings& s, std::string_view v) { return !v.empty() && (s.console.users = std::string(v), true); }},
        {"console_listen",
         [](Settings& s, std::string_view v) {
             // HOST:PORT as metrics_listen; "off" or empty: no console. The daemon binds it.
             if (v == "off" || v.empty()) return s.console.listen.clear(), true;
             return host_port(v) && (s.console.listen = std::string(v), true);
         }},
        {"console_tls_certificate",
         [](Settings& s, std::string_view v) { return s.console.tls_certificate = std::string(v), true; }},
        {"console_tls_key", [](Settings& s, std::string_view v) { return s.console.tls_key = std::string(v), true; }},
        {"console_trusted_proxies",
         [](Settings& s, std::string_view v) {
             // IP addresses, separated by commas or blanks; "off" or empty: none.
             s.console.trusted_proxies.clear();
             if (v == "off") return true;
             std::size_t i = 0;
             while (i < v.size()) {
                 const std::size_t end = v.find_first_of(", \t", i);
                 const std::string_view one = v.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
                 if (!one.empty()) {
                     unsigned char buf[16];
                     const std::string text(one);
                     if (::inet_pton(AF_INET, text.c_str(), buf) != 1 && ::inet_pton(AF_INET6, text.c_str(), buf) != 1) {
                         return false;
                     }
                     s.console.trusted_proxies.push_back(text);
                 }
                 if (end == std::string_view::npos) break;
                 i = end + 1;
             }
             return true;
         }},
        {"alpha",
         [](Settings& s, std::string_view v) {
             double d = 0;
             return parse_double(v, d) && d > 0.0 && d <= 100.0 && (s.model.alpha = d, true);
         }},
        {"term_frequency",
         [](Settings& s, std::string_view v) {
             if (v == "raw") return s.model.term_frequency = model::TermFrequency::raw, true;
             if (v == "boolean") return s.model.term_frequency = model::TermFrequency::boolean, true;
             return false;
         }},
        {"calibration_temperature",
         [](Settings& s, std::string_view v) {
             double d = 0;
             return parse_double(v, d) && d >= 0.01 && d <= 1000 && (s.model.calibration_temperature = d, true);
         }},
        {"spam_threshold", probability(&model::Parameters::spam_threshold)},
        {"spam_log_odds", log_odds(&model::Parameters::spam_log_odds)},
        {"ham_log_odds", log_odds(&model::Parameters::ham_log_odds)},
        {"ham_threshold", probability(&model::Parameters::ham_threshold)},
        {"reasons",
         [](Settings& s, std::string_view v) { return parse_size(v, s.reasons) && s.reasons <= 1000; }},
        {"batch_messages",
         [](Settings& s, std::string_view v) { return parse_size(v, s.batch_messages) && s.batch_messages >= 1; }},
        {"listen",
         [](Settings& s, std::string_view v) {
             // Postfix notation; the daemon resolves it.
             const bool ok = (v.starts_with("inet:") && v.rfind(':') > 5) || (v.starts_with("unix:") && v.size() > 5);
             return ok && (s.daemon.listen = std::string(v), true);
         }},
        {"metrics_listen",
         [](Settings& s, std::string_view v) {
             // HOST:PORT (an IPv6 host in brackets); "off" or empty: no metrics. The daemon binds it.
             if (v == "off" || v.empty()) return s.daemon.metrics_listen.clear(), true;
             return host_port(v) && (s.daemon.metrics_listen = std::string(v), true);
         }},
        {"socket_mode",
         [](Settings& s, std::string_view v) {
             unsigned mode = 0;
             auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), mode, 8);
             return ec == std::errc{} && p == v.data() + v.size() && mode <= 0777 && (s.daemon.socket_mode = mode, true);
         }},
        {"socket_group", [](Settings& s, std::string_view v) { return s.daemon.socket_group = std::string(v), true; }},
        {"socket_owner", [](Settings& s, std::string_view v) { return s.daemon.socket_owner = std::string(v), true; }},
        {"user", [](Settings& s, std::string_view v) { return s.daemon.user = std::string(v), true; }},
        {"threads",
         [](Settings& s, std::string_view v) {
             return parse_size(v, s.daemon.threads) && s.daemon.threads >= 1 && s.daemon.threads <= 256;
         }},
        {"max_frame_bytes",
         [](Settings& s, std::string_view v) {
             return parse_size(v, s.daemon.max_frame_bytes) && s.daemon.max_frame_bytes >= 65536 &&
                    s.daemon.max_frame_bytes <= 256u * 1024 * 1024;
         }},
        {"read_timeout", seconds(&DaemonSettings::read_timeout)},
        {"drain_timeout", seconds(&DaemonSettings::drain_timeout)},
        {"refresh_interval",
         [](Settings& s, std::string_view v) {
             std::size_t ms = 0;
             // At most a day: larger values overflow the clock's signed milliseconds.
             return parse_size(v, ms) && ms >= 10 && ms <= 86'400'000 &&
                    (s.daemon.refresh_interval = std::chrono::milliseconds(ms), true);
         }},
        {"on_error",
         [](Settings& s, std::string_view v) {
             if (v == "accept") return s.daemon.on_error = DaemonSettings::OnError::accept, true;
             if (v == "tempfail") return s.daemon.on_error = DaemonSettings::OnError::tempfail, true;
             return false;
         }},
        {"oversize",
         [](Settings& s, std::string_view v) {
             if (v == "prefix") return s.daemon.oversize = DaemonSettings::Oversize::prefix, true;
             if (v == "skip") return s.daemon.oversize = DaemonSettings::Oversize::skip, true;
             return false;
         }},
        {"skip_authenticated", [](Settings& s, std::string_view v) { return parse_bool(v, s.daemon.skip_authenticated); }},
        {"add_reasons", [](Settings& s, std::string_view v) { return parse_bool(v, s.daemon.add_reasons); }},
        {"subject_tag",
         [](Settings& s, std::string_view v) {
             // A header value: no control characters (DEL is one too).
             for (char c : v) if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f') return false;
             return s.daemon.subject_tag = std::string(v), true;
         }},
        {"record_signatures", [](Settings& s, std::string_view v) { return parse_bool(v, s.daemon.record_signatures); }},
        {"history", [](Settings& s, std::string_view v) { return parse_bool(v, s.daemon.record_history); }},
        {"history_subjects", [](Settings& s, std::string_view v) { return parse_bool(v, s.daemon.history_subjects); }},
        {"signature_days",
         [](Settings& s, std::string_view v) {
             std::size_t days = 0;
             return parse_size(v, days) && days >= 1 && days <= 3650 &&
                    (s.daemon.signature_keep = std::chrono::seconds(days * 86400), true);
         }},
        {"learn_contacts", [](Settings& s, std::string_view v) { return parse_bool(v, s.daemon.learn_contacts); }},
        {"stats_interval", seconds(&DaemonSettings::stats_interval)},
        {"reject_threshold", threshold(&DaemonSettings::reject_threshold)},
        {"quarantine_threshold", threshold(&DaemonSettings::quarantine_threshold)},
        {"reject_reply",
         [](Settings& s, std::string_view v) {
             // "5dd x.y.z text": validated fully by the daemon's milter formatter; here the shape.
             if (v.size() < 9 || (v[0] != '4' && v[0] != '5') || v[3] != ' ') return false;
             for (char c : v) if (static_cast<unsigned char>(c) < 0x20) return false;
             return s.daemon.reject_reply = std::string(v), true;
         }},
        {"train_on_error", [](Settings& s, std::string_view v) { return parse_bool(v, s.train_on_error); }},
        {"train_margin",
         [](Settings& s, std::string_view v) {
             double d = 0;
             return parse_double(v, d) && d >= 0.0 && d <= 10000 && (s.train_margin = d, true);
         }},
        {"model",
         [](Settings& s, std::string_view v) {
             if (v == "naive_bayes") return s.scorer = Scorer::naive_bayes, true;
             if (v == "linear") return s.scorer = Scorer::linear, true;
             return false;
         }},
        {"linear_learner",
         [](Settings& s, std::string_view v) {
             const model::Learner* l = model::find_learner(v);
             return l != nullptr && (s.linear.learner = std::string(l->name()), true);
         }},
        {"linear_step", real_in(&Settings::linear, &model::LinearParameters::step, 0.0, 100.0, /*low_allowed=*/false)},
        {"linear_temperature",
         real_in(&Settings::linear, &model::LinearParameters::temperature, 0.0, 100.0, /*low_allowed=*/false)},
        {"linear_nb_rate", real_in(&Settings::linear, &model::LinearParameters::nb_rate, 0.0, 10.0)},
        {"linear_ngram_bytes",
         [](Settings& s, std::string_view v) { return parse_size(v, s.slots.ngram_bytes) && s.slots.ngram_bytes <= 1024 * 1024; }},
        {"linear_rehearsal",
         [](Settings& s, std::string_view v) { return parse_size(v, s.linear.rehearsal); }},
        {"linear_replays",
         [](Settings& s, std::string_view v) { return parse_size(v, s.linear.replays) && s.linear.replays <= 100; }},
        {"linear_replay_margin", real_in(&Settings::linear, &model::LinearParameters::replay_margin, 0.0, 1000.0)},
        {"linear_epochs",
         [](Settings& s, std::string_view v) { return parse_size(v, s.linear.epochs) && s.linear.epochs <= 100; }},
        {"linear_hash_bits",
         [](Settings& s, std::string_view v) {
             std::size_t n = 0;
             if (!parse_size(v, n) || n < 10 || n > 24) return false;
             // One size for the weights and for the slots that index them.
             s.linear.hash_bits = s.slots.bits = static_cast<unsigned>(n);
             return true;
         }},
        {"linear_features",
         [](Settings& s, std::string_view v) { return parse_bool(v, s.slots.bag); }},
        {"feature_confidence",
         [](Settings& s, std::string_view v) {
             double d = 0;
             return parse_double(v, d) && d >= 0.0 && d <= 1000 && (s.model.feature_confidence = d, true);
         }},
        {"length_norm_features",
         [](Settings& s, std::string_view v) {
             return parse_size(v, s.model.length_norm_features) && s.model.length_norm_features <= 100000;
         }},
        {"header_length_norm_features",
         [](Settings& s, std::string_view v) {
             return parse_size(v, s.model.header_length_norm_features) &&
                    s.model.header_length_norm_features <= 100000;
         }},
        {"features.words", boolean(&features::Options::words)},
        {"features.word_pairs", boolean(&features::Options::word_pairs)},
        {"features.cjk_bigrams", boolean(&features::Options::cjk_bigrams)},
        {"features.relay_path", boolean(&features::Options::relay_path)},
        {"features.dates", boolean(&features::Options::dates)},
        {"features.subject", boolean(&features::Options::subject)},
        {"features.headers", boolean(&features::Options::headers)},
        {"features.patterns", boolean(&features::Options::patterns)},
        {"features.urls", boolean(&features::Options::urls)},
        {"features.mime_shape", boolean(&features::Options::mime_shape)},
        {"features.envelope", boolean(&features::Options::envelope)},
        {"features.min_token_bytes", size_in(&Settings::features, &features::Options::min_token_bytes, 1)},
        {"features.max_token_bytes", size_in(&Settings::features, &features::Options::max_token_bytes, 1)},
        {"features.max_features", size_in(&Settings::features, &features::Options::max_features, 1)},
        {"limits.max_message_bytes", size_in(&Settings::limits, &mime::Limits::max_message_bytes, 1024)},
        {"limits.max_depth", size_in(&Settings::limits, &mime::Limits::max_depth, 1)},
        {"limits.max_parts", size_in(&Settings::limits, &mime::Limits::max_parts, 1)},
        {"limits.max_headers", size_in(&Settings::limits, &mime::Limits::max_headers, 1)},
        {"limits.max_header_bytes", size_in(&Settings::limits, &mime::Limits::max_header_bytes, 64)},
    };
    return table;
}

// What each setting holds, as text the file takes back (setting_value()):
// the same keys as setters(); a test reads every one back.
using Shower = std::function<std::string(const Settings&)>;

std::string on_off(bool b) { return b ? "on" : "off"; }

std::string size_text(std::size_t n) {
    if (n > 0 && n % (1024 * 1024) == 0) return std::to_string(n / (1024 * 1024)) + "M";
    if (n > 0 && n % 1024 == 0) return std::to_string(n / 1024) + "K";
    return std::to_string(n);
}

std::string real_text(double d) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, d);
    return std::string(buf, r.ptr);
}

const std::map<std::string, Shower, std::less<>>& showers() {
    using S = const Settings&;
    auto threshold_text = [](double t) { return t > 1.0 ? std::string("off") : real_text(t); };
    auto optional_text = [](const std::optional<double>& d) { return d ? real_text(*d) : std::string("off"); };
    static const std::map<std::string, Shower, std::less<>> table{
        {"database", [](S s) { return s.database.string(); }},
        {"console_users", [](S s) { return s.console.users.string(); }},
        {"console_listen", [](S s) { return s.console.listen.empty() ? std::string("off") : s.console.listen; }},
        {"console_tls_certificate", [](S s) { return s.console.tls_certificate.string(); }},
        {"console_tls_key", [](S s) { return s.console.tls_key.string(); }},
        {"console_trusted_proxies",
         [](S s) {
             std::string out;
             for (const auto& a : s.console.trusted_proxies) out += (out.empty() ? "" : ", ") + a;
             return out;  // "": none (as socket_group)
         }},
        {"alpha", [](S s) { return real_text(s.model.alpha); }},
        {"term_frequency",
         [](S s) { return std::string(s.model.term_frequency == model::TermFrequency::raw ? "raw" : "boolean"); }},
        {"calibration_temperature", [](S s) { return real_text(s.model.calibration_temperature); }},
        {"spam_threshold", [](S s) { return real_text(s.model.spam_threshold); }},
        {"spam_log_odds", [=](S s) { return optional_text(s.model.spam_log_odds); }},
        {"ham_log_odds", [=](S s) { return optional_text(s.model.ham_log_odds); }},
        {"ham_threshold", [](S s) { return real_text(s.model.ham_threshold); }},
        {"reasons", [](S s) { return std::to_string(s.reasons); }},
        {"batch_messages", [](S s) { return std::to_string(s.batch_messages); }},
        {"listen", [](S s) { return s.daemon.listen; }},
        {"metrics_listen", [](S s) { return s.daemon.metrics_listen.empty() ? std::string("off") : s.daemon.metrics_listen; }},
        {"socket_mode",
         [](S s) {
             char buf[8];
             std::snprintf(buf, sizeof buf, "%04o", s.daemon.socket_mode);
             return std::string(buf);
         }},
        {"socket_group", [](S s) { return s.daemon.socket_group; }},
        {"socket_owner", [](S s) { return s.daemon.socket_owner; }},
        {"user", [](S s) { return s.daemon.user; }},
        {"threads", [](S s) { return std::to_string(s.daemon.threads); }},
        {"max_frame_bytes", [](S s) { return size_text(s.daemon.max_frame_bytes); }},
        {"read_timeout", [](S s) { return std::to_string(s.daemon.read_timeout.count()); }},
        {"drain_timeout", [](S s) { return std::to_string(s.daemon.drain_timeout.count()); }},
        {"refresh_interval", [](S s) { return std::to_string(s.daemon.refresh_interval.count()); }},
        {"on_error",
         [](S s) { return std::string(s.daemon.on_error == DaemonSettings::OnError::accept ? "accept" : "tempfail"); }},
        {"oversize",
         [](S s) { return std::string(s.daemon.oversize == DaemonSettings::Oversize::prefix ? "prefix" : "skip"); }},
        {"skip_authenticated", [](S s) { return on_off(s.daemon.skip_authenticated); }},
        {"add_reasons", [](S s) { return on_off(s.daemon.add_reasons); }},
        {"subject_tag", [](S s) { return s.daemon.subject_tag; }},
        {"record_signatures", [](S s) { return on_off(s.daemon.record_signatures); }},
        {"history", [](S s) { return on_off(s.daemon.record_history); }},
        {"history_subjects", [](S s) { return on_off(s.daemon.history_subjects); }},
        {"signature_days", [](S s) { return std::to_string(s.daemon.signature_keep.count() / 86400); }},
        {"learn_contacts", [](S s) { return on_off(s.daemon.learn_contacts); }},
        {"stats_interval", [](S s) { return std::to_string(s.daemon.stats_interval.count()); }},
        {"reject_threshold", [=](S s) { return threshold_text(s.daemon.reject_threshold); }},
        {"quarantine_threshold", [=](S s) { return threshold_text(s.daemon.quarantine_threshold); }},
        {"reject_reply", [](S s) { return s.daemon.reject_reply; }},
        {"train_on_error", [](S s) { return on_off(s.train_on_error); }},
        {"train_margin", [](S s) { return real_text(s.train_margin); }},
        {"model", [](S s) { return std::string(s.scorer == Scorer::linear ? "linear" : "naive_bayes"); }},
        {"linear_step", [](S s) { return real_text(s.linear.step); }},
        {"linear_temperature", [](S s) { return real_text(s.linear.temperature); }},
        {"linear_learner", [](S s) { return s.linear.learner; }},
        {"linear_nb_rate", [](S s) { return real_text(s.linear.nb_rate); }},
        {"linear_ngram_bytes", [](S s) { return std::to_string(s.slots.ngram_bytes); }},
        {"linear_rehearsal", [](S s) { return std::to_string(s.linear.rehearsal); }},
        {"linear_replays", [](S s) { return std::to_string(s.linear.replays); }},
        {"linear_replay_margin", [](S s) { return real_text(s.linear.replay_margin); }},
        {"linear_epochs", [](S s) { return std::to_string(s.linear.epochs); }},
        {"linear_hash_bits", [](S s) { return std::to_string(s.linear.hash_bits); }},
        {"linear_features", [](S s) { return on_off(s.slots.bag); }},
        {"feature_confidence", [](S s) { return real_text(s.model.feature_confidence); }},
        {"length_norm_features", [](S s) { return std::to_string(s.model.length_norm_features); }},
        {"header_length_norm_features", [](S s) { return std::to_string(s.model.header_length_norm_features); }},
        {"features.words", [](S s) { return on_off(s.features.words); }},
        {"features.word_pairs", [](S s) { return on_off(s.features.word_pairs); }},
        {"features.cjk_bigrams", [](S s) { return on_off(s.features.cjk_bigrams); }},
        {"features.relay_path", [](S s) { return on_off(s.features.relay_path); }},
        {"features.dates", [](S s) { return on_off(s.features.dates); }},
        {"features.subject", [](S s) { return on_off(s.features.subject); }},
        {"features.headers", [](S s) { return on_off(s.features.headers); }},
        {"features.patterns", [](S s) { return on_off(s.features.patterns); }},
        {"features.urls", [](S s) { return on_off(s.features.urls); }},
        {"features.mime_shape", [](S s) { return on_off(s.features.mime_shape); }},
        {"features.envelope", [](S s) { return on_off(s.features.envelope); }},
        {"features.min_token_bytes", [](S s) { return std::to_string(s.features.min_token_bytes); }},
        {"features.max_token_bytes", [](S s) { return std::to_string(s.features.max_token_bytes); }},
        {"features.max_features", [](S s) { return std::to_string(s.features.max_features); }},
        {"limits.max_message_bytes", [](S s) { return size_text(s.limits.max_message_bytes); }},
        {"limits.max_depth", [](S s) { return std::to_string(s.limits.max_depth); }},
        {"limits.max_parts", [](S s) { return std::to_string(s.limits.max_parts); }},
        {"limits.max_headers", [](S s) { return std::to_string(s.limits.max_headers); }},
        {"limits.max_header_bytes", [](S s) { return size_text(s.limits.max_header_bytes); }},
    };
    return table;
}

}  // namespace

Settings parse_settings(std::string_view text, const std::string& source) {
    Settings s;
    std::size_t line_no = 0;
    while (!text.empty()) {
        ++line_no;
        const std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        line = trim(line);
        if (line.empty()) continue;
        const std::string where = source + ":" + std::to_string(line_no) + ": ";
        const std::size_t eq = line.find('=');
        if (eq == std::string_view::npos) throw ConfigError(where + "expected 'key = value'");
        const std::string_view key = trim(line.substr(0, eq));
        const std::string_view value = trim(line.substr(eq + 1));
        const auto it = setters().find(key);
        if (it == setters().end()) throw ConfigError(where + "unknown setting '" + std::string(key) + "'");
        if (!it->second(s, value)) {
            throw ConfigError(where + "invalid value '" + std::string(value) + "' for " + std::string(key));
        }
        s.given.emplace_back(std::string(key), std::string(value));
    }
    if (s.model.ham_threshold > s.model.spam_threshold) {
        throw ConfigError(source + ": ham_threshold must not exceed spam_threshold");
    }
    if (s.model.ham_log_odds && s.model.spam_log_odds && *s.model.ham_log_odds > *s.model.spam_log_odds) {
        throw ConfigError(source + ": ham_log_odds must not exceed spam_log_odds");
    }
    if (s.features.min_token_bytes > s.features.max_token_bytes) {
        throw ConfigError(source + ": features.min_token_bytes must not exceed features.max_token_bytes");
    }
    return s;
}

void set_setting(Settings& settings, std::string_view name, std::string_view value) {
    const auto it = setters().find(name);
    if (it == setters().end()) throw ConfigError("unknown setting '" + std::string(name) + "'");
    if (!it->second(settings, value)) {
        throw ConfigError("invalid value '" + std::string(value) + "' for " + std::string(name));
    }
}

std::string setting_value(const Settings& settings, std::string_view name) {
    const auto it = showers().find(name);
    if (it == showers().end()) throw ConfigError("unknown setting '" + std::string(name) + "'");
    return it->second(settings);
}

std::vector<std::string> setting_names() {
    std::vector<std::string> names;
    for (const auto& [name, setter] : setters()) names.push_back(name);
    return names;
}

Settings load_settings(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError(path.string() + ": cannot read configuration file");
    std::ostringstream buf;
    buf << in.rdbuf();
    return parse_settings(buf.str(), path.string());
}

Resolved resolve(const std::optional<std::filesystem::path>& config, const std::optional<std::filesystem::path>& database) {
    Resolved r;
    if (config) {
        r.config = *config;
    } else if (const char* env = std::getenv("MAILSIFT_CONFIG"); env != nullptr && *env != '\0') {
        r.config = env;
    } else if (std::filesystem::exists(system_config_path)) {
        r.config = system_config_path;
    }
    if (!r.config.empty()) r.settings = load_settings(r.config);
    if (database) {
        r.database = *database;
        r.database_source = "--db";
    } else if (const char* env = std::getenv("MAILSIFT_DB"); env != nullptr && *env != '\0') {
        r.database = env;
        r.database_source = "MAILSIFT_DB";
    } else if (!r.settings.database.empty()) {
        r.database = r.settings.database;
        r.database_source = "configuration file " + r.config.string();
    } else {
        r.database = default_database_path();
        r.database_source = "default";
    }
    return r;
}

std::filesystem::path default_database_path() {
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg == '/') {
        return std::filesystem::path(xdg) / "mailsift" / "mailsift.db";
    }
    if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
        return std::filesystem::path(home) / ".local" / "share" / "mailsift" / "mailsift.db";
    }
    return "mailsift.db";
}

}  // namespace mailsift::engine
