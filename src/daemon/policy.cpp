// Milter answers for scored, skipped and failed messages.
#include "policy.hpp"

#include <strings.h>

#include <cstdio>
#include "mailsift/engine/signature.hpp"

namespace mailsift::daemon {

const char* to_string(Action a) {
    switch (a) {
        case Action::accepted: return "accepted";
        case Action::tagged_subject: return "tagged";
        case Action::quarantined: return "quarantined";
        case Action::rejected: return "rejected";
        case Action::tempfailed: return "tempfailed";
        case Action::skipped: return "skipped";
    }
    return "accepted";
}

namespace {

std::string trim_angle(std::string_view s) {
    if (s.size() >= 2 && s.front() == '<' && s.back() == '>') s = s.substr(1, s.size() - 2);
    return std::string(s);
}

// Deletes every incoming X-Mailsift-* header: per name, from the last to the
// first, so that deleting one does not renumber the ones still to go.
void strip_ours(const milter::Transaction& t, std::uint32_t actions, std::vector<milter::Reply>& out) {
    if ((actions & milter::action::change_headers) == 0) return;
    // The session counted every such field by name (milter::SessionOptions::watched_header_prefix),
    // past the caps on kept headers and bytes; the MTA numbers fields of one name from 1.
    for (const auto& [name, count] : t.watched) {
        for (std::uint32_t i = count; i >= 1; --i) out.push_back(milter::ChangeHeader{i, name, ""});
    }
}

void add_header(std::uint32_t actions, std::vector<milter::Reply>& out, std::string name, std::string value) {
    // A header value never carries control characters (a reason may come from an error text).
    for (char& c : value) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    }
    if ((actions & milter::action::add_headers) != 0) out.push_back(milter::AddHeader{std::move(name), std::move(value)});
}

std::string number(double v, const char* format) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

// "550 5.7.1 text" -> a validated milter reply, or nothing when it does not validate.
std::optional<milter::ReplyCode> smtp_reply(std::string_view configured) {
    const std::size_t sp1 = configured.find(' ');
    if (sp1 == std::string_view::npos) return std::nullopt;
    const std::size_t sp2 = configured.find(' ', sp1 + 1);
    const std::string_view code = configured.substr(0, sp1);
    const std::string_view enhanced = configured.substr(sp1 + 1, sp2 == std::string_view::npos ? std::string_view::npos : sp2 - sp1 - 1);
    const std::string_view text = sp2 == std::string_view::npos ? std::string_view{} : configured.substr(sp2 + 1);
    auto formatted = milter::format_smtp_reply(code, enhanced, text);
    if (!formatted) return std::nullopt;
    return milter::ReplyCode{std::move(*formatted)};
}

}  // namespace

features::Envelope envelope_of(const milter::Transaction& t) {
    features::Envelope e;
    e.client_address = t.client_address;
    e.client_name = t.client_name;
    e.helo = t.helo;
    e.sender = trim_angle(t.sender);
    for (const auto& r : t.recipients) e.recipients.push_back(trim_angle(r));
    if (auto it = t.macros.find("{auth_authen}"); it != t.macros.end()) e.auth_user = it->second;
    return e;
}

std::string skip_reason(const milter::Transaction& t, const engine::DaemonSettings& d, std::size_t max_message_bytes) {
    if (d.skip_authenticated) {
        if (auto it = t.macros.find("{auth_authen}"); it != t.macros.end() && !it->second.empty()) {
            return "authenticated sender";
        }
    }
    if (d.oversize == engine::DaemonSettings::Oversize::skip && t.message_bytes > max_message_bytes) {
        return "too large (" + std::to_string(t.message_bytes) + " bytes)";
    }
    return {};
}

