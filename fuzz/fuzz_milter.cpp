// libFuzzer harness: the milter codec (protocol.hpp) and session state machine
// (session.hpp), driven the way mailsiftd drives them.
//
// The input is the byte stream an MTA would send. It is fed to a Decoder in
// pieces cut at points derived from the input (whole, a few random cuts, or one
// byte at a time), every decoded command goes to a Session, and every
// end-of-body is answered by a trivial deterministic stand-in for the daemon's
// verdict. Invariants, all from the headers' contracts:
//  codec
//   - the decoder agrees with a reference reading of the wire format: the same
//     commands with the same fields, the same error (frame over the cap, empty
//     frame, unknown letter, malformed layout) for the same frame, whatever the
//     cut points;
//   - each command or error is reported at the first next() after the bytes
//     that decide it arrived (a length over the cap as soon as its 4 bytes are
//     in, before the frame is waited for); after an error it stays failed and
//     keeps nothing; buffered_bytes() is the incomplete tail;
//   - every reply encodes to exactly one well-formed frame whose fields read
//     back (strings cut at their first NUL); the negotiate reply decodes back
//     through the Decoder itself;
//   - format_smtp_reply accepts exactly the valid code/status/text triples and
//     formats them as documented.
//  session
//   - a reference model of the documented rules: which commands get a reply,
//     negotiation results, close and judge, and at each end of body the whole
//     Transaction (client, HELO, sender, recipients, macros by stage, headers,
//     the rebuilt message, its size, the cap and `truncated`);
//   - handle() never returns anything but NegotiateReply and Continue: edits
//     and verdicts go out only after EndOfBody, from the owner;
//   - prepare() gives header values their leading space exactly when
//     header_leading_space was negotiated.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "fuzz_support.hpp"
#include "mailsift/milter/protocol.hpp"
#include "mailsift/milter/session.hpp"

namespace milter = mailsift::milter;
using mailsift::fuzz::Choices;
using mailsift::fuzz::printable;

namespace {

// ---- reference reading of the MTA -> filter wire format ----

std::uint32_t load_u32(std::string_view s) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[i]);
    return v;
}

std::string cut_at_nul(std::string_view s) { return std::string(s.substr(0, s.find('\0'))); }

bool known_letter(char c) {
    return std::string_view("ABCDEHKLMNOQRTU").find(c) != std::string_view::npos;
}

// Canonical text of a command, to compare the decoder with the reference.
struct Dump {
    std::string out;
    void str(std::string_view s) {
        out += '|';
        out += std::to_string(s.size());
        out += ':';
        out.append(s);
    }
    void num(std::uint64_t v) {
        out += '|';
        out += std::to_string(v);
    }
};

std::string dump(const milter::Command& command) {
    Dump d;
    std::visit(
        [&d](const auto& c) {
            using T = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<T, milter::Negotiate>) {
                d.out = "O";
                d.num(c.version);
                d.num(c.actions);
                d.num(c.steps);
            } else if constexpr (std::is_same_v<T, milter::Macros>) {
                d.out = "D";
                d.str(std::string_view(&c.stage, 1));
                for (const auto& [name, value] : c.values) {
                    d.str(name);
                    d.str(value);
                }
            } else if constexpr (std::is_same_v<T, milter::Connect>) {
                d.out = "C";
                d.str(c.hostname);
                d.str(std::string_view(&c.family, 1));
                d.num(c.port);
                d.str(c.address);
            } else if constexpr (std::is_same_v<T, milter::Helo>) {
                d.out = "H";
                d.str(c.name);
            } else if constexpr (std::is_same_v<T, milter::Mail>) {
                d.out = "M";
                for (const auto& a : c.args) d.str(a);
            } else if constexpr (std::is_same_v<T, milter::Rcpt>) {
                d.out = "R";
                for (const auto& a : c.args) d.str(a);
            } else if constexpr (std::is_same_v<T, milter::Data>) {
                d.out = "T";
            } else if constexpr (std::is_same_v<T, milter::Unknown>) {
                d.out = "U";
                d.str(c.command);
            } else if constexpr (std::is_same_v<T, milter::Header>) {
                d.out = "L";
                d.str(c.name);
                d.str(c.value);
            } else if constexpr (std::is_same_v<T, milter::EndOfHeaders>) {
                d.out = "N";
            } else if constexpr (std::is_same_v<T, milter::Body>) {
                d.out = "B";
                d.str(c.chunk);
            } else if constexpr (std::is_same_v<T, milter::EndOfBody>) {
                d.out = "E";
                d.str(c.chunk);
            } else if constexpr (std::is_same_v<T, milter::Abort>) {
                d.out = "A";
            } else if constexpr (std::is_same_v<T, milter::Quit>) {
                d.out = "Q";
            } else if constexpr (std::is_same_v<T, milter::QuitNewConnection>) {
                d.out = "K";
            }
        },
        command);
    return d.out;
}

