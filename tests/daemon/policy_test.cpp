// What mailsiftd answers for a message, from verdicts worked out by hand.
#include "policy.hpp"

#include <catch2/catch.hpp>

#include "mailsift/milter/session.hpp"
#include <string>
#include <utility>
#include <vector>

using namespace mailsift;
using daemon::Action;

namespace {

constexpr std::uint32_t all_actions =
    milter::action::add_headers | milter::action::change_headers | milter::action::quarantine;

// A message with forged verdict headers, as the daemon's session receives it.
milter::Transaction transaction() {
    milter::SessionOptions options;
    options.watched_header_prefix = "X-Mailsift-";
    options.steps = 0;
    milter::Session s(options);
    s.handle(milter::Negotiate{6, all_actions, 0});
    s.handle(milter::Connect{"mx.example.net", '4', 25, "192.0.2.1"});
    s.handle(milter::Helo{"mx.example.net"});
    s.handle(milter::Mail{{"<a@example.net>"}});
    s.handle(milter::Rcpt{{"<b@example.org>"}});
    for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
             {"From", "a@example.net"},
             {"Subject", "hello"},
             {"X-Mailsift-Status", "No, score=0.0000"},
             {"x-mailsift-status", "No"},
             {"X-Mailsift-Signature", "forged"}}) {
        s.handle(milter::Header{name, value});
    }
    s.handle(milter::EndOfHeaders{});
    s.handle(milter::Body{"body\r\n"});
    REQUIRE(s.handle(milter::EndOfBody{}).judge);
    return s.transaction();
}

engine::Classification verdict(double p, model::Verdict v) {
    engine::Classification c;
    c.score.probability = p;
    c.score.log_odds = std::log(p / (1 - p));
    c.score.verdict = v;
    c.toward_spam = {{"w:free", 2.5, {}}};
    return c;
}

template <typename T>
std::vector<T> all_of(const std::vector<milter::Reply>& replies) {
    std::vector<T> out;
    for (const auto& r : replies) {
        if (const auto* x = std::get_if<T>(&r)) out.push_back(*x);
    }
    return out;
}

}  // namespace

TEST_CASE("A scored message loses forged verdict headers and gains ours", "[daemon]") {
    const auto a = daemon::answer_scored(transaction(), all_actions, verdict(0.9999, model::Verdict::spam),
                                         engine::DaemonSettings{}, "abc123");
    const auto deletions = all_of<milter::ChangeHeader>(a.replies);
    // Two X-Mailsift-Status (any case) from the last to the first, one Signature.
    REQUIRE(deletions.size() == 3);
    for (const auto& d : deletions) REQUIRE(d.value.empty());
    std::vector<std::uint32_t> status_indices;
    for (const auto& d : deletions) {
        if (d.name != "X-Mailsift-Signature") status_indices.push_back(d.index);
    }
    REQUIRE(status_indices == std::vector<std::uint32_t>{2, 1});

    const auto added = all_of<milter::AddHeader>(a.replies);
    REQUIRE(added.size() == 2);
    REQUIRE(added[0].name == "X-Mailsift-Status");
    REQUIRE(added[0].value == "Yes, score=0.9999, uncalibrated-log-odds=9.21");
    REQUIRE(added[1].value == "abc123");
    REQUIRE(std::holds_alternative<milter::Continue>(a.replies.back()));
    REQUIRE(a.action == Action::accepted);
}

TEST_CASE("Edits are sent only when the MTA granted the action", "[daemon]") {
    const auto a = daemon::answer_scored(transaction(), milter::action::add_headers,
                                         verdict(0.01, model::Verdict::ham), engine::DaemonSettings{}, "sig");
    REQUIRE(all_of<milter::ChangeHeader>(a.replies).empty());
    REQUIRE(all_of<milter::AddHeader>(a.replies).at(0).value.rfind("No, ", 0) == 0);
    const auto none = daemon::answer_scored(transaction(), 0, verdict(0.01, model::Verdict::ham), {}, "sig");
    REQUIRE(none.replies.size() == 1);
    REQUIRE(std::holds_alternative<milter::Continue>(none.replies[0]));
}

