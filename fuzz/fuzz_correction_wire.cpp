// libFuzzer harness: the bytes between `mailsift correct` and mailsiftd's
// correction socket (engine/correction_wire.hpp) on arbitrary input, read as
// mailsiftd reads a request and as the command reads an answer.
//
// Invariants (correction_wire.hpp):
//   - a request or an answer is read whole or refused with WireError; nothing
//     else escapes;
//   - an accepted request holds the count its head announced, each message
//     within max_message_bytes and no longer than its stated size, and each
//     a message or a signature; the body is the size the head announced;
//   - what is accepted, written again and read again is the same request
//     (and the same answer): the format has one meaning;
//   - an accepted refusal holds no control character (the command prints it).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "mailsift/engine/correction_wire.hpp"

namespace engine = mailsift::engine;
using mailsift::fuzz::printable;

namespace {

constexpr std::size_t max_message = 4096;

bool same(const engine::CorrectionRequest& a, const engine::CorrectionRequest& b) {
    if (a.action != b.action || a.user != b.user || a.inputs.size() != b.inputs.size()) return false;
    for (std::size_t i = 0; i < a.inputs.size(); ++i) {
        const auto &x = a.inputs[i], &y = b.inputs[i];
        if (x.signature != y.signature || x.raw != y.raw || (!x.signature && x.size_bytes != y.size_bytes)) return false;
    }
    return true;
}

bool same(const engine::CorrectionResult& a, const engine::CorrectionResult& b) {
    if (a.undo != b.undo) return false;
    if (a.undo) return a.undone.result == b.undone.result && a.undone.to == b.undone.to && a.undone.was == b.undone.was;
    return a.correct.problem == b.correct.problem && a.correct.result == b.correct.result &&
           a.correct.by_signature == b.correct.by_signature && a.correct.confirmed == b.correct.confirmed &&
           a.correct.deferred == b.correct.deferred;
}

// mailsiftd's reading: the first line, then the body it announces.
void request(std::string_view bytes) {
    const auto nl = bytes.find('\n');
    if (nl == std::string_view::npos) return;
    const std::size_t body_max = engine::max_correction_body_bytes(max_message);
    engine::RequestHead head;
    try {
        head = engine::parse_request_head(bytes.substr(0, nl), body_max);
    } catch (const engine::WireError&) {
        return;
    }
    FUZZ_CHECK("head-bounds", head.count >= 1 && head.count <= engine::max_correction_inputs && head.body_bytes <= body_max,
               printable(std::string(bytes.substr(0, nl))));
    const std::string_view body = bytes.substr(nl + 1);
    engine::CorrectionRequest r;
    try {
        r = engine::parse_request_body(head, body, max_message);
    } catch (const engine::WireError&) {
        return;
    }
    FUZZ_CHECK("body-size", body.size() == head.body_bytes, printable(std::string(bytes)));
    FUZZ_CHECK("count", r.inputs.size() == head.count, printable(std::string(bytes)));
    for (const auto& in : r.inputs) {
        FUZZ_CHECK("message-bounds", in.signature || (in.raw.size() <= max_message && in.raw.size() <= in.size_bytes),
                   printable(std::string(bytes)));
        FUZZ_CHECK("one-kind", !in.signature || in.raw.empty(), printable(std::string(bytes)));
    }
    const std::string again = engine::encode_request(r);
    const auto nl2 = again.find('\n');
    const auto head2 = engine::parse_request_head(std::string_view(again).substr(0, nl2), body_max);
    const auto r2 = engine::parse_request_body(head2, std::string_view(again).substr(nl2 + 1), max_message);
    FUZZ_CHECK("request-round-trip", same(r, r2), printable(std::string(bytes)));
}

// The command's reading of an answer for `expected` inputs.
void answer(std::string_view bytes, std::size_t expected) {
    engine::CorrectionAnswer a;
    try {
        a = engine::parse_answer(bytes, expected);
    } catch (const engine::WireError&) {
        return;
    }
    if (!a.refused.empty()) {
        for (const char ch : a.refused) {
            FUZZ_CHECK("refusal-control", static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7f, printable(std::string(bytes)));
        }
        return;
    }
    FUZZ_CHECK("answer-count", a.results.size() == expected, printable(std::string(bytes)));
    const auto b = engine::parse_answer(engine::encode_answer(a.results), expected);
    FUZZ_CHECK("answer-round-trip", b.refused.empty() && b.results.size() == a.results.size(), printable(std::string(bytes)));
    for (std::size_t i = 0; i < a.results.size(); ++i) {
        FUZZ_CHECK("answer-round-trip", same(a.results[i], b.results[i]), printable(std::string(bytes)));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (data[0] & 1) {
        request(bytes);
    } else {
        answer(bytes, data[0] >> 1 & 0x3f);
    }
    return 0;
}
