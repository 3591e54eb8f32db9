// Faults in training (issue 7): the real `mailsift` killed with SIGKILL at
// random points of a bulk learn, a disk that fills up during training, and an
// import whose class totals disagree with its rows. After each, the database
// passes PRAGMA integrity_check and holds exactly the model of some whole
// number of committed batches: never a partial batch, never a partial message.
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../support/paths.hpp"
#include "../support/tmpfs_mount.hpp"

namespace fs = std::filesystem;

namespace {

const std::string cli_program = MAILSIFT_CLI;
const std::string sample_messages = std::string(MAILSIFT_TEST_DATA) + "/messages";

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

struct Scratch {
    fs::path dir;
    explicit Scratch(const char* name) {
        std::string tmpl = std::string("/tmp/mailsift-faults-") + name + "-XXXXXX";
        dir = ::mkdtemp(tmpl.data());
    }
    ~Scratch() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
};

// The CLI as a child process with a clean environment; stdout and stderr to files.
pid_t spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err) {
    std::fflush(stdout);  // else the child writes our buffered output again
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        std::freopen(out.c_str(), "w", stdout);
        std::freopen(err.c_str(), "w", stderr);
        ::unsetenv("MAILSIFT_DB");
        ::unsetenv("MAILSIFT_CONFIG");
        std::vector<char*> argv;
        argv.push_back(const_cast<char*>("mailsift"));
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(cli_program.c_str(), argv.data());
        std::_Exit(127);
    }
    return pid;
}

struct Run {
    int status = -1;
    std::string out, err;
};

Run run(const fs::path& dir, const std::vector<std::string>& args) {
    const pid_t pid = spawn(args, dir / "out.txt", dir / "err.txt");
    int st = 0;
    ::waitpid(pid, &st, 0);
    Run r;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = read_file(dir / "out.txt");
    r.err = read_file(dir / "err.txt");
    return r;
}

// Small, distinct messages: each has words of its own (so the model grows
// with every one) and a sender of its own (so no message becomes a known
// contact for a later one and the prefix states are the same however the
// learning was split into runs).
void write_messages(const fs::path& dir, const std::string& kind, int n, int words_each) {
    fs::create_directories(dir);
    for (int i = 0; i < n; ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "%05d.eml", i);
        std::ofstream f(dir / name);
        f << "From: " << kind << i << " <" << kind << i << "@" << kind << ".example>\n"
          << "To: user@example.org\nSubject: " << kind << " note " << i << "\nMessage-ID: <" << kind << i
          << "@example>\n\n";
        if (kind == "spam") f << "Cheap offer, act now, free prize money!\n";
        else f << "Minutes of the meeting and the build report follow.\n";
        for (int w = 0; w < words_each; ++w) f << kind << "x" << i << "w" << w << (w % 10 == 9 ? "\n" : " ");
        f << "\n";
    }
}

struct Db {
    sqlite3* db = nullptr;
    explicit Db(const fs::path& path, int flags = SQLITE_OPEN_READWRITE) {
        if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
            sqlite3_close(db);
            db = nullptr;
        }
    }
    ~Db() { sqlite3_close(db); }
    Db(const Db&) = delete;
    Db& operator=(const Db&) = delete;
    // All rows of a query as text, one line per row, columns tab-separated.
    std::string rows(const char* sql) const {
        std::string out;
        sqlite3_stmt* s = nullptr;
        if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) return std::string("ERROR ") + sqlite3_errmsg(db);
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            for (int i = 0; i < sqlite3_column_count(s); ++i) {
                if (i) out += '\t';
                if (sqlite3_column_type(s, i) == SQLITE_BLOB) {
                    const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(s, i));
                    static const char hex[] = "0123456789abcdef";
                    for (int k = 0; k < sqlite3_column_bytes(s, i); ++k) {
                        out += hex[p[k] >> 4];
                        out += hex[p[k] & 15];
                    }
                } else if (const auto* t = sqlite3_column_text(s, i)) {
                    out += reinterpret_cast<const char*>(t);
                }
            }
            out += '\n';
        }
        if (rc != SQLITE_DONE) out += std::string("ERROR ") + sqlite3_errmsg(db);
        sqlite3_finalize(s);
        return out;
    }
};

