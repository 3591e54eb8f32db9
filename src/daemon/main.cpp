// mailsiftd — the milter daemon. Reads the configuration, listens, serves MTA
// connections, reloads the model when the database changes; SIGHUP reloads the
// configuration, SIGTERM/SIGINT stop accepting and let sessions in flight finish.
//
// Exit status: 0 clean stop (or --check-config ok), 2 usage, 3 configuration
// or listen error.
#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>  // Boost 1.74 Asio uses std::exchange without including it
#include <boost/asio.hpp>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include "console_status.hpp"
#include "correction_server.hpp"
#include "log.hpp"
#include "mailsift/console/server.hpp"
#include "mailsift/engine/settings.hpp"
#include "mailsift/version.hpp"
#include "notify.hpp"
#include "scorer.hpp"
#include "metrics_http.hpp"
#include "server.hpp"

namespace {

using namespace mailsift;
namespace asio = boost::asio;

const char* const help = R"(usage: mailsiftd [--config FILE] [--listen inet:HOST:PORT|unix:PATH] [--db PATH]
                 [--foreground] [--check-config]

The mailsift milter daemon: Postfix and Sendmail call it to score each message
with the naive-Bayes model trained by mailsift(1).

options:
  --config FILE    configuration file (else $MAILSIFT_CONFIG, else
                   /etc/mailsift/mailsift.conf when it exists)
  --listen SPEC    where to listen, overriding 'listen' (default inet:127.0.0.1:8891)
  --db PATH        model database, overriding $MAILSIFT_DB and 'database'
  --foreground     stay in the foreground (as under systemd); otherwise detach
  --check-config   check the configuration and the listen address, then exit
  -h, --help       show this help
  --version        show the version

signals: SIGHUP reloads the configuration; SIGTERM and SIGINT stop accepting,
finish the sessions in flight and exit. See mailsiftd(8) and mailsift.conf(5).
)";

[[noreturn]] void usage(const std::string& msg) {
    std::cerr << "mailsiftd: " << msg << "\n(try 'mailsiftd --help')\n";
    std::exit(2);
}

struct Options {
    std::optional<std::filesystem::path> config, db;
    std::optional<std::string> listen;
    bool foreground = false;
    bool check_config = false;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](const char* name) -> std::string {
            if (i + 1 >= argc) usage(std::string(name) + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            std::cout << help;
            std::exit(0);
        } else if (a == "--version") {
            std::cout << "mailsiftd " << mailsift::version << "\n" << mailsift::license_notice;
            std::exit(0);
        } else if (a == "--config") {
            o.config = value("--config");
        } else if (a == "--db") {
            o.db = value("--db");
        } else if (a == "--listen") {
            o.listen = value("--listen");
        } else if (a == "--foreground" || a == "-f") {
            o.foreground = true;
        } else if (a == "--check-config") {
            o.check_config = true;
        } else {
            usage("unknown argument '" + a + "'");
        }
    }
    return o;
}

engine::Resolved load(const Options& o) {
    engine::Resolved r = engine::resolve(o.config, o.db);
    if (o.listen) r.settings.daemon.listen = *o.listen;
    return r;
}

// Without --foreground: fork before any thread exists (threads do not survive
// fork, and the scoring pool and the recorder are threads). The parent waits
// until the child reports that it listens, then exits 0; if the child fails
// first, the parent exits with the child's status, so the caller still sees
// a listen error. Standard error stays where it was so the log is not lost.
// Returns the pipe the child reports readiness on.
int detach() {
    int fds[2];
    if (::pipe(fds) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
    const pid_t pid = ::fork();
    if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
    if (pid > 0) {
        ::close(fds[1]);
        char byte = 0;
        ssize_t n = 0;
        do n = ::read(fds[0], &byte, 1);
        while (n < 0 && errno == EINTR);
        if (n == 1) std::_Exit(0);
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        std::_Exit(WIFEXITED(status) ? WEXITSTATUS(status) : 3);
    }
    ::close(fds[0]);
    ::setsid();
    if (std::freopen("/dev/null", "r", stdin) == nullptr) { /* stdin is unused */ }
    return fds[1];
}

// The detached child listens: let the waiting parent exit 0.
void report_ready(int& fd) {
    if (fd < 0) return;
    ssize_t n = 0;
    do n = ::write(fd, "1", 1);
    while (n < 0 && errno == EINTR);
    ::close(fd);
    fd = -1;
}

// Started as root with `user` set: become that user (its uid, gid and
// supplementary groups) for good, before any connection or database is read.
// Returns a line for the log, or "".
std::string drop_privileges(const std::string& user) {
    if (::geteuid() != 0) {
        return user.empty() ? std::string() : "not started as root: 'user = " + user + "' ignored, running as uid " +
                                                  std::to_string(::geteuid());
    }
    if (user.empty()) return "running as root: set 'user' (e.g. mailsift) to drop privileges after listening";
    const struct passwd* pw = ::getpwnam(user.c_str());
    if (pw == nullptr) throw std::runtime_error("user " + user + ": no such user");
    const uid_t uid = pw->pw_uid;
    const gid_t gid = pw->pw_gid;
    if (::initgroups(user.c_str(), gid) != 0) throw std::system_error(errno, std::generic_category(), "initgroups");
    if (::setgid(gid) != 0) throw std::system_error(errno, std::generic_category(), "setgid");
    if (::setuid(uid) != 0) throw std::system_error(errno, std::generic_category(), "setuid");
    if (uid != 0 && (::setuid(0) == 0 || ::geteuid() == 0)) throw std::runtime_error("could regain root after setuid");
    return "running as " + user + " (uid " + std::to_string(uid) + ", gid " + std::to_string(gid) + ")";
}

console::ServerOptions console_options(const engine::Settings& s) {
    return {.listen = s.console.listen, .tls_certificate = s.console.tls_certificate, .tls_key = s.console.tls_key};
}

// HOST:PORT as configured, with the port actually bound (port 0 picks one).
std::string metrics_endpoint(const std::string& configured, unsigned short port) {
    return configured.substr(0, configured.rfind(':')) + ":" + std::to_string(port);
}

}  // namespace

