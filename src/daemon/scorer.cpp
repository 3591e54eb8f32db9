// Scorer: keeps a published (database, filter) pair that scoring threads copy
// by pointer; only refresh() touches SQLite.
#include "scorer.hpp"

#include <chrono>
#include <stdexcept>

namespace mailsift::daemon {

Scorer::Scorer(std::filesystem::path database, engine::Settings settings)
    : database_(std::move(database)), settings_(std::move(settings)) {}

void Scorer::reconfigure(engine::Settings settings) {
    settings_ = std::move(settings);
    reconfigured_ = true;
}

namespace {
std::string took_since(std::chrono::steady_clock::time_point start) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    return " in " + std::to_string(ms.count()) + " ms";
}
}  // namespace

std::string Scorer::refresh() {
    const auto start = std::chrono::steady_clock::now();
    try {
        if (!writer_ || reconfigured_) {
            auto state = std::make_shared<State>();
            state->db = std::make_unique<store::Database>(database_, store::Database::Mode::read_only);
            state->filter = std::make_unique<engine::Filter>(*state->db, settings_);
            writer_ = state;
            reconfigured_ = false;
            {
                std::lock_guard lock(mutex_);
                published_ = state;
            }
            last_problem_.clear();
            const auto m = state->filter->model();
            return "loaded model from " + database_.string() + ": " + std::to_string(m->snapshot.messages().spam) +
                   " spam, " + std::to_string(m->snapshot.messages().ham) + " ham, " +
                   std::to_string(m->snapshot.vocabulary()) + " features" + took_since(start);
        }
        if (writer_->filter->refresh()) {
            const auto m = writer_->filter->model();
            return "reloaded model: " + std::to_string(m->snapshot.messages().spam) + " spam, " +
                   std::to_string(m->snapshot.messages().ham) + " ham, " + std::to_string(m->snapshot.vocabulary()) +
                   " features" + took_since(start);
        }
        return {};
    } catch (const std::exception& e) {
        // Keep serving with the model we have; say so once per distinct problem.
        const std::string problem = e.what();
        if (problem == last_problem_) return {};
        last_problem_ = problem;
        return std::string(writer_ ? "database problem, scoring with the model in memory: "
                                   : "no model yet, answering with the default action: ") +
               problem;
    }
}

engine::Classification Scorer::classify(std::string_view raw, const features::Envelope& envelope,
                                        bool record_features) const {
    std::shared_ptr<const State> state;
    {
        std::lock_guard lock(mutex_);
        state = published_;
    }
    if (!state) throw std::runtime_error("no model loaded (database " + database_.string() + " unavailable)");
    return state->filter->classify(raw, &envelope, record_features);
}

}  // namespace mailsift::daemon
