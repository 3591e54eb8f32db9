// Whose corrections (issue 58), with the real mailsiftd and `mailsift correct`
// on a real correction socket: a peer corrects and undoes only what its own
// user's mail taught, and only a trusted peer (correct_trusted) names the user.
// The attacker's cases are the point: another user's scan by signature, a
// self-written message carrying another user's signature, --user naming a
// victim, an undo or a withdrawal of another user's correction. Each is
// refused ("not permitted", exit status 1), logged with the peer, and changes
// nothing of the victim's.
#include "daemon_support.hpp"

using namespace daemon_test;

namespace {

const std::string weekly_deals = "From: Weekly Deals <news@deals.example>\nSubject: This week's gadget deals\n\n"
                               "Our editors picked this week's best gadget deals, with tips on laptops and phones.\n";

// A copy of the weekly_deals delivered to `user` alone (its own content, so its own scan).
std::string copy_for(const std::string& user) { return "Received: by mx.example.org for <" + user + ">\n" + weekly_deals; }

struct Site {
    Daemon d;
    std::string conf;

    explicit Site(const std::string& trusted) : d("per_user = recipient\nstats_interval = 1\n" + trusted) {
        std::ofstream(d.dir / "mailsift.conf", std::ios::app) << "correct_socket = " << (d.dir / "correct.sock").string() << "\n";
        conf = cli + " --config " + (d.dir / "mailsift.conf").string();
        start_trained_daemon(d);
    }

    // The signature of `user`'s copy, once its scan is written.
    std::string deliver(const std::string& user) {
        Client c(d.socket);
        c.negotiate();
        const std::string signature = header_value(c.message(copy_for(user), "<" + user + ">"), "X-Mailsift-Signature");
        REQUIRE(signature.size() == 32);
        REQUIRE(eventually([&] {
            return std::system((conf + " tokens --signature " + signature + " >/dev/null 2>&1").c_str()) == 0;
        }));
        return signature;
    }

    // The command's output and exit status, as "OUTPUT\nexit N".
    std::string correct(const std::string& args) { return run(conf + " correct " + args + " 2>&1; echo \"exit $?\""); }
    std::string layer(const std::string& user) { return run(conf + " stats --user " + user); }
};

const std::string refused = "not permitted: the message of signature ";
const std::string untouched = "(none: the user is scored by the site's model)";

}  // namespace

TEST_CASE("A peer not in correct_trusted corrects its own mail only, as its login", "[correct_socket][per_user]") {
    Site s("correct_trusted = nobody\n");  // the tests' own user (root in CI) is not trusted here
    const std::string mine = unix_user_name() + "@example.org";
    const std::string victim = s.deliver("victim@example.org");
    const std::string own = s.deliver(mine);

    // The victim's scan by signature: refused, exit status 1, logged with the peer.
    std::string out = s.correct("--spam --signature " + victim);
    CHECK(out.find(refused + victim + " was delivered to another user") != std::string::npos);
    CHECK(out.find("exit 1") != std::string::npos);
    CHECK(s.d.log().find("refused a correction request from socket:" + unix_user_name() + ": not permitted") != std::string::npos);
    // A message of one's own making that carries the victim's signature: the same.
    std::ofstream(s.d.dir / "forged.eml") << "X-Mailsift-Status: No\nX-Mailsift-Signature: " << victim << "\n"
                                          << "From: hr@example.org\nSubject: your contract\n\nSee the attached contract.\n";
    out = s.correct("--spam " + (s.d.dir / "forged.eml").string());
    CHECK(out.find(refused + victim + " was delivered to another user") != std::string::npos);
    CHECK(out.find("exit 1") != std::string::npos);
    // Naming the victim: only a trusted corrector may name another user.
    out = s.correct("--spam --user victim@example.org --signature " + own);
    CHECK(out.find("is not the Unix user " + unix_user_name() + "'s own address") != std::string::npos);
    CHECK(out.find("exit 1") != std::string::npos);
    CHECK(s.layer("victim@example.org").find(untouched) != std::string::npos);
    // A name with a CR, LF and a forged line (Dovecot logs what the pipe writes): said escaped, on one line.
    out = s.correct("--spam --user \"$(printf 'a\\r\\nmailsift: console audit: forged')\" --signature " + own);
    CHECK(out.find("--user a\\x0D\\x0Amailsift: console audit: forged: neither an address") != std::string::npos);
    CHECK(out.find('\r') == std::string::npos);
    CHECK(out.find("exit 2") != std::string::npos);

    // Its own copy: corrected, into its own layer.
    out = s.correct("--spam --signature " + own);
    CHECK(out.find("corrected to spam: 1 by signature") != std::string::npos);
    CHECK(out.find("exit 0") != std::string::npos);
    CHECK(s.layer(mine).find("1 to spam, 0 to ham in the layer") != std::string::npos);

    // The victim's own correction, made by an administrator writing the database
    // for them, cannot be undone by this peer; it stands.
    std::ofstream(s.d.dir / "admin.conf") << "database = " << s.d.database << "\nper_user = recipient\n";
    REQUIRE(std::system((cli + " --config " + (s.d.dir / "admin.conf").string() +
                         " correct --spam --user victim@example.org --signature " + victim + " >/dev/null")
                            .c_str()) == 0);
    out = s.correct("--undo --signature " + victim);
    CHECK(out.find(refused + victim + " has a correction made for another user") != std::string::npos);
    CHECK(out.find("exit 1") != std::string::npos);
    CHECK(s.layer("victim@example.org").find("1 to spam, 0 to ham in the layer") != std::string::npos);
    // Its own, it may.
    CHECK(s.correct("--undo --signature " + own).find("exit 0") != std::string::npos);
    CHECK(s.layer(mine).find(untouched) != std::string::npos);
    check_one_line_events(s.d);
}

