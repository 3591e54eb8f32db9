// mailsift-loadgen — the MTA side of the milter protocol, as Postfix speaks it,
// replaying messages over N concurrent connections to measure a milter:
// messages per second and the latency from end-of-body to the final reply.
//
// usage: mailsift-loadgen [--connect HOST:PORT] [--connections N] [--messages M]
//                         [--duration SECONDS] [--interval SECONDS] [--recipients N]
//                         [--files-from LIST | PATH...]
//
// The messages are sent in turn, starting over at the first when M exceeds their
// number. --duration runs until the time is up instead (also stopping at M if
// --messages is given too). --interval adds one "interval" line per period, as it
// ends, with the messages completed in it and their latency percentiles, before the
// usual summary line. --recipients N sends each message to one of N users in turn
// (user0@example.org ... user<N-1>@example.org; per_user, issue 44) instead of
// user@example.org.
//
// A benchmark, not a test: it prints numbers and fails only when the milter
// misbehaves (a protocol error or a missing reply).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// Command letters and flags, as in libmilter's mfdef.h.
constexpr std::uint32_t all_actions = 0x1FF;
constexpr std::uint32_t all_steps = 0x1FFFFF;
constexpr std::uint32_t nr_conn = 1u << 12, nr_helo = 1u << 13, nr_mail = 1u << 14, nr_rcpt = 1u << 15,
                        nr_data = 1u << 16, nr_hdr = 1u << 7, nr_eoh = 1u << 18, nr_body = 1u << 19,
                        leadspc = 1u << 20;

struct Message {
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;  // CRLF line ends
};

Message split(const std::string& raw) {
    Message m;
    std::string s = raw;
    if (s.rfind("From ", 0) == 0) s.erase(0, s.find('\n') + 1);
    std::size_t pos = 0;
    while (pos < s.size()) {
        std::size_t nl = s.find('\n', pos);
        if (nl == std::string::npos) nl = s.size();
        std::string line = s.substr(pos, nl - pos);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        pos = nl + 1;
        if (line.empty()) break;
        if ((line[0] == ' ' || line[0] == '\t') && !m.headers.empty()) {
            m.headers.back().second += "\r\n" + line;
            continue;
        }
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string value = line.substr(colon + 1);
        if (!value.empty() && value[0] == ' ') value.erase(0, 1);
        m.headers.emplace_back(line.substr(0, colon), value);
    }
    for (; pos < s.size(); ++pos) {
        if (s[pos] == '\n' && (m.body.empty() || m.body.back() != '\r')) m.body.push_back('\r');
        m.body.push_back(s[pos]);
    }
    return m;
}

void put32(std::string& out, std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xFF));
}

void frame(std::string& out, char letter, std::string_view data) {
    put32(out, static_cast<std::uint32_t>(data.size() + 1));
    out.push_back(letter);
    out.append(data);
}

std::string z(std::initializer_list<std::string_view> parts) {
    std::string s;
    for (auto p : parts) {
        s.append(p);
        s.push_back('\0');
    }
    return s;
}

class Client {
public:
    explicit Client(const sockaddr_in& addr) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
            throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
        }
        int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        // A reply that never comes is an error (a lost reply), not a hang.
        timeval limit{30, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    }
    ~Client() { ::close(fd_); }

    void send(const std::string& bytes) {
        std::size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
            if (n <= 0) throw std::runtime_error("write failed");
            done += static_cast<std::size_t>(n);
        }
    }
    // Reads one reply frame: letter and data.
    std::pair<char, std::string> reply() {
        char len[4];
        read_exact(len, 4);
        const std::uint32_t n = (std::uint32_t(std::uint8_t(len[0])) << 24) | (std::uint32_t(std::uint8_t(len[1])) << 16) |
                                (std::uint32_t(std::uint8_t(len[2])) << 8) | std::uint8_t(len[3]);
        if (n == 0 || n > (1u << 20)) throw std::runtime_error("bad reply length");
        std::string data(n, '\0');
        read_exact(data.data(), n);
        return {data[0], data.substr(1)};
    }
    std::uint32_t steps = 0;

