// The bytes between `mailsift correct` and mailsiftd's correction socket
// (engine/correction_wire.hpp): what one side writes the other reads back as
// it was, and what is off the format is refused, never half read.
#include <catch2/catch.hpp>

#include "mailsift/engine/correction_wire.hpp"
#include "mailsift/engine/signature.hpp"

namespace engine = mailsift::engine;
namespace store = mailsift::store;

namespace {

engine::CorrectionRequest read_request(const std::string& bytes, std::size_t max_message_bytes = 4 << 20) {
    const auto nl = bytes.find('\n');
    REQUIRE(nl != std::string::npos);
    const auto head = engine::parse_request_head(std::string_view(bytes).substr(0, nl),
                                                 engine::max_correction_body_bytes(max_message_bytes));
    return engine::parse_request_body(head, std::string_view(bytes).substr(nl + 1), max_message_bytes);
}

}  // namespace

TEST_CASE("A correction request reads back as it was written", "[correction_wire]") {
    engine::CorrectionRequest r;
    r.action = engine::CorrectionAction::undo;
    engine::CorrectionInput sig;
    sig.signature = engine::parse_signature("0123456789abcdef0123456789abcdef");
    engine::CorrectionInput msg;
    msg.raw = std::string("From: a@b\nSubject: x\n\nmessage 9 9\nsignature \n\0bytes", 48);
    msg.size_bytes = 1000;  // a prefix of a larger message
    r.inputs = {sig, msg, sig};
    r.user = "alice@example.org";
    const auto back = read_request(engine::encode_request(r));
    REQUIRE(back.action == engine::CorrectionAction::undo);
    CHECK(back.user == "alice@example.org");
    r.user.clear();
    CHECK(read_request(engine::encode_request(r)).user.empty());
    REQUIRE(back.inputs.size() == 3);
    CHECK(back.inputs[0].signature == sig.signature);
    CHECK(back.inputs[2].signature == sig.signature);
    CHECK(!back.inputs[1].signature);
    CHECK(back.inputs[1].raw == msg.raw);
    CHECK(back.inputs[1].size_bytes == 1000);
}

TEST_CASE("An answer reads back as it was written, and a refusal as one clean line", "[correction_wire]") {
    std::vector<engine::CorrectionResult> results(2);
    results[0].correct.result = store::LearnResult::moved;
    results[0].correct.by_signature = true;
    results[0].correct.deferred = true;
    results[1].undo = true;
    results[1].undone.result = engine::Trainer::UndoOutcome::Result::undone;
    results[1].undone.to = store::Class::spam;
    results[1].undone.was = store::Class::ham;
    const auto a = engine::parse_answer(engine::encode_answer(results), 2);
    REQUIRE(a.refused.empty());
    REQUIRE(a.results.size() == 2);
    CHECK(!a.results[0].undo);
    CHECK(a.results[0].correct.result == store::LearnResult::moved);
    CHECK(a.results[0].correct.by_signature);
    CHECK(!a.results[0].correct.confirmed);
    CHECK(a.results[0].correct.deferred);
    CHECK(a.results[1].undo);
    CHECK(a.results[1].undone.result == engine::Trainer::UndoOutcome::Result::undone);
    CHECK(a.results[1].undone.to == store::Class::spam);
    CHECK(a.results[1].undone.was == store::Class::ham);
    // For another number of inputs: refused.
    CHECK_THROWS_AS(engine::parse_answer(engine::encode_answer(results), 3), engine::WireError);

    const auto r = engine::parse_answer(engine::encode_refusal("database is locked\n\x1b[31mred"), 1);
    CHECK(r.refused == "database is locked  [31mred");
    CHECK_THROWS_AS(engine::parse_answer("MAILSIFT-CORRECT 1 error \x1b[2J\n", 1), engine::WireError);
}

TEST_CASE("A request off the format is refused whole", "[correction_wire]") {
    const std::size_t body_max = engine::max_correction_body_bytes(4 << 20);
    for (const char* head : {"", "MAILSIFT-CORRECT 2 spam 1 5", "MAILSIFT-CORRECT 1 maybe 1 5", "MAILSIFT-CORRECT 1 spam 0 5",
                             "MAILSIFT-CORRECT 1 spam 65 5", "MAILSIFT-CORRECT 1 spam 1", 
                             "MAILSIFT-CORRECT 1 spam 1 -5", "MAILSIFT-CORRECT 1 spam 1 5 ", "MAILSIFT-CORRECT 1 spam  1 5",
                             "MAILSIFT-CORRECT 1 spam 1 5 a@b c", "MAILSIFT-CORRECT 1 spam 1 5 a\x01b",
                             "MAILSIFT-CORRECT 1 spam 1 99999999999999999999999"}) {
        INFO(head);
        CHECK_THROWS_AS(engine::parse_request_head(head, body_max), engine::WireError);
    }
    CHECK_THROWS_AS(engine::parse_request_head("MAILSIFT-CORRECT 1 spam 1 " + std::to_string(body_max + 1), body_max),
                    engine::WireError);
    const auto body = [](std::size_t count, const std::string& b, std::size_t max_message = 100) {
        return engine::parse_request_body({engine::CorrectionAction::spam, count, b.size(), {}}, b, max_message);
    };
    CHECK(body(1, "message 3 3\nabc").inputs.at(0).raw == "abc");
    for (const std::string& b : std::vector<std::string>{"message 3 3\nab", "message 3 3\nabcd", "message 2 3\nabc", "message 3\nabc",
                                "message 200 101\n" + std::string(101, 'x'), "signature 0123\n", "signature\n",
                                "nothing\n", "message 3 3 \nabc", "message 3 3"}) {
        INFO(b);
        CHECK_THROWS_AS(body(1, b), engine::WireError);
    }
    CHECK_THROWS_AS(body(2, "message 3 3\nabc"), engine::WireError);  // an input missing
    // The body the head announced, and no other length.
    CHECK_THROWS_AS(engine::parse_request_body({engine::CorrectionAction::spam, 1, 20, {}}, "message 3 3\nabc", 100),
                    engine::WireError);
}