TEST_CASE("A trusted peer names the user (virtual users): that user corrects and undoes only their own",
          "[correct_socket][per_user]") {
    Site s("correct_trusted = nobody, " + unix_user_name() + "\n");  // as vmail would be, with virtual users
    const std::string a = s.deliver("a@example.org");
    const std::string b = s.deliver("b@example.org");

    // B, through the trusted pipe, moves A's copy (or APPENDs a message with A's signature): refused.
    std::string out = s.correct("--spam --user b@example.org --signature " + a);
    CHECK(out.find(refused + a + " was delivered to another user") != std::string::npos);
    CHECK(out.find("exit 1") != std::string::npos);
    CHECK(s.layer("a@example.org").find(untouched) != std::string::npos);
    // A's own move, and B's of B's copy: each in their own layer.
    CHECK(s.correct("--spam --user a@example.org --signature " + a).find("exit 0") != std::string::npos);
    CHECK(s.correct("--ham --user b@example.org --signature " + b).find("exit 0") != std::string::npos);
    CHECK(s.layer("a@example.org").find("1 to spam, 0 to ham in the layer") != std::string::npos);
    CHECK(s.layer("b@example.org").find("0 to spam, 1 to ham in the layer") != std::string::npos);
    // B cannot undo A's correction; A can; so can an administrator (no --user).
    out = s.correct("--undo --user b@example.org --signature " + a);
    CHECK(out.find(refused + a + " has a correction made for another user") != std::string::npos);
    CHECK(s.layer("a@example.org").find("1 to spam, 0 to ham in the layer") != std::string::npos);
    CHECK(s.correct("--undo --user a@example.org --signature " + a).find("exit 0") != std::string::npos);
    CHECK(s.layer("a@example.org").find(untouched) != std::string::npos);
    CHECK(s.correct("--undo --signature " + b).find("exit 0") != std::string::npos);
    CHECK(s.layer("b@example.org").find(untouched) != std::string::npos);

    // A name mailsiftd never delivered to, even from the trusted pipe: refused, no layer, no user listed.
    std::ofstream(s.d.dir / "untagged.eml") << weekly_deals;
    out = s.correct("--spam --user invented@example.org " + (s.d.dir / "untagged.eml").string());
    CHECK(out.find("not permitted: mailsiftd has delivered no mail to invented@example.org") != std::string::npos);
    CHECK(out.find("exit 1") != std::string::npos);
    CHECK(run(s.conf + " stats --users").find("invented@example.org") == std::string::npos);

    // A correction waiting for a scan not written yet (another daemon's, in a
    // fleet) is withdrawn only by the user who asked for it.
    const std::string waiting = "0123456789abcdef0123456789abcdef";
    CHECK(s.correct("--spam --user a@example.org --signature " + waiting).find("exit 0") != std::string::npos);
    out = s.correct("--undo --user b@example.org --signature " + waiting);
    CHECK(out.find(refused + waiting + " waits for a correction another user asked for") != std::string::npos);
    CHECK(out.find("exit 1") != std::string::npos);
    out = s.correct("--undo --user a@example.org --signature " + waiting);
    CHECK(out.find("exit 0") != std::string::npos);
    CHECK(out.find("withdrew") != std::string::npos);
    check_one_line_events(s.d);
}
