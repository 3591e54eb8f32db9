// The daemon's network side: one acceptor (inet or unix socket), one
// connection object per MTA connection, scoring on a thread pool so the I/O
// thread never waits for a verdict. The only file that sees both a socket and
// a milter::Session.
#pragma once

#include <utility>  // Boost 1.74 Asio uses std::exchange without including it
#include <boost/asio.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "mailsift/engine/settings.hpp"
#include "judge.hpp"
#include "metrics.hpp"
#include "recorder.hpp"
#include "scorer.hpp"

namespace mailsift::daemon {

// A listen address in Postfix notation, resolved.
struct ListenAddress {
    boost::asio::generic::stream_protocol::endpoint endpoint;
    std::string unix_path;  // non-empty for unix sockets
};
// Throws std::runtime_error with a clear message for a bad address.
ListenAddress resolve_listen(const std::string& spec);

// A socket file left at `path` by an earlier run (nothing else) is removed.
void remove_stale_socket(const std::string& path);
// A unix socket's mode, group and owner ("": left as they are); an unknown
// group or user is an error naming its setting.
void set_socket_access(const std::string& path, unsigned mode, const std::string& group, const std::string& owner,
                       const char* group_setting, const char* owner_setting);
// Where a unix socket for `path` is bound before it is put in place: a name beside
// it, or `path` itself when that name would not fit a socket address.
std::string socket_staging_path(const std::string& path);
// Gives the socket bound at `staging` its access (as set_socket_access) and only
// then renames it to `path`, so that a client that finds `path` never meets the
// umask's mode. Something at `path` that is not a socket is an error, left as it
// is; on any error the staged socket is removed.
void place_socket(const std::string& staging, const std::string& path, unsigned mode, const std::string& group,
                  const std::string& owner, const char* group_setting, const char* owner_setting);

class Server {
public:
    Server(boost::asio::io_context& io, Scorer& scorer, Recorder& recorder, Metrics& metrics,
           const engine::Settings& settings);
    ~Server();

    // Binds and listens; throws std::system_error naming the address on failure.
    void listen(const std::string& spec);
    // SIGHUP: new settings for new messages.
    void reconfigure(const engine::Settings& settings);
    // SIGTERM: stop accepting; `done` runs once every connection has closed.
    void drain(std::function<void()> done);
    std::size_t active_connections() const { return active_; }
    const Totals& totals() const { return totals_; }
    // Closes every connection now (drain timeout).
    void close_all();

private:
    class Connection;
    void accept();
    void connection_closed();

    boost::asio::io_context& io_;
    Scorer& scorer_;
    Recorder& recorder_;
    Metrics& metrics_;
    std::shared_ptr<const engine::Settings> settings_;
    boost::asio::thread_pool pool_;
    boost::asio::basic_socket_acceptor<boost::asio::generic::stream_protocol> acceptor_;
    std::string unix_path_;
    std::size_t active_ = 0;
    std::function<void()> drained_;
    Totals totals_;
    std::vector<std::weak_ptr<Connection>> connections_;
};

}  // namespace mailsift::daemon
