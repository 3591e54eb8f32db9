// What the daemon tests share: the real mailsiftd started on a unix socket in
// a private directory, and an MTA side written byte by byte.
#pragma once

#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../support/paths.hpp"

namespace daemon_test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

inline const std::string daemon_binary = MAILSIFTD;
inline const std::string cli = MAILSIFT_CLI;
inline const std::string data = std::string(MAILSIFT_TEST_DATA) + "/messages";

inline std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Waits up to `limit` for `done()`; the limit only bounds the test, it is no speed claim.
template <typename F>
inline bool eventually(F done, std::chrono::milliseconds limit = 10s, std::chrono::milliseconds poll = 20ms) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
        if (done()) return true;
        std::this_thread::sleep_for(poll);
    }
    return done();
}

inline const std::string spam = "From: Lottery <win@prize.example>\nSubject: You WON a FREE prize!!!\n\n"
                         "CONGRATULATIONS! You have WON $250,000. Claim your FREE prize now, act now!!!\n";
inline const std::string ham = "From: Bob <bob@example.org>\nSubject: minutes\n\n"
                               "The meeting notes and the patch review are attached.\n";

struct Daemon {
    fs::path dir;
    fs::path socket;
    pid_t pid = -1;

    std::string database;  // an SQLite file in `dir`, unless given (a PostgreSQL URI)

    explicit Daemon(const std::string& extra_config = "", const std::string& database_location = "") {
        char tmpl[] = "/tmp/mailsiftd-test-XXXXXX";
        dir = ::mkdtemp(tmpl);
        socket = dir / "milter.sock";
        database = database_location.empty() ? (dir / "model.db").string() : database_location;
        std::ofstream(dir / "mailsift.conf") << "listen = unix:" << socket.string() << "\n"
                                             << "database = " << database << "\n"
                                             << "refresh_interval = 50\n"
                                             << extra_config;
    }
    ~Daemon() {
        stop(SIGKILL);
        fs::remove_all(dir);
    }
    // Returns once the socket exists, polling every `poll`.
    void start(std::chrono::milliseconds poll = 20ms) {
        pid = ::fork();
        if (pid == 0) {
            const std::string log = (dir / "daemon.log").string();
            std::freopen(log.c_str(), "a", stderr);
            const std::string config = (dir / "mailsift.conf").string();
            ::execl(daemon_binary.c_str(), "mailsiftd", "--foreground", "--config", config.c_str(), nullptr);
            std::_Exit(127);
        }
        REQUIRE(eventually([&] { return fs::exists(socket); }, 10s, poll));
    }
    // Sends a signal and reaps the process; returns its exit status, if it exited.
    std::optional<int> stop(int sig) {
        if (pid <= 0) return std::nullopt;
        ::kill(pid, sig);
        int status = 0;
        ::waitpid(pid, &status, 0);
        pid = -1;
        if (WIFEXITED(status)) return WEXITSTATUS(status);
        return std::nullopt;
    }
    std::string log() const { return slurp(dir / "daemon.log"); }
    // The fixtures, and the spam and ham the tests score: six messages alone make
    // a model that the default learner is rightly unsure of on new mail (a new
    // lottery spam scores P(spam) 0.8), and these tests are of the daemon.
    void train() const {
        const std::string db = "'" + database + "'";
        const std::string lottery = (dir / "lottery.eml").string(), minutes = (dir / "minutes.eml").string();
        std::ofstream(lottery) << spam;
        std::ofstream(minutes) << ham;
        REQUIRE(std::system((cli + " --db " + db + " learn --spam " + lottery + " " + data + "/spam_money_offer.eml " + data +
                             "/spam_cheap_pills.eml " + data + "/spam_investment.eml >/dev/null")
                                .c_str()) == 0);
        REQUIRE(std::system((cli + " --db " + db + " learn --ham " + minutes + " " + data + "/ham_meeting_notes.eml " + data +
                             "/ham_patch_review.eml " + data + "/ham_build_report.eml >/dev/null")
                                .c_str()) == 0);
    }
};

inline void put32(std::string& s, std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>((v >> shift) & 0xFF));
}

