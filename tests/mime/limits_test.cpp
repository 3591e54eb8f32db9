// mime::Limits: each limit is hit, recorded once, and what was read is still returned;
// hostile sizes and shapes finish in bounded time.
#include <mailsift/mime/message.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using namespace mailsift::mime;

namespace {

std::size_t count_limit(const ParsedMessage& m, LimitHit hit) {
    return static_cast<std::size_t>(std::count(m.limits_hit.begin(), m.limits_hit.end(), hit));
}

// `parts` sibling text parts under one multipart/mixed.
std::string many_parts(int parts) {
    std::string s = "Subject: many\nContent-Type: multipart/mixed; boundary=p\n\n";
    for (int i = 0; i < parts; ++i) s += "--p\nContent-Type: text/plain\n\npart " + std::to_string(i) + "\n";
    s += "--p--\n";
    return s;
}

// `depth` multiparts, each the only part of the one above, with a text at the bottom.
std::string deep_nesting(int depth) {
    std::string s = "Subject: deep\n";
    for (int i = 0; i < depth; ++i)
        s += "Content-Type: multipart/mixed; boundary=b" + std::to_string(i) + "\n\n--b" + std::to_string(i) + "\n";
    s += "Content-Type: text/plain\n\nbottom\n";
    for (int i = depth - 1; i >= 0; --i) s += "--b" + std::to_string(i) + "--\n";
    return s;
}


}  // namespace

TEST_CASE("max_message_bytes cuts the input and keeps what came before", "[limits]") {
    Limits limits;
    limits.max_message_bytes = 40;
    const ParsedMessage m = parse("Subject: short\n\n0123456789012345678901234567890123456789", limits);
    CHECK(count_limit(m, LimitHit::message_bytes) == 1);
    REQUIRE(m.find("Subject") != nullptr);
    CHECK(m.find("Subject")->value == "short");
    REQUIRE(m.texts.size() == 1);
    CHECK(m.texts[0].text == "012345678901234567890123");  // 40 - 16 header bytes
}

TEST_CASE("A 50 MB message scans only max_message_bytes", "[limits][stress]") {
    std::string big = "Subject: huge\nContent-Type: text/plain\n\n";
    big.append(50u * 1024 * 1024, 'x');
    big += "\nTAIL-MARKER\n";
    ParsedMessage m;
    m = parse(big);
    CHECK(count_limit(m, LimitHit::message_bytes) == 1);
    REQUIRE(m.texts.size() == 1);
    CHECK(m.texts[0].text.size() <= Limits{}.max_message_bytes);
    CHECK(m.texts[0].text.find("TAIL-MARKER") == std::string::npos);
}

TEST_CASE("max_parts stops creating entities", "[limits]") {
    SECTION("a small limit keeps the first parts") {
        Limits limits;
        limits.max_parts = 3;
        const ParsedMessage m = parse(many_parts(10), limits);
        CHECK(m.part_count == 3);
        REQUIRE(m.texts.size() == 2);
        CHECK(m.texts[0].text == "part 0");
        CHECK(m.texts[1].text == "part 1");
        CHECK(count_limit(m, LimitHit::parts) == 1);
    }
    SECTION("10,000 parts finish quickly and are cut at the default limit") {
        const std::string s = many_parts(10000);
        ParsedMessage m;
        m = parse(s);
        CHECK(m.part_count == Limits{}.max_parts);
        CHECK(m.texts.size() == Limits{}.max_parts - 1);
        CHECK(m.texts.back().text == "part " + std::to_string(Limits{}.max_parts - 2));
        CHECK(count_limit(m, LimitHit::parts) == 1);
    }
}

