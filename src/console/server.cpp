// Server: see server.hpp.
#include "mailsift/console/server.hpp"
#include "mailsift/console/slots.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace mailsift::console {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

tcp::endpoint parse_endpoint(const std::string& setting, const std::string& spec) {
    const auto colon = spec.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) {
        throw std::runtime_error(setting + " " + spec + ": expected HOST:PORT (e.g. 127.0.0.1:9187)");
    }
    std::string host = spec.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    unsigned long port = 0;
    try {
        std::size_t used = 0;
        port = std::stoul(spec.substr(colon + 1), &used);
        if (used != spec.size() - colon - 1 || port > 65535) throw std::out_of_range("port");
    } catch (const std::exception&) {
        throw std::runtime_error(setting + " " + spec + ": the port must be a number from 0 to 65535");
    }
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    if (ec) throw std::runtime_error(setting + " " + spec + ": '" + host + "' is not an IP address");
    return {address, static_cast<unsigned short>(port)};
}

namespace {

// The TLS context for `o`, or none for plain HTTP, which only loopback gets.
std::optional<ssl::context> tls_context(const ServerOptions& o, const tcp::endpoint& endpoint) {
    if (o.tls_certificate.empty() != o.tls_key.empty()) {
        throw std::runtime_error("console: set both console_tls_certificate and console_tls_key, or neither");
    }
    if (o.tls_certificate.empty()) {
        if (!endpoint.address().is_loopback()) {
            throw std::runtime_error("console_listen " + o.listen +
                                     ": not a loopback address, and the console does not send passwords and sessions "
                                     "in clear text beyond this host: set console_tls_certificate and console_tls_key, "
                                     "or listen on 127.0.0.1 behind a proxy that terminates TLS");
        }
        return std::nullopt;
    }
    std::optional<ssl::context> ctx(std::in_place, ssl::context::tls_server);
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                     ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
    boost::system::error_code ec;
    ctx->use_certificate_chain_file(o.tls_certificate.string(), ec);
    if (ec) throw std::runtime_error("console_tls_certificate " + o.tls_certificate.string() + ": " + ec.message());
    ctx->use_private_key_file(o.tls_key.string(), ssl::context::pem, ec);
    if (ec) throw std::runtime_error("console_tls_key " + o.tls_key.string() + ": " + ec.message());
    if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
        throw std::runtime_error("console_tls_key " + o.tls_key.string() + ": does not match console_tls_certificate " +
                                 o.tls_certificate.string());
    }
    return ctx;
}

}  // namespace

void check_options(const ServerOptions& options) {
    tls_context(options, parse_endpoint("console_listen", options.listen));
}

// A connection as the acceptor sees it: one it may have to close for a newcomer.
// Not in an anonymous namespace: Server::Impl holds it, and Impl has linkage.
struct Evictable {
    virtual ~Evictable() = default;
    virtual void evict() = 0;
};

struct Server::Impl {
    ServerOptions options;
    std::unique_ptr<App> app;
    std::atomic<std::size_t> open{0};  // slots->open(), for connections() on any thread
    // The io thread's only; before io, so that the connections io's handlers
    // still hold when it is destroyed find them.
    std::optional<Slots> slots;
    std::unordered_map<Slots::Id, std::weak_ptr<Evictable>> held;
    asio::io_context io{1};
    std::optional<ssl::context> tls;
    tcp::acceptor acceptor{io};
    std::thread thread;
    std::optional<TokenBucket> pacer;  // the io thread's only

    void accept();
};

namespace {

// One client connection: requests in turn (keep-alive), each answered by the App.
// Its slot (slots.hpp) is marked serving from its turn until its response
// is written, and authenticated once the App says a request was.
template <class Stream>
class Connection : public Evictable, public std::enable_shared_from_this<Connection<Stream>> {
public:
    template <class... Args>
    Connection(Server::Impl& server, Slots::Id id, std::string client, Args&&... args)
        : server_(server), id_(id), client_(std::move(client)), stream_(std::forward<Args>(args)...) {}
    ~Connection() override {
        server_.slots->release(id_);
        server_.held.erase(id_);
        server_.open.store(server_.slots->open(), std::memory_order_relaxed);
    }

