// mailsift::evaluation runner — the experiment cycle on a labelled corpus:
// train in a temporary database, score held-out messages, never touch the
// live model. Reading files is the caller's job (a loader callback), so this
// module knows messages only as bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mailsift/engine/settings.hpp"
#include "mailsift/evaluation/metrics.hpp"

namespace mailsift::evaluation {

struct LabelledMessage {
    std::string path;
    bool spam = false;
};

struct Plan {
    enum class Mode : std::uint8_t {
        split_every,     // message i (1-based, in corpus order) is test when i % every == 0
        split_fraction,  // test when a hash of the path falls in the first `fraction` (deterministic)
        split_head,      // chronological: the first `fraction` of the corpus (in its order) trains, the rest is test
        folds,           // k-fold cross-validation: fold = i % folds
        online,          // TREC: in corpus order, classify each message, then learn its gold label
    };
    Mode mode = Mode::split_every;
    std::size_t every = 5;
    double fraction = 0.2;
    std::size_t folds = 10;
    bool train_on_error = false;  // online: learn only messages not classified right (unsure counts as wrong)
    bool class_sorted = false;    // splits: learn all training spam, then all training ham
    // Thick-threshold training is settings.train_margin, in every mode, as `learn` does it.
};

// The bytes of one message, or nothing when it cannot be read.
using Loader = std::function<std::optional<std::string>(const std::string& path)>;
// Called now and then with (done, total) work units.
using Progress = std::function<void(std::size_t done, std::size_t total)>;

struct Run {
    std::vector<Scored> scored;
    std::vector<std::string> scored_paths;  // beside `scored`: which message each score is
    std::size_t trained = 0;
    std::size_t unreadable = 0;  // loader failures and messages the trainer refused
    double train_seconds = 0.0;
    double score_seconds = 0.0;
};

// Runs the plan with `settings`, each training in a fresh database under `work_dir`.
Run run(const std::vector<LabelledMessage>& corpus, const Plan& plan, const engine::Settings& settings,
        const std::filesystem::path& work_dir, const Loader& load, const Progress& progress = {});

}  // namespace mailsift::evaluation
