// Train/test runs in temporary databases.
#include "mailsift/evaluation/runner.hpp"

#include <chrono>
#include <unordered_set>

#include "mailsift/engine/filter.hpp"
#include "mailsift/features/extractor.hpp"
#include "mailsift/features/feature_hash.hpp"
#include "mailsift/mime/message.hpp"
#include "mailsift/store/sqlite_database.hpp"

namespace mailsift::evaluation {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Trains on `train` and scores `test` in a fresh database at `db_path`.
void train_and_score(const std::vector<const LabelledMessage*>& train, const std::vector<const LabelledMessage*>& test,
                     const engine::Settings& settings, const std::filesystem::path& db_path, const Loader& load,
                     Run& out, const std::function<void()>& tick) {
    std::filesystem::remove(db_path);
    std::filesystem::remove(db_path.string() + "-wal");
    std::filesystem::remove(db_path.string() + "-shm");
    store::SqliteDatabase db(db_path, store::Database::Mode::read_write);  // evaluation keeps its own temporary file
    auto t0 = Clock::now();
    {
        engine::Trainer trainer(db, settings);
        for (const auto* m : train) {
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
        trainer.commit();
    }
    out.train_seconds += seconds_since(t0);
    t0 = Clock::now();
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

// Contacts learned during an online run (senders of ham), in memory.
class LearnedContacts final : public features::Contacts {
public:
    bool contains(std::string_view address) const override { return set_.count(std::string(address)) > 0; }
    void add(std::string address) { set_.insert(std::move(address)); }

private:
    std::unordered_set<std::string> set_;
};

// TREC online protocol on an in-memory model that learns in place, so each
// message is judged by a model that has learned every message before it.
void online(const std::vector<LabelledMessage>& corpus, const Plan& plan, const engine::Settings& settings,
            const Loader& load, Run& out, const std::function<void()>& tick) {
    model::Snapshot snapshot(model::Counts{}, settings.model);
    LearnedContacts contacts;
    for (const auto& m : corpus) {
        tick();
        const auto raw = load(m.path);
        if (!raw || engine::refused(engine::check_message(*raw, raw->size(), settings.limits))) {
            ++out.unreadable;
            continue;
        }
        auto t0 = Clock::now();
        const mime::ParsedMessage parsed = mime::parse(*raw, settings.limits);
        const features::FeatureBag bag = features::extract(parsed, nullptr, &contacts, settings.features);
        const std::vector<model::Term> terms = engine::scoring_terms(bag);
        const model::Score s = model::score(terms, snapshot);
        out.scored.push_back({m.spam, s.log_odds, s.probability, s.verdict});
        out.scored_paths.push_back(m.path);
        out.score_seconds += seconds_since(t0);

        t0 = Clock::now();
        const model::Verdict gold = m.spam ? model::Verdict::spam : model::Verdict::ham;
        // settings.train_margin: the thick threshold of Trainer::learn_prepared.
        const bool known = engine::known_beyond_margin(snapshot, s.log_odds, m.spam, settings.train_margin);
        if ((!plan.train_on_error || s.verdict != gold) && !known) {
            snapshot.learn(terms, m.spam);
            ++out.trained;
            if (!m.spam) {
                if (const auto* from = parsed.find("From")) {
                    if (auto a = features::address_in(from->value); !a.empty()) contacts.add(std::move(a));
                }
            }
        }
        out.train_seconds += seconds_since(t0);
    }
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
        online(corpus, plan, settings, load, out, tick);
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
    train_and_score(train, test, settings, db_path, load, out, tick);
    return out;
}

}  // namespace mailsift::evaluation
