#include "mailsift/milter/session.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace mailsift::milter;
using namespace std::string_literals;

namespace {

constexpr std::uint32_t all_actions = 0x1ff;
constexpr std::uint32_t all_steps = 0x1fffff;
constexpr std::uint32_t no_reply_steps = step::no_reply_connect | step::no_reply_helo | step::no_reply_mail |
                                         step::no_reply_rcpt | step::no_reply_data | step::no_reply_unknown |
                                         step::no_reply_header | step::no_reply_end_of_headers | step::no_reply_body;

// A session that has negotiated with an MTA offering everything.
Session negotiated(SessionOptions options = {}, std::uint32_t offered_steps = all_steps) {
    Session session(options);
    const auto out = session.handle(Negotiate{6, all_actions, offered_steps});
    REQUIRE(out.replies.size() == 1);
    REQUIRE(session.negotiated());
    return session;
}

SessionOptions wanting_replies() {
    SessionOptions options;
    options.steps = 0;
    return options;
}

bool is_one_continue(const Session::Outcome& out) {
    return out.replies.size() == 1 && std::holds_alternative<Continue>(out.replies[0]) && !out.judge && !out.close;
}

bool is_silent(const Session::Outcome& out) { return out.replies.empty() && !out.judge && !out.close; }

// The commands that get a Continue unless negotiated as no-reply, with that step.
const std::vector<std::pair<Command, std::uint32_t>> answered = {
    {Connect{"h", '4', 25, "192.0.2.1"}, step::no_reply_connect},
    {Helo{"h"}, step::no_reply_helo},
    {Mail{{"<a@x>"}}, step::no_reply_mail},
    {Rcpt{{"<b@y>"}}, step::no_reply_rcpt},
    {Data{}, step::no_reply_data},
    {Unknown{"XFOO"}, step::no_reply_unknown},
    {Header{"Subject", "x"}, step::no_reply_header},
    {EndOfHeaders{}, step::no_reply_end_of_headers},
    {Body{"b"}, step::no_reply_body},
};

// Feeds one message's envelope and content.
void feed_message(Session& s, const std::string& queue_id, const std::string& sender,
                  const std::vector<Header>& headers, const std::string& body) {
    REQUIRE(is_silent(s.handle(Macros{'M', {{"i", queue_id}, {"{auth_authen}", "alice"}}})));
    s.handle(Mail{{sender, "SIZE=100"}});
    REQUIRE(is_silent(s.handle(Macros{'R', {{"{rcpt_addr}", "bob@example.org"}}})));
    s.handle(Rcpt{{"<bob@example.org>"}});
    s.handle(Rcpt{{"<carol@example.org>", "NOTIFY=NEVER"}});
    s.handle(Data{});
    for (const auto& h : headers) s.handle(h);
    s.handle(EndOfHeaders{});
    s.handle(Body{body});
}

void feed_connection(Session& s) {
    s.handle(Macros{'C', {{"j", "mx.example.org"}, {"{daemon_name}", "smtpd"}}});
    s.handle(Connect{"mail.example.net", '4', 54321, "192.0.2.10"});
    s.handle(Macros{'H', {{"{tls_version}", "TLSv1.3"}}});
    s.handle(Helo{"mail.example.net"});
}

}  // namespace

