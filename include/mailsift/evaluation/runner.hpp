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
        // As deployed (deployed.cpp): the first `fraction` learned class by
        // class, as the README teaches; the rest scored by the daemon's code in
        // batches of `batch`, each scan recorded, and after each batch the
        // messages users see as wrong corrected through `mailsift correct`'s
        // code of their delivered copies, one command each.
        deployed,
    };
    Mode mode = Mode::split_every;
    std::size_t every = 5;
    double fraction = 0.2;
    std::size_t folds = 10;
    bool train_on_error = false;  // online: learn only messages not classified right (unsure counts as wrong)
    bool class_sorted = false;    // splits: learn all training spam, then all training ham
    std::size_t batch = 100;      // deployed: messages scored between two rounds of corrections
    // deployed: users move spam out of the inbox only, never look in Junk
    // (one-sided feedback); otherwise ham in Junk is moved back out too.
    bool one_sided = false;
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
    // Mode::deployed: what the users did, and how the same model would have
    // delivered the same messages with no corrections at all.
    struct Deployed {
        std::size_t moved_to_junk = 0;   // spam left in the inbox (ham or unsure), corrected to spam
        std::size_t moved_from_junk = 0;  // ham in Junk, corrected to ham
        // The model as first learned, never corrected, on the same messages (beside `scored`).
        std::vector<Scored> uncorrected;
    };
    std::optional<Deployed> deployed;
};

// Runs the plan with `settings`, each training in a fresh database under `work_dir`.
Run run(const std::vector<LabelledMessage>& corpus, const Plan& plan, const engine::Settings& settings,
        const std::filesystem::path& work_dir, const Loader& load, const Progress& progress = {});

}  // namespace mailsift::evaluation
