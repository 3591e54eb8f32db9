// What the engine's test files share: the fixtures learned, and two new messages to score.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "../support/fixture.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/engine/trainer.hpp"
#include "mailsift/store/database.hpp"

namespace mailsift::engine_test {

inline const char* const spam_fixtures[] = {"spam_money_offer.eml", "spam_cheap_pills.eml", "spam_investment.eml"};
inline const char* const ham_fixtures[] = {"ham_meeting_notes.eml", "ham_patch_review.eml", "ham_build_report.eml"};

inline void train_fixtures(store::Database& db, const engine::Settings& s) {
    engine::Trainer t(db, s);
    for (auto f : spam_fixtures) t.learn(testing::fixture(f), testing::fixture(f).size(), store::Class::spam, 1000);
    for (auto f : ham_fixtures) t.learn(testing::fixture(f), testing::fixture(f).size(), store::Class::ham, 1000);
    t.commit();
}

inline const std::string new_spam =
    "From: Lottery <win@prize-center.example>\nSubject: You WON a FREE prize!!!\n\n"
    "CONGRATULATIONS! You have WON $250,000. Claim your FREE prize now, limited offer, act now!!!\n";
inline const std::string new_ham =
    "From: Carol <carol@university.example>\nSubject: Re: the seminar\nDate: Thu, 5 Sep 2002 10:00:00 +0000\n"
    "Message-ID: <c1@university.example>\n\n"
    "Thanks for the notes. I will review the draft of the paper and the patch before the meeting.\n";

}  // namespace mailsift::engine_test
