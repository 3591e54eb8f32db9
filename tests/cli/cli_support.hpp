// What the CLI's test files share: the program under test, the sample messages,
// and what a run of it returned.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../support/paths.hpp"

namespace mailsift::cli_test {

inline const std::string cli = MAILSIFT_CLI;
inline const std::string data = std::string(MAILSIFT_TEST_DATA) + "/messages";

struct Result {
    int status = -1;
    std::string out;
    std::string err;
};

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace mailsift::cli_test