std::string integrity(const fs::path& path) {
    Db db(path);
    if (db.db == nullptr) return "cannot open";
    return db.rows("PRAGMA integrity_check");
}

// Everything the model is, without the times (learned_at, last_seen, added_at):
// two databases that learned the same messages give the same text.
std::string model_text(const fs::path& path) {
    Db db(path);
    if (db.db == nullptr) return "cannot open";
    return db.rows("SELECT class, messages, occurrences, presences FROM classes ORDER BY class") +
           db.rows("SELECT id, spam_occurrences, ham_occurrences, spam_presences, ham_presences, text FROM features ORDER BY id") +
           db.rows("SELECT digest, class, features FROM messages ORDER BY digest") +
           db.rows("SELECT address, source FROM contacts ORDER BY address");
}

// The store's invariants: class totals are the sums of the feature rows, and each
// class counts its learned messages. "" when they hold.
std::string invariant_violations(const fs::path& path) {
    Db db(path);
    return db.rows(
        "SELECT c.class, c.messages, c.occurrences, c.presences FROM classes c WHERE"
        " c.occurrences <> (SELECT coalesce(sum(CASE c.class WHEN 1 THEN spam_occurrences ELSE ham_occurrences END), 0) FROM features)"
        " OR c.presences <> (SELECT coalesce(sum(CASE c.class WHEN 1 THEN spam_presences ELSE ham_presences END), 0) FROM features)"
        " OR c.messages <> (SELECT count(*) FROM messages m WHERE m.class = c.class)");
}

std::string learned_counts(const fs::path& path) {
    Db db(path);
    return db.rows("SELECT group_concat(messages, '/') FROM (SELECT messages FROM classes ORDER BY class DESC)");
}

// The model after every whole batch: learning `batch` messages at a time from
// the sorted files of each phase (spam, then ham), one CLI run per batch.
struct References {
    std::map<std::string, int> state_of;  // model_text -> state number (0 = empty)
    int states = 0;
};

References build_references(const fs::path& work, const fs::path& config, const std::vector<std::pair<std::string, fs::path>>& phases,
                            int batch) {
    References r;
    const fs::path db = work / "reference.db";
    fs::remove(db);
    REQUIRE(run(work, {"--config", config.string(), "--db", db.string(), "learn", "--spam", "--files-from", "/dev/null"})
                .status == 0);
    r.state_of.emplace(model_text(db), r.states++);
    for (const auto& [label, dir] : phases) {
        std::vector<fs::path> files;
        for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
        std::sort(files.begin(), files.end());
        for (std::size_t i = 0; i < files.size(); i += static_cast<std::size_t>(batch)) {
            std::ofstream list(work / "list.txt");
            for (std::size_t k = i; k < std::min(files.size(), i + static_cast<std::size_t>(batch)); ++k) list << files[k].string() << "\n";
            list.close();
            const auto res = run(work, {"--config", config.string(), "--db", db.string(), "learn", "--" + label, "--files-from",
                                        (work / "list.txt").string()});
            REQUIRE(res.status == 0);
            REQUIRE(r.state_of.emplace(model_text(db), r.states++).second);  // every batch changes the model
        }
    }
    fs::remove(db);
    return r;
}

// Whether another connection holds the write lock right now (the learner stopped mid-batch).
enum class LockProbe { no_database, write_transaction_open, no_write_transaction };

LockProbe probe_write_lock(const fs::path& path) {
    if (!fs::exists(path)) return LockProbe::no_database;
    Db db(path);
    if (db.db == nullptr) return LockProbe::no_database;
    sqlite3_busy_timeout(db.db, 0);
    const int rc = sqlite3_exec(db.db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) {
        sqlite3_exec(db.db, "ROLLBACK", nullptr, nullptr, nullptr);
        return LockProbe::no_write_transaction;
    }
    return (rc & 0xFF) == SQLITE_BUSY ? LockProbe::write_transaction_open : LockProbe::no_write_transaction;
}

using test_support::TmpfsMount;

