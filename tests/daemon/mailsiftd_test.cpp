// The real mailsiftd binary on a real unix socket and a real SQLite file:
// broken frames, a missing database, retraining while running, read timeouts,
// socket permissions and SIGTERM. The MTA side is written here byte by byte.
#include <pwd.h>

#include "daemon_support.hpp"
#include "mailsift/engine/scorer.hpp"
#include "mailsift/engine/signature.hpp"
#include "mailsift/store/sqlite_database.hpp"

namespace engine = mailsift::engine;
namespace store = mailsift::store;
using namespace daemon_test;

TEST_CASE("Without a database every message gets the default action, and training takes effect live", "[mailsiftd]") {
    Daemon d;
    d.start();
    Client c(d.socket);
    c.negotiate();
    const auto before = c.message(spam);
    REQUIRE(before.back().first == 'c');  // on_error = accept: delivered, never lost
    REQUIRE(added_status(before).find("Error") != std::string::npos);

    d.train();
    REQUIRE(eventually([&] { return d.log().find("loaded model") != std::string::npos; }));
    // The daemon may first load the database between the two learn commands (it
    // appears with the first); the next refresh brings the rest. Live either way.
    REQUIRE(eventually([&] { return added_status(c.message(spam)).find("Yes, score=") != std::string::npos; }));
}

TEST_CASE("on_error = tempfail answers tempfail when nothing can be scored", "[mailsiftd]") {
    Daemon d("on_error = tempfail\n");
    d.start();
    Client c(d.socket);
    c.negotiate();
    const auto r = c.message(spam);
    REQUIRE(r.size() == 1);
    REQUIRE(r[0].first == 't');
}

TEST_CASE("A broken frame closes that connection only", "[mailsiftd]") {
    Daemon d;
    start_trained_daemon(d);
    {
        Client bad(d.socket);
        bad.negotiate();
        std::string huge;
        put32(huge, 0xFFFFFFFFu);  // announces 4 GB
        huge.push_back('B');
        bad.send(huge);
        REQUIRE_FALSE(bad.reply());  // closed, without reading 4 GB
    }
    {
        Client unknown(d.socket);
        unknown.negotiate();
        unknown.send(frame('Z', "junk"));
        REQUIRE_FALSE(unknown.reply());
    }
    Client good(d.socket);
    good.negotiate();
    REQUIRE(added_status(good.message(spam)).find("Yes, score=") != std::string::npos);
    REQUIRE(d.log().find("milter protocol error") != std::string::npos);
}

TEST_CASE("A silent MTA connection is closed after read_timeout", "[mailsiftd]") {
    Daemon d("read_timeout = 1\n");
    d.start();
    Client idle(d.socket);
    idle.negotiate();
    REQUIRE_FALSE(idle.reply());  // the daemon hangs up; SO_RCVTIMEO (10 s) bounds the wait
    REQUIRE(d.log().find("timed out") != std::string::npos);
}

TEST_CASE("The unix socket gets the configured mode and SIGTERM stops cleanly", "[mailsiftd]") {
    Daemon d("socket_mode = 0600\n");
    d.start();
    struct stat st{};
    REQUIRE(::stat(d.socket.c_str(), &st) == 0);
    REQUIRE((st.st_mode & 0777) == 0600);
    REQUIRE(d.stop(SIGTERM) == std::optional<int>(0));
    REQUIRE(d.log().find("stopped after") != std::string::npos);
    REQUIRE_FALSE(fs::exists(d.socket));
}

TEST_CASE("The socket has its configured mode the moment it appears, never the umask's", "[mailsiftd]") {
    // An MTA started beside the daemon may connect as soon as the path exists;
    // polling without sleeping looks at it then (it was once bound, then chmod-ed).
    for (int round = 0; round < 20; ++round) {
        Daemon d("socket_mode = 0600\n");
        d.start(std::chrono::milliseconds(0));
        struct stat st{};
        REQUIRE(::stat(d.socket.c_str(), &st) == 0);
        REQUIRE((st.st_mode & 0777) == 0600);
        REQUIRE(d.stop(SIGTERM) == std::optional<int>(0));
    }
}