Answer answer_scored(const milter::Transaction& t, std::uint32_t actions, const engine::Classification& c,
                     const engine::DaemonSettings& d, std::string_view signature) {
    Answer a;
    const double p = c.score.probability;
    if (p >= d.reject_threshold) {
        if (auto reply = smtp_reply(d.reject_reply)) {
            a.replies.push_back(std::move(*reply));
        } else {
            a.replies.push_back(milter::Reject{});
        }
        a.action = Action::rejected;
        return a;
    }
    strip_ours(t, actions, a.replies);
    add_header(actions, a.replies, "X-Mailsift-Status",
               std::string(engine::verdict_word(c.score.verdict)) + ", score=" + number(p, "%.4f") +
                   ", uncalibrated-log-odds=" + number(c.score.log_odds, "%.2f") + (c.prefix_only || t.truncated ? ", scanned=prefix" : ""));
    add_header(actions, a.replies, "X-Mailsift-Signature", std::string(signature));
    if (d.spam_headers) {
        // SpamAssassin's form, which mail clients can be told to trust: the flag on spam only.
        const bool spam = c.score.verdict == model::Verdict::spam;
        if (spam) add_header(actions, a.replies, "X-Spam-Flag", "YES");
        add_header(actions, a.replies, "X-Spam-Status",
                   std::string(spam ? "Yes" : "No") + ", score=" + number(p, "%.4f") + " tests=MAILSIFT_" +
                       (spam ? "SPAM" : c.score.verdict == model::Verdict::ham ? "HAM" : "UNSURE") +
                       " version=mailsift");
    }
    if (d.add_reasons && !(c.toward_spam.empty() && c.toward_ham.empty())) {
        std::string reasons;
        for (const auto* list : {&c.toward_spam, &c.toward_ham}) {
            for (const auto& r : *list) {
                if (!reasons.empty()) reasons += ", ";
                reasons += r.feature + "(" + number(r.log_odds, "%+.2f") + ")";
            }
        }
        add_header(actions, a.replies, "X-Mailsift-Reasons", reasons);
    }
    if (c.score.verdict == model::Verdict::spam && !d.subject_tag.empty() &&
        (actions & milter::action::change_headers) != 0) {
        std::string subject;
        bool has_subject = false;
        for (const auto& h : t.headers) {
            if (strcasecmp(h.name.c_str(), "subject") == 0) {
                subject = h.value;
                has_subject = true;
                break;
            }
        }
        while (!subject.empty() && (subject.front() == ' ' || subject.front() == '\t')) subject.erase(0, 1);
        if (has_subject) {
            a.replies.push_back(milter::ChangeHeader{1, "Subject", d.subject_tag + " " + subject});
        } else {
            add_header(actions, a.replies, "Subject", d.subject_tag);
        }
        a.action = Action::tagged_subject;
    }
    if (p >= d.quarantine_threshold && (actions & milter::action::quarantine) != 0) {
        a.replies.push_back(milter::Quarantine{"mailsift: spam, score=" + number(p, "%.4f")});
        a.action = Action::quarantined;
    }
    a.replies.push_back(milter::Continue{});
    return a;
}

Answer answer_skipped(const milter::Transaction& t, std::uint32_t actions, std::string_view reason) {
    Answer a;
    a.action = Action::skipped;
    strip_ours(t, actions, a.replies);
    add_header(actions, a.replies, "X-Mailsift-Status", "Skipped, reason=" + std::string(reason));
    a.replies.push_back(milter::Continue{});
    return a;
}

Answer answer_failed(const milter::Transaction& t, std::uint32_t actions, const engine::DaemonSettings& d,
                     std::string_view reason) {
    Answer a;
    if (d.on_error == engine::DaemonSettings::OnError::tempfail) {
        a.replies.push_back(milter::Tempfail{});
        a.action = Action::tempfailed;
        return a;
    }
    strip_ours(t, actions, a.replies);
    add_header(actions, a.replies, "X-Mailsift-Status", "Error, reason=" + std::string(reason));
    a.replies.push_back(milter::Continue{});
    return a;
}

Answer answer_unremovable_headers() {
    // No legitimate message carries dozens of differently named X-Mailsift-*
    // fields; past what the session could count, some might be left in place,
    // so the message is refused rather than delivered with a forged verdict.
    Answer a;
    a.action = Action::rejected;
    a.replies.push_back(*smtp_reply("550 5.7.1 Message carries too many X-Mailsift header fields"));
    return a;
}

}  // namespace mailsift::daemon
