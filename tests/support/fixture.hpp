// Test support: a fixture message from tests/data/messages, as bytes.
#pragma once

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "paths.hpp"

namespace mailsift::testing {

inline std::string fixture(const std::string& name) {
    std::ifstream in(std::string(MAILSIFT_TEST_DATA) + "/messages/" + name, std::ios::binary);
    REQUIRE(in);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace mailsift::testing
