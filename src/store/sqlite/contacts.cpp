// Contacts: the addresses the user corresponds with.
#include "internal.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cassert>
#include <cstring>

namespace mailsift::store {

ContactSet SqliteDatabase::load_contacts() {
    std::unordered_set<std::string> set;
    Statement q(db_, "SELECT address FROM contacts", path_);
    while (sqlite3_step(q.get()) == SQLITE_ROW) {
        set.emplace(reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 0)));
    }
    return ContactSet(std::move(set));
}

std::vector<Contact> SqliteDatabase::contacts() {
    std::vector<Contact> out;
    Statement q(db_, "SELECT address, source, added_at FROM contacts ORDER BY address", path_);
    while (sqlite3_step(q.get()) == SQLITE_ROW) {
        out.push_back({reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 0)),
                       reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 1)), sqlite3_column_int64(q.get(), 2)});
    }
    return out;
}

bool SqliteDatabase::add_contact(std::string_view address, std::string_view source, std::int64_t now) {
    Use s(st_->insert_contact);
    sqlite3_bind_text(*s, 1, address.data(), static_cast<int>(address.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(*s, 2, source.data(), static_cast<int>(source.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(*s, 3, now);
    if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot add contact: ") + error_text());
    return sqlite3_changes(db_) > 0;
}

bool SqliteDatabase::remove_contact(std::string_view address) {
    Use s(st_->delete_contact);
    sqlite3_bind_text(*s, 1, address.data(), static_cast<int>(address.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(*s) != SQLITE_DONE) fail(std::string("cannot remove contact: ") + error_text());
    return sqlite3_changes(db_) > 0;
}

std::size_t SqliteDatabase::add_contacts(const std::vector<Contact>& contacts) {
    if (mode_ != Mode::read_write) fail("database was opened read-only");
    std::size_t added = 0;
    exec("BEGIN IMMEDIATE");
    try {
        for (const auto& c : contacts) {
            if (add_contact(c.address, c.source, c.added_at)) ++added;
        }
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    return added;
}

}  // namespace mailsift::store
