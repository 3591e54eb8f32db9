// What the console App's files share of HTTP: answers that carry the security
// headers, JSON errors, the Cookie header, the query string, and the audit
// event's builder. Internal to src/console; app.hpp is the console's contract.
#pragma once

#include <boost/beast/core/string.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "mailsift/console/app.hpp"
#include "mailsift/console/audit.hpp"

namespace mailsift::console {

inline constexpr std::string_view cookie_name = "mailsift_session";
inline constexpr std::string_view device_cookie_name = "mailsift_device";  // sent to /api/login only

// Boost 1.74's Beast has its own string_view.
inline std::string_view sv(boost::beast::string_view v) { return {v.data(), v.size()}; }

// An answer to `req` of `type` (security headers, no caching, the request's keep-alive).
Response answer(const Request& req, boost::beast::http::status status, std::string_view type, std::string body);
Response json_answer(const Request& req, boost::beast::http::status status, const nlohmann::json& j);
// {"error": message}
Response error(const Request& req, boost::beast::http::status status, const std::string& message);

// The value of cookie `name` in a Cookie header, or "".
std::string_view cookie(std::string_view header, std::string_view name);
std::string_view path_of(std::string_view target);
// Calls f(name, value) for each NAME=VALUE pair of a query string (the target
// after its '?'), as sent (not decoded), skipping empty pairs; stops when f
// returns false.
void for_each_parameter(std::string_view query, const std::function<bool(std::string_view, std::string_view)>& f);
// The value of query parameter `name` (its first), or "" (values here are plain words).
std::string_view query(std::string_view target, std::string_view name);
// A query value with %XX and '+' decoded; malformed escapes are kept as they are.
std::string url_decoded(std::string_view v);

// An audited event; the client (and what a proxy forwarded for) is App::audit's to add.
AuditEvent audit_event(std::string event, std::string outcome, std::string account = {}, std::string role = {},
                       std::string client = {}, std::string target = {});

}  // namespace mailsift::console