inline std::string frame(char letter, const std::string& payload) {
    std::string f;
    put32(f, static_cast<std::uint32_t>(payload.size() + 1));
    f.push_back(letter);
    return f + payload;
}

inline std::string z(const std::string& s) { return s + std::string(1, '\0'); }

struct Client {
    int fd = -1;
    explicit Client(const fs::path& path) {
        fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
        REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        timeval tv{10, 0};  // bounds the test if the daemon never answers
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    ~Client() { ::close(fd); }
    void send(const std::string& bytes) const { REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size())); }
    // One reply (letter, data), or nothing when the daemon closed the connection.
    std::optional<std::pair<char, std::string>> reply() const {
        std::string head(4, '\0');
        if (!read_all(head)) return std::nullopt;
        std::uint32_t n = 0;
        for (char c : head) n = (n << 8) | static_cast<unsigned char>(c);
        std::string body(n, '\0');
        if (n == 0 || !read_all(body)) return std::nullopt;
        return std::make_pair(body[0], body.substr(1));
    }
    bool read_all(std::string& buf) const {
        std::size_t got = 0;
        while (got < buf.size()) {
            const ssize_t n = ::read(fd, buf.data() + got, buf.size() - got);
            if (n <= 0) return false;
            got += static_cast<std::size_t>(n);
        }
        return true;
    }
    // Negotiates asking for replies to nothing but end of body.
    std::uint32_t negotiate() const {
        std::string o;
        put32(o, 6);
        put32(o, 0x1FF);
        put32(o, 0x1FFFFF);
        send(frame('O', o));
        const auto r = reply();
        REQUIRE(r);
        REQUIRE(r->first == 'O');
        return 0;
    }
    // Sends one message (no-reply steps negotiated) and returns every reply up to the final one.
    std::vector<std::pair<char, std::string>> message(const std::string& headers_and_body,
                                                      const std::string& recipient = "<user@example.org>") const {
        return message(headers_and_body, std::vector<std::string>{recipient});
    }
    std::vector<std::pair<char, std::string>> message(const std::string& headers_and_body,
                                                      const std::vector<std::string>& recipients) const {
        const auto split = headers_and_body.find("\n\n");
        std::istringstream hs(headers_and_body.substr(0, split));
        send(frame('M', z("<sender@example.net>")));
        for (const auto& recipient : recipients) send(frame('R', z(recipient)));
        for (std::string line; std::getline(hs, line);) {
            const auto colon = line.find(':');
            send(frame('L', z(line.substr(0, colon)) + z(line.substr(colon + 1))));
        }
        send(frame('N', ""));
        send(frame('B', headers_and_body.substr(split + 2)));
        send(frame('E', ""));
        std::vector<std::pair<char, std::string>> out;
        for (;;) {
            const auto r = reply();
            REQUIRE(r);
            out.push_back(*r);
            if (std::string("catrdy").find(r->first) != std::string::npos) break;
        }
        send(frame('A', ""));
        return out;
    }
};

inline std::string added_status(const std::vector<std::pair<char, std::string>>& replies) {
    for (const auto& [letter, payload] : replies) {
        if (letter == 'h' && payload.rfind("X-Mailsift-Status", 0) == 0) return payload.substr(payload.find('\0') + 1);
    }
    return {};
}

inline std::string run(const std::string& cmd) {
    std::string out;
    FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    ::pclose(p);
    return out;
}
inline std::string header_value(const std::vector<std::pair<char, std::string>>& replies, const std::string& name) {
    for (const auto& [letter, payload] : replies) {
        if (letter == 'h' && payload.rfind(name + std::string(1, '\0'), 0) == 0) {
            std::string v = payload.substr(name.size() + 1);
            v = v.substr(0, v.find('\0'));
            while (!v.empty() && v.front() == ' ') v.erase(0, 1);
            return v;
        }
    }
    return {};
}
// The Unix user running these tests, as mailsiftd names a peer (its number when it has no name).
inline std::string unix_user_name() {
    const passwd* pw = ::getpwuid(::geteuid());
    return pw != nullptr ? pw->pw_name : std::to_string(::geteuid());
}

