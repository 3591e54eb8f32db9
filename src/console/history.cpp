// The console's history API: see history.hpp.
#include "history.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <ctime>

#include "mailsift/engine/signature.hpp"
#include "web.hpp"

namespace mailsift::console {

using nlohmann::json;

namespace {

constexpr std::size_t max_filter_bytes = 256;

bool integer(const std::string& text, std::int64_t& out) {
    const char* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, out);
    return ec == std::errc() && p == end;
}

bool hex64(std::string_view text, std::uint64_t& out) {
    const char* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, out, 16);
    return ec == std::errc() && p == end && text.size() == 16;
}

std::optional<store::HistoryQuery::After> parse_cursor(const std::string& text) {
    // <scanned_at>_<the probability's 64 bits in hex>_<line id>: exact, whatever the order.
    const auto a = text.find('_');
    const auto b = a == std::string::npos ? a : text.find('_', a + 1);
    if (b == std::string::npos) return std::nullopt;
    store::HistoryQuery::After out;
    std::uint64_t bits = 0;
    if (!integer(text.substr(0, a), out.scanned_at) || !hex64(std::string_view(text).substr(a + 1, b - a - 1), bits) ||
        !integer(text.substr(b + 1), out.id) || out.id <= 0) {
        return std::nullopt;
    }
    out.probability = std::bit_cast<double>(bits);
    return out;
}

// `unix` in UTC as `format` (strftime) says.
std::string utc_time(std::int64_t unix, const char* format) {
    const auto t = static_cast<std::time_t>(unix);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char out[64];
    std::strftime(out, sizeof out, format, &tm);
    return out;
}

std::string iso_time(std::int64_t unix) { return utc_time(unix, "%Y-%m-%dT%H:%M:%SZ"); }

// A CSV cell (RFC 4180): quoted when it holds a comma, a quote or a line end.
// Mail is written by strangers: a cell a spreadsheet would take for a formula
// (=, +, -, @, a tab or a carriage return first) is shown as text with a ' first.
std::string csv_cell(std::string_view v) {
    std::string s;
    if (!v.empty() && (v[0] == '=' || v[0] == '+' || v[0] == '-' || v[0] == '@' || v[0] == '\t' || v[0] == '\r')) {
        s = "'";
    }
    s.append(v);
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string quoted = "\"";
    for (const char c : s) {
        if (c == '"') quoted += '"';
        quoted += c;
    }
    return quoted + "\"";
}

std::string number(double v) {
    char out[32];
    std::snprintf(out, sizeof out, "%.6f", v);
    return out;
}

}  // namespace

