// Acceptor and connections. Each connection reads frames, feeds its Session,
// writes replies in order, and hands finished messages to the scoring pool;
// while a message is being judged it does not read (the MTA waits for us).
//
// What a hostile or broken peer can hold (see tests/daemon/hostile_test.cpp):
//  - memory: the decoder's partial frame (max_frame_bytes; reads go through
//    the I/O thread's buffer), the message prefix (limits.max_message_bytes),
//    and replies not yet written, which stop reading once they pass
//    max_unsent_bytes (a peer that does not read its replies cannot make us
//    queue more);
//  - time: the deadline is read_timeout after the last complete command (or the
//    connection's start, or the last verdict). Bytes that do not complete a
//    command do not move it, so a peer trickling one byte a second is closed,
//    and so is one that has not read our replies for read_timeout.
#include "server.hpp"

#include <grp.h>
#include <pwd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <iostream>

#include "log.hpp"
#include "mailsift/milter/protocol.hpp"
#include "mailsift/milter/session.hpp"
#include "judge.hpp"

namespace mailsift::daemon {

namespace asio = boost::asio;
using generic_stream = asio::generic::stream_protocol;

ListenAddress resolve_listen(const std::string& spec) {
    ListenAddress out;
    if (spec.rfind("unix:", 0) == 0) {
        out.unix_path = spec.substr(5);
        if (out.unix_path.empty() || out.unix_path.size() >= sizeof(sockaddr_un::sun_path)) {
            throw std::runtime_error("listen " + spec + ": unix socket path is empty or too long");
        }
        out.endpoint = generic_stream::endpoint(asio::local::stream_protocol::endpoint(out.unix_path));
        return out;
    }
    if (spec.rfind("inet:", 0) == 0) {
        const std::string rest = spec.substr(5);
        const std::size_t colon = rest.rfind(':');
        if (colon == std::string::npos) throw std::runtime_error("listen " + spec + ": expected inet:HOST:PORT");
        std::string host = rest.substr(0, colon);
        if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
        const std::string port = rest.substr(colon + 1);
        unsigned long n = 0;
        try {
            std::size_t used = 0;
            n = std::stoul(port, &used);
            if (used != port.size() || n == 0 || n > 65535) throw std::out_of_range("port");
        } catch (const std::exception&) {
            throw std::runtime_error("listen " + spec + ": bad port '" + port + "'");
        }
        boost::system::error_code ec;
        const auto address = asio::ip::make_address(host.empty() ? "127.0.0.1" : host, ec);
        if (ec) throw std::runtime_error("listen " + spec + ": '" + host + "' is not an IP address");
        out.endpoint = generic_stream::endpoint(asio::ip::tcp::endpoint(address, static_cast<unsigned short>(n)));
        return out;
    }
    throw std::runtime_error("listen " + spec + ": expected inet:HOST:PORT or unix:PATH");
}

// ---- Connection ----

class Server::Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(Server& server, generic_stream::socket socket)
        : server_(server),
          socket_(std::move(socket)),
          timer_(server.io_),
          settings_(server.settings_),
          decoder_(settings_->daemon.max_frame_bytes),
          session_(session_options(*settings_)) {}