TEST_CASE("SIGTERM sent the moment the socket appears still stops cleanly", "[mailsiftd]") {
    // The socket exists before the model loads; a supervisor may stop the
    // daemon right then. Polling without sleeping hits that window often.
    for (int round = 0; round < 20; ++round) {
        Daemon d;
        d.start(std::chrono::milliseconds(0));
        REQUIRE(d.stop(SIGTERM) == std::optional<int>(0));
    }
}

TEST_CASE("Without --foreground it returns once listening, scores from its detached process, and SIGTERM stops it", "[mailsiftd]") {
    // Threads do not survive fork: the scoring pool and the recorder must be
    // started by the process that stays, or messages wait forever.
    Daemon d("stats_interval = 1\n");
    d.train();
    const std::string cmd = daemon_binary + " --config " + (d.dir / "mailsift.conf").string() + " 2>>" +
                            (d.dir / "daemon.log").string();
    REQUIRE(std::system(cmd.c_str()) == 0);
    REQUIRE(fs::exists(d.socket));  // the parent returned only once the child listened
    auto c = std::make_unique<Client>(d.socket);
    ucred peer{};
    socklen_t len = sizeof peer;
    REQUIRE(::getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0);
    REQUIRE(peer.pid > 1);
    struct Guard {  // the detached daemon is not our child: end it by its pid if the test fails
        pid_t pid;
        ~Guard() { ::kill(pid, SIGKILL); }
    } guard{peer.pid};
    c->negotiate();
    REQUIRE(eventually([&] { return added_status(c->message(spam)).find("Yes, score=") != std::string::npos; }));
    c.reset();  // SIGTERM lets connections in flight finish
    ::kill(peer.pid, SIGTERM);
    REQUIRE(eventually([&] { return d.log().find("stopped after") != std::string::npos && !fs::exists(d.socket); }));
    // Gone, or a zombie waiting for whoever adopted it, but no longer running.
    REQUIRE(eventually([&] {
        std::ifstream stat("/proc/" + std::to_string(peer.pid) + "/stat");
        std::string pid, comm, state;
        return !(stat >> pid >> comm >> state) || state == "Z";
    }));
}

TEST_CASE("A listen error is reported by the command that started it, even without --foreground", "[mailsiftd]") {
    Daemon d;
    const std::string cmd = daemon_binary + " --config " + (d.dir / "mailsift.conf").string() +
                            " --listen inet:192.0.2.1:1 2>>" + (d.dir / "daemon.log").string();
    const int rc = std::system(cmd.c_str());
    REQUIRE(WIFEXITED(rc));
    REQUIRE(WEXITSTATUS(rc) == 3);
    REQUIRE(d.log().find("cannot listen on inet:192.0.2.1:1") != std::string::npos);
}

TEST_CASE("Checking a bad configuration reports it and exits 3", "[mailsiftd]") {
    Daemon d("alpha = banana\n");
    const std::string cmd = daemon_binary + " --check-config --config " + (d.dir / "mailsift.conf").string() + " 2>/dev/null";
    const int rc = std::system(cmd.c_str());
    REQUIRE(WIFEXITED(rc));
    REQUIRE(WEXITSTATUS(rc) == 3);
}

