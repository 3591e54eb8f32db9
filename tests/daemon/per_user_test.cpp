// per_user = recipient with the real mailsiftd over the milter protocol: a
// message with one recipient is scored with that recipient's layer and its
// scan remembers whom for, so that a correction of the delivered copy moves
// that recipient's next verdict on such mail more than another's; a message
// with several recipients is scored by the site's model alone.
#include <nlohmann/json.hpp>

#include "../support/backends.hpp"
#include "daemon_support.hpp"

using namespace daemon_test;

namespace {

const std::string newsletter = "From: Weekly Deals <news@deals.example>\nSubject: This week's gadget deals\n\n"
                               "Our editors picked this week's best gadget deals, with tips on laptops and phones.\n";

// The uncalibrated log-odds of X-Mailsift-Status.
double log_odds(const std::vector<std::pair<char, std::string>>& replies) {
    const std::string status = header_value(replies, "X-Mailsift-Status");
    const auto at = status.find("uncalibrated-log-odds=");
    REQUIRE(at != std::string::npos);
    return std::stod(status.substr(at + 22));
}

}  // namespace

TEST_CASE("per_user = recipient: one recipient's correction moves their verdicts, several recipients get the site's",
          "[mailsiftd][per_user]") {
    Daemon d("per_user = recipient\nstats_interval = 1\n");
    start_trained_daemon(d);
    Client c(d.socket);
    c.negotiate();
    const double bob_before = log_odds(c.message(newsletter, "<bob@example.org>"));
    const double carol_before = log_odds(c.message(newsletter, "<carol@example.org>"));
    const double both_before = log_odds(c.message(newsletter, std::vector<std::string>{"<bob@example.org>", "<carol@example.org>"}));

    // bob's copy, scored for him; its scan written, then bob moves it to Junk.
    const auto replies = c.message(newsletter, "<Bob@Example.org>");
    const std::string signature = header_value(replies, "X-Mailsift-Signature");
    REQUIRE(signature.size() == 32);
    const std::string db = (d.dir / "model.db").string();
    REQUIRE(eventually([&] {
        return std::system((cli + " --db " + db + " tokens --signature " + signature + " >/dev/null 2>&1").c_str()) == 0;
    }));
    REQUIRE(std::system((cli + " --config " + (d.dir / "mailsift.conf").string() + " correct --spam --signature " + signature +
                         " >/dev/null").c_str()) == 0);
    REQUIRE(eventually([&] { return log_odds(c.message(newsletter, "<bob@example.org>")) > bob_before + 0.1; }));

    const double bob_moved = log_odds(c.message(newsletter, "<bob@example.org>")) - bob_before;
    const double carol_moved = log_odds(c.message(newsletter, "<carol@example.org>")) - carol_before;
    const double both_moved =
        log_odds(c.message(newsletter, std::vector<std::string>{"<bob@example.org>", "<carol@example.org>"})) - both_before;
    CHECK(bob_moved > carol_moved + 1.0);
    // Two recipients: the site's model, as a user who never corrected sees it.
    CHECK(both_moved == Approx(carol_moved).margin(0.05));

    // The administrator's view of bob's layer, and taking it back.
    const std::string conf = cli + " --config " + (d.dir / "mailsift.conf").string();
    const std::string stats = run(conf + " stats --user Bob@Example.org");
    CHECK(stats.find("1 to spam, 0 to ham in the layer") != std::string::npos);
    CHECK(stats.find("news@deals.example") != std::string::npos);
    // His error rates: the copy he moved was not called spam, and was among his messages.
    CHECK(stats.find("error rates:       false positives 0.000% (0), false negatives ") != std::string::npos);
    CHECK((stats.find("% (1) of ") != std::string::npos || stats.find("; 1 unsure corrected") != std::string::npos));
    const auto j = nlohmann::json::parse(run(conf + " stats --user bob@example.org --json"));
    CHECK(j["errors"]["false_negatives"].get<int>() + j["errors"]["unsure"].get<int>() == 1);
    CHECK(j["history_lines"].get<int>() >= 2);  // his copies, and the one to both
    CHECK(j["errors"]["false_negative_percent"].get<double>() ==
          Approx(100.0 * j["errors"]["false_negatives"].get<double>() / j["history_lines"].get<double>()));
    CHECK(run(conf + " stats").find("per-user layers (per_user = recipient): 1 users, 1 standing corrections") !=
          std::string::npos);
    // Every user with a layer, listed without knowing their address.
    const auto listed = nlohmann::json::parse(run(conf + " stats --users --json"));
    REQUIRE(listed["users"].size() == 1);
    CHECK(listed["users"][0]["user"] == "bob@example.org");
    CHECK(listed["users"][0]["to_spam"] == 1);
    CHECK(listed["users"][0]["to_ham"] == 0);
    CHECK(listed["users"][0]["senders"] == 1);
    CHECK(listed["users"][0]["last_at"].get<std::int64_t>() > 0);
    CHECK(run(conf + " stats --users").find("bob@example.org") != std::string::npos);
    CHECK(std::system((conf + " stats --users --user bob@example.org >/dev/null 2>&1").c_str()) != 0);
    CHECK(run(conf + " stats --user carol@example.org").find("(none: the user is scored by the site's model)") !=
          std::string::npos);
    CHECK(run(conf + " forget-user bob@example.org").find("1 corrections (1 to spam, 0 to ham), 1 senders") !=
          std::string::npos);
    // bob is scored as carol again (as far apart as before his correction): the
    // site keeps what it learned from it (and mailsiftd's refit since moved both).
    REQUIRE(eventually([&] {
        const double bob = log_odds(c.message(newsletter, "<bob@example.org>"));
        const double carol = log_odds(c.message(newsletter, "<carol@example.org>"));
        return std::abs((bob - carol) - (bob_before - carol_before)) < 0.1;
    }));
    CHECK(run(conf + " stats --user bob@example.org").find("(none: the user is scored by the site's model)") !=
          std::string::npos);
    CHECK(run(conf + " forget-user bob@example.org").find("0 corrections") != std::string::npos);  // nothing twice
    CHECK(run(conf + " stats").find("0 users, 0 standing corrections") != std::string::npos);
    CHECK(nlohmann::json::parse(run(conf + " stats --users --json"))["users"].empty());
    CHECK(std::system((conf + " forget-user not-an-address >/dev/null 2>&1").c_str()) != 0);
}