private:
    void read_exact(char* p, std::size_t n) {
        while (n > 0) {
            const ssize_t got = ::read(fd_, p, n);
            if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                throw std::runtime_error("no reply within 30 s (lost reply)");
            }
            if (got <= 0) throw std::runtime_error("connection closed by the milter");
            p += got;
            n -= static_cast<std::size_t>(got);
        }
    }
    int fd_ = -1;
};

// Sends one command and, unless negotiated as no-reply, expects 'c'.
void step(Client& c, char letter, std::string_view data, std::uint32_t no_reply_flag) {
    std::string out;
    frame(out, letter, data);
    c.send(out);
    if ((c.steps & no_reply_flag) == 0) {
        const auto r = c.reply();
        if (r.first != 'c') throw std::runtime_error(std::string("expected continue, got '") + r.first + "'");
    }
}

using Clock = std::chrono::steady_clock;

std::size_t recipients = 0;  // --recipients; 0: every message to user@example.org

struct Results {
    std::mutex mutex;
    std::vector<double> latencies_ms;
    std::atomic<std::size_t> errors{0};
    std::string first_error;
    // Latencies of the current --interval period; the reporter takes them.
    bool track_interval = false;
    std::mutex interval_mutex;
    std::vector<double> interval_ms;
};

// When a connection stops sending: after `count` messages or at `deadline`.
struct Stop {
    std::size_t count;
    Clock::time_point deadline;  // time_point::max() without --duration
};

void run_connection(const sockaddr_in& addr, const std::vector<Message>& messages, std::size_t first, Stop stop,
                    Results& results) {
    const std::size_t count = stop.count;
    std::vector<double> latencies;
    latencies.reserve(std::min<std::size_t>(count, 1u << 16));
    try {
        Client c(addr);
        std::string out;
        std::string neg;
        put32(neg, 6);
        put32(neg, all_actions);
        put32(neg, all_steps);
        frame(out, 'O', neg);
        c.send(out);
        auto r = c.reply();
        if (r.first != 'O' || r.second.size() < 12) throw std::runtime_error("bad negotiation reply");
        c.steps = (std::uint32_t(std::uint8_t(r.second[8])) << 24) | (std::uint32_t(std::uint8_t(r.second[9])) << 16) |
                  (std::uint32_t(std::uint8_t(r.second[10])) << 8) | std::uint8_t(r.second[11]);

        out.clear();
        frame(out, 'D', "C" + z({"j", "mx.loadgen.example", "{daemon_name}", "smtpd", "v", "Postfix 3.7"}));
        c.send(out);
        std::string connect = z({"client.example.net"});
        connect += '4';
        connect.push_back(static_cast<char>(0x30));
        connect.push_back(static_cast<char>(0x39));
        connect += z({"192.0.2.25"});
        step(c, 'C', connect, nr_conn);
        step(c, 'H', z({"client.example.net"}), nr_helo);

        for (std::size_t k = 0; k < count && Clock::now() < stop.deadline; ++k) {
            const Message& m = messages[(first + k) % messages.size()];
            out.clear();
            frame(out, 'D', "M" + z({"i", "4F" + std::to_string(first + k), "{mail_addr}", "sender@example.net"}));
            c.send(out);
            step(c, 'M', z({"<sender@example.net>"}), nr_mail);
            out.clear();
            const std::string rcpt =
                recipients == 0 ? "user@example.org" : "user" + std::to_string((first + k) % recipients) + "@example.org";
            frame(out, 'D', "R" + z({"{rcpt_addr}", rcpt}));
            c.send(out);
            step(c, 'R', z({"<" + rcpt + ">"}), nr_rcpt);
            step(c, 'T', "", nr_data);
            for (const auto& [name, value] : m.headers) {
                step(c, 'L', z({name, (c.steps & leadspc) ? " " + value : value}), nr_hdr);
            }
            step(c, 'N', "", nr_eoh);
            for (std::size_t off = 0; off < m.body.size(); off += 65535) {
                step(c, 'B', std::string_view(m.body).substr(off, 65535), nr_body);
            }
            out.clear();
            frame(out, 'E', "");
            const auto t0 = Clock::now();
            c.send(out);
            for (;;) {  // header edits, then the final reply
                r = c.reply();
                if (r.first == 'c' || r.first == 'a' || r.first == 'r' || r.first == 't' || r.first == 'd' ||
                    r.first == 'y')
                    break;
                if (r.first != 'h' && r.first != 'm' && r.first != 'i' && r.first != 'q' && r.first != 'p') {
                    throw std::runtime_error(std::string("unexpected reply '") + r.first + "'");
                }
            }
            const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
            latencies.push_back(ms);
            if (results.track_interval) {
                std::lock_guard lock(results.interval_mutex);
                results.interval_ms.push_back(ms);
            }
            out.clear();
            frame(out, 'A', "");  // as Postfix does after every message
            c.send(out);
        }
        out.clear();
        frame(out, 'Q', "");
        c.send(out);
    } catch (const std::exception& e) {
        ++results.errors;
        std::lock_guard lock(results.mutex);
        if (results.first_error.empty()) results.first_error = e.what();
    }
    std::lock_guard lock(results.mutex);
    results.latencies_ms.insert(results.latencies_ms.end(), latencies.begin(), latencies.end());
}