// Reads fields of one frame's data the way the protocol lays them out.
class Fields {
public:
    explicit Fields(std::string_view data) : data_(data) {}
    bool done() const { return data_.empty(); }
    bool byte(char& c) {
        if (data_.empty()) return false;
        c = data_.front();
        data_.remove_prefix(1);
        return true;
    }
    bool u16(std::uint16_t& v) {
        if (data_.size() < 2) return false;
        v = static_cast<std::uint16_t>(static_cast<unsigned char>(data_[0]) * 256u + static_cast<unsigned char>(data_[1]));
        data_.remove_prefix(2);
        return true;
    }
    bool u32(std::uint32_t& v) {
        if (data_.size() < 4) return false;
        v = load_u32(data_);
        data_.remove_prefix(4);
        return true;
    }
    bool cstr(std::string& s) {
        const std::size_t nul = data_.find('\0');
        if (nul == std::string_view::npos) return false;
        s.assign(data_.substr(0, nul));
        data_.remove_prefix(nul + 1);
        return true;
    }
    std::string_view rest() const { return data_; }

private:
    std::string_view data_;
};

// The command a complete frame holds by the documented layouts, or nothing
// when the layout is broken (DecodeError::malformed).
std::optional<milter::Command> reference_command(char letter, std::string_view data) {
    Fields f(data);
    switch (letter) {
        case 'O': {
            milter::Negotiate n;
            if (!f.u32(n.version) || !f.u32(n.actions) || !f.u32(n.steps)) return std::nullopt;
            return n;  // bytes after the three numbers are ignored
        }
        case 'D': {
            milter::Macros m;
            if (!f.byte(m.stage)) return std::nullopt;
            while (!f.done()) {
                std::string name, value;
                if (!f.cstr(name) || !f.cstr(value)) return std::nullopt;
                m.values.emplace_back(std::move(name), std::move(value));
            }
            return m;
        }
        case 'C': {
            milter::Connect c;
            if (!f.cstr(c.hostname) || !f.byte(c.family)) return std::nullopt;
            if (c.family == 'U') {
                if (!f.done()) return std::nullopt;
                return c;
            }
            if (c.family != '4' && c.family != '6' && c.family != 'L') return std::nullopt;
            if (!f.u16(c.port) || !f.cstr(c.address) || !f.done()) return std::nullopt;
            return c;
        }
        case 'H': {
            milter::Helo h;
            if (!f.cstr(h.name) || !f.done()) return std::nullopt;
            return h;
        }
        case 'M':
        case 'R': {
            std::vector<std::string> args;
            do {
                std::string a;
                if (!f.cstr(a)) return std::nullopt;
                args.push_back(std::move(a));
            } while (!f.done());
            if (letter == 'M') return milter::Mail{std::move(args)};
            return milter::Rcpt{std::move(args)};
        }
        case 'U': {
            milter::Unknown u;
            if (!f.cstr(u.command) || !f.done()) return std::nullopt;
            return u;
        }
        case 'L': {
            milter::Header h;
            if (!f.cstr(h.name) || !f.cstr(h.value) || !f.done()) return std::nullopt;
            return h;
        }
        case 'B': return milter::Body{std::string(data)};
        case 'E': return milter::EndOfBody{std::string(data)};
        case 'T': return milter::Data{};
        case 'N': return milter::EndOfHeaders{};
        case 'A': return milter::Abort{};
        case 'Q': return milter::Quit{};
        case 'K': return milter::QuitNewConnection{};
        default: return std::nullopt;
    }
}

