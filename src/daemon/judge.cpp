// judge(): the per-message work of the daemon, in order: skip, score, answer,
// record, count, log.
#include "judge.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <optional>

#include "log.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/engine/user_layers.hpp"
#include "mailsift/mime/message.hpp"
#include "mailsift/model/score.hpp"

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

const char* limit_name(mime::LimitHit hit) {
    switch (hit) {
        case mime::LimitHit::message_bytes: return "max_message_bytes";
        case mime::LimitHit::depth: return "max_depth (MIME nesting)";
        case mime::LimitHit::parts: return "max_parts (MIME parts)";
        case mime::LimitHit::headers: return "max_headers (header fields in one part)";
        case mime::LimitHit::header_bytes: return "max_header_bytes (one header field)";
    }
    return "a limit";
}

// Which limits a message hit, for one log line: "" when none. The MTA's message
// over max_message_bytes is known from the transaction, the MIME limits from the
// classification.
std::string limits_hit(const milter::Transaction& t, const std::vector<mime::LimitHit>& mime_limits) {
    std::string out;
    if (t.truncated) {
        out = "max_message_bytes (" + std::to_string(t.message_bytes) + " bytes, " +
              std::to_string(t.message.size()) + " kept)";
    }
    for (const auto hit : mime_limits) {
        if (hit == mime::LimitHit::message_bytes && t.truncated) continue;
        out += (out.empty() ? "" : ", ") + std::string(limit_name(hit));
    }
    return out;
}

// The first header field `name` as the console shows it: unfolded, RFC 2047
// decoded, at most 512 bytes (cut at a character boundary).
std::string header_text(const milter::Transaction& t, std::string_view name) {
    for (const auto& h : t.headers) {
        if (h.name.size() != name.size() ||
            !std::equal(name.begin(), name.end(), h.name.begin(),
                        [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) ==
                                                    std::tolower(static_cast<unsigned char>(b)); })) {
            continue;
        }
        std::string value;
        for (char c : h.value) value += (c == '\r' || c == '\n') ? ' ' : c;
        const auto first = value.find_first_not_of(" \t");
        std::string text = mime::decode_header_value(first == std::string::npos ? "" : value.substr(first));
        if (text.size() > 512) {
            std::size_t cut = 512;
            while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
            text.resize(cut);
        }
        return text;
    }
    return {};
}

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) {
        if (out.size() + i.size() > 2048) return out + (out.empty() ? "" : ", ") + "...";
        out += (out.empty() ? "" : ", ") + i;
    }
    return out;
}

std::string macro(const milter::Transaction& t, const char* name) {
    const auto it = t.macros.find(name);
    return it == t.macros.end() ? std::string() : it->second;
}

// The queue ID as a log line names the message: the MTA's macro "i" (any
// bytes a milter client sends: log.hpp escapes them), cut short, or "-".
std::string queue_id_for_log(const milter::Transaction& t) {
    const auto it = t.macros.find("i");
    return it == t.macros.end() || it->second.empty() ? std::string("-") : clip_field(it->second);
}

// `s` as valid UTF-8: what a stranger sent may be any bytes, and a store
// keeping text (PostgreSQL's text columns) refuses what is not.
std::string utf8_text(std::string s) {
    if (std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) return s;
    return mime::to_utf8(s, "utf-8");
}

// What a history line says of any message, scored or not: who sent it to
// whom, through which client and queue, and what it says it is.
store::HistoryEntry history_line(const milter::Transaction& t, bool subjects, std::int64_t now) {
    store::HistoryEntry h;
    h.scanned_at = now;
    h.sender = utf8_text(t.sender);
    h.recipients = utf8_text(joined(t.recipients));
    h.from = utf8_text(header_text(t, "From"));
    h.to = utf8_text(header_text(t, "To"));
    if (subjects) h.subject = utf8_text(header_text(t, "Subject"));
    h.message_id = utf8_text(header_text(t, "Message-ID"));
    h.queue_id = utf8_text(macro(t, "i"));
    h.client_address = utf8_text(t.client_address);
    h.helo = utf8_text(t.helo);
    h.size = t.message_bytes;
    return h;
}

std::string authenticated_user(const milter::Transaction& t) {
    const auto it = t.macros.find("{auth_authen}");
    return it == t.macros.end() ? std::string() : it->second;
}

}  // namespace