// Fills `file` until the file system is full; returns the bytes written.
std::uint64_t fill(const fs::path& file, std::uint64_t at_most) {
    std::FILE* f = std::fopen(file.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::vector<char> block(4096, 'x');
    std::uint64_t written = 0;
    while (written < at_most) {
        const std::size_t n = std::fwrite(block.data(), 1, block.size(), f);
        written += n;
        if (n < block.size() || std::fflush(f) != 0) break;
    }
    std::fclose(f);
    return static_cast<std::uint64_t>(fs::file_size(file));
}

std::uint64_t bytes_of(const fs::path& db) {
    std::uint64_t total = 0;
    for (const char* suffix : {"", "-wal", "-shm"}) {
        std::error_code ec;
        const auto n = fs::file_size(db.string() + suffix, ec);
        if (!ec) total += n;
    }
    return total;
}

}  // namespace

TEST_CASE("SIGKILL at random points of a bulk learn leaves a sound database holding whole batches", "[faults][long]") {
    Scratch s("kill");
    constexpr int spam_count = 2000, ham_count = 2000, batch = 100, kills = 100;
    write_messages(s.dir / "spam", "spam", spam_count, 12);
    write_messages(s.dir / "ham", "ham", ham_count, 12);
    const fs::path config = s.dir / "mailsift.conf";
    // Every message learned (no thick threshold), so that each batch moves the model.
    std::ofstream(config) << "batch_messages = " << batch << "\ntrain_margin = 0\n";
    const std::vector<std::pair<std::string, fs::path>> phases = {{"spam", s.dir / "spam"}, {"ham", s.dir / "ham"}};
    const References refs = build_references(s.dir, config, phases, batch);
    REQUIRE(refs.states == 1 + spam_count / batch + ham_count / batch);
    const int spam_done = spam_count / batch, all_done = refs.states - 1;

    // How long one whole learn of a phase takes here: the kills are spread over it.
    const fs::path db = s.dir / "model.db";
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(run(s.dir, {"--config", config.string(), "--db", db.string(), "learn", "--spam", (s.dir / "spam").string()}).status == 0);
    const auto whole = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
    REQUIRE(refs.state_of.at(model_text(db)) == spam_done);
    fs::remove(db);

    const unsigned seed = static_cast<unsigned>(std::random_device{}());
    std::printf("SIGKILL test: seed %u, one learn of %d messages takes %lld us, batches of %d\n", seed, spam_count,
                static_cast<long long>(whole.count()), batch);
    INFO("seed " << seed);
    std::mt19937 rng(seed);
    std::uniform_int_distribution<long long> delay(0, whole.count());

    int state = 0;  // the state the database holds (refs numbering)
    int finished_before_kill = 0, before_database = 0, created_empty = 0, mid_batch = 0, between_batches = 0, progressed = 0, restarts = 0;
    std::map<int, int> kills_at_state;
    for (int k = 0; k < kills; ++k) {
        INFO("kill " << k);
        const bool spam_phase = state < spam_done;
        const pid_t pid = spawn({"--config", config.string(), "--db", db.string(), "learn", spam_phase ? "--spam" : "--ham",
                                 (s.dir / (spam_phase ? "spam" : "ham")).string()},
                                s.dir / "out.txt", s.dir / "err.txt");
        REQUIRE(pid > 0);
        std::this_thread::sleep_for(std::chrono::microseconds(delay(rng)));
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
            ++finished_before_kill;
            REQUIRE(WIFEXITED(status));
            REQUIRE(WEXITSTATUS(status) == 0);
        } else {
            // Stopped first, to see whether it is inside a write transaction, then killed there.
            ::kill(pid, SIGSTOP);
            ::waitpid(pid, &status, WUNTRACED);
            switch (probe_write_lock(db)) {
                case LockProbe::no_database: ++before_database; break;
                case LockProbe::write_transaction_open: ++mid_batch; break;
                case LockProbe::no_write_transaction: ++between_batches; break;
            }
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
        }
        if (!fs::exists(db)) {
            REQUIRE(state == 0);
            continue;
        }
        REQUIRE(integrity(db) == "ok\n");
        if (Db(db).rows("SELECT count(*) FROM sqlite_schema") == "0\n") {
            // Killed while creating the database, before its schema was committed: no model yet.
            REQUIRE(state == 0);
            ++created_empty;
            continue;
        }
        REQUIRE(invariant_violations(db) == "");
        const std::string text = model_text(db);
        const auto found = refs.state_of.find(text);
        INFO("spam/ham learned: " << learned_counts(db));
        REQUIRE(found != refs.state_of.end());  // exactly the model after some whole batch
        REQUIRE(found->second >= state);        // and nothing committed was lost
        if (found->second > state) ++progressed;
        state = found->second;
        ++kills_at_state[state];
        if (state == all_done) {  // everything learned: start over on a new database
            for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db.string() + suffix);
            state = 0;
            ++restarts;
        }
    }
    std::printf("SIGKILL test: %d kills: %d inside a write transaction (mid-batch), %d outside one, %d before the "
                "database existed, %d runs finished first; %d left a database file without schema; %d kills found new "
                "batches committed, %zu distinct states seen of %d, %d full learns completed\n",
                kills, mid_batch, between_batches, before_database, finished_before_kill, created_empty, progressed, kills_at_state.size(),
                refs.states, restarts);
    CHECK(mid_batch > 0);  // the test did kill inside transactions
    // The learner picks up where a kill left it: a run to the end gives the full model.
    if (state < spam_done) {
        REQUIRE(run(s.dir, {"--config", config.string(), "--db", db.string(), "learn", "--spam", (s.dir / "spam").string()}).status == 0);
    }
    REQUIRE(run(s.dir, {"--config", config.string(), "--db", db.string(), "learn", "--ham", (s.dir / "ham").string()}).status == 0);
    REQUIRE(integrity(db) == "ok\n");
    REQUIRE(refs.state_of.at(model_text(db)) == all_done);
}

