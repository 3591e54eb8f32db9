// Test support: where the tests find tests/data, the source and build trees and
// the programs built (mailsift, mailsiftd).
//
// The paths are compiled into one small file the build generates
// (test_paths.cpp in the build tree, tests/CMakeLists.txt), not put on every test's
// compile line: a test object then holds no path of its clone, and a compile of it
// in one clone serves any other from the compiler cache (scripts/test.sh).
#pragma once

namespace mailsift::test_paths {
const char* data();        // tests/data of the source tree
const char* cli();         // the mailsift program built
const char* daemon();      // the mailsiftd program built
const char* source_dir();  // the top of the source tree
const char* binary_dir();  // the top of the build tree
}  // namespace mailsift::test_paths

#define MAILSIFT_TEST_DATA (::mailsift::test_paths::data())
#define MAILSIFT_CLI (::mailsift::test_paths::cli())
#define MAILSIFTD (::mailsift::test_paths::daemon())
#define MAILSIFT_SOURCE_DIR (::mailsift::test_paths::source_dir())
#define MAILSIFT_BINARY_DIR (::mailsift::test_paths::binary_dir())
