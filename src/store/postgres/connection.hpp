// A libpq connection as the PostgreSQL backend uses it: statements with
// parameters (integers and text as text, byte strings as binary), results in
// binary, errors thrown as store::Error naming the database (without its
// password) and PostgreSQL's message in words.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mailsift/store/database.hpp"

struct pg_conn;
struct pg_result;

namespace mailsift::store::pg {

// A statement parameter: NULL, text (integers are written as text), or bytes.
struct Param {
    enum class Kind : std::uint8_t { null, text, bytes };
    Kind kind = Kind::null;
    std::string value;
    Param() = default;
    Param(std::int64_t v) : kind(Kind::text), value(std::to_string(v)) {}  // NOLINT: implicit on purpose
    Param(std::uint64_t v) : Param(static_cast<std::int64_t>(v)) {}       // feature ids: stored as signed
    Param(int v) : Param(static_cast<std::int64_t>(v)) {}
    static Param text(std::string_view s) {
        Param p;
        p.kind = Kind::text;
        p.value.assign(s);
        return p;
    }
    static Param bytes(std::string_view s) {
        Param p;
        p.kind = Kind::bytes;
        p.value.assign(s);
        return p;
    }
    static Param digest(const Digest& d) {
        return bytes(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
    }
};

class Result {
public:
    explicit Result(pg_result* r) : r_(r) {}
    ~Result();
    Result(Result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
    Result& operator=(Result&& o) noexcept;
    Result(const Result&) = delete;
    Result& operator=(const Result&) = delete;

    int rows() const;
    bool null(int row, int col) const;
    // Any integer column (int2, int4, int8, bool).
    std::int64_t integer(int row, int col) const;
    // A bytea or text column's bytes.
    std::string_view bytes(int row, int col) const;
    // Rows changed by an INSERT, UPDATE or DELETE.
    std::uint64_t affected() const;

private:
    pg_result* r_;
};

// SQLSTATE classes the callers act on.
bool is_connection_failure(std::string_view sqlstate);
bool is_retryable(std::string_view sqlstate);  // deadlock, serialization failure

class Connection {
public:
    // `uri`: any libpq connection string or URI. Throws Error when it cannot connect.
    explicit Connection(std::string uri);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // The URI with any password replaced by "***", for messages.
    const std::string& location() const { return location_; }

    Result exec(const std::string& sql, std::initializer_list<Param> params = {});
    Result exec(const std::string& sql, const std::vector<Param>& params);
    // Runs statements without parameters or results (BEGIN, COMMIT, DDL).
    void run(const std::string& sql);
    [[noreturn]] void fail(const std::string& what) const;

private:
    Result check(pg_result* r);
    std::string uri_;
    std::string location_;
    pg_conn* conn_ = nullptr;
};

// What a statement failed with: Error plus PostgreSQL's SQLSTATE.
class StatementError : public Error {
public:
    StatementError(const std::string& location, const std::string& what, std::string sqlstate)
        : Error(location, what), sqlstate_(std::move(sqlstate)) {}
    const std::string& sqlstate() const { return sqlstate_; }

private:
    std::string sqlstate_;
};

// Whether `location` names a PostgreSQL database (postgresql:// or postgres://).
bool is_uri(std::string_view location);
std::string hide_password(std::string_view uri);

// Lower-case hex digits of `bytes` (for decode(..., 'hex') in array literals).
std::string hex(std::string_view bytes);

// Doubles travel as text, both ways in the shortest digits that read back as
// the same double (as PostgreSQL 12 and later write a double precision).
std::string double_text(double v);
double text_double(std::string_view s);  // 0 when `s` is not a number

// A text literal of a bigint[] for `$n::bigint[]`.
std::string bigint_array(const std::vector<model::FeatureId>& ids);

}  // namespace mailsift::store::pg
