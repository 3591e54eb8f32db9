#include "mailsift/milter/protocol.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace mailsift::milter;
using namespace std::string_literals;

namespace {

// Builds one MTA frame straight from the protocol layout, independent of encode().
class Frame {
public:
    explicit Frame(char letter) : letter_(letter) {}
    Frame& byte(char c) {
        data_.push_back(c);
        return *this;
    }
    Frame& u16(std::uint16_t v) {
        data_.push_back(static_cast<char>(v >> 8));
        data_.push_back(static_cast<char>(v & 0xff));
        return *this;
    }
    Frame& u32(std::uint32_t v) {
        for (int shift = 24; shift >= 0; shift -= 8) data_.push_back(static_cast<char>((v >> shift) & 0xff));
        return *this;
    }
    Frame& str(std::string_view s) {  // NUL-terminated
        data_.append(s);
        data_.push_back('\0');
        return *this;
    }
    Frame& raw(std::string_view s) {
        data_.append(s);
        return *this;
    }
    operator std::string() const {
        std::string out = length(static_cast<std::uint32_t>(data_.size() + 1));
        out.push_back(letter_);
        return out + data_;
    }
    static std::string length(std::uint32_t n) {
        return {static_cast<char>(n >> 24), static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 8) & 0xff),
                static_cast<char>(n & 0xff)};
    }

private:
    char letter_;
    std::string data_;
};

// A readable, comparable rendering of a command.
std::string show(const Command& command) {
    struct Show {
        std::string operator()(const Negotiate& c) const {
            return "O " + std::to_string(c.version) + " " + std::to_string(c.actions) + " " + std::to_string(c.steps);
        }
        std::string operator()(const Macros& c) const {
            std::string s = "D "s + c.stage;
            for (const auto& [k, v] : c.values) s += " " + k + "=" + v;
            return s;
        }
        std::string operator()(const Connect& c) const {
            return "C " + c.hostname + " " + c.family + " " + std::to_string(c.port) + " " + c.address;
        }
        std::string operator()(const Helo& c) const { return "H " + c.name; }
        std::string operator()(const Mail& c) const {
            std::string s = "M";
            for (const auto& a : c.args) s += " " + a;
            return s;
        }
        std::string operator()(const Rcpt& c) const {
            std::string s = "R";
            for (const auto& a : c.args) s += " " + a;
            return s;
        }
        std::string operator()(const Data&) const { return "T"; }
        std::string operator()(const Unknown& c) const { return "U " + c.command; }
        std::string operator()(const Header& c) const { return "L " + c.name + "=" + c.value; }
        std::string operator()(const EndOfHeaders&) const { return "N"; }
        std::string operator()(const Body& c) const { return "B " + c.chunk; }
        std::string operator()(const EndOfBody& c) const { return "E " + c.chunk; }
        std::string operator()(const Abort&) const { return "A"; }
        std::string operator()(const Quit&) const { return "Q"; }
        std::string operator()(const QuitNewConnection&) const { return "K"; }
    };
    return std::visit(Show{}, command);
}

// Takes every complete command out of the decoder.
void drain(Decoder& decoder, std::vector<std::string>& seen) {
    Command command;
    while (decoder.next(command) == Decoder::Status::command) seen.push_back(show(command));
}

// Decodes a single complete frame; fails the test unless exactly one command comes out.
Command decode_one(const std::string& bytes) {
    Decoder decoder;
    decoder.feed(bytes);
    Command command;
    REQUIRE(decoder.next(command) == Decoder::Status::command);
    Command none;
    REQUIRE(decoder.next(none) == Decoder::Status::need_more);
    REQUIRE(decoder.buffered_bytes() == 0);
    return command;
}

DecodeError decode_error(const std::string& bytes, std::size_t max_frame = 1024 * 1024) {
    Decoder decoder(max_frame);
    decoder.feed(bytes);
    Command command;
    REQUIRE(decoder.next(command) == Decoder::Status::error);
    return decoder.error();
}