double percentile(std::vector<double>& v, double p) {
    if (v.empty()) return 0;
    const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
    std::nth_element(v.begin(), v.begin() + static_cast<long>(i), v.end());
    return v[i];
}

// One --interval line: the period's end (seconds since the start), the messages
// completed in it, their rate over the period and latency percentiles ("-" when
// none completed).
void print_interval(double elapsed, double period, std::vector<double>& v) {
    if (v.empty()) {
        std::printf("interval  elapsed %.2f  messages 0  msgs/s 0  latency ms p50 - p99 - max -\n", elapsed);
    } else {
        std::printf("interval  elapsed %.2f  messages %zu  msgs/s %.0f  latency ms p50 %.3f p99 %.3f max %.3f\n",
                    elapsed, v.size(), period > 0 ? static_cast<double>(v.size()) / period : 0.0,
                    percentile(v, 0.50), percentile(v, 0.99), percentile(v, 1.0));
    }
    std::fflush(stdout);
}

// Prints one line per `interval` until `finished`, then one for the partial
// period at the end (if it is not empty).
void report_intervals(double interval, Clock::time_point t0, Results& results, std::mutex& m,
                      std::condition_variable& cv, const bool& finished) {
    const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval));
    auto boundary = t0;
    double last = 0;
    std::vector<double> batch;
    for (;;) {
        boundary += period;
        bool end;
        {
            std::unique_lock lock(m);
            end = cv.wait_until(lock, boundary, [&] { return finished; });
        }
        const double elapsed = std::chrono::duration<double>((end ? Clock::now() : boundary) - t0).count();
        batch.clear();
        {
            std::lock_guard lock(results.interval_mutex);
            batch.swap(results.interval_ms);
        }
        if (!end || !batch.empty()) print_interval(elapsed, elapsed - last, batch);
        last = elapsed;
        if (end) return;
    }
}

double parse_seconds(const std::string& option, const std::string& v) {
    std::size_t used = 0;
    double d = -1;
    try {
        d = std::stod(v, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != v.size() || !(d > 0) || d > 1e7) {
        std::cerr << "mailsift-loadgen: " << option << " needs a positive number of seconds, not '" << v << "'\n";
        std::exit(2);
    }
    return d;
}

}  // namespace

