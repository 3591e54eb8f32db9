// libpq behind the PostgreSQL backend: one connection, statements with
// parameters, binary results, errors in words.
#include "connection.hpp"

#include <arpa/inet.h>

#include "libpq.hpp"

#include <charconv>
#include <cstring>
#include <stdexcept>

namespace mailsift::store::pg {

namespace {

// Type OIDs of the columns we read (pg_type.dat; stable across releases).
constexpr Oid bool_oid = 16, int8_oid = 20, int2_oid = 21, int4_oid = 23;

std::string trimmed(const char* s) {
    std::string out = s ? s : "";
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    // libpq prefixes server messages with their severity; the rest says it.
    if (out.rfind("ERROR:  ", 0) == 0) out.erase(0, 8);
    if (out.rfind("FATAL:  ", 0) == 0) out.erase(0, 8);
    return out;
}

}  // namespace

bool is_uri(std::string_view location) {
    return location.rfind("postgresql://", 0) == 0 || location.rfind("postgres://", 0) == 0;
}

std::string hide_password(std::string_view uri) {
    std::string out(uri);
    // postgresql://user:password@host -> postgresql://user:***@host
    if (const auto scheme = out.find("://"); scheme != std::string::npos) {
        const auto at = out.find('@', scheme + 3);
        const auto slash = out.find('/', scheme + 3);
        if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
            const auto colon = out.find(':', scheme + 3);
            if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
        }
    }
    // ...?password=secret&... -> password=***
    for (std::size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p + 1)) {
        const std::size_t start = p + 9;
        std::size_t end = out.find('&', start);
        if (end == std::string::npos) end = out.size();
        out.replace(start, end - start, "***");
    }
    return out;
}

std::string hex(std::string_view bytes) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        out += digits[static_cast<unsigned char>(c) >> 4];
        out += digits[static_cast<unsigned char>(c) & 0xF];
    }
    return out;
}

std::string bigint_array(const std::vector<model::FeatureId>& ids) {
    std::string out = "{";
    out.reserve(ids.size() * 21 + 2);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) out += ',';
        out += std::to_string(static_cast<std::int64_t>(ids[i]));
    }
    out += '}';
    return out;
}

bool is_connection_failure(std::string_view sqlstate) {
    // Class 08 (connection exception), 57P01-57P03 (admin shutdown, crash
    // shutdown, cannot connect now), or no SQLSTATE at all (libpq lost the socket).
    return sqlstate.empty() || sqlstate.rfind("08", 0) == 0 || sqlstate == "57P01" || sqlstate == "57P02" ||
           sqlstate == "57P03";
}

bool is_retryable(std::string_view sqlstate) { return sqlstate == "40001" || sqlstate == "40P01"; }

// ---- Result ----

Result::~Result() {
    if (r_ != nullptr) libpq().PQclear(r_);
}

Result& Result::operator=(Result&& o) noexcept {
    if (this != &o) {
        if (r_ != nullptr) libpq().PQclear(r_);
        r_ = o.r_;
        o.r_ = nullptr;
    }
    return *this;
}

int Result::rows() const { return libpq().PQntuples(r_); }

bool Result::null(int row, int col) const { return libpq().PQgetisnull(r_, row, col) == 1; }

std::int64_t Result::integer(int row, int col) const {
    if (libpq().PQgetisnull(r_, row, col) == 1) return 0;
    const char* v = libpq().PQgetvalue(r_, row, col);
    switch (libpq().PQftype(r_, col)) {
        case int8_oid: {
            std::uint64_t n = 0;
            for (int i = 0; i < 8; ++i) n = (n << 8) | static_cast<unsigned char>(v[i]);
            return static_cast<std::int64_t>(n);
        }
        case int4_oid: {
            std::uint32_t n;
            std::memcpy(&n, v, 4);
            return static_cast<std::int32_t>(ntohl(n));
        }
        case int2_oid: {
            std::uint16_t n;
            std::memcpy(&n, v, 2);
            return static_cast<std::int16_t>(ntohs(n));
        }
        case bool_oid: return v[0] != 0 ? 1 : 0;
        default: return 0;  // not an integer column: a bug in our SQL, caught by the tests
    }
}