// What Postfix sends for one message on one connection, then goodbye.
std::string postfix_session() {
    return std::string(Frame('O').u32(6).u32(0x1ff).u32(0x1fffff)) +
           std::string(Frame('D').byte('C').str("j").str("mx.example.org").str("{daemon_name}").str("smtpd")) +
           std::string(Frame('C').str("mail.example.net").byte('4').u16(54321).str("192.0.2.10")) +
           std::string(Frame('D').byte('H').str("{tls_version}").str("TLSv1.3")) +
           std::string(Frame('H').str("mail.example.net")) +
           std::string(Frame('D').byte('M').str("i").str("4XyZ1").str("{auth_authen}").str("alice")) +
           std::string(Frame('M').str("<alice@example.net>").str("SIZE=1234")) +
           std::string(Frame('D').byte('R').str("{rcpt_addr}").str("bob@example.org")) +
           std::string(Frame('R').str("<bob@example.org>")) + std::string(Frame('T')) +
           std::string(Frame('L').str("From").str(" Alice <alice@example.net>")) +
           std::string(Frame('L').str("To").str(" bob@example.org")) +
           std::string(Frame('L').str("Subject").str(" Hello\n\tthere")) + std::string(Frame('N')) +
           std::string(Frame('B').raw("Hi Bob,\r\n\r\nSee you.\r\n")) + std::string(Frame('E')) +
           std::string(Frame('A')) + std::string(Frame('Q'));
}

const std::vector<std::string> postfix_commands = {
    "O 6 511 2097151",
    "D C j=mx.example.org {daemon_name}=smtpd",
    "C mail.example.net 4 54321 192.0.2.10",
    "D H {tls_version}=TLSv1.3",
    "H mail.example.net",
    "D M i=4XyZ1 {auth_authen}=alice",
    "M <alice@example.net> SIZE=1234",
    "D R {rcpt_addr}=bob@example.org",
    "R <bob@example.org>",
    "T",
    "L From= Alice <alice@example.net>",
    "L To= bob@example.org",
    "L Subject= Hello\n\tthere",
    "N",
    "B Hi Bob,\r\n\r\nSee you.\r\n",
    "E ",
    "A",
    "Q",
};

}  // namespace