TEST_CASE("stats --user prints a sender from the wire with its control bytes escaped", "[mailsiftd][per_user]") {
    Daemon d("per_user = recipient\nstats_interval = 1\n");
    start_trained_daemon(d);
    Client c(d.socket);
    c.negotiate();
    const std::string hostile = "From: <evil\x1b[31m@deals.example>\nSubject: deals\n\nOur gadget deals.\n";
    const std::string signature = header_value(c.message(hostile, "<bob@example.org>"), "X-Mailsift-Signature");
    const std::string db = (d.dir / "model.db").string();
    REQUIRE(eventually([&] {
        return std::system((cli + " --db " + db + " tokens --signature " + signature + " >/dev/null 2>&1").c_str()) == 0;
    }));
    const std::string conf = cli + " --config " + (d.dir / "mailsift.conf").string();
    REQUIRE(std::system((conf + " correct --spam --signature " + signature + " >/dev/null").c_str()) == 0);
    const std::string stats = run(conf + " stats --user bob@example.org");
    CHECK(stats.find("evil\\x1B[31m@deals.example") != std::string::npos);
    CHECK(stats.find('\x1b') == std::string::npos);

    // A name pasted from the wire and refused: its error names it escaped, on
    // one line (a CR or LF cannot forge a second).
    for (const std::string command : {"forget-user", "stats --user"}) {
        const std::string refused =
            run(conf + " " + command + " \"$(printf 'evil\\033[31m\\r\\nmailsift: forged line')\" 2>&1; echo \"exit $?\"");
        CHECK(refused.find("evil\\x1B[31m\\x0D\\x0Amailsift: forged line: neither an address") != std::string::npos);
        CHECK(refused.find('\x1b') == std::string::npos);
        CHECK(refused.find('\r') == std::string::npos);
        CHECK(refused.find("exit 2") != std::string::npos);
    }
}