// The header deletions ('m' with an empty value) among the replies: name -> indices, in order.
inline std::vector<std::pair<std::string, std::uint32_t>> deletions(const std::vector<std::pair<char, std::string>>& replies) {
    std::vector<std::pair<std::string, std::uint32_t>> out;
    for (const auto& [letter, payload] : replies) {
        if (letter != 'm' || payload.size() < 6) continue;
        std::uint32_t index = 0;
        for (int k = 0; k < 4; ++k) index = (index << 8) | static_cast<unsigned char>(payload[static_cast<std::size_t>(k)]);
        const std::string name = payload.substr(4, payload.find('\0', 4) - 4);
        const std::string value = payload.substr(4 + name.size() + 1);
        if (value == std::string(1, '\0') || value.empty()) out.emplace_back(name, index);
    }
    return out;
}
// ---- additions for the hostile-input tests ----

// A field of /proc/PID/status in KiB ("VmHWM": peak resident set, "VmRSS": now), or 0.
inline std::size_t proc_status_kib(pid_t pid, const std::string& field) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(field + ":", 0) == 0) return std::stoul(line.substr(field.size() + 1));
    }
    return 0;
}
inline std::size_t peak_rss_mib(const Daemon& d) { return proc_status_kib(d.pid, "VmHWM") / 1024; }

// How often `needle` occurs in `text`.
inline std::size_t occurrences(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
    return n;
}

// Writes all of `bytes`, without SIGPIPE; false once the daemon has closed the connection.
inline bool send_all(int fd, const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

// True when the daemon has closed the connection (the read side gives EOF or an error)
// without consuming any reply that may be waiting.
inline bool peer_closed(int fd) {
    char c;
    const ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

// Negotiation for an MTA that wants a reply to every step (no no-reply steps offered).
inline std::string negotiate_all_replies() {
    std::string o;
    put32(o, 6);
    put32(o, 0x1FF);
    put32(o, 0);
    return frame('O', o);
}

// One message as Postfix sends it, built from parts: envelope, one L frame per
// header (names and values as given, so they may hold anything but NUL), end of
// headers, then the body in B frames of at most 64 KiB; sent in pieces of about
// 1 MiB, so a large input is never one string. Returns the replies up to the final one.
struct Piecewise {
    const Client& c;
    std::string pending;

    void add(const std::string& f) {
        pending += f;
        if (pending.size() >= (1u << 20)) flush();
    }
    void flush() {
        REQUIRE(send_all(c.fd, pending));
        pending.clear();
    }
    void envelope() {
        add(frame('M', z("<sender@example.net>")));
        add(frame('R', z("<user@example.org>")));
    }
    void header(const std::string& name, const std::string& value) { add(frame('L', z(name) + z(value))); }
    void end_of_headers() { add(frame('N', "")); }
    void body(const std::string& bytes) {
        for (std::size_t at = 0; at < bytes.size(); at += 65535) add(frame('B', bytes.substr(at, 65535)));
    }
    std::vector<std::pair<char, std::string>> end() {
        add(frame('E', ""));
        flush();
        std::vector<std::pair<char, std::string>> out;
        for (;;) {
            const auto r = c.reply();
            REQUIRE(r);
            out.push_back(*r);
            if (std::string("catrdy").find(r->first) != std::string::npos) break;
        }
        REQUIRE(send_all(c.fd, frame('A', "")));
        return out;
    }
};
// Trains the daemon's database on the fixtures, starts it, and waits for its model.
// Every line of the daemon's log is one event with its level's prefix: none
// carries a CR, and none is a forged console audit line.
inline void check_one_line_events(const Daemon& d) {
    std::istringstream log(d.log());
    for (std::string line; std::getline(log, line);) {
        INFO(line);
        CHECK(line.rfind("<", 0) == 0);
        CHECK(line.find("console audit") == std::string::npos);
        CHECK(line.find('\r') == std::string::npos);
    }
}

inline void start_trained_daemon(Daemon& d) {
    d.train();
    d.start();
    REQUIRE(eventually([&] { return d.log().find("loaded model") != std::string::npos; }));
}

}  // namespace daemon_test
