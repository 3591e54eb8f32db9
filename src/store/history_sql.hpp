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
    // Written before a column to keep its indexes out of the plan ("+" on
    // SQLite; "" where the planner goes by statistics): see history_where.
    std::string unindexed;
};

// " WHERE ..." of `q`'s filters ("" for none), its order's included (the
// probability orders leave out skipped lines), its `after` not. For a page in
// a time order (not `counting`), the verdict and action are matched without
// their indexes: SQLite's planner, which has no statistics, took the
// (verdict, probability) index for verdict=spam and sorted the 280,000 spam
// lines of a million by time (0.55 s), where walking the time index finds
// the first page's 100 in a few hundred steps (0.3 ms). A count has no order
// and uses them.
std::string history_where(const HistoryQuery& q, const HistoryDialect& d, bool counting = false);

// The lines after `q.after` in `q.order`: past its value, or at it and past its
// id (below it in newest, above it in the others).
std::string history_after(const HistoryQuery& q, const HistoryDialect& d);

// ORDER BY of `o`, its columns prefixed by `table`.
std::string history_order(HistoryQuery::Order o, const std::string& table);

}  // namespace mailsift::store
