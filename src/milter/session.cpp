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
//    are kept (and headers only while they fit); message_bytes counts all.
#include "mailsift/milter/session.hpp"

#include <algorithm>
#include <string_view>

namespace mailsift::milter {

namespace {

Session::Outcome reply_none() { return {}; }
Session::Outcome closing() { return {{}, false, true}; }

// Appends a header value with every bare "\n" turned into "\r\n".
void append_crlf(std::string& out, std::string_view value) {
    for (std::size_t i = 0; i < value.size(); ++i) {
        if (value[i] == '\n' && (i == 0 || value[i - 1] != '\r')) out.push_back('\r');
        out.push_back(value[i]);
    }
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
        t = std::move(fresh);
        s.headers_done_ = false;
    }

    void reset_connection() {
        s.transaction_ = Transaction{};
        s.connection_macros_.clear();
        s.headers_done_ = false;
        s.judged_ = false;
    }

    Outcome operator()(const Negotiate& n) {
        // libmilter speaks nothing older than version 2.
        if (n.version < 2) return closing();
        reset_connection();
        s.negotiated_ = true;
        s.actions_ = n.actions & s.options_.actions;
        s.steps_ = n.steps & s.options_.steps;
        return {{NegotiateReply{std::min(n.version, protocol_version), s.actions_, s.steps_}}};
    }

    Outcome operator()(const Macros& m) {
        const bool connection_stage = m.stage == 'C' || m.stage == 'H';
        for (const auto& [name, value] : m.values) {
            s.transaction_.macros[name] = value;
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
        s.transaction_.sender = m.args.empty() ? std::string() : m.args.front();
        return continue_unless(step::no_reply_mail);
    }

    Outcome operator()(const Rcpt& r) {
        if (!r.args.empty()) s.transaction_.recipients.push_back(r.args.front());
        return continue_unless(step::no_reply_rcpt);
    }

    Outcome operator()(const Data&) { return continue_unless(step::no_reply_data); }
    Outcome operator()(const Unknown&) { return continue_unless(step::no_reply_unknown); }

    Outcome operator()(const Header& h) {
        const bool leading_space = (s.steps_ & step::header_leading_space) != 0;
        std::string line = h.name + (leading_space ? ":" : ": ");
        append_crlf(line, h.value);
        line += "\r\n";
        append(line);
        // Parsed headers are kept only while their lines fit the cap, so memory stays bounded.
        if (!s.transaction_.truncated) s.transaction_.headers.push_back(h);
        return continue_unless(step::no_reply_header);
    }

    Outcome operator()(const EndOfHeaders&) {
        end_headers();
        return continue_unless(step::no_reply_end_of_headers);
    }

    Outcome operator()(const Body& b) {
        end_headers();
        append(b.chunk);
        return continue_unless(step::no_reply_body);
    }

    Outcome operator()(const EndOfBody& e) {
        end_headers();
        append(e.chunk);
        s.judged_ = true;
        return {{}, true, false};
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
    if (!negotiated_ && !std::holds_alternative<Negotiate>(command)) return closing();
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