    void start() {
        const int family = socket_.local_endpoint().protocol().family();
        tcp_ = family == AF_INET || family == AF_INET6;
        if (tcp_) {
            // Replies are small and must leave at once.
            const int one = 1;
            ::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        // read_ready() reads what the socket holds and never waits for more.
        boost::system::error_code ec;
        socket_.non_blocking(true, ec);
        if (ec) {
            log_warning("connection closed: cannot make its socket non-blocking: " + ec.message());
            close();
            return;
        }
        arm_timer();
        read();
    }

    void close() {
        if (closed_) return;
        closed_ = true;
        boost::system::error_code ignored;
        timer_.cancel();
        socket_.shutdown(generic_stream::socket::shutdown_both, ignored);
        socket_.close(ignored);
    }

    ~Connection() { server_.connection_closed(); }

private:
    static milter::SessionOptions session_options(const engine::Settings& s) {
        milter::SessionOptions o;
        o.max_message_bytes = s.limits.max_message_bytes;
        o.watched_header_prefix = "X-Mailsift-";  // every one of them is removed (policy.cpp, strip_ours)
        // SpamAssassin's pair, when mailsiftd writes them: a sender's own are removed too.
        if (s.daemon.spam_headers) o.watched_header_names = {"X-Spam-Flag", "X-Spam-Status"};
        return o;
    }

    // Steps negotiated as no-reply leave the MTA's data unanswered; Postfix does
    // not set TCP_NODELAY, so its next write waits for our ACK, which Linux would
    // delay by up to 40 ms per message. Acknowledge at once instead (the flag is
    // not sticky: it is set again after every read).
    void quick_ack() {
#ifdef TCP_QUICKACK
        if (!tcp_) return;
        const int one = 1;
        ::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
#endif
    }

    // The deadline for the next complete command (and for our replies to be read).
    void arm_timer() {
        timer_.expires_after(settings_->daemon.read_timeout);
        timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
            if (ec || self->closed_ || self->judging_) return;
            self->timed_out();
        });
    }

    void timed_out() {
        const std::string limit = std::to_string(settings_->daemon.read_timeout.count()) + " s";
        server_.recorder_.count("timeouts");
        if (paused_ || writing_) {
            log_warning("connection closed: the MTA has not read our replies for " + limit + " (" +
                        std::to_string(pending_.size() + out_.size()) + " bytes unsent)");
        } else if (decoder_.buffered_bytes() > 0) {
            log_warning("connection closed: no complete command within " + limit + " (" +
                        std::to_string(decoder_.buffered_bytes()) + " bytes of a partial command)");
        } else {
            log_warning("connection timed out after " + limit + " of silence; closing it");
        }
        close();
    }

    // Waits until the socket is readable, then reads what is there into the
    // I/O thread's buffer and feeds it to the decoder: a connection holds no
    // read buffer of its own (512 connections held 8 MiB of them), only the
    // decoder's partial frame.
    void read() {
        if (closed_ || reading_) return;
        reading_ = true;
        socket_.async_wait(generic_stream::socket::wait_read, [self = shared_from_this()](const boost::system::error_code& ec) {
            self->reading_ = false;
            if (ec) {
                self->close();
                return;
            }
            self->read_ready();
        });
    }

    void read_ready() {
        // One a thread that runs the I/O (a body chunk, up to 64 KiB, in one read).
        thread_local std::array<char, 65536> buffer;
        boost::system::error_code ec;
        const std::size_t n = socket_.read_some(asio::buffer(buffer), ec);
        if (ec == asio::error::would_block || ec == asio::error::try_again) {
            read();  // readable no more (another wake-up took it): wait again
            return;
        }
        if (ec) {
            close();
            return;
        }
        quick_ack();
        decoder_.feed(std::string_view(buffer.data(), n));
        process();
    }

    // Replies queued or being written.
    std::size_t unsent() const { return out_.size() + pending_.size(); }

    // Runs every complete command; stops at a message to judge, and stops reading
    // while too many replies are unsent (flush() resumes when they are written).
    void process() {
        if (closed_) return;
        paused_ = false;
        milter::Command command;
        bool progress = false;
        for (;;) {
            if (unsent() > max_unsent_bytes) {
                paused_ = true;
                break;
            }
            const auto status = decoder_.next(command);
            if (status == milter::Decoder::Status::need_more) break;
            if (status == milter::Decoder::Status::error) {
                server_.recorder_.count("protocol_errors");
                server_.metrics_.protocol_error();
                log_warning(std::string("milter protocol error, closing the connection: ") +
                            milter::describe(decoder_.error()));
                flush_then_close();
                return;
            }
            progress = true;
            auto outcome = session_.handle(command);
            if (outcome.close) server_.metrics_.protocol_error();
            if (!outcome.note.empty()) {
                log_warning(outcome.close ? "milter protocol error, closing the connection: " + outcome.note
                                          : "milter command out of order (answered anyway): " + outcome.note);
            }
            for (const auto& r : outcome.replies) milter::encode(r, out_);
            if (outcome.close) {
                flush_then_close();
                return;
            }
            if (outcome.judge) {
                judge();
                return;
            }
        }
        if (progress) arm_timer();
        flush();
        if (!paused_) read();
    }

    void judge() {
        judging_ = true;
        timer_.cancel();
        decoder_.release_if_empty();  // while it waits for the pool, a connection holds its message alone
        auto self = shared_from_this();
        asio::post(server_.pool_, [self] {
            Answer answer = daemon::judge(self->session_.transaction(), self->session_.actions(), *self->settings_,
                                          self->server_.scorer_, self->server_.recorder_, self->server_.totals_,
                                          &self->server_.metrics_);
            self->session_.prepare(answer.replies);
            asio::post(self->server_.io_, [self, answer = std::move(answer)] {
                for (const auto& r : answer.replies) milter::encode(r, self->out_);
                self->judging_ = false;
                if (self->closed_) return;
                self->arm_timer();
                self->process();  // commands that arrived meanwhile, then read on
            });
        });
    }

    void flush() {
        if (out_.empty() || writing_ || closed_) return;
        writing_ = true;
        pending_.swap(out_);
        out_.clear();
        asio::async_write(socket_, asio::buffer(pending_),
                          [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
                              self->writing_ = false;
                              self->pending_.clear();
                              if (ec) {
                                  self->close();
                                  return;
                              }
                              if (self->close_after_write_ && self->out_.empty()) {
                                  self->close();
                                  return;
                              }
                              if (self->paused_ && !self->judging_ && !self->close_after_write_ &&
                                  self->unsent() <= max_unsent_bytes) {
                                  // The peer reads again: take the commands that waited.
                                  self->paused_ = false;
                                  self->process();
                                  return;
                              }
                              self->flush();
                          });
    }

    void flush_then_close() {
        close_after_write_ = true;
        if (out_.empty() && !writing_) {
            close();
            return;
        }
        flush();
    }

    Server& server_;
    generic_stream::socket socket_;
    asio::steady_timer timer_;
    std::shared_ptr<const engine::Settings> settings_;
    milter::Decoder decoder_;
    milter::Session session_;
    std::string out_, pending_;
    // Replies a peer may leave unread before we stop reading its commands: far
    // more than any conversation needs (a verdict is a few hundred bytes).
    static constexpr std::size_t max_unsent_bytes = 64 * 1024;
    bool writing_ = false, judging_ = false, closed_ = false, close_after_write_ = false;
    bool reading_ = false, paused_ = false;
    bool tcp_ = false;
};

