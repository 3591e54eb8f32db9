// fuzz_milter.cpp's checks of what the filter sends back to the MTA: each reply
// encoded alone is one well-formed frame whose fields read back (the negotiate
// reply through the Decoder itself), and format_smtp_reply accepts exactly the
// valid code/status/text triples and formats them as documented.
//
// Part of the fuzz_milter harness only, not a library: fuzz_milter.cpp is its one
// translation unit (see the map in its top comment).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "fuzz_support.hpp"
#include "mailsift/milter/protocol.hpp"
#include "milter_wire_reference.hpp"

namespace fuzz_milter {

namespace milter = mailsift::milter;
using mailsift::fuzz::printable;

// ---- replies: reading the filter -> MTA frames back ----

inline std::string reply_name(const milter::Reply& r) {
    static constexpr const char* names[] = {"NegotiateReply", "Continue", "Accept",       "Reject",
                                            "Tempfail",       "Discard",  "Progress",     "ReplyCode",
                                            "AddHeader",      "InsertHeader", "ChangeHeader", "Quarantine"};
    return names[r.index()];
}

// Encodes `r` alone and checks that it is one frame whose fields read back.
inline void check_reply_frame(const milter::Reply& r) {
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

inline bool all_digits(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

inline bool reference_enhanced_ok(std::string_view e, char cls) {
    const std::size_t d1 = e.find('.');
    if (d1 != 1 || e[0] != cls) return false;
    const std::size_t d2 = e.find('.', 2);
    if (d2 == std::string_view::npos) return false;
    const std::string_view y = e.substr(2, d2 - 2), z = e.substr(d2 + 1);
    return !y.empty() && y.size() <= 3 && all_digits(y) && !z.empty() && z.size() <= 3 && all_digits(z);
}

inline void check_smtp_reply(std::string_view code, std::string_view enhanced, std::string_view text,
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

}  // namespace fuzz_milter
