// fuzz_milter.cpp's reference model of the session (session.hpp's documented
// rules: which commands get a reply, negotiation, close and judge, and what the
// Transaction holds at each end of body), and the checks that compare a
// milter::Session with it after each command and at each end of body.
//
// Part of the fuzz_milter harness only, not a library: fuzz_milter.cpp is its one
// translation unit (see the map in its top comment).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fuzz_support.hpp"
#include "mailsift/milter/protocol.hpp"
#include "mailsift/milter/session.hpp"
#include "milter_reply_checks.hpp"

namespace fuzz_milter {

namespace milter = mailsift::milter;
using mailsift::fuzz::printable;

// ---- reference model of the session (session.hpp's rules) ----

struct Model {
    milter::SessionOptions options;
    bool negotiated = false;
    std::uint32_t actions = 0, steps = 0;
    // connection
    std::string client_name, client_address, helo;
    char family = 'U';
    std::uint16_t port = 0;
    std::map<std::string, std::string> connection_macros;
    // message
    std::map<std::string, std::string> macros;
    std::string sender;
    std::vector<std::string> recipients;
    std::vector<milter::Header> headers;
    std::string message;  // uncapped
    bool headers_done = false;
    bool judged = false;

    void reset_message() {
        macros = connection_macros;
        sender.clear();
        recipients.clear();
        headers.clear();
        message.clear();
        headers_done = false;
    }
    void reset_connection() {
        client_name.clear();
        client_address.clear();
        helo.clear();
        family = 'U';
        port = 0;
        connection_macros.clear();
        reset_message();
        judged = false;
    }
    void end_headers() {
        if (headers_done) return;
        headers_done = true;
        message += "\r\n";
    }

    struct Outcome {
        std::vector<milter::Reply> replies;
        bool judge = false;
        bool close = false;
    };

    Outcome continue_unless(std::uint32_t no_reply_step) const {
        Outcome o;
        if ((steps & no_reply_step) == 0) o.replies.emplace_back(milter::Continue{});
        return o;
    }

