// mailsift-console-flood — a flood on mailsiftd's web console, for
// bench/console_load.sh: N clients at once, each on its own connection and
// requesting as fast as the console answers for SECONDS, each from its own
// address of 127.1.0.0/16 (the console takes 16 connections from one). Most poll
// GET /api/status, every fifth POSTs /api/scan with MESSAGE, every fifth (another)
// searches the history (a filter with its count, by P(spam); every tenth such
// request exports the filter as CSV), and client 0 keeps
// failing to sign in, each time from another address of 127.0.0.0/8 (so the
// per-address limit does not stop it; the global budget of password checks
// does). They share one session, signed in before the clock starts ("ready" on
// standard error then). Prints one line: requests answered by kind, the
// console's latency percentiles, and the CPU the clients themselves used.
//
// usage: mailsift-console-flood HOST:PORT USER PASSWORD MESSAGE CLIENTS SECONDS [KINDS]
//   KINDS  which of the four kinds run, comma-separated (default
//          status,scan,history,signin); the clients of a kind left out stay idle, so
//          each kind's cost can be told apart.
//
// Written in C++ with one blocking thread per client so that the instrument
// costs little of the CPU it shares with the daemon: a Python client of the
// same shape used most of a core, which the milter then lost to the clients,
// not to the console. Plain HTTP on loopback only.
// A benchmark, not a test: it prints numbers and fails only when the console
// cannot be reached or refuses the sign-in.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Reply {
    int status = 0;
    std::string head;  // status line and header fields
    std::string body;
    bool close = false;
};