// ---- Server ----

Server::Server(asio::io_context& io, Scorer& scorer, Recorder& recorder, Metrics& metrics,
               const engine::Settings& settings)
    : io_(io),
      scorer_(scorer),
      recorder_(recorder),
      metrics_(metrics),
      settings_(std::make_shared<const engine::Settings>(settings)),
      pool_(settings.daemon.threads),
      acceptor_(io) {}

Server::~Server() {
    pool_.join();
    if (!unix_path_.empty()) ::unlink(unix_path_.c_str());
}

void remove_stale_socket(const std::string& path) {
    struct stat st{};
    if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(path.c_str());
}

void set_socket_access(const std::string& path, unsigned mode, const std::string& group, const std::string& owner,
                       const char* group_setting, const char* owner_setting) {
    if (::chmod(path.c_str(), mode) != 0) {
        throw std::system_error(errno, std::generic_category(), "cannot set mode of " + path);
    }
    if (!group.empty()) {
        const struct group* g = ::getgrnam(group.c_str());
        if (g == nullptr) throw std::runtime_error(std::string(group_setting) + " " + group + ": no such group");
        if (::chown(path.c_str(), static_cast<uid_t>(-1), g->gr_gid) != 0) {
            throw std::system_error(errno, std::generic_category(), "cannot set group of " + path);
        }
    }
    if (!owner.empty()) {
        const struct passwd* pw = ::getpwnam(owner.c_str());
        if (pw == nullptr) throw std::runtime_error(std::string(owner_setting) + " " + owner + ": no such user");
        if (::chown(path.c_str(), pw->pw_uid, static_cast<gid_t>(-1)) != 0) {
            throw std::system_error(errno, std::generic_category(), "cannot set owner of " + path);
        }
    }
}

