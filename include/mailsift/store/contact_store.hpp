// mailsift::store — the contacts part of the store (one role of Database):
// the addresses the sender-in-contacts feature looks up, and their source.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace mailsift::store {

struct Contact {
    std::string address;
    std::string source;
    std::int64_t added_at = 0;  // seconds since the epoch
};

// Contacts held in memory, as the store read them (the engine hands them to
// the features module's lookup: engine/contacts.hpp).
class ContactSet final {
public:
    explicit ContactSet(std::unordered_set<std::string> addresses) : addresses_(std::move(addresses)) {}
    ContactSet() = default;
    bool contains(std::string_view address) const {
        return addresses_.find(std::string(address)) != addresses_.end();
    }
    std::size_t size() const { return addresses_.size(); }
    void add(std::string address) { addresses_.insert(std::move(address)); }

private:
    std::unordered_set<std::string> addresses_;
};

// The contacts: addresses whose mail counts as from someone the site writes
// to (hdr:sender_in_contacts), learned from ham and outgoing mail or added by
// the administrator. Every method throws Error for an environment failure.
class ContactStore {
public:
    virtual ~ContactStore() = default;
    ContactStore(const ContactStore&) = delete;
    ContactStore& operator=(const ContactStore&) = delete;

    // Changes when the contacts change (a reader reloads them then).
    virtual std::string contacts_fingerprint() = 0;
    virtual ContactSet load_contacts() = 0;
    virtual std::vector<Contact> contacts() = 0;
    virtual bool add_contact(std::string_view address, std::string_view source, std::int64_t now) = 0;  // false: already there
    virtual bool remove_contact(std::string_view address) = 0;                                          // false: not there
    // Adds contacts in one transaction; returns how many were not there yet.
    virtual std::size_t add_contacts(const std::vector<Contact>& contacts) = 0;

protected:
    ContactStore() = default;
};

}  // namespace mailsift::store