// What the decoder must report, in order, for a whole stream.
struct Expected {
    struct Event {
        bool command = false;             // else the final error
        std::string dump;                 // command
        milter::DecodeError error{};      // error
        std::size_t decided_at = 0;       // stream offset after which the event is known
    };
    std::vector<Event> events;            // commands, then at most one error
    std::size_t tail = 0;                 // bytes of an incomplete frame when no error
};

Expected reference_decode(std::string_view s, std::size_t cap) {
    Expected e;
    std::size_t pos = 0;
    auto error = [&](milter::DecodeError err, std::size_t at) {
        e.events.push_back({false, {}, err, at});
        e.tail = 0;
    };
    for (;;) {
        const std::size_t left = s.size() - pos;
        if (left < 4) {
            e.tail = left;
            return e;
        }
        const std::uint32_t length = load_u32(s.substr(pos));
        if (length > cap) {
            error(milter::DecodeError::frame_too_large, pos + 4);
            return e;
        }
        if (length == 0) {
            error(milter::DecodeError::empty_frame, pos + 4);
            return e;
        }
        if (left == 4) {
            e.tail = left;
            return e;
        }
        const char letter = s[pos + 4];
        if (!known_letter(letter)) {
            error(milter::DecodeError::unknown_command, pos + 5);
            return e;
        }
        if (left - 4 < length) {
            e.tail = left;
            return e;
        }
        const std::size_t end = pos + 4 + length;
        const auto command = reference_command(letter, s.substr(pos + 5, length - 1));
        if (!command) {
            error(milter::DecodeError::malformed, end);
            return e;
        }
        e.events.push_back({true, dump(*command), {}, end});
        pos = end;
    }
}

// ---- reference model of the session (session.hpp's rules) ----

struct Model {
    milter::SessionOptions options;
    bool negotiated = false;
    std::uint32_t actions = 0, steps = 0;
    // connection
    std::string client_name, client_address, helo;
    char family = 'U';
    std::uint16_t port = 0;
    std::map<std::string, std::string> connection_macros;
    // message
    std::map<std::string, std::string> macros;
    std::string sender;
    std::vector<std::string> recipients;
    std::vector<milter::Header> headers;
    std::string message;  // uncapped
    bool headers_done = false;
    bool judged = false;

    void reset_message() {
        macros = connection_macros;
        sender.clear();
        recipients.clear();
        headers.clear();
        message.clear();
        headers_done = false;
    }
    void reset_connection() {
        client_name.clear();
        client_address.clear();
        helo.clear();
        family = 'U';
        port = 0;
        connection_macros.clear();
        reset_message();
        judged = false;
    }
    void end_headers() {
        if (headers_done) return;
        headers_done = true;
        message += "\r\n";
    }

    struct Outcome {
        std::vector<milter::Reply> replies;
        bool judge = false;
        bool close = false;
    };

    Outcome continue_unless(std::uint32_t no_reply_step) const {
        Outcome o;
        if ((steps & no_reply_step) == 0) o.replies.emplace_back(milter::Continue{});
        return o;
    }