    Outcome handle(const milter::Command& command) {
        if (!negotiated && !std::holds_alternative<milter::Negotiate>(command)) return {{}, false, true};
        if (judged) {
            reset_message();
            judged = false;
        }
        if (const auto* n = std::get_if<milter::Negotiate>(&command)) {
            if (n->version < 2) return {{}, false, true};
            reset_connection();
            negotiated = true;
            actions = n->actions & options.actions;
            steps = n->steps & options.steps;
            Outcome o;
            o.replies.emplace_back(milter::NegotiateReply{std::min(n->version, milter::protocol_version), actions, steps});
            return o;
        }
        if (const auto* m = std::get_if<milter::Macros>(&command)) {
            for (const auto& [name, value] : m->values) {
                macros[name] = value;
                if (m->stage == 'C' || m->stage == 'H') connection_macros[name] = value;
            }
            return {};
        }
        if (const auto* c = std::get_if<milter::Connect>(&command)) {
            client_name = c->hostname;
            client_address = c->address;
            family = c->family;
            port = c->port;
            return continue_unless(milter::step::no_reply_connect);
        }
        if (const auto* h = std::get_if<milter::Helo>(&command)) {
            helo = h->name;
            return continue_unless(milter::step::no_reply_helo);
        }
        if (const auto* m = std::get_if<milter::Mail>(&command)) {
            sender = m->args.empty() ? std::string() : m->args.front();
            return continue_unless(milter::step::no_reply_mail);
        }
        if (const auto* r = std::get_if<milter::Rcpt>(&command)) {
            if (!r->args.empty()) recipients.push_back(r->args.front());
            return continue_unless(milter::step::no_reply_rcpt);
        }
        if (std::holds_alternative<milter::Data>(command)) return continue_unless(milter::step::no_reply_data);
        if (std::holds_alternative<milter::Unknown>(command)) return continue_unless(milter::step::no_reply_unknown);
        if (const auto* h = std::get_if<milter::Header>(&command)) {
            const bool leading_space = (steps & milter::step::header_leading_space) != 0;
            message += h->name;
            message += leading_space ? ":" : ": ";
            for (std::size_t i = 0; i < h->value.size(); ++i) {
                if (h->value[i] == '\n' && (i == 0 || h->value[i - 1] != '\r')) message += '\r';
                message += h->value[i];
            }
            message += "\r\n";
            if (message.size() <= options.max_message_bytes) headers.push_back(*h);
            return continue_unless(milter::step::no_reply_header);
        }
        if (std::holds_alternative<milter::EndOfHeaders>(command)) {
            end_headers();
            return continue_unless(milter::step::no_reply_end_of_headers);
        }
        if (const auto* b = std::get_if<milter::Body>(&command)) {
            end_headers();
            message += b->chunk;
            return continue_unless(milter::step::no_reply_body);
        }
        if (const auto* e = std::get_if<milter::EndOfBody>(&command)) {
            end_headers();
            message += e->chunk;
            judged = true;
            return {{}, true, false};
        }
        if (std::holds_alternative<milter::Abort>(command)) {
            reset_message();
            return {};
        }
        if (std::holds_alternative<milter::Quit>(command)) return {{}, false, true};
        // QuitNewConnection: forget the client, keep the negotiation.
        reset_connection();
        return {};
    }
};

// ---- checking a Session against the model ----

inline std::string describe_replies(const std::vector<milter::Reply>& replies) {
    std::string out = "[";
    for (const auto& r : replies) out += reply_name(r) + " ";
    return out + "]";
}

inline void check_transaction(const milter::Session& session, const Model& m) {
    const milter::Transaction& t = session.transaction();
    const std::size_t cap = m.options.max_message_bytes;
    FUZZ_CHECK("txn-client", t.client_name == m.client_name && t.client_address == m.client_address &&
                                 t.client_family == m.family && t.client_port == m.port,
               "client " + printable(t.client_name) + " " + printable(t.client_address) + ", expected " +
                   printable(m.client_name) + " " + printable(m.client_address));
    FUZZ_CHECK("txn-helo", t.helo == m.helo, printable(t.helo) + ", expected " + printable(m.helo));
    FUZZ_CHECK("txn-sender", t.sender == m.sender, printable(t.sender) + ", expected " + printable(m.sender));
    FUZZ_CHECK("txn-recipients", t.recipients == m.recipients,
               std::to_string(t.recipients.size()) + " recipients, expected " + std::to_string(m.recipients.size()));
    FUZZ_CHECK("txn-macros", t.macros == m.macros,
               std::to_string(t.macros.size()) + " macros, expected " + std::to_string(m.macros.size()));
    bool headers_equal = t.headers.size() == m.headers.size();
    for (std::size_t i = 0; headers_equal && i < t.headers.size(); ++i) {
        headers_equal = t.headers[i].name == m.headers[i].name && t.headers[i].value == m.headers[i].value;
    }
    FUZZ_CHECK("txn-headers", headers_equal,
               std::to_string(t.headers.size()) + " headers, expected " + std::to_string(m.headers.size()));
    FUZZ_CHECK("txn-cap", t.message.size() <= cap,
               std::to_string(t.message.size()) + " bytes kept, cap " + std::to_string(cap));
    FUZZ_CHECK("txn-message", t.message == std::string_view(m.message).substr(0, cap),
               "kept " + printable(t.message) + "\nexpected " + printable(std::string_view(m.message).substr(0, cap)));
    FUZZ_CHECK("txn-message-bytes", t.message_bytes == m.message.size(),
               std::to_string(t.message_bytes) + ", expected " + std::to_string(m.message.size()));
    FUZZ_CHECK("txn-truncated", t.truncated == (m.message.size() > cap),
               std::string("truncated=") + (t.truncated ? "true" : "false") + " with " +
                   std::to_string(m.message.size()) + " bytes, cap " + std::to_string(cap));
}

inline void check_session_step(const milter::Session& session, const milter::Session::Outcome& got,
                               const Model::Outcome& want, const Model& m, const std::string& command) {
    const std::string what = "command " + printable(command) + ": replies " + describe_replies(got.replies) +
                             " judge=" + std::to_string(got.judge) + " close=" + std::to_string(got.close) +
                             ", expected " + describe_replies(want.replies) + " judge=" + std::to_string(want.judge) +
                             " close=" + std::to_string(want.close);
    for (const auto& r : got.replies) {
        FUZZ_CHECK("session-no-edits",
                   std::holds_alternative<milter::NegotiateReply>(r) || std::holds_alternative<milter::Continue>(r), what);
    }
    bool same = got.replies.size() == want.replies.size() && got.judge == want.judge && got.close == want.close;
    for (std::size_t i = 0; same && i < got.replies.size(); ++i) {
        same = got.replies[i].index() == want.replies[i].index();
        const auto* a = std::get_if<milter::NegotiateReply>(&got.replies[i]);
        const auto* b = std::get_if<milter::NegotiateReply>(&want.replies[i]);
        if (same && a != nullptr && b != nullptr) {
            same = a->version == b->version && a->actions == b->actions && a->steps == b->steps;
        }
    }
    FUZZ_CHECK("session-outcome", same, what);
    FUZZ_CHECK("session-negotiated",
               session.negotiated() == m.negotiated && session.actions() == m.actions && session.steps() == m.steps,
               what + "\nnegotiated " + std::to_string(session.negotiated()) + " actions " +
                   std::to_string(session.actions()) + " steps " + std::to_string(session.steps()) + ", expected " +
                   std::to_string(m.negotiated) + " " + std::to_string(m.actions) + " " + std::to_string(m.steps));
    FUZZ_CHECK("session-within-offer",
               (session.actions() & ~m.options.actions) == 0 && (session.steps() & ~m.options.steps) == 0, what);
}

}  // namespace fuzz_milter