TEST_CASE("A disk that fills up during training: a clear error, whole batches kept, and training goes on once there is room",
          "[faults][long]") {
    Scratch s("full");
    constexpr int count = 1500, batch = 100;
    write_messages(s.dir / "spam", "spam", count, 40);
    const fs::path config = s.dir / "mailsift.conf";
    std::ofstream(config) << "batch_messages = " << batch << "\n";
    const References refs = build_references(s.dir, config, {{"spam", s.dir / "spam"}}, batch);

    // The size of the whole model on a roomy disk, to size the small one.
    const fs::path roomy = s.dir / "roomy.db";
    REQUIRE(run(s.dir, {"--config", config.string(), "--db", roomy.string(), "learn", "--spam", (s.dir / "spam").string()}).status == 0);
    const std::uint64_t whole = fs::file_size(roomy);

    // Room for the whole model and a full WAL (SQLite checkpoints it at about 4 MB),
    // but a filler file leaves a third of the model's size free at first.
    TmpfsMount m(whole * 3 + (8u << 20));
    if (!m.mounted) {
        WARN(m.problem << "; not checked here");
        return;
    }
    const fs::path db = m.dir / "model.db";
    const std::uint64_t filler_bytes = fill(m.dir / "filler", UINT64_MAX);
    fs::remove(m.dir / "filler");
    fill(m.dir / "filler", filler_bytes - whole / 3);

    const auto r = run(s.dir, {"--config", config.string(), "--db", db.string(), "learn", "--spam", (s.dir / "spam").string()});
    INFO("stderr: " << r.err);
    REQUIRE(r.status == 3);
    REQUIRE(r.err.find(db.string()) != std::string::npos);
    REQUIRE(r.err.find("database or disk is full") != std::string::npos);
    REQUIRE(r.err.find("was rolled back") != std::string::npos);
    REQUIRE(integrity(db) == "ok\n");
    REQUIRE(invariant_violations(db) == "");
    const auto found = refs.state_of.find(model_text(db));
    REQUIRE(found != refs.state_of.end());  // exactly the model after some whole batch
    REQUIRE(found->second < refs.states - 1);
    std::printf("disk full test: model %llu bytes on a roomy disk; the disk filled at %llu bytes of database, WAL and "
                "index, after %d of %d batches; the CLI said: %s",
                static_cast<unsigned long long>(whole), static_cast<unsigned long long>(bytes_of(db)), found->second,
                refs.states - 1, r.err.c_str());

    // Room again: the same command learns the rest, and the model is as if nothing had happened.
    fs::remove(m.dir / "filler");
    const auto again = run(s.dir, {"--config", config.string(), "--db", db.string(), "learn", "--spam", (s.dir / "spam").string()});
    INFO("stderr: " << again.err);
    REQUIRE(again.status == 0);
    REQUIRE(integrity(db) == "ok\n");
    REQUIRE(refs.state_of.at(model_text(db)) == refs.states - 1);
}