    Outcome handle(const milter::Command& command) {
        if (!negotiated && !std::holds_alternative<milter::Negotiate>(command)) return {{}, false, true};
        if (judged) {
            reset_message();
            judged = false;
        }
        if (const auto* n = std::get_if<milter::Negotiate>(&command)) {
            if (n->version < 2) return {{}, false, true};
            reset_connection();
            negotiated = true;
            actions = n->actions & options.actions;
            steps = n->steps & options.steps;
            Outcome o;
            o.replies.emplace_back(milter::NegotiateReply{std::min(n->version, milter::protocol_version), actions, steps});
            return o;
        }
        if (const auto* m = std::get_if<milter::Macros>(&command)) {
            for (const auto& [name, value] : m->values) {
                macros[name] = value;
                if (m->stage == 'C' || m->stage == 'H') connection_macros[name] = value;
            }
            return {};
        }
        if (const auto* c = std::get_if<milter::Connect>(&command)) {
            client_name = c->hostname;
            client_address = c->address;
            family = c->family;
            port = c->port;
            return continue_unless(milter::step::no_reply_connect);
        }
        if (const auto* h = std::get_if<milter::Helo>(&command)) {
            helo = h->name;
            return continue_unless(milter::step::no_reply_helo);
        }
        if (const auto* m = std::get_if<milter::Mail>(&command)) {
            sender = m->args.empty() ? std::string() : m->args.front();
            return continue_unless(milter::step::no_reply_mail);
        }
        if (const auto* r = std::get_if<milter::Rcpt>(&command)) {
            if (!r->args.empty()) recipients.push_back(r->args.front());
            return continue_unless(milter::step::no_reply_rcpt);
        }
        if (std::holds_alternative<milter::Data>(command)) return continue_unless(milter::step::no_reply_data);
        if (std::holds_alternative<milter::Unknown>(command)) return continue_unless(milter::step::no_reply_unknown);
        if (const auto* h = std::get_if<milter::Header>(&command)) {
            const bool leading_space = (steps & milter::step::header_leading_space) != 0;
            message += h->name;
            message += leading_space ? ":" : ": ";
            for (std::size_t i = 0; i < h->value.size(); ++i) {
                if (h->value[i] == '\n' && (i == 0 || h->value[i - 1] != '\r')) message += '\r';
                message += h->value[i];
            }
            message += "\r\n";
            if (message.size() <= options.max_message_bytes) headers.push_back(*h);
            return continue_unless(milter::step::no_reply_header);
        }
        if (std::holds_alternative<milter::EndOfHeaders>(command)) {
            end_headers();
            return continue_unless(milter::step::no_reply_end_of_headers);
        }
        if (const auto* b = std::get_if<milter::Body>(&command)) {
            end_headers();
            message += b->chunk;
            return continue_unless(milter::step::no_reply_body);
        }
        if (const auto* e = std::get_if<milter::EndOfBody>(&command)) {
            end_headers();
            message += e->chunk;
            judged = true;
            return {{}, true, false};
        }
        if (std::holds_alternative<milter::Abort>(command)) {
            reset_message();
            return {};
        }
        if (std::holds_alternative<milter::Quit>(command)) return {{}, false, true};
        // QuitNewConnection: forget the client, keep the negotiation.
        reset_connection();
        return {};
    }
};

// ---- replies: reading the filter -> MTA frames back ----

std::string reply_name(const milter::Reply& r) {
    static constexpr const char* names[] = {"NegotiateReply", "Continue", "Accept",       "Reject",
                                            "Tempfail",       "Discard",  "Progress",     "ReplyCode",
                                            "AddHeader",      "InsertHeader", "ChangeHeader", "Quarantine"};
    return names[r.index()];
}

// Encodes `r` alone and checks that it is one frame whose fields read back.
void check_reply_frame(const milter::Reply& r) {
    std::string wire;
    milter::encode(r, wire);
    const std::string what = reply_name(r) + " encoded as " + printable(wire);
    FUZZ_CHECK("reply-frame-length", wire.size() >= 5 && load_u32(wire) == wire.size() - 4, what);
    const char letter = wire[4];
    Fields f(std::string_view(wire).substr(5));
    std::string a, b;
    std::uint32_t n1 = 0, n2 = 0, n3 = 0;
    auto strings_match = [&](std::string_view name, std::string_view value) {
        return f.cstr(a) && f.cstr(b) && f.done() && a == cut_at_nul(name) && b == cut_at_nul(value);
    };
    bool ok = false;
    char want = 0;
    std::visit(
        [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, milter::NegotiateReply>) {
                want = 'O';
                ok = f.u32(n1) && f.u32(n2) && f.u32(n3) && f.done() && n1 == x.version && n2 == x.actions &&
                     n3 == x.steps;
            } else if constexpr (std::is_same_v<T, milter::Continue>) {
                want = 'c';
                ok = f.done();
            } else if constexpr (std::is_same_v<T, milter::Accept>) {
                want = 'a';
                ok = f.done();
            } else if constexpr (std::is_same_v<T, milter::Reject>) {
                want = 'r';
                ok = f.done();
            } else if constexpr (std::is_same_v<T, milter::Tempfail>) {
                want = 't';
                ok = f.done();
            } else if constexpr (std::is_same_v<T, milter::Discard>) {
                want = 'd';
                ok = f.done();
            } else if constexpr (std::is_same_v<T, milter::Progress>) {
                want = 'p';
                ok = f.done();
            } else if constexpr (std::is_same_v<T, milter::ReplyCode>) {
                want = 'y';
                ok = f.cstr(a) && f.done() && a == cut_at_nul(x.text);
            } else if constexpr (std::is_same_v<T, milter::AddHeader>) {
                want = 'h';
                ok = strings_match(x.name, x.value);
            } else if constexpr (std::is_same_v<T, milter::InsertHeader>) {
                want = 'i';
                ok = f.u32(n1) && n1 == x.index && strings_match(x.name, x.value);
            } else if constexpr (std::is_same_v<T, milter::ChangeHeader>) {
                want = 'm';
                ok = f.u32(n1) && n1 == x.index && strings_match(x.name, x.value);
            } else if constexpr (std::is_same_v<T, milter::Quarantine>) {
                want = 'q';
                ok = f.cstr(a) && f.done() && a == cut_at_nul(x.reason);
            }
        },
        r);
    FUZZ_CHECK("reply-frame-letter", letter == want, what);
    FUZZ_CHECK("reply-frame-fields", ok, what);

    // The negotiate reply has the layout of the command: the codec reads it back.
    if (const auto* n = std::get_if<milter::NegotiateReply>(&r)) {
        milter::Decoder d;
        d.feed(wire);
        milter::Command c;
        const auto status = d.next(c);
        const auto* back = std::get_if<milter::Negotiate>(&c);
        FUZZ_CHECK("negotiate-roundtrip",
                   status == milter::Decoder::Status::command && back != nullptr && back->version == n->version &&
                       back->actions == n->actions && back->steps == n->steps,
                   what);
    }
}

