// libpq, loaded when the first PostgreSQL store is opened rather than when a
// program starts. Linked in, libpq and the 17 libraries it needs (OpenSSL,
// Kerberos, LDAP, GnuTLS, ...) cost every run of `mailsift` about 10 ms before
// main(), more than classifying a message, though most sites never use
// PostgreSQL; an IMAPSieve move runs `mailsift` once per message.
#pragma once

#include <libpq-fe.h>

namespace mailsift::store::pg {

// The libpq functions the backend calls (connection.cpp), one X per name.
#define MAILSIFT_LIBPQ_FUNCTIONS(X)                                                                         \
    X(PQconnectdbParams) X(PQstatus) X(PQerrorMessage) X(PQfinish) X(PQreset) X(PQsetNoticeProcessor)   \
    X(PQexec) X(PQexecParams) X(PQresultStatus) X(PQresultErrorMessage) X(PQresultErrorField)           \
    X(PQclear) X(PQntuples) X(PQgetisnull) X(PQgetvalue) X(PQgetlength) X(PQftype) X(PQcmdTuples)

struct Libpq {
#define MAILSIFT_LIBPQ_MEMBER(name) decltype(&::name) name = nullptr;
    MAILSIFT_LIBPQ_FUNCTIONS(MAILSIFT_LIBPQ_MEMBER)
#undef MAILSIFT_LIBPQ_MEMBER
};

// The library's functions, loaded on the first call (thread-safe). Throws
// std::runtime_error saying what is missing when libpq cannot be loaded; a
// later call tries again.
const Libpq& libpq();

}  // namespace mailsift::store::pg