TEST_CASE("import rejects class totals that do not equal the sums of its rows, and imports nothing", "[faults]") {
    Scratch s("import");
    const fs::path db = s.dir / "model.db";
    REQUIRE(run(s.dir, {"--db", db.string(), "learn", "--spam", sample_messages + "/spam_money_offer.eml",
                        sample_messages + "/spam_cheap_pills.eml"})
                .status == 0);
    REQUIRE(run(s.dir, {"--db", db.string(), "learn", "--ham", sample_messages + "/ham_meeting_notes.eml"}).status == 0);
    const fs::path file = s.dir / "model.txt";
    REQUIRE(run(s.dir, {"--db", db.string(), "export", file.string()}).status == 0);
    const std::string good = read_file(file);
    std::vector<std::string> lines;
    {
        std::istringstream in(good);
        for (std::string l; std::getline(in, l);) lines.push_back(l);
    }
    REQUIRE(lines.size() > 4);
    // The class lines follow the first line and the settings kept with the model.
    std::size_t spam_at = 1;
    while (spam_at < lines.size() && lines[spam_at].rfind("setting\t", 0) == 0) ++spam_at;
    const std::size_t ham_at = spam_at + 1;
    REQUIRE(ham_at < lines.size());
    REQUIRE(lines[spam_at].rfind("class\tspam\t", 0) == 0);
    REQUIRE(lines[ham_at].rfind("class\tham\t", 0) == 0);
    const std::string spam_line = "model.txt:" + std::to_string(spam_at + 1) + ": ";
    const std::string ham_line = "model.txt:" + std::to_string(ham_at + 1) + ": ";
    auto fields = [](const std::string& line) {
        std::vector<std::string> f;
        std::istringstream in(line);
        for (std::string x; std::getline(in, x, '\t');) f.push_back(x);
        return f;
    };
    auto join = [](const std::vector<std::string>& f) {
        std::string out;
        for (std::size_t i = 0; i < f.size(); ++i) out += (i ? "\t" : "") + f[i];
        return out;
    };
    auto with = [&](std::size_t index, const std::string& line) {
        std::string out;
        for (std::size_t i = 0; i < lines.size(); ++i) out += (i == index ? line : lines[i]) + "\n";
        return out;
    };
    auto plus_one = [&](std::size_t line, std::size_t field) {
        auto f = fields(lines[line]);
        f[field] = std::to_string(std::stoll(f[field]) + 1);
        return join(f);
    };
    std::size_t first_feature = 0;
    while (lines[first_feature].rfind("feature\t", 0) != 0) ++first_feature;
    const auto feature = fields(lines[first_feature]);
    const bool feature_in_spam = feature[2] != "0";

    struct Case {
        const char* what;
        std::string text;
        std::string expected;
    };
    const Case cases[] = {
        {"spam occurrences one more than the rows", with(spam_at, plus_one(spam_at, 3)),
         spam_line + "class spam totals do not match the file: occurrences "},
        {"ham presences one more than the rows", with(ham_at, plus_one(ham_at, 4)),
         ham_line + "class ham totals do not match the file: presences "},
        {"a class counting a message that is not in the file", with(ham_at, plus_one(ham_at, 2)),
         ham_line + "class ham totals do not match the file: messages "},
        {"a feature row changed under its class total",
         with(first_feature, plus_one(first_feature, feature_in_spam ? 2 : 3)),
         feature_in_spam ? spam_line + "class spam totals do not match the file: occurrences "
                         : ham_line + "class ham totals do not match the file: occurrences "},
    };
    for (const auto& c : cases) {
        SECTION(c.what) {
            std::ofstream(s.dir / "model.txt", std::ios::trunc) << c.text;
            const fs::path fresh = s.dir / "fresh.db";
            const auto r = run(s.dir, {"--db", fresh.string(), "import", file.string()});
            INFO("stderr: " << r.err);
            REQUIRE(r.status == 1);
            REQUIRE(r.err.find(c.expected) != std::string::npos);
            REQUIRE(r.err.find("but ") != std::string::npos);  // names both numbers
            REQUIRE_FALSE(fs::exists(fresh));                 // the database it created is gone again

            // Into an existing empty database: still nothing imported.
            REQUIRE(run(s.dir, {"--db", fresh.string(), "learn", "--spam", "--files-from", "/dev/null"}).status == 0);
            REQUIRE(run(s.dir, {"--db", fresh.string(), "import", file.string()}).status == 1);
            Db d(fresh);
            REQUIRE(d.rows("SELECT (SELECT count(*) FROM features) + (SELECT count(*) FROM messages) +"
                           " (SELECT count(*) FROM contacts) + (SELECT sum(messages + occurrences + presences) FROM classes)") ==
                    "0\n");
        }
    }
    SECTION("the export as it is imports") {
        std::ofstream(s.dir / "model.txt", std::ios::trunc) << good;
        REQUIRE(run(s.dir, {"--db", (s.dir / "fresh.db").string(), "import", file.string()}).status == 0);
        REQUIRE(model_text(s.dir / "fresh.db") == model_text(db));
    }
}

