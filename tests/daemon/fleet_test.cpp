// A fleet: two real mailsiftd on one database of the private PostgreSQL that
// CTest starts (tests/support/postgres.sh), the real `mailsift` CLI as a third
// host. What one learns or corrects reaches both; a scan one daemon recorded
// is corrected from anywhere, once.
#include "../support/backends.hpp"
#include "daemon_support.hpp"

using namespace daemon_test;
using mailsift::testing::TestStore;

namespace {

// The score=... (P(spam)) of X-Mailsift-Status, or NaN.
double score_of(const std::vector<std::pair<char, std::string>>& replies) {
    const std::string status = added_status(replies);
    const auto at = status.find("score=");
    if (at == std::string::npos) return std::nan("");
    return std::stod(status.substr(at + 6));
}

const std::string newsletter =
    "From: Garden Club <news@garden.example>\nSubject: spring seeds and compost\n\n"
    "Our spring seeds arrived: tomatoes, beans and compost tips for the allotment.\n";

}  // namespace

TEST_CASE("Two daemons on one PostgreSQL database score from one model that any host trains", "[mailsiftd][postgresql]") {
    TestStore pg("postgresql");
    const std::string db = "'" + pg.location() + "'";
    Daemon a("stats_interval = 1\nrefresh_interval = 1000\n", pg.location());
    // b writes its scans every 5 s: a correction right after its scan comes first.
    Daemon b("stats_interval = 5\nrefresh_interval = 1000\n", pg.location());
    a.train();
    a.start();
    b.start();
    REQUIRE(eventually([&] { return a.log().find("loaded model") != std::string::npos; }));
    REQUIRE(eventually([&] { return b.log().find("loaded model") != std::string::npos; }));
    REQUIRE(a.log().find(pg.location()) != std::string::npos);  // the log names the database
    Client ca(a.socket), cb(b.socket);
    ca.negotiate();
    cb.negotiate();
    const double before_a = score_of(ca.message(newsletter)), before_b = score_of(cb.message(newsletter));
    REQUIRE(before_a == before_b);
    REQUIRE(before_a > 0.2);  // the fixtures' model does not take it for ham yet

    // A third host learns the newsletter as ham: both daemons take the change
    // in by applying the changed features, not by rereading the model.
    std::ofstream(a.dir / "newsletter.eml") << newsletter;
    REQUIRE(run(cli + " --db " + db + " learn --ham " + (a.dir / "newsletter.eml").string()).find("learned 1") !=
            std::string::npos);
    REQUIRE(eventually([&] { return score_of(ca.message(newsletter)) < 0.1; }));
    REQUIRE(eventually([&] { return score_of(cb.message(newsletter)) < 0.1; }));
    REQUIRE(score_of(ca.message(newsletter)) == score_of(cb.message(newsletter)));
    REQUIRE(b.log().find("reloaded model (applied ") != std::string::npos);

    // A scan recorded by daemon a is corrected by signature from the third host,
    // and counts once however often and from wherever it is repeated.
    const auto replies = ca.message(spam);
    const std::string signature = header_value(replies, "X-Mailsift-Signature");
    REQUIRE(signature.size() == 32);
    const std::string stats = cli + " --db " + db + " stats --json";
    REQUIRE(eventually([&] { return run(stats).find("\"signatures\":") != std::string::npos &&
                                    run(cli + " --db " + db + " tokens --signature " + signature + " 2>&1")
                                            .find("w:prize") != std::string::npos; }));
    const std::string corrected = run(cli + " --db " + db + " correct --ham --signature " + signature);
    REQUIRE(corrected.find("1 by signature") != std::string::npos);
    // The scan is the lottery message the fleet learned as spam (one digest, from a
    // file or over the milter protocol): moved to ham.
    const std::string after_one = run(stats);
    REQUIRE(after_one.find("\"messages\":{\"spam\":3,\"ham\":6}") != std::string::npos);
    REQUIRE(run(cli + " --db " + db + " correct --ham --signature " + signature + " 2>&1").find("already") !=
            std::string::npos);
    REQUIRE(run(stats).find("\"messages\":{\"spam\":3,\"ham\":6}") != std::string::npos);

    // Corrected before daemon b has written its scan: kept, and trained once when b writes it.
    const auto from_b = cb.message(spam + "\nAnother prize, another day.\n");
    const std::string early = header_value(from_b, "X-Mailsift-Signature");
    REQUIRE(early.size() == 32);
    const std::string deferred = run(cli + " --db " + db + " correct --spam --signature " + early + " 2>&1");
    if (deferred.find("waiting for") != std::string::npos) {
        REQUIRE(eventually([&] { return run(stats).find("\"messages\":{\"spam\":4,\"ham\":6}") != std::string::npos; },
                           std::chrono::seconds(15)));
    } else {
        // b wrote the scan first after all (it can flush just then): trained at once.
        REQUIRE(deferred.find("1 by signature") != std::string::npos);
    }
    REQUIRE(run(stats).find("\"messages\":{\"spam\":4,\"ham\":6}") != std::string::npos);
}
