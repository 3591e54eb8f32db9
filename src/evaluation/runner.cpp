// Train/test runs in temporary databases.
#include "mailsift/evaluation/runner.hpp"

#include "runner_internal.hpp"

#include <algorithm>
#include <chrono>
#include <span>

#include "mailsift/engine/filter.hpp"
#include "mailsift/engine/message_checks.hpp"
#include "mailsift/engine/trainer.hpp"
#include "mailsift/features/feature_hash.hpp"
#include "mailsift/store/sqlite_database.hpp"

namespace mailsift::evaluation {

namespace detail {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

store::SqliteDatabase fresh_database(const std::filesystem::path& db_path) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db_path.string() + suffix);
    return store::SqliteDatabase(db_path, store::Database::Mode::read_write);
}

void learn_commands(store::Database& db, const std::vector<const LabelledMessage*>& train,
                    const engine::Settings& settings, const Loader& load, Run& out, const std::function<void()>& tick,
                    std::size_t second) {
    const auto t0 = Clock::now();
    const auto learn_command = [&](std::span<const LabelledMessage* const> messages) {
        engine::Trainer trainer(db, settings);
        for (const auto* m : messages) {
            tick();
            const auto raw = load(m->path);
            if (!raw) {
                ++out.unreadable;
                continue;
            }
            const auto o = trainer.learn(*raw, raw->size(), m->spam ? store::Class::spam : store::Class::ham, 0);
            if (o.problem != engine::MessageProblem::none) {
                ++out.unreadable;
                continue;
            }
            if (!o.confident) ++out.trained;  // train_margin: what the model knew was not learned
        }
        trainer.finish();  // as mailsift learn ends
    };
    const std::span<const LabelledMessage* const> all(train);
    if (second > 0 && second < train.size()) {
        learn_command(all.first(second));
        learn_command(all.subspan(second));
    } else {
        learn_command(all);
    }
    out.train_seconds += seconds_since(t0);
}

std::size_t class_sort(std::vector<const LabelledMessage*>& train) {
    // All spam first, then all ham, in two commands: `learn --spam A` then `learn --ham B`.
    const auto ham = std::stable_partition(train.begin(), train.end(), [](const LabelledMessage* m) { return m->spam; });
    return static_cast<std::size_t>(ham - train.begin());
}

std::optional<std::string> load_usable(const Loader& load, const std::string& path, const engine::Settings& settings,
                                       Run& out) {
    auto raw = load(path);
    if (!raw || engine::refused(engine::check_message(*raw, raw->size(), settings.limits))) {
        ++out.unreadable;
        return std::nullopt;
    }
    return raw;
}

}  // namespace detail

