// Choosing a backend by the database's location, and naming it in messages.
#include "mailsift/store/database.hpp"
#include "mailsift/store/sqlite_database.hpp"
#include "postgres/pg_database.hpp"

namespace mailsift::store {

const char* to_string(Class c) { return c == Class::spam ? "spam" : "ham"; }

std::unique_ptr<Database> open(const std::string& location, Database::Mode mode, std::chrono::milliseconds busy_timeout,
                               Database::Create create) {
    if (is_postgresql(location)) return std::make_unique<PgDatabase>(location, mode, busy_timeout, create);
    return std::make_unique<SqliteDatabase>(location, mode, busy_timeout, create);
}

bool is_postgresql(std::string_view location) { return pg::is_uri(location); }

std::string display_location(std::string_view location) {
    return is_postgresql(location) ? pg::hide_password(location) : std::string(location);
}

}  // namespace mailsift::store
