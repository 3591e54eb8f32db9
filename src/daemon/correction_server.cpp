// mailsiftd's correction socket; see correction_server.hpp.
#include "correction_server.hpp"

#include <pwd.h>
#include <sys/socket.h>

#include <chrono>
#include <optional>
#include <ctime>
#include <vector>

#include "log.hpp"
#include "mailsift/engine/user_layers.hpp"
#include "mailsift/engine/correction_owner.hpp"
#include "mailsift/engine/correction_wire.hpp"
#include "mailsift/engine/trainer.hpp"
#include "mailsift/store/database.hpp"
#include "file_identity.hpp"
#include "server.hpp"

namespace mailsift::daemon {

namespace asio = boost::asio;
using local_stream = asio::local::stream_protocol;

namespace {

// A request must arrive, and its answer be read, within this.
constexpr std::chrono::seconds io_deadline{30};
// A body is read in pieces of at most this: its buffer grows as its bytes arrive,
// not to what the first line announced.
constexpr std::size_t body_piece_bytes = 64 * 1024;

std::int64_t now_seconds() { return static_cast<std::int64_t>(std::time(nullptr)); }

// The Unix user at the other end, as the kernel says.
std::optional<uid_t> peer_uid(int fd) {
    ucred cred{};
    socklen_t length = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return std::nullopt;
    return cred.uid;
}

// A user's name; its number when it has none.
std::string user_name(std::optional<uid_t> uid) {
    if (!uid) return "unknown";
    std::vector<char> buffer(4096);
    passwd entry{};
    passwd* found = nullptr;
    if (::getpwuid_r(*uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
        found->pw_name != nullptr) {
        return found->pw_name;
    }
    return std::to_string(*uid);
}

// Whether the peer is one of correct_trusted, by name or number.
bool trusted(std::optional<uid_t> uid, const std::string& name, const std::vector<std::string>& list) {
    if (!uid) return false;
    for (const auto& t : list) {
        if (t == name || t == std::to_string(*uid)) return true;
    }
    return false;
}

// Who the corrections of a request are from, as the trainer keeps them
// (engine/correction_owner.hpp): a trusted peer as an administrator, or for
// the user it names; any other peer for itself, as its login, or an address
// of its own it names. NotYours when it names another. (A peer the kernel
// names no user of is refused before: Connection::start.)
std::string corrector(std::optional<uid_t> uid, const std::string& peer, const std::string& named,
                      const engine::Settings& s) {
    const std::string who = "socket:" + peer;
    if (trusted(uid, peer, s.daemon.correct_trusted)) return named.empty() ? who : engine::corrector_for(who, named);
    if (named.empty()) return engine::corrector_for(who, peer);
    const auto address = engine::user_of(engine::PerUser::recipient, named);
    const bool own = address ? engine::owns(peer, *address, engine::PerUser::recipient) : named == peer;
    if (!own) {
        throw engine::NotYours("--user " + named + " is not the Unix user " + peer +
                               "'s own address: only a trusted corrector (correct_trusted) may name another user");
    }
    return engine::corrector_for(who, named);
}

}  // namespace

class CorrectionServer::Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(CorrectionServer& server, local_stream::socket socket, std::shared_ptr<std::atomic<std::size_t>> open)
        : server_(server),
          socket_(std::move(socket)),
          deadline_(server.io_),
          open_(std::move(open)),
          peer_(peer_uid(socket_.native_handle())),
          peer_name_(user_name(peer_)),
          who_("socket:" + peer_name_) {
        ++*open_;
    }
    ~Connection() {
        --*open_;
        if (admitted_) server_.limits_.release(*peer_);
    }

