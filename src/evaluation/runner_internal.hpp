// Shared by the evaluation runs (runner.cpp, deployed.cpp), not part of the
// module's interface: a fresh database, training as learn commands, and
// reading a message as the trainer would take it.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mailsift/evaluation/runner.hpp"
#include "mailsift/store/sqlite_database.hpp"

namespace mailsift::evaluation::detail {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t);

// An empty database at `db_path`: evaluation keeps its own temporary file.
store::SqliteDatabase fresh_database(const std::filesystem::path& db_path);

// `train` learned as one learn command, or two when `second` > 0: train[0,
// second) and then the rest, as `learn --spam A` then `learn --ham B`; each
// command commits and refits the linear scorer as `mailsift learn` ends.
void learn_commands(store::Database& db, const std::vector<const LabelledMessage*>& train,
                    const engine::Settings& settings, const Loader& load, Run& out, const std::function<void()>& tick,
                    std::size_t second = 0);

// Puts all spam before all ham (stable); returns where the ham starts.
std::size_t class_sort(std::vector<const LabelledMessage*>& train);

// The message at `path`, or nothing (counted as unreadable) when it cannot be
// read or is no message at all.
std::optional<std::string> load_usable(const Loader& load, const std::string& path, const engine::Settings& settings,
                                       Run& out);

// Plan::Mode::deployed (deployed.cpp).
void deployed(const std::vector<LabelledMessage>& corpus, const Plan& plan, const engine::Settings& settings,
              const std::filesystem::path& work_dir, const Loader& load, Run& out, const std::function<void()>& tick);

}  // namespace mailsift::evaluation::detail
