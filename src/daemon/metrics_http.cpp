// MetricsServer: see metrics_http.hpp.
#include "metrics_http.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <memory>
#include <stdexcept>

#include "mailsift/console/server.hpp"

namespace mailsift::daemon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// One connection: read a request (small, within 10 s), answer, close.
class Exchange : public std::enable_shared_from_this<Exchange> {
public:
    Exchange(tcp::socket socket, const Metrics& metrics) : stream_(std::move(socket)), metrics_(metrics) {}

    void start() {
        parser_.body_limit(4096);
        parser_.header_limit(8192);
        stream_.expires_after(std::chrono::seconds(10));
        http::async_read(stream_, buffer_, parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (!ec) self->answer();
        });
    }

private:
    void answer() {
        const auto& req = parser_.get();
        auto res = std::make_shared<http::response<http::string_body>>();
        res->version(req.version());
        res->set(http::field::server, "mailsiftd");
        res->keep_alive(false);
        const std::string target(req.target());
        const std::string path = target.substr(0, target.find('?'));
        if (req.method() != http::verb::get && req.method() != http::verb::head) {
            res->result(http::status::method_not_allowed);
            res->set(http::field::allow, "GET, HEAD");
            res->set(http::field::content_type, "text/plain; charset=utf-8");
            res->body() = "only GET /metrics\n";
        } else if (path != "/metrics") {
            res->result(http::status::not_found);
            res->set(http::field::content_type, "text/plain; charset=utf-8");
            res->body() = "mailsiftd serves /metrics only\n";
        } else {
            res->result(http::status::ok);
            res->set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
            res->body() = metrics_.render();
        }
        res->prepare_payload();
        if (req.method() == http::verb::head) res->body().clear();
        http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code, std::size_t) {
            beast::error_code ignored;
            self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        });
    }

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    http::request_parser<http::string_body> parser_;
    const Metrics& metrics_;
};

}  // namespace

MetricsServer::MetricsServer(asio::io_context& io, const Metrics& metrics) : metrics_(metrics), acceptor_(io) {}

void MetricsServer::listen(const std::string& spec) {
    const tcp::endpoint endpoint = console::parse_endpoint("metrics_listen", spec);
    boost::system::error_code ec;
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw std::runtime_error("metrics_listen " + spec + ": " + ec.message());
    accept();
}

unsigned short MetricsServer::port() const {
    boost::system::error_code ec;
    const auto e = acceptor_.local_endpoint(ec);
    return ec ? 0 : e.port();
}

void MetricsServer::close() {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
}

void MetricsServer::accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
        if (!ec) std::make_shared<Exchange>(std::move(socket), metrics_)->start();
        accept();
    });
}

}  // namespace mailsift::daemon