std::string history_parameters_problem(std::string_view query, std::span<const std::string_view> takes) {
    std::vector<std::string> seen;
    std::string problem;
    for_each_parameter(query, [&](std::string_view raw_name, std::string_view raw_value) {
        const std::string name = url_decoded(raw_name);
        const std::string value = url_decoded(raw_value);
        // The name is shown back only when it is a plain word.
        const bool plain = !name.empty() && name.size() <= 32 &&
                           std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
        if (std::find(takes.begin(), takes.end(), name) == takes.end()) {
            std::string known;
            for (const auto t : takes) known += (known.empty() ? "" : ", ") + std::string(t);
            problem = (plain ? "unknown parameter '" + name + "'" : std::string("an unknown parameter")) +
                      " (this request takes " + known + ")";
        } else if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
            problem = name + " is given twice";
        } else if (std::any_of(value.begin(), value.end(),
                               [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
            problem = name + " holds a control character (a NUL, a line break, ...)";
        }
        seen.push_back(name);
        return problem.empty();
    });
    return problem;
}

std::variant<store::HistoryQuery, std::string> history_query(const Parameter& param, bool paged) {
    store::HistoryQuery q;
    const std::string verdict = param("verdict");
    if (verdict == "spam") q.verdict = model::Verdict::spam;
    else if (verdict == "ham") q.verdict = model::Verdict::ham;
    else if (verdict == "unsure") q.verdict = model::Verdict::unsure;
    else if (!verdict.empty()) return std::string("verdict must be spam, ham or unsure");
    q.action = param("action");
    if (!q.action.empty() && q.action != "accepted" && q.action != "tagged" && q.action != "quarantined" &&
        q.action != "rejected" && q.action != "tempfailed" && q.action != "skipped") {
        return std::string("action must be accepted, tagged, quarantined, rejected, tempfailed or skipped");
    }
    for (auto [name, field] : {std::pair{"q", &q.text}, {"sender", &q.sender}, {"recipient", &q.recipient},
                               {"subject", &q.subject}, {"client", &q.client}, {"queue_id", &q.queue_id},
                               {"message_id", &q.message_id}}) {
        *field = param(name);
        if (field->size() > max_filter_bytes) return std::string(name) + " is longer than 256 bytes";
    }
    for (auto [name, field] : {std::pair{"since", &q.since}, {"until", &q.before}}) {
        if (const std::string v = param(name); !v.empty() && !integer(v, *field)) {
            return std::string(name) + " must be a time in seconds since 1970 (UTC)";
        }
    }
    const std::string order = param("order");
    if (order.empty() || order == "newest") q.order = store::HistoryQuery::Order::newest;
    else if (order == "oldest") q.order = store::HistoryQuery::Order::oldest;
    else if (order == "spammiest") q.order = store::HistoryQuery::Order::spammiest;
    else if (order == "hammiest") q.order = store::HistoryQuery::Order::hammiest;
    else return std::string("order must be newest, oldest, spammiest or hammiest");
    if (!paged) return q;
    q.limit = 100;
    if (const std::string v = param("limit"); !v.empty()) {
        std::int64_t n = 0;
        if (!integer(v, n) || n < 0 || n > static_cast<std::int64_t>(history_page_lines)) {
            return "limit must be a number from 0 to " + std::to_string(history_page_lines);
        }
        q.limit = static_cast<std::size_t>(n);
    }
    if (const std::string v = param("cursor"); !v.empty()) {
        q.after = parse_cursor(v);
        if (!q.after) return std::string("cursor must be one an earlier answer gave (next.cursor)");
    } else if (const std::string after = param("after"); !after.empty()) {
        // An earlier console's page after a line: before = its time, after = its line id (newest first).
        std::int64_t before = 0, id = 0;
        if (!integer(after, id) || id <= 0) return std::string("after must be a line id (a history line's id)");
        if (!integer(param("before"), before)) return std::string("after needs before (the time of that line)");
        if (q.order != store::HistoryQuery::Order::newest) return std::string("after and before page the newest order only; use cursor");
        q.after = store::HistoryQuery::After{before, 0.0, id};
        q.before = INT64_MAX;
    } else if (const std::string v = param("before"); !v.empty() && !integer(v, q.before)) {
        return std::string("before must be a time in seconds since 1970 (UTC)");
    }
    return q;
}

std::variant<store::HistoryQuery, std::string> history_line_query(const Parameter& param) {
    store::HistoryQuery q;
    if (const std::string id = param("id"); !id.empty()) {
        std::int64_t n = 0;
        if (!integer(id, n) || n <= 0) return std::string("id must be a history line's id");
        q.id = n;
    } else {
        q.signature = engine::parse_signature(param("signature"));
        if (!q.signature) return std::string("id (a line's) or signature (32 hexadecimal digits) is needed");
    }
    q.limit = 1;  // newest first: of a signature's lines, its latest delivery
    q.explanations = true;
    return q;
}

json history_json(const store::HistoryEntry& e) {
    json corrected = nullptr;
    if (e.corrected) {
        corrected = json{{"class", store::to_string(e.corrected->to)}, {"at", e.corrected->at}, {"by", e.corrected->by}};
    }
    return json{{"id", e.id},  // the line's (a delivery's); one message delivered twice has two
                {"signature", e.signature ? json(engine::signature_text(*e.signature)) : json(nullptr)},
                {"scanned_at", e.scanned_at},
                {"scored", e.scored},
                {"verdict", e.scored ? json(model::to_string(e.verdict)) : json(nullptr)},
                {"probability", e.scored ? json(e.probability) : json(nullptr)},
                {"action", e.action},
                {"reason", e.reason},
                {"sender", e.sender},
                {"recipients", e.recipients},
                {"from", e.from},
                {"to", e.to},
                {"subject", e.subject},
                {"message_id", e.message_id},
                {"queue_id", e.queue_id},
                {"client_address", e.client_address},
                {"helo", e.helo},
                {"size", e.size},
                {"corrected", corrected}};
}

std::string history_cursor(const store::HistoryEntry& e) {
    char bits[17];
    std::snprintf(bits, sizeof bits, "%016llx", static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(e.probability)));
    return std::to_string(e.scanned_at) + "_" + bits + "_" + std::to_string(e.id);
}

std::string history_export_name(std::int64_t now, std::string_view format) {
    return utc_time(now, "mailsift-history-%Y%m%d-%H%M%S.") + std::string(format);
}

std::string history_export(store::ScanLog& db, store::HistoryQuery q, std::string_view format, std::size_t& written) {
    const bool csv = format == "csv";
    std::string out = csv ? "time_utc,scanned_at,id,signature,queue_id,message_id,verdict,probability,action,reason,sender,"
                            "recipients,from,to,subject,client_address,helo,size,corrected_to,corrected_at,corrected_by\r\n"
                          : "[";
    written = 0;
    q.limit = 1000;
    q.explanations = false;
    for (;;) {
        const auto page = db.history(q);
        for (const auto& e : page) {
            if (written == history_export_lines) break;
            if (csv) {
                const std::string cells[] = {iso_time(e.scanned_at),
                                             std::to_string(e.scanned_at),
                                             std::to_string(e.id),
                                             e.signature ? engine::signature_text(*e.signature) : "",
                                             e.queue_id,
                                             e.message_id,
                                             e.scored ? model::to_string(e.verdict) : "",
                                             e.scored ? number(e.probability) : "",
                                             e.action,
                                             e.reason,
                                             e.sender,
                                             e.recipients,
                                             e.from,
                                             e.to,
                                             e.subject,
                                             e.client_address,
                                             e.helo,
                                             std::to_string(e.size),
                                             e.corrected ? store::to_string(e.corrected->to) : "",
                                             e.corrected ? iso_time(e.corrected->at) : "",
                                             e.corrected ? e.corrected->by : ""};
                bool first = true;
                for (const auto& c : cells) {
                    if (!first) out += ',';
                    out += csv_cell(c);
                    first = false;
                }
                out += "\r\n";
            } else {
                if (written != 0) out += ",\n";
                out += history_json(e).dump(-1, ' ', false, json::error_handler_t::replace);
            }
            ++written;
        }
        if (page.size() < q.limit || written == history_export_lines) break;
        q.after = store::HistoryQuery::After{page.back().scanned_at, page.back().probability, page.back().id};
    }
    if (!csv) out += "]\n";
    return out;
}

}  // namespace mailsift::console
