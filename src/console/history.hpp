// The console's history as the API gives it: a request's filter read into a
// store::HistoryQuery, a line as JSON, the cursor of the page after a line,
// and an export of every line a filter matches as CSV or JSON.
#pragma once

#include <functional>
#include <array>
#include <span>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "mailsift/store/scan_log.hpp"

namespace mailsift::console {

// A query parameter's decoded value, "" when absent.
using Parameter = std::function<std::string(std::string_view name)>;

// The parameters a history request takes: its filter and order, then a
// page's, then an export's.
inline constexpr std::array<std::string_view, 12> history_filter_parameters = {
    "verdict", "action", "q", "sender", "recipient", "subject", "client", "queue_id", "message_id", "since", "until",
    "order"};
// The most lines one page holds (limit).
inline constexpr std::size_t history_page_lines = 1000;

// What is wrong with a request's parameters (`query`: the target after its
// '?'), "" when nothing: a name not in `takes` (a filter that would be
// ignored), a name given twice, or a value holding a control character (a
// NUL would cut the filter short in the store). Named in the answer.
std::string history_parameters_problem(std::string_view query, std::span<const std::string_view> takes);

// The filter and order of /api/history and /api/history/export (verdict,
// action, q, sender, recipient, subject, client, queue_id, message_id, since,
// until, order), and with `paged` the page (limit 0 to history_page_lines,
// cursor; before and after as earlier consoles sent them). A string: what is
// wrong with the request.
std::variant<store::HistoryQuery, std::string> history_query(const Parameter& param, bool paged);

// One line with its explanation (/api/explanation): `id`, the line's, or
// `signature`, the latest line of that message (as earlier consoles asked).
std::variant<store::HistoryQuery, std::string> history_line_query(const Parameter& param);

// A line as the API gives it: its `id` (the delivery's) and `signature` (the
// message's, null for one let through unscored) among its fields.
nlohmann::json history_json(const store::HistoryEntry& e);

// Where the page after `e` starts in `order`: the `cursor` parameter's value.
std::string history_cursor(const store::HistoryEntry& e);

// The lines an export holds at most: more would make the console's one
// thread hold a request for long (the store reads them a page at a time).
inline constexpr std::size_t history_export_lines = 100000;

// The file name an export made at `now` is offered as: mailsift-history-<UTC time>.<format>.
std::string history_export_name(std::int64_t now, std::string_view format);

// Every line `q` matches (up to history_export_lines), read from `db` a
// page at a time, as "csv" (a header row, then one row per line; a cell that
// a spreadsheet would run as a formula starts with ') or "json" (an array).
// `written`: how many lines it holds. The CSV's first column is the time in
// UTC (ISO 8601, "Z"), named time_utc.
std::string history_export(store::ScanLog& db, store::HistoryQuery q, std::string_view format, std::size_t& written);

}  // namespace mailsift::console
