// mailsift::engine — the store's contacts as the features module looks them
// up (hdr:sender_in_contacts). The store knows nothing of features or MIME,
// and the features module nothing of the store: the engine joins them here.
#pragma once

#include <string_view>

#include "mailsift/features/extractor.hpp"
#include "mailsift/store/contact_store.hpp"

namespace mailsift::engine {

class StoredContacts final : public features::Contacts {
public:
    explicit StoredContacts(const store::ContactSet& contacts) : contacts_(contacts) {}
    bool contains(std::string_view address) const override { return contacts_.contains(address); }

private:
    const store::ContactSet& contacts_;
};

}  // namespace mailsift::engine
