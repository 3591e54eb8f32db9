// fuzz_milter.cpp's stand-in for the daemon at end of body: a deterministic
// verdict built from the transaction with the actions the MTA granted (its
// "CODE STATUS text" case goes through format_smtp_reply and its check), and the
// check that Session::prepare() adds a header value's leading space exactly when
// header_leading_space was negotiated.
//
// Part of the fuzz_milter harness only, not a library: fuzz_milter.cpp is its one
// translation unit (see the map in its top comment).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fuzz_support.hpp"
#include "mailsift/milter/protocol.hpp"
#include "mailsift/milter/session.hpp"
#include "milter_reply_checks.hpp"

namespace fuzz_milter {

namespace milter = mailsift::milter;
using mailsift::fuzz::Choices;
using mailsift::fuzz::printable;

// ---- the owner's stand-in verdict ----

// A deterministic answer built from the transaction, using the actions the
// MTA granted, as the daemon's policy does; strings come from the input so
// that NUL, CR and LF reach the encoder.
inline std::vector<milter::Reply> stand_in_verdict(const milter::Session& session, Choices& choices) {
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
inline void check_prepare(const milter::Session& session, const std::vector<milter::Reply>& before,
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

}  // namespace fuzz_milter