TEST_CASE("A scanned message can be corrected by its signature, and stats count it", "[mailsiftd]") {
    Daemon d("stats_interval = 1\n");
    start_trained_daemon(d);
    Client c(d.socket);
    c.negotiate();
    const auto replies = c.message(spam);
    const std::string signature = header_value(replies, "X-Mailsift-Signature");
    REQUIRE(signature.size() == 32);
    REQUIRE(header_value(replies, "X-Mailsift-Status").rfind("Yes", 0) == 0);
    // The digest of what came over the socket (fields rebuilt, CRLF) is the digest of
    // the same message in an mbox file: evaluate's and correct's rehearsal draws are the daemon's.
    REQUIRE(signature == engine::signature_text(engine::message_digest("From sender@example.net Sat Nov 28 12:00:00 2026\n" + spam)));

    const std::string db = (d.dir / "model.db").string();
    const std::string stats = cli + " --db " + db + " stats --json";
    REQUIRE(eventually([&] { return run(stats).find("\"signatures\":1") != std::string::npos; }));

    // As delivered: our headers on top, more added by the delivery path.
    std::ofstream(d.dir / "delivered.eml") << "Received: from mx by mailbox\nX-Mailsift-Status: Yes\nX-Mailsift-Signature: "
                                           << signature << "\n" << spam << "\nSigned, the mail client\n";
    const std::string corrected = run(cli + " --db " + db + " correct --ham " + (d.dir / "delivered.eml").string());
    REQUIRE(corrected.find("1 by signature") != std::string::npos);
    // The daemon's scan is the message `learn --spam` learned (one digest, however
    // it came): moved, not counted in both classes.
    REQUIRE(corrected.find("0 learned, 1 moved") != std::string::npos);
    REQUIRE(run(cli + " --db " + db + " correct --ham " + (d.dir / "delivered.eml").string() + " 2>&1")
                .find("already learned as ham") != std::string::npos);
    const std::string after = run(stats);
    REQUIRE(after.find("\"all\":{\"false_positives\":1") != std::string::npos);
    REQUIRE(after.find("\"messages\":1") != std::string::npos);  // the daemon's counter
    REQUIRE(after.find("\"verdict_spam\":1") != std::string::npos);
    // One message: every percentile is the bound of the one bucket it fell in.
    const std::string key = "\"latency_ms_at_most\":{\"p50\":";
    const auto at = after.find(key);
    REQUIRE(at != std::string::npos);
    REQUIRE(after.compare(at + key.size(), 4, "null") != 0);
    REQUIRE(std::isdigit(static_cast<unsigned char>(after[at + key.size()])));
    REQUIRE(after.find("\"messages\":{\"spam\":3,\"ham\":5}") != std::string::npos);

    // The correction was a mistake: undone, the counts are what they were, the
    // error rates forget it, and the daemon, whose linear scorer was refitted
    // after the correction and again without the message after the undo (by
    // the command itself on a model this small: Trainer::refit_due), gives the
    // message its verdict of before.
    const auto caught_up = [&] { return run(stats).find("\"changes_since_refit\":0") != std::string::npos; };
    const std::string first_status = header_value(replies, "X-Mailsift-Status");
    const auto word = [](const std::string& status) { return status.substr(0, status.find(',')); };
    REQUIRE(eventually([&] { return header_value(c.message(spam), "X-Mailsift-Status") != first_status; }));
    REQUIRE(eventually(caught_up));
    const std::string undone = run(cli + " --db " + db + " correct --undo " + (d.dir / "delivered.eml").string() + " 2>&1");
    REQUIRE(undone.find("undid its correction to ham; now learned as spam") != std::string::npos);
    REQUIRE(undone.find("undone: 1 corrections") != std::string::npos);
    const std::string after_undo = run(stats);
    REQUIRE(after_undo.find("\"messages\":{\"spam\":4,\"ham\":4}") != std::string::npos);
    REQUIRE(after_undo.find("\"all\":{\"false_positives\":0") != std::string::npos);
    REQUIRE(eventually(caught_up));
    REQUIRE(eventually([&] { return word(header_value(c.message(spam), "X-Mailsift-Status")) == word(first_status); }));
    // Nothing stands to undo any more: said, and a failing exit status.
    REQUIRE(std::system((cli + " --db " + db + " correct --undo " + (d.dir / "delivered.eml").string() +
                         " 2>/dev/null >/dev/null").c_str()) != 0);
}

