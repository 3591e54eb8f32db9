// Serves Metrics over HTTP for Prometheus: GET /metrics on the address of
// metrics_listen (HOST:PORT), one request per connection, with Boost.Beast
// (HTTP parsing is not ours to get wrong). Runs on the daemon's I/O thread.
#pragma once

#include <utility>  // Boost 1.74 Asio uses std::exchange without including it
#include <boost/asio.hpp>
#include <string>

#include "metrics.hpp"

namespace mailsift::daemon {

class MetricsServer {
public:
    MetricsServer(boost::asio::io_context& io, const Metrics& metrics);
    // Binds HOST:PORT ("127.0.0.1:9187", "[::1]:9187"); throws std::runtime_error
    // naming the address when it cannot.
    void listen(const std::string& spec);
    void close();
    // The port bound (useful with port 0).
    unsigned short port() const;

private:
    void accept();
    const Metrics& metrics_;
    boost::asio::ip::tcp::acceptor acceptor_;
};

}  // namespace mailsift::daemon
