// mailsiftd's Prometheus metrics, scraped over real HTTP from the real daemon
// on both stores; and a PostgreSQL outage in the middle of traffic: the daemon
// keeps answering, keeps its scans, says so in the log and the metrics, and
// writes them when the server is back, by itself.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <map>
#include <regex>

#include "../support/backends.hpp"
#include "../support/paths.hpp"
#include "daemon_support.hpp"

using namespace daemon_test;
using mailsift::testing::TestStore;

namespace {

// One HTTP/1.1 request to 127.0.0.1:port; the whole response (the server closes).
std::string http(unsigned short port, const std::string& request) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
    std::string out;
    char buf[65536];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return out;
}

std::string get(unsigned short port, const std::string& path) {
    return http(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n\r\n");
}

// The port mailsiftd logged for its metrics.
unsigned short metrics_port(const Daemon& d) {
    std::smatch m;
    const std::string log = d.log();
    static const std::regex at(R"(metrics on http://127\.0\.0\.1:([0-9]+)/metrics)");
    REQUIRE(std::regex_search(log, m, at));
    return static_cast<unsigned short>(std::stoi(m[1]));
}

// The samples of a scrape, checked against the text format: "# HELP" and "#
// TYPE" before each family, every other line NAME{LABELS} VALUE.
std::map<std::string, double> samples(const std::string& response) {
    const auto body_at = response.find("\r\n\r\n");
    REQUIRE(body_at != std::string::npos);
    REQUIRE(response.rfind("HTTP/1.1 200", 0) == 0);
    REQUIRE(response.find("Content-Type: text/plain; version=0.0.4") != std::string::npos);
    std::istringstream in(response.substr(body_at + 4));
    static const std::regex line_re(R"(^([a-z_:][a-z0-9_:]*)(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? (-?[0-9.e+-]+|\+Inf)$)");
    std::map<std::string, double> out;
    std::string typed;
    for (std::string line; std::getline(in, line);) {
        INFO(line);
        if (line.rfind("# HELP ", 0) == 0) continue;
        if (line.rfind("# TYPE ", 0) == 0) {
            typed = line.substr(7, line.find(' ', 7) - 7);
            continue;
        }
        std::smatch m;
        REQUIRE(std::regex_match(line, m, line_re));
        REQUIRE(m[1].str().rfind(typed, 0) == 0);  // a sample of the family just typed
        out[m[1].str() + m[2].str()] = std::stod(m[4].str());
    }
    return out;
}

}  // namespace