// Case-insensitive value of a header field in a reply's head, or "".
std::string field(const std::string& head, std::string_view name) {
    std::size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos + 2 < head.size()) {
        const std::size_t start = pos + 2;
        const std::size_t end = head.find("\r\n", start);
        const std::string line = head.substr(start, end == std::string::npos ? std::string::npos : end - start);
        const std::size_t colon = line.find(':');
        if (colon == name.size() &&
            std::equal(name.begin(), name.end(), line.begin(), [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
            std::size_t v = colon + 1;
            while (v < line.size() && line[v] == ' ') ++v;
            return line.substr(v);
        }
        pos = end;
    }
    return "";
}

class Connection {
public:
    Connection(const sockaddr_in& to, std::optional<in_addr> from = std::nullopt) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
        if (from) {
            sockaddr_in local{};
            local.sin_family = AF_INET;
            local.sin_addr = *from;
            if (::bind(fd_, reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
                ::close(fd_);
                throw std::runtime_error(std::string("bind: ") + std::strerror(errno));
            }
        }
        if (::connect(fd_, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
            ::close(fd_);
            throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
        }
        int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        timeval limit{60, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    ~Connection() { ::close(fd_); }

    // One request and its reply; throws when the connection fails.
    Reply request(std::string_view method, std::string_view path, std::string_view headers, std::string_view body) {
        std::string out;
        out.reserve(200 + body.size());
        out.append(method).append(" ").append(path).append(" HTTP/1.1\r\nHost: console\r\n").append(headers);
        if (method == "POST") out.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
        out.append("\r\n").append(body);
        write_all(out);

        Reply r;
        std::size_t end;
        while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) fill();
        r.head = buffer_.substr(0, end);
        buffer_.erase(0, end + 4);
        if (r.head.size() < 12 || r.head.compare(0, 5, "HTTP/") != 0) throw std::runtime_error("not an HTTP reply");
        r.status = std::stoi(r.head.substr(9, 3));
        const std::string length = field(r.head, "Content-Length");
        const std::size_t n = length.empty() ? 0 : std::stoul(length);
        while (buffer_.size() < n) fill();
        r.body = buffer_.substr(0, n);
        buffer_.erase(0, n);
        std::string connection = field(r.head, "Connection");
        std::transform(connection.begin(), connection.end(), connection.begin(), [](char c) { return std::tolower(c); });
        r.close = connection == "close";
        return r;
    }

private:
    void write_all(std::string_view bytes) {
        while (!bytes.empty()) {
            const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (n <= 0) throw std::runtime_error("write failed");
            bytes.remove_prefix(static_cast<std::size_t>(n));
        }
    }
    void fill() {
        char chunk[16384];
        const ssize_t n = ::read(fd_, chunk, sizeof chunk);
        if (n <= 0) throw std::runtime_error("connection closed");
        buffer_.append(chunk, static_cast<std::size_t>(n));
    }
    int fd_ = -1;
    std::string buffer_;
};

std::string json_string(const std::string& body, std::string_view key) {
    const std::string needle = "\"" + std::string(key) + "\":\"";
    const std::size_t at = body.find(needle);
    if (at == std::string::npos) return "";
    const std::size_t from = at + needle.size();
    return body.substr(from, body.find('"', from) - from);
}

std::string login_body(std::string_view user, std::string_view password) {
    // The bench's names and passwords hold no character JSON must escape.
    return "{\"name\":\"" + std::string(user) + "\",\"password\":\"" + std::string(password) + "\"}";
}

double cpu_seconds() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
    if ((argc != 7 && argc != 8) || std::string_view(argv[1]) == "--help") {
        std::cerr << "usage: mailsift-console-flood HOST:PORT USER PASSWORD MESSAGE CLIENTS SECONDS [KINDS]\n";
        return argc == 2 ? 0 : 2;
    }
    const std::string kinds = "," + std::string(argc == 8 ? argv[7] : "status,scan,history,signin") + ",";
    const auto runs = [&](std::string_view kind) { return kinds.find("," + std::string(kind) + ",") != std::string::npos; };
    const std::string target = argv[1], user = argv[2], password = argv[3];
    const int clients = std::stoi(argv[5]);
    const double seconds = std::stod(argv[6]);
    std::ifstream in(argv[4], std::ios::binary);
    if (!in) {
        std::cerr << "mailsift-console-flood: cannot read " << argv[4] << "\n";
        return 2;
    }
    const std::string message((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t colon = target.rfind(':');
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(std::stoi(target.substr(colon + 1))));
    if (colon == std::string::npos || ::inet_pton(AF_INET, target.substr(0, colon).c_str(), &to.sin_addr) != 1) {
        std::cerr << "mailsift-console-flood: HOST:PORT must be an IPv4 address and a port\n";
        return 2;
    }

    std::string cookie, csrf;
    try {
        Connection first(to);
        const Reply r = first.request("POST", "/api/login", "Content-Type: application/json\r\n", login_body(user, password));
        cookie = field(r.head, "Set-Cookie");
        cookie = cookie.substr(0, cookie.find(';'));
        csrf = json_string(r.body, "csrf");
        if (r.status != 200 || cookie.empty() || csrf.empty()) {
            std::cerr << "mailsift-console-flood: sign-in refused (HTTP " << r.status << ")\n";
            return 1;
        }
    } catch (const std::exception& e) {
        std::cerr << "mailsift-console-flood: " << target << ": " << e.what() << "\n";
        return 1;
    }
    const std::string status_headers = "Cookie: " + cookie + "\r\n";
    const std::string scan_headers = "Cookie: " + cookie + "\r\nX-CSRF-Token: " + csrf + "\r\n";
    const std::string bad_login = login_body(user, "wrong password");

    std::mutex lock;
    std::vector<double> latencies;
    long status_count = 0, scan_count = 0, history_count = 0, signin_count = 0, errors = 0, refused = 0;
    std::barrier start(clients + 1);
    Clock::time_point deadline;

    auto client = [&](int i) {
        enum { status, scan, history, signin } const kind =
            i == 0 ? signin : (i % 5 == 0 ? scan : i % 5 == 2 ? history : status);
        const char* const name = kind == signin ? "signin" : kind == scan ? "scan" : kind == history ? "history" : "status";
        std::vector<double> mine;
        long ok_count = 0, failed = 0, too_many = 0;
        std::optional<Connection> c;
        start.arrive_and_wait();
        if (!runs(name)) return;
        for (unsigned attempt = 0; Clock::now() < deadline; ++attempt) {
            const auto t = Clock::now();
            bool ok = false;
            try {
                if (kind == signin) {
                    in_addr from{};
                    from.s_addr = htonl((127u << 24) | ((attempt / 250 % 250) << 8) | (2 + attempt % 250));
                    Connection once(to, from);
                    const int s = once.request("POST", "/api/login", "Content-Type: application/json\r\n", bad_login).status;
                    ok = s == 401 || s == 429;
                    too_many += s == 429;
                } else {
                    if (!c) {
                        // Each client from its own address (127.1.0.i), as people's browsers are:
                        // the console takes at most 16 connections from one address.
                        in_addr own{};
                        own.s_addr = htonl((127u << 24) | (1u << 16) | static_cast<unsigned>(i + 1));
                        c.emplace(to, own);
                    }
                    // An administrator tracing mail: a filter and its count, the spammiest first;
                    // now and then the whole filter exported.
                    const char* search = attempt % 10 == 9 ? "/api/history/export?format=csv&recipient=example&order=spammiest"
                                         : attempt % 2 == 0 ? "/api/history?recipient=example&order=spammiest"
                                                            : "/api/history?verdict=spam&q=offer";
                    const Reply r = kind == scan      ? c->request("POST", "/api/scan", scan_headers, message)
                                    : kind == history ? c->request("GET", search, status_headers, "")
                                                      : c->request("GET", "/api/status", status_headers, "");
                    ok = r.status == 200;
                    if (r.close) c.reset();
                }
            } catch (const std::exception&) {
                c.reset();
            }
            ok ? ++ok_count : ++failed;
            mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
        }
        std::lock_guard g(lock);
        latencies.insert(latencies.end(), mine.begin(), mine.end());
        (kind == signin ? signin_count : kind == scan ? scan_count : kind == history ? history_count : status_count) += ok_count;
        errors += failed;
        refused += too_many;
    };

    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(clients));
    for (int i = 0; i < clients; ++i) threads.emplace_back(client, i);
    const double cpu_before = cpu_seconds();
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    std::cerr << "ready" << std::endl;
    start.arrive_and_wait();
    for (auto& t : threads) t.join();
    const double cpu = cpu_seconds() - cpu_before;

    std::sort(latencies.begin(), latencies.end());
    auto q = [&](double p) {
        return latencies.empty() ? 0.0 : latencies[std::min(latencies.size() - 1, static_cast<std::size_t>(p * latencies.size()))];
    };
    std::printf(
        "console: %d clients, %zu requests (%ld status, %ld scans, %ld history searches, %ld failed sign-ins of which "
        "%ld unchecked (429), %ld errors), p50 %.1f ms, p99 %.1f ms; the clients used %.2f s of CPU in %.0f s\n",
        clients, latencies.size(), status_count, scan_count, history_count, signin_count, refused, errors, q(0.5), q(0.99),
        cpu, seconds);
    return 0;
}
