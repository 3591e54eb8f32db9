// The bytes of a correction between `mailsift correct` and mailsiftd; see correction_wire.hpp.
#include "mailsift/engine/correction_wire.hpp"
#include "mailsift/engine/scan_record.hpp"
#include "mailsift/engine/signature.hpp"

#include <charconv>
#include <limits>

namespace mailsift::engine {
namespace {

constexpr std::string_view magic = "MAILSIFT-CORRECT 1 ";

// The words of a line, split at single spaces; more than `most` is an error.
std::vector<std::string_view> words(std::string_view line, std::size_t most) {
    std::vector<std::string_view> out;
    while (!line.empty()) {
        const auto space = line.find(' ');
        out.push_back(line.substr(0, space));
        if (out.size() > most) throw WireError("too many fields in a line");
        if (space == std::string_view::npos) break;
        line.remove_prefix(space + 1);
        if (line.empty()) throw WireError("a line ends in a space");
    }
    return out;
}

std::size_t whole(std::string_view text, std::size_t max, const char* what) {
    std::size_t v = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || p != text.data() + text.size() || v > max) {
        throw WireError(std::string("bad ") + what);
    }
    return v;
}

bool flag(std::string_view text) { return whole(text, 1, "flag") == 1; }

// The next line of `rest` (without its '\n'), which is consumed.
std::string_view next_line(std::string_view& rest) {
    const auto nl = rest.find('\n');
    if (nl == std::string_view::npos) throw WireError("a line without its end");
    const std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
    return line;
}

const char* class_name(store::Class c) { return c == store::Class::spam ? "spam" : "ham"; }

store::Class class_of(std::string_view text) {
    if (text == "spam") return store::Class::spam;
    if (text == "ham") return store::Class::ham;
    throw WireError("bad class");
}

}  // namespace

std::string encode_request(const CorrectionRequest& request) {
    std::string body;
    for (const auto& in : request.inputs) {
        if (in.signature) {
            body += "signature " + signature_text(*in.signature) + "\n";
        } else {
            body += "message " + std::to_string(in.size_bytes) + " " + std::to_string(in.raw.size()) + "\n";
            body += in.raw;
        }
    }
    return std::string(magic) + to_string(request.action) + " " + std::to_string(request.inputs.size()) + " " +
           std::to_string(body.size()) + (request.user.empty() ? "" : " " + request.user) + "\n" + body;
}

RequestHead parse_request_head(std::string_view line, std::size_t max_body_bytes) {
    if (!line.starts_with(magic)) throw WireError("not a correction request (or another version)");
    line.remove_prefix(magic.size());
    const auto w = words(line, 4);
    if (w.size() < 3) throw WireError("a request's first line has ACTION COUNT BODY_BYTES [USER]");
    RequestHead head;
    if (w[0] == "spam") head.action = CorrectionAction::spam;
    else if (w[0] == "ham") head.action = CorrectionAction::ham;
    else if (w[0] == "undo") head.action = CorrectionAction::undo;
    else throw WireError("unknown action");
    head.count = whole(w[1], max_correction_inputs, "count of inputs");
    if (head.count == 0) throw WireError("a request without inputs");
    head.body_bytes = whole(w[2], max_body_bytes, "body size (or larger than this mailsiftd takes)");
    if (w.size() == 4) {
        if (!valid_user(w[3])) throw WireError("bad user");
        head.user = std::string(w[3]);
    }
    return head;
}

CorrectionRequest parse_request_body(const RequestHead& head, std::string_view body, std::size_t max_message_bytes) {
    if (body.size() != head.body_bytes) throw WireError("body shorter than announced");
    CorrectionRequest request;
    request.action = head.action;
    request.user = head.user;
    for (std::size_t i = 0; i < head.count; ++i) {
        const auto w = words(next_line(body), 3);
        CorrectionInput in;
        if (w.size() == 2 && w[0] == "signature") {
            in.signature = parse_signature(w[1]);
            if (!in.signature) throw WireError("bad signature");
        } else if (w.size() == 3 && w[0] == "message") {
            in.size_bytes = whole(w[1], std::numeric_limits<std::size_t>::max(), "message size");
            const std::size_t length = whole(w[2], max_message_bytes, "message length (or over max_message_bytes)");
            if (length > body.size()) throw WireError("a message longer than the body");
            if (in.size_bytes < length) throw WireError("a message's size below its length");
            in.raw.assign(body.substr(0, length));
            body.remove_prefix(length);
        } else {
            throw WireError("an input is 'signature HEX' or 'message SIZE LENGTH'");
        }
        request.inputs.push_back(std::move(in));
    }
    if (!body.empty()) throw WireError("bytes after the last input");
    return request;
}

