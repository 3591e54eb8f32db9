// Slots and address_key: see slots.hpp.
#include "mailsift/console/slots.hpp"

#include <tuple>

namespace mailsift::console {

std::string address_key(const boost::asio::ip::address& address) {
    namespace ip = boost::asio::ip;
    if (address.is_v4()) return address.to_v4().to_string();
    const ip::address_v6 v6 = address.to_v6();
    if (v6.is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, v6).to_string();
    ip::address_v6::bytes_type bytes = v6.to_bytes();
    for (std::size_t i = 8; i < bytes.size(); ++i) bytes[i] = 0;
    return ip::address_v6(bytes).to_string() + "/64";  // without the scope: the prefix is the key
}

std::optional<Slots::Admission> Slots::admit(const std::string& key) {
    if (const auto it = by_key_.find(key); it != by_key_.end() && it->second >= max_per_key_) return std::nullopt;
    std::optional<Id> evicted;
    if (entries_.size() >= max_total_) {
        evicted = victim();
        if (!evicted) return std::nullopt;
        release(*evicted);
    }
    const Id id = next_id_++;
    entries_.emplace(id, Entry{key, false, false, order_++});
    ++by_key_[key];
    return Admission{id, evicted};
}

std::optional<Slots::Id> Slots::victim() const {
    std::optional<Id> chosen;
    // Ranked by how many connections its key holds, then by how long it has waited.
    std::tuple<std::size_t, std::uint64_t> best{0, 0};
    for (const auto& [id, e] : entries_) {
        if (e.serving || e.authenticated) continue;
        const std::tuple<std::size_t, std::uint64_t> rank{by_key_.at(e.key), ~e.waiting_since};
        if (!chosen || rank > best) {
            chosen = id;
            best = rank;
        }
    }
    return chosen;
}

void Slots::serving(Id id) {
    if (const auto it = entries_.find(id); it != entries_.end()) it->second.serving = true;
}

void Slots::waiting(Id id) {
    if (const auto it = entries_.find(id); it != entries_.end() && it->second.serving) {
        it->second.serving = false;
        it->second.waiting_since = order_++;
    }
}

void Slots::authenticated(Id id) {
    if (const auto it = entries_.find(id); it != entries_.end()) it->second.authenticated = true;
}

void Slots::release(Id id) {
    const auto it = entries_.find(id);
    if (it == entries_.end()) return;
    if (const auto k = by_key_.find(it->second.key); k != by_key_.end() && --k->second == 0) by_key_.erase(k);
    entries_.erase(it);
}

std::size_t Slots::open_under(const std::string& key) const {
    const auto it = by_key_.find(key);
    return it == by_key_.end() ? 0 : it->second;
}

}  // namespace mailsift::console