    void start(bool busy) {
        if (busy) {
            return refuse("busy: " + std::to_string(max_connections) + " corrections are being made; try again");
        }
        const std::size_t per_peer = server_.settings()->daemon.correct_peer_connections;
        if (!peer_) return refuse("not permitted: the kernel does not say which user connected");
        if (!server_.limits_.admit(*peer_, per_peer)) {
            return refuse("busy: " + who_ + " has " + std::to_string(per_peer) +
                          " connections open already (correct_peer_connections); try again");
        }
        admitted_ = true;
        arm_deadline();
        auto self = shared_from_this();
        asio::async_read_until(socket_, asio::dynamic_buffer(in_, engine::max_correction_head_bytes), '\n',
                               [this, self](const boost::system::error_code& ec, std::size_t n) {
                                   if (ec == asio::error::not_found) {
                                       refuse("bad request: its first line is too long");
                                   } else if (ec) {
                                       deadline_.cancel();  // closed early, or the deadline: nothing to answer
                                   } else {
                                       read_body(n);
                                   }
                               });
    }

private:
    void arm_deadline() {
        deadline_.expires_after(io_deadline);
        deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
            if (!ec) self->socket_.close();
        });
    }

    void read_body(std::size_t head_bytes) {
        const auto settings = server_.settings();
        try {
            head_ = engine::parse_request_head(std::string_view(in_).substr(0, head_bytes - 1),
                                               engine::max_correction_body_bytes(settings->limits.max_message_bytes));
        } catch (const engine::WireError& e) {
            return refuse(std::string("bad request: ") + e.what());
        }
        in_.erase(0, head_bytes);
        if (in_.size() > head_.body_bytes) return refuse("bad request: bytes after its body");
        read_body_piece();
    }

    // The body's next bytes, the buffer growing only by what arrives.
    void read_body_piece() {
        const std::size_t have = in_.size();
        if (have == head_.body_bytes) return apply();
        const std::size_t want = std::min(body_piece_bytes, head_.body_bytes - have);
        in_.resize(have + want);
        auto self = shared_from_this();
        socket_.async_read_some(asio::buffer(in_.data() + have, want),
                                [this, self, have](const boost::system::error_code& ec, std::size_t n) {
                                    if (ec) {
                                        deadline_.cancel();  // closed early, or the deadline: nothing to answer
                                        return;
                                    }
                                    in_.resize(have + n);
                                    read_body_piece();
                                });
    }

    // On the worker: parsed, applied and committed; the answer goes back to the I/O thread.
    void apply() {
        deadline_.cancel();
        auto self = shared_from_this();
        asio::post(server_.worker_, [this, self] {
            const std::string& peer = peer_name_;
            const std::string& who = who_;
            std::string text;
            try {
                const auto settings = server_.settings();
                const engine::CorrectionRequest request =
                    engine::parse_request_body(head_, in_, settings->limits.max_message_bytes);
                std::string().swap(in_);
                // The scans scored a moment ago are written first, here (the recorder may be
                // refitting): their corrections then find them.
                CorrectionServer::Held& held = server_.connection();
                store::Database& db = *held.db;
                server_.recorder_.write_queued_scans(db);
                engine::Trainer trainer(db, *settings, engine::Trainer::Reads::rows);
                trainer.use_linear_cache(held.linear);
                const std::string by = corrector(peer_, peer, request.user, *settings);
                std::int64_t wait = 0;
                if (!server_.limits_.take(by, request.inputs.size(), settings->daemon.correct_rate, now_seconds(), wait)) {
                    throw Busy("busy: more than " + std::to_string(settings->daemon.correct_rate) +
                               " corrections a minute from " + by + " (correct_rate); try again in " +
                               std::to_string(wait) + " s");
                }
                trainer.set_corrector(by);
                if (!request.user.empty()) {  // correct --user: whose copies (a login: their scans say)
                    if (const auto user = engine::user_of(settings->per_user, request.user)) {
                        trainer.set_user(*user);
                    } else if (settings->per_user != engine::PerUser::off && !engine::valid_login(request.user)) {
                        throw engine::WireError("the user is neither an address nor a login");
                    }
                }
                const auto now = static_cast<std::int64_t>(std::time(nullptr));
                std::vector<engine::CorrectionResult> results;
                results.reserve(request.inputs.size());
                for (const auto& input : request.inputs) {
                    results.push_back(engine::apply_correction(trainer, request.action, input, now));
                }
                // Not refitted here: mailsiftd's recorder refits once the changes settle
                // (Trainer::refit_due), off this worker.
                trainer.commit();
                text = engine::encode_answer(results);
                server_.metrics_.socket_corrections(results.size());
                log_info("applied " + std::to_string(results.size()) + " correction(s) (" +
                         engine::to_string(request.action) + ") from " + by);
            } catch (const engine::NotYours& e) {
                // Audited with the peer as the kernel names it; the trainer changed nothing.
                text = refused(std::string("not permitted: ") + e.what());
            } catch (const Busy& e) {
                text = refused(e.what());
            } catch (const engine::WireError& e) {
                text = refused(std::string("bad request: ") + e.what());
            } catch (const std::exception& e) {
                server_.held_.reset();  // opened afresh for the next request
                server_.metrics_.socket_refused();
                log_warning("could not apply a correction from " + who + " (nothing applied): " + e.what());
                text = engine::encode_refusal(e.what());
            }
            asio::post(server_.io_, [this, self, text = std::move(text)]() mutable { answer(std::move(text)); });
            // Answered: the log's copy into the database (a few thousand page
            // writes and a sync every few corrections) is not the user's wait.
            if (server_.held_) server_.held_->db->checkpoint();
        });
    }

    // Over correct_rate: nothing applied.
    class Busy : public std::runtime_error {
    public:
        using std::runtime_error::runtime_error;
    };

    // Nothing applied: counted, logged (once a minute for a peer, escaped), and the answer's text.
    std::string refused(const std::string& why) {
        server_.metrics_.socket_refused();
        if (const std::string line = server_.limits_.refusal_line(who_, why, now_seconds()); !line.empty()) {
            log_warning(line);
        }
        return engine::encode_refusal(why);
    }
    void refuse(const std::string& why) { answer(refused(why)); }

    void answer(std::string text) {
        out_ = std::move(text);
        arm_deadline();
        auto self = shared_from_this();
        asio::async_write(socket_, asio::buffer(out_), [this, self](const boost::system::error_code&, std::size_t) {
            deadline_.cancel();
            boost::system::error_code ignored;
            socket_.shutdown(local_stream::socket::shutdown_both, ignored);
            socket_.close(ignored);
        });
    }

    CorrectionServer& server_;
    local_stream::socket socket_;
    asio::steady_timer deadline_;
    std::shared_ptr<std::atomic<std::size_t>> open_;
    std::optional<uid_t> peer_;
    std::string peer_name_;   // the peer's Unix user, as the kernel names it (user_name)
    std::string who_;         // "socket:USER"
    bool admitted_ = false;   // counted in limits_ (correct_peer_connections)
    std::string in_, out_;
    engine::RequestHead head_;
};