TEST_CASE("Recipients of authenticated senders become contacts", "[mailsiftd]") {
    Daemon d("stats_interval = 1\n");
    d.train();
    d.start();
    Client c(d.socket);
    c.negotiate();
    // The MTA sends {auth_authen} with MAIL FROM when the client authenticated.
    c.send(frame('D', "M" + z("{auth_authen}") + z("alice")));
    const auto replies = c.message("From: alice@example.org\nSubject: lunch\n\nsee you at noon\n");
    REQUIRE(header_value(replies, "X-Mailsift-Status").rfind("Skipped", 0) == 0);
    const std::string list = (cli + " --db " + (d.dir / "model.db").string() + " contacts list");
    REQUIRE(eventually([&] { return run(list).find("user@example.org\tsent by alice\t") != std::string::npos; }));

    // The reply from that contact is scored with the sender-in-contacts feature
    // once the daemon has reloaded its contacts (the recorded scan shows what was scored).
    REQUIRE(eventually([&] { return d.log().find("reloaded model") != std::string::npos; }));
    const auto reply = c.message("From: User <user@example.org>\nSubject: Re: lunch\n\nnoon is fine\n");
    const auto id = engine::parse_signature(header_value(reply, "X-Mailsift-Signature"));
    REQUIRE(id);
    std::optional<store::Scan> scan;
    REQUIRE(eventually([&] {
        store::SqliteDatabase db(d.dir / "model.db", store::Database::Mode::read_only);
        scan = db.find_scan(*id);
        return scan.has_value();
    }));
    REQUIRE(scan->features.find("hdr:sender_in_contacts\t1\n") != std::string::npos);
}

TEST_CASE("A history line carries the queue ID, client, HELO, Message-ID and To, and a skipped message leaves one with its reason",
          "[mailsiftd]") {
    Daemon d("stats_interval = 1\nskip_authenticated = on\n");
    d.train();
    d.start();
    REQUIRE(eventually([&] { return d.log().find("loaded model") != std::string::npos; }));
    Client c(d.socket);
    c.negotiate();
    // As Postfix sends them: the client at connect, its HELO, and the queue ID as macro "i" at RCPT.
    std::string connect = z("mail.example.net") + "4";
    connect += std::string("\x9c\x40", 2);  // port 40000
    connect += z("192.0.2.25");
    c.send(frame('C', connect));
    c.send(frame('H', z("mail.example.net\xff")));  // not UTF-8: kept as text any store takes
    c.send(frame('D', "R" + z("i") + z("4QxYz1AbCd")));
    const auto replies = c.message("From: <cafe@example.org>\nTo: Team <team@example.org>\nMessage-ID: <opening.1@example.org>\n"
                                   "Subject: Opening hours\n\nopen at nine\n");
    REQUIRE(engine::parse_signature(header_value(replies, "X-Mailsift-Signature")));
    // The next message of the connection: an authenticated user's, which is let through unscored.
    c.send(frame('D', "M" + z("{auth_authen}") + z("carol") + z("i") + z("4QxYz2EfGh")));
    const auto skipped = c.message("From: <carol@example.org>\nMessage-ID: <own@example.org>\n\nhello\n");
    CHECK(header_value(skipped, "X-Mailsift-Signature").empty());
    std::vector<store::HistoryEntry> rows;
    REQUIRE(eventually([&] {
        store::SqliteDatabase db(d.dir / "model.db", store::Database::Mode::read_only);
        rows = db.history({});
        return rows.size() == 2;
    }));
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.queue_id < b.queue_id; });
    const auto& scored = rows[0];
    CHECK(scored.queue_id == "4QxYz1AbCd");
    CHECK(scored.client_address == "192.0.2.25");
    CHECK(scored.helo == "mail.example.net\xEF\xBF\xBD");
    CHECK(scored.message_id == "<opening.1@example.org>");
    CHECK(scored.to == "Team <team@example.org>");
    CHECK(scored.scored);
    CHECK(scored.reason.empty());
    const auto& let_through = rows[1];
    CHECK(let_through.queue_id == "4QxYz2EfGh");
    CHECK_FALSE(let_through.scored);
    CHECK(let_through.action == "skipped");
    CHECK(let_through.reason == "authenticated sender");
    CHECK(let_through.client_address == "192.0.2.25");  // the connection's, still
    CHECK(let_through.message_id == "<own@example.org>");
    CHECK(scored.signature);
    CHECK_FALSE(let_through.signature);  // not scored: no signature, a line id of its own
    CHECK(let_through.id != scored.id);
    // Found by its queue ID, as an administrator holding a mail log line would.
    store::HistoryQuery q;
    q.queue_id = "4QxYz2EfGh";
    const auto found = store::SqliteDatabase(d.dir / "model.db", store::Database::Mode::read_only).history(q);
    REQUIRE(found.size() == 1);
    CHECK(found[0].id == let_through.id);
}

