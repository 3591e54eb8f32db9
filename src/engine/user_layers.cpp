// What a user's layer holds, from the corrections that stepped it.
#include "mailsift/engine/user_layers.hpp"

#include "mailsift/engine/filter.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

namespace mailsift::engine {

std::optional<std::string> layer_key(PerUser per_user, std::string_view name) {
    if (name.find('@') != std::string_view::npos) return user_of(per_user == PerUser::off ? PerUser::recipient : per_user, name);
    const bool domain_like = valid_user(name) && name.find('.') != std::string_view::npos &&
                             name.find_first_of(" \t<>,;\"\\/") == std::string_view::npos;
    if (!domain_like) return std::nullopt;
    std::string key(name);
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return key;
}

UserLayer user_layer(const std::vector<store::CorrectionRecord>& corrections) {
    UserLayer out;
    std::map<std::string, UserLayer::Sender> by_sender;
    for (const auto& c : corrections) {
        if (!c.undo || c.undo->layer.slots.empty()) continue;
        if (c.undone_at != 0) {
            ++out.undone;
            continue;
        }
        ++(c.to == store::Class::spam ? out.to_spam : out.to_ham);
        const auto& layer = c.undo->layer;
        UserLayer::Sender& s = by_sender[layer.sender];
        s.address = layer.sender;
        // Each of the layer's slots took the step: the user's score moved by all of them.
        s.log_odds += static_cast<double>(layer.feature) * static_cast<double>(layer.slots.size());
        ++s.corrections;
        s.last_at = std::max(s.last_at, c.at);
    }
    for (auto& [address, s] : by_sender) out.senders.push_back(std::move(s));
    std::stable_sort(out.senders.begin(), out.senders.end(),
                     [](const auto& a, const auto& b) { return std::fabs(a.log_odds) > std::fabs(b.log_odds); });
    return out;
}

}  // namespace mailsift::engine
