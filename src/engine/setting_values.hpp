// How each setting's text is read and said back: the value parsers (their
// ranges checked here, so nothing downstream re-validates strings), the
// setters and showers made of them, and Entry, a setting as the table
// (setting_table.cpp) declares it. Internal to the engine's settings:
// settings.cpp parses files with them, model_settings.cpp the settings kept
// with a model.
#pragma once

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "mailsift/engine/settings.hpp"

namespace mailsift::engine::setting_values {

inline std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

inline bool parse_bool(std::string_view v, bool& out) {
    if (v == "true" || v == "yes" || v == "on" || v == "1") return out = true, true;
    if (v == "false" || v == "no" || v == "off" || v == "0") return out = false, true;
    return false;
}

inline bool parse_size(std::string_view v, std::size_t& out) {
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

inline bool parse_double(std::string_view v, double& out) {
    // std::from_chars for double is in g++ 11+.
    double d = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
    // "nan" and "inf" parse, and NaN passes every range check written as "d < lo || d > hi".
    if (ec != std::errc{} || p != v.data() + v.size() || !std::isfinite(d)) return false;
    out = d;
    return true;
}

// HOST:PORT, the port in digits (the daemon checks the host when it binds).
inline bool host_port(std::string_view v) {
    const auto colon = v.rfind(':');
    return colon != std::string_view::npos && colon > 0 && colon + 1 < v.size() &&
           v.substr(colon + 1).find_first_not_of("0123456789") == std::string_view::npos;
}

using Setter = std::function<bool(Settings&, std::string_view)>;

inline Setter boolean(bool features::Options::*member) {
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
inline Setter log_odds(std::optional<double> model::Parameters::*member) {
    return [member](Settings& s, std::string_view v) {
        if (v == "off") return s.model.*member = std::nullopt, true;
        double d = 0;
        if (!parse_double(v, d) || !(d > -1e6 && d < 1e6)) return false;
        s.model.*member = d;
        return true;
    };
}

inline Setter probability(double model::Parameters::*member) {
    return [member](Settings& s, std::string_view v) {
        double d = 0;
        if (!parse_double(v, d) || d < 0.0 || d > 1.0) return false;
        s.model.*member = d;
        return true;
    };
}

inline Setter seconds(std::chrono::seconds DaemonSettings::*member) {
    return [member](Settings& s, std::string_view v) {
        std::size_t n = 0;
        if (!parse_size(v, n) || n < 1 || n > 86400) return false;
        s.daemon.*member = std::chrono::seconds(n);
        return true;
    };
}

// A probability, or "off".
inline Setter threshold(double DaemonSettings::*member) {
    return [member](Settings& s, std::string_view v) {
        if (v == "off") return s.daemon.*member = 2.0, true;
        double d = 0;
        if (!parse_double(v, d) || d < 0.0 || d > 1.0) return false;
        s.daemon.*member = d;
        return true;
    };
}


using Shower = std::function<std::string(const Settings&)>;

inline std::string on_off(bool b) { return b ? "on" : "off"; }

inline std::string size_text(std::size_t n) {
    if (n > 0 && n % (1024 * 1024) == 0) return std::to_string(n / (1024 * 1024)) + "M";
    if (n > 0 && n % 1024 == 0) return std::to_string(n / 1024) + "K";
    return std::to_string(n);
}

// A unix socket's permissions in octal, at most 0777.
inline bool octal_mode(std::string_view v, unsigned& out) {
    unsigned mode = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), mode, 8);
    return ec == std::errc{} && p == v.data() + v.size() && mode <= 0777 && (out = mode, true);
}

inline std::string octal_text(unsigned mode) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04o", mode);
    return std::string(buf);
}

inline std::string real_text(double d) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, d);
    return std::string(buf, r.ptr);
}

// Every setting, declared once: its key, its kind, how the file's text sets
// it (the value checked for range here, so nothing downstream re-validates
// strings) and how it is said back (setting_value(): parsing that text again
// gives the same value; a test reads every one back). Its default is what a
// default Settings holds; its documentation is mailsift.conf(5), and the
// administrator's are shown in the shipped mailsift.conf (tests check both).
struct Entry {
    SettingKind kind;
    Setter set;
    Shower show;
};

// A switch of the feature extractor (kept with the model): on or off.
inline Entry feature_switch(bool features::Options::*member) {
    return {SettingKind::model, boolean(member), [member](const Settings& s) { return on_off(s.features.*member); }};
}

// A count in one group of settings, at least `min`; said with its unit (K, M) when `unit`.
template <typename Struct>
Entry count_in(SettingKind kind, Struct Settings::*group, std::size_t Struct::*member, std::size_t min,
               bool unit = false) {
    return {kind, size_in(group, member, min), [=](const Settings& s) {
                const std::size_t n = (s.*group).*member;
                return unit ? size_text(n) : std::to_string(n);
            }};
}

// A number in one group of settings, in [lo, hi] (lo itself only when low_allowed).
template <typename Struct>
Entry number_in(SettingKind kind, Struct Settings::*group, double Struct::*member, double lo, double hi,
                bool low_allowed = true) {
    return {kind, real_in(group, member, lo, hi, low_allowed),
            [=](const Settings& s) { return real_text((s.*group).*member); }};
}

// Every setting by its key (setting_table.cpp).
const std::map<std::string, Entry, std::less<>>& setting_table();

}  // namespace mailsift::engine::setting_values
