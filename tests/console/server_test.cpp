// The console's Server over real loopback sockets (plain HTTP on 127.0.0.1),
// with small bounds: when every connection is taken, a newcomer evicts an idle
// one that never signed in, also one waiting for its turn at the pace, and
// never a signed-in one (server.hpp). The choosing itself is slots_test.cpp's.
#include "mailsift/console/server.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "../support/temp_dir.hpp"

namespace fs = std::filesystem;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace mailsift;
using namespace mailsift::console;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const std::string root_password = "admin password 1";

struct ServedConsole {
    testing::TempDir dir{"console-server"};
    std::unique_ptr<Server> server;
    asio::io_context io;

    explicit ServedConsole(double requests_per_second = 1000) {
        const fs::path users = dir.path / "console-users";
        update_accounts(users, std::nullopt, [](Accounts& a) { a.add("root", Role::admin, root_password); });
        auto app = std::make_unique<App>(AppOptions{.accounts = users, .database = dir.path / "model.db", .config = {},
                                                    .settings = {}, .tls = false, .trusted_proxies = {},
                                                    .sessions = {}, .sign_in = {}, .devices = {}},
                                         Services{});
        ServerOptions o{.listen = "127.0.0.1:0", .tls_certificate = {}, .tls_key = {}, .max_connections = 4,
                        .max_connections_per_address = 2, .request_timeout = 30s, .idle_timeout = 60s,
                        .requests_per_second = requests_per_second, .request_burst = 1};
        server = std::make_unique<Server>(o, std::move(app));
        server->start();
    }

    tcp::socket connect(const std::string& from) {
        tcp::socket s(io);
        s.open(tcp::v4());
        s.bind({asio::ip::make_address(from), 0});
        s.connect({asio::ip::make_address("127.0.0.1"), server->port()});
        return s;
    }

    // Until the server counts `n` connections (it counts them on its own thread).
    bool settles_at(std::size_t n) {
        for (int i = 0; i < 200 && server->connections() != n; ++i) std::this_thread::sleep_for(10ms);
        return server->connections() == n;
    }
};

std::string request(const std::string& method, const std::string& target, const std::string& cookie = "",
                    const std::string& body = "") {
    std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    if (!cookie.empty()) r += "Cookie: " + cookie + "\r\n";
    if (!body.empty()) r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    return r + "\r\n" + body;
}

// One response's head and body, read whole (they are small); empty if the server closed first.
std::string ask(tcp::socket& s, const std::string& req) {
    boost::system::error_code ec;
    asio::write(s, asio::buffer(req), ec);
    if (ec) return "";
    std::string got;
    char buf[4096];
    while (true) {
        const auto head_end = got.find("\r\n\r\n");
        if (head_end != std::string::npos) {
            const auto at = got.find("Content-Length: ");
            const std::size_t length = at == std::string::npos ? 0 : std::stoul(got.substr(at + 16));
            if (got.size() >= head_end + 4 + length) return got;
        }
        const std::size_t n = s.read_some(asio::buffer(buf), ec);
        if (ec) return got;
        got.append(buf, n);
    }
}

// Signs in as root on `s` (kept alive): its session cookie, "mailsift_session=...".
std::string signed_in(tcp::socket& s) {
    const std::string in = ask(s, request("POST", "/api/login", "", json{{"name", "root"}, {"password", root_password}}.dump()));
    REQUIRE(in.starts_with("HTTP/1.1 200"));
    const auto at = in.find("mailsift_session=");
    REQUIRE(at != std::string::npos);
    return in.substr(at, in.find(';', at) - at);
}

// Whether the server has closed `s` (it sends nothing unasked).
bool closed(tcp::socket& s) {
    s.non_blocking(true);
    char c;
    boost::system::error_code ec;
    s.read_some(asio::buffer(&c, 1), ec);
    s.non_blocking(false);
    return ec && ec != asio::error::would_block;
}

}  // namespace

