// mime::to_utf8 and mime::decode_header_value.
#include <mailsift/mime/message.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

using namespace mailsift::mime;

TEST_CASE("Declared charsets are converted to UTF-8", "[charset]") {
    SECTION("iso-8859-1") {
        CHECK(to_utf8("Caf\xE9", "iso-8859-1") == "Caf\xC3\xA9");
    }
    SECTION("windows-1252 punctuation in 0x80-0x9F") {
        CHECK(to_utf8("\x80 \x93q\x94 \x99", "windows-1252") == "\xE2\x82\xAC \xE2\x80\x9Cq\xE2\x80\x9D \xE2\x84\xA2");
    }
    SECTION("koi8-r through iconv") {
        CHECK(to_utf8("\xF0\xD2\xC9\xD7\xC5\xD4", "koi8-r") == "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82");
    }
    SECTION("labels are matched case-insensitively, with quotes and blanks removed") {
        CHECK(to_utf8("\xE9", " \"ISO-8859-1\" ") == "\xC3\xA9");
        CHECK(to_utf8("\xF0", "KOI8-R") == "\xD0\x9F");
    }
    SECTION("a stateful encoding (iso-2022-jp)") {
        CHECK(to_utf8("\x1B$B$3$s$K$A$O\x1B(B", "iso-2022-jp") ==
              "\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF");
    }
    SECTION("mail aliases glibc does not know") {
        CHECK(to_utf8("\xC7\xD1", "ks_c_5601-1987") == "\xED\x95\x9C");
    }
}

TEST_CASE("Unknown charsets and undecodable bytes never fail", "[charset]") {
    SECTION("an unknown charset falls back to windows-1252") {
        CHECK(to_utf8("na\xEFve \x80", "x-no-such-charset") == "na\xC3\xAFve \xE2\x82\xAC");
    }
    SECTION("a hostile label is never handed to iconv") {
        CHECK(to_utf8("\xE9", "../../../tmp/evil//TRANSLIT") == "\xC3\xA9");
    }
    SECTION("invalid UTF-8 in declared utf-8 becomes U+FFFD") {
        CHECK(to_utf8("a\xFF" "b\xC3", "utf-8") == "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
        CHECK(to_utf8("\xED\xA0\x80", "UTF-8") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    }
    SECTION("an invalid sequence in an iconv charset becomes U+FFFD") {
        CHECK(to_utf8("ok\x82", "shift_jis") == "ok\xEF\xBF\xBD");
    }
}

TEST_CASE("Undeclared bytes stay UTF-8 when valid, else read as windows-1252", "[charset]") {
    CHECK(to_utf8("J\xC3\xBCrgen \xE2\x82\xAC", "") == "J\xC3\xBCrgen \xE2\x82\xAC");
    CHECK(to_utf8("J\xFCrgen \x80", "") == "J\xC3\xBCrgen \xE2\x82\xAC");
    // Mislabelled "us-ascii" is treated as undeclared.
    CHECK(to_utf8("caf\xE9", "us-ascii") == "caf\xC3\xA9");
    CHECK(to_utf8("caf\xC3\xA9", "us-ascii") == "caf\xC3\xA9");
    CHECK(to_utf8("", "") == "");
}

TEST_CASE("RFC 2047 encoded words are decoded", "[charset][headers]") {
    SECTION("B encoding in utf-8") {
        CHECK(decode_header_value("=?UTF-8?B?SsO8cmdlbg==?=") == "J\xC3\xBCrgen");
    }
    SECTION("Q encoding in iso-8859-1, with underscores as spaces") {
        CHECK(decode_header_value("=?iso-8859-1?q?caf=E9_cr=E8me?=") == "caf\xC3\xA9 cr\xC3\xA8me");
    }
    SECTION("whitespace between adjacent encoded words is dropped") {
        CHECK(decode_header_value("=?utf-8?q?Hel?=  \t =?utf-8?q?lo?=") == "Hello");
        CHECK(decode_header_value("=?utf-8?q?a?= =?iso-8859-1?q?=E9?=") == "a\xC3\xA9");
    }
    SECTION("text between encoded words is kept") {
        CHECK(decode_header_value("=?utf-8?q?one?= and =?utf-8?q?two?=") == "one and two");
        CHECK(decode_header_value("Re: =?utf-8?b?w6k=?= !") == "Re: \xC3\xA9 !");
    }
    SECTION("a multi-byte character split across words is rejoined") {
        CHECK(decode_header_value("=?utf-8?b?4oI=?= =?utf-8?b?rA==?=") == "\xE2\x82\xAC");
    }
    SECTION("a language tag after the charset is ignored") {
        CHECK(decode_header_value("=?utf-8*en?q?hi?=") == "hi");
    }
    SECTION("malformed words are left as they are") {
        CHECK(decode_header_value("=?utf-8?x?abc?= =?utf-8?q?no end") == "=?utf-8?x?abc?= =?utf-8?q?no end");
        CHECK(decode_header_value("50% =? off") == "50% =? off");
    }
    SECTION("an unknown charset in a word falls back to windows-1252") {
        CHECK(decode_header_value("=?x-unknown-cs?q?=E9?=") == "\xC3\xA9");
    }
    SECTION("raw 8-bit text around words is read as windows-1252 when not UTF-8") {
        CHECK(decode_header_value("Caf\xE9 =?utf-8?q?=E2=82=AC?=") == "Caf\xC3\xA9 \xE2\x82\xAC");
    }
}

TEST_CASE("Parsing from several threads at once gives the same results", "[charset][threads]") {
    const std::vector<std::string> messages = {
        "Subject: =?koi8-r?b?8NLJ18XU?=\nContent-Type: text/plain; charset=koi8-r\n\n\xF0\xD2\xC9\xD7\xC5\xD4\n",
        "Subject: =?iso-2022-jp?B?GyRCJDMkcyRLJEEkTxsoQg==?=\nContent-Type: text/plain; charset=shift_jis\n\n\x82\xA0\n",
        "Subject: =?big5?q?=A4=A3?=\nContent-Type: text/html; charset=big5\n\n<p>\xA4\xA3</p>\n",
    };
    std::vector<std::string> expected;
    for (const std::string& m : messages) {
        const ParsedMessage p = parse(m);
        expected.push_back(p.headers.at(0).value + "|" + p.texts.at(0).text);
    }
    std::vector<int> mismatches(8, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            for (int round = 0; round < 300; ++round) {
                const std::size_t k = static_cast<std::size_t>(round + t) % messages.size();
                const ParsedMessage p = parse(messages[k]);
                if (p.headers.at(0).value + "|" + p.texts.at(0).text != expected[k]) ++mismatches[t];
            }
        });
    }
    for (std::thread& th : threads) th.join();
    for (int t = 0; t < 8; ++t) CHECK(mismatches[t] == 0);
    CHECK(expected[0] == "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82|\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82\n");
}