TEST_CASE("max_depth stops descending into nested containers", "[limits]") {
    SECTION("a small limit keeps the levels above it") {
        Limits limits;
        limits.max_depth = 2;
        const std::string s =
            "Content-Type: multipart/mixed; boundary=a\n\n--a\n\nlevel one\n--a\n"
            "Content-Type: multipart/mixed; boundary=b\n\n--b\n\nlevel two\n--b\n"
            "Content-Type: multipart/mixed; boundary=c\n\n--c\n\nlevel three\n--c--\n--b--\n--a--\n";
        const ParsedMessage m = parse(s, limits);
        REQUIRE(m.texts.size() == 2);
        CHECK(m.texts[0].text == "level one");
        CHECK(m.texts[1].text == "level two");
        CHECK(count_limit(m, LimitHit::depth) == 1);
    }
    SECTION("1,000-deep nesting finishes with bounded work") {
        const std::string s = deep_nesting(1000);
        ParsedMessage m;
        m = parse(s);
        CHECK(count_limit(m, LimitHit::depth) == 1);
        CHECK(m.part_count == Limits{}.max_depth + 1);
        CHECK(m.texts.empty());
        CHECK(m.find("Subject") != nullptr);
    }
    SECTION("deep nesting within a generous limit still reaches the bottom") {
        Limits limits;
        limits.max_depth = 5000;
        limits.max_parts = 5000;
        const ParsedMessage m = parse(deep_nesting(1000), limits);
        CHECK(m.limits_hit.empty());
        REQUIRE(m.texts.size() == 1);
        CHECK(m.texts[0].text == "bottom");
    }
    SECTION("message/rfc822 chains count toward the depth") {
        std::string s;
        for (int i = 0; i < 1000; ++i) s += "Content-Type: message/rfc822\n\n";
        s += "\nend\n";
        const ParsedMessage m = parse(s);
        CHECK(count_limit(m, LimitHit::depth) == 1);
        CHECK(m.part_count == Limits{}.max_depth + 1);
    }
}

TEST_CASE("max_headers drops the extra fields of an entity", "[limits]") {
    std::string s = "Content-Type: text/plain\n";
    for (int i = 0; i < 1500; ++i) s += "X-Filler-" + std::to_string(i) + ": v\n";
    s += "Subject: after the limit\n\nbody text\n";
    const ParsedMessage m = parse(s);
    CHECK(m.headers.size() == Limits{}.max_headers);
    CHECK(m.find("Subject") == nullptr);
    CHECK(count_limit(m, LimitHit::headers) == 1);
    REQUIRE(m.texts.size() == 1);
    CHECK(m.texts[0].text == "body text\n");
}

TEST_CASE("max_header_bytes truncates an unfolded field", "[limits]") {
    SECTION("a long folded field is cut at the limit") {
        Limits limits;
        limits.max_header_bytes = 10;
        const ParsedMessage m = parse("Subject: 0123456\n 789abcdef\nX-Short: ok\n\nbody\n", limits);
        REQUIRE(m.find("Subject") != nullptr);
        CHECK(m.find("Subject")->value == "0123456 78");
        CHECK(m.find("X-Short")->value == "ok");
        CHECK(count_limit(m, LimitHit::header_bytes) == 1);
    }
    SECTION("a cut never splits a UTF-8 character") {
        Limits limits;
        limits.max_header_bytes = 4;
        const ParsedMessage m = parse("Subject: ab\xE2\x82\xAC\n\nbody\n", limits);
        CHECK(m.find("Subject")->value == "ab");
    }
    SECTION("a 4 MB header line is handled in linear time") {
        std::string s = "Subject: ";
        s.append(4u * 1024 * 1024 - 100, 'a');
        s += "\n\nbody\n";
        ParsedMessage m;
        m = parse(s);
        CHECK(m.find("Subject")->value.size() == Limits{}.max_header_bytes);
        CHECK(count_limit(m, LimitHit::header_bytes) == 1);
    }
}

TEST_CASE("Every limit hit is recorded once even when hit repeatedly", "[limits]") {
    Limits limits;
    limits.max_headers = 2;
    limits.max_header_bytes = 30;
    const std::string long_field = "X-Long: " + std::string(100, 'l') + "\n";
    std::string s = "Content-Type: multipart/mixed; boundary=z\n" + long_field + "X-Extra: 1\n\n";
    for (int i = 0; i < 5; ++i) s += "--z\nContent-Type: text/plain\n" + long_field + "X-Extra: 2\n\nt\n";
    s += "--z--\n";
    const ParsedMessage m = parse(s, limits);
    CHECK(count_limit(m, LimitHit::headers) == 1);
    CHECK(count_limit(m, LimitHit::header_bytes) == 1);
    CHECK(m.limits_hit.size() == 2);
    CHECK(m.headers.size() == 2);
    CHECK(m.headers[1].value == std::string(30, 'l'));
    CHECK(m.texts.size() == 5);
}
