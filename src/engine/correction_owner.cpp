// Whose corrections; see correction_owner.hpp.
#include "mailsift/engine/correction_owner.hpp"

#include "mailsift/engine/user_layers.hpp"

#include <cctype>

namespace mailsift::engine {

namespace {

constexpr std::string_view for_word = " for ";

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace

std::string corrector_for(std::string_view peer, std::string_view user) {
    return std::string(peer).append(for_word).append(user);
}

std::optional<std::string> acting_for(std::string_view corrector) {
    const auto at = corrector.rfind(for_word);
    if (at == std::string_view::npos) return std::nullopt;
    return std::string(corrector.substr(at + for_word.size()));
}

bool owns(std::string_view who, std::string_view key, PerUser per_user) {
    if (who.empty() || key.empty()) return false;
    if (who.find('@') != std::string_view::npos) {
        const auto mine = user_of(per_user == PerUser::off ? PerUser::recipient : per_user, who);
        return mine && *mine == key;
    }
    const auto at = key.rfind('@');
    if (at == std::string_view::npos) return false;  // a domain's layer: an address's, or an administrator's
    const std::string login = lower(who);
    const std::string_view local = key.substr(0, at);
    return local == login || (local.size() > login.size() && local.starts_with(login) && local[login.size()] == '+');
}

bool valid_login(std::string_view name) {
    if (name.empty() || name.size() > 32) return false;
    for (const char ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.') return false;
    }
    return true;
}

bool same_user(std::string_view a, std::string_view b) {
    const auto x = acting_for(a), y = acting_for(b);
    return x && y && lower(*x) == lower(*y);
}

}  // namespace mailsift::engine
