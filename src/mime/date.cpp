// The date-time of RFC 5322 (3.3 and the obsolete zones of 4.3), by hand:
// strptime reads month names in the process's locale.
#include "mailsift/mime/date.hpp"

#include <array>
#include <cctype>

namespace mailsift::mime {

namespace {

struct Cursor {
    std::string_view s;
    std::size_t i = 0;

    void spaces() {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
    }
    // Up to `most` digits, at least one.
    std::optional<int> number(std::size_t most) {
        const std::size_t start = i;
        int v = 0;
        while (i < s.size() && i - start < most && std::isdigit(static_cast<unsigned char>(s[i])) != 0) {
            v = v * 10 + (s[i++] - '0');
        }
        if (i == start) return std::nullopt;
        return v;
    }
    std::string_view word() {
        const std::size_t start = i;
        while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i])) != 0) ++i;
        return s.substr(start, i - start);
    }
    bool take(char c) {
        if (i < s.size() && s[i] == c) {
            ++i;
            return true;
        }
        return false;
    }
};

bool same(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t k = 0; k < a.size(); ++k) {
        if (std::tolower(static_cast<unsigned char>(a[k])) != std::tolower(static_cast<unsigned char>(b[k]))) return false;
    }
    return true;
}

// Days from 1970-01-01 to the given civil date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
    y -= m <= 2 ? 1 : 0;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

std::optional<int> zone_minutes(Cursor& c) {
    if (c.i < c.s.size() && (c.s[c.i] == '+' || c.s[c.i] == '-')) {
        const bool minus = c.s[c.i++] == '-';
        const std::size_t start = c.i;
        const auto hhmm = c.number(4);
        if (!hhmm || c.i - start != 4 || *hhmm % 100 > 59) return std::nullopt;
        const int m = *hhmm / 100 * 60 + *hhmm % 100;
        return minus ? -m : m;
    }
    static constexpr std::array<std::pair<std::string_view, int>, 12> names{{{"UT", 0},
                                                                              {"UTC", 0},
                                                                              {"GMT", 0},
                                                                              {"Z", 0},
                                                                              {"EST", -300},
                                                                              {"EDT", -240},
                                                                              {"CST", -360},
                                                                              {"CDT", -300},
                                                                              {"MST", -420},
                                                                              {"MDT", -360},
                                                                              {"PST", -480},
                                                                              {"PDT", -420}}};
    const std::string_view w = c.word();
    for (const auto& [name, minutes] : names) {
        if (same(w, name)) return minutes;
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::int64_t> parse_date_time(std::string_view text) {
    static constexpr std::array<std::string_view, 12> months{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                             "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    Cursor c{text};
    c.spaces();
    if (c.i < c.s.size() && std::isalpha(static_cast<unsigned char>(c.s[c.i])) != 0) {  // the day's name
        c.word();
        c.spaces();
        if (!c.take(',')) return std::nullopt;
        c.spaces();
    }
    const auto day = c.number(2);
    c.spaces();
    const std::string_view month_name = c.word();
    c.spaces();
    const std::size_t year_at = c.i;
    auto year = c.number(4);
    const std::size_t year_digits = c.i - year_at;
    c.spaces();
    const auto hour = c.number(2);
    if (!day || !year || !hour || !c.take(':')) return std::nullopt;
    const auto minute = c.number(2);
    std::optional<int> second = 0;
    if (c.take(':')) second = c.number(2);
    c.spaces();
    const auto zone = zone_minutes(c);
    if (!minute || !second || !zone) return std::nullopt;
    unsigned month = 0;
    for (unsigned k = 0; k < months.size(); ++k) {
        if (same(month_name, months[k])) month = k + 1;
    }
    if (year_digits == 2) *year += *year < 50 ? 2000 : 1900;  // obs-year
    else if (year_digits == 3) *year += 1900;
    if (month == 0 || *day < 1 || *day > 31 || *hour > 23 || *minute > 59 || *second > 60) return std::nullopt;
    const std::int64_t days = days_from_civil(*year, month, static_cast<unsigned>(*day));
    return days * 86400 + *hour * 3600 + *minute * 60 + *second - static_cast<std::int64_t>(*zone) * 60;
}

std::optional<std::int64_t> received_time(std::string_view received) {
    const auto semicolon = received.rfind(';');
    if (semicolon == std::string_view::npos) return std::nullopt;
    return parse_date_time(received.substr(semicolon + 1));
}

}  // namespace mailsift::mime
