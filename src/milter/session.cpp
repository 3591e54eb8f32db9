// The per-connection milter state machine. Contract (see also session.hpp):
//  - only Negotiate is understood before negotiation; anything else, and an
//    offer older than version 2, asks the owner to close (no reply);
//  - Negotiate answers min(offered, 6) and the AND of offer and options, and
//    starts the connection afresh;
//  - Macros, Abort and QuitNewConnection get no reply; EndOfBody sets judge;
//    Quit sets close; every other command gets one Continue unless its step
//    was negotiated as no-reply;
//  - macros of stages 'C' and 'H' belong to the connection, all others to the
//    message: Abort and the command after a judged EndOfBody drop them;
//  - the message is rebuilt as "Name: value\r\n" lines ("Name:value" when the
//    value keeps its leading space), a blank line, then the body as sent; bare
//    "\n" in folded header values becomes "\r\n". At most max_message_bytes
//    are kept (and headers only while they fit, and at most max_headers of
//    them); message_bytes counts all;
//  - order is noted, never enforced: a command that comes where Postfix would
//    not send it (content before MAIL FROM, a header after the body, a second
//    MAIL FROM without Abort) is handled as usual and Outcome::note says so,
//    once per message, so that a confused or hostile peer is visible in the log.
#include "mailsift/milter/session.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>

namespace mailsift::milter {

namespace {

Session::Outcome reply_none() { return {}; }
Session::Outcome closing() { return {{}, false, true, {}}; }

// Appends a header value with every bare "\n" turned into "\r\n".
void append_crlf(std::string& out, std::string_view value) {
    for (std::size_t i = 0; i < value.size(); ++i) {
        if (value[i] == '\n' && (i == 0 || value[i - 1] != '\r')) out.push_back('\r');
        out.push_back(value[i]);
    }
}

// Does `text` start with `prefix`, ASCII case ignored?
bool iequals_prefix(std::string_view text, std::string_view prefix) {
    if (text.size() < prefix.size()) return false;
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        if (lower(text[i]) != lower(prefix[i])) return false;
    }
    return true;
}

}  // namespace

// One handler per command, plus the state changes they share.
struct Session::Handler {
    Session& s;

    Outcome continue_unless(std::uint32_t no_reply_step) const {
        Outcome o;
        if ((s.steps_ & no_reply_step) == 0) o.replies.emplace_back(Continue{});
        return o;
    }

    void append(std::string_view bytes) {
        Transaction& t = s.transaction_;
        t.message_bytes += bytes.size();
        const std::size_t room = s.options_.max_message_bytes - std::min(t.message.size(), s.options_.max_message_bytes);
        t.message.append(bytes.substr(0, room));
        if (bytes.size() > room) t.truncated = true;
    }

    // Records a command out of the usual order, once per message.
    void odd(Outcome& o, const char* what) {
        if (s.noted_) return;
        s.noted_ = true;
        o.note = what;
    }

    // Counts a field the owner wants to be able to delete, past every other cap.
    void watch(Transaction& t, const std::string& name) const {
        const std::string& prefix = s.options_.watched_header_prefix;
        const auto& names = s.options_.watched_header_names;
        const bool named = std::any_of(names.begin(), names.end(), [&](const std::string& n) {
            return n.size() == name.size() && iequals_prefix(name, n);
        });
        if (!named && (prefix.empty() || !iequals_prefix(name, prefix))) return;
        for (auto& [seen, n] : t.watched) {
            if (seen.size() == name.size() && iequals_prefix(name, seen)) {
                if (n < std::numeric_limits<std::uint32_t>::max()) ++n;
                return;
            }
        }
        if (t.watched.size() < s.options_.max_watched_names) {
            t.watched.emplace_back(name, 1);
        } else {
            t.watched_overflow = true;
        }
    }

    void end_headers() {
        if (s.headers_done_) return;
        s.headers_done_ = true;
        append("\r\n");
    }

    void reset_message() {
        Transaction& t = s.transaction_;
        Transaction fresh;
        fresh.client_name = std::move(t.client_name);
        fresh.client_address = std::move(t.client_address);
        fresh.client_family = t.client_family;
        fresh.client_port = t.client_port;
        fresh.helo = std::move(t.helo);
        fresh.macros = s.connection_macros_;
        replace_transaction(std::move(fresh));
        s.headers_done_ = false;
        s.stage_ = 0;
        s.noted_ = false;
    }

    // Swapped in, not move-assigned: assigning an empty string keeps the old
    // buffer, so each connection would hold on to the largest message it ever
    // carried (512 connections: hundreds of MB after a few hours).
    void replace_transaction(Transaction fresh) const { std::swap(s.transaction_, fresh); }

    void reset_connection() {
        replace_transaction(Transaction{});
        s.connection_macros_.clear();
        s.headers_done_ = false;
        s.judged_ = false;
        s.stage_ = 0;
        s.noted_ = false;
    }

    Outcome operator()(const Negotiate& n) {
        // libmilter speaks nothing older than version 2.
        if (n.version < 2) {
            Outcome o = closing();
            o.note = "negotiation offered protocol version " + std::to_string(n.version) + ", older than 2";
            return o;
        }
        reset_connection();
        s.negotiated_ = true;
        s.actions_ = n.actions & s.options_.actions;
        s.steps_ = n.steps & s.options_.steps;
        return {{NegotiateReply{std::min(n.version, protocol_version), s.actions_, s.steps_}}, false, false, {}};
    }

