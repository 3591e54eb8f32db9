// One finished message in, the daemon's answer out: skip, score or fail, then
// record what was scored (for corrections), contacts from outgoing mail, and
// counters. Runs on a scoring thread; never touches sockets.
#pragma once

#include <atomic>
#include <cstdint>

#include "mailsift/engine/settings.hpp"
#include "mailsift/milter/session.hpp"
#include "metrics.hpp"
#include "policy.hpp"
#include "recorder.hpp"
#include "scorer.hpp"

namespace mailsift::daemon {

// Totals for the log line at exit.
struct Totals {
    std::atomic<std::uint64_t> messages{0}, spam{0}, ham{0}, unsure{0}, skipped{0}, errors{0};
};

Answer judge(const milter::Transaction& t, std::uint32_t actions, const engine::Settings& settings, const Scorer& scorer,
             Recorder& recorder, Totals& totals, Metrics* metrics = nullptr);

}  // namespace mailsift::daemon