TEST_CASE("Negotiation answers the AND of offer and wishes", "[milter][session]") {
    SECTION("an MTA offering everything gets exactly what the owner wants") {
        Session s;
        const auto out = s.handle(Negotiate{6, all_actions, all_steps});
        REQUIRE(out.replies.size() == 1);
        const auto& reply = std::get<NegotiateReply>(out.replies[0]);
        REQUIRE(reply.version == 6);
        REQUIRE(reply.actions == SessionOptions{}.actions);
        REQUIRE(reply.steps == SessionOptions{}.steps);
        REQUIRE(s.actions() == reply.actions);
        REQUIRE(s.steps() == reply.steps);
        REQUIRE_FALSE(out.judge);
        REQUIRE_FALSE(out.close);
    }
    SECTION("an MTA offering less gets only what it offered") {
        Session s;
        const auto out = s.handle(Negotiate{6, action::add_headers | action::change_body,
                                            step::no_reply_connect | step::no_connect});
        const auto& reply = std::get<NegotiateReply>(out.replies[0]);
        REQUIRE(reply.actions == action::add_headers);
        REQUIRE(reply.steps == step::no_reply_connect);
    }
    SECTION("the version is the lower of the offer and 6") {
        REQUIRE(std::get<NegotiateReply>(Session().handle(Negotiate{8, 0, 0}).replies[0]).version == 6);
        REQUIRE(std::get<NegotiateReply>(Session().handle(Negotiate{6, 0, 0}).replies[0]).version == 6);
        REQUIRE(std::get<NegotiateReply>(Session().handle(Negotiate{2, 0, 0}).replies[0]).version == 2);
    }
    SECTION("an offer older than version 2 closes the connection unanswered") {
        Session s;
        const auto out = s.handle(Negotiate{1, all_actions, all_steps});
        REQUIRE(out.replies.empty());
        REQUIRE(out.close);
        REQUIRE_FALSE(s.negotiated());
    }
    SECTION("nothing is negotiated before the offer") {
        Session s;
        REQUIRE_FALSE(s.negotiated());
        REQUIRE(s.actions() == 0);
        REQUIRE(s.steps() == 0);
    }
}

TEST_CASE("A command before negotiation closes the connection", "[milter][session]") {
    Session s;
    const auto out = s.handle(Connect{"h", '4', 25, "192.0.2.1"});
    REQUIRE(out.replies.empty());
    REQUIRE(out.close);
    REQUIRE(s.transaction().client_name.empty());
}

TEST_CASE("Replies follow the negotiated steps", "[milter][session]") {
    SECTION("macros and abort never get a reply") {
        Session s = negotiated(wanting_replies());
        REQUIRE(is_silent(s.handle(Macros{'C', {{"j", "mx"}}})));
        REQUIRE(is_silent(s.handle(Abort{})));
        REQUIRE(is_silent(s.handle(QuitNewConnection{})));
    }
    SECTION("every answered command gets exactly one Continue when replies are wanted") {
        Session s = negotiated(wanting_replies());
        for (const auto& [command, no_reply] : answered) {
            INFO("command index " << command.index());
            REQUIRE(is_one_continue(s.handle(command)));
        }
    }
    SECTION("no answered command gets a reply when all are negotiated as no-reply") {
        Session s = negotiated();
        REQUIRE((s.steps() & no_reply_steps) == no_reply_steps);
        for (const auto& [command, no_reply] : answered) {
            INFO("command index " << command.index());
            REQUIRE(is_silent(s.handle(command)));
        }
    }
    SECTION("each no-reply step silences its own command only") {
        for (const auto& [silenced, silenced_step] : answered) {
            SessionOptions options;
            options.steps = silenced_step;
            Session s = negotiated(options);
            for (const auto& [command, no_reply] : answered) {
                INFO("step " << silenced_step << ", command index " << command.index());
                const auto out = s.handle(command);
                REQUIRE((no_reply == silenced_step ? is_silent(out) : is_one_continue(out)));
            }
        }
    }
    SECTION("no-reply wishes the MTA did not offer are not assumed") {
        Session s = negotiated(SessionOptions{}, 0x7f);  // a version-2 style offer
        REQUIRE((s.steps() & no_reply_steps) == 0);
        for (const auto& [command, no_reply] : answered) REQUIRE(is_one_continue(s.handle(command)));
    }
    SECTION("end of body asks for a verdict and sends nothing itself") {
        Session s = negotiated(wanting_replies());
        const auto out = s.handle(EndOfBody{});
        REQUIRE(out.judge);
        REQUIRE(out.replies.empty());
        REQUIRE_FALSE(out.close);
    }
    SECTION("quit closes without a reply") {
        Session s = negotiated(wanting_replies());
        const auto out = s.handle(Quit{});
        REQUIRE(out.close);
        REQUIRE(out.replies.empty());
        REQUIRE_FALSE(out.judge);
    }
}

