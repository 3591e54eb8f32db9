// Train/test runs in temporary databases.
#include "mailsift/evaluation/runner.hpp"

#include <algorithm>
#include <chrono>
#include <span>
#include <unordered_set>

#include "mailsift/engine/filter.hpp"
#include "mailsift/features/extractor.hpp"
#include "mailsift/features/feature_hash.hpp"
#include "mailsift/features/slots.hpp"
#include "mailsift/features/view.hpp"
#include "mailsift/model/linear.hpp"
#include "mailsift/mime/message.hpp"
#include "mailsift/store/sqlite_database.hpp"

namespace mailsift::evaluation {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Trains on `train` and scores `test` in a fresh database at `db_path`. The
// training is one learn command, or two when `second` > 0: train[0, second)
// and then train[second, end), as `learn --spam A` and then `learn --ham B`.
void train_and_score(const std::vector<const LabelledMessage*>& train, const std::vector<const LabelledMessage*>& test,
                     const engine::Settings& settings, const std::filesystem::path& db_path, const Loader& load,
                     Run& out, const std::function<void()>& tick, std::size_t second = 0) {
    std::filesystem::remove(db_path);
    std::filesystem::remove(db_path.string() + "-wal");
    std::filesystem::remove(db_path.string() + "-shm");
    store::SqliteDatabase db(db_path, store::Database::Mode::read_write);  // evaluation keeps its own temporary file
    auto t0 = Clock::now();
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
        trainer.commit();
        trainer.refit_linear();  // as mailsift learn ends
    };
    const std::span<const LabelledMessage* const> all(train);
    if (second > 0 && second < train.size()) {
        learn_command(all.first(second));
        learn_command(all.subspan(second));
    } else {
        learn_command(all);
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

// The message at `path`, or nothing (counted as unreadable) when it cannot be
// read or is no message at all.
std::optional<std::string> load_usable(const Loader& load, const std::string& path, const engine::Settings& settings,
                                       Run& out) {
    auto raw = load(path);
    if (!raw || engine::refused(engine::check_message(*raw, raw->size(), settings.limits))) {
        ++out.unreadable;
        return std::nullopt;
    }
    return raw;
}

// A model that learns in memory, as the store would hold it: the naive-Bayes
// counts, the linear scorer's weights when it is on, and the contacts learned
// from ham.
class InMemoryModel {
public:
    InMemoryModel(const engine::Settings& settings)
        : settings_(settings), snapshot_(model::Counts{}, settings.model), linear_(settings.linear) {}

    // Scores one message and keeps what learning it would need.
    Scored score(std::string_view raw, bool spam) {
        parsed_ = mime::parse(raw, settings_.limits);
        const features::FeatureBag bag = features::extract(parsed_, nullptr, &contacts_, settings_.features);
        terms_ = engine::scoring_terms(bag);
        model::Score s = model::score(terms_, snapshot_);
        nb_log_odds_ = s.log_odds;
        if (settings_.scorer == engine::Scorer::linear) {
            features::message_slots(features::message_view(raw, settings_.slots.ngram_bytes), bag, settings_.slots, slots_);
            s = engine::linear_score(linear_.score(slots_, calibrated(nb_log_odds_)), settings_);
        }
        verdict_ = s.verdict;
        return {spam, s.log_odds, s.probability, s.verdict};
    }

    // Learns the message last scored; false when the regime skipped it.
    bool learn(bool spam, bool train_on_error) {
        const model::Verdict gold = spam ? model::Verdict::spam : model::Verdict::ham;
        if (settings_.scorer == engine::Scorer::linear) linear_.learn(slots_, calibrated(nb_log_odds_), spam);
        // settings.train_margin: the thick threshold of Trainer::learn_prepared.
        const bool known = engine::known_beyond_margin(snapshot_, nb_log_odds_, spam, settings_.train_margin);
        if ((train_on_error && verdict_ == gold) || known) return false;
        snapshot_.learn(terms_, spam);
        if (settings_.scorer == engine::Scorer::linear && settings_.linear.rehearsal > 0) rehearse(spam);
        if (!spam) {
            if (const auto* from = parsed_.find("From")) {
                if (auto a = features::address_in(from->value); !a.empty()) contacts_.add(std::move(a));
            }
        }
        return true;
    }

private:
    // The linear scorer's naive-Bayes input, as the engine takes it.
    double calibrated(double nb_log_odds) const { return engine::linear_nb_input(nb_log_odds, settings_); }
    // The same for a kept message, by the counts as they are now.
    double nb_input(const std::vector<model::Term>& terms) const {
        return calibrated(model::score(terms, snapshot_).log_odds);
    }

    struct Kept {
        std::vector<model::Term> terms;
        std::vector<model::Slot> slots;
    };
    // Keeps the message just learned in its class's uniform sample, then
    // replays messages of the other class that the model scores within the margin.
    void rehearse(bool spam) {
        const auto& p = settings_.linear;
        auto& mine = kept_[spam ? 1 : 0];
        const std::uint64_t n = ++seen_[spam ? 1 : 0];
        if (mine.size() < p.rehearsal) {
            mine.push_back({terms_, slots_});
        } else if (const std::uint64_t j = next() % n; j < p.rehearsal) {
            mine[j] = {terms_, slots_};
        }
        auto& other = kept_[spam ? 0 : 1];
        if (other.empty()) return;
        for (std::size_t r = 0; r < p.replays; ++r) {
            const Kept& k = other[next() % other.size()];
            const double nb = nb_input(k.terms);
            const double z = linear_.score(k.slots, nb).z();
            if ((spam ? -z : z) < p.replay_margin) linear_.learn(k.slots, nb, !spam);
        }
    }
    std::uint64_t next() { return features::mix64(rng_ += features::golden_gamma); }  // splitmix64
    std::vector<Kept> kept_[2];
    std::uint64_t seen_[2] = {0, 0};
    std::uint64_t rng_ = 1;

    const engine::Settings& settings_;
    model::Snapshot snapshot_;
    model::LinearModel linear_;
    LearnedContacts contacts_;
    mime::ParsedMessage parsed_;
    std::vector<model::Term> terms_;
    std::vector<model::Slot> slots_;
    double nb_log_odds_ = 0.0;
    model::Verdict verdict_ = model::Verdict::unsure;
};

// TREC online protocol on an in-memory model that learns in place, so each
// message is judged by a model that has learned every message before it.
void online(const std::vector<LabelledMessage>& corpus, const Plan& plan, const engine::Settings& settings,
            const Loader& load, Run& out, const std::function<void()>& tick) {
    InMemoryModel model(settings);
    for (const auto& m : corpus) {
        tick();
        const auto raw = load_usable(load, m.path, settings, out);
        if (!raw) continue;
        auto t0 = Clock::now();
        out.scored.push_back(model.score(*raw, m.spam));
        out.scored_paths.push_back(m.path);
        out.score_seconds += seconds_since(t0);
        t0 = Clock::now();
        if (model.learn(m.spam, plan.train_on_error)) ++out.trained;
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
    std::size_t second = 0;
    if (plan.class_sorted) {
        // All spam first, then all ham, in two commands: `learn --spam A` then `learn --ham B`.
        const auto ham = std::stable_partition(train.begin(), train.end(), [](const LabelledMessage* m) { return m->spam; });
        second = static_cast<std::size_t>(ham - train.begin());
    }
    train_and_score(train, test, settings, db_path, load, out, tick, second);
    return out;
}

}  // namespace mailsift::evaluation
