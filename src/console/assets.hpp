// The console's page, scripts and style sheet, built into the binary from
// src/console/assets/ (assets.cmake writes them into a source file), so the
// console never asks another host for anything and needs no files installed.
#pragma once

#include <string_view>

namespace mailsift::console {

struct Asset {
    std::string_view content_type;
    std::string_view body;
};

// "index.html", "console.css", and the page's scripts ("console.js", "status.js",
// "history.js", "explain.js", "corrections.js", "scan.js", "users.js",
// "config.js", "session.js"); null for any other name.
const Asset* find_asset(std::string_view name);

}  // namespace mailsift::console