    // Closed at once for a newcomer: no TLS close_notify, and a turn it waits
    // for is given back (else a flood of newcomers evicting one another would
    // push everyone's turns ever later).
    void evict() override {
        evicted_ = true;
        if (waiting_turn_) server_.pacer->give_back(Clock::now());
        timer_.cancel();
        beast::get_lowest_layer(stream_).close();
    }

    void start() {
        if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
            read();
        } else {
            // A handshake costs a public-key operation: it waits its turn as a request does.
            after_turn([self = this->shared_from_this()] {
                if (self->evicted_) return;
                beast::get_lowest_layer(self->stream_).expires_after(self->server_.options.request_timeout);
                self->stream_.async_handshake(ssl::stream_base::server, [self](beast::error_code ec) {
                    if (!ec) self->read();
                });
            });
        }
    }

private:
    void read() {
        parser_.emplace();
        parser_->header_limit(8 * 1024);
        // The body's limit depends on the route: checked below, once the headers are in.
        parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
        beast::get_lowest_layer(stream_).expires_after(requests_ == 0 ? server_.options.request_timeout
                                                                      : server_.options.idle_timeout);
        http::async_read_header(stream_, buffer_, *parser_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) return self->on_read(ec);
            const auto& head = self->parser_->get();
            const auto target = head.target();
            // A body a stranger may not send is not read: the request is answered from
            // its headers (401, sign in first) and the connection closed.
            if (!self->server_.app->body_allowed(head, Clock::now())) {
                self->body_unread_ = true;
                return self->on_read({});
            }
            const std::uint64_t limit =
                self->server_.app->max_body_bytes(head.method(), std::string_view(target.data(), target.size()));
            // A declared length over the limit is refused before any of the body is read;
            // a chunked body is cut off when it passes it.
            if (const auto length = self->parser_->content_length(); length && *length > limit) {
                return self->on_read(http::error::body_limit);
            }
            self->parser_->body_limit(limit);
            http::async_read(self->stream_, self->buffer_, *self->parser_,
                             [self](beast::error_code ec2, std::size_t) { self->on_read(ec2); });
        });
    }

    void on_read(beast::error_code ec) {
        if (ec == http::error::body_limit || ec == http::error::header_limit) {
            // Say why, then close: the rest of the request is not read.
            const bool body = ec == http::error::body_limit;
            response_ = Response{body ? http::status::payload_too_large : http::status::request_header_fields_too_large, 11};
            add_security_headers(response_, server_.app->tls());
            server_.app->answered(static_cast<unsigned>(response_.result_int()));
            response_.set(http::field::content_type, "text/plain; charset=utf-8");
            response_.body() = body ? "request body too large\n" : "request header too large\n";
            response_.keep_alive(false);
            response_.prepare_payload();
            server_.slots->serving(id_);
            write();
            return;
        }
        if (ec) return close();
        ++requests_;
        after_turn([self = this->shared_from_this()] {
            if (self->evicted_) return;
            self->server_.slots->serving(self->id_);
            self->response_ = self->server_.app->handle(self->parser_->get(), self->client_, Clock::now());
            if (self->server_.app->authenticated()) self->server_.slots->authenticated(self->id_);
            if (self->body_unread_) self->response_.keep_alive(false);  // what follows on the wire is that body
            self->write();
        });
    }

    // Runs `f` now, or when the server's pace lets it.
    template <class F>
    void after_turn(F f) {
        const auto wait = server_.pacer->reserve(Clock::now());
        if (wait <= Clock::duration::zero()) return f();
        timer_.expires_after(wait);
        waiting_turn_ = true;
        timer_.async_wait([self = this->shared_from_this(), f = std::move(f)](beast::error_code ec) {
            self->waiting_turn_ = false;
            if (!ec) f();  // cancelled: evicted
        });
    }

    void write() {
        beast::get_lowest_layer(stream_).expires_after(server_.options.request_timeout);
        http::async_write(stream_, response_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) return;
            self->server_.slots->waiting(self->id_);
            if (self->response_.keep_alive()) return self->read();
            self->close();
        });
    }

    void close() {
        if (evicted_) return;
        beast::error_code ignored;
        if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
            stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        } else {
            beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
            stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {});
        }
    }

    Server::Impl& server_;
    Slots::Id id_;
    bool evicted_ = false;
    bool waiting_turn_ = false;  // for after_turn's timer
    bool body_unread_ = false;   // answered from the headers alone (App::body_allowed)
    std::string client_;
    Stream stream_;
    asio::steady_timer timer_{server_.io};
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    Response response_;
    std::size_t requests_ = 0;
};

}  // namespace

