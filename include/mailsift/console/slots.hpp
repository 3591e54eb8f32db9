// mailsift::console Slots — who holds the console's connections, and whom a
// new one displaces when they are all taken (console/server.hpp keeps the
// sockets; this keeps the count, so it can be tested without them).
//
// At most max_total connections, at most max_per_key of them under one key
// (address_key: an IPv4 address, or an IPv6 /64). A connection under a key at
// its bound is refused. When all max_total are taken, a new one is let in by
// evicting one that is waiting (for its handshake, its first request or the
// next, or for its turn at the server's pace: nothing of the App's is running
// for it and no response is being written to it) and that has never carried
// a signed-in request; of those, one under the key that holds the most
// connections, and of its, the one waiting the longest. So a few addresses
// that take every socket they can lose their own first: a signed-in
// connection stays, and a newcomer from an address with fewer connections
// than theirs is never the one displaced. With nobody to evict, it is refused.
//
// Single-threaded: the console's io thread's only.
#pragma once

#include <utility>  // Boost 1.74 Asio uses std::exchange without including it
#include <boost/asio/ip/address.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

namespace mailsift::console {

// What the per-address bound counts a peer under: an IPv4 address as itself
// (also when it comes IPv4-mapped, ::ffff:a.b.c.d), an IPv6 address by its
// /64 ("2001:db8:1:2::/64"), which one host or customer is commonly given whole.
std::string address_key(const boost::asio::ip::address& address);

class Slots {
public:
    using Id = std::uint64_t;

    Slots(std::size_t max_total, std::size_t max_per_key) : max_total_(max_total), max_per_key_(max_per_key) {}

    struct Admission {
        Id id;                       // the new connection's, never reused
        std::optional<Id> evicted;   // the one to close first (no longer counted)
    };
    // A new connection under `key`, waiting for its first request; none: refused.
    std::optional<Admission> admit(const std::string& key);

    void serving(Id id);        // the App answers it, or its response is written: not evicted
    void waiting(Id id);        // between requests again (the longest waiting goes first)
    void authenticated(Id id);  // it carried a signed-in request: never evicted
    void release(Id id);        // closed (an evicted or unknown id: nothing)

    std::size_t open() const { return entries_.size(); }
    std::size_t open_under(const std::string& key) const;
    bool holds(Id id) const { return entries_.count(id) != 0; }

private:
    struct Entry {
        std::string key;
        bool serving = false;
        bool authenticated = false;
        std::uint64_t waiting_since = 0;  // a tick of order_, not a time
    };
    std::optional<Id> victim() const;

    std::size_t max_total_, max_per_key_;
    std::unordered_map<Id, Entry> entries_;
    std::unordered_map<std::string, std::size_t> by_key_;
    Id next_id_ = 1;
    std::uint64_t order_ = 0;
};

}  // namespace mailsift::console