TEST_CASE("End of body hands out the whole transaction", "[milter][session]") {
    const std::vector<Header> spaced = {{"From", " Alice <alice@example.net>"},
                                        {"Subject", " Hello\n\tthere"},
                                        {"X-Empty", ""}};
    const std::vector<Header> bare = {{"From", "Alice <alice@example.net>"},
                                      {"Subject", "Hello\n\tthere"},
                                      {"X-Empty", ""}};
    const std::string body = "Hi Bob,\r\n\r\nSee you.\r\n";

    SECTION("with leading spaces negotiated, values keep their space and lines are rebuilt exactly") {
        Session s = negotiated();
        REQUIRE((s.steps() & step::header_leading_space) != 0);
        feed_connection(s);
        feed_message(s, "4XyZ1", "<alice@example.net>", spaced, body);
        const auto out = s.handle(EndOfBody{"-- \r\n"});
        REQUIRE(out.judge);
        const Transaction& t = s.transaction();
        REQUIRE(t.client_name == "mail.example.net");
        REQUIRE(t.client_address == "192.0.2.10");
        REQUIRE(t.client_family == '4');
        REQUIRE(t.client_port == 54321);
        REQUIRE(t.helo == "mail.example.net");
        REQUIRE(t.sender == "<alice@example.net>");
        REQUIRE(t.recipients == std::vector<std::string>{"<bob@example.org>", "<carol@example.org>"});
        REQUIRE(t.macros.at("i") == "4XyZ1");
        REQUIRE(t.macros.at("{auth_authen}") == "alice");
        REQUIRE(t.macros.at("j") == "mx.example.org");
        REQUIRE(t.macros.at("{tls_version}") == "TLSv1.3");
        REQUIRE(t.macros.at("{rcpt_addr}") == "bob@example.org");
        REQUIRE(t.headers.size() == 3);
        REQUIRE(t.headers[1].name == "Subject");
        REQUIRE(t.headers[1].value == " Hello\n\tthere");
        const std::string expected =
            "From: Alice <alice@example.net>\r\nSubject: Hello\r\n\tthere\r\nX-Empty:\r\n\r\n" + body + "-- \r\n";
        REQUIRE(t.message == expected);
        REQUIRE(t.message_bytes == expected.size());
        REQUIRE_FALSE(t.truncated);
    }
    SECTION("without leading spaces negotiated, a space is put back after the colon") {
        SessionOptions options;
        options.steps &= ~step::header_leading_space;
        Session s = negotiated(options);
        feed_connection(s);
        feed_message(s, "4XyZ1", "<alice@example.net>", bare, body);
        s.handle(EndOfBody{});
        REQUIRE(s.transaction().headers[0].value == "Alice <alice@example.net>");
        REQUIRE(s.transaction().message ==
                "From: Alice <alice@example.net>\r\nSubject: Hello\r\n\tthere\r\nX-Empty: \r\n\r\n" + body);
    }
    SECTION("without an end-of-headers command the blank line still comes once") {
        Session s = negotiated();
        s.handle(Header{"Subject", " x"});
        s.handle(Body{"a\r\n"});
        s.handle(Body{"b\r\n"});
        s.handle(EndOfBody{});
        REQUIRE(s.transaction().message == "Subject: x\r\n\r\na\r\nb\r\n");
    }
    SECTION("the transaction stays readable after end of body until the next command") {
        Session s = negotiated();
        feed_connection(s);
        feed_message(s, "Q1", "<a@x>", spaced, body);
        s.handle(EndOfBody{});
        REQUIRE(s.transaction().sender == "<a@x>");
        REQUIRE(s.transaction().sender == "<a@x>");
        REQUIRE_FALSE(s.transaction().message.empty());
    }
}

