// The SQL of a history query: see history_sql.hpp.
#include "history_sql.hpp"

#include <string_view>
#include <vector>

#include "codec.hpp"

namespace mailsift::store {

namespace {

// A Message-ID as given without its angle brackets, when it has both.
std::string without_angle_brackets(std::string_view id) {
    if (id.size() >= 2 && id.front() == '<' && id.back() == '>') id = id.substr(1, id.size() - 2);
    return std::string(id);
}

bool by_probability(HistoryQuery::Order o) {
    return o == HistoryQuery::Order::spammiest || o == HistoryQuery::Order::hammiest;
}

}  // namespace

std::string history_where(const HistoryQuery& q, const HistoryDialect& d, bool counting) {
    std::vector<std::string> all;
    const std::string plain = counting || by_probability(q.order) ? "" : d.unindexed;
    auto contains = [&](const char* column, const std::string& text) { return d.contains(column, d.add(contains_pattern(text))); };
    if (q.id) all.push_back("id = " + d.add(*q.id));
    if (q.signature) all.push_back("signature = " + d.add(*q.signature));
    if (q.verdict) all.push_back(plain + "verdict = " + d.add(std::int64_t{static_cast<int>(*q.verdict)}));
    if (!q.action.empty()) all.push_back(plain + "action = " + d.add(q.action));
    if (!q.text.empty()) {
        const std::string p = d.add(contains_pattern(q.text));
        std::string any;
        for (const char* column : {"sender", "recipients", "from_header", "to_header", "subject", "queue_id", "message_id",
                                   "client_address", "helo"}) {
            any += (any.empty() ? "(" : " OR ") + d.contains(column, p);
        }
        all.push_back(any + ")");
    }
    if (!q.sender.empty()) all.push_back(contains("sender", q.sender));
    if (!q.recipient.empty()) {
        const std::string p = d.add(contains_pattern(q.recipient));
        all.push_back("(" + d.contains("recipients", p) + " OR " + d.contains("to_header", p) + ")");
    }
    if (!q.subject.empty()) all.push_back(contains("subject", q.subject));
    if (!q.client.empty()) {
        const std::string p = d.add(contains_pattern(q.client));
        all.push_back("(" + d.contains("client_address", p) + " OR " + d.contains("helo", p) + ")");
    }
    if (!q.queue_id.empty()) all.push_back("queue_id = " + d.add(q.queue_id));
    if (!q.message_id.empty()) {
        const std::string bare = without_angle_brackets(q.message_id);
        all.push_back("message_id IN (" + d.add(bare) + ", " + d.add("<" + bare + ">") + ")");
    }
    if (q.since != INT64_MIN) all.push_back("scanned_at >= " + d.add(q.since));
    if (q.before != INT64_MAX) all.push_back("scanned_at < " + d.add(q.before));
    if (by_probability(q.order)) all.push_back("verdict <> " + std::to_string(unscored_verdict));
    std::string sql;
    for (const auto& c : all) sql += (sql.empty() ? " WHERE " : " AND ") + c;
    return sql;
}

std::string history_after(const HistoryQuery& q, const HistoryDialect& d) {
    const bool time = !by_probability(q.order);
    const char* column = time ? "scanned_at" : "probability";
    const bool descending = q.order == HistoryQuery::Order::newest || q.order == HistoryQuery::Order::spammiest;
    const std::string value = time ? d.add(q.after->scanned_at) : d.add(q.after->probability);
    const std::string id = d.add(q.after->id);
    // Only newest takes a tie's ids descending (it is oldest reversed).
    const bool newest = q.order == HistoryQuery::Order::newest;
    return std::string("(") + column + (descending ? " < " : " > ") + value + " OR (" + column + " = " + value +
           " AND id " + (newest ? "<" : ">") + " " + id + "))";
}

std::string history_order(HistoryQuery::Order o, const std::string& table) {
    switch (o) {
        case HistoryQuery::Order::oldest: return table + "scanned_at, " + table + "id";
        case HistoryQuery::Order::spammiest: return table + "probability DESC, " + table + "id";
        case HistoryQuery::Order::hammiest: return table + "probability, " + table + "id";
        case HistoryQuery::Order::newest: break;
    }
    return table + "scanned_at DESC, " + table + "id DESC";
}

}  // namespace mailsift::store
