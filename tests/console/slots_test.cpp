// The console's connection slots (slots.hpp): the keys the per-address bound
// counts by, and whom a newcomer evicts when every connection is taken.
#include "mailsift/console/slots.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace mailsift::console;
namespace ip = boost::asio::ip;

namespace {

std::string key_of(const std::string& address) { return address_key(ip::make_address(address)); }

// `n` connections under `key`, all admitted without evicting anyone.
std::vector<Slots::Id> fill(Slots& slots, const std::string& key, std::size_t n) {
    std::vector<Slots::Id> ids;
    for (std::size_t i = 0; i < n; ++i) {
        const auto a = slots.admit(key);
        REQUIRE(a);
        REQUIRE_FALSE(a->evicted);
        ids.push_back(a->id);
    }
    return ids;
}

}  // namespace

TEST_CASE("An IPv4 address is its own key, and IPv6 counts by its /64", "[console]") {
    CHECK(key_of("127.0.0.1") == "127.0.0.1");
    CHECK(key_of("192.0.2.7") != key_of("192.0.2.8"));
    // IPv4-mapped: the IPv4 address it is.
    CHECK(key_of("::ffff:192.0.2.7") == "192.0.2.7");
    // One /64, however many addresses in it.
    CHECK(key_of("2001:db8:1:2::1") == "2001:db8:1:2::/64");
    CHECK(key_of("2001:db8:1:2:ffff:ffff:ffff:ffff") == "2001:db8:1:2::/64");
    CHECK(key_of("2001:db8:1:2:dead:beef:0:1") == key_of("2001:db8:1:2::1"));
    // The next /64 is another key.
    CHECK(key_of("2001:db8:1:3::1") == "2001:db8:1:3::/64");
    CHECK(key_of("::1") == "::/64");
    // The scope is not part of the key.
    CHECK(key_of("fe80::1%1") == key_of("fe80::2"));
}

TEST_CASE("Per key: one over the bound is refused, whoever else waits", "[console]") {
    Slots slots(64, 16);
    fill(slots, key_of("2001:db8::1"), 16);
    CHECK_FALSE(slots.admit(key_of("2001:db8::ffff")));  // the same /64
    CHECK(slots.open_under("2001:db8::/64") == 16);
    CHECK(slots.admit(key_of("2001:db8:0:1::1")));  // the next /64
    CHECK(slots.open() == 17);
}

TEST_CASE("When full, a newcomer evicts an idle unauthenticated connection of the fullest address", "[console]") {
    Slots slots(64, 16);
    std::vector<std::vector<Slots::Id>> attackers;
    for (int k = 2; k <= 5; ++k) attackers.push_back(fill(slots, "127.0.0." + std::to_string(k), 16));
    REQUIRE(slots.open() == 64);

    SECTION("the oldest waiting of them goes, and the newcomer is in") {
        const auto a = slots.admit("127.0.0.1");
        REQUIRE(a);
        REQUIRE(a->evicted);
        CHECK(*a->evicted == attackers[0][0]);
        CHECK_FALSE(slots.holds(attackers[0][0]));
        CHECK(slots.holds(a->id));
        CHECK(slots.open() == 64);
        CHECK(slots.open_under("127.0.0.2") == 15);
        slots.release(*a->evicted);  // its socket's own close later: nothing more
        CHECK(slots.open() == 64);
    }

    SECTION("however often the attackers reconnect, the newcomer is never the one evicted") {
        const auto newcomer = slots.admit("127.0.0.1");
        REQUIRE(newcomer);
        for (int round = 0; round < 1000; ++round) {
            const std::string key = "127.0.0." + std::to_string(2 + round % 4);
            if (const auto a = slots.admit(key)) {
                REQUIRE(a->evicted);
                CHECK(*a->evicted != newcomer->id);
            }
            REQUIRE(slots.holds(newcomer->id));
        }
        CHECK(slots.open() == 64);
    }

    SECTION("a connection being served is not evicted, nor one that was signed in") {
        const Slots::Id served = attackers[0][0];
        const Slots::Id signed_in = attackers[0][1];
        slots.serving(served);
        slots.serving(signed_in);
        slots.authenticated(signed_in);
        slots.waiting(signed_in);
        const auto a = slots.admit("127.0.0.1");
        REQUIRE(a);
        REQUIRE(a->evicted);
        CHECK(*a->evicted == attackers[0][2]);
        CHECK(slots.holds(served));
        CHECK(slots.holds(signed_in));
    }

    SECTION("the one waiting longest goes first: a connection back from a request waits anew") {
        slots.serving(attackers[0][0]);
        slots.waiting(attackers[0][0]);
        const auto a = slots.admit("127.0.0.1");
        REQUIRE(a);
        CHECK(a->evicted == attackers[0][1]);
    }

    SECTION("with nobody to evict, the newcomer is refused") {
        for (const auto& ids : attackers) {
            for (const auto id : ids) slots.serving(id);
        }
        CHECK_FALSE(slots.admit("127.0.0.1"));
        CHECK(slots.open() == 64);
        slots.waiting(attackers[3][7]);
        const auto a = slots.admit("127.0.0.1");
        REQUIRE(a);
        CHECK(a->evicted == attackers[3][7]);
    }
}

TEST_CASE("Signed-in connections are never evicted, and the fullest address loses first", "[console]") {
    Slots slots(8, 8);
    // The administrator: two signed-in connections and one that has not signed in yet.
    const auto admin = fill(slots, "192.0.2.1", 3);
    for (const auto id : {admin[0], admin[1]}) {
        slots.serving(id);
        slots.authenticated(id);
        slots.waiting(id);
    }
    // One /64 takes the rest, from five addresses in it.
    for (int i = 1; i <= 5; ++i) fill(slots, key_of("2001:db8::" + std::to_string(i)), 1);
    REQUIRE(slots.open() == 8);
    REQUIRE(slots.open_under("2001:db8::/64") == 5);

    // The admin's unsigned connection is older, but its address holds fewer.
    const auto a = slots.admit("198.51.100.9");
    REQUIRE(a);
    REQUIRE(a->evicted);
    CHECK(slots.holds(admin[2]));
    CHECK(slots.open_under("2001:db8::/64") == 4);

    // Only signed-in connections left: nobody to evict.
    Slots small(2, 2);
    const auto both = fill(small, "192.0.2.1", 2);
    for (const auto id : both) small.authenticated(id);
    CHECK_FALSE(small.admit("192.0.2.2"));
    small.release(both[0]);
    CHECK(small.admit("192.0.2.2"));
}