CorrectionServer::CorrectionServer(asio::io_context& io, Recorder& recorder, Metrics& metrics, std::filesystem::path database,
                                   const engine::Settings& settings)
    : io_(io),
      recorder_(recorder),
      metrics_(metrics),
      database_(std::move(database)),
      settings_(std::make_shared<const engine::Settings>(settings)),
      acceptor_(io) {}

CorrectionServer::~CorrectionServer() {
    worker_.join();
    if (!path_.empty()) ::unlink(path_.c_str());
}

void CorrectionServer::listen() {
    const auto& d = settings()->daemon;
    const std::string& path = d.correct_socket;
    // Bound beside its path and put in place with its access set (server.hpp).
    const std::string staging = socket_staging_path(path);
    remove_stale_socket(staging);  // it would make bind fail
    boost::system::error_code ec;
    acceptor_.open(local_stream(), ec);
    if (!ec) acceptor_.bind(local_stream::endpoint(staging), ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw std::system_error(ec, "cannot listen on correct_socket " + path);
    // Owned by the user the daemon runs as, so that it can remove it after dropping root.
    place_socket(staging, path, d.correct_socket_mode, d.correct_socket_group, d.user, "correct_socket_group", "user");
    path_ = path;
    accept();
}

CorrectionServer::Held& CorrectionServer::connection() {
    const std::string location = database_.string();
    // Not for_few_messages(): a request holds few, but the connection serves
    // one request after another, and a cache of a few hundred pages read them
    // again from the file at every correction.
    const auto open = [&] {
        auto db = store::open(location, store::Database::Mode::read_write, std::chrono::seconds(5),
                              store::Database::Create::never);
        db->for_requests();
        return db;
    };
    if (store::is_postgresql(location)) {
        if (!held_) held_ = Held{open(), {}, {}};
        return *held_;
    }
    // The file there now: the one held, or another (replaced, restored).
    FileIdentity now;
    int error = 0;
    if (!identify(database_, now, error)) {
        held_.reset();
        throw store::Error(database_, "no such database");
    }
    if (held_ && held_->id == now) return *held_;
    held_.reset();
    FileIdentity id;
    auto db = open_identified(database_, open, id);
    held_ = Held{std::move(db), id, {}};
    return *held_;
}

void CorrectionServer::reconfigure(const engine::Settings& settings) {
    auto fresh = std::make_shared<const engine::Settings>(settings);
    std::lock_guard lock(settings_mutex_);
    settings_ = std::move(fresh);
}

std::shared_ptr<const engine::Settings> CorrectionServer::settings() const {
    std::lock_guard lock(settings_mutex_);
    return settings_;
}

void CorrectionServer::stop_accepting() {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
}

void CorrectionServer::accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, local_stream::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
        if (!ec) {
            const bool busy = *open_ >= max_connections;
            std::make_shared<Connection>(*this, std::move(socket), open_)->start(busy);
        }
        accept();
    });
}

}  // namespace mailsift::daemon
