// The daemon's hold on the engine: the database and its model source (one
// thread's), and the in-memory model that scoring threads share. refresh()
// (one thread) opens the database when it appears and reloads the model when
// it changed, publishing each new engine::Model; classify() (any thread) scores
// with the Model published last and never waits for the store.
//
// The database file is watched by identity (device and inode), not only by
// SQLite's data_version: a connection keeps reading a file that was deleted or
// replaced under it. When the file is gone, the daemon closes its connection
// (so a new database at that path starts clean) and scores with the model in
// memory; when another file took its place, it loads that one (keeping the old
// model if the new file cannot be loaded). Each such event is logged once and
// reported through on_event ("database_missing", "database_replaced") so it is
// counted in the statistics.
//
// A PostgreSQL database has no file to watch: the connection reconnects by
// itself, and while the server is away refresh() reports the problem once and
// scoring goes on with the model in memory.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "mailsift/engine/model_source.hpp"
#include "mailsift/engine/scorer.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/store/database.hpp"
#include "mailsift/features/extractor.hpp"

namespace mailsift::daemon {

class Scorer {
public:
    Scorer(std::filesystem::path database, engine::Settings settings);

    // Opens or reloads as needed. Returns a line for the log when something
    // changed ("loaded model: ...", "database unavailable: ...", "database ...
    // was deleted ...", "database ... was replaced ..."), else "".
    std::string refresh();

    // What refresh() left, for the metrics (call from the refresh thread).
    struct Status {
        bool has_model = false;
        std::uint64_t features = 0, spam = 0, ham = 0;
        bool failing = false;  // the last look at the database failed
        bool linear_behind = false;  // engine::Model::linear_behind
        std::shared_ptr<const void> model;  // the model in memory (compare, do not keep)
    };
    Status status() const;

    // Called (on the refresh thread) with the name of a counter to increment
    // when the database file was found deleted or replaced.
    void on_event(std::function<void(const std::string&)> f) { on_event_ = std::move(f); }

    // The model scoring uses now (the console scans with it); null while none is loaded.
    std::shared_ptr<const engine::Model> model() const;

    // Throws std::runtime_error when no model is loaded. `user`: scored with
    // that user's layer (per_user); empty: the site's model alone.
    engine::Classification classify(std::string_view raw, const features::Envelope& envelope,
                                    bool record_features = false, bool record_parts = false,
                                    std::string_view user = {}) const;

    // New settings (SIGHUP): takes effect with the next reload.
    void reconfigure(engine::Settings settings);

private:
    struct State {
        std::unique_ptr<store::Database> db;           // null: the file is gone, scoring with the model in memory
        std::unique_ptr<engine::ModelSource> source;   // reads db; null with it
        std::shared_ptr<const engine::Model> model;    // the last one source built (published)
        std::vector<std::string> setting_notes;        // ModelSource::setting_notes, kept for the log
        dev_t device = 0;
        ino_t inode = 0;
    };
    std::string refresh_step();
    std::shared_ptr<State> open_state();
    void publish(std::shared_ptr<State> state);  // refresh()'s own from now, and its model published
    void detach();  // closes the connection (the file is gone or replaced); the model stays
    std::string describe_model(const State& state) const;
    void event(const std::string& name) const {
        if (on_event_) on_event_(name);
    }

    std::filesystem::path database_;
    bool postgresql_;                   // no file to watch
    std::string shown_;                 // the database as the log names it (no password)
    engine::Settings settings_;         // used by refresh() only
    std::shared_ptr<State> writer_;     // refresh()'s own state
    mutable std::mutex mutex_;          // guards published_
    std::shared_ptr<const engine::Model> published_;
    std::string last_problem_;
    bool reconfigured_ = false;
    bool missing_ = false;              // the file was found deleted and has not come back
    bool failed_now_ = false;           // refresh_step() ended in an error
    bool failing_ = false;              // ... and no refresh has worked since
    std::function<void(const std::string&)> on_event_;
};

}  // namespace mailsift::daemon