TEST_CASE("A failed read of the memory-mapped database (SIGBUS) is a database error: a clear message, exit 3",
          "[faults]") {
    // A command of a few messages reads the linear weights through a memory
    // map, where an I/O error arrives as SIGBUS. The real mailsift, waiting on
    // its standard input, gets the signal once it has said it catches it.
    Scratch s("sigbus");
    REQUIRE(run(s.dir, {"--db", (s.dir / "m.db").string(), "learn", "--spam", sample_messages + "/spam_money_offer.eml"})
                .status == 0);
    int in[2];
    REQUIRE(::pipe(in) == 0);
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(in[0], 0);
        ::close(in[0]);
        ::close(in[1]);
        std::freopen((s.dir / "err.txt").c_str(), "w", stderr);
        std::freopen((s.dir / "out.txt").c_str(), "w", stdout);
        ::execl(cli_program.c_str(), "mailsift", "--db", (s.dir / "m.db").c_str(), "classify", static_cast<char*>(nullptr));
        std::_Exit(127);
    }
    ::close(in[0]);
    // Wait until it waits on its standard input (/proc/PID/syscall: read, fd 0):
    // mailsift itself, past exec and past main's setup, not the forked copy of
    // this test (which under ASan catches SIGBUS too).
    auto reading_stdin = [&] {
        std::ifstream sc("/proc/" + std::to_string(pid) + "/syscall");
        std::string line;
        std::getline(sc, line);
        return line.rfind("0 0x0 ", 0) == 0;
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!reading_stdin() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(reading_stdin());
    REQUIRE(fs::read_symlink("/proc/" + std::to_string(pid) + "/exe") == fs::canonical(cli_program));
    // SigCgt in /proc/PID/status: the signals it catches (SIGBUS is bit 7 - 1).
    std::string caught;
    {
        std::ifstream st("/proc/" + std::to_string(pid) + "/status");
        for (std::string line; std::getline(st, line);) {
            if (line.rfind("SigCgt:", 0) == 0) caught = line.substr(7);
        }
    }
    REQUIRE(((std::stoull(caught, nullptr, 16) >> (SIGBUS - 1)) & 1) != 0);
    REQUIRE(::kill(pid, SIGBUS) == 0);
    int st = 0;
    REQUIRE(::waitpid(pid, &st, 0) == pid);
    ::close(in[1]);
    REQUIRE(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 3);
    CHECK(read_file(s.dir / "err.txt").find("memory-mapped") != std::string::npos);
}