TEST_CASE("per_user: a recipient with a CR, a NUL or a forged log line is no user, and logs nothing of it",
          "[mailsiftd][per_user]") {
    Daemon d("per_user = recipient\nstats_interval = 1\n");
    start_trained_daemon(d);
    Client c(d.socket);
    c.negotiate();
    const double site = log_odds(c.message(newsletter, std::vector<std::string>{"<a@example.org>", "<b@example.org>"}));
    for (const std::string& rcpt : {std::string("<a\r@example.org>"), std::string("<a\0b@example.org>", 18),
                                   std::string("<a@example.org\n<6>console audit: sign-in ok>")}) {
        const auto replies = c.message(newsletter, rcpt);
        CHECK(log_odds(replies) == Approx(site).margin(0.01));  // scored as the site: no layer
        const std::string signature = header_value(replies, "X-Mailsift-Signature");
        // Its scan, once written, holds no user.
        const std::string tokens = cli + " --db " + (d.dir / "model.db").string() + " tokens --signature " + signature;
        REQUIRE(eventually([&] { return std::system((tokens + " >/dev/null 2>&1").c_str()) == 0; }));
        CHECK(run(tokens).find("user") == std::string::npos);
    }
    check_one_line_events(d);
}

TEST_CASE("A fleet: a user's correction of one daemon's scan moves their verdicts on another daemon, not others'",
          "[mailsiftd][per_user]") {
    FOR_EACH_BACKEND(store_);
    Daemon a("per_user = recipient\nstats_interval = 1\n", store_.location());
    Daemon b("per_user = recipient\nstats_interval = 1\n", store_.location());
    start_trained_daemon(a);  // trains the model both share
    b.start();
    REQUIRE(eventually([&] { return b.log().find("loaded model") != std::string::npos; }));
    Client ca(a.socket), cb(b.socket);
    ca.negotiate();
    cb.negotiate();
    // Each user's copy, as an MTA that names the recipient delivers it (one
    // content is one scan: the last recipient's).
    auto copy = [](const std::string& user) { return "Received: by mx.example.org for <" + user + ">\n" + newsletter; };
    const double bob_before = log_odds(cb.message(copy("bob@example.org"), "<bob@example.org>"));
    const double carol_before = log_odds(cb.message(copy("carol@example.org"), "<carol@example.org>"));

    // bob's copy came through daemon a; he moves it to Junk.
    const std::string signature =
        header_value(ca.message(copy("bob@example.org"), "<bob@example.org>"), "X-Mailsift-Signature");
    const std::string conf = cli + " --config " + (a.dir / "mailsift.conf").string();
    REQUIRE(eventually([&] { return std::system((conf + " tokens --signature " + signature + " >/dev/null 2>&1").c_str()) == 0; }));
    REQUIRE(std::system((conf + " correct --spam --signature " + signature + " >/dev/null").c_str()) == 0);

    // Daemon b sees it: bob's next copy moves further than carol's, by his layer.
    double bob = 0, carol = 0;
    const bool moved = eventually([&] {
        bob = log_odds(cb.message(copy("bob@example.org"), "<bob@example.org>")) - bob_before;
        carol = log_odds(cb.message(copy("carol@example.org"), "<carol@example.org>")) - carol_before;
        return carol > 0.0 && bob > carol + 1.0;
    });
    INFO("bob's copy moved " << bob << " log-odds, carol's " << carol);
    REQUIRE(moved);
}