TEST_CASE("A full console lets a newcomer in by evicting an idle connection that never signed in", "[console]") {
    ServedConsole c;
    // Signed in: a keep-alive connection that carried a session.
    tcp::socket admin = c.connect("127.0.9.1");
    const std::string cookie = signed_in(admin);
    REQUIRE(ask(admin, request("GET", "/api/session", cookie)).starts_with("HTTP/1.1 200"));

    std::vector<tcp::socket> idle;
    idle.push_back(c.connect("127.0.9.2"));
    idle.push_back(c.connect("127.0.9.2"));
    idle.push_back(c.connect("127.0.9.3"));
    REQUIRE(c.settles_at(4));
    // Over the per-address bound: closed at once, nobody evicted.
    tcp::socket third = c.connect("127.0.9.2");
    std::this_thread::sleep_for(200ms);
    CHECK(closed(third));
    CHECK(c.server->connections() == 4);

    // Full: a newcomer evicts 127.0.9.2's first (its address holds the most), and is served.
    tcp::socket fresh = c.connect("127.0.9.4");
    CHECK(ask(fresh, request("GET", "/api/session")).starts_with("HTTP/1.1 401"));
    CHECK(closed(idle[0]));
    CHECK_FALSE(closed(idle[1]));
    CHECK_FALSE(closed(idle[2]));
    CHECK(ask(admin, request("GET", "/api/session", cookie)).starts_with("HTTP/1.1 200"));
    CHECK(c.server->connections() == 4);

    // Signed in everywhere: nobody to evict, and the newcomer is closed.
    for (auto* s : {&idle[1], &idle[2], &fresh}) {
        CHECK(ask(*s, request("GET", "/api/session", cookie)).starts_with("HTTP/1.1 200"));
    }
    tcp::socket late = c.connect("127.0.9.5");
    std::this_thread::sleep_for(200ms);
    CHECK(closed(late));
    CHECK(ask(admin, request("GET", "/api/session", cookie)).starts_with("HTTP/1.1 200"));
}

TEST_CASE("A request waiting for its turn can be evicted, and is then never answered", "[console]") {
    ServedConsole c(0.5);  // one turn every two seconds, one at once
    tcp::socket first = c.connect("127.0.9.1");
    CHECK(ask(first, request("GET", "/api/session")).starts_with("HTTP/1.1 401"));  // the burst
    // The next requests wait their turn: two seconds, then four.
    std::vector<tcp::socket> waiting;
    for (const char* from : {"127.0.9.2", "127.0.9.2", "127.0.9.3"}) {
        waiting.push_back(c.connect(from));
        asio::write(waiting.back(), asio::buffer(request("GET", "/api/session")));
    }
    REQUIRE(c.settles_at(4));
    tcp::socket fresh = c.connect("127.0.9.4");
    std::this_thread::sleep_for(200ms);
    CHECK(closed(waiting[0]));  // of the address holding the most, the one waiting longest
    CHECK_FALSE(closed(fresh));
    CHECK(c.server->connections() == 4);
}

TEST_CASE("A POST to the API without a session is answered from its headers, its body never read", "[console]") {
    ServedConsole c;
    // 4 MB declared, none of it sent: a stranger's upload is refused before it is read.
    const std::string head = "POST /api/scan HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: message/rfc822\r\n"
                             "Content-Length: 4000000\r\n\r\n";
    tcp::socket stranger = c.connect("127.0.9.1");
    const std::string answer = ask(stranger, head);
    CHECK(answer.starts_with("HTTP/1.1 401"));
    CHECK(answer.find("sign in first") != std::string::npos);
    std::this_thread::sleep_for(200ms);
    CHECK(closed(stranger));  // the body that would follow is not read as another request

    // A forged session is no session.
    tcp::socket forger = c.connect("127.0.9.2");
    CHECK(ask(forger, "POST /api/correct HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: mailsift_session=00ff\r\n"
                      "Content-Type: application/json\r\nContent-Length: 3000\r\n\r\n")
              .starts_with("HTTP/1.1 401"));

    // Signed in, the same headers wait for their body: nothing is answered before it comes.
    tcp::socket admin = c.connect("127.0.9.3");
    const std::string cookie = signed_in(admin);
    boost::system::error_code ec;
    asio::write(admin,
                asio::buffer("POST /api/scan HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: " + cookie +
                             "\r\nContent-Type: message/rfc822\r\nContent-Length: 4000\r\n\r\n"),
                ec);
    REQUIRE_FALSE(ec);
    std::this_thread::sleep_for(300ms);
    admin.non_blocking(true);
    char byte;
    admin.read_some(asio::buffer(&byte, 1), ec);
    admin.non_blocking(false);
    CHECK(ec == asio::error::would_block);  // waiting for the body, not answered, not closed
}