// ---- format_smtp_reply against its documented rules ----

bool all_digits(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool reference_enhanced_ok(std::string_view e, char cls) {
    const std::size_t d1 = e.find('.');
    if (d1 != 1 || e[0] != cls) return false;
    const std::size_t d2 = e.find('.', 2);
    if (d2 == std::string_view::npos) return false;
    const std::string_view y = e.substr(2, d2 - 2), z = e.substr(d2 + 1);
    return !y.empty() && y.size() <= 3 && all_digits(y) && !z.empty() && z.size() <= 3 && all_digits(z);
}

void check_smtp_reply(std::string_view code, std::string_view enhanced, std::string_view text,
                      const std::optional<std::string>& got) {
    const bool code_ok = code.size() == 3 && (code[0] == '4' || code[0] == '5') && all_digits(code);
    const bool enhanced_ok = code_ok && reference_enhanced_ok(enhanced, code[0]);
    const bool text_ok = std::none_of(text.begin(), text.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return c != '\n' && (u < 0x20 || u == 0x7f);
    });
    const std::string what = "code " + printable(code) + " status " + printable(enhanced) + " text " + printable(text) +
                             " -> " + (got ? printable(*got) : std::string("nothing"));
    FUZZ_CHECK("smtp-reply-accepts", got.has_value() == (code_ok && enhanced_ok && text_ok), what);
    if (!got) return;
    // Lines: "CODE-STATUS text" ... "CODE STATUS text", CRLF between, none at the end.
    std::string_view body = text;
    if (!body.empty() && body.back() == '\n') body.remove_suffix(1);
    std::vector<std::string_view> want_lines;
    for (;;) {
        const std::size_t nl = body.find('\n');
        want_lines.push_back(body.substr(0, nl));
        if (nl == std::string_view::npos) break;
        body.remove_prefix(nl + 1);
    }
    std::string expected;
    for (std::size_t i = 0; i < want_lines.size(); ++i) {
        const bool last = i + 1 == want_lines.size();
        expected.append(code);
        expected += last ? ' ' : '-';
        expected.append(enhanced);
        if (!want_lines[i].empty()) expected += ' ';
        for (const char c : want_lines[i]) {
            if (c == '%') expected += '%';
            expected += c;
        }
        if (!last) expected += "\r\n";
    }
    FUZZ_CHECK("smtp-reply-format", *got == expected, what + "\nexpected " + printable(expected));
}

// ---- the owner's stand-in verdict ----

