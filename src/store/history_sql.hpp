// The SQL of a history query (Database::history, history_count), the same on
// every backend but for how a value becomes a parameter and how a column is
// matched against a contains-pattern: a HistoryDialect says both.
#pragma once

#include <functional>
#include <string>
#include <variant>

#include "mailsift/store/database.hpp"

namespace mailsift::store {

// The verdict column of a history line mailsiftd let through unscored.
inline constexpr int unscored_verdict = -1;

struct HistoryDialect {
    using Value = std::variant<std::int64_t, double, std::string, Digest>;
    // The placeholder of the next parameter, holding `value`.
    std::function<std::string(Value value)> add;
    // `column` holds the contains_pattern() at `placeholder`, ASCII case ignored.
    std::function<std::string(const char* column, const std::string& placeholder)> contains;
};

// " WHERE ..." of `q`'s filters ("" for none), its order's included (the
// probability orders leave out skipped lines), its `after` not.
std::string history_where(const HistoryQuery& q, const HistoryDialect& d);

// The lines after `q.after` in `q.order`: past its value, or at it and past its
// id (below it in newest, above it in the others).
std::string history_after(const HistoryQuery& q, const HistoryDialect& d);

// ORDER BY of `o`, its columns prefixed by `table`.
std::string history_order(HistoryQuery::Order o, const std::string& table);

}  // namespace mailsift::store