Answer judge(const milter::Transaction& t, std::uint32_t actions, const engine::Settings& s, const Scorer& scorer,
             Recorder& recorder, Totals& totals, Metrics* metrics) {
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
    Metrics::Verdict metric_verdict = Metrics::Verdict::skipped;
    std::vector<mime::LimitHit> mime_limits;
    std::optional<store::HistoryEntry> history;  // the message's line in the console's history
    if (t.watched_overflow) {
        answer = answer_unremovable_headers();
        recorder.count("rejected_forged_headers");
        log_warning("message " + queue_id_for_log(t) + ": more than " +
                    std::to_string(t.watched.size()) +
                    " distinct X-Mailsift-* header names, which cannot all be removed; rejected");
        if (d.record_history) {
            history = history_line(t, d.history_subjects, now);  // no signature: not scored
            history->scored = false;
            history->reason = "more X-Mailsift-* header names than can be removed";
        }
    } else if (const std::string why = skip_reason(t, d, s.limits.max_message_bytes); !why.empty()) {
        answer = answer_skipped(t, actions, why);
        ++totals.skipped;
        recorder.count("skipped");
        if (d.record_history) {
            // Found in the history with the reason, by its line's own id: it has no signature.
            history = history_line(t, d.history_subjects, now);
            history->scored = false;
            history->reason = why;
        }
    } else {
        try {
            // An explanation quotes words and fragments of the message, its Subject among
            // them: a site that keeps no Subject lines keeps no explanations either.
            const bool explained = d.record_history && d.history_subjects;
            // One recipient: scored with their layer (per_user); several: the site's model
            // alone, so that no verdict shows what another recipient taught.
            const std::optional<std::string> user = engine::message_user(s.per_user, envelope.recipients);
            const auto c = scorer.classify(t.message, envelope, d.record_signatures, explained, user.value_or(""));
            mime_limits = c.limits_hit;
            const auto digest = engine::message_digest(t.message);
            answer = answer_scored(t, actions, c, d, engine::signature_text(digest));
            if (d.record_signatures) recorder.scan(digest, now, c.score.verdict, c.features, user.value_or(""));
            if (d.record_history) {
                history = history_line(t, d.history_subjects, now);
                history->signature = digest;  // what corrections key; the line gets an id of its own
                history->verdict = c.score.verdict;
                history->probability = c.score.probability;
                if (c.parts) history->explanation = engine::encode(*c.parts);
            }
            verdict = std::string(model::to_string(c.score.verdict)) + " p=" + std::to_string(c.score.probability) +
                      " log-odds=" + std::to_string(c.score.log_odds);
            metric_verdict = c.score.verdict == model::Verdict::spam  ? Metrics::Verdict::spam
                             : c.score.verdict == model::Verdict::ham ? Metrics::Verdict::ham
                                                                      : Metrics::Verdict::unsure;
            ++(c.score.verdict == model::Verdict::spam  ? totals.spam
               : c.score.verdict == model::Verdict::ham ? totals.ham
                                                        : totals.unsure);
            recorder.count(std::string("verdict_") + model::to_string(c.score.verdict));
        } catch (const std::exception& e) {
            ++totals.errors;
            metric_verdict = Metrics::Verdict::error;
            recorder.count("errors");
            log_warning(std::string("scoring failed, applying on_error: ") + e.what());
            answer = answer_failed(t, actions, d, "scoring failed");
        }
    }
    if (history) {
        history->action = to_string(answer.action);
        recorder.history(std::move(*history));
    }
    ++totals.messages;
    recorder.count("messages");
    recorder.count(std::string("action_") + to_string(answer.action));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    recorder.count(latency_bucket(ms));
    if (metrics != nullptr) {
        static constexpr Metrics::Action actions_by_policy[] = {Metrics::Action::accepted, Metrics::Action::tagged,
                                                                Metrics::Action::quarantined, Metrics::Action::rejected,
                                                                Metrics::Action::tempfailed, Metrics::Action::skipped};
        metrics->message(metric_verdict, actions_by_policy[static_cast<std::size_t>(answer.action)], ms / 1000.0);
    }
    const std::string name = "message " + queue_id_for_log(t) + ": ";
    // One line per message that hit a limit, before its verdict line.
    if (const std::string hit = limits_hit(t, mime_limits); !hit.empty()) {
        log_warning(name + "limits hit, " +
                    (answer.action == Action::skipped ? "not scored" : "scored on what was read") + ": " + hit);
    }
    log_info(name + verdict + " " + to_string(answer.action) + " " + std::to_string(t.message_bytes) + " bytes " +
             std::to_string(ms) + " ms");
    return answer;
}

}  // namespace mailsift::daemon
