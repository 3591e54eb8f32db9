// mailsiftd's correction socket (correct_socket): `mailsift correct`, run by a
// user who may not write the database (the IMAPSieve recipe's mail user),
// hands its corrections here, and the daemon, which owns the model, applies
// them with the command's own code (engine::apply_correction) and answers
// once they are committed. One request per connection
// (engine/correction_wire.hpp). Requests are applied one at a time on a
// thread of their own, so neither the I/O thread nor scoring waits for the
// database; the scans still queued in the recorder are written first, so a
// message scored a moment ago is corrected by its scan. The worker keeps its
// connection to the database between requests (a correction then reads the
// model's pages from its cache, not the file). The history names
// the corrector "socket:USER", USER the peer's Unix user as the kernel gives
// it (SO_PEERCRED), never what the peer says. Who may connect is the socket's
// mode and group (correct_socket_mode, correct_socket_group).
#pragma once

#include <utility>  // Boost 1.74 Asio uses std::exchange without including it
#include <boost/asio.hpp>
#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "mailsift/engine/settings.hpp"
#include "mailsift/engine/trainer.hpp"
#include "mailsift/store/database.hpp"
#include "correction_limits.hpp"
#include "file_identity.hpp"
#include "metrics.hpp"
#include "recorder.hpp"

namespace mailsift::daemon {

class CorrectionServer {
public:
    CorrectionServer(boost::asio::io_context& io, Recorder& recorder, Metrics& metrics, std::filesystem::path database,
                     const engine::Settings& settings);
    ~CorrectionServer();  // waits for the correction being applied; removes the socket
    CorrectionServer(const CorrectionServer&) = delete;
    CorrectionServer& operator=(const CorrectionServer&) = delete;

    // Binds settings.daemon.correct_socket with its mode, group and owner; throws naming the path.
    void listen();
    // SIGHUP: how the corrections that follow are trained.
    void reconfigure(const engine::Settings& settings);
    // SIGTERM: no new connections (those open are answered).
    void stop_accepting();

    // Connections open at once; beyond, a connection is answered "busy" and closed.
    static constexpr std::size_t max_connections = 16;

private:
    class Connection;
    void accept();
    std::shared_ptr<const engine::Settings> settings() const;

    boost::asio::io_context& io_;
    Recorder& recorder_;
    Metrics& metrics_;
    std::filesystem::path database_;
    mutable std::mutex settings_mutex_;
    std::shared_ptr<const engine::Settings> settings_;
    boost::asio::local::stream_protocol::acceptor acceptor_;
    std::string path_;
    // Connections open; the last owner of one may be the worker.
    std::shared_ptr<std::atomic<std::size_t>> open_ = std::make_shared<std::atomic<std::size_t>>(0);
    CorrectionLimits limits_;  // per peer: connections, corrections a minute, refusals logged
    // The worker's connection, kept from one request to the next so that its
    // cache of the model's pages (a writer's, 32 MiB at most) and the linear
    // weights it read stay warm; opened again when the file at the path is
    // another (replaced) or after a failure.
    struct Held {
        std::unique_ptr<store::Database> db;
        FileIdentity id;                      // none for PostgreSQL
        engine::Trainer::LinearCache linear;  // read since, not again (Trainer::use_linear_cache)
    };
    Held& connection();  // the worker's only
    std::optional<Held> held_;
    boost::asio::thread_pool worker_{1};  // applies the corrections, one request at a time
};

}  // namespace mailsift::daemon