// A deterministic answer built from the transaction, using the actions the
// MTA granted, as the daemon's policy does; strings come from the input so
// that NUL, CR and LF reach the encoder.
std::vector<milter::Reply> stand_in_verdict(const milter::Session& session, Choices& choices) {
    const milter::Transaction& t = session.transaction();
    const std::uint32_t actions = session.actions();
    std::vector<milter::Reply> out;
    std::string value = t.headers.empty() ? t.message.substr(0, 64) : t.headers.back().value;
    std::string name = t.headers.empty() ? std::string("X-Mailsift-Status") : t.headers.front().name;
    const auto index = static_cast<std::uint32_t>(choices.next());
    if (choices.below(4) == 0) out.emplace_back(milter::Progress{});
    switch (choices.below(8)) {
        case 0: out.emplace_back(milter::Accept{}); return out;
        case 1: out.emplace_back(milter::Tempfail{}); return out;
        case 2: out.emplace_back(milter::Discard{}); return out;
        case 3: {
            // "CODE STATUS text" from the last header value.
            std::string_view v = value;
            const std::size_t s1 = v.find(' ');
            const std::string_view code = v.substr(0, s1);
            std::string_view rest = s1 == std::string_view::npos ? std::string_view{} : v.substr(s1 + 1);
            const std::size_t s2 = rest.find(' ');
            const std::string_view enhanced = rest.substr(0, s2);
            const std::string_view text = s2 == std::string_view::npos ? std::string_view{} : rest.substr(s2 + 1);
            const auto formatted = milter::format_smtp_reply(code, enhanced, text);
            check_smtp_reply(code, enhanced, text, formatted);
            if (formatted) out.emplace_back(milter::ReplyCode{*formatted});
            out.emplace_back(milter::Reject{});
            return out;
        }
        default: break;
    }
    if ((actions & milter::action::change_headers) != 0) {
        out.emplace_back(milter::ChangeHeader{index % 4, name, choices.below(3) == 0 ? std::string() : value});
    }
    if ((actions & milter::action::add_headers) != 0) {
        out.emplace_back(milter::AddHeader{"X-Mailsift-Status", value});
        if (choices.below(2) == 0) out.emplace_back(milter::InsertHeader{index % 3, name, value});
    }
    if ((actions & milter::action::quarantine) != 0 && choices.below(3) == 0) {
        out.emplace_back(milter::Quarantine{t.sender + value});
    }
    out.emplace_back(milter::Continue{});
    return out;
}

// prepare(): with header_leading_space, non-empty header values that do not
// start with a blank get one; otherwise nothing changes.
void check_prepare(const milter::Session& session, const std::vector<milter::Reply>& before,
                   const std::vector<milter::Reply>& after) {
    FUZZ_CHECK("prepare-count", before.size() == after.size(), "prepare changed the number of replies");
    const bool space = (session.steps() & milter::step::header_leading_space) != 0;
    auto expect = [space](const std::string& v) {
        if (!space || v.empty() || v.front() == ' ' || v.front() == '\t') return v;
        return " " + v;
    };
    for (std::size_t i = 0; i < before.size(); ++i) {
        FUZZ_CHECK("prepare-kind", before[i].index() == after[i].index(), "prepare changed a reply's kind");
        std::string want, got;
        if (const auto* a = std::get_if<milter::AddHeader>(&before[i])) {
            want = expect(a->value);
            got = std::get<milter::AddHeader>(after[i]).value;
        } else if (const auto* n = std::get_if<milter::InsertHeader>(&before[i])) {
            want = expect(n->value);
            got = std::get<milter::InsertHeader>(after[i]).value;
        } else if (const auto* c = std::get_if<milter::ChangeHeader>(&before[i])) {
            want = expect(c->value);
            got = std::get<milter::ChangeHeader>(after[i]).value;
        } else {
            continue;
        }
        FUZZ_CHECK("prepare-space", want == got, "value " + printable(got) + ", expected " + printable(want));
    }
}

std::string describe_replies(const std::vector<milter::Reply>& replies) {
    std::string out = "[";
    for (const auto& r : replies) out += reply_name(r) + " ";
    return out + "]";
}

