// mime::parse on whole messages: structure, headers, bodies, attachments, breakage.
#include <mailsift/mime/message.hpp>

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>

#include "../support/paths.hpp"

using namespace mailsift::mime;

namespace {

std::string fixture(const std::string& name) {
    std::ifstream in(std::string(MAILSIFT_TEST_DATA) + "/mime/" + name, std::ios::binary);
    REQUIRE(in.good());
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string header(const ParsedMessage& m, std::string_view name) {
    const Header* h = m.find(name);
    return h ? h->value : std::string("<missing>");
}

}  // namespace

TEST_CASE("A multipart/alternative message yields both texts in order", "[message]") {
    const ParsedMessage m = parse(fixture("multipart_alternative.eml"));

    SECTION("the top-level headers keep their order and names") {
        REQUIRE(m.headers.size() == 5);
        CHECK(m.headers[0].name == "From");
        CHECK(m.headers[0].value == "Alice <alice@example.com>");
        CHECK(m.headers[2].name == "Subject");
        CHECK(m.headers[4].name == "Content-Type");
        CHECK(m.headers[4].value == "multipart/alternative; boundary=\"alt-42\"");
    }
    SECTION("the quoted-printable plain part is decoded and soft breaks are joined") {
        REQUIRE(m.texts.size() == 2);
        CHECK(m.texts[0].kind == TextKind::plain);
        CHECK(m.texts[0].charset == "utf-8");
        CHECK(m.texts[0].text ==
              "Caf\xC3\xA9 at noon? The menu says \n\"cr\xC3\xA8me br\xC3\xBBl\xC3\xA9" "e\" is back. Lunch is on me.");
    }
    SECTION("the base64 html part is reduced to its visible text and links") {
        REQUIRE(m.texts.size() == 2);
        CHECK(m.texts[1].kind == TextKind::html);
        CHECK(m.texts[1].text == "Caf\xC3\xA9 at noon?\nSee the menu");
        REQUIRE(m.links.size() == 1);
        CHECK(m.links[0].target == "https://example.com/menu");
        CHECK(m.links[0].text == "See the menu");
    }
    SECTION("preamble and epilogue are not text, and nothing is malformed") {
        for (const TextPart& t : m.texts) {
            CHECK(t.text.find("multi-part message") == std::string::npos);
            CHECK(t.text.find("epilogue") == std::string::npos);
        }
        CHECK(m.part_count == 3);
        CHECK_FALSE(m.malformed);
        CHECK(m.limits_hit.empty());
        CHECK(m.attachments.empty());
    }
}

TEST_CASE("Header lookup is case-insensitive and returns the first match", "[message]") {
    const ParsedMessage m = parse("Received: one\nreceived: two\nSubject: s\n\nbody\n");
    REQUIRE(m.find("RECEIVED") != nullptr);
    CHECK(m.find("RECEIVED")->value == "one");
    CHECK(m.find("subject")->value == "s");
    CHECK(m.find("X-Missing") == nullptr);
}

TEST_CASE("RFC 2047 words in headers are decoded to UTF-8", "[message][headers]") {
    const ParsedMessage m = parse(fixture("rfc2047_subject.eml"));
    CHECK(header(m, "From") == "J\xC3\xBCrgen <j@example.com>");
    CHECK(header(m, "To") == "Andr\xC3\xA9 <andre@example.com>");
    // Folded, mixed B and Q, two charsets; whitespace between adjacent words is dropped.
    CHECK(header(m, "Subject") == "Gr\xC3\xBC\xC3\x9F" "e aus K\xC3\xB6ln and more");
    CHECK(header(m, "X-Plain") == "no encoding here");
}

TEST_CASE("Raw 8-bit headers are kept as UTF-8 or read as windows-1252", "[message][headers]") {
    const ParsedMessage m = parse(fixture("headers_8bit.eml"));

    SECTION("valid UTF-8 bytes pass through") {
        CHECK(header(m, "From") == "J\xC3\xBCrgen <j@example.com>");
    }
    SECTION("invalid UTF-8 bytes are read as windows-1252") {
        CHECK(header(m, "Subject") == "Caf\xC3\xA9 pr\xC3\xAAt \xE2\x82\xAC");
    }
    SECTION("folded fields are unfolded across CRLF continuation lines") {
        CHECK(header(m, "X-Folded") == "first   second\tthird");
    }
}

TEST_CASE("A message without Content-Type is text/plain", "[message]") {
    const ParsedMessage m = parse("From nobody Mon Jan  1 00:00:00 2024\nFrom: a@b\nSubject: plain\n\nJust text.\n");

    SECTION("the mbox separator line is not mistaken for the body") {
        REQUIRE(m.headers.size() == 2);
        CHECK(m.headers[0].name == "From");
    }
    SECTION("the body is one plain text part with no charset") {
        REQUIRE(m.texts.size() == 1);
        CHECK(m.texts[0].kind == TextKind::plain);
        CHECK(m.texts[0].text == "Just text.\n");
        CHECK(m.texts[0].charset.empty());
        CHECK(m.part_count == 1);
        CHECK_FALSE(m.malformed);
    }
}

TEST_CASE("CRLF line endings are handled like LF", "[message]") {
    const ParsedMessage m = parse(
        "Subject: crlf\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n"
        "one\r\n--b\r\n\r\ntwo\r\n--b--\r\n");
    CHECK(header(m, "Subject") == "crlf");
    REQUIRE(m.texts.size() == 2);
    CHECK(m.texts[0].text == "one");
    CHECK(m.texts[1].text == "two");
    CHECK_FALSE(m.malformed);
}

TEST_CASE("Transfer encodings are removed from text bodies", "[message][body]") {
    SECTION("base64 with a declared latin-1 charset") {
        const ParsedMessage m = parse(
            "Content-Type: text/plain; charset=ISO-8859-1\nContent-Transfer-Encoding: BASE64\n\nQ2Fm6SBjcuhtZQ==\n");
        REQUIRE(m.texts.size() == 1);
        CHECK(m.texts[0].text == "Caf\xC3\xA9 cr\xC3\xA8me");
        CHECK(m.texts[0].charset == "iso-8859-1");
        CHECK_FALSE(m.malformed);
    }
    SECTION("quoted-printable with bad escapes keeps them literally") {
        const ParsedMessage m =
            parse("Content-Type: text/plain\nContent-Transfer-Encoding: quoted-printable\n\n100=25 =ZZ =4 a=\n b\n");
        REQUIRE(m.texts.size() == 1);
        CHECK(m.texts[0].text == "100% =ZZ =4 a b\n");
    }
    SECTION("quoted-printable trailing blanks before a bare LF do not glue lines") {
        const ParsedMessage m =
            parse("Content-Type: text/plain\nContent-Transfer-Encoding: quoted-printable\n\nhello   \nworld\n");
        REQUIRE(m.texts.size() == 1);
        CHECK(m.texts[0].text == "hello\nworld\n");
    }
}

TEST_CASE("Bad base64 is decoded as far as possible and flagged", "[message][body]") {
    const ParsedMessage m = parse(fixture("bad_base64.eml"));
    REQUIRE(m.texts.size() == 1);
    CHECK(m.texts[0].text == "Hello world");
    CHECK(m.malformed);
}

TEST_CASE("Body charsets are converted to UTF-8", "[message][charset]") {
    SECTION("undeclared latin-1 bytes are read as windows-1252") {
        const ParsedMessage m = parse(fixture("latin1_undeclared.eml"));
        REQUIRE(m.texts.size() == 1);
        CHECK(m.texts[0].text == "Caf\xC3\xA9 cr\xC3\xA8me \xE2\x82\xAC 5\n");
        CHECK(m.texts[0].charset.empty());
    }
    SECTION("a quoted upper-case koi8-r label is honoured") {
        const ParsedMessage m = parse(fixture("koi8r_body.eml"));
        REQUIRE(m.texts.size() == 1);
        CHECK(m.texts[0].text == "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82, \xD0\xBC\xD0\xB8\xD1\x80\n");
        CHECK(m.texts[0].charset == "koi8-r");
    }
    SECTION("an unknown charset falls back to windows-1252") {
        const ParsedMessage m = parse("Content-Type: text/plain; charset=x-made-up\n\nna\xEFve\n");
        REQUIRE(m.texts.size() == 1);
        CHECK(m.texts[0].text == "na\xC3\xAFve\n");
        CHECK(m.texts[0].charset == "x-made-up");
    }
}

TEST_CASE("Attachments are noted with name, type and decoded size", "[message][attachments]") {
    const ParsedMessage m = parse(fixture("attachments.eml"));
    REQUIRE(m.attachments.size() == 4);

    SECTION("a base64 attachment reports its decoded size and lower-case type") {
        CHECK(m.attachments[0].filename == "report.pdf");
        CHECK(m.attachments[0].content_type == "application/pdf");
        CHECK(m.attachments[0].size_bytes == 1024);
    }
    SECTION("an RFC 2231 filename* is percent- and charset-decoded") {
        CHECK(m.attachments[1].filename == "\xE2\x82\xAC invoice.txt");
        CHECK(m.attachments[1].content_type == "application/octet-stream");
        CHECK(m.attachments[1].size_bytes == 12);
    }
    SECTION("a name parameter with an RFC 2047 word names an inline image") {
        CHECK(m.attachments[2].filename == "b\xC3\xA4r.gif");
        CHECK(m.attachments[2].content_type == "image/gif");
        CHECK(m.attachments[2].size_bytes == 14);
    }
    SECTION("a text part with a name is an attachment and not body text") {
        CHECK(m.attachments[3].filename == "notes.txt");
        CHECK(m.attachments[3].content_type == "text/plain");
        CHECK(m.attachments[3].size_bytes == 44);
        REQUIRE(m.texts.size() == 1);
        CHECK(m.texts[0].text == "See the attached files.");
    }
    SECTION("the structure itself is sound") {
        CHECK(m.part_count == 6);
        CHECK_FALSE(m.malformed);
    }
}

TEST_CASE("RFC 2231 continuations and quoted semicolons in parameters", "[message][attachments]") {
    SECTION("filename*0* and filename*1* are joined before decoding") {
        const ParsedMessage m = parse(
            "Content-Type: application/zip\nContent-Disposition: attachment;\n filename*0*=utf-8''%E2%82;"
            " filename*1*=%AC.zip\n\nPK\n");
        REQUIRE(m.attachments.size() == 1);
        CHECK(m.attachments[0].filename == "\xE2\x82\xAC.zip");
        CHECK(m.texts.empty());
    }
    SECTION("a quoted boundary containing ';' still splits the body") {
        const ParsedMessage m =
            parse("Content-Type: multipart/mixed; boundary=\"a;b\"; x=y\n\n--a;b\n\none\n--a;b\n\ntwo\n--a;b--\n");
        REQUIRE(m.texts.size() == 2);
        CHECK(m.texts[1].text == "two");
        CHECK_FALSE(m.malformed);
    }
}

TEST_CASE("Nested multiparts are walked in document order", "[message][structure]") {
    const ParsedMessage m = parse(fixture("nested_multipart.eml"));
    REQUIRE(m.texts.size() == 3);
    CHECK(m.texts[0].text == "plain version");
    CHECK(m.texts[1].kind == TextKind::html);
    CHECK(m.texts[1].text == "html version");
    CHECK(m.texts[2].text == "after the alternative");
    REQUIRE(m.links.size() == 1);
    CHECK(m.links[0].target == "http://nested.example/");
    CHECK(m.links[0].text == "version");
    REQUIRE(m.attachments.size() == 1);
    CHECK(m.attachments[0].content_type == "image/png");
    CHECK(m.attachments[0].filename.empty());
    CHECK(m.attachments[0].size_bytes == 7);
    CHECK(m.part_count == 7);
    CHECK_FALSE(m.malformed);
}

TEST_CASE("An attached message/rfc822 contributes its text parts", "[message][structure]") {
    const ParsedMessage m = parse(fixture("message_rfc822.eml"));
    REQUIRE(m.texts.size() == 3);
    CHECK(m.texts[0].text == "See below.");
    CHECK(m.texts[1].text == "inner plain text");
    CHECK(m.texts[2].text == "inner html");
    // Only the outer message's headers are top-level headers.
    CHECK(header(m, "Subject") == "Fwd: offer");
    CHECK(m.headers.size() == 3);
    CHECK(m.part_count == 6);
    CHECK_FALSE(m.malformed);
}

TEST_CASE("A base64 encoded message/rfc822 attachment is decoded and walked", "[message][structure]") {
    // "Subject: in\n\nhidden text\n" in base64.
    const ParsedMessage m = parse(
        "Content-Type: message/rfc822\nContent-Disposition: attachment; filename=fwd.eml\n"
        "Content-Transfer-Encoding: base64\n\nU3ViamVjdDogaW4KCmhpZGRlbiB0ZXh0Cg==\n");
    REQUIRE(m.texts.size() == 1);
    CHECK(m.texts[0].text == "hidden text\n");
    REQUIRE(m.attachments.size() == 1);
    CHECK(m.attachments[0].filename == "fwd.eml");
    CHECK(m.attachments[0].content_type == "message/rfc822");
    CHECK(m.attachments[0].size_bytes == 25);
}

TEST_CASE("multipart/digest parts default to message/rfc822", "[message][structure]") {
    const ParsedMessage m = parse(
        "Content-Type: multipart/digest; boundary=d\n\n--d\n\nSubject: one\n\nfirst digest body\n--d--\n");
    REQUIRE(m.texts.size() == 1);
    CHECK(m.texts[0].text == "first digest body");
    CHECK(m.part_count == 3);
}

TEST_CASE("Broken structure is tolerated and flagged", "[message][malformed]") {
    SECTION("a declared boundary that never appears leaves the body as plain text") {
        const ParsedMessage m = parse(fixture("missing_boundary.eml"));
        CHECK(m.malformed);
        REQUIRE(m.texts.size() == 1);
        CHECK(m.texts[0].kind == TextKind::plain);
        CHECK(m.texts[0].text.find("Buy cheap watches now.") != std::string::npos);
    }
    SECTION("a multipart without a boundary parameter is read as text") {
        const ParsedMessage m = parse("Content-Type: multipart/mixed\n\nstill readable\n");
        CHECK(m.malformed);
        REQUIRE(m.texts.size() == 1);
        CHECK(m.texts[0].text == "still readable\n");
    }
    SECTION("an inner multipart without its closing delimiter does not swallow its siblings") {
        const ParsedMessage m = parse(fixture("nested_missing_close.eml"));
        CHECK(m.malformed);
        REQUIRE(m.texts.size() == 3);
        CHECK(m.texts[0].text == "inner text");
        CHECK(m.texts[1].text == "sibling two");
        CHECK(m.texts[2].text == "sibling three");
    }
    SECTION("a boundary string in the middle of a line does not split the part") {
        const ParsedMessage m =
            parse("Content-Type: multipart/mixed; boundary=B\n\n--B\n\none text --B inline\n--B\n\ntwo\n--B--\n");
        REQUIRE(m.texts.size() == 2);
        CHECK(m.texts[0].text == "one text --B inline");
        CHECK_FALSE(m.malformed);
    }
    SECTION("a longer boundary that merely starts with the declared one is not a delimiter") {
        const ParsedMessage m =
            parse("Content-Type: multipart/mixed; boundary=B\n\n--B\n\none\n--B2\nstill one\n--B--\n");
        REQUIRE(m.texts.size() == 1);
        CHECK(m.texts[0].text == "one\n--B2\nstill one");
    }
    SECTION("a header section without an end keeps every field") {
        const ParsedMessage m = parse("Subject: hi\nFrom: x@y");
        CHECK(m.malformed);
        REQUIRE(m.headers.size() == 2);
        CHECK(m.headers[1].value == "x@y");
    }
    SECTION("a line that is not a header starts the body") {
        const ParsedMessage m = parse("Subject: a\nthis is not a header\nmore\n");
        CHECK(m.malformed);
        REQUIRE(m.headers.size() == 1);
        REQUIRE(m.texts.size() == 1);
        CHECK(m.texts[0].text == "this is not a header\nmore\n");
    }
    SECTION("an unusable Content-Type means text/plain") {
        const ParsedMessage m = parse("Content-Type: garbage\n\nvisible\n");
        REQUIRE(m.texts.size() == 1);
        CHECK(m.texts[0].text == "visible\n");
        CHECK(m.attachments.empty());
    }
    SECTION("empty input gives an empty message") {
        const ParsedMessage m = parse("");
        CHECK(m.headers.empty());
        CHECK(m.part_count == 1);
        CHECK(m.malformed);
    }
}

TEST_CASE("A missing closing delimiter alone is not truncation", "[message][malformed]") {
    const ParsedMessage m = parse("Content-Type: multipart/mixed; boundary=B\n\n--B\n\ncomplete part\n");
    CHECK(m.malformed);
    CHECK_FALSE(m.truncated);
    REQUIRE(m.texts.size() == 1);
}

TEST_CASE("A multipart cut off mid-line is truncated, unless our own limit cut it", "[message][malformed]") {
    const std::string cut = "Content-Type: multipart/mixed; boundary=B\n\n--B\n\nthe transfer stopped in the mi";
    CHECK(parse(cut).truncated);
    Limits limits;
    limits.max_message_bytes = 1024;
    const std::string big = "Content-Type: multipart/mixed; boundary=B\n\n--B\n\n" + std::string(4000, 'x') + "\n--B--\n";
    const ParsedMessage m = parse(big, limits);
    CHECK_FALSE(m.truncated);
    CHECK(m.malformed);
}

TEST_CASE("An inline text part with a filename is read as text", "[message]") {
    const ParsedMessage m = parse(
        "Content-Type: multipart/mixed; boundary=B\n\n--B\n"
        "Content-Type: text/html\nContent-Disposition: inline; filename=\"body.html\"\n\n<p>hello there</p>\n--B--\n");
    REQUIRE(m.texts.size() == 1);
    CHECK(m.texts[0].text.find("hello there") != std::string::npos);
    CHECK(m.attachments.empty());
}

TEST_CASE("A truncated message returns what was read", "[message][malformed]") {
    const ParsedMessage m = parse(fixture("truncated.eml"));
    CHECK(m.malformed);
    CHECK(m.truncated);
    CHECK(header(m, "Subject") == "truncated");
    REQUIRE(m.texts.size() == 1);
    CHECK(m.texts[0].text ==
          "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog. "
          "The quick brown fox j");
}

TEST_CASE("Attachment content types of raw high bytes are normalised in the mime module", "[message][attachments]") {
    const auto attachment_of = [](const std::string& content_type) {
        const ParsedMessage m = parse("Content-Type: multipart/mixed; boundary=b\n\n--b\n\nbody\n--b\nContent-Type: " +
                                      content_type +
                                      "\nContent-Disposition: attachment; filename=x.bin\n\nAAAA\n--b--\n");
        REQUIRE(m.attachments.size() == 1);
        return m.attachments[0].content_type;
    };
    SECTION("high bytes in the type or the subtype") {
        CHECK(attachment_of("appl\xE9\xFF" "cation/pdf") == invalid_content_type);
        CHECK(attachment_of("application/p\x80\xC3\xA9" "df") == invalid_content_type);
    }
    SECTION("control bytes and blanks") {
        CHECK(attachment_of("application/pd\x01" "f") == invalid_content_type);
        CHECK(attachment_of("application/pd\x7f" "f") == invalid_content_type);
        CHECK(attachment_of("application/p df") == invalid_content_type);
    }
    SECTION("printable ASCII stays, lower-cased") {
        CHECK(attachment_of("Application/X-Thing+Zip") == "application/x-thing+zip");
    }
    SECTION("a type that only resembles message/rfc822 is a leaf, normalised too") {
        const ParsedMessage m = parse("Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: message/rfc\xFF"
                                      "822\nContent-Disposition: attachment\n\nSubject: inner\n\nhi\n--b--\n");
        REQUIRE(m.attachments.size() == 1);
        CHECK(m.attachments[0].content_type == invalid_content_type);
    }
    SECTION("the placeholder is printable ASCII, so features keep their form") {
        CHECK(std::string(invalid_content_type) == "invalid");
    }
}

TEST_CASE("has_header_field reads the header section as parse() does", "[mime]") {
    REQUIRE(has_header_field("Subject: hi\n\nbody"));
    REQUIRE(has_header_field("  stray continuation\nFrom: a@example.org\n\nbody"));
    REQUIRE(has_header_field("From : a@example.org"));
    REQUIRE(has_header_field("From: a@example.org\rSubject: x\r\rbody\r"));  // CR line ends, no LF
    REQUIRE_FALSE(has_header_field("just some words\nFrom: a@example.org\n\nbody"));
    REQUIRE_FALSE(has_header_field("\nFrom: a@example.org\n"));
    REQUIRE_FALSE(has_header_field(""));
    // What parse() finds agrees.
    REQUIRE_FALSE(parse("just some words\nFrom: a@example.org\n\nbody").find("From"));
    REQUIRE(parse("  stray continuation\nFrom: a@example.org\n\nbody").find("From"));
}
