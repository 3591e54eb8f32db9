// One training lifecycle (issue 42): a verdict corrected by the delivered copy
// (`mailsift correct FILE`, the IMAPSieve recipe), by its signature alone
// (`correct --signature`), or before its scan was written (the console's and
// the daemon's deferred corrections) leaves the same model, on every backend:
// the same counts, the same linear weights, the same rehearsal sample, because
// all of them train the scan (its features and the view the milter scored)
// through the same step, rehearsal and replays.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>

#include "mailsift/store/training_batch.hpp"
#include "../support/backends.hpp"
#include "../support/fixture.hpp"
#include "../support/model_state.hpp"
#include "mailsift/engine/filter.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/scan_record.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/engine/trainer.hpp"
#include "mailsift/features/feature_hash.hpp"
#include "mailsift/features/view.hpp"

using namespace mailsift;
using mailsift::testing::fixture;

namespace {

// A message scored ham at the milter: its view holds a tab, a backslash and a
// folded header, which the scan's view line must carry unharmed.
const std::string scanned_spam =
    "From: Lottery <winner@prize-center.example>\r\nSubject: You WON a FREE\r\n prize!!!\r\n"
    "X-Note: a\ttab and a \\ backslash\r\n\r\n"
    "CONGRATULATIONS! You have WON $250,000. Claim your FREE prize now, limited offer, act now!!!\r\n";

// The same steps on the same slots in the same order: the same floats.
void require_same(const testing::ModelState& a, const testing::ModelState& b) {
    testing::require_same_counts(a.counts, b.counts);
    REQUIRE(a.weights == b.weights);
    REQUIRE(a.bias == b.bias);
    REQUIRE(a.nb_weight == b.nb_weight);
    REQUIRE(a.samples.size() == b.samples.size());
    for (std::size_t i = 0; i < a.samples.size(); ++i) {
        REQUIRE(a.samples[i].c == b.samples[i].c);
        REQUIRE(a.samples[i].prefix == b.samples[i].prefix);
        REQUIRE(a.samples[i].terms == b.samples[i].terms);
    }
}

// What mailsiftd records of the message: its scan, as the milter scored it.
store::Recording scan_of(store::Database& db, const store::Digest& id) {
    const engine::Filter f(db, engine::Settings{});
    const auto c = f.classify(scanned_spam, nullptr, /*record_features=*/true);
    store::Recording rec;
    rec.scans.push_back({id, 1500, model::Verdict::ham, c.features});
    return rec;
}

}  // namespace

TEST_CASE("A correction by the delivered copy, by signature and deferred leave the same model", "[engine]") {
    FOR_EACH_BACKEND(s);
    testing::TestStore by_file_store(s_kind), by_signature_store(s_kind), deferred_store(s_kind);
    auto by_file = by_file_store.open(), by_signature = by_signature_store.open(), deferred = deferred_store.open();
    for (auto* db : {by_file.get(), by_signature.get(), deferred.get()}) testing::train_fixtures(*db, /*refit=*/true);
    const testing::ModelState before = testing::model_state(*by_file);
    require_same(before, testing::model_state(*by_signature));

    const store::Digest id = engine::message_digest(scanned_spam);
    const store::Recording rec = scan_of(*by_file, id);
    // The scan keeps the view the 4-grams were read from, and it is no feature.
    const auto view = engine::recorded_view(rec.scans[0].features);
    REQUIRE(view);
    REQUIRE(*view == features::message_view(scanned_spam, engine::Settings{}.slots.ngram_bytes));
    REQUIRE(view->find("a\ttab and a \\ backslash") != std::string::npos);
    for (const auto& [text, n] : engine::parse_feature_lines(rec.scans[0].features)) {
        REQUIRE(text.find("view") != 0);
        REQUIRE(text[0] != '!');
    }

    // 1. The delivered copy, as the MTA delivers it: LF line ends, mailsiftd's
    //    fields at the end of the header block, a trace field in front.
    by_file->record(rec);
    std::string delivered = "Return-Path: <winner@prize-center.example>\n" + scanned_spam;
    for (std::size_t at; (at = delivered.find("\r\n")) != std::string::npos;) delivered.erase(at, 1);
    delivered.insert(delivered.find("\n\n") + 1, "X-Mailsift-Status: No, score=0.2000\nX-Mailsift-Signature: " +
                                                      engine::signature_text(id) + "\n");
    {
        engine::Trainer t(*by_file, engine::Settings{}, engine::Trainer::Reads::rows);
        const auto o = t.correct(delivered, delivered.size(), store::Class::spam, 2000);
        REQUIRE(o.by_signature);
        REQUIRE(o.result == store::LearnResult::learned);
        t.commit();
    }
    // 2. The signature alone (`correct --signature`).
    by_signature->record(scan_of(*by_signature, id));
    {
        engine::Trainer t(*by_signature, engine::Settings{}, engine::Trainer::Reads::rows);
        REQUIRE(t.correct_signature(id, store::Class::spam, 2000)->result == store::LearnResult::learned);
        t.commit();
    }
    // 3. Before the scan is written (the console, the daemon): kept, then
    //    trained when the recorder writes the scan.
    {
        engine::Trainer t(*deferred, engine::Settings{}, engine::Trainer::Reads::rows);
        REQUIRE(t.correct_or_defer_signature(id, store::Class::spam, 2000).deferred);
        t.commit();
        deferred->record(scan_of(*deferred, id));
        engine::Trainer d(*deferred, engine::Settings{}, engine::Trainer::Reads::rows);
        REQUIRE(d.apply_deferred_corrections(2000) == 1);
    }

    const testing::ModelState corrected = testing::model_state(*by_file);
    REQUIRE(corrected.counts.messages.spam == before.counts.messages.spam + 1);
    REQUIRE(corrected.weights != before.weights);
    // The correction took the rehearsal `learn` takes: it is kept as a sample, with the milter's view.
    REQUIRE(corrected.samples.size() == before.samples.size() + 1);
    REQUIRE(std::any_of(corrected.samples.begin(), corrected.samples.end(),
                        [&](const store::LinearSample& x) { return x.c == store::Class::spam && x.prefix == *view; }));
    require_same(corrected, testing::model_state(*by_signature));
    require_same(corrected, testing::model_state(*deferred));

    // And each is undone to the model before it, the replays it took included.
    for (auto* db : {by_file.get(), by_signature.get()}) {
        engine::Trainer u(*db, engine::Settings{});
        REQUIRE(u.undo_signature(id, 2100).result == engine::Trainer::UndoOutcome::Result::undone);
        u.commit();
        const testing::ModelState undone = testing::model_state(*db);
        testing::require_same_counts(undone.counts, before.counts);
        testing::require_weights_near(undone, before);
    }
}