TEST_CASE("The same message delivered twice is two history lines, each found by its queue ID and recipient",
          "[mailsiftd]") {
    Daemon d("stats_interval = 1\n");
    d.train();
    d.start();
    REQUIRE(eventually([&] { return d.log().find("loaded model") != std::string::npos; }));
    Client c(d.socket);
    c.negotiate();
    // Identical bytes (as a relay passes them, with no Received field of the MTA's own), two transactions.
    const std::string same = "From: <cafe@example.org>\nMessage-ID: <same@example.org>\nSubject: Twice\n\nthe same bytes\n";
    const std::pair<std::string, std::string> deliveries[] = {{"4QxVic3", "<victim3@corp.example>"},
                                                              {"4QxCeo1", "<ceo@corp.example>"}};
    std::vector<std::string> signatures;
    for (const auto& [queue_id, recipient] : deliveries) {
        c.send(frame('D', "R" + z("i") + z(queue_id)));
        signatures.push_back(header_value(c.message(same, recipient), "X-Mailsift-Signature"));
    }
    const auto signature = engine::parse_signature(signatures[0]);
    REQUIRE(signature);
    REQUIRE(signatures[1] == signatures[0]);  // one message, one signature
    std::vector<store::HistoryEntry> rows;
    REQUIRE(eventually([&] {
        store::SqliteDatabase db(d.dir / "model.db", store::Database::Mode::read_only);
        rows = db.history({});
        return rows.size() == 2;
    }));
    CHECK(rows[0].id != rows[1].id);
    store::SqliteDatabase db(d.dir / "model.db", store::Database::Mode::read_only);
    for (const auto& [queue_id, recipient] : deliveries) {
        INFO(queue_id);
        store::HistoryQuery q;
        q.queue_id = queue_id;
        auto found = db.history(q);
        REQUIRE(found.size() == 1);
        CHECK(found[0].recipients == recipient);
        CHECK(found[0].signature == *signature);
        q = {};
        q.recipient = recipient;
        found = db.history(q);
        REQUIRE(found.size() == 1);
        CHECK(found[0].queue_id == queue_id);
    }
}