std::string encode_answer(const std::vector<CorrectionResult>& results) {
    std::string out = std::string(magic) + "ok " + std::to_string(results.size()) + "\n";
    for (const auto& r : results) {
        if (r.undo) {
            out += "undo " + std::to_string(static_cast<unsigned>(r.undone.result)) + " " + class_name(r.undone.to) + " " +
                   (r.undone.was ? class_name(*r.undone.was) : "none") + "\n";
        } else {
            const auto& c = r.correct;
            out += "correct " + std::to_string(static_cast<unsigned>(c.problem)) + " " +
                   std::to_string(static_cast<unsigned>(c.result)) + " " + (c.by_signature ? "1 " : "0 ") +
                   (c.confirmed ? "1 " : "0 ") + (c.deferred ? "1 " : "0 ") + (c.superseded ? "1" : "0") + "\n";
        }
    }
    return out;
}

std::string encode_refusal(std::string_view why) {
    std::string line;
    for (const char ch : why.substr(0, 1000)) {
        const auto u = static_cast<unsigned char>(ch);
        line.push_back(u < 0x20 || u == 0x7F ? ' ' : ch);
    }
    return std::string(magic) + "error " + line + "\n";
}

CorrectionAnswer parse_answer(std::string_view text, std::size_t expected) {
    if (text.size() > max_correction_answer_bytes) throw WireError("answer too long");
    const std::string_view first = next_line(text);
    if (!first.starts_with(magic)) throw WireError("not a correction answer (or another version)");
    const std::string_view status = first.substr(magic.size());
    CorrectionAnswer answer;
    if (status.starts_with("error ")) {
        answer.refused = std::string(status.substr(6));
        if (answer.refused.empty() || !text.empty()) throw WireError("bad refusal");
        for (const char ch : answer.refused) {
            if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F) throw WireError("a control character in a refusal");
        }
        return answer;
    }
    if (!status.starts_with("ok ") || whole(status.substr(3), max_correction_inputs, "count") != expected) {
        throw WireError("an answer for another number of inputs");
    }
    for (std::size_t i = 0; i < expected; ++i) {
        const auto w = words(next_line(text), 7);
        CorrectionResult r;
        if (w.size() == 4 && w[0] == "undo") {
            r.undo = true;
            r.undone.result = static_cast<Trainer::UndoOutcome::Result>(
                whole(w[1], static_cast<std::size_t>(Trainer::UndoOutcome::Result::untagged), "undo result"));
            r.undone.to = class_of(w[2]);
            if (w[3] != "none") r.undone.was = class_of(w[3]);
        } else if ((w.size() == 6 || w.size() == 7) && w[0] == "correct") {  // 6: a mailsiftd from before superseded
            auto& c = r.correct;
            c.problem = static_cast<MessageProblem>(
                whole(w[1], static_cast<std::size_t>(MessageProblem::truncated_mime), "message problem"));
            c.result = static_cast<store::LearnResult>(
                whole(w[2], static_cast<std::size_t>(store::LearnResult::moved), "learn result"));
            c.by_signature = flag(w[3]);
            c.confirmed = flag(w[4]);
            c.deferred = flag(w[5]);
            c.superseded = w.size() == 7 && flag(w[6]);
        } else {
            throw WireError("a result is a 'correct' or an 'undo' line");
        }
        answer.results.push_back(r);
    }
    if (!text.empty()) throw WireError("bytes after the last result");
    return answer;
}

}  // namespace mailsift::engine
