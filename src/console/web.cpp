// The console's HTTP small change: see web.hpp.
#include "web.hpp"

namespace mailsift::console {

namespace http = boost::beast::http;
using nlohmann::json;

void add_security_headers(Response& r, bool tls) {
    r.set(http::field::server, "mailsiftd");
    // Under TLS, browsers are told to come back only over HTTPS for a year.
    if (tls) r.set(http::field::strict_transport_security, "max-age=31536000");
    r.set("Content-Security-Policy",
          "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
          "form-action 'self'; base-uri 'none'; frame-ancestors 'none'");
    r.set("X-Content-Type-Options", "nosniff");
    r.set("X-Frame-Options", "DENY");
    r.set("Referrer-Policy", "no-referrer");
    r.set("Cross-Origin-Opener-Policy", "same-origin");
    r.set("Cross-Origin-Resource-Policy", "same-origin");
}

Response answer(const Request& req, http::status status, std::string_view type, std::string body) {
    Response r{status, req.version()};
    add_security_headers(r, false);  // App::handle adds HSTS under TLS
    r.set(http::field::content_type, boost::beast::string_view(type.data(), type.size()));
    r.set(http::field::cache_control, "no-store");
    r.keep_alive(req.keep_alive());
    r.body() = std::move(body);
    r.prepare_payload();
    return r;
}

Response json_answer(const Request& req, http::status status, const json& j) {
    return answer(req, status, "application/json; charset=utf-8", j.dump(-1, ' ', false, json::error_handler_t::replace));
}

Response error(const Request& req, http::status status, const std::string& message) {
    return json_answer(req, status, json{{"error", message}});
}

// The value of cookie `name` in a Cookie header, or "".
std::string_view cookie(std::string_view header, std::string_view name) {
    while (!header.empty()) {
        const auto semi = header.find(';');
        std::string_view pair = header.substr(0, semi);
        header.remove_prefix(semi == std::string_view::npos ? header.size() : semi + 1);
        while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
        const auto eq = pair.find('=');
        if (eq != std::string_view::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
    }
    return {};
}

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

// The value of query parameter `name`, or "" (values here are plain words).
void for_each_parameter(std::string_view rest, const std::function<bool(std::string_view, std::string_view)>& f) {
    while (!rest.empty()) {
        const auto amp = rest.find('&');
        const std::string_view pair = rest.substr(0, amp);
        rest.remove_prefix(amp == std::string_view::npos ? rest.size() : amp + 1);
        if (pair.empty()) continue;
        const auto eq = pair.find('=');
        if (!f(pair.substr(0, eq), eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1))) return;
    }
}

std::string_view query(std::string_view target, std::string_view name) {
    const auto q = target.find('?');
    if (q == std::string_view::npos) return {};
    std::string_view found;
    for_each_parameter(target.substr(q + 1), [&](std::string_view n, std::string_view v) {
        if (n != name) return true;
        found = v;
        return false;
    });
    return found;
}

// A query value with %XX and '+' decoded; malformed escapes are kept as they are.
std::string url_decoded(std::string_view v) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
        const auto hex = [](char c) -> int {
            if (c >= '0' && c <= '9') return c - '0';
            if (c >= 'a' && c <= 'f') return c - 'a' + 10;
            if (c >= 'A' && c <= 'F') return c - 'A' + 10;
            return -1;
        };
        if (v[i] == '+') {
            out += ' ';
        } else if (v[i] == '%' && i + 2 < v.size() && hex(v[i + 1]) >= 0 && hex(v[i + 2]) >= 0) {
            out += static_cast<char>(hex(v[i + 1]) * 16 + hex(v[i + 2]));
            i += 2;
        } else {
            out += v[i];
        }
    }
    return out;
}


// An audited event; the client (and what a proxy forwarded for) is App::audit's to add.
AuditEvent audit_event(std::string event, std::string outcome, std::string account, std::string role,
                       std::string client, std::string target) {
    AuditEvent e;
    e.event = std::move(event);
    e.outcome = std::move(outcome);
    e.account = std::move(account);
    e.role = std::move(role);
    e.client = std::move(client);
    e.target = std::move(target);
    return e;
}

}  // namespace mailsift::console
