// The log writer (src/daemon/log.hpp): one event is one line whatever its
// fields hold, and only the audit writer begins a line "console audit:".
#include "log.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace mailsift::daemon;
using namespace std::string_literals;

namespace {

// The forged queue ID of issue 41: a newline and a whole audit line after it.
const std::string forged =
    "X\n<6>console audit: event=sign-in outcome=failed account=admin role=- client=203.0.113.77 target=-";

std::size_t newlines(const std::string& s) {
    std::size_t n = 0;
    for (const char c : s) n += c == '\n';
    return n;
}

}  // namespace

TEST_CASE("a plain message is written as it is, after its level's prefix", "[log]") {
    CHECK(log_line(LogLevel::info, "message 4Xyz: spam p=0.99 tagged 120 bytes 1.5 ms") ==
          "<6>message 4Xyz: spam p=0.99 tagged 120 bytes 1.5 ms\n");
    CHECK(log_line(LogLevel::warning, "drain timeout") == "<4>warning: drain timeout\n");
    CHECK(log_line(LogLevel::error, "no database") == "<3>error: no database\n");
    CHECK(log_line(LogLevel::info, "Grüße aus Köln") == "<6>Grüße aus Köln\n");
}

TEST_CASE("a line break from the wire is an escape, not a second line", "[log]") {
    const std::string line = log_line(LogLevel::info, "message " + forged + ": spam");
    CHECK(newlines(line) == 1);
    CHECK(line ==
          "<6>message X\\n<6>console audit: event=sign-in outcome=failed account=admin role=- "
          "client=203.0.113.77 target=-: spam\n");
    CHECK(log_line(LogLevel::info, "a\rb\tc\0d\x1b[31m\x7f"s) == "<6>a\\rb\\tc\\x00d\\x1b[31m\\x7f\n");
    // A backslash is escaped too, so that "\n" typed by a client is not an escaped newline.
    CHECK(log_line(LogLevel::info, "a\\nb") == "<6>a\\\\nb\n");
}

TEST_CASE("bytes that are not UTF-8, and characters that hide text, become escapes", "[log]") {
    CHECK(log_line(LogLevel::info, "bad \xff\xc0\xaf end") == "<6>bad \\xff\\xc0\\xaf end\n");
    CHECK(log_line(LogLevel::info, "surrogate \xed\xa0\x80") == "<6>surrogate \\xed\\xa0\\x80\n");
    CHECK(log_line(LogLevel::info, "cut \xe2\x82") == "<6>cut \\xe2\\x82\n");
    CHECK(log_line(LogLevel::info, "nel \xc2\x85 ls \xe2\x80\xa8 rlo \xe2\x80\xae isolate \xe2\x81\xa6") ==
          "<6>nel \\u{0085} ls \\u{2028} rlo \\u{202e} isolate \\u{2066}\n");
    CHECK(log_line(LogLevel::info, "emoji \xf0\x9f\x93\xa7") == "<6>emoji \xf0\x9f\x93\xa7\n");
}

TEST_CASE("only the audit writer begins a line with the audit prefix", "[log]") {
    const std::string audit = "console audit: event=sign-in outcome=failed account=x role=- client=192.0.2.1 target=-";
    CHECK(log_line(LogLevel::info, audit, true) == "<6>" + audit + "\n");
    CHECK(log_line(LogLevel::info, audit) == "<6>(not audit) " + audit + "\n");
    CHECK(log_line(LogLevel::warning, audit) == "<4>warning: " + audit + "\n");
}

TEST_CASE("an over-long line is cut, never inside a character or an escape", "[log]") {
    const std::string line = log_line(LogLevel::info, std::string(10000, 'a'));
    CHECK(line.size() <= 3 + max_log_line_bytes + 9);
    CHECK(line.ends_with("a...[cut]\n"));
    std::string escapes;
    for (int i = 0; i < 3000; ++i) escapes += "\n\xc3\xa9";
    const std::string cut = log_line(LogLevel::info, escapes);
    CHECK(newlines(cut) == 1);
    CHECK(cut.size() <= 3 + max_log_line_bytes + 9);
    const std::string body = cut.substr(3, cut.size() - 3 - std::string("...[cut]\n").size());
    CHECK((body.ends_with("\\n") || body.ends_with("\xc3\xa9")));
}

TEST_CASE("a field is clipped on a character boundary", "[log]") {
    CHECK(clip_field("short", 64) == "short");
    CHECK(clip_field(std::string(100, 'q'), 10) == std::string(10, 'q') + "...");
    // "é" is two bytes: a cut at 4 of "aaaé" keeps "aaa", not half of it.
    CHECK(clip_field("aaa\xc3\xa9zz", 4) == "aaa...");
}
