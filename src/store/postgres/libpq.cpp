// Loading libpq on first use (libpq.hpp).
#include "libpq.hpp"

#include <dlfcn.h>

#include <stdexcept>
#include <string>

namespace mailsift::store::pg {

namespace {

// libpq's soname has been libpq.so.5 since PostgreSQL 8.0 (Debian: libpq5).
constexpr const char* soname = "libpq.so.5";

Libpq load() {
    void* handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = ::dlerror();
        throw std::runtime_error(std::string("a PostgreSQL store needs libpq (") + soname +
                                 ", Debian package libpq5), which cannot be loaded: " + (why ? why : "unknown error"));
    }
    Libpq lib;
    // The handle is kept for the life of the process: the functions are used until exit.
#define MAILSIFT_LIBPQ_RESOLVE(name)                                                                        \
    lib.name = reinterpret_cast<decltype(lib.name)>(::dlsym(handle, #name));                                \
    if (lib.name == nullptr) throw std::runtime_error(std::string(soname) + " has no " #name ": too old a libpq");
    MAILSIFT_LIBPQ_FUNCTIONS(MAILSIFT_LIBPQ_RESOLVE)
#undef MAILSIFT_LIBPQ_RESOLVE
    return lib;
}

}  // namespace

const Libpq& libpq() {
    static const Libpq lib = load();  // an exception leaves it unset: the next call loads again
    return lib;
}

}  // namespace mailsift::store::pg
