// mailsift::console App — the console's routes: one HTTP request in, one
// response out, no sockets (console/server.hpp carries them). Runs on the
// console's own thread, one request at a time, so a password hash (Argon2id,
// 64 MiB) is verified once at a time and the milter threads never wait for it.
//
// What it serves:
//   GET  /, /status, /history, /scan, /config, /login  the page (one document;
//        without a session it answers 401 and shows the sign-in form)
//   GET  /static/NAME (console.css and the page scripts: console.js first,
//        one a page, session.js last; index.html lists them)   built into the binary
//   POST /api/login   {"name","password"}  -> the session cookie and a CSRF token
//        (and, the first time, a device cookie: sessions.hpp, TrustedDevices)
//   POST /api/logout
//   GET  /api/session, /api/status, /api/config
//   GET  /api/history?verdict=&action=&q=&sender=&recipient=&subject=&queue_id=
//        &message_id=&since=&until=&order=newest|oldest|spammiest|hammiest&limit=&cursor=
//        a page of lines, the count of all that match, the next page's cursor
//   GET  /api/history/export?format=csv|json&(the same filter)  every match, an attachment
//   GET  /api/explanation?id=|signature=  one line with its score taken apart and
//        "corrections", its message's trail: [{"to","by","at","undone_at","undone_by",
//        "undoable"}], oldest first, undone ones included (undone_at, undone_by null
//        while one stands)
//   POST /api/correct {"signature","class"}  (admin) as `mailsift correct --signature`
//   POST /api/undo {"signature"}  (admin) as `mailsift correct --undo --signature`:
//        the latest correction of the message that stands is undone, the model
//        put back as it was before it, the correction kept in the line's trail
//        (/api/explanation's "corrections") marked undone. 200 with
//        {"signature","result","undone","class","now"} when undone (class: what
//        the correction said; now: "spam", "ham" or "not learned"), or withdrawn
//        (undone false, class what it asked for, now null: it was waiting for
//        its scan and had trained nothing); 409 with the reason when nothing
//        was undone
//   POST /api/scan          (admin) the message as the body: verdict and explanation
//   POST /api/learn?class=spam|ham  (admin) the message as the body: trained once
//
// Rules every response keeps: without a valid session an API answers 401, a
// viewer asking for an admin action 403; a POST other than login without the
// session's CSRF token (X-CSRF-Token) 403, and login only as JSON from no other
// origin; a Content-Security-Policy that allows no inline script and no other
// host, nosniff, and frame-ancestors 'none'. Everything from mail reaches the
// page as JSON and is shown as text.
#pragma once

#include <utility>  // Boost 1.74 Asio uses std::exchange without including it
#include <boost/beast/http.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
#include <sys/stat.h>

#include "mailsift/console/accounts.hpp"
#include "mailsift/console/audit.hpp"
#include "mailsift/console/sessions.hpp"
#include "mailsift/engine/model.hpp"
#include "mailsift/engine/settings.hpp"

namespace mailsift::console {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

// Headers every answer carries, including those the server sends before a
// request reaches the App (413, 431): the page may run only its own script
// and style, load nothing from elsewhere, and be framed by nobody; under TLS,
// Strict-Transport-Security too.
void add_security_headers(Response& r, bool tls);

// The body a request may carry when it is not a message to scan or learn: a
// sign-in, a correction or its undo (a little JSON), or nothing.
inline constexpr std::size_t small_body_bytes = 4 * 1024;

// What mailsiftd lends the console.
struct Services {
    // The daemon's figures (the ones /metrics has), as JSON.
    std::function<nlohmann::json()> status;
    // The model the daemon scores with; null while none is loaded.
    std::function<std::shared_ptr<const engine::Model>()> model;
    // What was done, and by whom (audit.hpp): the daemon logs it and counts it.
    std::function<void(const AuditEvent&)> audit;
    // Every answer's HTTP status, the server's own (413, 431) included.
    std::function<void(unsigned status)> answered;
};

struct AppOptions {
    std::filesystem::path accounts;         // console_users
    std::filesystem::path database;         // where learn trains
    std::filesystem::path config;           // the configuration file shown (empty: built-in defaults)
    engine::Settings settings;
    bool tls = false;                       // cookies are Secure
    // Peers whose X-Forwarded-For is believed (console_trusted_proxies): the
    // audit trail names the address they forwarded for beside theirs.
    std::vector<std::string> trusted_proxies;
    SessionLimits sessions;
    SignInLimits sign_in;
    DeviceLimits devices;
};

class App {
public:
    App(AppOptions options, Services services);

    // `client`: the peer's address (the sign-in limiter counts by it).
    Response handle(const Request& request, const std::string& client, Clock::time_point now);
    // Whether the request handle() answered last carried a valid session or
    // signed in: the server keeps such a connection when it is full (server.hpp).
    bool authenticated() const { return authenticated_; }

    // The largest body accepted for a request to `target`, known from its
    // headers before the body is read: a message to scan or learn up to
    // limits.max_message_bytes, and some; small_body_bytes for anything else.
    std::size_t max_body_bytes(boost::beast::http::verb method, std::string_view target) const;
    // Whether a request whose headers are in may send its body: a POST to the
    // API (a sign-in aside) without a valid session may not, so that a stranger
    // cannot make the console read megabytes to be told to sign in; the server
    // then answers it from its headers (handle() gives 401) and closes.
    bool body_allowed(const Request& head, Clock::time_point now);
    bool tls() const { return options_.tls; }
    // An answer the server gave without the App (413, 431): counted as the App's are.
    void answered(unsigned status) const {
        if (services_.answered) services_.answered(status);
    }

private:
    Response route(const Request& request, const std::string& client, Clock::time_point now);
    // Hands an event to Services::audit, with the client (and what a trusted proxy forwarded for).
    void audit(const Request& request, const std::string& client, AuditEvent event) const;
    // The last address of X-Forwarded-For when `client` is a trusted proxy, else "".
    std::string forwarded_for(const Request& request, const std::string& client) const;
    // What the sign-in limiter counts a request under: the address a trusted
    // proxy forwarded for, else the peer's; an IPv6 address by its /64.
    std::string sign_in_key(const Request& request, const std::string& client) const;
    Response page(const Request& request, const std::optional<Session>& session);
    Response login(const Request& request, const std::string& client, Clock::time_point now);
    // Who asks: the session's account and role, and the peer.
    struct Actor {
        std::string account, role, client;
    };
    Response scan(const Request& request, const Actor& actor);
    Response learn(const Request& request, const Actor& actor);
    Response history(const Request& request, const Actor& actor);
    Response explanation(const Request& request);
    Response user(const Request& request, const Actor& actor);
    Response users(const Request& request, const Actor& actor);
    Response correct(const Request& request, const Actor& actor);
    Response undo(const Request& request, const Actor& actor);
    nlohmann::json configuration() const;
    nlohmann::json corrections() const;
    // Rereads the accounts file when it changed; ends the sessions of accounts
    // removed or changed. Throws AccountsError when it cannot be read.
    void refresh_accounts();
    std::optional<Session> session_of(const Request& request, Clock::time_point now);

    AppOptions options_;
    Services services_;
    Sessions sessions_;
    SignInLimiter limiter_;
    TrustedDevices devices_;
    std::optional<Accounts> accounts_;
    struct stat accounts_stat_ {};
    bool accounts_seen_ = false;
    bool authenticated_ = false;
    std::string status_body_;  // the last /api/status answer, and when it was read
    Clock::time_point status_at_{};
};

}  // namespace mailsift::console
