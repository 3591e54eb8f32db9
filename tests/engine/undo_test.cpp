// Undo of a correction, on every backend: the model goes back to what it was
// before the correction (counts exactly, the linear weights to float
// rounding, the contact it added), the correction stays in its line's trail
// marked undone and counts nowhere, and undo is not a correction the other way.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>

#include "mailsift/store/training_batch.hpp"
#include "../support/backends.hpp"
#include "../support/fixture.hpp"
#include "../support/model_state.hpp"
#include "mailsift/engine/filter.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/trainer.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/features/feature_hash.hpp"

using namespace mailsift;
using mailsift::testing::fixture;

namespace {

// What a correction or an undo may change, read back from the store.
struct State {
    testing::ModelState model;
    bool contact = false;
    double log_odds = 0.0;  // the message's score
};

State state_of(store::Database& db, const std::string& raw) {
    State s;
    s.model = testing::model_state(db);
    s.contact = db.load_contacts().contains("winner@prize-center.example");
    s.log_odds = engine::Filter(db, engine::Settings{}).classify(raw).score.log_odds;
    return s;
}

void require_same_counts(const State& a, const State& b) { testing::require_same_counts(a.model.counts, b.model.counts); }

// Counts exactly; weights as floats that had a step added and taken away.
void require_same_model(const State& a, const State& b) {
    require_same_counts(a, b);
    testing::require_weights_near(a.model, b.model);
    REQUIRE(a.contact == b.contact);
    REQUIRE(a.log_odds == Approx(b.log_odds).margin(1e-4));
}

const std::string lottery_spam =
    "From: Lottery <winner@prize-center.example>\nSubject: You WON a FREE prize!!!\n\n"
    "CONGRATULATIONS! You have WON $250,000. Claim your FREE prize now, limited offer, act now!!!\n";

}  // namespace