TEST_CASE("Each command type decodes from its protocol layout", "[milter][protocol]") {
    SECTION("negotiation carries version, actions and steps") {
        const auto c = std::get<Negotiate>(decode_one(Frame('O').u32(6).u32(0x1ff).u32(0x1fffff)));
        REQUIRE(c.version == 6);
        REQUIRE(c.actions == 0x1ff);
        REQUIRE(c.steps == 0x1fffff);
    }
    SECTION("macros carry their stage and name/value pairs in order") {
        const auto c = std::get<Macros>(decode_one(Frame('D').byte('M').str("i").str("ABC").str("{auth_type}").str("")));
        REQUIRE(c.stage == 'M');
        REQUIRE(c.values == std::vector<std::pair<std::string, std::string>>{{"i", "ABC"}, {"{auth_type}", ""}});
    }
    SECTION("a macro command with a stage but no pairs is valid") {
        const auto c = std::get<Macros>(decode_one(Frame('D').byte('C')));
        REQUIRE(c.stage == 'C');
        REQUIRE(c.values.empty());
    }
    SECTION("an IPv4 connect has host, family, port and address") {
        const auto c = std::get<Connect>(decode_one(Frame('C').str("h.example").byte('4').u16(2525).str("192.0.2.1")));
        REQUIRE(c.hostname == "h.example");
        REQUIRE(c.family == '4');
        REQUIRE(c.port == 2525);
        REQUIRE(c.address == "192.0.2.1");
    }
    SECTION("an IPv6 connect keeps the address text") {
        const auto c = std::get<Connect>(decode_one(Frame('C').str("[2001:db8::1]").byte('6').u16(25).str("2001:db8::1")));
        REQUIRE(c.family == '6');
        REQUIRE(c.port == 25);
        REQUIRE(c.address == "2001:db8::1");
    }
    SECTION("a unix-socket connect has port 0 and the socket path") {
        const auto c = std::get<Connect>(decode_one(Frame('C').str("localhost").byte('L').u16(0).str("/run/smtp.sock")));
        REQUIRE(c.family == 'L');
        REQUIRE(c.port == 0);
        REQUIRE(c.address == "/run/smtp.sock");
    }
    SECTION("an unknown-family connect ends after the family byte") {
        const auto c = std::get<Connect>(decode_one(Frame('C').str("unknown").byte('U')));
        REQUIRE(c.hostname == "unknown");
        REQUIRE(c.family == 'U');
        REQUIRE(c.address.empty());
    }
    SECTION("helo carries the name") {
        REQUIRE(std::get<Helo>(decode_one(Frame('H').str("client.example"))).name == "client.example");
    }
    SECTION("mail and rcpt carry all their arguments") {
        REQUIRE(std::get<Mail>(decode_one(Frame('M').str("<a@x>").str("BODY=8BITMIME"))).args ==
                std::vector<std::string>{"<a@x>", "BODY=8BITMIME"});
        REQUIRE(std::get<Rcpt>(decode_one(Frame('R').str("<b@y>"))).args == std::vector<std::string>{"<b@y>"});
    }
    SECTION("data, end of headers, abort, quit and quit-new-connection carry nothing") {
        REQUIRE(std::holds_alternative<Data>(decode_one(Frame('T'))));
        REQUIRE(std::holds_alternative<EndOfHeaders>(decode_one(Frame('N'))));
        REQUIRE(std::holds_alternative<Abort>(decode_one(Frame('A'))));
        REQUIRE(std::holds_alternative<Quit>(decode_one(Frame('Q'))));
        REQUIRE(std::holds_alternative<QuitNewConnection>(decode_one(Frame('K'))));
    }
    SECTION("commands without data ignore stray data") {
        REQUIRE(std::holds_alternative<Data>(decode_one(Frame('T').raw("junk"))));
        REQUIRE(std::holds_alternative<Quit>(decode_one(Frame('Q').byte('\0'))));
    }
    SECTION("negotiation ignores bytes after its three numbers") {
        REQUIRE(std::get<Negotiate>(decode_one(Frame('O').u32(6).u32(1).u32(2).u32(99))).steps == 2);
    }
    SECTION("unknown carries the SMTP command") {
        REQUIRE(std::get<Unknown>(decode_one(Frame('U').str("XFOO bar"))).command == "XFOO bar");
    }
    SECTION("a header carries name and value, value as sent") {
        const auto c = std::get<Header>(decode_one(Frame('L').str("Subject").str(" Hi\n\tthere")));
        REQUIRE(c.name == "Subject");
        REQUIRE(c.value == " Hi\n\tthere");
    }
    SECTION("a body chunk is raw bytes, NULs included") {
        REQUIRE(std::get<Body>(decode_one(Frame('B').raw("a\0b\r\n"s))).chunk == "a\0b\r\n"s);
    }
    SECTION("end of body may be empty or carry a last chunk") {
        REQUIRE(std::get<EndOfBody>(decode_one(Frame('E'))).chunk.empty());
        REQUIRE(std::get<EndOfBody>(decode_one(Frame('E').raw("tail"))).chunk == "tail");
    }
}