TEST_CASE("A scan's view line carries any byte and is found wherever the lines put it", "[engine]") {
    using namespace std::string_literals;
    const std::string view = "Subject:a\\nb\tc\n\nbody\\\\ \0 end\n"s;
    REQUIRE(view.find('\0') != std::string::npos);
    std::string lines = "w:hello\t2\n";
    engine::append_view_line(view, lines);
    lines += "w:zz\t1\n";
    REQUIRE(engine::recorded_view(lines) == view);
    REQUIRE(engine::parse_feature_lines(lines) ==
            std::vector<std::pair<std::string, std::uint32_t>>{{"w:hello", 2}, {"w:zz", 1}});
    std::string first;
    engine::append_view_line("", first);  // an empty view, first of the lines
    REQUIRE(engine::recorded_view(first) == std::string());
    REQUIRE_FALSE(engine::recorded_view("w:hello\t2\nw:!view:x\t1\n"));
}

TEST_CASE("A scan's view line holds no raw control byte, and older records still read", "[engine]") {
    using namespace std::string_literals;
    // CR, NUL, ESC and DEL among text that looks like an escape ("\\x41").
    const std::string view = "a\rb\0c\x1b[31md\x7f e \\x41 f\\"s;
    std::string lines;
    engine::append_view_line(view, lines);
    const std::string_view body = std::string_view(lines).substr(0, lines.size() - 3);  // without "\t1\n"
    for (const char c : body) {
        const auto b = static_cast<unsigned char>(c);
        INFO("byte " << int(b));
        REQUIRE((b >= 0x20 && b != 0x7f));
    }
    REQUIRE(lines.ends_with("\t1\n"));
    REQUIRE(engine::recorded_view(lines) == view);
    // A record written before control bytes were escaped: only \\, \n and \t.
    REQUIRE(engine::recorded_view("!view:x\\\\y\\nz\r\t1\n") == "x\\y\nz\r"s);
}

