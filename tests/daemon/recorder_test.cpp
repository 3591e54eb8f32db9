// The recorder on its own, against a real store: scans queued faster than it
// writes are all written, and an outage keeps them up to the byte cap; a
// backlog of expired lines goes a bounded batch per write; a changed model
// is refitted once.
// No timing thresholds: what is checked is what was written and dropped.
#include "recorder.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "../support/backends.hpp"
#include "../support/model_state.hpp"
#include "../support/temp_dir.hpp"
#include "../support/typical_scan.hpp"

namespace {

using namespace mailsift;
using mailsift::testing::TempDir;

using mailsift::testing::typical_scan;

store::Digest digest(int i) {
    store::Digest id{};
    for (int k = 0; k < 4; ++k) id[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(i >> (8 * k));
    id[15] = 0x5a;
    return id;
}

std::vector<std::string> sorted_lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    std::sort(out.begin(), out.end());
    return out;
}

std::int64_t counter(store::Database& db, const std::string& name) {
    for (const auto& [n, v] : db.counters()) {
        if (n == name) return v;
    }
    return 0;
}

// Options that write only when a batch is ready or on flush(): the interval never comes in a test.
daemon::Recorder::Options options(const std::string& location) {
    daemon::Recorder::Options o;
    o.database = location;
    o.interval = std::chrono::hours(1);
    return o;
}

}  // namespace

TEST_CASE("Scans queued faster than the recorder writes are all written, none dropped", "[recorder]") {
    FOR_EACH_BACKEND(store_);
    store_.open();  // the recorder never creates a database
    // More than one stats_interval (5 s) of scans at the daemon's full rate (about
    // 3,500 a second), and more than the 20,000 the queue held as feature text,
    // queued from two threads at once as fast as they can: scoring never waits
    // for the writer, and nothing is dropped while the store is healthy.
    constexpr int per_thread = 12500, threads = 2, total = per_thread * threads;
    std::vector<std::string> lines(64);
    for (int i = 0; i < 64; ++i) lines[static_cast<std::size_t>(i)] = typical_scan(i);
    const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
    {
        daemon::Recorder recorder(options(store_.location()));
        std::vector<std::thread> scorers;
        for (int t = 0; t < threads; ++t) {
            scorers.emplace_back([&, t] {
                for (int i = t * per_thread; i < (t + 1) * per_thread; ++i) {
                    recorder.scan(digest(i), now, model::Verdict::ham, lines[static_cast<std::size_t>(i % 64)]);
                }
            });
        }
        for (auto& s : scorers) s.join();
        recorder.flush();

        const auto db = store_.open(store::Database::Mode::read_only);
        CHECK(counter(*db, "scans_dropped") == 0);
        CHECK(store_.value("SELECT count(*) FROM signatures") == total);
        for (int i : {0, 1, per_thread, total - 1}) {
            const auto scan = db->find_scan(digest(i));
            REQUIRE(scan);
            CHECK(scan->scanned_at == now);
            CHECK(sorted_lines(scan->features) == sorted_lines(lines[static_cast<std::size_t>(i % 64)]));
        }

        // The writes learned a dictionary from the scans (200 are enough), and the
        // scans queued after them are packed with it on the queuing thread.
        REQUIRE(store_.value("SELECT count(*) FROM scan_dictionaries") == 1);
        for (int i = total; i < total + 10; ++i) recorder.scan(digest(i), now, model::Verdict::spam, lines[5]);
        recorder.flush();
        CHECK(store_.value("SELECT count(*) FROM signatures WHERE dictionary IS NOT NULL AND verdict = 2") == 10);
        CHECK(sorted_lines(db->find_scan(digest(total + 3))->features) == sorted_lines(lines[5]));
    }
}

TEST_CASE("While the database is missing, scans wait up to the byte cap, those beyond it are dropped and counted",
          "[recorder]") {
    TempDir dir;
    const auto path = dir.path / "later.db";
    auto o = options(path.string());
    o.max_queued_bytes = 256 * 1024;  // a few hundred packed scans
    const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
    constexpr int queued = 3000;
    daemon::Recorder recorder(o);
    for (int i = 0; i < queued; ++i) recorder.scan(digest(i), now, model::Verdict::ham, typical_scan(i));
    recorder.flush();  // fails: there is no database; the scans stay within the cap
    store::open(path.string(), store::Database::Mode::read_write);  // the database comes (empty)
    recorder.flush();

    const auto db = store::open(path.string(), store::Database::Mode::read_only);
    const std::int64_t dropped = counter(*db, "scans_dropped");
    std::int64_t written = 0;
    for (int i = 0; i < queued; ++i) written += db->find_scan(digest(i)) ? 1 : 0;
    INFO(written << " written, " << dropped << " dropped");
    CHECK(dropped > 0);
    CHECK(written > 0);
    CHECK(written + dropped == queued);
    CHECK(counter(*db, "record_failures") >= 1);
}