TEST_CASE("Reject, quarantine and subject tag follow their thresholds", "[daemon]") {
    engine::DaemonSettings d;
    d.reject_threshold = 0.999;
    d.quarantine_threshold = 0.9;
    d.subject_tag = "[SPAM]";
    SECTION("above the reject threshold the SMTP reply is the configured one") {
        const auto a = daemon::answer_scored(transaction(), all_actions, verdict(0.9999, model::Verdict::spam), d, "s");
        REQUIRE(a.action == Action::rejected);
        REQUIRE(a.replies.size() == 1);
        REQUIRE(std::get<milter::ReplyCode>(a.replies[0]).text == "550 5.7.1 Message rejected as spam");
    }
    SECTION("between quarantine and reject the message is tagged and quarantined") {
        const auto a = daemon::answer_scored(transaction(), all_actions, verdict(0.995, model::Verdict::spam), d, "s");
        REQUIRE(a.action == Action::quarantined);
        REQUIRE(all_of<milter::Quarantine>(a.replies).size() == 1);
        bool tagged = false;
        for (const auto& c : all_of<milter::ChangeHeader>(a.replies)) {
            if (c.name == "Subject") tagged = c.value == "[SPAM] hello" && c.index == 1;
        }
        REQUIRE(tagged);
    }
    SECTION("ham is neither tagged nor quarantined") {
        const auto a = daemon::answer_scored(transaction(), all_actions, verdict(0.02, model::Verdict::ham), d, "s");
        REQUIRE(a.action == Action::accepted);
        REQUIRE(all_of<milter::Quarantine>(a.replies).empty());
    }
}

TEST_CASE("Authenticated senders and oversized mail are skipped when configured", "[daemon]") {
    engine::DaemonSettings d;
    auto t = transaction();
    REQUIRE(daemon::skip_reason(t, d, 1000).empty());
    t.macros["{auth_authen}"] = "alice";
    REQUIRE(daemon::skip_reason(t, d, 1000) == "authenticated sender");
    d.skip_authenticated = false;
    REQUIRE(daemon::skip_reason(t, d, 1000).empty());
    d.oversize = engine::DaemonSettings::Oversize::skip;
    t.message_bytes = 5000;
    REQUIRE(daemon::skip_reason(t, d, 1000).find("too large") == 0);
    const auto a = daemon::answer_skipped(t, all_actions, "authenticated sender");
    REQUIRE(a.action == Action::skipped);
    REQUIRE(all_of<milter::AddHeader>(a.replies).at(0).value == "Skipped, reason=authenticated sender");
}

TEST_CASE("A failure answers with the configured default action", "[daemon]") {
    engine::DaemonSettings d;
    const auto accepted = daemon::answer_failed(transaction(), all_actions, d, "no model");
    REQUIRE(accepted.action == Action::accepted);
    REQUIRE(all_of<milter::AddHeader>(accepted.replies).at(0).value == "Error, reason=no model");
    REQUIRE(all_of<milter::ChangeHeader>(accepted.replies).size() == 3);  // forged headers still go
    d.on_error = engine::DaemonSettings::OnError::tempfail;
    const auto tempfailed = daemon::answer_failed(transaction(), all_actions, d, "no model");
    REQUIRE(tempfailed.action == Action::tempfailed);
    REQUIRE(tempfailed.replies.size() == 1);
    REQUIRE(std::holds_alternative<milter::Tempfail>(tempfailed.replies[0]));
}

TEST_CASE("The envelope is taken from the transaction", "[daemon]") {
    auto t = transaction();
    t.macros["{auth_authen}"] = "bob";
    const auto e = daemon::envelope_of(t);
    REQUIRE(e.sender == "a@example.net");
    REQUIRE(e.recipients == std::vector<std::string>{"b@example.org"});
    REQUIRE(e.helo == "mx.example.net");
    REQUIRE(e.auth_user == "bob");
}

TEST_CASE("Too many distinct X-Mailsift names to remove them all is refused, not delivered", "[daemon][security]") {
    const auto a = daemon::answer_unremovable_headers();
    REQUIRE(a.action == Action::rejected);
    REQUIRE(a.replies.size() == 1);
    REQUIRE(std::get<milter::ReplyCode>(a.replies[0]).text.rfind("550 5.7.1 ", 0) == 0);
}