void check_transaction(const milter::Session& session, const Model& m) {
    const milter::Transaction& t = session.transaction();
    const std::size_t cap = m.options.max_message_bytes;
    FUZZ_CHECK("txn-client", t.client_name == m.client_name && t.client_address == m.client_address &&
                                 t.client_family == m.family && t.client_port == m.port,
               "client " + printable(t.client_name) + " " + printable(t.client_address) + ", expected " +
                   printable(m.client_name) + " " + printable(m.client_address));
    FUZZ_CHECK("txn-helo", t.helo == m.helo, printable(t.helo) + ", expected " + printable(m.helo));
    FUZZ_CHECK("txn-sender", t.sender == m.sender, printable(t.sender) + ", expected " + printable(m.sender));
    FUZZ_CHECK("txn-recipients", t.recipients == m.recipients,
               std::to_string(t.recipients.size()) + " recipients, expected " + std::to_string(m.recipients.size()));
    FUZZ_CHECK("txn-macros", t.macros == m.macros,
               std::to_string(t.macros.size()) + " macros, expected " + std::to_string(m.macros.size()));
    bool headers_equal = t.headers.size() == m.headers.size();
    for (std::size_t i = 0; headers_equal && i < t.headers.size(); ++i) {
        headers_equal = t.headers[i].name == m.headers[i].name && t.headers[i].value == m.headers[i].value;
    }
    FUZZ_CHECK("txn-headers", headers_equal,
               std::to_string(t.headers.size()) + " headers, expected " + std::to_string(m.headers.size()));
    FUZZ_CHECK("txn-cap", t.message.size() <= cap,
               std::to_string(t.message.size()) + " bytes kept, cap " + std::to_string(cap));
    FUZZ_CHECK("txn-message", t.message == std::string_view(m.message).substr(0, cap),
               "kept " + printable(t.message) + "\nexpected " + printable(std::string_view(m.message).substr(0, cap)));
    FUZZ_CHECK("txn-message-bytes", t.message_bytes == m.message.size(),
               std::to_string(t.message_bytes) + ", expected " + std::to_string(m.message.size()));
    FUZZ_CHECK("txn-truncated", t.truncated == (m.message.size() > cap),
               std::string("truncated=") + (t.truncated ? "true" : "false") + " with " +
                   std::to_string(m.message.size()) + " bytes, cap " + std::to_string(cap));
}

