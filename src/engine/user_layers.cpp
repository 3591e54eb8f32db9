// The per-user layer: whose, keyed by which sender, its step, and what it
// holds, from the corrections that stepped it (user_layers.hpp).
#include "mailsift/engine/user_layers.hpp"

#include "mailsift/engine/scan_record.hpp"
#include "mailsift/features/extractor.hpp"
#include "mailsift/mime/message.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

namespace mailsift::engine {

std::optional<std::string> user_of(PerUser per_user, std::string_view address) {
    if (per_user == PerUser::off) return std::nullopt;
    const std::string user = features::address_in(address);  // the addr-spec, lower-cased
    const std::size_t at = user.rfind('@');
    if (user.empty() || user.size() > 255 || at == 0 || at + 1 == user.size()) return std::nullopt;
    for (const char ch : user) {
        const auto u = static_cast<unsigned char>(ch);
        if (u <= 0x20 || u == 0x7f) return std::nullopt;
    }
    return per_user == PerUser::domain ? user.substr(at + 1) : user;
}

std::optional<std::string> message_user(PerUser per_user, const std::vector<std::string>& recipients) {
    if (recipients.size() != 1) return std::nullopt;
    return user_of(per_user, recipients.front());
}

std::string layer_sender(const mime::ParsedMessage& message) {
    const auto* from = message.find("From");
    return from != nullptr ? features::address_in(from->value) : std::string();
}

std::optional<std::string_view> layer_sender_of(std::string_view feature_text) {
    constexpr std::string_view prefix = "hdr:from:";  // features::header_facts
    if (!feature_text.starts_with(prefix)) return std::nullopt;
    return feature_text.substr(prefix.size());
}

double verdict_cutoff(const Settings& settings, bool spam) {
    const auto& m = settings.model;
    if (const auto& at = spam ? m.spam_log_odds : m.ham_log_odds) return *at;
    const double p = spam ? m.spam_threshold : m.ham_threshold;
    return settings.linear.temperature * std::log(p / (1.0 - p));
}

double layer_move(const Settings& settings, double user_z, bool spam, double learned) {
    const double need = spam ? verdict_cutoff(settings, true) + settings.per_user_margin - user_z
                             : user_z - (verdict_cutoff(settings, false) - settings.per_user_margin);
    return std::min(settings.per_user_cap, std::max(learned, need));
}

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

std::vector<LayerUser> layer_users(const std::vector<store::CorrectionRecord>& corrections) {
    std::map<std::string, std::pair<LayerUser, std::set<std::string>>> by_user;
    for (const auto& c : corrections) {
        if (!c.undo || c.undo->layer.slots.empty() || c.undone_at != 0) continue;
        auto& [u, senders] = by_user[c.undo->layer.user];
        u.user = c.undo->layer.user;
        ++(c.to == store::Class::spam ? u.to_spam : u.to_ham);
        senders.insert(c.undo->layer.sender);
        u.last_at = std::max(u.last_at, c.at);
    }
    std::vector<LayerUser> out;
    out.reserve(by_user.size());
    for (auto& [name, entry] : by_user) {
        entry.first.senders = entry.second.size();
        out.push_back(std::move(entry.first));
    }
    std::stable_sort(out.begin(), out.end(), [](const LayerUser& a, const LayerUser& b) {
        const std::size_t na = a.to_spam + a.to_ham, nb = b.to_spam + b.to_ham;
        return na != nb ? na > nb : a.last_at > b.last_at;  // by name among equals: the map's order
    });
    return out;
}

namespace {

double percent(std::size_t n, std::uint64_t of) {
    return of == 0 ? 0.0 : 100.0 * static_cast<double>(n) / static_cast<double>(of);
}

}  // namespace

double UserErrors::false_positive_percent() const { return percent(false_positives, messages); }
double UserErrors::false_negative_percent() const { return percent(false_negatives, messages); }

UserErrors user_errors(store::ScanLog& log, const std::string& key,
                       const std::vector<store::CorrectionRecord>& corrections) {
    UserErrors out;
    store::HistoryQuery q;
    q.recipient = key;
    out.messages = log.history_count(q);
    if (out.messages == 0) return out;
    q.order = store::HistoryQuery::Order::oldest;
    q.limit = 1;
    const auto oldest = log.history(q);
    if (oldest.empty()) return out;  // pruned between the two reads
    out.since = oldest.front().scanned_at;
    for (const auto& c : corrections) {
        if (!c.undo || c.undo->layer.slots.empty() || c.undone_at != 0 || c.at < out.since) continue;
        if (c.verdict == model::Verdict::unsure) {
            ++out.unsure;
        } else if (c.verdict == model::Verdict::spam && c.to == store::Class::ham) {
            ++out.false_positives;
        } else if (c.verdict == model::Verdict::ham && c.to == store::Class::spam) {
            ++out.false_negatives;
        }
    }
    return out;
}

}  // namespace mailsift::engine