TEST_CASE("Frame sizes are checked before the frame is stored", "[milter][protocol]") {
    Command command;
    SECTION("an announced 4 GB frame fails as soon as its length arrives") {
        Decoder decoder(1024);
        decoder.feed(Frame::length(0xffffffffu) + "B");
        REQUIRE(decoder.next(command) == Decoder::Status::error);
        REQUIRE(decoder.error() == DecodeError::frame_too_large);
        REQUIRE(decoder.buffered_bytes() == 0);
    }
    SECTION("one byte over the limit fails before the letter arrives") {
        Decoder decoder(1024);
        decoder.feed(Frame::length(1025));
        REQUIRE(decoder.next(command) == Decoder::Status::error);
        REQUIRE(decoder.error() == DecodeError::frame_too_large);
    }
    SECTION("a frame of exactly the limit is accepted") {
        Decoder decoder(1024);
        const std::string frame = Frame('B').raw(std::string(1023, 'x'));
        decoder.feed(frame.substr(0, 100));
        REQUIRE(decoder.next(command) == Decoder::Status::need_more);
        decoder.feed(frame.substr(100));
        REQUIRE(decoder.next(command) == Decoder::Status::command);
        REQUIRE(std::get<Body>(command).chunk.size() == 1023);
    }
    SECTION("a failed decoder stays failed and keeps no input") {
        Decoder decoder(1024);
        decoder.feed(Frame::length(2000));
        REQUIRE(decoder.next(command) == Decoder::Status::error);
        decoder.feed(std::string(Frame('Q')));
        REQUIRE(decoder.buffered_bytes() == 0);
        REQUIRE(decoder.next(command) == Decoder::Status::error);
        REQUIRE(decoder.error() == DecodeError::frame_too_large);
    }
}

TEST_CASE("Broken frames are reported with the right error", "[milter][protocol]") {
    SECTION("length 0 is an empty frame") {
        REQUIRE(decode_error(Frame::length(0) + "Q") == DecodeError::empty_frame);
    }
    SECTION("an unknown letter fails as soon as it arrives") {
        REQUIRE(decode_error(Frame::length(50) + "Z") == DecodeError::unknown_command);
        REQUIRE(decode_error(Frame('S')) == DecodeError::unknown_command);
    }
    SECTION("strings without their NUL are malformed") {
        REQUIRE(decode_error(Frame('H').raw("client")) == DecodeError::malformed);
        REQUIRE(decode_error(Frame('U').raw("XFOO")) == DecodeError::malformed);
        REQUIRE(decode_error(Frame('L').str("Subject").raw("Hi")) == DecodeError::malformed);
        REQUIRE(decode_error(Frame('M').str("<a@x>").raw("SIZE=1")) == DecodeError::malformed);
        REQUIRE(decode_error(Frame('C').str("h").byte('4').u16(25).raw("192.0.2.1")) == DecodeError::malformed);
        REQUIRE(decode_error(Frame('C').raw("h")) == DecodeError::malformed);
    }
    SECTION("missing fields are malformed") {
        REQUIRE(decode_error(Frame('O').u32(6).u32(1)) == DecodeError::malformed);
        REQUIRE(decode_error(Frame('D')) == DecodeError::malformed);
        REQUIRE(decode_error(Frame('L').str("Subject")) == DecodeError::malformed);
        REQUIRE(decode_error(Frame('M')) == DecodeError::malformed);
        REQUIRE(decode_error(Frame('R')) == DecodeError::malformed);
        REQUIRE(decode_error(Frame('C').str("h").byte('4')) == DecodeError::malformed);
        REQUIRE(decode_error(Frame('C').str("h").byte('4').byte('\0')) == DecodeError::malformed);
    }
    SECTION("a macro name without its value is malformed") {
        REQUIRE(decode_error(Frame('D').byte('M').str("i").str("ABC").str("j")) == DecodeError::malformed);
    }
    SECTION("an unknown address family is malformed") {
        REQUIRE(decode_error(Frame('C').str("h").byte('X').u16(25).str("a")) == DecodeError::malformed);
    }
    SECTION("bytes after the last string field are malformed") {
        REQUIRE(decode_error(Frame('H').str("client").raw("x")) == DecodeError::malformed);
        REQUIRE(decode_error(Frame('L').str("A").str("b").str("c")) == DecodeError::malformed);
        REQUIRE(decode_error(Frame('C').str("h").byte('U').u16(25)) == DecodeError::malformed);
        REQUIRE(decode_error(Frame('C').str("h").byte('4').u16(25).str("192.0.2.1").raw("x")) ==
                DecodeError::malformed);
    }
    SECTION("every error has a description") {
        for (auto e : {DecodeError::none, DecodeError::frame_too_large, DecodeError::empty_frame,
                       DecodeError::unknown_command, DecodeError::malformed})
            REQUIRE(std::string(describe(e)).size() > 0);
        REQUIRE(std::string(describe(DecodeError::malformed)) != describe(DecodeError::empty_frame));
    }
}