TEST_CASE("Metrics are served over HTTP in Prometheus's text format, on both stores", "[mailsiftd][metrics]") {
    FOR_EACH_BACKEND(store_);
    Daemon d("stats_interval = 1\nmetrics_listen = 127.0.0.1:0\n", store_.location());
    start_trained_daemon(d);
    const unsigned short port = metrics_port(d);

    {
        Client c(d.socket);
        c.negotiate();
        REQUIRE(added_status(c.message(spam)).find("Yes, score=") != std::string::npos);
        REQUIRE(added_status(c.message("From: Bob <bob@example.org>\nSubject: minutes\n\n"
                                       "The meeting notes and the patch review are attached.\n"))
                    .find("No, score=") != std::string::npos);
    }
    {
        Client bad(d.socket);
        bad.negotiate();
        bad.send(frame('Z', "junk"));
        REQUIRE_FALSE(bad.reply());
    }
    std::map<std::string, double> m;
    REQUIRE(eventually([&] {
        m = samples(get(port, "/metrics"));
        return m["mailsift_scan_buffer_depth"] == 0 && m.count("mailsift_store_up") && m["mailsift_milter_sessions_open"] == 0;
    }));
    CHECK(m["mailsift_messages_total{verdict=\"spam\",action=\"accepted\"}"] == 1);
    CHECK(m["mailsift_messages_total{verdict=\"ham\",action=\"accepted\"}"] == 1);
    CHECK(m["mailsift_scoring_seconds_count"] == 2);
    CHECK(m["mailsift_scoring_seconds_bucket{le=\"+Inf\"}"] == 2);
    CHECK(m["mailsift_scoring_seconds_sum"] > 0);
    CHECK(m["mailsift_milter_sessions_total"] == 2);
    CHECK(m["mailsift_milter_protocol_errors_total"] == 1);
    CHECK(m["mailsift_model_features"] > 100);
    CHECK(m["mailsift_model_messages{class=\"spam\"}"] == 4);
    CHECK(m["mailsift_model_messages{class=\"ham\"}"] == 4);
    CHECK(m["mailsift_model_age_seconds"] >= 0);
    CHECK(m["mailsift_model_last_refresh_timestamp_seconds"] > 1.7e9);
    CHECK(m["mailsift_store_up"] == 1);
    CHECK(m["mailsift_store_errors_total"] == 0);
    CHECK(m["mailsift_store_outage_seconds_total"] == 0);

    // Only GET (and HEAD) of /metrics.
    REQUIRE(get(port, "/").rfind("HTTP/1.1 404", 0) == 0);
    REQUIRE(http(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").rfind("HTTP/1.1 405", 0) == 0);
    REQUIRE(http(port, "nonsense\r\n\r\n").empty());  // not HTTP: closed without an answer
    REQUIRE(samples(get(port, "/metrics?name[]=x")).count("mailsift_store_up") == 1);
}

TEST_CASE("Corrections on correct_socket are counted, applied and refused", "[mailsiftd][metrics]") {
    Daemon d("metrics_listen = 127.0.0.1:0\n");
    const fs::path correct_socket = d.dir / "correct.sock";
    std::ofstream(d.dir / "mailsift.conf", std::ios::app) << "correct_socket = " << correct_socket.string() << "\n";
    start_trained_daemon(d);
    const unsigned short port = metrics_port(d);
    auto counted = [&](const std::string& outcome) {
        return samples(get(port, "/metrics"))["mailsift_socket_corrections_total{outcome=\"" + outcome + "\"}"];
    };
    CHECK(counted("applied") == 0);
    CHECK(counted("refused") == 0);
    std::ofstream(d.dir / "new.eml") << "From: a@example.org\nSubject: the quarterly numbers\n\nAttached.\n";
    const std::string config = " --config " + (d.dir / "mailsift.conf").string();
    REQUIRE(std::system((cli + config + " correct --spam --signature 0123456789abcdef0123456789abcdef " +
                         (d.dir / "new.eml").string() + " >/dev/null 2>&1").c_str()) == 0);
    CHECK(counted("applied") == 2);
    // mailsiftd's recorder refits once they settle (what its socket applied is not refitted on the socket's worker), and counts it.
    REQUIRE(eventually([&] { return samples(get(port, "/metrics"))["mailsift_linear_refits_total"] >= 1; }));
    {
        Client c(correct_socket);
        REQUIRE(send_all(c.fd, "GET / HTTP/1.0\r\n\r\n"));
        char buf[256];
        while (::read(c.fd, buf, sizeof buf) > 0) {
        }
    }
    CHECK(counted("refused") == 1);
}

TEST_CASE("A bad metrics_listen is refused when the daemon starts", "[mailsiftd][metrics]") {
    Daemon d("metrics_listen = nowhere\n");
    const std::string cmd = daemon_binary + " --check-config --config " + (d.dir / "mailsift.conf").string() + " 2>&1";
    REQUIRE(run(cmd).find("metrics_listen") != std::string::npos);
}

TEST_CASE("PostgreSQL stops in the middle of traffic: scoring goes on, scans wait, and are written when it is back",
          "[mailsiftd][postgresql]") {
    // A server of its own: the suite's shared one must not go away.
    TestStore scratch("sqlite");
    const fs::path pgdir = scratch.dir().path / "pg";
    const std::string pgctl = std::string(MAILSIFT_SOURCE_DIR) + "/tests/support/postgres.sh";
    REQUIRE(std::system((pgctl + " start " + pgdir.string() + " >/dev/null").c_str()) == 0);
    struct Stop {
        std::string cmd;
        ~Stop() { std::system(cmd.c_str()); }
    } stop_server{pgctl + " stop " + pgdir.string()};
    std::string uri = slurp(pgdir / "uri");
    uri = uri.substr(0, uri.find('\n'));
    uri = uri.substr(0, uri.rfind('/') + 1) + "postgres";
    const std::string db = "'" + uri + "'";

    Daemon d("stats_interval = 1\nmetrics_listen = 127.0.0.1:0\n", uri);
    start_trained_daemon(d);
    const unsigned short port = metrics_port(d);
    Client c(d.socket);
    c.negotiate();
    std::vector<std::string> signatures;
    auto send = [&](int i) {
        const auto replies = c.message(spam + "\nnumber " + std::to_string(i) + "\n");
        REQUIRE(added_status(replies).find("Yes, score=") != std::string::npos);  // scored with the model in memory
        signatures.push_back(header_value(replies, "X-Mailsift-Signature"));
    };
    for (int i = 0; i < 5; ++i) send(i);
    const std::string stats = cli + " --db " + db + " stats --json";
    REQUIRE(eventually([&] { return run(stats).find("\"signatures\":5") != std::string::npos; }));

    REQUIRE(std::system((pgctl + " pause " + pgdir.string()).c_str()) == 0);
    for (int i = 5; i < 25; ++i) send(i);
    REQUIRE(eventually([&] { return d.log().find("could not record") != std::string::npos; }));
    std::map<std::string, double> m;
    REQUIRE(eventually([&] {
        m = samples(get(port, "/metrics"));
        return m["mailsift_store_up"] == 0 && m["mailsift_scan_buffer_depth"] == 20;
    }));
    CHECK(m["mailsift_store_outages_total"] == 1);
    CHECK(m["mailsift_store_write_failures_total"] >= 1);
    CHECK(m["mailsift_messages_total{verdict=\"spam\",action=\"accepted\"}"] == 25);
    // The CLI says what is wrong and exits 3; nothing of it is half done.
    std::ofstream(d.dir / "more.eml") << "From: a@b.example\nSubject: seeds\n\ntomato seeds\n";
    const std::string learn = cli + " --db " + db + " learn --ham " + (d.dir / "more.eml").string();
    REQUIRE(std::system((learn + " >/dev/null 2>&1").c_str()) == 3 << 8);
    REQUIRE(eventually([&] {
        return samples(get(port, "/metrics"))["mailsift_store_outage_seconds_total"] >= 1;
    }));

    REQUIRE(std::system((pgctl + " resume " + pgdir.string()).c_str()) == 0);
    REQUIRE(eventually([&] { return d.log().find("recording works again") != std::string::npos; }, std::chrono::seconds(20)));
    REQUIRE(eventually([&] { return run(stats).find("\"signatures\":25") != std::string::npos; }));
    m = samples(get(port, "/metrics"));
    CHECK(m["mailsift_store_up"] == 1);
    CHECK(m["mailsift_scan_buffer_depth"] == 0);
    CHECK(m["mailsift_scans_dropped_total"] == 0);
    // Every scan, also those taken during the outage, corrects.
    REQUIRE(run(cli + " --db " + db + " correct --ham --signature " + signatures[12]).find("1 by signature") !=
            std::string::npos);
    // The linear scorer refitted after the correction (by the command itself, on a model this small: Trainer::refit_due).
    REQUIRE(eventually([&] { return run(stats).find("\"changes_since_refit\":0") != std::string::npos; }));
    // The learn that failed is done once when run again, and the daemon takes it in.
    REQUIRE(run(learn).find("learned 1 as ham") != std::string::npos);
    REQUIRE(run(stats).find("\"messages\":{\"spam\":4,\"ham\":6}") != std::string::npos);
    REQUIRE(eventually([&] { return samples(get(port, "/metrics"))["mailsift_model_messages{class=\"ham\"}"] == 6; }));
}

TEST_CASE("Users with a layer are counted, on both stores, and forget-user takes one away", "[mailsiftd][metrics][per_user]") {
    FOR_EACH_BACKEND(store_);
    Daemon d("per_user = recipient\nstats_interval = 1\nmetrics_listen = 127.0.0.1:0\n", store_.location());
    start_trained_daemon(d);
    const unsigned short port = metrics_port(d);
    auto layers = [&] {
        const auto m = samples(get(port, "/metrics"));
        return std::make_pair(m.at("mailsift_per_user_layers"), m.at("mailsift_per_user_layer_corrections"));
    };
    CHECK(layers() == std::make_pair(0.0, 0.0));
    Client c(d.socket);
    c.negotiate();
    const std::string newsletter = "From: Weekly Deals <news@deals.example>\nSubject: This week's gadget deals\n\n"
                                   "Our editors picked this week's best gadget deals.\n";
    const std::string signature = header_value(c.message(newsletter, "<bob@example.org>"), "X-Mailsift-Signature");
    const std::string conf = cli + " --config " + (d.dir / "mailsift.conf").string();
    REQUIRE(eventually([&] { return std::system((conf + " tokens --signature " + signature + " >/dev/null 2>&1").c_str()) == 0; }));
    REQUIRE(std::system((conf + " correct --spam --signature " + signature + " >/dev/null").c_str()) == 0);
    REQUIRE(eventually([&] { return layers() == std::make_pair(1.0, 1.0); }));
    REQUIRE(run(conf + " forget-user bob@example.org").find("1 corrections") != std::string::npos);
    REQUIRE(eventually([&] { return layers() == std::make_pair(0.0, 0.0); }));
}
