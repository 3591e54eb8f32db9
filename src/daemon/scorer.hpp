// The daemon's hold on the engine: the database, and the in-memory model that
// scoring threads share. refresh() (one thread) opens the database when it
// appears and reloads the model when it changed; classify() (any thread) never
// waits for SQLite.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "mailsift/engine/filter.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/features/extractor.hpp"

namespace mailsift::daemon {

class Scorer {
public:
    Scorer(std::filesystem::path database, engine::Settings settings);

    // Opens or reloads as needed. Returns a line for the log when something
    // changed ("loaded model: ..." or "database unavailable: ..."), else "".
    std::string refresh();

    // Throws std::runtime_error when no model is loaded.
    engine::Classification classify(std::string_view raw, const features::Envelope& envelope,
                                    bool record_features = false) const;

    // New settings (SIGHUP): takes effect with the next reload.
    void reconfigure(engine::Settings settings);

private:
    struct State {
        std::unique_ptr<store::Database> db;
        std::unique_ptr<engine::Filter> filter;
    };
    std::filesystem::path database_;
    engine::Settings settings_;         // used by refresh() only
    std::shared_ptr<State> writer_;     // refresh()'s own state
    mutable std::mutex mutex_;          // guards published_
    std::shared_ptr<const State> published_;
    std::string last_problem_;
    bool reconfigured_ = false;
};

}  // namespace mailsift::daemon