TEST_CASE("Several frames in one feed come out in order", "[milter][protocol]") {
    Decoder decoder;
    decoder.feed(std::string(Frame('H').str("a")) + std::string(Frame('T')) + std::string(Frame('M').str("<b>")) +
                 std::string(Frame('Q')).substr(0, 3));
    std::vector<std::string> seen;
    drain(decoder, seen);
    REQUIRE(seen == std::vector<std::string>{"H a", "T", "M <b>"});
    REQUIRE(decoder.buffered_bytes() == 3);
    decoder.feed(std::string(Frame('Q')).substr(3));
    drain(decoder, seen);
    REQUIRE(seen.back() == "Q");
    REQUIRE(decoder.buffered_bytes() == 0);
}

TEST_CASE("A recorded Postfix session decodes the same however it is split", "[milter][protocol]") {
    const std::string bytes = postfix_session();

    SECTION("in one feed") {
        Decoder decoder;
        decoder.feed(bytes);
        std::vector<std::string> seen;
        drain(decoder, seen);
        REQUIRE(seen == postfix_commands);
    }
    SECTION("in two feeds split at every byte offset") {
        for (std::size_t split = 0; split <= bytes.size(); ++split) {
            Decoder decoder;
            std::vector<std::string> seen;
            decoder.feed(std::string_view(bytes).substr(0, split));
            drain(decoder, seen);
            decoder.feed(std::string_view(bytes).substr(split));
            drain(decoder, seen);
            INFO("split at " << split);
            REQUIRE(seen == postfix_commands);
            REQUIRE(decoder.buffered_bytes() == 0);
        }
    }
    SECTION("one byte at a time") {
        Decoder decoder;
        std::vector<std::string> seen;
        for (char c : bytes) {
            decoder.feed(std::string_view(&c, 1));
            drain(decoder, seen);
        }
        REQUIRE(seen == postfix_commands);
    }
}

TEST_CASE("Every reply encodes to its wire bytes", "[milter][protocol]") {
    const auto wire = [](const Reply& reply) {
        std::string out;
        encode(reply, out);
        return out;
    };
    SECTION("negotiation is three big-endian numbers") {
        REQUIRE(wire(NegotiateReply{6, 0x31, 0x1ff000}) ==
                "\x00\x00\x00\x0d"s "O" "\x00\x00\x00\x06"s "\x00\x00\x00\x31"s "\x00\x1f\xf0\x00"s);
    }
    SECTION("verdicts without data are one letter") {
        REQUIRE(wire(Continue{}) == "\x00\x00\x00\x01"s "c");
        REQUIRE(wire(Accept{}) == "\x00\x00\x00\x01"s "a");
        REQUIRE(wire(Reject{}) == "\x00\x00\x00\x01"s "r");
        REQUIRE(wire(Tempfail{}) == "\x00\x00\x00\x01"s "t");
        REQUIRE(wire(Discard{}) == "\x00\x00\x00\x01"s "d");
        REQUIRE(wire(Progress{}) == "\x00\x00\x00\x01"s "p");
    }
    SECTION("a reply code is its text and a NUL") {
        REQUIRE(wire(ReplyCode{"550 5.7.1 no"}) == "\x00\x00\x00\x0e"s "y" "550 5.7.1 no\x00"s);
    }
    SECTION("add header is name and value") {
        REQUIRE(wire(AddHeader{"X-Spam", "yes"}) == "\x00\x00\x00\x0c"s "h" "X-Spam\x00"s "yes\x00"s);
    }
    SECTION("insert and change header lead with the index") {
        REQUIRE(wire(InsertHeader{0, "X-A", "1"}) ==
                "\x00\x00\x00\x0b"s "i" "\x00\x00\x00\x00"s "X-A\x00"s "1\x00"s);
        REQUIRE(wire(ChangeHeader{2, "X-A", ""}) == "\x00\x00\x00\x0a"s "m" "\x00\x00\x00\x02"s "X-A\x00"s "\x00"s);
    }
    SECTION("quarantine is the reason and a NUL") {
        REQUIRE(wire(Quarantine{"spam"}) == "\x00\x00\x00\x06"s "q" "spam\x00"s);
    }
    SECTION("replies append to what is already there") {
        std::string out = "x";
        encode(Continue{}, out);
        encode(Accept{}, out);
        REQUIRE(out == "x" "\x00\x00\x00\x01"s "c" "\x00\x00\x00\x01"s "a");
    }
    SECTION("an embedded NUL cannot break the framing") {
        REQUIRE(wire(AddHeader{"X\0Y"s, "v"}) == "\x00\x00\x00\x05"s "h" "X\x00"s "v\x00"s);
    }
}

