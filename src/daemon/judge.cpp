// judge(): the per-message work of the daemon, in order: skip, score, answer,
// record, count, log.
#include "judge.hpp"

#include <chrono>
#include <ctime>

#include "log.hpp"

namespace mailsift::daemon {

namespace {

const char* latency_bucket(double ms) {
    if (ms <= 1) return "latency_ms_le_1";
    if (ms <= 2) return "latency_ms_le_2";
    if (ms <= 5) return "latency_ms_le_5";
    if (ms <= 10) return "latency_ms_le_10";
    if (ms <= 50) return "latency_ms_le_50";
    if (ms <= 250) return "latency_ms_le_250";
    return "latency_ms_gt_250";
}

std::string authenticated_user(const milter::Transaction& t) {
    const auto it = t.macros.find("{auth_authen}");
    return it == t.macros.end() ? std::string() : it->second;
}

}  // namespace

Answer judge(const milter::Transaction& t, std::uint32_t actions, const engine::Settings& s, const Scorer& scorer,
             Recorder& recorder, Totals& totals) {
    const auto started = std::chrono::steady_clock::now();
    const auto now = static_cast<std::int64_t>(std::time(nullptr));
    const auto& d = s.daemon;
    const features::Envelope envelope = envelope_of(t);

    // Outgoing mail of our own users tells us whom they correspond with.
    if (const std::string user = authenticated_user(t); !user.empty() && d.learn_contacts) {
        for (const auto& rcpt : envelope.recipients) {
            // Lower-case addr-spec, as every other contact and the From lookup.
            if (std::string address = features::address_in(rcpt); !address.empty()) {
                recorder.contact(std::move(address), "sent by " + user, now);
            }
        }
    }

    Answer answer;
    std::string verdict = "-";
    if (const std::string why = skip_reason(t, d, s.limits.max_message_bytes); !why.empty()) {
        answer = answer_skipped(t, actions, why);
        ++totals.skipped;
        recorder.count("skipped");
    } else {
        try {
            const auto c = scorer.classify(t.message, envelope, d.record_signatures);
            const auto digest = engine::message_digest(t.message);
            answer = answer_scored(t, actions, c, d, engine::signature_text(digest));
            if (d.record_signatures) recorder.scan({digest, now, c.score.verdict, c.features});
            verdict = std::string(model::to_string(c.score.verdict)) + " p=" + std::to_string(c.score.probability) +
                      " log-odds=" + std::to_string(c.score.log_odds);
            ++(c.score.verdict == model::Verdict::spam  ? totals.spam
               : c.score.verdict == model::Verdict::ham ? totals.ham
                                                        : totals.unsure);
            recorder.count(std::string("verdict_") + model::to_string(c.score.verdict));
        } catch (const std::exception& e) {
            ++totals.errors;
            recorder.count("errors");
            log_warning(std::string("scoring failed, applying on_error: ") + e.what());
            answer = answer_failed(t, actions, d, "scoring failed");
        }
    }
    ++totals.messages;
    recorder.count("messages");
    recorder.count(std::string("action_") + to_string(answer.action));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    recorder.count(latency_bucket(ms));
    const auto id = t.macros.find("i");
    log_info("message " + (id == t.macros.end() ? std::string("-") : id->second) + ": " + verdict + " " +
             to_string(answer.action) + " " + std::to_string(t.message_bytes) + " bytes " + std::to_string(ms) + " ms");
    return answer;
}

}  // namespace mailsift::daemon
