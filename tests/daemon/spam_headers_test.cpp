// What mail clients and an administrator checking the path see (issue 58):
// with spam_headers, mailsiftd writes SpamAssassin's X-Spam-Flag and
// X-Spam-Status (a sender's own removed first); and the GTUBE test string is
// spam, as SpamAssassin and rspamd say, whatever the model.
#include "daemon_support.hpp"

using namespace daemon_test;

namespace {

const std::string gtube = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X";

bool deleted(const std::vector<std::pair<char, std::string>>& replies, const std::string& name) {
    for (const auto& [n, index] : deletions(replies)) {
        if (n == name && index == 1) return true;
    }
    return false;
}

}  // namespace

TEST_CASE("spam_headers writes X-Spam-Flag and X-Spam-Status, removing a sender's own, and GTUBE is spam",
          "[mailsiftd]") {
    Daemon d("spam_headers = on\n");
    start_trained_daemon(d);
    Client c(d.socket);
    c.negotiate();

    // A message that says it is no spam, and carries GTUBE in a mail the model calls ham.
    const std::string forged = "X-Spam-Flag: NO\nX-Spam-Status: No, score=-5.0\n" + ham.substr(0, ham.size() - 1) +
                               " " + gtube + "\n";
    auto replies = c.message(forged);
    CHECK(deleted(replies, "X-Spam-Flag"));
    CHECK(deleted(replies, "X-Spam-Status"));
    CHECK(header_value(replies, "X-Spam-Flag") == "YES");
    CHECK(header_value(replies, "X-Spam-Status").rfind("Yes, score=1.0000 tests=MAILSIFT_SPAM version=mailsift", 0) == 0);
    CHECK(header_value(replies, "X-Mailsift-Status").rfind("Yes, score=1.0000, uncalibrated-log-odds=1000.00", 0) == 0);

    // The same mail without it: ham, no flag, and the status says No.
    replies = c.message(ham);
    CHECK(header_value(replies, "X-Mailsift-Status").rfind("No, ", 0) == 0);
    CHECK(header_value(replies, "X-Spam-Flag").empty());
    CHECK(header_value(replies, "X-Spam-Status").rfind("No, score=", 0) == 0);
    CHECK(header_value(replies, "X-Spam-Status").find("tests=MAILSIFT_HAM") != std::string::npos);

    // The CLI says what the milter said: the same code.
    std::ofstream(d.dir / "gtube.eml") << forged;
    CHECK(run(cli + " --db " + d.database + " classify " + (d.dir / "gtube.eml").string()).find("\tspam\t1\t1000") != std::string::npos);
}

TEST_CASE("Without spam_headers a message's own X-Spam fields are left as they came", "[mailsiftd]") {
    Daemon d;
    start_trained_daemon(d);
    Client c(d.socket);
    c.negotiate();
    const auto replies = c.message("X-Spam-Status: No, score=-5.0\n" + ham);
    CHECK_FALSE(deleted(replies, "X-Spam-Status"));
    CHECK(header_value(replies, "X-Spam-Status").empty());
    CHECK(header_value(replies, "X-Spam-Flag").empty());
}
