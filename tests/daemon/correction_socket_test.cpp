// mailsiftd's correction socket (correct_socket), with the real mailsiftd and
// the real `mailsift correct` on a real unix socket and SQLite file: a
// correction made by the daemon, by the scan it has not written yet; requests
// off the format refused while the daemon goes on; and `correct` applying the
// correction itself, or failing clearly, when nothing listens.
#include <pwd.h>
#include <sys/stat.h>

#include "daemon_support.hpp"

using namespace daemon_test;

namespace {

// One connection's whole answer to `request` (the daemon closes after answering).
std::string ask(const fs::path& socket, const std::string& request, bool close_write = true) {
    Client c(socket);
    REQUIRE(send_all(c.fd, request));
    if (close_write) ::shutdown(c.fd, SHUT_WR);
    std::string answer;
    char buf[4096];
    for (ssize_t n; (n = ::read(c.fd, buf, sizeof buf)) > 0;) answer.append(buf, static_cast<std::size_t>(n));
    return answer;
}

}  // namespace

TEST_CASE("A correction through correct_socket is made by mailsiftd, by the scan it has not written yet", "[correct_socket]") {
    Daemon d("stats_interval = 30\n");
    const fs::path correct_socket = d.dir / "correct.sock";
    std::ofstream(d.dir / "mailsift.conf", std::ios::app) << "correct_socket = " << correct_socket.string() << "\n";
    start_trained_daemon(d);
    struct stat st{};
    REQUIRE(::stat(correct_socket.c_str(), &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
    CHECK((st.st_mode & 0777) == 0660);

    Client c(d.socket);
    c.negotiate();
    const auto replies = c.message(spam);
    const std::string signature = header_value(replies, "X-Mailsift-Signature");
    REQUIRE(signature.size() == 32);
    std::ofstream(d.dir / "delivered.eml") << "X-Mailsift-Status: Yes\nX-Mailsift-Signature: " << signature << "\n"
                                           << spam;
    const std::string config = " --config " + (d.dir / "mailsift.conf").string();
    // Scans are written every 30 s: this one is still in the daemon's queue, and
    // is written first, so the correction finds it (by signature, not deferred).
    const std::string corrected = run(cli + config + " correct --ham " + (d.dir / "delivered.eml").string() + " 2>&1");
    CHECK(corrected.find("corrected to ham: 1 by signature, 0 as the message; 0 learned, 1 moved, 0 already ham") !=
          std::string::npos);
    CHECK(d.log().find("applied 1 correction(s) (ham) from socket:" + unix_user_name()) != std::string::npos);
    const std::string stats = run(cli + config + " stats --json");
    CHECK(stats.find("\"all\":{\"false_positives\":1") != std::string::npos);
    CHECK(stats.find("\"messages\":{\"spam\":3,\"ham\":5}") != std::string::npos);
    // Twice: already so, a note, success; undone through the socket too.
    CHECK(run(cli + config + " correct --ham " + (d.dir / "delivered.eml").string() + " 2>&1").find("already learned as ham") !=
          std::string::npos);
    const std::string undone = run(cli + config + " correct --undo --signature " + signature + " 2>&1");
    CHECK(undone.find("undid its correction to ham; now learned as spam") != std::string::npos);
    CHECK(run(cli + config + " stats --json").find("\"messages\":{\"spam\":4,\"ham\":4}") != std::string::npos);
    // A bad signature is the command's to refuse: exit status 1, nothing sent for it.
    CHECK(std::system((cli + config + " correct --spam --signature nothex 2>/dev/null >/dev/null").c_str()) != 0);
}

TEST_CASE("Requests off the format are refused, one slow client blocks no other, and the daemon goes on", "[correct_socket]") {
    Daemon d;
    const fs::path correct_socket = d.dir / "correct.sock";
    std::ofstream(d.dir / "mailsift.conf", std::ios::app) << "correct_socket = " << correct_socket.string() << "\n";
    start_trained_daemon(d);
    const std::string refused = "MAILSIFT-CORRECT 1 error bad request";
    CHECK(ask(correct_socket, "GET / HTTP/1.0\r\n\r\n").rfind(refused, 0) == 0);
    CHECK(ask(correct_socket, std::string(300, 'A')).rfind(refused + ": its first line is too long", 0) == 0);
    CHECK(ask(correct_socket, "MAILSIFT-CORRECT 1 spam 1 999999999999\n").rfind(refused, 0) == 0);
    CHECK(ask(correct_socket, "MAILSIFT-CORRECT 1 spam 1 10\nsignature \n").rfind(refused, 0) == 0);
    CHECK(ask(correct_socket, "MAILSIFT-CORRECT 1 spam 1 21\nmessage 5 9\nabcdefghi").rfind(refused + ": a message's size below its length", 0) == 0);
    // A user with a CR, a NUL or a line of its own: refused, and said in the log as one line each.
    for (const std::string bad_user : {std::string("a\r@example.org"), std::string("a\0@example.org", 15),
                                       std::string("a@example.org\n<6>console audit: sign-in ok")}) {
        const std::string head = "MAILSIFT-CORRECT 1 spam 1 43 " + bad_user + "\n";
        CHECK(ask(correct_socket, head + "signature 0123456789abcdef0123456789abcdef\n").rfind(refused, 0) == 0);
    }
    // A request cut short: no answer, nothing applied.
    CHECK(ask(correct_socket, "MAILSIFT-CORRECT 1 spam 1 50\nmessage 40 40\nFrom: a").empty());

    // A client that connects and says nothing holds no one up.
    Client silent(correct_socket);
    std::ofstream(d.dir / "new.eml") << "From: a@example.org\nSubject: the quarterly numbers\n\nAttached are the numbers.\n";
    const std::string out = run(cli + " --config " + (d.dir / "mailsift.conf").string() + " correct --spam " +
                                (d.dir / "new.eml").string());
    CHECK(out.find("corrected to spam: 0 by signature, 1 as the message; 1 learned") != std::string::npos);
    check_one_line_events(d);  // every event one line, none of them forged
    // Scoring went on throughout.
    Client milter(d.socket);
    milter.negotiate();
    CHECK(!header_value(milter.message(ham), "X-Mailsift-Status").empty());
}

TEST_CASE("With nothing listening on correct_socket, correct applies it itself, or changes nothing and says why", "[correct_socket]") {
    Daemon d;  // never started
    d.train();
    std::ofstream(d.dir / "mailsift.conf", std::ios::app) << "correct_socket = " << (d.dir / "correct.sock").string() << "\n";
    std::ofstream(d.dir / "new.eml") << "From: a@example.org\nSubject: the quarterly numbers\n\nAttached are the numbers.\n";
    const std::string config = " --config " + (d.dir / "mailsift.conf").string();
    CHECK(run(cli + config + " correct --spam " + (d.dir / "new.eml").string()).find("1 learned") != std::string::npos);

    // A database this command cannot open (under a file): exit status 3, both reasons said.
    std::ofstream(d.dir / "unreachable.conf") << "database = " << (d.dir / "new.eml" / "model.db").string() << "\n"
                                              << "correct_socket = " << (d.dir / "correct.sock").string() << "\n";
    const std::string cmd = cli + " --config " + (d.dir / "unreachable.conf").string() + " correct --ham " +
                            (d.dir / "new.eml").string() + " 2>&1";
    const std::string said = run(cmd);
    CHECK(said.find("mailsiftd takes no corrections at " + (d.dir / "correct.sock").string()) != std::string::npos);
    CHECK(said.find("no correction was made") != std::string::npos);
    CHECK(WEXITSTATUS(std::system((cmd + " >/dev/null").c_str())) == 3);
}