void check_session_step(const milter::Session& session, const milter::Session::Outcome& got, const Model::Outcome& want,
                        const Model& m, const std::string& command) {
    const std::string what = "command " + printable(command) + ": replies " + describe_replies(got.replies) +
                             " judge=" + std::to_string(got.judge) + " close=" + std::to_string(got.close) +
                             ", expected " + describe_replies(want.replies) + " judge=" + std::to_string(want.judge) +
                             " close=" + std::to_string(want.close);
    for (const auto& r : got.replies) {
        FUZZ_CHECK("session-no-edits",
                   std::holds_alternative<milter::NegotiateReply>(r) || std::holds_alternative<milter::Continue>(r), what);
    }
    bool same = got.replies.size() == want.replies.size() && got.judge == want.judge && got.close == want.close;
    for (std::size_t i = 0; same && i < got.replies.size(); ++i) {
        same = got.replies[i].index() == want.replies[i].index();
        const auto* a = std::get_if<milter::NegotiateReply>(&got.replies[i]);
        const auto* b = std::get_if<milter::NegotiateReply>(&want.replies[i]);
        if (same && a != nullptr && b != nullptr) {
            same = a->version == b->version && a->actions == b->actions && a->steps == b->steps;
        }
    }
    FUZZ_CHECK("session-outcome", same, what);
    FUZZ_CHECK("session-negotiated",
               session.negotiated() == m.negotiated && session.actions() == m.actions && session.steps() == m.steps,
               what + "\nnegotiated " + std::to_string(session.negotiated()) + " actions " +
                   std::to_string(session.actions()) + " steps " + std::to_string(session.steps()) + ", expected " +
                   std::to_string(m.negotiated) + " " + std::to_string(m.actions) + " " + std::to_string(m.steps));
    FUZZ_CHECK("session-within-offer",
               (session.actions() & ~m.options.actions) == 0 && (session.steps() & ~m.options.steps) == 0, what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    Choices choices(mailsift::fuzz::fnv1a(input));

    // Options derived from the input: mostly the daemon's defaults.
    static constexpr std::size_t frame_caps[] = {1024 * 1024, 1024 * 1024, 1024 * 1024, 64, 4096};
    static constexpr std::size_t message_caps[] = {4 * 1024 * 1024, 4 * 1024 * 1024, 0, 1, 40, 300};
    const std::size_t frame_cap = frame_caps[choices.below(std::size(frame_caps))];
    milter::SessionOptions options;
    options.max_message_bytes = message_caps[choices.below(std::size(message_caps))];
    switch (choices.below(4)) {
        case 0: options.steps = 0xffffffffu; break;
        case 1: options.steps = 0; break;
        default: break;
    }
    if (choices.below(4) == 0) options.actions = 0xffffffffu;

    // Cut points: whole, a few, or every byte (short inputs only).
    std::vector<std::size_t> cuts;
    const auto mode = choices.below(8);
    if (mode == 0 && size <= 4096) {
        for (std::size_t i = 1; i < size; ++i) cuts.push_back(i);
    } else if (mode >= 2) {
        const auto n = 1 + choices.below(4);
        for (std::uint64_t i = 0; i < n; ++i) cuts.push_back(static_cast<std::size_t>(choices.below(size + 1)));
        std::sort(cuts.begin(), cuts.end());
    }
    cuts.push_back(size);

    const Expected expected = reference_decode(input, frame_cap);
    milter::Decoder decoder(frame_cap);
    milter::Session session(options);
    Model model;
    model.options = options;

    std::size_t fed = 0, previous_fed = 0;
    std::size_t event = 0;
    bool failed = false, closed = false;
    std::size_t chunk_start = 0;
    for (const std::size_t cut : cuts) {
        previous_fed = fed;
        decoder.feed(input.substr(chunk_start, cut - chunk_start));
        chunk_start = cut;
        fed = cut;
        if (closed) continue;  // the owner stopped reading; the stream is still fed to the decoder
        for (;;) {
            milter::Command command;
            const auto status = decoder.next(command);
            if (status == milter::Decoder::Status::need_more) break;
            const std::string where = "after " + std::to_string(fed) + " of " + std::to_string(size) + " bytes";
            FUZZ_CHECK("decode-extra-event", event < expected.events.size(),
                       where + ": decoder reported more than the reference reading");
            const auto& want = expected.events[event++];
            // Decided no later than the first next() after the deciding bytes, never before them.
            FUZZ_CHECK("decode-timing", want.decided_at <= fed && previous_fed < want.decided_at,
                       where + ": event decided at byte " + std::to_string(want.decided_at) + " reported late or early");
            if (status == milter::Decoder::Status::error) {
                FUZZ_CHECK("decode-error-kind", !want.command && decoder.error() == want.error,
                           where + ": error '" + milter::describe(decoder.error()) + "', expected " +
                               (want.command ? "command " + printable(want.dump) : std::string(milter::describe(want.error))));
                FUZZ_CHECK("decode-error-frees", decoder.buffered_bytes() == 0,
                           std::to_string(decoder.buffered_bytes()) + " bytes kept after an error");
                failed = true;
                break;
            }
            const std::string got = dump(command);
            FUZZ_CHECK("decode-command", want.command && got == want.dump,
                       where + ": decoded " + printable(got) + ", expected " +
                           (want.command ? printable(want.dump) : std::string(milter::describe(want.error))));

            const auto outcome = session.handle(command);
            const auto predicted = model.handle(command);
            check_session_step(session, outcome, predicted, model, got);
            for (const auto& r : outcome.replies) check_reply_frame(r);
            if (outcome.close) {
                closed = true;
                break;
            }
            if (outcome.judge) {
                check_transaction(session, model);
                auto replies = stand_in_verdict(session, choices);
                const auto before = replies;
                session.prepare(replies);
                check_prepare(session, before, replies);
                for (const auto& r : replies) check_reply_frame(r);
            }
        }
        if (failed) break;
    }
    if (failed) {
        // A failed decoder stays failed and drops input.
        decoder.feed(input);
        milter::Command command;
        FUZZ_CHECK("decode-stays-failed",
                   decoder.next(command) == milter::Decoder::Status::error && decoder.buffered_bytes() == 0,
                   "decoder recovered after an error");
    } else if (!closed) {
        FUZZ_CHECK("decode-missed-event", event == expected.events.size(),
                   std::to_string(event) + " events reported, the reference reading has " +
                       std::to_string(expected.events.size()));
        FUZZ_CHECK("decode-tail", decoder.buffered_bytes() == expected.tail,
                   std::to_string(decoder.buffered_bytes()) + " bytes buffered, expected " + std::to_string(expected.tail));
    }
    return 0;
}
