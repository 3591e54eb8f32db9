// mailsift::console Server — carries the console's HTTP (console/app.hpp) over
// its own listener, on its own thread and io_context: a flood of console
// requests, or a slow password hash, never holds up the milter connections.
// HTTPS with console_tls_certificate and console_tls_key (OpenSSL through
// Boost.Beast); plain HTTP is refused on any address but loopback.
//
// Bounds: at most max_connections at once, max_connections_per_address of
// them from one address, IPv6 counted by its /64 and an IPv4-mapped address
// as IPv4 (console/slots.hpp; logs and the audit trail still name the address
// itself). One more from an address at its bound is closed when accepted.
// When all max_connections are taken, a newcomer evicts (closes) a connection
// that waits (for its handshake, a request, or its turn at the pace below)
// and has never carried a signed-in request: one from the address holding the
// most connections, the one waiting longest (a turn it waited for is given
// back to the pace). A connection being answered, or
// that has been signed in, is never evicted; with nobody to evict, the
// newcomer is closed. So however many idle sockets a few addresses (or one
// /64) hold, a signed-in administrator keeps being served, and a sign-in from
// an address holding fewer is let in and never the one evicted.
// Request headers up to 8 KiB, bodies up to App::max_body_bytes() for their
// route (known from the headers), and each request (with its TLS handshake)
// must arrive within request_timeout;
// connections are kept alive between requests up to idle_timeout.
// Pace: requests (and TLS handshakes) are served at most requests_per_second
// on average (request_burst at once), in the order they came; beyond, they
// wait. So a flood on the console waits, at most max_connections /
// requests_per_second seconds, and never takes more of the CPU from the
// milter than that many requests a second cost.
#pragma once

#include <utility>  // Boost 1.74 Asio uses std::exchange without including it
#include <boost/asio.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "mailsift/console/app.hpp"

namespace mailsift::console {

// HOST:PORT ("127.0.0.1:8080", "[::1]:8080") as an endpoint; throws
// std::runtime_error naming `setting` and what is wrong.
boost::asio::ip::tcp::endpoint parse_endpoint(const std::string& setting, const std::string& spec);

struct ServerOptions {
    std::string listen;                      // HOST:PORT
    std::filesystem::path tls_certificate;   // both or neither
    std::filesystem::path tls_key;
    std::size_t max_connections = 64;
    // From any one address (an IPv6 /64): more are closed when accepted.
    std::size_t max_connections_per_address = 16;
    std::chrono::seconds request_timeout{30};
    std::chrono::seconds idle_timeout{60};
    double requests_per_second = 50;  // the status page asks for one every 10 s
    double request_burst = 50;        // a page load is about 13 (the page, its stylesheet, nine scripts, the session, the first page's data)
};

// What Server's constructor checks before it binds: the address, the TLS
// rule (plain HTTP only on loopback), and that the certificate and key load
// and belong together. Throws std::runtime_error (mailsiftd --check-config).
void check_options(const ServerOptions& options);

class Server {
public:
    // Binds and reads the certificate and key (before privileges are dropped);
    // throws std::runtime_error with a message for the log. Serving starts with start().
    Server(ServerOptions options, std::unique_ptr<App> app);
    ~Server();  // stops and joins
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    void start();
    void stop();
    unsigned short port() const;
    bool tls() const;
    std::size_t connections() const;

    struct Impl;  // opaque; named here for the connections in server.cpp

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace mailsift::console
