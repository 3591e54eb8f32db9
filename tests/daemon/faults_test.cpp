// Faults under a running mailsiftd (issue 7): a long write lock held by
// another process, the database file deleted, replaced or made read-only, and
// a disk that fills up during the daemon's statistics writes. The daemon keeps
// scoring with the model it has, says what happened in its log and in
// 'mailsift stats', and loses no counter.
#include <pwd.h>
#include <sqlite3.h>

#include <cerrno>
#include <regex>

#include "../support/tmpfs_mount.hpp"
#include "daemon_support.hpp"

using namespace daemon_test;

namespace {

// A write transaction held from this process until release() (or scope end).
struct WriteLock {
    sqlite3* db = nullptr;
    explicit WriteLock(const fs::path& path) {
        REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
        sqlite3_busy_timeout(db, 10000);
        REQUIRE(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
    }
    void release() {
        if (db == nullptr) return;
        sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        sqlite3_close(db);
        db = nullptr;
    }
    ~WriteLock() { release(); }
};

// The CLI in the background; its exit status and output collected by finish().
struct Background {
    pid_t pid = -1;
    fs::path out, err;
    Background(const fs::path& dir, const std::string& name, const std::vector<std::string>& args)
        : out(dir / (name + ".out")), err(dir / (name + ".err")) {
        std::fflush(stdout);
        std::fflush(stderr);
        pid = ::fork();
        if (pid == 0) {
            std::freopen(out.c_str(), "w", stdout);
            std::freopen(err.c_str(), "w", stderr);
            ::unsetenv("MAILSIFT_DB");
            ::unsetenv("MAILSIFT_CONFIG");
            std::vector<char*> argv{const_cast<char*>("mailsift")};
            for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            ::execv(cli.c_str(), argv.data());
            std::_Exit(127);
        }
        REQUIRE(pid > 0);
    }
    bool running() {
        int st = 0;
        if (pid > 0 && ::waitpid(pid, &st, WNOHANG) == pid) {
            status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            pid = -1;
        }
        return pid > 0;
    }
    int finish() {
        if (pid > 0) {
            int st = 0;
            ::waitpid(pid, &st, 0);
            status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            pid = -1;
        }
        return status;
    }
    ~Background() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
    }
    int status = -1;
};

using test_support::TmpfsMount;

// A counter of 'mailsift stats --json' ("daemon" object), or -1 when absent.
long long counter(const std::string& stats_json, const std::string& name) {
    const auto daemon = stats_json.find("\"daemon\":{");
    if (daemon == std::string::npos) return -1;
    const std::string key = "\"" + name + "\":";
    const auto at = stats_json.find(key, daemon);
    if (at == std::string::npos || at > stats_json.find('}', daemon)) return -1;
    return std::stoll(stats_json.substr(at + key.size()));
}

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

// Scores one message on a new connection; the X-Mailsift-Status it got. Each
// message differs (a numbered last line), so each is recorded under a signature of its own.
std::string score(const Daemon& d, const std::string& message = spam) {
    static int sent = 0;
    Client c(d.socket);
    c.negotiate();
    return header_value(c.message(message + "message " + std::to_string(++sent) + "\n"), "X-Mailsift-Status");
}

bool scored(const std::string& status) { return status.find(", score=") != std::string::npos; }

std::string integrity(const fs::path& db) {
    sqlite3* c = nullptr;
    std::string out;
    if (sqlite3_open_v2(db.c_str(), &c, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
        sqlite3_stmt* s = nullptr;
        if (sqlite3_prepare_v2(c, "PRAGMA integrity_check", -1, &s, nullptr) == SQLITE_OK) {
            while (sqlite3_step(s) == SQLITE_ROW) out += reinterpret_cast<const char*>(sqlite3_column_text(s, 0)) + std::string("\n");
        }
        sqlite3_finalize(s);
    }
    if (out.empty()) out = std::string("cannot check: ") + sqlite3_errmsg(c);
    sqlite3_close(c);
    return out;
}

// A ham message of our own, as a file.
std::string ham_file(const fs::path& dir, const std::string& name) {
    const fs::path p = dir / (name + ".eml");
    std::ofstream(p) << "From: Colleague <" << name << "@example.org>\nSubject: about " << name
                     << "\n\nThe notes on " << name << " are attached; see you at the review.\n";
    return p.string();
}

}  // namespace

TEST_CASE("A long write lock from another process: scoring goes on, training waits, then reports the lock clearly",
          "[mailsiftd][faults][long]") {
    Daemon d("stats_interval = 1\n");
    start_trained_daemon(d);
    const fs::path db = d.dir / "model.db";
    const std::string stats = cli + " --db " + db.string() + " stats --json";
    const std::string before = run(stats);
    REQUIRE(before.find("\"messages\":{\"spam\":4,\"ham\":4}") != std::string::npos);

    int messages = 0;
    {
        WriteLock lock(db);
        // Training started under the lock waits for it, up to its busy timeout (10 s), then gives up.
        Background refused(d.dir, "refused", {"--db", db.string(), "learn", "--ham", ham_file(d.dir, "vacation")});
        for (int i = 0; i < 3; ++i, ++messages) REQUIRE(scored(score(d)));  // on the snapshot, lock or not
        std::this_thread::sleep_for(1s);
        REQUIRE(refused.running());  // one message learns in milliseconds: it is waiting for the lock
        REQUIRE(refused.finish() == 3);
        const std::string err = slurp(refused.err);
        INFO(err);
        REQUIRE(err.find(db.string()) != std::string::npos);
        REQUIRE(err.find("database is locked by another process (waited 10 s)") != std::string::npos);
        REQUIRE(err.find("0 message(s) learned in earlier batches are kept") != std::string::npos);
        for (int i = 0; i < 2; ++i, ++messages) REQUIRE(scored(score(d)));
        // The daemon's statistics writes (busy timeout 5 s) failed meanwhile; it said so once.
        REQUIRE(eventually([&] { return d.log().find("could not record") != std::string::npos; }));
        REQUIRE(d.log().find("locked by another process") != std::string::npos);

        // A learn started now waits and goes through once the lock is gone.
        Background waiting(d.dir, "waiting", {"--db", db.string(), "learn", "--ham", ham_file(d.dir, "order")});
        std::this_thread::sleep_for(1s);
        REQUIRE(waiting.running());
        lock.release();
        REQUIRE(waiting.finish() == 0);
        REQUIRE(slurp(waiting.out).find("learned 1 as ham") != std::string::npos);
    }
    // Nothing of the refused learn was written; the waiting one is; no daemon counter was lost.
    REQUIRE(integrity(db) == "ok\n");
    REQUIRE(eventually([&] { return counter(run(stats), "messages") == messages; }, 20s));
    const std::string after = run(stats);
    INFO(after);
    REQUIRE(after.find("\"messages\":{\"spam\":4,\"ham\":5}") != std::string::npos);
    REQUIRE(counter(after, "record_failures") >= 1);
    REQUIRE(after.find("\"signatures\":" + std::to_string(messages)) != std::string::npos);
    REQUIRE(count_of(d.log(), "could not record") == 1);
    REQUIRE(eventually([&] { return d.log().find("recording works again") != std::string::npos; }));
}

TEST_CASE("The database deleted under the daemon: it scores with its snapshot, says so, and takes up a new one",
          "[mailsiftd][faults]") {
    Daemon d("stats_interval = 1\n");
    start_trained_daemon(d);
    const fs::path db = d.dir / "model.db";
    REQUIRE(scored(score(d)));

    fs::remove(db);  // as an administrator would: the -wal and -shm stay behind
    REQUIRE(eventually([&] { return d.log().find("was deleted or moved away; scoring with the model in memory") != std::string::npos; }));
    for (int i = 0; i < 3; ++i) REQUIRE(score(d).rfind("Yes, score=", 0) == 0);  // the snapshot still scores
    REQUIRE(count_of(d.log(), "was deleted") == 1);
    // The statistics of those messages cannot be written: kept in memory, said once.
    REQUIRE(eventually([&] { return d.log().find("could not record") != std::string::npos; }));
    REQUIRE(d.log().find("no such database") != std::string::npos);
    REQUIRE_FALSE(fs::exists(db));  // and nothing created an empty one

    // A new database at the path: loaded, and the counters kept meanwhile land in it.
    d.train();
    INFO(d.log());
    // (It may load the file as soon as it appears, before a batch is in it, and reload it as they come.)
    REQUIRE(eventually([&] { return d.log().find("was replaced; loaded it: ") != std::string::npos; }));
    REQUIRE(eventually([&] {
        const std::string log = d.log();
        return log.find(": 4 spam, 4 ham", log.find("was replaced; loaded it: ")) != std::string::npos;
    }));
    REQUIRE(scored(score(d)));
    const std::string stats = cli + " --db " + db.string() + " stats --json";
    REQUIRE(eventually([&] { return counter(run(stats), "messages") == 5; }));
    const std::string s = run(stats);
    REQUIRE(counter(s, "database_missing") == 1);
    REQUIRE(counter(s, "database_replaced") == 1);
    REQUIRE(counter(s, "record_failures") >= 1);
    REQUIRE(integrity(db) == "ok\n");
}

TEST_CASE("The database replaced under the daemon is loaded, and one that cannot be loaded leaves the snapshot in use",
          "[mailsiftd][faults]") {
    Daemon d("stats_interval = 1\n");
    start_trained_daemon(d);
    const fs::path db = d.dir / "model.db";
    REQUIRE(scored(score(d)));

    // Another trained database put in its place the safe way (mailsift backup --force).
    const fs::path other = d.dir / "other.db";
    REQUIRE(std::system((cli + " --db " + other.string() + " learn --spam " + data + "/spam_money_offer.eml " + data +
                         "/spam_cheap_pills.eml >/dev/null && " + cli + " --db " + other.string() + " learn --ham " + data +
                         "/ham_meeting_notes.eml >/dev/null && " + cli + " --db " + other.string() + " backup --force " +
                         db.string() + " >/dev/null")
                            .c_str()) == 0);
    REQUIRE(eventually([&] { return d.log().find("was replaced; loaded it: 2 spam, 1 ham") != std::string::npos; }));
    REQUIRE(scored(score(d)));
    const std::string stats = cli + " --db " + db.string() + " stats --json";
    REQUIRE(eventually([&] { return counter(run(stats), "database_replaced") == 1; }));

    // Then a file that is no database at all: the model in memory goes on scoring.
    std::ofstream(d.dir / "junk") << "this is not a database\n";
    fs::rename(d.dir / "junk", db);
    REQUIRE(eventually([&] { return d.log().find("was replaced but cannot be loaded; scoring with the model in memory (2 spam, 1 ham") != std::string::npos; }));
    for (int i = 0; i < 2; ++i) REQUIRE(scored(score(d)));
    REQUIRE(count_of(d.log(), "cannot be loaded") == 1);
}

TEST_CASE("A database made read-only under the daemon: scoring goes on, the log and stats say so, nothing is lost",
          "[mailsiftd][faults]") {
    if (::geteuid() != 0) {
        WARN("needs root to run the daemon as another user, for whom file modes count; not checked here");
        return;
    }
    const struct passwd* pw = ::getpwnam("nobody");
    REQUIRE(pw != nullptr);
    Daemon d("user = nobody\nstats_interval = 1\n");
    d.train();
    const fs::path db = d.dir / "model.db";
    for (const auto& p : {d.dir, db}) REQUIRE(::chown(p.c_str(), pw->pw_uid, pw->pw_gid) == 0);
    d.start();
    REQUIRE(eventually([&] { return d.log().find("loaded model") != std::string::npos; }));
    const std::string stats = cli + " --config " + (d.dir / "mailsift.conf").string() + " stats";
    REQUIRE(scored(score(d)));
    REQUIRE(eventually([&] { return counter(run(stats + " --json"), "messages") == 1; }));
    REQUIRE(run(stats).find("warning:") == std::string::npos);

    // The database and the WAL files beside it (SQLite writes there, and a process may
    // keep the database itself open for writing across its connections).
    for (const char* suffix : {"", "-wal", "-shm"}) REQUIRE(::chmod((db.string() + suffix).c_str(), 0444) == 0);
    for (int i = 0; i < 3; ++i) REQUIRE(scored(score(d)));
    REQUIRE(eventually([&] { return d.log().find("could not record") != std::string::npos; }));
    INFO(d.log());
    REQUIRE((d.log().find("cannot write the database: permission denied") != std::string::npos ||
             d.log().find("attempt to write a readonly database (no permission to write") != std::string::npos));
    const std::string text = run(stats);
    INFO(text);
    REQUIRE(text.find("warning:           mailsiftd's user nobody cannot write " + db.string() + " (mode 0444") !=
            std::string::npos);
    REQUIRE(run(stats + " --json").find("\"warnings\":[\"mailsiftd's user nobody cannot write") != std::string::npos);

    for (const char* suffix : {"", "-wal", "-shm"}) REQUIRE(::chmod((db.string() + suffix).c_str(), 0640) == 0);
    REQUIRE(eventually([&] { return counter(run(stats + " --json"), "messages") == 4; }));
    const std::string after = run(stats + " --json");
    REQUIRE(counter(after, "record_failures") >= 1);
    REQUIRE(after.find("\"signatures\":4") != std::string::npos);
    REQUIRE(after.find("\"warnings\":[]") != std::string::npos);
    REQUIRE(count_of(d.log(), "could not record") == 1);
    REQUIRE(d.log().find("recording works again") != std::string::npos);
}

TEST_CASE("A full disk during the daemon's statistics writes: scoring goes on, one log line, nothing lost once there is room",
          "[mailsiftd][faults]") {
    TmpfsMount m(8u << 20);
    if (!m.mounted) {
        WARN(m.problem << "; not checked here");
        return;
    }
    const fs::path db = m.dir / "model.db";
    Daemon d("stats_interval = 1\ndatabase = " + db.string() + "\n");
    REQUIRE(std::system((cli + " --db " + db.string() + " learn --spam " + data + "/spam_money_offer.eml " + data +
                         "/spam_cheap_pills.eml >/dev/null && " + cli + " --db " + db.string() + " learn --ham " + data +
                         "/ham_meeting_notes.eml " + data + "/ham_patch_review.eml >/dev/null")
                            .c_str()) == 0);
    d.start();
    REQUIRE(eventually([&] { return d.log().find("loaded model") != std::string::npos; }));
    const std::string stats = cli + " --db " + db.string() + " stats --json";
    REQUIRE(scored(score(d)));
    REQUIRE(eventually([&] { return counter(run(stats), "messages") == 1; }));

    // Fill the disk to the last byte.
    {
        std::FILE* f = std::fopen((m.dir / "filler").c_str(), "wb");
        REQUIRE(f != nullptr);
        std::vector<char> block(65536, 'x');
        while (std::fwrite(block.data(), 1, block.size(), f) == block.size() && std::fflush(f) == 0) {
        }
        std::fclose(f);
    }
    const auto filled = fs::file_size(m.dir / "filler");
    // Messages whose recorded features are far larger than what SQLite may have spare in its files.
    int messages = 1;
    for (int i = 0; i < 20; ++i, ++messages) {
        std::string body;
        for (int w = 0; w < 3000; ++w) body += "word" + std::to_string(i) + "x" + std::to_string(w) + (w % 12 == 11 ? "\n" : " ");
        REQUIRE(scored(score(d, "From: Lottery <win@prize.example>\nSubject: FREE prize " + std::to_string(i) + "\n\n" + body + "\n")));
    }
    REQUIRE(eventually([&] { return d.log().find("could not record") != std::string::npos; }));
    REQUIRE(d.log().find("database or disk is full") != std::string::npos);
    REQUIRE(scored(score(d)));
    ++messages;
    std::printf("daemon disk full test: a %llu-byte filler filled the 8 MiB tmpfs; database, WAL and index %llu bytes\n",
                static_cast<unsigned long long>(filled),
                static_cast<unsigned long long>(fs::file_size(db) + fs::file_size(db.string() + "-wal")));

    fs::remove(m.dir / "filler");
    REQUIRE(eventually([&] { return counter(run(stats), "messages") == messages; }, 20s));
    const std::string after = run(stats);
    REQUIRE(after.find("\"signatures\":" + std::to_string(messages)) != std::string::npos);  // every scan kept
    REQUIRE(counter(after, "record_failures") >= 1);
    REQUIRE(count_of(d.log(), "could not record") == 1);
    REQUIRE(integrity(db) == "ok\n");
}