TEST_CASE("Messages learned since the last refit leave the linear scorer behind until one refit catches it up",
          "[engine]") {
    // What mailsiftd runs after a correction (daemon/recorder.hpp), and `evaluate --deployed` after each batch.
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db, /*refit=*/true);
    const auto state = [&] { return db->linear_state(); };
    REQUIRE(state().refit_mark == state().samples_version());  // `learn` refitted and said so
    REQUIRE(engine::Trainer(*db, engine::Settings{}).refit_linear_if_behind() == 0);

    // A correction: one message, committed, not refitted (as `mailsift correct` leaves it).
    const store::Digest id = engine::message_digest(scanned_spam);
    db->record(scan_of(*db, id));
    {
        engine::Trainer t(*db, engine::Settings{}, engine::Trainer::Reads::rows);
        REQUIRE(t.correct_signature(id, store::Class::spam, 2000)->result == store::LearnResult::learned);
        t.commit();
    }
    REQUIRE(state().refit_mark + 1 == state().samples_version());
    const testing::ModelState corrected = testing::model_state(*db);

    REQUIRE(engine::Trainer(*db, engine::Settings{}).refit_linear_if_behind() == corrected.samples.size());
    REQUIRE(state().refit_mark == state().samples_version());
    const testing::ModelState refitted = testing::model_state(*db);
    REQUIRE(refitted.weights != corrected.weights);
    testing::require_same_counts(refitted.counts, corrected.counts);  // a refit moves weights, not counts
    // Caught up: the next one does nothing.
    REQUIRE(engine::Trainer(*db, engine::Settings{}).refit_linear_if_behind() == 0);
    REQUIRE(testing::model_state(*db).weights == refitted.weights);

    // The correction undone: its message's sample is out of use, and a refit is due again, without it.
    {
        engine::Trainer u(*db, engine::Settings{});
        REQUIRE(u.undo_signature(id, 2100).result ==
                engine::Trainer::UndoOutcome::Result::undone);
        u.commit();
    }
    REQUIRE(state().refit_mark < state().samples_version());
    REQUIRE(engine::Trainer(*db, engine::Settings{}).refit_linear_if_behind() == corrected.samples.size() - 1);
    REQUIRE(state().refit_mark == state().samples_version());
}

TEST_CASE("One rule says when a refit is due, at a command's end and once the changes settle", "[engine]") {
    using P = engine::Trainer::RefitPoint;
    constexpr auto after = engine::Trainer::refit_after;
    // At a command's end: refit_after changes unrefitted, or a tenth of the samples held.
    REQUIRE_FALSE(engine::Trainer::refit_due(P::command_end, after - 1, 100000));
    REQUIRE(engine::Trainer::refit_due(P::command_end, after, 100000));
    REQUIRE(engine::Trainer::refit_due(P::command_end, 5, 50));
    REQUIRE_FALSE(engine::Trainer::refit_due(P::command_end, 4, 50));
    // Settled: any change, however few.
    REQUIRE(engine::Trainer::refit_due(P::settled, 1, 100000));
    REQUIRE_FALSE(engine::Trainer::refit_due(P::settled, 0, 100000));
    REQUIRE_FALSE(engine::Trainer::refit_due(P::command_end, 0, 0));
}

TEST_CASE("A correction's command refits what it and earlier writers left unrefitted, once due", "[engine]") {
    // A site where only `mailsift correct` writes (no mailsiftd to refit once
    // the changes settle): what other commands left unrefitted counts.
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db, /*refit=*/true);
    const auto state = [&] { return db->linear_state(); };
    // A writer that only committed (mailsiftd's socket before its recorder refits): left behind.
    {
        engine::Trainer t(*db, engine::Settings{});
        const std::string ham = "From: carol@example.org\r\nTo: team@example.org\r\nSubject: rota for the "
                                "on-call week\r\n\r\nHere is the rota for next week's on-call shifts and the "
                                "handover notes from the last incident review.\r\n";
        const auto o = t.learn(ham, ham.size(), store::Class::ham, 1500);
        REQUIRE(o.result == store::LearnResult::learned);
        REQUIRE_FALSE(o.confident);
        t.commit();
    }
    REQUIRE(state().refit_mark + 1 == state().samples_version());
    // A command that learned nothing refits nothing.
    {
        engine::Trainer t(*db, engine::Settings{});
        REQUIRE(t.finish() == 0);
    }
    REQUIRE(state().refit_mark + 1 == state().samples_version());
    // A correction by its scan, ended as `mailsift correct` ends it: 2 of 8
    // samples unrefitted is over a tenth, so it refits both writers' changes.
    const store::Digest id = engine::message_digest(scanned_spam);
    db->record(scan_of(*db, id));
    std::size_t refitted = 0;
    {
        engine::Trainer t(*db, engine::Settings{}, engine::Trainer::Reads::rows);
        REQUIRE(t.correct_signature(id, store::Class::spam, 2000)->result == store::LearnResult::learned);
        refitted = t.finish();
    }
    REQUIRE(refitted == 8);
    REQUIRE(state().refit_mark == state().samples_version());
    REQUIRE(engine::Trainer(*db, engine::Settings{}).refit_linear_if_behind() == 0);  // nothing left for mailsiftd

    // Without mailsiftd nothing is tagged: a correction of an untagged message counts the same.
    {
        engine::Trainer t(*db, engine::Settings{});
        const std::string more = "From: dave@example.org\r\nSubject: minutes\r\n\r\nThe minutes of the planning "
                                 "meeting and the list of actions for next week.\r\n";
        REQUIRE(t.learn(more, more.size(), store::Class::ham, 2100).result == store::LearnResult::learned);
        const std::string rota = "From: erin@example.org\r\nSubject: holiday rota\r\n\r\nWho covers the help desk "
                                 "over the holidays, and the handover notes.\r\n";
        REQUIRE(t.learn(rota, rota.size(), store::Class::ham, 2100).result == store::LearnResult::learned);
        t.commit();
    }
    // 2 of 10 samples unrefitted: the correction's own 1 of 11 would not be due alone.
    REQUIRE(state().refit_mark + 2 == state().samples_version());
    {
        engine::Trainer t(*db, engine::Settings{});
        const std::string plain = "From: shop@deals.example\r\nSubject: last chance\r\n\r\nBuy cheap watches "
                                  "today, best prices online, limited stock.\r\n";
        const auto o = t.correct(plain, plain.size(), store::Class::spam, 2200);
        REQUIRE_FALSE(o.by_signature);
        REQUIRE(o.result == store::LearnResult::learned);
        REQUIRE(t.finish() > 0);
    }
    REQUIRE(state().refit_mark == state().samples_version());
}