TEST_CASE("Several messages share one connection", "[milter][session]") {
    Session s = negotiated();
    feed_connection(s);
    feed_message(s, "Q1", "<first@x>", {{"Subject", " one"}}, "first\r\n");
    REQUIRE(s.handle(EndOfBody{}).judge);
    REQUIRE(s.transaction().message == "Subject: one\r\n\r\nfirst\r\n");

    SECTION("a new message after end of body starts clean, with or without abort") {
        const bool with_abort = GENERATE(true, false);
        if (with_abort) REQUIRE(is_silent(s.handle(Abort{})));
        s.handle(Macros{'M', {{"i", "Q2"}}});
        s.handle(Mail{{"<second@x>"}});
        s.handle(Rcpt{{"<dave@example.org>"}});
        s.handle(Header{"Subject", " two"});
        s.handle(Body{"second\r\n"});
        REQUIRE(s.handle(EndOfBody{}).judge);
        const Transaction& t = s.transaction();
        REQUIRE(t.sender == "<second@x>");
        REQUIRE(t.recipients == std::vector<std::string>{"<dave@example.org>"});
        REQUIRE(t.headers.size() == 1);
        REQUIRE(t.headers[0].value == " two");
        REQUIRE(t.message == "Subject: two\r\n\r\nsecond\r\n");
        REQUIRE(t.message_bytes == t.message.size());
        REQUIRE(t.macros.at("i") == "Q2");
        REQUIRE(t.macros.count("{auth_authen}") == 0);
        REQUIRE(t.macros.count("{rcpt_addr}") == 0);
        REQUIRE(t.client_name == "mail.example.net");
        REQUIRE(t.helo == "mail.example.net");
        REQUIRE(t.macros.at("j") == "mx.example.org");
    }
}

TEST_CASE("A connection does not keep the buffer of its largest message", "[milter][session]") {
    // Otherwise every connection of a busy daemon ends up holding the largest
    // message it ever carried, and resident memory only grows.
    Session s = negotiated();
    feed_connection(s);
    feed_message(s, "Q1", "<big@x>", {{"Subject", " big"}}, std::string(1u << 20, 'x'));
    REQUIRE(s.handle(EndOfBody{}).judge);
    REQUIRE(s.transaction().message.size() > (1u << 20));
    const bool with_abort = GENERATE(true, false);
    if (with_abort) REQUIRE(is_silent(s.handle(Abort{})));
    feed_message(s, "Q2", "<small@x>", {{"Subject", " small"}}, "small\r\n");
    REQUIRE(s.handle(EndOfBody{}).judge);
    REQUIRE(s.transaction().message == "Subject: small\r\n\r\nsmall\r\n");
    REQUIRE(s.transaction().message.capacity() < 4096);
}

TEST_CASE("Abort mid-message forgets the message but not the client", "[milter][session]") {
    Session s = negotiated();
    feed_connection(s);
    feed_message(s, "Q1", "<a@x>", {{"Subject", " one"}}, "body\r\n");
    REQUIRE(is_silent(s.handle(Abort{})));

    const Transaction& t = s.transaction();
    REQUIRE(t.sender.empty());
    REQUIRE(t.recipients.empty());
    REQUIRE(t.headers.empty());
    REQUIRE(t.message.empty());
    REQUIRE(t.message_bytes == 0);
    REQUIRE(t.macros.count("i") == 0);
    REQUIRE(t.client_name == "mail.example.net");
    REQUIRE(t.client_address == "192.0.2.10");
    REQUIRE(t.helo == "mail.example.net");
    REQUIRE(t.macros.at("j") == "mx.example.org");
    REQUIRE(t.macros.at("{tls_version}") == "TLSv1.3");

    SECTION("the next message rebuilds its headers and blank line from scratch") {
        s.handle(Header{"Subject", " two"});
        s.handle(EndOfHeaders{});
        s.handle(EndOfBody{"x"});
        REQUIRE(s.transaction().message == "Subject: two\r\n\r\nx");
    }
    SECTION("a connection macro overridden in the message comes back") {
        s.handle(Macros{'M', {{"j", "other"}}});
        REQUIRE(s.transaction().macros.at("j") == "other");
        s.handle(Abort{});
        REQUIRE(s.transaction().macros.at("j") == "mx.example.org");
    }
}