TEST_CASE("Each scored message leaves a history line and no Subject when history_subjects is off", "[mailsiftd]") {
    const bool subjects = GENERATE(true, false);
    Daemon d(std::string("stats_interval = 1\n") + (subjects ? "" : "history_subjects = off\n"));
    d.train();
    d.start();
    REQUIRE(eventually([&] { return d.log().find("loaded model") != std::string::npos; }));
    Client c(d.socket);
    c.negotiate();
    const auto replies = c.message("From: =?UTF-8?Q?Caf=C3=A9?= <cafe@example.org>\nSubject: Opening hours <b>today</b>\n\nopen at nine\n");
    INFO("X-Mailsift-Status: " << header_value(replies, "X-Mailsift-Status"));
    const auto id = engine::parse_signature(header_value(replies, "X-Mailsift-Signature"));
    REQUIRE(id);
    std::vector<store::HistoryEntry> rows;
    REQUIRE(eventually([&] {
        store::SqliteDatabase db(d.dir / "model.db", store::Database::Mode::read_only);
        rows = db.history({});
        return !rows.empty();
    }));
    REQUIRE(rows.size() == 1);
    const auto& e = rows[0];
    CHECK(e.signature == *id);
    CHECK(e.sender == "<sender@example.net>");
    CHECK(e.recipients == "<user@example.org>");
    CHECK(e.from == "Café <cafe@example.org>");
    CHECK(e.subject == (subjects ? "Opening hours <b>today</b>" : ""));
    CHECK(e.action == "accepted");
    CHECK(header_value(replies, "X-Mailsift-Status").rfind(engine::verdict_word(e.verdict), 0) == 0);
    CHECK(e.size > 0);
    // Its score taken apart as it was scored (the console's explanation), adding up to the probability given.
    store::HistoryQuery q;
    q.signature = *id;
    q.explanations = true;
    const auto kept = store::SqliteDatabase(d.dir / "model.db", store::Database::Mode::read_only).history(q);
    REQUIRE(kept.size() == 1);
    if (!subjects) {
        // It quotes the message, its Subject among the rest: not kept where Subject lines are not.
        CHECK(kept[0].explanation.empty());
        return;
    }
    const auto parts = engine::decode_score_parts(kept[0].explanation);
    REQUIRE(parts);
    REQUIRE(parts->linear);  // the default scorer
    const auto& l = *parts->linear;
    double z = l.score.bias + l.score.nb_weight * l.score.nb_input + l.split.others_sum;
    for (const auto& w : l.split.toward_spam) z += w.weight;
    for (const auto& w : l.split.toward_ham) z += w.weight;
    CHECK(z == Approx(parts->log_odds).margin(1e-6));
    // P(spam) = σ(z / T), T the linear scorer's temperature (the default here).
    CHECK(mailsift::model::probability_from_log_odds(z / mailsift::model::LinearParameters{}.temperature) ==
          Approx(e.probability).margin(1e-6));
    CHECK(l.split.toward_spam.size() + l.split.toward_ham.size() > 0);
}

TEST_CASE("Started as root with user set, the daemon runs as that user and owns its socket", "[mailsiftd]") {
    if (::geteuid() != 0) {
        WARN("needs root to start as root (CI runs as root); not checked here");
        return;
    }
    const struct passwd* pw = ::getpwnam("nobody");
    REQUIRE(pw != nullptr);
    const uid_t uid = pw->pw_uid;
    const gid_t gid = pw->pw_gid;
    Daemon d("user = nobody\n");
    d.train();
    // What the daemon needs as nobody: its directory (to remove the socket) and the database.
    for (const auto& p : {d.dir, d.dir / "model.db"}) REQUIRE(::chown(p.c_str(), uid, gid) == 0);
    d.start();
    REQUIRE(eventually([&] { return d.log().find("loaded model") != std::string::npos; }));
    REQUIRE(d.log().find("running as nobody") != std::string::npos);

    // Real, effective, saved and filesystem ids all changed, for good.
    std::ifstream status("/proc/" + std::to_string(d.pid) + "/status");
    std::string line, uids, gids;
    while (std::getline(status, line)) {
        if (line.rfind("Uid:", 0) == 0) uids = line;
        if (line.rfind("Gid:", 0) == 0) gids = line;
    }
    const std::string u = std::to_string(uid), g = std::to_string(gid);
    REQUIRE(uids == "Uid:\t" + u + "\t" + u + "\t" + u + "\t" + u);
    REQUIRE(gids == "Gid:\t" + g + "\t" + g + "\t" + g + "\t" + g);

    struct stat st{};
    REQUIRE(::stat(d.socket.c_str(), &st) == 0);
    REQUIRE(st.st_uid == uid);
    REQUIRE((st.st_mode & 0777) == 0660);
    REQUIRE(d.stop(SIGTERM) == std::optional<int>(0));
    REQUIRE_FALSE(fs::exists(d.socket));
}

TEST_CASE("An unknown user stops the start with a clear error", "[mailsiftd]") {
    if (::geteuid() != 0) {
        WARN("needs root to start as root (CI runs as root); not checked here");
        return;
    }
    Daemon d("user = no-such-user-mailsift\n");
    const std::string cmd = daemon_binary + " --foreground --config " + (d.dir / "mailsift.conf").string() + " 2>" +
                            (d.dir / "daemon.log").string();
    const int rc = std::system(cmd.c_str());
    REQUIRE(WIFEXITED(rc));
    REQUIRE(WEXITSTATUS(rc) != 0);
    REQUIRE(d.log().find("no-such-user-mailsift: no such user") != std::string::npos);
}