void Server::Impl::accept() {
    acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
        if (!ec) {
            boost::system::error_code e;
            const auto peer = socket.remote_endpoint(e);
            // Logs and the audit trail name the address itself; the bounds count by its key.
            std::string client = e ? std::string("?") : peer.address().to_string();
            const auto admission = slots->admit(e ? client : address_key(peer.address()));
            if (!admission) {
                boost::system::error_code ignored;
                socket.close(ignored);  // over a bound, nobody to evict: closed, not queued
            } else {
                if (admission->evicted) {
                    if (const auto it = held.find(*admission->evicted); it != held.end()) {
                        const auto victim = it->second.lock();
                        held.erase(it);  // first: its destructor may run as `victim` goes
                        if (victim) victim->evict();
                    }
                }
                std::shared_ptr<Evictable> connection;
                if (tls) {
                    auto c = std::make_shared<Connection<beast::ssl_stream<beast::tcp_stream>>>(
                        *this, admission->id, std::move(client), std::move(socket), *tls);
                    c->start();
                    connection = std::move(c);
                } else {
                    auto c = std::make_shared<Connection<beast::tcp_stream>>(*this, admission->id, std::move(client),
                                                                             std::move(socket));
                    c->start();
                    connection = std::move(c);
                }
                held.emplace(admission->id, connection);
                open.store(slots->open(), std::memory_order_relaxed);
            }
        }
        accept();
    });
}

Server::Server(ServerOptions options, std::unique_ptr<App> app) : impl_(std::make_unique<Impl>()) {
    impl_->options = std::move(options);
    impl_->app = std::move(app);
    const auto& o = impl_->options;
    const tcp::endpoint endpoint = parse_endpoint("console_listen", o.listen);
    impl_->tls = tls_context(o, endpoint);
    impl_->pacer.emplace(o.requests_per_second, o.request_burst);
    impl_->slots.emplace(o.max_connections, o.max_connections_per_address);
    auto& a = impl_->acceptor;
    boost::system::error_code ec;
    a.open(endpoint.protocol(), ec);
    if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) a.bind(endpoint, ec);
    if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw std::runtime_error("console_listen " + o.listen + ": " + ec.message());
}

Server::~Server() { stop(); }

void Server::start() {
    impl_->accept();
    impl_->thread = std::thread([this] {
        // Below the milter's threads: ten steps nicer than the daemon (raising
        // one's own nice value needs no privilege), so that when the CPU is
        // short the mail goes first and the console still gets a share.
        // (SCHED_IDLE starved it: on a busy machine a sign-in never finished.)
        const auto tid = static_cast<id_t>(::gettid());
        errno = 0;
        const int nice = ::getpriority(PRIO_PROCESS, tid);
        if (errno == 0) ::setpriority(PRIO_PROCESS, tid, std::min(19, nice + 10));
        pthread_setname_np(pthread_self(), "console");  // shows in top -H and /proc/PID/task
        impl_->io.run();
    });
}

void Server::stop() {
    if (!impl_) return;
    asio::post(impl_->io, [this] {
        boost::system::error_code ignored;
        impl_->acceptor.close(ignored);
        impl_->io.stop();
    });
    if (impl_->thread.joinable()) impl_->thread.join();
}

unsigned short Server::port() const {
    boost::system::error_code ec;
    const auto e = impl_->acceptor.local_endpoint(ec);
    return ec ? 0 : e.port();
}

bool Server::tls() const { return impl_->tls.has_value(); }

std::size_t Server::connections() const { return impl_->open.load(std::memory_order_relaxed); }

}  // namespace mailsift::console