std::string socket_staging_path(const std::string& path) {
    const auto slash = path.rfind('/');
    const std::string staged = path.substr(0, slash + 1) + "." + path.substr(slash + 1) + ".new";
    return staged.size() < sizeof(sockaddr_un::sun_path) ? staged : path;
}

void place_socket(const std::string& staging, const std::string& path, unsigned mode, const std::string& group,
                  const std::string& owner, const char* group_setting, const char* owner_setting) {
    try {
        set_socket_access(staging, mode, group, owner, group_setting, owner_setting);
        if (staging == path) return;
        struct stat st{};
        if (::lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
            throw std::system_error(EEXIST, std::generic_category(), "cannot listen on " + path);
        }
        if (::rename(staging.c_str(), path.c_str()) != 0) {
            throw std::system_error(errno, std::generic_category(), "cannot put the socket in place at " + path);
        }
    } catch (...) {
        ::unlink(staging.c_str());
        throw;
    }
}

void Server::listen(const std::string& spec) {
    const ListenAddress where = resolve_listen(spec);
    // A unix socket is bound beside its path and put in place with its access set.
    const std::string staging = where.unix_path.empty() ? "" : socket_staging_path(where.unix_path);
    if (!staging.empty()) remove_stale_socket(staging);  // it would make bind fail
    const generic_stream::endpoint endpoint =
        staging.empty() ? where.endpoint : generic_stream::endpoint(asio::local::stream_protocol::endpoint(staging));
    boost::system::error_code ec;
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec && where.unix_path.empty()) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw std::system_error(ec, "cannot listen on " + spec);
    if (!where.unix_path.empty()) {
        const auto& d = settings_->daemon;
        // The owner: socket_owner, else the user the daemon will run as, so that it
        // can still remove the socket after dropping root.
        place_socket(staging, where.unix_path, d.socket_mode, d.socket_group,
                     d.socket_owner.empty() ? d.user : d.socket_owner, "socket_group", "socket_owner");
        unix_path_ = where.unix_path;
    }
    accept();
}

void Server::reconfigure(const engine::Settings& settings) {
    settings_ = std::make_shared<const engine::Settings>(settings);
}

void Server::accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, generic_stream::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
        if (!ec) {
            ++active_;
            recorder_.count("connections");
            metrics_.session_opened();
            auto c = std::make_shared<Connection>(*this, std::move(socket));
            connections_.push_back(c);
            c->start();
        } else {
            log_warning("accept failed: " + ec.message());
        }
        accept();
    });
}

void Server::connection_closed() {
    --active_;
    metrics_.session_closed();
    if (active_ == 0 && drained_) {
        auto done = std::move(drained_);
        drained_ = nullptr;
        asio::post(io_, done);
    }
    // Forget connections that are gone, now and then.
    if (connections_.size() > 64 && connections_.size() > 2 * active_) {
        std::erase_if(connections_, [](const std::weak_ptr<Connection>& w) { return w.expired(); });
    }
}

void Server::drain(std::function<void()> done) {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    if (active_ == 0) {
        asio::post(io_, std::move(done));
        return;
    }
    drained_ = std::move(done);
}

void Server::close_all() {
    for (auto& w : connections_) {
        if (auto c = w.lock()) c->close();
    }
}

}  // namespace mailsift::daemon
