// Scorer: keeps a published engine::Model that scoring threads copy by
// pointer; only refresh() touches the store.
#include "scorer.hpp"
#include "file_identity.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace mailsift::daemon {

Scorer::Scorer(std::filesystem::path database, engine::Settings settings)
    : database_(std::move(database)),
      postgresql_(store::is_postgresql(database_.string())),
      shown_(store::display_location(database_.string())),
      settings_(std::move(settings)) {}

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

std::shared_ptr<Scorer::State> Scorer::open_state() {
    const auto open = [&] {
        auto s = std::make_shared<State>();
        s->db = store::open(database_.string(), store::Database::Mode::read_only);
        s->source = std::make_unique<engine::ModelSource>(*s->db, *s->db, settings_);
        s->model = s->source->model();
        s->setting_notes = s->source->setting_notes();
        return s;
    };
    if (postgresql_) return open();
    FileIdentity id;
    auto state = open_identified(database_, open, id);
    state->device = id.device;
    state->inode = id.inode;
    return state;
}

void Scorer::publish(std::shared_ptr<State> state) {
    writer_ = std::move(state);
    std::lock_guard lock(mutex_);
    published_ = writer_->model;
}

void Scorer::detach() {
    writer_->source.reset();  // it reads through the connection
    writer_->db.reset();
}

std::string Scorer::describe_model(const State& state) const {
    const auto& m = state.model;
    std::string out = std::to_string(m->snapshot.messages().spam) + " spam, " +
                      std::to_string(m->snapshot.messages().ham) + " ham, " +
                      std::to_string(m->snapshot.vocabulary()) + " features, at model change " +
                      std::to_string(std::max(m->sequence, m->linear_sequence));  // `mailsift stats`' model_change
    // Where mailsift.conf disagrees with the settings kept with the model (they win).
    for (const auto& note : state.setting_notes) out += "; warning: " + note;
    return out;
}

std::string Scorer::refresh() {
    failed_now_ = false;
    const std::string line = refresh_step();
    if (failed_now_) {
        failing_ = true;
        return line;
    }
    if (failing_) {
        // Back: say so, and let the next problem be said again.
        failing_ = false;
        last_problem_.clear();
        return "database " + shown_ + " answers again" + (line.empty() ? std::string() : "; " + line);
    }
    return line;
}

Scorer::Status Scorer::status() const {
    Status st;
    st.failing = failing_;
    if (writer_ && writer_->model) {
        const auto& m = writer_->model;
        st.has_model = true;
        st.features = m->snapshot.vocabulary();
        st.spam = m->snapshot.messages().spam;
        st.ham = m->snapshot.messages().ham;
        st.linear_behind = m->linear_behind;
        st.model = m;
    }
    return st;
}

std::string Scorer::refresh_step() {
    const auto start = std::chrono::steady_clock::now();
    try {
        if (!writer_ || reconfigured_) {
            publish(open_state());
            reconfigured_ = false;
            missing_ = false;
            last_problem_.clear();
            return "loaded model from " + shown_ + ": " + describe_model(*writer_) + took_since(start);
        }
        FileIdentity now;
        int error = 0;
        if (postgresql_) {
            // No file to watch: the connection reconnects by itself.
        } else if (!identify(database_, now, error)) {
            if (error != ENOENT) throw store::Error(database_, std::string("cannot look at the file: ") + std::strerror(error));
            if (missing_) return {};
            missing_ = true;
            event("database_missing");
            // Let go of the deleted file (and its -wal and -shm), so a database created
            // at this path later starts clean; the model stays in memory.
            detach();
            last_problem_.clear();
            return "database " + database_.string() + " was deleted or moved away; scoring with the model in memory (" +
                   describe_model(*writer_) + ") until a database is there again";
        }
        if (!postgresql_ && (!(now == FileIdentity{writer_->device, writer_->inode}) || !writer_->db)) {
            // Another file at the path (or the same one back): load it; on failure keep what we have.
            // After a deletion any file there is a new one (it may even get the old inode number).
            const bool same = !missing_ && now == FileIdentity{writer_->device, writer_->inode};
            std::shared_ptr<State> fresh;
            try {
                // Close the old connection first: it must not share SQLite's index with the new file.
                if (writer_->db) detach();
                fresh = open_state();
            } catch (const std::exception& e) {
                const std::string problem = std::string(same ? "is back" : "was replaced") + ": " + e.what();
                if (problem == last_problem_) return {};
                last_problem_ = problem;
                return "database " + database_.string() + " " + (same ? "is back" : "was replaced") +
                       " but cannot be loaded; scoring with the model in memory (" + describe_model(*writer_) +
                       "): " + e.what();
            }
            publish(fresh);
            if (!same) event("database_replaced");
            missing_ = false;
            last_problem_.clear();
            return "database " + database_.string() + (same ? " is back" : " was replaced") + "; loaded it: " +
                   describe_model(*writer_) + took_since(start);
        }
        const bool changed = writer_->source->refresh();
        if (writer_->source->settings_stale()) {
            // The first training recorded settings other than this filter's: score with them.
            publish(open_state());
            return "the model's settings were recorded by its first training; loaded it with them: " +
                   describe_model(*writer_) + took_since(start);
        }
        if (changed) {
            writer_->model = writer_->source->model();
            {
                std::lock_guard lock(mutex_);
                published_ = writer_->model;
            }
            const auto& m = writer_->model;
            const std::string how = m->reloaded ? "read every feature"
                                                : "applied " + std::to_string(m->changed_features) + " changed features";
            return "reloaded model (" + how + "): " + describe_model(*writer_) + took_since(start);
        }
        return {};
    } catch (const std::exception& e) {
        failed_now_ = true;
        // Keep serving with the model we have; say so once per distinct problem.
        const std::string problem = e.what();
        if (problem == last_problem_) return {};
        last_problem_ = problem;
        return std::string(writer_ ? "database problem, scoring with the model in memory: "
                                   : "no model yet, answering with the default action: ") +
               problem;
    }
}

std::shared_ptr<const engine::Model> Scorer::model() const {
    std::lock_guard lock(mutex_);
    return published_;
}

engine::Classification Scorer::classify(std::string_view raw, const features::Envelope& envelope,
                                        bool record_features, bool record_parts, std::string_view user) const {
    const auto m = model();
    if (!m) throw std::runtime_error("no model loaded (database " + shown_ + " unavailable)");
    return engine::classify(m, raw,
                            {.envelope = &envelope, .record_features = record_features, .record_parts = record_parts,
                             .made_of = nullptr, .user = user});
}

}  // namespace mailsift::daemon
