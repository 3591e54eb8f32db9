// App: see app.hpp.
#include "mailsift/console/app.hpp"

#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <chrono>
#include <ctime>

#include "assets.hpp"
#include "history.hpp"
#include "mailsift/engine/explain.hpp"
#include "mailsift/mime/message.hpp"
#include "mailsift/store/database.hpp"

namespace mailsift::console {

namespace http = boost::beast::http;
using nlohmann::json;

namespace {

constexpr std::string_view cookie_name = "mailsift_session";
constexpr std::string_view device_cookie_name = "mailsift_device";  // sent to /api/login only

// Boost 1.74's Beast has its own string_view.
std::string_view sv(boost::beast::string_view v) { return {v.data(), v.size()}; }
constexpr std::size_t slots_shown = 20;  // linear slots listed each way on the page

}  // namespace

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

namespace {

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
std::string_view query(std::string_view target, std::string_view name) {
    const auto q = target.find('?');
    if (q == std::string_view::npos) return {};
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
        const auto amp = rest.find('&');
        std::string_view pair = rest.substr(0, amp);
        rest.remove_prefix(amp == std::string_view::npos ? rest.size() : amp + 1);
        const auto eq = pair.find('=');
        if (eq != std::string_view::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
    }
    return {};
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

bool is_page(std::string_view path) {
    return path == "/" || path == "/status" || path == "/history" || path == "/scan" || path == "/config" ||
           path == "/login";
}

json reasons(const std::vector<engine::Reason>& rs) {
    json out = json::array();
    for (const auto& r : rs) {
        out.push_back({{"feature", r.feature}, {"log_odds", r.log_odds}, {"spam", r.counts.spam}, {"ham", r.counts.ham}});
    }
    return out;
}

json slot_list(const std::vector<engine::SlotWeight>& slots) {
    json out = json::array();
    for (const auto& w : slots) out.push_back({{"weight", w.weight}, {"slot", w.slot}, {"source", w.source}});
    return out;
}

// The linear scorer's sum, part by part: what a scan and a history line show alike.
json linear_json(const engine::LinearParts& l) {
    return json{{"bias", l.score.bias},
                {"nb_weight", l.score.nb_weight},
                {"nb_input", l.score.nb_input},
                {"nb_term", l.score.nb_weight * l.score.nb_input},
                {"nb_log_odds", l.nb_log_odds},
                {"clipped", l.clipped},
                {"slots_sum", l.score.features},
                {"slots", l.slots},
                {"z", l.score.z()},
                {"toward_spam", slot_list(l.split.toward_spam)},
                {"toward_ham", slot_list(l.split.toward_ham)},
                {"others", l.split.others},
                {"others_sum", l.split.others_sum}};
}

// How the naive-Bayes log-odds adds up: the prior, the features listed (the
// strongest each way), and all the others together, so that the three make it.
json nb_sum_json(double prior, double nb_log_odds, const std::vector<engine::Reason>& toward_spam,
                 const std::vector<engine::Reason>& toward_ham) {
    double listed = 0.0;
    for (const auto* side : {&toward_spam, &toward_ham}) {
        for (const auto& r : *side) listed += r.log_odds;
    }
    return json{{"prior", prior}, {"listed", listed}, {"others", nb_log_odds - prior - listed}, {"log_odds", nb_log_odds}};
}

json explanation_json(const engine::Explanation& e) {
    const auto& c = e.classification;
    json j{{"verdict", model::to_string(c.score.verdict)},
           {"probability", c.score.probability},
           {"log_odds", c.score.log_odds},
           {"model", {{"spam", e.spam_messages}, {"ham", e.ham_messages}, {"features", e.features},
                      {"prior_log_odds", e.prior_log_odds}}},
           {"toward_spam", reasons(c.toward_spam)},
           {"toward_ham", reasons(c.toward_ham)},
           {"prefix_only", c.prefix_only},
           {"truncated", c.truncated}};
    if (e.linear) {
        const auto& l = *e.linear;
        j["linear"] = linear_json({l.score, l.nb_log_odds, l.clipped, l.slots.size(), l.split(slots_shown)});
    }
    const double nb = e.linear ? e.linear->nb_log_odds : c.score.log_odds;
    j["nb_sum"] = nb_sum_json(e.prior_log_odds, nb, c.toward_spam, c.toward_ham);
    return j;
}

// A history line's explanation, as mailsiftd kept it when it scored the message.
json recorded_json(const engine::ScoreParts& p) {
    json j{{"log_odds", p.log_odds},
           {"prior_log_odds", p.prior_log_odds},
           {"nb_log_odds", p.nb_log_odds},
           {"toward_spam", reasons(p.toward_spam)},
           {"toward_ham", reasons(p.toward_ham)},
           {"nb_sum", nb_sum_json(p.prior_log_odds, p.nb_log_odds, p.toward_spam, p.toward_ham)}};
    if (p.linear) j["linear"] = linear_json(*p.linear);
    return j;
}

// An audited event; the client (and what a proxy forwarded for) is App::audit's to add.
AuditEvent audit_event(std::string event, std::string outcome, std::string account = {}, std::string role = {},
                       std::string client = {}, std::string target = {}) {
    AuditEvent e;
    e.event = std::move(event);
    e.outcome = std::move(outcome);
    e.account = std::move(account);
    e.role = std::move(role);
    e.client = std::move(client);
    e.target = std::move(target);
    return e;
}

// The audit trail's word for it.
const char* result_word(store::LearnResult r) {
    switch (r) {
        case store::LearnResult::learned: return "learned";
        case store::LearnResult::already_learned: return "already-learned";
        case store::LearnResult::moved: return "moved";
    }
    return "learned";
}

const char* learn_result(store::LearnResult r) {
    switch (r) {
        case store::LearnResult::learned: return "learned";
        case store::LearnResult::already_learned: return "already learned";
        case store::LearnResult::moved: return "moved from the other class";
    }
    return "learned";
}

}  // namespace

App::App(AppOptions options, Services services)
    : options_(std::move(options)),
      services_(std::move(services)),
      sessions_(options_.sessions),
      limiter_(options_.sign_in),
      devices_(options_.devices) {}

std::size_t App::max_body_bytes(http::verb method, std::string_view target) const {
    const std::string_view path = path_of(target);
    // A message to scan or learn: up to limits.max_message_bytes, and some.
    if (method == http::verb::post && (path == "/api/scan" || path == "/api/learn")) {
        return options_.settings.limits.max_message_bytes + 64 * 1024;
    }
    // A sign-in, a correction, a sign-out: a little JSON. Nothing else takes a body.
    return small_body_bytes;
}

bool App::body_allowed(const Request& head, Clock::time_point now) {
    const std::string_view path = path_of(sv(head.target()));
    if (head.method() == http::verb::post && path.starts_with("/api/") && path != "/api/login") {
        return session_of(head, now).has_value();
    }
    return true;
}

void App::refresh_accounts() {
    struct stat st {};
    const bool exists = ::stat(options_.accounts.c_str(), &st) == 0;
    if (accounts_seen_ && accounts_ && exists && st.st_ino == accounts_stat_.st_ino &&
        st.st_dev == accounts_stat_.st_dev && st.st_size == accounts_stat_.st_size &&
        st.st_mtim.tv_sec == accounts_stat_.st_mtim.tv_sec && st.st_mtim.tv_nsec == accounts_stat_.st_mtim.tv_nsec) {
        return;
    }
    Accounts fresh = exists ? Accounts::load(options_.accounts) : Accounts{};
    // A change made on this host (mailsift console-user), seen here: for the audit trail.
    auto changed = [&](std::string_view outcome, const std::string& name, Role role) {
        if (services_.audit) {
            services_.audit(audit_event("account", std::string(outcome), name, to_string(role), "local"));
        }
    };
    if (accounts_) {
        // A removed account, a new password or another role: its sessions end.
        for (const auto& old : accounts_->all()) {
            const Account* now = fresh.find(old.name);
            if (now == nullptr || now->hash != old.hash || now->role != old.role) {
                sessions_.end_all_of(old.name);
                devices_.forget(old.name);
            }
            if (now == nullptr) changed("removed", old.name, old.role);
            else if (now->role != old.role) changed("role-changed", now->name, now->role);
            else if (now->hash != old.hash) changed("password-changed", now->name, now->role);
        }
        for (const auto& added : fresh.all()) {
            if (accounts_->find(added.name) == nullptr) changed("added", added.name, added.role);
        }
    }
    accounts_ = std::move(fresh);
    accounts_stat_ = st;
    accounts_seen_ = exists;
}

std::optional<Session> App::session_of(const Request& request, Clock::time_point now) {
    const auto token = cookie(sv(request[http::field::cookie]), cookie_name);
    if (token.empty()) return std::nullopt;
    return sessions_.find(token, now);
}

Response App::handle(const Request& req, const std::string& client, Clock::time_point now) {
    authenticated_ = false;
    Response r = route(req, client, now);
    if (options_.tls) r.set(http::field::strict_transport_security, "max-age=31536000");
    answered(static_cast<unsigned>(r.result_int()));
    return r;
}

void App::audit(const Request& req, const std::string& client, AuditEvent event) const {
    if (!services_.audit) return;
    event.client = client;
    // A proxy's word for where a request came from is taken only from a proxy the configuration names.
    if (std::find(options_.trusted_proxies.begin(), options_.trusted_proxies.end(), client) != options_.trusted_proxies.end()) {
        const std::string_view forwarded = sv(req["X-Forwarded-For"]);
        const auto comma = forwarded.rfind(',');
        std::string_view last = comma == std::string_view::npos ? forwarded : forwarded.substr(comma + 1);
        while (!last.empty() && last.front() == ' ') last.remove_prefix(1);
        while (!last.empty() && last.back() == ' ') last.remove_suffix(1);
        event.forwarded = std::string(last);  // the address the proxy itself saw
    }
    services_.audit(event);
}

Response App::route(const Request& req, const std::string& client, Clock::time_point now) {
    const std::string_view path = path_of(sv(req.target()));
    if (path.starts_with("/static/")) {
        const Asset* a = find_asset(path.substr(8));
        if (a == nullptr || req.method() != http::verb::get) return error(req, http::status::not_found, "no such file");
        Response r = answer(req, http::status::ok, a->content_type, std::string(a->body));
        r.set(http::field::cache_control, "no-cache");
        return r;
    }
    try {
        refresh_accounts();
    } catch (const std::exception& e) {
        // Fail closed: nobody signs in or stays signed in on a file that cannot be read.
        return error(req, http::status::service_unavailable, std::string("console accounts: ") + e.what());
    }
    const auto session = session_of(req, now);
    authenticated_ = session.has_value();
    if (is_page(path)) {
        if (req.method() != http::verb::get) return error(req, http::status::method_not_allowed, "GET only");
        return page(req, session);
    }
    if (!path.starts_with("/api/")) return error(req, http::status::not_found, "no such page");
    if (path == "/api/login") {
        if (req.method() != http::verb::post) return error(req, http::status::method_not_allowed, "POST only");
        return login(req, client, now);
    }
    if (!session) return error(req, http::status::unauthorized, "sign in first");
    const bool post = req.method() == http::verb::post;
    if (!post && req.method() != http::verb::get) return error(req, http::status::method_not_allowed, "GET or POST only");
    if (post && !csrf_matches(*session, sv(req["X-CSRF-Token"]))) {
        return error(req, http::status::forbidden, "missing or wrong CSRF token: reload the page");
    }
    if (path == "/api/logout" && post) {
        sessions_.end(cookie(sv(req[http::field::cookie]), cookie_name));
        audit(req, client, audit_event("sign-out", "ok", session->account, to_string(session->role)));
        Response r = json_answer(req, http::status::ok, json{{"signed_out", true}});
        r.set(http::field::set_cookie, std::string(cookie_name) + "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" +
                                           (options_.tls ? "; Secure" : ""));
        return r;
    }
    if (path == "/api/session" && !post) {
        return json_answer(req, http::status::ok,
                           json{{"account", session->account}, {"role", to_string(session->role)}, {"csrf", session->csrf}});
    }
    if (path == "/api/status" && !post) {
        // One reading a second serves every session: the figures move by the
        // second, and corrections() reads the store.
        if (status_body_.empty() || now - status_at_ >= std::chrono::seconds(1) || now < status_at_) {
            json j = services_.status ? services_.status() : json::object();
            j["corrections"] = corrections();
            status_body_ = j.dump(-1, ' ', false, json::error_handler_t::replace);
            status_at_ = now;
        }
        return answer(req, http::status::ok, "application/json; charset=utf-8", status_body_);
    }
    if (path == "/api/config" && !post) return json_answer(req, http::status::ok, configuration());
    if ((path == "/api/history" || path == "/api/history/export") && !post) return history(req);
    if (path == "/api/explanation" && !post) return explanation(req);
    // A scan changes nothing: a viewer may scan too. Learning and correcting need an admin.
    const Actor actor{session->account, to_string(session->role), client};
    if (path == "/api/scan") return post ? scan(req, actor) : error(req, http::status::method_not_allowed, "POST only");
    const bool admin_action = path == "/api/learn" || path == "/api/correct";
    if (admin_action) {
        if (!post) return error(req, http::status::method_not_allowed, "POST only");
        if (session->role != Role::admin) {
            audit(req, client,
                  audit_event(path == "/api/correct" ? "correct" : "learn", "forbidden", actor.account, actor.role));
            return error(req, http::status::forbidden, "this needs the admin role");
        }
        return path == "/api/correct" ? correct(req, actor) : learn(req, actor);
    }
    return error(req, http::status::not_found, "no such API");
}

Response App::page(const Request& req, const std::optional<Session>& session) {
    const Asset* a = find_asset("index.html");
    // The document holds no data: what it shows comes from the API, behind the session.
    return answer(req, session ? http::status::ok : http::status::unauthorized, a->content_type, std::string(a->body));
}

Response App::login(const Request& req, const std::string& client, Clock::time_point now) {
    auto refused = [&](std::string_view outcome, const std::string& name) {
        audit(req, client, audit_event("sign-in", std::string(outcome), name));
    };
    // Only JSON, and not from a page of another origin (a form elsewhere cannot send JSON without asking first).
    if (!sv(req[http::field::content_type]).starts_with("application/json")) {
        refused("refused", "");
        return error(req, http::status::unsupported_media_type, "send the sign-in as application/json");
    }
    if (const auto origin = req[http::field::origin]; !origin.empty()) {
        const auto host = req[http::field::host];
        if (origin != "http://" + std::string(host) && origin != "https://" + std::string(host)) {
            refused("refused", "");
            return error(req, http::status::forbidden, "sign-in from another origin");
        }
    }
    const json body = json::parse(req.body(), nullptr, false);
    if (!body.is_object() || !body.contains("name") || !body.contains("password") || !body["name"].is_string() ||
        !body["password"].is_string()) {
        refused("refused", "");
        return error(req, http::status::bad_request, "expected {\"name\": ..., \"password\": ...}");
    }
    const std::string name = body["name"];
    const std::string password = body["password"];
    // A browser that signed in to this account before has its own budget and
    // failure count; every other sign-in is counted by its address.
    const std::string_view device = cookie(sv(req[http::field::cookie]), device_cookie_name);
    const bool trusted = devices_.trusted(device, name, now);
    if (const auto wait = trusted ? std::chrono::seconds(0) : limiter_.wait(client, now); wait.count() > 0) {
        refused("limited", name);
        Response r = error(req, http::status::too_many_requests,
                           "too many failed sign-ins from this address: try again in " + std::to_string(wait.count()) + " s");
        r.set(http::field::retry_after, std::to_string(wait.count()));
        return r;
    }
    // However many addresses ask, a password is checked only as often as the
    // budget allows: a flood of sign-ins must not take what the mail needs.
    if (!limiter_.may_check(now, trusted)) {
        refused("limited", name);
        Response r = error(req, http::status::too_many_requests,
                           trusted ? "too many sign-ins right now: try again in a few seconds"
                                   : "too many sign-ins right now: try again in a few seconds (a browser that "
                                     "signed in to this account before is let through first)");
        r.set(http::field::retry_after, "5");
        return r;
    }
    if (accounts_->all().empty()) {
        refused("refused", name);
        return error(req, http::status::service_unavailable,
                     "no console accounts yet: create one with 'mailsift console-user add NAME --role admin'");
    }
    const auto role = name.size() <= 64 && password.size() <= max_password_bytes
                          ? accounts_->authenticate(name, password)
                          : std::nullopt;
    if (!role) {
        trusted ? devices_.failed(device) : limiter_.failed(client, name, now);
        refused("failed", name);
        return error(req, http::status::unauthorized, "wrong name or password");
    }
    limiter_.succeeded(client, name);
    audit(req, client, audit_event("sign-in", "ok", name, to_string(*role)));
    const auto session = sessions_.create(name, *role, now);
    authenticated_ = true;
    Response r =
        json_answer(req, http::status::ok, json{{"account", name}, {"role", to_string(*role)}, {"csrf", session.csrf}});
    const std::string secure = options_.tls ? "; Secure" : "";
    r.set(http::field::set_cookie,
          std::string(cookie_name) + "=" + session.token + "; Path=/; HttpOnly; SameSite=Strict" + secure);
    if (trusted) {
        devices_.succeeded(device);
    } else {
        r.insert(http::field::set_cookie, std::string(device_cookie_name) + "=" + devices_.issue(name, now) +
                                              "; Path=/api/login; Max-Age=" +
                                              std::to_string(options_.devices.lifetime.count()) +
                                              "; HttpOnly; SameSite=Strict" + secure);
    }
    return r;
}

Response App::scan(const Request& req, const Actor& actor) {
    const std::string_view raw = engine::without_from_line(req.body());
    const auto problem = engine::check_message(raw, raw.size(), options_.settings.limits);
    if (engine::refused(problem)) return error(req, http::status::unprocessable_entity, engine::describe(problem));
    const auto filter = services_.filter ? services_.filter() : nullptr;
    if (!filter) return error(req, http::status::service_unavailable, "no model loaded yet: train one first");
    json j = explanation_json(engine::explain(*filter, raw));
    // What the message says it is, decoded, for the page to show as text.
    for (const auto& h : mime::parse_header(raw, options_.settings.limits)) {
        if (!j.contains("from") && boost::beast::iequals(h.name, "From")) j["from"] = h.value;
        if (!j.contains("subject") && boost::beast::iequals(h.name, "Subject")) j["subject"] = h.value;
    }
    j["signature"] = engine::signature_text(engine::message_identity(raw));
    j["size"] = raw.size();
    audit(req, actor.client,
          audit_event("scan", j.value("verdict", std::string()), actor.account, actor.role, {}, j["signature"].get<std::string>()));
    return json_answer(req, http::status::ok, j);
}

Response App::learn(const Request& req, const Actor& actor) {
    const auto cls = query(sv(req.target()), "class");
    if (cls != "spam" && cls != "ham") return error(req, http::status::bad_request, "class must be spam or ham");
    const std::string_view raw = engine::without_from_line(req.body());
    const auto problem = engine::check_message(raw, raw.size(), options_.settings.limits);
    if (engine::refused(problem)) return error(req, http::status::unprocessable_entity, engine::describe(problem));
    try {
        const auto db = store::open(options_.database.string(), store::Database::Mode::read_write);
        engine::Trainer trainer(*db, options_.settings, engine::Trainer::Reads::rows);  // one message: its rows
        const auto now = static_cast<std::int64_t>(std::time(nullptr));
        // As `mailsift learn` one message: thick-threshold training applies.
        const auto outcome = trainer.learn(raw, raw.size(), cls == "spam" ? store::Class::spam : store::Class::ham, now);
        trainer.commit();
        json j;
        j["class"] = std::string(cls);
        j["signature"] = engine::signature_text(engine::message_identity(raw));
        j["result"] = outcome.confident ? "already known beyond the training margin: not learned"
                                        : learn_result(outcome.result);
        audit(req, actor.client,
              audit_event("learn", outcome.confident ? "not-learned" : result_word(outcome.result), actor.account, actor.role, {},
                          std::string(cls) + ":" + j["signature"].get<std::string>()));
        return json_answer(req, http::status::ok, j);
    } catch (const std::exception& e) {
        return error(req, http::status::service_unavailable, std::string("the store: ") + e.what());
    }
}

Response App::history(const Request& req) {
    const std::string_view target = sv(req.target());
    const bool exporting = path_of(target) == "/api/history/export";
    const std::string format = url_decoded(query(target, "format"));
    if (exporting && format != "csv" && format != "json") return error(req, http::status::bad_request, "format must be csv or json");
    auto asked = history_query([&](std::string_view name) { return url_decoded(query(target, name)); }, !exporting);
    if (const auto* wrong = std::get_if<std::string>(&asked)) return error(req, http::status::bad_request, *wrong);
    auto& q = std::get<store::HistoryQuery>(asked);
    try {
        const auto db = store::open(options_.database.string(), store::Database::Mode::read_only);
        if (exporting) {
            Response r = answer(req, http::status::ok, format == "csv" ? "text/csv; charset=utf-8" : "application/json; charset=utf-8",
                                history_export(*db, q, format));
            const std::string name = history_export_name(static_cast<std::int64_t>(std::time(nullptr)), format);
            r.set(http::field::content_disposition, "attachment; filename=\"" + name + "\"");
            return r;
        }
        json rows = json::array();
        const auto entries = db->history(q);
        for (const auto& e : entries) rows.push_back(history_json(e));
        json out{{"entries", rows}, {"count", db->history_count(q)}, {"subjects_kept", options_.settings.daemon.history_subjects},
                 {"kept", options_.settings.daemon.record_history}};
        // A full page may have more after it: where to ask from (null: this was the last).
        out["next"] = entries.size() == q.limit && q.limit > 0 ? json{{"cursor", history_cursor(entries.back())}} : json(nullptr);
        return json_answer(req, http::status::ok, out);
    } catch (const std::exception& e) {
        return error(req, http::status::service_unavailable, std::string("the store: ") + e.what());
    }
}

Response App::explanation(const Request& req) {
    auto asked = history_line_query([&](std::string_view name) { return url_decoded(query(sv(req.target()), name)); });
    if (const auto* wrong = std::get_if<std::string>(&asked)) return error(req, http::status::bad_request, *wrong);
    auto& q = std::get<store::HistoryQuery>(asked);
    try {
        const auto db = store::open(options_.database.string(), store::Database::Mode::read_only);
        const auto found = db->history(q);
        if (found.empty()) return error(req, http::status::not_found, "no such message in the history (pruned?)");
        json j = history_json(found.front());
        const auto parts = engine::decode_score_parts(found.front().explanation);
        // A line written before explanations were kept, or by a later mailsift, has none.
        j["explanation"] = parts ? recorded_json(*parts) : json(nullptr);
        return json_answer(req, http::status::ok, j);
    } catch (const std::exception& e) {
        return error(req, http::status::service_unavailable, std::string("the store: ") + e.what());
    }
}

Response App::correct(const Request& req, const Actor& actor) {
    const json body = json::parse(req.body(), nullptr, false);
    if (!body.is_object() || !body.contains("signature") || !body.contains("class") || !body["signature"].is_string() ||
        !body["class"].is_string() || (body["class"] != "spam" && body["class"] != "ham")) {
        return error(req, http::status::bad_request, "expected {\"signature\": ..., \"class\": \"spam\" or \"ham\"}");
    }
    const auto id = engine::parse_signature(body["signature"].get<std::string>());
    if (!id) return error(req, http::status::bad_request, "not a signature (32 hexadecimal digits)");
    const store::Class to = body["class"] == "spam" ? store::Class::spam : store::Class::ham;
    try {
        const auto db = store::open(options_.database.string(), store::Database::Mode::read_write);
        engine::Trainer trainer(*db, options_.settings, engine::Trainer::Reads::rows);  // one message: its rows
        trainer.set_corrector("console:" + actor.account);  // the history shows who corrected
        // Exactly as `mailsift correct --signature`: once; the other way moves it.
        const auto r = trainer.correct_or_defer_signature(*id, to, static_cast<std::int64_t>(std::time(nullptr)));
        trainer.commit();
        std::string result;
        if (r.deferred) result = "no scan recorded yet: kept, and trained when mailsiftd writes it";
        else if (r.confirmed) result = "mailsiftd already said so with confidence: not trained (train_on_error)";
        else result = learn_result(r.result);
        audit(req, actor.client,
              audit_event("correct", r.deferred ? "deferred" : r.confirmed ? "not-learned" : result_word(r.result),
                          actor.account, actor.role, {}, std::string(store::to_string(to)) + ":" + engine::signature_text(*id)));
        return json_answer(req, http::status::ok,
                           json{{"signature", engine::signature_text(*id)}, {"class", store::to_string(to)}, {"result", result}});
    } catch (const std::exception& e) {
        return error(req, http::status::service_unavailable, std::string("the store: ") + e.what());
    }
}

json App::corrections() const {
    // Mistakes revealed by corrections, as `mailsift stats` counts them.
    try {
        const auto db = store::open(options_.database.string(), store::Database::Mode::read_only);
        const auto now = static_cast<std::int64_t>(std::time(nullptr));
        auto period = [&](std::int64_t since) {
            const auto c = db->corrections_since(since);
            return json{{"false_positives", c.false_positives}, {"false_negatives", c.false_negatives},
                        {"unsure_to_spam", c.unsure_to_spam}, {"unsure_to_ham", c.unsure_to_ham}};
        };
        return json{{"day", period(now - 86400)}, {"week", period(now - 7 * 86400)}};
    } catch (const std::exception& e) {
        return json{{"error", e.what()}};
    }
}

json App::configuration() const {
    json given = json::array();
    for (const auto& [key, value] : options_.settings.given) {
        // A PostgreSQL location may hold a password.
        const std::string shown = key == "database" ? store::display_location(value) : value;
        given.push_back({{"key", key}, {"value", shown}});
    }
    json defaults = json::array();
    for (const auto& name : engine::setting_names()) {
        bool set = false;
        for (const auto& g : options_.settings.given) set = set || g.first == name;
        if (!set) defaults.push_back({{"key", name}, {"value", engine::setting_value(options_.settings, name)}});
    }
    return json{{"file", options_.config.empty() ? std::string("(none: built-in defaults)") : options_.config.string()},
                {"database", store::display_location(options_.database.string())},
                {"given", given},
                {"defaults", defaults}};
}

}  // namespace mailsift::console