namespace {

using namespace detail;

// Trains on `train` and scores `test` in a fresh database at `db_path`. The
// training is one learn command, or two when `second` > 0: train[0, second)
// and then train[second, end), as `learn --spam A` and then `learn --ham B`.
void train_and_score(const std::vector<const LabelledMessage*>& train, const std::vector<const LabelledMessage*>& test,
                     const engine::Settings& settings, const std::filesystem::path& db_path, const Loader& load,
                     Run& out, const std::function<void()>& tick, std::size_t second = 0) {
    store::SqliteDatabase db = fresh_database(db_path);
    learn_commands(db, train, settings, load, out, tick, second);
    const auto t0 = Clock::now();
    engine::Settings scoring = settings;
    scoring.reasons = 0;
    const engine::Filter filter(db, scoring);
    for (const auto* m : test) {
        tick();
        const auto raw = load(m->path);
        if (!raw) {
            ++out.unreadable;
            continue;
        }
        const auto c = filter.classify(*raw);
        out.scored.push_back({m->spam, c.score.log_odds, c.score.probability, c.score.verdict});
        out.scored_paths.push_back(m->path);
    }
    out.score_seconds += seconds_since(t0);
}

// TREC online protocol, each message a learn command of its own: scored by the
// trainer's models (what classify would say after the previous message was
// committed), then learned by the same Trainer code that `mailsift learn` and
// `correct` run, in a fresh database at `db_path`. The batch commits every
// settings.batch_messages; the models stay in step in memory meanwhile.
void online(const std::vector<LabelledMessage>& corpus, const Plan& plan, const engine::Settings& settings,
            const std::filesystem::path& db_path, const Loader& load, Run& out, const std::function<void()>& tick) {
    store::SqliteDatabase db = fresh_database(db_path);
    engine::Trainer trainer(db, settings);
    for (const auto& m : corpus) {
        tick();
        const auto raw = load_usable(load, m.path, settings, out);
        if (!raw) continue;
        auto t0 = Clock::now();
        trainer.begin_command();
        const engine::Trainer::Prepared p = trainer.prepare(*raw, raw->size());
        const model::Score s = trainer.score(p).score;
        out.scored.push_back({m.spam, s.log_odds, s.probability, s.verdict});
        out.scored_paths.push_back(m.path);
        out.score_seconds += seconds_since(t0);
        t0 = Clock::now();
        const model::Verdict gold = m.spam ? model::Verdict::spam : model::Verdict::ham;
        if (!(plan.train_on_error && s.verdict == gold)) {
            const auto o = trainer.learn_prepared(p, m.spam ? store::Class::spam : store::Class::ham, 0);
            if (o.problem == engine::MessageProblem::none && !o.confident) ++out.trained;
            trainer.refit_linear();  // as the command ends
        }
        out.train_seconds += seconds_since(t0);
    }
    trainer.finish();
}

}  // namespace

Run run(const std::vector<LabelledMessage>& corpus, const Plan& plan, const engine::Settings& settings,
        const std::filesystem::path& work_dir, const Loader& load, const Progress& progress) {
    Run out;
    std::size_t done = 0;
    const std::size_t folds = plan.mode == Plan::Mode::folds ? std::max<std::size_t>(plan.folds, 2) : 1;
    const std::size_t total = corpus.size() * folds;  // every message is read once per fold
    auto tick = [&] {
        if (progress && (++done % 500 == 0 || done == total)) progress(done, total);
    };
    const auto db_path = work_dir / "evaluate.db";

    if (plan.mode == Plan::Mode::online) {
        online(corpus, plan, settings, db_path, load, out, tick);
        return out;
    }
    if (plan.mode == Plan::Mode::deployed) {
        deployed(corpus, plan, settings, work_dir, load, out, tick);
        return out;
    }

    if (plan.mode == Plan::Mode::folds) {
        for (std::size_t k = 0; k < folds; ++k) {
            std::vector<const LabelledMessage*> train, test;
            for (std::size_t i = 0; i < corpus.size(); ++i) (i % folds == k ? test : train).push_back(&corpus[i]);
            train_and_score(train, test, settings, db_path, load, out, tick);
        }
        return out;
    }
    std::vector<const LabelledMessage*> train, test;
    for (std::size_t i = 0; i < corpus.size(); ++i) {
        bool is_test = false;
        if (plan.mode == Plan::Mode::split_every) {
            is_test = plan.every > 0 && (i + 1) % plan.every == 0;
        } else if (plan.mode == Plan::Mode::split_head) {
            is_test = static_cast<double>(i) >= plan.fraction * static_cast<double>(corpus.size());
        } else {
            // A stable hash of the path, so the split never depends on the machine.
            const std::uint64_t h = features::hash64(corpus[i].path, 0x73706c6974ULL);
            is_test = static_cast<double>(h % 1000000) < plan.fraction * 1000000.0;
        }
        (is_test ? test : train).push_back(&corpus[i]);
    }
    const std::size_t second = plan.class_sorted ? class_sort(train) : 0;
    train_and_score(train, test, settings, db_path, load, out, tick, second);
    return out;
}

}  // namespace mailsift::evaluation