TEST_CASE("A backlog of expired lines goes a batch a write until none is old, the recent ones kept", "[recorder]") {
    FOR_EACH_BACKEND(store_);
    const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
    {
        auto db = store_.open();
        store::Recording r;
        for (int i = 0; i < 28; ++i) {
            store::HistoryEntry e;
            e.signature = digest(i);
            e.scanned_at = i < 25 ? now - 30 * 86400 + i : now - 60 + i;  // 25 past keep_scans, 3 recent
            e.action = "accepted";
            e.queue_id = "Q" + std::to_string(i);
            r.history.push_back(e);
        }
        db->record(r);
    }
    auto o = options(store_.location());
    o.keep_scans = std::chrono::seconds(14 * 86400);
    o.prune_batch = 10;
    daemon::Recorder recorder(o);
    // Each write deletes one batch: the write lock is never held for the whole backlog.
    recorder.flush();
    CHECK(store_.value("SELECT count(*) FROM history") == 18);
    recorder.flush();
    CHECK(store_.value("SELECT count(*) FROM history") == 8);
    recorder.flush();
    CHECK(store_.value("SELECT count(*) FROM history") == 3);
    CHECK(store_.value("SELECT count(*) FROM history WHERE scanned_at < " + std::to_string(now - 86400)) == 0);
    recorder.flush();  // done: the next pass is an hour away
    CHECK(store_.value("SELECT count(*) FROM history") == 3);
}

TEST_CASE("After the model changed, the recorder refits the linear scorer once, when messages were learned since",
          "[recorder]") {
    // A `mailsift correct` commits its step and leaves the refit to mailsiftd
    // (engine/trainer.hpp), which refits once the changes pause, or after
    // refit_max_delay of changes that do not.
    const bool never_pausing = GENERATE(false, true);
    FOR_EACH_BACKEND(store_);
    {
        auto db = store_.open();
        mailsift::testing::train_fixtures(*db, /*refit=*/true);
        engine::Trainer t(*db, engine::Settings{}, engine::Trainer::Reads::rows);
        const std::string spam = mailsift::testing::fixture("spam_money_offer.eml") + "\nAnd a second offer today.\n";
        REQUIRE(t.correct(spam, spam.size(), store::Class::spam, 2000).result == store::LearnResult::learned);
        t.commit();
    }
    const auto db = store_.open(store::Database::Mode::read_only);
    const auto state = [&] { return db->linear_state(); };
    REQUIRE(state().refit_mark + 1 == state().samples_version());
    const auto weights = mailsift::testing::model_state(*db).weights;
    {
        auto o = options(store_.location());
        if (never_pausing) o.refit_max_delay = std::chrono::milliseconds(0);
        daemon::Recorder recorder(o);
        recorder.flush();  // a write without the model's change: no refit
        REQUIRE(state().refit_mark + 1 == state().samples_version());
        recorder.model_settled();  // unchanged, and nothing asked for
        recorder.flush();
        REQUIRE(state().refit_mark + 1 == state().samples_version());
        recorder.model_changed();
        if (!never_pausing) {
            recorder.flush();  // changes that may go on (a user moving 200 messages): not yet
            CHECK(state().refit_mark + 1 == state().samples_version());
            CHECK(mailsift::testing::model_state(*db).weights == weights);
            recorder.model_changed();
            recorder.flush();
            CHECK(state().refit_mark + 1 == state().samples_version());
            recorder.model_settled();  // they paused
        }
        recorder.flush();
        CHECK(state().refit_mark == state().samples_version());
        CHECK(mailsift::testing::model_state(*db).weights != weights);
        // Changed again (the refit's own change, as the scorer reloads it): caught up,
        // nothing more, at once or after a pause.
        const auto refitted = mailsift::testing::model_state(*db).weights;
        recorder.model_changed(/*behind=*/false);
        recorder.flush();
        recorder.model_changed();
        recorder.model_settled();
        recorder.flush();
        CHECK(mailsift::testing::model_state(*db).weights == refitted);
    }
    CHECK(counter(*db, "linear_refits") == 1);
}