// An X-Mailsift-Status says what `mailsift classify` printed for the same
// message ("PATH<TAB>VERDICT<TAB>P<TAB>LOG_ODDS"): the same P, the same verdict.
static void status_matches_classify(const std::string& status, const std::string& line) {
    std::istringstream fields(line);
    std::string path, verdict, p;
    std::getline(fields, path, '\t');
    std::getline(fields, verdict, '\t');
    std::getline(fields, p, '\t');
    const auto at = status.find("score=");
    REQUIRE(at != std::string::npos);
    REQUIRE(std::stod(status.substr(at + 6)) == Approx(std::stod(p)).margin(0.00005 + 1e-9));
    REQUIRE(status.rfind(verdict == "spam" ? "Yes" : verdict == "ham" ? "No" : "Unsure", 0) == 0);
}

TEST_CASE("With model = linear the daemon scores with the stored weights, as classify does", "[mailsiftd]") {
    Daemon d("model = linear\n");
    const std::string with = cli + " --config " + (d.dir / "mailsift.conf").string();
    REQUIRE(std::system((with + " learn --spam " + data + "/spam_money_offer.eml " + data + "/spam_cheap_pills.eml " +
                         data + "/spam_investment.eml >/dev/null")
                            .c_str()) == 0);
    REQUIRE(std::system((with + " learn --ham " + data + "/ham_meeting_notes.eml " + data + "/ham_patch_review.eml " +
                         data + "/ham_build_report.eml >/dev/null")
                            .c_str()) == 0);
    d.start();
    REQUIRE(eventually([&] { return d.log().find("loaded model") != std::string::npos; }));
    Client c(d.socket);
    c.negotiate();
    const std::string status = header_value(c.message(spam), "X-Mailsift-Status");
    INFO(status << "\n" << d.log());
    // classify, same configuration, same message.
    std::ofstream(d.dir / "m.eml") << spam;
    const std::string line = run(with + " classify " + (d.dir / "m.eml").string());
    status_matches_classify(status, line);
    // The naive-Bayes score of the same counts is another number: the daemon did not fall back to it.
    std::ofstream(d.dir / "nb.conf") << "model = naive_bayes\n";
    const std::string nb = run(cli + " --config " + (d.dir / "nb.conf").string() + " --db " + d.database + " classify " +
                               (d.dir / "m.eml").string());
    REQUIRE(nb != line);
}

TEST_CASE("The daemon scores with the settings kept with the model, and logs where its configuration disagrees",
          "[mailsiftd]") {
    Daemon d("linear_step = 8\nlinear_ngram_bytes = 500\n");
    // Trained by a CLI with the built-in settings.
    const std::string plain = cli + " --config /dev/null --db " + d.database;
    REQUIRE(std::system((plain + " learn --spam " + data + "/spam_money_offer.eml " + data + "/spam_cheap_pills.eml >/dev/null")
                            .c_str()) == 0);
    REQUIRE(std::system((plain + " learn --ham " + data + "/ham_meeting_notes.eml " + data + "/ham_patch_review.eml >/dev/null")
                            .c_str()) == 0);
    d.start();
    REQUIRE(eventually([&] { return d.log().find("loaded model") != std::string::npos; }));
    INFO(d.log());
    REQUIRE(d.log().find("warning: the configuration sets linear_ngram_bytes = 500, but the model in this database was "
                         "trained with 3000; using 3000") != std::string::npos);
    REQUIRE(d.log().find("linear_step = 8") != std::string::npos);
    Client c(d.socket);
    c.negotiate();
    const std::string status = header_value(c.message(spam), "X-Mailsift-Status");
    std::ofstream(d.dir / "m.eml") << spam;
    status_matches_classify(status, run(plain + " classify " + (d.dir / "m.eml").string()));
}