int main(int argc, char** argv) {
    std::string host = "127.0.0.1";
    int port = 8891;
    std::size_t connections = 1, total = 1000;
    bool messages_given = false;
    double duration = 0, interval = 0;  // seconds; 0: not given
    std::vector<std::string> paths;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::cerr << "mailsift-loadgen: " << a << " needs a value\n";
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--connect") {
            const std::string v = value();
            const auto colon = v.rfind(':');
            host = v.substr(0, colon);
            port = std::stoi(v.substr(colon + 1));
        } else if (a == "--connections") {
            connections = std::stoul(value());
        } else if (a == "--messages") {
            total = std::stoul(value());
            messages_given = true;
        } else if (a == "--duration") {
            duration = parse_seconds(a, value());
        } else if (a == "--interval") {
            interval = parse_seconds(a, value());
        } else if (a == "--recipients") {
            recipients = std::stoul(value());
        } else if (a == "--files-from") {
            std::ifstream list(value());
            for (std::string line; std::getline(list, line);) {
                if (!line.empty()) paths.push_back(line);
            }
        } else if (a == "-h" || a == "--help") {
            std::cout << "usage: mailsift-loadgen [--connect HOST:PORT] [--connections N] [--messages M]\n"
                         "                        [--duration SECONDS] [--interval SECONDS] [--recipients N]\n"
                         "                        [--files-from LIST | PATH...]\n"
                         "  --messages M        messages in all (default 1000), the files in turn, repeated as needed\n"
                         "  --duration SECONDS  send until the time is up (and stop at M only if --messages is given)\n"
                         "  --interval SECONDS  also print one line per period: messages and latency p50/p99/max\n"
                         "  --recipients N      each message to one of N users in turn (default: one, user@example.org)\n";
            return 0;
        } else {
            paths.push_back(a);
        }
    }
    if (host != "127.0.0.1" && host != "localhost") {
        std::cerr << "mailsift-loadgen: only loopback targets are allowed\n";
        return 2;
    }
    std::vector<Message> messages;
    for (const auto& p : paths) {
        std::ifstream in(p, std::ios::binary);
        std::ostringstream s;
        s << in.rdbuf();
        messages.push_back(split(s.str()));
    }
    if (messages.empty()) {
        std::cerr << "mailsift-loadgen: no messages given\n";
        return 2;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);

    if (connections == 0) {
        std::cerr << "mailsift-loadgen: --connections must be at least 1\n";
        return 2;
    }
    Results results;
    results.track_interval = interval > 0;
    std::vector<std::thread> threads;
    const auto t0 = Clock::now();
    const bool timed = duration > 0;
    const auto deadline =
        timed ? t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration))
              : Clock::time_point::max();
    std::mutex finish_mutex;
    std::condition_variable finish_cv;
    bool finished = false;
    std::thread reporter;
    if (interval > 0) {
        reporter = std::thread(report_intervals, interval, t0, std::ref(results), std::ref(finish_mutex),
                               std::ref(finish_cv), std::cref(finished));
    }
    for (std::size_t c = 0; c < connections; ++c) {
        std::size_t share = total / connections + (c < total % connections ? 1 : 0);
        // Each connection starts at its own place in the list.
        std::size_t first = c * (total / connections + 1);
        if (timed) {
            if (!messages_given) share = std::numeric_limits<std::size_t>::max();
            first = c * std::max<std::size_t>(1, messages.size() / connections);
        }
        threads.emplace_back(run_connection, std::cref(addr), std::cref(messages), first, Stop{share, deadline},
                             std::ref(results));
    }
    for (auto& t : threads) t.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (reporter.joinable()) {
        {
            std::lock_guard lock(finish_mutex);
            finished = true;
        }
        finish_cv.notify_all();
        reporter.join();
    }
    auto& l = results.latencies_ms;
    const std::size_t done = l.size();
    std::printf("connections %zu  messages %zu  errors %zu  seconds %.2f  msgs/s %.0f  "
                "latency ms p50 %.3f p90 %.3f p99 %.3f max %.3f\n",
                connections, done, results.errors.load(), seconds, static_cast<double>(done) / seconds,
                percentile(l, 0.50), percentile(l, 0.90), percentile(l, 0.99), percentile(l, 1.0));
    if (!results.first_error.empty()) std::fprintf(stderr, "first error: %s\n", results.first_error.c_str());
    return results.errors.load() == 0 ? 0 : 1;
}