TEST_CASE("A refit replaces the last one: refitting samples that did not change leaves the weights one refit left",
          "[engine]") {
    // mailsiftd refits after every correction. Logistic regression without a
    // penalty grows its weights with every pass over samples it separates, so
    // refits that added up made the scores more confident each time (issue 42).
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db, /*refit=*/true);
    const testing::ModelState once = testing::model_state(*db);
    REQUIRE(db->linear_refit_layer());
    const unsigned bits = engine::Settings{}.linear.hash_bits;
    for (int i = 0; i < 5; ++i) {
        {
            // A new version of the same samples (what an undone correction of
            // a message without a sample writes): mailsiftd refits them.
            store::TrainingBatch b(*db);
            b.drop_linear_sample(bits);
            b.commit();
        }
        REQUIRE(engine::Trainer(*db, engine::Settings{}).refit_linear_if_behind() == once.samples.size());
    }
    const testing::ModelState again = testing::model_state(*db);
    REQUIRE(again.weights.size() == once.weights.size());
    double moved = 0.0, norm = 0.0;
    for (std::size_t j = 0; j < once.weights.size(); ++j) {
        moved = std::max(moved, static_cast<double>(std::abs(again.weights[j] - once.weights[j])));
        norm += std::abs(once.weights[j]);
    }
    REQUIRE(norm > 1.0);       // the refit learned something
    REQUIRE(moved < 1e-4);     // and five more of the same samples did not add to it
    REQUIRE(again.bias == Approx(once.bias).margin(1e-6));
}

TEST_CASE("A scan's envelope facts are not learned by the linear scorer's model, which never scores them", "[engine]") {
    // The milter records env: features (HELO, client, sender domain); a mailbox
    // and the CLI never see them, so the linear scorer's score leaves them out,
    // and so must its counts: else a refit's naive-Bayes input for a corrected
    // sample is not the one scoring gives it.
    FOR_EACH_BACKEND(s);
    auto db = s.open();
    testing::train_fixtures(*db, /*refit=*/true);
    features::Envelope envelope;
    envelope.helo = "mx.prize-center.example";
    envelope.client_name = "mx.prize-center.example";
    envelope.sender = "winner@prize-center.example";
    envelope.recipients = {"user@example.org"};
    const engine::Filter f(*db, engine::Settings{});
    const auto c = f.classify(scanned_spam, &envelope, /*record_features=*/true);
    REQUIRE(c.features.find("env:helo:") != std::string::npos);  // the scan has them
    const store::Digest id = engine::message_digest(scanned_spam);
    store::Recording rec;
    rec.scans.push_back({id, 1500, model::Verdict::ham, c.features});
    db->record(rec);
    {
        engine::Trainer t(*db, engine::Settings{}, engine::Trainer::Reads::rows);
        REQUIRE(t.correct_signature(id, store::Class::spam, 2000)->result == store::LearnResult::learned);
        t.commit();
    }
    const auto counts = db->load_counts(model::TermFrequency::raw);
    REQUIRE(counts.features.contains(features::feature_id("hdr:from:winner@prize-center.example")));
    for (const auto& [text, n] : engine::parse_feature_lines(c.features)) {
        INFO(text);
        if (text.starts_with("env:")) REQUIRE_FALSE(counts.features.contains(features::feature_id(text)));
    }
}