    Outcome operator()(const Macros& m) {
        const bool connection_stage = m.stage == 'C' || m.stage == 'H';
        for (const auto& [name, value] : m.values) {
            // New names beyond the cap are dropped: an MTA sends a dozen or so.
            auto& macros = s.transaction_.macros;
            if (macros.size() >= s.options_.max_macros && macros.find(name) == macros.end()) continue;
            macros[name] = value;
            if (connection_stage) s.connection_macros_[name] = value;
        }
        return reply_none();
    }

    Outcome operator()(const Connect& c) {
        Transaction& t = s.transaction_;
        t.client_name = c.hostname;
        t.client_address = c.address;
        t.client_family = c.family;
        t.client_port = c.port;
        return continue_unless(step::no_reply_connect);
    }

    Outcome operator()(const Helo& h) {
        s.transaction_.helo = h.name;
        return continue_unless(step::no_reply_helo);
    }

    Outcome operator()(const Mail& m) {
        // The sender of the message is the last one given.
        Outcome o = continue_unless(step::no_reply_mail);
        if (s.stage_ != 0) odd(o, "MAIL FROM again within one message");
        s.stage_ = std::max(s.stage_, 1);
        s.transaction_.sender = m.args.empty() ? std::string() : m.args.front();
        return o;
    }

    Outcome operator()(const Rcpt& r) {
        Outcome o = continue_unless(step::no_reply_rcpt);
        if (s.stage_ == 0) odd(o, "RCPT TO before MAIL FROM");
        else if (s.stage_ > 1) odd(o, "RCPT TO after the message content began");
        // Recipients are few in real mail; a flood of them is kept only within the message cap.
        if (!r.args.empty() && s.transaction_.recipients.size() < s.options_.max_recipients)
            s.transaction_.recipients.push_back(r.args.front());
        return o;
    }

    Outcome operator()(const Data&) { return continue_unless(step::no_reply_data); }
    Outcome operator()(const Unknown&) { return continue_unless(step::no_reply_unknown); }

    // Content (headers, body, end of message) before MAIL FROM is noted.
    void content(Outcome& o, const char* what) {
        if (s.stage_ == 0) odd(o, what);
    }

    Outcome operator()(const Header& h) {
        Outcome o = continue_unless(step::no_reply_header);
        content(o, "a header before MAIL FROM");
        // Kept as before (its line lands after the blank line, in the body text).
        if (s.headers_done_) odd(o, "a header after the end of the headers");
        s.stage_ = std::max(s.stage_, 2);
        const bool leading_space = (s.steps_ & step::header_leading_space) != 0;
        std::string line = h.name + (leading_space ? ":" : ": ");
        append_crlf(line, h.value);
        line += "\r\n";
        append(line);
        // Parsed headers are kept only while their lines fit the cap, and only so
        // many of them, so memory stays bounded.
        Transaction& t = s.transaction_;
        ++t.header_count;
        if (!t.truncated && t.headers.size() < s.options_.max_headers) t.headers.push_back(h);
        watch(t, h.name);
        return o;
    }

    Outcome operator()(const EndOfHeaders&) {
        Outcome o = continue_unless(step::no_reply_end_of_headers);
        content(o, "end of headers before MAIL FROM");
        s.stage_ = 3;
        end_headers();
        return o;
    }

    Outcome operator()(const Body& b) {
        Outcome o = continue_unless(step::no_reply_body);
        content(o, "body before MAIL FROM");
        s.stage_ = 3;
        end_headers();
        append(b.chunk);
        return o;
    }

    Outcome operator()(const EndOfBody& e) {
        Outcome o{{}, true, false, {}};
        content(o, "end of message before MAIL FROM");
        end_headers();
        append(e.chunk);
        // Complete: the slack its growth left goes (it waits for the scoring
        // pool, 512 of them at once on a busy server).
        s.transaction_.message.shrink_to_fit();
        s.judged_ = true;
        return o;
    }

    Outcome operator()(const Abort&) {
        reset_message();
        return reply_none();
    }

    Outcome operator()(const Quit&) { return closing(); }

    Outcome operator()(const QuitNewConnection&) {
        reset_connection();
        return reply_none();
    }
};

Session::Outcome Session::handle(const Command& command) {
    // Nothing but negotiation is understood before negotiation.
    if (!negotiated_ && !std::holds_alternative<Negotiate>(command)) {
        Outcome o = closing();
        o.note = "a command before negotiation";
        return o;
    }
    // The judged message stays readable until the next command, which starts a fresh one.
    if (judged_) {
        Handler{*this}.reset_message();
        judged_ = false;
    }
    return std::visit(Handler{*this}, command);
}

void Session::prepare(std::vector<Reply>& replies) const {
    if ((steps_ & step::header_leading_space) == 0) return;
    auto space = [](std::string& value) {
        if (!value.empty() && value.front() != ' ' && value.front() != '\t') value.insert(0, 1, ' ');
    };
    for (auto& r : replies) {
        if (auto* a = std::get_if<AddHeader>(&r)) space(a->value);
        else if (auto* i = std::get_if<InsertHeader>(&r)) space(i->value);
        else if (auto* c = std::get_if<ChangeHeader>(&r)) space(c->value);  // "" still deletes
    }
}

}  // namespace mailsift::milter