std::string_view Result::bytes(int row, int col) const {
    return {libpq().PQgetvalue(r_, row, col), static_cast<std::size_t>(libpq().PQgetlength(r_, row, col))};
}

std::uint64_t Result::affected() const {
    const char* n = libpq().PQcmdTuples(r_);
    return n && *n ? std::strtoull(n, nullptr, 10) : 0;
}

// ---- Connection ----

Connection::Connection(std::string uri) : uri_(std::move(uri)), location_(hide_password(uri_)) {
    // A server that does not answer at all (a host down, a firewall dropping
    // packets) must not hold a daemon's refresher or recorder for minutes: 10 s
    // unless the URI says otherwise (its own connect_timeout comes later and wins).
    const char* keywords[] = {"connect_timeout", "dbname", nullptr};
    const char* values[] = {"10", uri_.c_str(), nullptr};
    try {
        libpq();  // loaded here, so that a missing libpq is reported with the location
    } catch (const std::runtime_error& e) {
        throw Error(location_, e.what());
    }
    conn_ = libpq().PQconnectdbParams(keywords, values, 1 /* expand dbname as a URI */);
    if (conn_ == nullptr) throw StatementError(location_, "cannot connect: out of memory", "");
    if (libpq().PQstatus(conn_) != CONNECTION_OK) {
        const std::string msg = trimmed(libpq().PQerrorMessage(conn_));
        libpq().PQfinish(conn_);
        conn_ = nullptr;
        throw StatementError(location_, "cannot connect: " + msg, "08001");
    }
    libpq().PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);  // NOTICEs (IF NOT EXISTS, ...) are not for users
    run("SET client_min_messages = warning");
}

Connection::~Connection() {
    if (conn_ != nullptr) libpq().PQfinish(conn_);
}

void Connection::fail(const std::string& what) const { throw Error(location_, what); }

Result Connection::check(pg_result* r) {
    const auto status = r ? libpq().PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return Result(r);
    std::string sqlstate;
    if (r != nullptr) {
        if (const char* s = libpq().PQresultErrorField(r, PG_DIAG_SQLSTATE)) sqlstate = s;
    }
    std::string msg = trimmed(r ? libpq().PQresultErrorMessage(r) : libpq().PQerrorMessage(conn_));
    if (msg.empty()) msg = trimmed(libpq().PQerrorMessage(conn_));
    if (r != nullptr) libpq().PQclear(r);
    if (libpq().PQstatus(conn_) != CONNECTION_OK) {
        // The server went away: the next statement tries to connect again.
        libpq().PQreset(conn_);
        throw StatementError(location_, "lost the connection to the database: " + msg, sqlstate.empty() ? "08006" : sqlstate);
    }
    if (is_retryable(sqlstate)) throw RetryableError(location_, msg);
    throw StatementError(location_, msg, sqlstate);
}

Result Connection::exec(const std::string& sql, std::initializer_list<Param> params) {
    return exec(sql, std::vector<Param>(params));
}

Result Connection::exec(const std::string& sql, const std::vector<Param>& params) {
    if (libpq().PQstatus(conn_) != CONNECTION_OK) libpq().PQreset(conn_);
    std::vector<const char*> values(params.size());
    std::vector<int> lengths(params.size()), formats(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        const Param& p = params.begin()[i];
        values[i] = p.kind == Param::Kind::null ? nullptr : p.value.data();
        lengths[i] = static_cast<int>(p.value.size());
        formats[i] = p.kind == Param::Kind::bytes ? 1 : 0;
    }
    pg_result* r = libpq().PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(),
                                lengths.data(), formats.data(), 1 /* binary results */);
    return check(r);
}

std::string double_text(double v) {
    char buf[32];
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

double text_double(std::string_view s) {
    double v = 0.0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

void Connection::run(const std::string& sql) {
    if (libpq().PQstatus(conn_) != CONNECTION_OK) libpq().PQreset(conn_);
    check(libpq().PQexec(conn_, sql.c_str()));
}

}  // namespace mailsift::store::pg