TEST_CASE("Quit-new-connection forgets the connection but keeps the negotiation", "[milter][session]") {
    SessionOptions options;
    options.steps = step::no_reply_helo;
    Session s = negotiated(options);
    feed_connection(s);
    feed_message(s, "Q1", "<a@x>", {{"Subject", " one"}}, "body\r\n");
    REQUIRE(is_silent(s.handle(QuitNewConnection{})));

    const Transaction& t = s.transaction();
    REQUIRE(t.client_name.empty());
    REQUIRE(t.helo.empty());
    REQUIRE(t.sender.empty());
    REQUIRE(t.macros.empty());
    REQUIRE(t.message.empty());
    REQUIRE(s.negotiated());
    REQUIRE(s.steps() == step::no_reply_helo);
    REQUIRE(is_one_continue(s.handle(Connect{"next.example", '6', 25, "2001:db8::2"})));
    REQUIRE(is_silent(s.handle(Helo{"next.example"})));
    REQUIRE(s.transaction().client_address == "2001:db8::2");
    s.handle(Abort{});
    REQUIRE(s.transaction().macros.count("j") == 0);
}

TEST_CASE("Messages over the cap are truncated but fully counted", "[milter][session]") {
    SessionOptions options;
    options.max_message_bytes = 40;
    Session s = negotiated(options);
    s.handle(Header{"Subject", " 0123456789"});  // 21 bytes
    s.handle(Header{"To", " bob@example.org"});  // 21 bytes: over the cap
    s.handle(Header{"From", " a@x"});            // 11 bytes: still over
    s.handle(EndOfHeaders{});
    s.handle(Body{std::string(1000, 'b')});
    s.handle(EndOfBody{"end"});

    const Transaction& t = s.transaction();
    const std::string full = "Subject: 0123456789\r\nTo: bob@example.org\r\nFrom: a@x\r\n\r\n" +
                             std::string(1000, 'b') + "end";
    REQUIRE(t.truncated);
    REQUIRE(t.message == full.substr(0, 40));
    REQUIRE(t.message_bytes == full.size());
    REQUIRE(t.headers.size() == 1);
    REQUIRE(t.headers[0].name == "Subject");

    SECTION("the next message is counted from zero") {
        s.handle(Abort{});
        s.handle(Body{"small"});
        s.handle(EndOfBody{});
        REQUIRE_FALSE(s.transaction().truncated);
        REQUIRE(s.transaction().message == "\r\nsmall");
        REQUIRE(s.transaction().message_bytes == 7);
    }
}

TEST_CASE("A message of exactly the cap is not truncated", "[milter][session]") {
    SessionOptions options;
    options.max_message_bytes = 9;
    Session s = negotiated(options);
    s.handle(Body{"1234567"});
    s.handle(EndOfBody{});
    REQUIRE(s.transaction().message == "\r\n1234567");
    REQUIRE_FALSE(s.transaction().truncated);
    s.handle(Abort{});
    s.handle(Body{"12345678"});
    s.handle(EndOfBody{});
    REQUIRE(s.transaction().truncated);
    REQUIRE(s.transaction().message_bytes == 10);
}

TEST_CASE("A Postfix conversation decodes, runs and encodes end to end", "[milter][session]") {
    // One frame per command, written out by hand: length, letter, data.
    const std::string wire = "\x00\x00\x00\x0d"s "O" "\x00\x00\x00\x06"s "\x00\x00\x01\xff"s "\x00\x1f\xff\xff"s
                             "\x00\x00\x00\x10"s "C" "h\x00"s "4" "\x00\x19"s "192.0.2.1\x00"s
                             "\x00\x00\x00\x07"s "D" "M" "i\x00"s "Q7\x00"s
                             "\x00\x00\x00\x07"s "M" "<a@x>\x00"s
                             "\x00\x00\x00\x0a"s "L" "Subject\x00"s "\x00"s
                             "\x00\x00\x00\x04"s "B" "hi\n"
                             "\x00\x00\x00\x01"s "E";
    Decoder decoder;
    decoder.feed(wire);
    Session s;
    std::string out;
    bool judged = false;
    Command command;
    while (decoder.next(command) == Decoder::Status::command) {
        const auto outcome = s.handle(command);
        for (const auto& reply : outcome.replies) encode(reply, out);
        judged = judged || outcome.judge;
    }
    REQUIRE(decoder.error() == DecodeError::none);
    REQUIRE(decoder.buffered_bytes() == 0);
    REQUIRE(judged);
    // Only the negotiation reply: every other step was negotiated as no-reply.
    REQUIRE(out.size() == 17);
    REQUIRE(out.substr(0, 5) == "\x00\x00\x00\x0d"s "O");
    REQUIRE(s.transaction().sender == "<a@x>");
    REQUIRE(s.transaction().macros.at("i") == "Q7");
    REQUIRE(s.transaction().client_port == 25);
    REQUIRE(s.transaction().message == "Subject:\r\n\r\nhi\n");
}

