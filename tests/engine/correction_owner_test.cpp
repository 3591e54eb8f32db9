// Whose corrections (engine/correction_owner.hpp): which user a corrector
// acts for, and which layer keys a user (an address, or a Unix login) owns.
#include <catch2/catch.hpp>

#include "mailsift/engine/correction_owner.hpp"

using namespace mailsift::engine;

TEST_CASE("A corrector acts for the user its name gives, and an administrator's for none", "[correction_owner]") {
    CHECK(corrector_for("socket:vmail", "alice@example.org") == "socket:vmail for alice@example.org");
    CHECK(acting_for("socket:vmail for alice@example.org") == std::optional<std::string>("alice@example.org"));
    CHECK(acting_for("socket:root") == std::nullopt);
    CHECK(acting_for("console:admin") == std::nullopt);
    CHECK(same_user("socket:vmail for Alice@Example.org", "cli:root for alice@example.org"));
    CHECK_FALSE(same_user("socket:vmail for alice@example.org", "socket:vmail for bob@example.org"));
    CHECK_FALSE(same_user("socket:root", "socket:root"));  // administrators are no user
}

TEST_CASE("An address owns its own layer, and a login the addresses of its local part", "[correction_owner]") {
    const auto r = PerUser::recipient;
    CHECK(owns("Alice@Example.org", "alice@example.org", r));
    CHECK_FALSE(owns("bob@example.org", "alice@example.org", r));
    CHECK(owns("alice", "alice@example.org", r));
    CHECK(owns("alice", "alice@other.example", r));
    CHECK(owns("alice", "alice+lists@example.org", r));
    CHECK_FALSE(owns("alice", "alicex@example.org", r));
    CHECK_FALSE(owns("alice", "bob+alice@example.org", r));
    CHECK_FALSE(owns("alice", "example.org", PerUser::domain));  // a login owns no domain
    CHECK(owns("carol@example.org", "example.org", PerUser::domain));
    CHECK_FALSE(owns("", "alice@example.org", r));
    CHECK(valid_login("mailsift-it-vmail"));
    CHECK_FALSE(valid_login("alice@example.org"));
    CHECK_FALSE(valid_login("a b"));
}
