// The correction socket cannot be held (issue 58): another Unix user opening
// connections that announce 16 MiB bodies and send nothing more gets
// correct_peer_connections of them, makes mailsiftd allocate next to nothing,
// and a trusted user's correction is still applied; a user's corrections past
// correct_rate are answered busy and apply nothing; a peer's refusals are
// logged once a minute, with a count of those not logged.
#include <grp.h>
#include <pwd.h>

#include <cerrno>
#include <csignal>

#include "daemon_support.hpp"

using namespace daemon_test;

namespace {

// A child process, as user nobody, holding `n` connections to `socket` that
// each announce a 16 MiB body and send none of it; it writes one byte on
// `ready` once all are open and sent, and exits when the test closes the write
// end of `hold` (hold[1], which the child closes on its side).
pid_t hold_connections(const fs::path& socket, int n, int ready, const int hold[2]) {
    const pid_t pid = ::fork();
    if (pid != 0) return pid;
    ::close(hold[1]);
    const passwd* nobody = ::getpwnam("nobody");
    if (nobody == nullptr || ::setgroups(0, nullptr) != 0 || ::setgid(nobody->pw_gid) != 0 || ::setuid(nobody->pw_uid) != 0) {
        ::_exit(2);
    }
    ::signal(SIGPIPE, SIG_IGN);
    std::vector<int> fds;
    const std::string head = "MAILSIFT-CORRECT 1 spam 1 16777000\n";
    for (int i = 0; i < n; ++i) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) ::_exit(3);
        // Past correct_peer_connections mailsiftd answers busy and closes, maybe
        // before this write: a broken pipe there is the refusal, not a failure.
        const ssize_t wrote = ::write(fd, head.data(), head.size());
        if (wrote < 0 && errno != EPIPE && errno != ECONNRESET) ::_exit(4);
        fds.push_back(fd);
    }
    char one = 1;
    if (::write(ready, &one, 1) != 1) ::_exit(5);
    while (::read(hold[0], &one, 1) > 0) {
    }  // until the test closes it
    ::_exit(0);
}

}  // namespace

TEST_CASE("Another user holding the correction socket gets a few connections and no memory, and a trusted user still corrects",
          "[correct_socket]") {
    REQUIRE(::getpwnam("nobody") != nullptr);
    Daemon d;
    const fs::path correct_socket = d.dir / "correct.sock";
    std::ofstream(d.dir / "mailsift.conf", std::ios::app)
        << "correct_socket = " << correct_socket.string() << "\ncorrect_socket_mode = 0666\n";
    ::chmod(d.dir.c_str(), 0711);  // nobody may reach the socket, not read the directory
    start_trained_daemon(d);
    std::ofstream(d.dir / "new.eml") << "From: a@example.org\nSubject: the quarterly numbers\n\nAttached are the numbers.\n";
    const std::string correct = cli + " --config " + (d.dir / "mailsift.conf").string() + " correct --spam " +
                                (d.dir / "new.eml").string() + " 2>&1";
    const long idle = static_cast<long>(proc_status_kib(d.pid, "VmRSS"));
    REQUIRE(idle > 0);

    int ready[2], hold[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(hold) == 0);
    const pid_t holder = hold_connections(correct_socket, 16, ready[1], hold);
    REQUIRE(holder > 0);
    ::close(ready[1]);
    ::close(hold[0]);
    char one = 0;
    REQUIRE(::read(ready[0], &one, 1) == 1);  // 16 open, each having announced 16 MiB
    REQUIRE(eventually([&] { return d.log().find("refused a correction request from socket:nobody: busy") != std::string::npos; }));

    // Only 8 (correct_peer_connections) were taken, and their buffers hold what arrived.
    const long held = static_cast<long>(proc_status_kib(d.pid, "VmRSS"));
    INFO("resident " << idle << " KiB idle, " << held << " KiB with 16 connections held");
    CHECK(held - idle < 16 * 1024);
    CHECK(d.log().find("socket:nobody has 8 connections open already (correct_peer_connections)") != std::string::npos);
    // The refusals of the other 8: one line in the log for the minute.
    CHECK(occurrences(d.log(), "refused a correction request from socket:nobody") == 1);
    // The tests' own user, trusted (root), corrects while they are held.
    CHECK(run(correct).find("corrected to spam: 0 by signature, 1 as the message; 1 learned") != std::string::npos);

    ::close(hold[1]);  // the holder exits; its connections close
    int status = 0;
    REQUIRE(::waitpid(holder, &status, 0) == holder);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    ::close(ready[0]);
    check_one_line_events(d);
}

TEST_CASE("Corrections for one user past correct_rate are answered busy and apply nothing", "[correct_socket]") {
    Daemon d("correct_rate = 2\n");
    const fs::path correct_socket = d.dir / "correct.sock";
    std::ofstream(d.dir / "mailsift.conf", std::ios::app) << "correct_socket = " << correct_socket.string() << "\n";
    start_trained_daemon(d);
    const std::string config = cli + " --config " + (d.dir / "mailsift.conf").string();
    for (int i = 0; i < 3; ++i) {
        std::ofstream(d.dir / ("n" + std::to_string(i) + ".eml"))
            << "From: a@example.org\nSubject: the numbers " << i << "\n\nAttached are the numbers, part " << i << ".\n";
    }
    for (int i = 0; i < 2; ++i) {
        CHECK(run(config + " correct --spam " + (d.dir / ("n" + std::to_string(i) + ".eml")).string()).find("1 learned") !=
              std::string::npos);
    }
    const std::string over = run(config + " correct --spam " + (d.dir / "n2.eml").string() + " 2>&1; echo \"exit $?\"");
    CHECK(over.find("busy: more than 2 corrections a minute from socket:") != std::string::npos);
    CHECK(over.find("(correct_rate); try again in ") != std::string::npos);
    CHECK(over.find("exit 3") != std::string::npos);
    // Nothing of it applied: two spam learned beyond the trained model, not three.
    CHECK(run(config + " stats --json").find("\"messages\":{\"spam\":6,\"ham\":4}") != std::string::npos);
}