// Regression: with header_leading_space negotiated, Postfix delivered our
// headers as "X-Mailsift-Status:Yes" (found by tests/integration/postfix_test.sh).
TEST_CASE("Header values get their leading space when the MTA expects it", "[milter][session]") {
    std::vector<Reply> replies{AddHeader{"X-Mailsift-Status", "Yes"}, ChangeHeader{1, "X-Mailsift-Status", ""},
                               ChangeHeader{1, "Subject", "[SPAM] hi"}, InsertHeader{0, "X-A", " already"}, Continue{}};
    SECTION("negotiated: non-empty values gain one space, deletions stay empty") {
        const Session s = negotiated();
        REQUIRE((s.steps() & step::header_leading_space) != 0);
        s.prepare(replies);
        REQUIRE(std::get<AddHeader>(replies[0]).value == " Yes");
        REQUIRE(std::get<ChangeHeader>(replies[1]).value.empty());
        REQUIRE(std::get<ChangeHeader>(replies[2]).value == " [SPAM] hi");
        REQUIRE(std::get<InsertHeader>(replies[3]).value == " already");
    }
    SECTION("not negotiated: values are left as they are") {
        const Session s = negotiated({}, all_steps & ~step::header_leading_space);
        s.prepare(replies);
        REQUIRE(std::get<AddHeader>(replies[0]).value == "Yes");
    }
}

TEST_CASE("Commands out of order are answered as usual and noted once per message", "[milter][session]") {
    Session s = negotiated(wanting_replies(), all_steps & ~no_reply_steps);
    SECTION("end of message before anything: judged, noted") {
        const auto out = s.handle(EndOfBody{});
        REQUIRE(out.judge);
        REQUIRE(out.note == "end of message before MAIL FROM");
        REQUIRE(s.transaction().message == "\r\n");
    }
    SECTION("a body before MAIL FROM is kept and noted, and only the first oddity is noted") {
        const auto body = s.handle(Body{"early"});
        REQUIRE(is_one_continue(body));
        REQUIRE(body.note == "body before MAIL FROM");
        const auto header = s.handle(Header{"Subject", "late"});
        REQUIRE(is_one_continue(header));
        REQUIRE(header.note.empty());  // the message already has its note
        REQUIRE(s.handle(EndOfBody{}).judge);
        SECTION("the next message starts without a note") {
            s.handle(Mail{{"<a@x>"}});
            const auto h = s.handle(Header{"Subject", "x"});
            REQUIRE(h.note.empty());
            REQUIRE(s.handle(EndOfHeaders{}).note.empty());
            REQUIRE(s.handle(Header{"X-Late", "y"}).note == "a header after the end of the headers");
        }
    }
    SECTION("a second MAIL FROM within one message, and RCPT before MAIL") {
        REQUIRE(s.handle(Rcpt{{"<b@y>"}}).note == "RCPT TO before MAIL FROM");
        s.handle(Abort{});
        REQUIRE(s.handle(Mail{{"<a@x>"}}).note.empty());
        const auto again = s.handle(Mail{{"<c@x>"}});
        REQUIRE(is_one_continue(again));
        REQUIRE(again.note == "MAIL FROM again within one message");
        REQUIRE(s.transaction().sender == "<c@x>");
    }
    SECTION("negotiating twice starts afresh, without a note") {
        const auto again = s.handle(Negotiate{6, all_actions, all_steps});
        REQUIRE(again.replies.size() == 1);
        REQUIRE(again.note.empty());
    }
    SECTION("the usual order gives no notes") {
        for (const Command& c : std::vector<Command>{Mail{{"<a@x>"}}, Rcpt{{"<b@y>"}}, Data{}, Header{"Subject", "x"},
                                                     EndOfHeaders{}, Body{"b"}, EndOfBody{}}) {
            REQUIRE(s.handle(c).note.empty());
        }
    }
}

