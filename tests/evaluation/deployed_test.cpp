// evaluate --deployed: the loop users run, in real SQLite files through the
// daemon's Filter and `mailsift correct`'s Trainer. The users move exactly
// what they see wrong, their corrections reach the mail that comes after, and
// the model never corrected scores the same messages beside it.
#include <catch2/catch.hpp>
#include <map>

#include "../support/fixture.hpp"
#include "../support/temp_dir.hpp"
#include "mailsift/evaluation/runner.hpp"

using namespace mailsift;
using mailsift::testing::fixture;

namespace {

// One campaign's copies: the same offer, each with its own number and recipient.
std::string campaign(int i) {
    return "From: Lottery <win" + std::to_string(i) + "@prize-center.example>\nTo: user" + std::to_string(i) +
           "@example.org\nSubject: Claim your prize " + std::to_string(1000 + i) +
           "\n\nDear user, your ticket " + std::to_string(7000 + i) +
           " qualifies. Send your bank details to the claims agent to release the lottery funds, "
           "wire the processing fee today and the lottery funds are released to your bank.\n";
}

struct Corpus {
    std::vector<evaluation::LabelledMessage> messages;
    std::map<std::string, std::string> bytes;
    void add(const std::string& name, std::string raw, bool spam) {
        messages.push_back({name, spam});
        bytes[name] = std::move(raw);
    }
    evaluation::Loader loader() const {
        return [this](const std::string& path) -> std::optional<std::string> {
            const auto it = bytes.find(path);
            if (it == bytes.end()) return std::nullopt;
            return it->second;
        };
    }
};

}  // namespace

TEST_CASE("evaluate --deployed moves what users see wrong, and the corrections reach later mail", "[evaluation]") {
    Corpus c;
    for (const char* f : {"spam_money_offer.eml", "spam_cheap_pills.eml", "spam_investment.eml"}) c.add(f, fixture(f), true);
    for (const char* f : {"ham_meeting_notes.eml", "ham_patch_review.eml", "ham_build_report.eml"}) {
        c.add(f, fixture(f), false);
    }
    const std::size_t learned = c.messages.size();
    for (int i = 0; i < 12; ++i) c.add("campaign" + std::to_string(i), campaign(i), true);
    c.add("late_ham", fixture("ham_meeting_notes.eml") + "\nOne more note.\n", false);

    evaluation::Plan plan;
    plan.mode = evaluation::Plan::Mode::deployed;
    plan.fraction = static_cast<double>(learned) / static_cast<double>(c.messages.size()) + 1e-9;
    plan.batch = 1;  // each message scored after the corrections of the one before
    mailsift::testing::TempDir dir;
    const auto run = evaluation::run(c.messages, plan, engine::Settings{}, dir.path, c.loader());

    REQUIRE(run.scored.size() == c.messages.size() - learned);
    REQUIRE(run.deployed);
    const auto& d = *run.deployed;
    REQUIRE(d.uncorrected.size() == run.scored.size());
    // Exactly what the users saw wrong was moved.
    std::size_t spam_not_in_junk = 0, ham_in_junk = 0;
    for (const auto& s : run.scored) {
        if (s.spam && s.verdict != model::Verdict::spam) ++spam_not_in_junk;
        if (!s.spam && s.verdict == model::Verdict::spam) ++ham_in_junk;
    }
    REQUIRE(d.moved_to_junk == spam_not_in_junk);
    REQUIRE(d.moved_from_junk == ham_in_junk);
    // The campaign is new to the model: its first copy lands in the inbox, and is moved.
    REQUIRE(run.scored.front().verdict != model::Verdict::spam);
    REQUIRE(d.moved_to_junk >= 1);
    // What the users taught reaches the copies after: each scores above what the
    // model never corrected gives it, and fewer are moved than there are copies.
    REQUIRE(run.scored.front().log_odds == Approx(d.uncorrected.front().log_odds).margin(1e-9));
    for (std::size_t i = 1; i < 12; ++i) {
        INFO("copy " << i);
        REQUIRE(run.scored[i].log_odds > d.uncorrected[i].log_odds);
    }
    REQUIRE(d.moved_to_junk < 12);
    REQUIRE(run.trained >= d.moved_to_junk + d.moved_from_junk);  // each move learned its message

    SECTION("one-sided: users never look in Junk, so no ham is ever moved out") {
        plan.one_sided = true;
        const auto one = evaluation::run(c.messages, plan, engine::Settings{}, dir.path, c.loader());
        REQUIRE(one.deployed->moved_from_junk == 0);
        std::size_t spam_moves = 0;
        for (const auto& s : one.scored) spam_moves += s.spam && s.verdict != model::Verdict::spam;
        REQUIRE(one.deployed->moved_to_junk == spam_moves);
    }
}
