// App: see app.hpp. Sessions, sign-in, routing and the audit trail; the API
// over the model and the history is api.cpp, HTTP's small change web.cpp.
#include "mailsift/console/app.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "assets.hpp"
#include "mailsift/console/slots.hpp"
#include "mailsift/store/database.hpp"
#include "web.hpp"

namespace mailsift::console {

namespace http = boost::beast::http;
using nlohmann::json;

namespace {

bool is_page(std::string_view path) {
    return path == "/" || path == "/status" || path == "/history" || path == "/scan" || path == "/config" ||
           path == "/users" || path == "/login";
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
    // A sign-in, a correction or its undo, a sign-out: a little JSON. Nothing else takes a body.
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

std::string App::forwarded_for(const Request& req, const std::string& client) const {
    // A proxy's word for where a request came from is taken only from a proxy the configuration names.
    if (std::find(options_.trusted_proxies.begin(), options_.trusted_proxies.end(), client) == options_.trusted_proxies.end()) {
        return {};
    }
    const std::string_view forwarded = sv(req["X-Forwarded-For"]);
    const auto comma = forwarded.rfind(',');
    std::string_view last = comma == std::string_view::npos ? forwarded : forwarded.substr(comma + 1);
    while (!last.empty() && last.front() == ' ') last.remove_prefix(1);
    while (!last.empty() && last.back() == ' ') last.remove_suffix(1);
    return std::string(last);  // the address the proxy itself saw
}

std::string App::sign_in_key(const Request& req, const std::string& client) const {
    // Behind a trusted proxy every browser comes from the proxy: counted by
    // that, five wrong passwords from anyone would make everyone wait.
    const std::string forwarded = forwarded_for(req, client);
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(forwarded.empty() ? client : forwarded, ec);
    if (ec) return client;  // not an address (a test's name, a proxy's garbage): as it is
    return address_key(address);  // IPv6 by its /64, as the connections are counted
}

void App::audit(const Request& req, const std::string& client, AuditEvent event) const {
    if (!services_.audit) return;
    event.client = client;
    event.forwarded = forwarded_for(req, client);
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
    const Actor actor{session->account, to_string(session->role), client};
    if ((path == "/api/history" || path == "/api/history/export") && !post) return history(req, actor);
    if (path == "/api/explanation" && !post) return explanation(req);
    if (path == "/api/user" && !post) return user(req, actor);
    if (path == "/api/users" && !post) return users(req, actor);
    // A scan changes nothing: a viewer may scan too. Learning, correcting and undoing need an admin.
    if (path == "/api/scan") return post ? scan(req, actor) : error(req, http::status::method_not_allowed, "POST only");
    const char* admin_action = path == "/api/learn"     ? "learn"
                               : path == "/api/correct" ? "correct"
                               : path == "/api/undo"    ? "undo"
                                                        : nullptr;  // the audit trail's event
    if (admin_action != nullptr) {
        if (!post) return error(req, http::status::method_not_allowed, "POST only");
        if (session->role != Role::admin) {
            audit(req, client, audit_event(admin_action, "forbidden", actor.account, actor.role));
            return error(req, http::status::forbidden, "this needs the admin role");
        }
        if (path == "/api/correct") return correct(req, actor);
        return path == "/api/undo" ? undo(req, actor) : learn(req, actor);
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
    const std::string counted_as = sign_in_key(req, client);
    if (const auto wait = trusted ? std::chrono::seconds(0) : limiter_.wait(counted_as, now); wait.count() > 0) {
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
        trusted ? devices_.failed(device) : limiter_.failed(counted_as, name, now);
        refused("failed", name);
        return error(req, http::status::unauthorized, "wrong name or password");
    }
    limiter_.succeeded(counted_as, name);
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

}  // namespace mailsift::console