TEST_CASE("The headers and recipients and macros kept per message are capped", "[milter][session]") {
    SessionOptions options;
    options.max_headers = 3;
    options.max_recipients = 2;
    options.max_macros = 4;
    Session s = negotiated(options);
    s.handle(Macros{'C', {{"j", "mx"}}});
    s.handle(Mail{{"<a@x>"}});
    for (int i = 0; i < 5; ++i) s.handle(Rcpt{{"<r" + std::to_string(i) + "@y>"}});
    s.handle(Macros{'M', {{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}, {"j", "mx2"}}});
    for (int i = 0; i < 10; ++i) s.handle(Header{"H" + std::to_string(i), "v"});
    s.handle(EndOfHeaders{});
    REQUIRE(s.handle(EndOfBody{}).judge);
    const Transaction& t = s.transaction();
    REQUIRE(t.headers.size() == 3);
    REQUIRE(t.headers[2].name == "H2");
    REQUIRE(t.header_count == 10);
    // Every header line is still part of the message text.
    REQUIRE(t.message.find("H9:v\r\n\r\n") != std::string::npos);
    REQUIRE(t.recipients == std::vector<std::string>{"<r0@y>", "<r1@y>"});
    REQUIRE(t.macros.size() == 4);
    REQUIRE(t.macros.at("j") == "mx2");  // a known name is still updated
    REQUIRE(t.macros.count("d") == 0);
}

TEST_CASE("Watched header fields are all counted, past the caps on kept headers and bytes", "[milter][session][security]") {
    SessionOptions options;
    options.max_headers = 3;
    options.max_message_bytes = 200;
    options.watched_header_prefix = "X-Mailsift-";
    options.max_watched_names = 3;
    Session s = negotiated(options);
    s.handle(Mail{{"<a@x>"}});
    s.handle(Header{"X-Mailsift-Status", "forged 1"});
    for (int i = 0; i < 10; ++i) s.handle(Header{"H" + std::to_string(i), std::string(40, 'v')});
    // Past max_headers and past max_message_bytes: still counted, under the name first sent.
    s.handle(Header{"x-mailsift-STATUS", "forged 2"});
    s.handle(Header{"X-Mailsift-Signature", "0123"});
    s.handle(Header{"X-Mailsift-Reasons", "w:free"});
    s.handle(Header{"X-Other", "not watched"});
    s.handle(EndOfHeaders{});
    REQUIRE(s.handle(EndOfBody{}).judge);
    const Transaction& t = s.transaction();
    REQUIRE(t.truncated);
    REQUIRE(t.headers.size() == 3);
    using Watched = std::vector<std::pair<std::string, std::uint32_t>>;
    REQUIRE(t.watched == Watched{{"X-Mailsift-Status", 2}, {"X-Mailsift-Signature", 1}, {"X-Mailsift-Reasons", 1}});
    REQUIRE_FALSE(t.watched_overflow);

    // A fourth distinct name does not fit: the owner is told.
    s.handle(Mail{{"<a@x>"}});
    for (const char* n : {"X-Mailsift-A", "X-Mailsift-B", "X-Mailsift-C", "X-Mailsift-D"}) s.handle(Header{n, "v"});
    REQUIRE(s.handle(EndOfBody{}).judge);
    REQUIRE(s.transaction().watched.size() == 3);
    REQUIRE(s.transaction().watched_overflow);

    // The next message starts with nothing watched.
    s.handle(Mail{{"<a@x>"}});
    s.handle(Header{"Subject", "hi"});
    REQUIRE(s.handle(EndOfBody{}).judge);
    REQUIRE(s.transaction().watched.empty());
    REQUIRE_FALSE(s.transaction().watched_overflow);
}
