// Test support: a fresh directory under /tmp, removed with its contents when
// the test leaves scope. Tests use real files, so each gets its own place.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace mailsift::testing {

struct TempDir {
    std::filesystem::path path;
    explicit TempDir(const std::string& name = "test") {
        std::string tmpl = "/tmp/mailsift-" + name + "-XXXXXX";
        path = ::mkdtemp(tmpl.data());
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
};

}  // namespace mailsift::testing