TEST_CASE("Undoing a correction puts the model back as it was, and is not a correction the other way", "[engine]") {
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db);

    // mailsiftd scanned the message and said ham; the delivered copy carries its signature.
    const engine::Filter f(*db, engine::Settings{});
    const auto scanned = f.classify(lottery_spam, nullptr, /*record_features=*/true);
    const store::Digest id = engine::message_digest(lottery_spam);
    store::Recording rec;
    rec.scans.push_back({id, 1500, model::Verdict::ham, scanned.features});
    db->record(rec);
    const std::string delivered = "X-Mailsift-Status: No, score=0.2000\nX-Mailsift-Signature: " +
                                  engine::signature_text(id) + "\n" + lottery_spam;
    const State before = state_of(*db, lottery_spam);
    REQUIRE_FALSE(before.contact);

    SECTION("a mistaken correction to ham, undone: counts, weights and the contact it made go back") {
        engine::Trainer t(*db, engine::Settings{});
        t.set_corrector("cli:alice");
        REQUIRE(t.correct(delivered, delivered.size(), store::Class::ham, 2000).result == store::LearnResult::learned);
        t.commit();
        const State corrected = state_of(*db, lottery_spam);
        REQUIRE(corrected.model.counts.messages.ham == before.model.counts.messages.ham + 1);
        REQUIRE(corrected.contact);  // the spammer became a contact
        REQUIRE(corrected.model.bias != before.model.bias);
        REQUIRE(corrected.log_odds < before.log_odds);
        REQUIRE(db->corrections_since(0).false_positives == 0);  // said ham, corrected to ham: no error
        REQUIRE(db->corrections_since(0).false_negatives == 0);

        engine::Trainer u(*db, engine::Settings{});
        u.set_corrector("console:bob");
        const auto o = u.undo(delivered, 2100);
        REQUIRE(o.result == engine::Trainer::UndoOutcome::Result::undone);
        REQUIRE(o.to == store::Class::ham);
        REQUIRE_FALSE(o.was);
        u.commit();
        require_same_model(before, state_of(*db, lottery_spam));

        // The trail keeps it, undone, and nothing stands to undo any more.
        const auto trail = db->corrections_of(id);
        REQUIRE(trail.size() == 1);
        REQUIRE(trail[0].to == store::Class::ham);
        REQUIRE(trail[0].by == "cli:alice");
        REQUIRE(trail[0].undone_at == 2100);
        REQUIRE(trail[0].undone_by == "console:bob");
        engine::Trainer again(*db, engine::Settings{});
        REQUIRE(again.undo_signature(id, 2200).result == engine::Trainer::UndoOutcome::Result::nothing);
        again.commit();
        require_same_counts(before, state_of(*db, lottery_spam));

        // The history shows no standing correction.
        store::Recording line;
        store::HistoryEntry h;
        h.signature = id;
        h.scanned_at = 1500;
        h.action = "accepted";
        line.history.push_back(h);
        db->record(line);
        store::HistoryQuery q;
        q.signature = id;
        const auto lines = db->history(q);
        REQUIRE(lines.size() == 1);
        REQUIRE_FALSE(lines[0].corrected);
    }

    SECTION("corrected one way, then the other: the second replaces the first, and its undo goes back to the start") {
        engine::Trainer t(*db, engine::Settings{});
        REQUIRE(t.correct_signature(id, store::Class::spam, 2000)->result == store::LearnResult::learned);
        t.commit();
        REQUIRE(db->corrections_since(0).false_negatives == 1);
        engine::Trainer t2(*db, engine::Settings{});
        const auto flipped = t2.correct_signature(id, store::Class::ham, 2100);
        REQUIRE(flipped->superseded);
        REQUIRE(flipped->result == store::LearnResult::learned);
        t2.commit();
        REQUIRE(db->corrections_since(0).false_negatives == 0);  // the latest says ham was right
        auto trail = db->corrections_of(id);
        REQUIRE(trail.size() == 2);
        REQUIRE(trail[0].undone_at == 2100);  // the first, undone by the second
        REQUIRE(trail[1].undone_at == 0);

        engine::Trainer u(*db, engine::Settings{});
        const auto o = u.undo_signature(id, 2200);
        REQUIRE(o.result == engine::Trainer::UndoOutcome::Result::undone);
        REQUIRE_FALSE(o.was);  // not learned before either correction
        u.commit();
        require_same_model(before, state_of(*db, lottery_spam));
        REQUIRE(db->corrections_since(0).false_negatives == 0);
        engine::Trainer u2(*db, engine::Settings{});
        REQUIRE(u2.undo_signature(id, 2300).result == engine::Trainer::UndoOutcome::Result::nothing);
        u2.commit();
        trail = db->corrections_of(id);
        REQUIRE(trail.size() == 2);
        REQUIRE(trail[1].undone_at == 2200);
    }

    SECTION("with train_on_error, moved into Junk by mistake and back out: the model as it was") {
        engine::Settings settings;
        settings.train_on_error = true;
        engine::Trainer t(*db, settings);
        REQUIRE(t.correct_signature(id, store::Class::spam, 2000)->result == store::LearnResult::learned);
        t.commit();
        engine::Trainer back(*db, settings);
        const auto o = back.correct_signature(id, store::Class::ham, 2100);
        REQUIRE(o->superseded);
        REQUIRE(o->confirmed);  // mailsiftd said ham: nothing more to learn
        back.commit();
        require_same_model(before, state_of(*db, lottery_spam));
        REQUIRE(db->corrections_since(0).false_negatives == 0);
    }

    SECTION("flipped again and again: one correction stands, the trail stays bounded, undo goes back to the start") {
        for (int i = 0; i < 20; ++i) {
            engine::Trainer f(*db, engine::Settings{});
            const auto to = i % 2 == 0 ? store::Class::spam : store::Class::ham;
            REQUIRE(f.correct_signature(id, to, 2000 + i)->result == store::LearnResult::learned);
            f.commit();
        }
        const auto trail = db->corrections_of(id);
        REQUIRE(trail.size() == 1 + store::undone_kept);
        REQUIRE(std::count_if(trail.begin(), trail.end(), [](const auto& r) { return r.undone_at == 0; }) == 1);
        REQUIRE(trail.back().to == store::Class::ham);
        REQUIRE(db->corrections_since(0).false_negatives == 0);
        // Undone, the model is as before the first.
        engine::Trainer u(*db, engine::Settings{});
        REQUIRE(u.undo_signature(id, 2100).result == engine::Trainer::UndoOutcome::Result::undone);
        u.commit();
        require_same_model(before, state_of(*db, lottery_spam));
    }

    SECTION("a correction the other way is not an undo: the message stays learned") {
        engine::Trainer t(*db, engine::Settings{});
        REQUIRE(t.correct_signature(id, store::Class::spam, 2000)->result == store::LearnResult::learned);
        t.commit();
        engine::Trainer t2(*db, engine::Settings{});
        REQUIRE(t2.correct_signature(id, store::Class::ham, 2100)->result == store::LearnResult::learned);
        t2.commit();
        const State moved = state_of(*db, lottery_spam);
        REQUIRE(moved.model.counts.messages.ham == before.model.counts.messages.ham + 1);
        REQUIRE(moved.model.counts.messages.spam == before.model.counts.messages.spam);
    }

    SECTION("learned otherwise since the correction: left as it is") {
        engine::Trainer t(*db, engine::Settings{});
        REQUIRE(t.correct_signature(id, store::Class::spam, 2000)->result == store::LearnResult::learned);
        t.commit();
        engine::Trainer l(*db, engine::Settings{});
        REQUIRE(l.unlearn(delivered, store::Class::spam) == store::UnlearnResult::unlearned);
        l.commit();
        const State unlearned = state_of(*db, lottery_spam);
        engine::Trainer u(*db, engine::Settings{});
        REQUIRE(u.undo_signature(id, 2200).result == engine::Trainer::UndoOutcome::Result::changed);
        u.commit();
        require_same_model(unlearned, state_of(*db, lottery_spam));
    }

    SECTION("a correction still waiting for its scan is withdrawn, and never trained") {
        const store::Digest later = engine::message_digest("a message whose scan is not written yet");
        engine::Trainer t(*db, engine::Settings{});
        REQUIRE(t.correct_or_defer_signature(later, store::Class::spam, 2000).deferred);
        t.commit();
        engine::Trainer u(*db, engine::Settings{});
        const auto o = u.undo_signature(later, 2100);
        REQUIRE(o.result == engine::Trainer::UndoOutcome::Result::withdrawn);
        REQUIRE(o.to == store::Class::spam);
        u.commit();
        REQUIRE_FALSE(db->has_deferred_corrections());
        REQUIRE(db->corrections_of(later).empty());
    }

    SECTION("a correction recorded before undo was cannot be undone, and an untagged message no correction is keyed by has nothing to undo") {
        {
            store::TrainingBatch b(*db);
            b.record_correction({model::Verdict::ham, store::Class::spam, 2000, id, "cli:old", std::nullopt});
            b.commit();
        }
        engine::Trainer u(*db, engine::Settings{});
        REQUIRE(u.undo_signature(id, 2100).result == engine::Trainer::UndoOutcome::Result::not_undoable);
        // The message untagged is the scan's content: its correction found, by its digest.
        REQUIRE(u.undo(lottery_spam, 2100).result == engine::Trainer::UndoOutcome::Result::not_undoable);
        REQUIRE(u.undo("From: a@example.org\nSubject: never corrected\n\nNothing to see.\n", 2100).result ==
                engine::Trainer::UndoOutcome::Result::untagged);
        u.commit();
        REQUIRE(db->corrections_of(id).size() == 1);
        REQUIRE_FALSE(db->corrections_of(id)[0].undo);
        REQUIRE(db->corrections_of(id)[0].undone_at == 0);
    }
}