int main(int argc, char** argv) {
    const Options options = parse(argc, argv);
    engine::Resolved resolved;
    try {
        resolved = load(options);
        daemon::resolve_listen(resolved.settings.daemon.listen);
        if (!resolved.settings.console.listen.empty()) console::check_options(console_options(resolved.settings));
    } catch (const std::exception& e) {
        std::cerr << "mailsiftd: " << e.what() << "\n";
        return 3;
    }
    if (options.check_config) {
        std::cout << "configuration ok: " << (resolved.config.empty() ? "built-in defaults" : resolved.config.string())
                  << ", listen " << resolved.settings.daemon.listen << ", database " << store::display_location(resolved.database.string())
                  << " (from " << resolved.database_source << ")";
        if (const auto& c = resolved.settings.console; !c.listen.empty()) {
            std::cout << ", console " << (c.tls_certificate.empty() ? "http://" : "https://") << c.listen << "/";
        }
        std::cout << "\n";
        return 0;
    }

    int ready_fd = -1;
    try {
        if (!options.foreground) ready_fd = detach();
    } catch (const std::exception& e) {
        std::cerr << "mailsiftd: cannot detach: " << e.what() << "\n";
        return 3;
    }

    try {
        asio::io_context io(1);
        // Signals are caught from before the socket exists: a SIGTERM sent as
        // soon as the socket appears waits for the handler below, never kills.
        asio::signal_set signals(io, SIGTERM, SIGINT, SIGHUP);
        daemon::Scorer scorer(resolved.database, resolved.settings);
        daemon::Metrics metrics;
        daemon::Recorder recorder({.database = resolved.database,
                                   .interval = resolved.settings.daemon.stats_interval,
                                   .keep_scans = resolved.settings.daemon.signature_keep,
                                   .settings = resolved.settings,
                                   .metrics = &metrics});
        // A deleted or replaced database is counted where 'mailsift stats' shows it.
        scorer.on_event([&recorder](const std::string& name) { recorder.count(name); });
        daemon::Server server(io, scorer, recorder, metrics, resolved.settings);
        server.listen(resolved.settings.daemon.listen);
        // Corrections from users who may not write the database (correct_socket).
        std::unique_ptr<daemon::CorrectionServer> corrections;
        if (!resolved.settings.daemon.correct_socket.empty()) {
            corrections = std::make_unique<daemon::CorrectionServer>(io, recorder, metrics, resolved.database,
                                                                    resolved.settings);
            corrections->listen();
        }
        daemon::MetricsServer metrics_server(io, metrics);
        if (!resolved.settings.daemon.metrics_listen.empty()) {
            metrics_server.listen(resolved.settings.daemon.metrics_listen);
        }
        // The console: bound, with its certificate and key read, while still root.
        std::unique_ptr<console::Server> console_server;
        if (!resolved.settings.console.listen.empty()) {
            const auto& c = resolved.settings.console;
            auto app = std::make_unique<console::App>(
                console::AppOptions{.accounts = c.users,
                                    .database = resolved.database,
                                    .config = resolved.config,
                                    .settings = resolved.settings,
                                    .tls = !c.tls_certificate.empty(),
                                    .trusted_proxies = c.trusted_proxies,
                                    .sessions = {},
                                    .sign_in = {},
                                    .devices = {}},
                console::Services{.status = [&metrics] { return daemon::console_status(metrics); },
                                  .model = [&scorer] { return scorer.model(); },
                                  // The audit trail: a line in the log (the journal), and the console's counters.
                                  .audit =
                                      [&metrics](const console::AuditEvent& e) {
                                          daemon::log_audit(console::audit_line(e));
                                          metrics.console_event(e.event, e.outcome, e.role);
                                      },
                                  .answered = [&metrics](unsigned status) { metrics.console_answer(status); }});
            console_server = std::make_unique<console::Server>(console_options(resolved.settings), std::move(app));
        }
        // Listening may need root (a socket under /run); nothing after it does.
        // The recorder thread opens the database only at its first flush, later.
        const std::string privileges = drop_privileges(resolved.settings.daemon.user);
        if (!privileges.empty()) daemon::log_info(privileges);

        // Loading and reloading the model run on their own thread, so a large
        // model never stalls I/O: until the first load completes, the MTA gets
        // the configured default action rather than a connection that hangs.
        if (console_server) console_server->start();
        std::atomic<bool> stopping{false};
        std::mutex refresh_mutex;
        std::condition_variable refresh_cv;
        std::thread refresher([&] {
            std::unique_lock lock(refresh_mutex);
            std::weak_ptr<const void> model_seen;  // not kept alive: a reload frees the old model
            while (!stopping) {
                const std::string line = scorer.refresh();
                if (!line.empty()) daemon::log_info(line);
                {
                    const auto st = scorer.status();
                    if (st.failing) metrics.store_error();
                    const bool changed = model_seen.expired() || model_seen.lock() != st.model;
                    if (st.has_model) metrics.model_refreshed(st.features, st.spam, st.ham, changed);
                    // What changed it may leave the linear scorer to refit (corrections): the
                    // recorder sees, and refits once the changes pause (a refresh without one).
                    if (st.has_model && changed) recorder.model_changed(st.linear_behind);
                    if (st.has_model && !changed) recorder.model_settled();
                    model_seen = st.model;
                }
                refresh_cv.wait_for(lock, resolved.settings.daemon.refresh_interval);
            }
        });

        asio::steady_timer drain_timer(io);
        std::function<void()> wait_signal;
        wait_signal = [&] {
            signals.async_wait([&](const boost::system::error_code& ec, int sig) {
                if (ec) return;
                if (sig == SIGHUP) {
                    daemon::notify_systemd("RELOADING=1");
                    try {
                        engine::Resolved fresh = load(options);
                        if (fresh.settings.daemon.listen != resolved.settings.daemon.listen) {
                            daemon::log_warning("listen changed in the configuration; restart mailsiftd to apply it");
                        }
                        {
                            std::lock_guard lock(refresh_mutex);
                            scorer.reconfigure(fresh.settings);
                        }
                        refresh_cv.notify_all();  // rebuild the model with the new settings now
                        server.reconfigure(fresh.settings);
                        if (corrections) corrections->reconfigure(fresh.settings);
                        if (fresh.settings.daemon.correct_socket != resolved.settings.daemon.correct_socket) {
                            daemon::log_warning("correct_socket changed in the configuration; restart mailsiftd to apply it");
                        }
                        daemon::log_info("configuration reloaded");
                    } catch (const std::exception& e) {
                        daemon::log_error(std::string("configuration not reloaded, keeping the old one: ") + e.what());
                    }
                    daemon::notify_systemd("READY=1");
                    wait_signal();
                    return;
                }
                daemon::notify_systemd("STOPPING=1");
                daemon::log_info("stopping: finishing " + std::to_string(server.active_connections()) +
                                 " connection(s)");
                signals.cancel();
                if (corrections) corrections->stop_accepting();
                server.drain([&] { io.stop(); });
                drain_timer.expires_after(resolved.settings.daemon.drain_timeout);
                drain_timer.async_wait([&](const boost::system::error_code& e) {
                    if (e) return;
                    daemon::log_warning("drain timeout: closing the remaining connections");
                    server.close_all();
                    io.stop();
                });
            });
        };
        wait_signal();

        daemon::log_info("listening on " + resolved.settings.daemon.listen + ", database " +
                         store::display_location(resolved.database.string()) +
                         (corrections ? ", corrections on " + resolved.settings.daemon.correct_socket : std::string()) +
                         (resolved.settings.daemon.metrics_listen.empty()
                              ? std::string()
                              : ", metrics on http://" + metrics_endpoint(resolved.settings.daemon.metrics_listen,
                                                                          metrics_server.port()) + "/metrics") +
                         (console_server ? std::string(", console on ") + (console_server->tls() ? "https://" : "http://") +
                                               metrics_endpoint(resolved.settings.console.listen, console_server->port()) + "/"
                                         : std::string()));
        daemon::notify_systemd("READY=1");
        report_ready(ready_fd);
        io.run();

        {
            std::lock_guard lock(refresh_mutex);
            stopping = true;
        }
        refresh_cv.notify_all();
        refresher.join();
        if (console_server) console_server->stop();
        const auto& c = server.totals();
        daemon::log_info("stopped after " + std::to_string(c.messages.load()) + " messages (" +
                         std::to_string(c.spam.load()) + " spam, " + std::to_string(c.ham.load()) + " ham, " +
                         std::to_string(c.unsure.load()) + " unsure, " + std::to_string(c.skipped.load()) +
                         " skipped, " + std::to_string(c.errors.load()) + " errors)");
        return 0;
    } catch (const std::exception& e) {
        daemon::log_error(e.what());
        return 3;
    }
}