TEST_CASE("SMTP replies are validated and formatted", "[milter][protocol]") {
    SECTION("a single line is code, status and text") {
        REQUIRE(format_smtp_reply("550", "5.7.1", "Message rejected as spam") == "550 5.7.1 Message rejected as spam");
        REQUIRE(format_smtp_reply("451", "4.7.1", "Try again later") == "451 4.7.1 Try again later");
        REQUIRE(format_smtp_reply("554", "5.123.456", "x") == "554 5.123.456 x");
    }
    SECTION("an empty text leaves the status alone") {
        REQUIRE(format_smtp_reply("550", "5.7.1", "") == "550 5.7.1");
    }
    SECTION("percent signs are doubled") {
        REQUIRE(format_smtp_reply("550", "5.7.1", "99% spam, 100%") == "550 5.7.1 99%% spam, 100%%");
    }
    SECTION("several lines are joined with CRLF, dashes on all but the last") {
        REQUIRE(format_smtp_reply("550", "5.7.1", "one\ntwo\nthree") ==
                "550-5.7.1 one\r\n550-5.7.1 two\r\n550 5.7.1 three");
        REQUIRE(format_smtp_reply("550", "5.7.1", "one\n\nthree") == "550-5.7.1 one\r\n550-5.7.1\r\n550 5.7.1 three");
    }
    SECTION("one trailing newline does not add a line") {
        REQUIRE(format_smtp_reply("550", "5.7.1", "only\n") == "550 5.7.1 only");
    }
    SECTION("non-ASCII text is kept") {
        REQUIRE(format_smtp_reply("550", "5.7.1", "r\xc3\xa9jet") == "550 5.7.1 r\xc3\xa9jet");
    }
    SECTION("the code must be 4xx or 5xx, three digits") {
        for (const char* code : {"250", "650", "55", "5500", "5a0", "", "55 "})
            REQUIRE_FALSE(format_smtp_reply(code, "5.7.1", "x"));
        REQUIRE_FALSE(format_smtp_reply("250", "2.0.0", "x"));
    }
    SECTION("the status class must match the code") {
        REQUIRE_FALSE(format_smtp_reply("450", "5.7.1", "x"));
        REQUIRE_FALSE(format_smtp_reply("550", "4.7.1", "x"));
    }
    SECTION("the status must be x.y.z with 1 to 3 digits in y and z") {
        for (const char* status : {"", "5", "5.7", "5.7.", "5..1", "5.7.1.", "5.1234.1", "5.7.1234", "5.7.1 ", " 5.7.1",
                                   "5.a.1", "55.7.1"})
            REQUIRE_FALSE(format_smtp_reply("550", status, "x"));
    }
    SECTION("control bytes other than newline are refused") {
        for (const std::string& text : {"a\rb"s, "a\r\nb"s, "a\0b"s, "a\tb"s, "a\x01"s, "a\x7f"s, "\x1b[1m"s})
            REQUIRE_FALSE(format_smtp_reply("550", "5.7.1", text));
    }
}
