// Turns a parsed message into namespaced features (see extractor.hpp for the
// namespaces). Each kind of feature has its own small function; the bag caps
// the number of distinct features so a hostile message cannot grow it without bound.
#include "mailsift/features/extractor.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "mailsift/features/text.hpp"
#include "mailsift/features/view.hpp"

namespace mailsift::features {

// ---- addresses and hosts -------------------------------------------------

namespace {

// ASCII only, without the C library's locale lookups: header names, URL
// schemes and currency words are ASCII, and this runs for many words of a body.
constexpr char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }
// Byte classes of Extractor::patterns.
constexpr std::uint8_t pattern_start = 1, url_start = 2;
constexpr bool ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
constexpr bool ascii_alnum(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

bool istarts_with(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

bool printable_ascii(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < '\x7f'; });
}

std::string lower_ascii(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = ascii_lower(c);
    return out;
}

bool is_ipv4(std::string_view host) {
    int dots = 0, digits = 0;
    for (char c : host) {
        if (c == '.') {
            if (digits == 0) return false;
            ++dots;
            digits = 0;
        } else if (c >= '0' && c <= '9') {
            if (++digits > 3) return false;
        } else {
            return false;
        }
    }
    return dots == 3 && digits > 0;
}

bool is_host_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
}

// Host of a URL (lower-case, without userinfo or port), or "".
std::string url_host(std::string_view url) {
    std::size_t p = url.find("://");
    if (p != std::string_view::npos) {
        url.remove_prefix(p + 3);
    } else if (istarts_with(url, "www.")) {
        // bare "www.example.com/..." counts as a URL
    } else {
        return {};
    }
    const std::size_t end = url.find_first_of("/?#\\ \t\r\n\"'<>");
    std::string_view authority = url.substr(0, end);
    if (auto at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
    if (!authority.empty() && authority.front() == '[') {  // IPv6 literal
        auto close = authority.find(']');
        return lower_ascii(authority.substr(0, close == std::string_view::npos ? authority.size() : close + 1));
    }
    if (auto colon = authority.find(':'); colon != std::string_view::npos) authority = authority.substr(0, colon);
    while (!authority.empty() && authority.back() == '.') authority.remove_suffix(1);
    if (authority.empty() || !std::all_of(authority.begin(), authority.end(), is_host_char)) return {};
    return lower_ascii(authority);
}

}  // namespace

std::string address_in(std::string_view value) {
    std::string_view addr = value;
    if (auto lt = value.rfind('<'); lt != std::string_view::npos) {
        auto gt = value.find('>', lt);
        addr = value.substr(lt + 1, gt == std::string_view::npos ? std::string_view::npos : gt - lt - 1);
    } else {
        // "user@example.com (Name)": drop the comment.
        if (auto paren = addr.find('('); paren != std::string_view::npos) addr = addr.substr(0, paren);
    }
    while (!addr.empty() && std::isspace(static_cast<unsigned char>(addr.front()))) addr.remove_prefix(1);
    while (!addr.empty() && std::isspace(static_cast<unsigned char>(addr.back()))) addr.remove_suffix(1);
    if (auto sp = addr.find_first_of(" \t,;"); sp != std::string_view::npos) addr = addr.substr(0, sp);
    if (addr.find('@') == std::string_view::npos || addr.size() > 320) return {};
    return lower_ascii(addr);
}

std::string_view domain_of(std::string_view address) {
    auto at = address.rfind('@');
    return at == std::string_view::npos ? std::string_view{} : address.substr(at + 1);
}

std::string registrable_domain(std::string_view host) {
    if (is_ipv4(host) || (!host.empty() && host.front() == '[')) return std::string(host);
    std::array<std::size_t, 3> dots{};  // positions of the last three dots
    int found = 0;
    for (std::size_t i = host.size(); i-- > 0 && found < 3;) {
        if (host[i] == '.') dots[static_cast<std::size_t>(found++)] = i;
    }
    if (found < 2) return std::string(host);
    const std::string_view tld = host.substr(dots[0] + 1);
    const std::string_view second = host.substr(dots[1] + 1, dots[0] - dots[1] - 1);
    static constexpr std::array<std::string_view, 8> generic_second{"co", "com", "net", "org", "gov", "ac", "edu", "ne"};
    const bool country_with_generic_second =
        tld.size() == 2 && std::find(generic_second.begin(), generic_second.end(), second) != generic_second.end();
    if (country_with_generic_second) {
        return std::string(found >= 3 ? host.substr(dots[2] + 1) : host);
    }
    return std::string(host.substr(dots[1] + 1));
}

// ---- extraction ----------------------------------------------------------

namespace {

class Extractor {
public:
    Extractor(const Options& options, FeatureBag& bag) : opt_(options), bag_(bag) {}

    // Words of `text` into namespace `prefix`. Counts capitals and long tokens
    // along the way when `patterns` is set.
    // `pairs_prefix` non-empty: also adjacent word pairs ("sparse word pairs").
    void words(std::string_view prefix, std::string_view text, bool patterns, bool skip_numbers = false,
               std::string_view pairs_prefix = {}) {
        previous_.clear();
        // The feature's text is built in place: the prefix stays, each word is folded after it.
        key_.assign(prefix);
        for_each_word(text, [&](std::string_view w) {
            if (w.size() < opt_.min_token_bytes) return;
            if (w.size() > opt_.max_token_bytes) {
                if (patterns) bag_.add("pat:long_token");
                previous_.clear();
                return;
            }
            if (skip_numbers && has_many_digits(w)) return;
            key_.resize(prefix.size());
            const LetterCounts counts = fold_append(w, key_);
            if (patterns) count_caps(counts);
            bag_.add(key_);
            if (!pairs_prefix.empty()) {
                const std::string_view folded = std::string_view(key_).substr(prefix.size());
                if (!previous_.empty()) {
                    pair_.assign(previous_);
                    pair_.push_back('_');
                    pair_.append(folded);
                    bag_.add(pairs_prefix, pair_);
                }
                previous_.assign(folded);
            }
        }, opt_.cjk_bigrams);
    }

    void caps_share() {
        if (letters_ < 40) return;  // too little text to say
        const std::size_t pct = upper_ * 100 / letters_;
        const char* bucket = pct < 10 ? "pat:caps_share:<10%" : pct < 25 ? "pat:caps_share:10-25%"
                             : pct < 50 ? "pat:caps_share:25-50%" : "pat:caps_share:>50%";
        bag_.add(bucket);
    }

    // Money, runs of '!' and '$', phone-like numbers, bare URLs in plain text.
    void patterns(std::string_view t) {
        // Which bytes can start something this scan looks for; every other byte
        // is skipped by one table lookup (most of a body is plain words).
        static constexpr auto starts = [] {
            std::array<std::uint8_t, 256> table{};
            for (unsigned char c : {'!', '$', '\xE2', '\xC2'}) table[c] |= pattern_start;
            for (char c = '0'; c <= '9'; ++c) table[static_cast<unsigned char>(c)] |= pattern_start;
            for (unsigned char c : {'h', 'H', 'w', 'W'}) table[c] |= url_start;
            return table;
        }();
        const std::uint8_t wanted = (opt_.patterns ? pattern_start : 0) | (opt_.urls ? url_start : 0);
        if (wanted == 0) return;
        const std::size_t n = t.size();
        for (std::size_t i = 0; i < n;) {
            while (i < n && (starts[static_cast<unsigned char>(t[i])] & wanted) == 0) ++i;
            if (i == n) break;
            const char c = t[i];
            const bool word_start = i == 0 || !ascii_alnum(t[i - 1]);
            if (!opt_.patterns) {
                // only URLs wanted
            } else if (c == '!' || c == '$') {
                std::size_t j = i;
                while (j < n && t[j] == c) ++j;
                if (j - i >= 3) bag_.add(c == '!' ? "pat:run_of_!" : "pat:run_of_$");
                if (c == '$' && j - i == 1) money_after(t, j);
                i = j;
                continue;
            } else if (c == '\xE2' && t.substr(i, 3) == "\xE2\x82\xAC") {  // €
                money_after(t, i + 3);
                i += 3;
                continue;
            } else if (c == '\xC2' && t.substr(i, 2) == "\xC2\xA3") {  // £
                money_after(t, i + 2);
                i += 2;
                continue;
            } else if (c >= '0' && c <= '9' && word_start) {
                i = number_at(t, i);
                continue;
            }
            if (opt_.urls && (c == 'h' || c == 'H' || c == 'w' || c == 'W') && word_start) {
                const std::string_view rest = t.substr(i);
                if (istarts_with(rest, "http://") || istarts_with(rest, "https://") || istarts_with(rest, "www.")) {
                    std::size_t j = i;
                    while (j < n && !ascii_space(t[j]) && t[j] != '<' && t[j] != '>' && t[j] != '"' && t[j] != '\'' &&
                           t[j] != ')')
                        ++j;
                    url(t.substr(i, j - i));
                    i = j;
                    continue;
                }
            }
            ++i;
        }
    }

    void url(std::string_view target) {
        const std::string host = url_host(target);
        if (host.empty()) return;
        ++urls_;
        bag_.add("url:host:", host);
        if (is_ipv4(host) || host.front() == '[') {
            bag_.add("url:ip_host");
        } else {
            bag_.add("url:domain:", registrable_domain(host));
        }
        if (istarts_with(target, "https:")) bag_.add("url:https");
        if (target.find('@') != std::string_view::npos && target.find('@') < target.find('/', 8)) bag_.add("url:userinfo");
    }

    // An anchor whose visible text names a host other than the target's.
    void link_mismatch(const mime::Link& link) {
        std::string_view text = link.text;
        while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
        std::string shown = url_host(text);
        if (shown.empty()) return;
        const std::string target = url_host(link.target);
        if (target.empty()) return;
        if (registrable_domain(shown) != registrable_domain(target)) bag_.add("url:text_names_other_host");
    }

    std::size_t url_count() const { return urls_; }

private:
    static bool has_many_digits(std::string_view w) {
        return std::count_if(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; }) >= 3;
    }

    // A word's letters toward the message's share of capitals; all capitals (3 letters or more) is a pattern.
    void count_caps(LetterCounts counts) {
        letters_ += counts.letters;
        upper_ += counts.upper;
        if (counts.letters >= 3 && counts.upper == counts.letters) bag_.add("pat:all_caps_word");
    }

    // After a currency sign: optional space, then a digit starts an amount.
    void money_after(std::string_view t, std::size_t j) {
        if (j < t.size() && t[j] == ' ') ++j;
        if (j < t.size() && t[j] >= '0' && t[j] <= '9') {
            bag_.add("pat:money");
            std::size_t digits = 0;
            while (j < t.size() && ((t[j] >= '0' && t[j] <= '9') || t[j] == ',')) {
                if (t[j] != ',') ++digits;
                ++j;
            }
            bag_.add(digits >= 4 ? "pat:money_large" : "pat:money_small");
        }
    }

    // A run of digits and separators: a phone-like number (10–15 digits in
    // at least two groups), or an amount followed by a currency word.
    std::size_t number_at(std::string_view t, std::size_t i) {
        std::size_t j = i, digits = 0, groups = 1;
        while (j < t.size()) {
            const char c = t[j];
            if (c >= '0' && c <= '9') {
                ++digits;
                ++j;
            } else if ((c == '-' || c == ' ' || c == '.' || c == ')' || c == '(') && j + 1 < t.size() &&
                       ((t[j + 1] >= '0' && t[j + 1] <= '9') || (c == ')' && t[j + 1] == ' '))) {
                ++groups;
                ++j;
            } else {
                break;
            }
        }
        if (digits >= 10 && digits <= 15 && groups >= 2) bag_.add("pat:phone_number");
        std::size_t k = j;
        while (k < t.size() && t[k] == ' ') ++k;
        const std::string_view rest = t.substr(k);
        if (istarts_with(rest, "usd") || istarts_with(rest, "eur") || istarts_with(rest, "dollars") ||
            istarts_with(rest, "euro")) {
            bag_.add("pat:money");
        }
        return j;
    }

    const Options& opt_;
    FeatureBag& bag_;
    std::string key_, previous_, pair_;
    std::size_t letters_ = 0, upper_ = 0, urls_ = 0;
};

// Headers whose words are features. Left out on purpose: dates, per-message ids
// and mailbox bookkeeping; our own verdict headers; and the relay path
// (Received, Delivered-To and the other fields the delivery path adds after the
// milter: view.hpp), which says where a message was collected rather
// than what it is, and which on the SpamAssassin corpus let a list relay
// decide a ham's verdict (docs/accuracy.md, issue 5).
bool header_words_wanted(std::string_view name) {
    static constexpr std::array<std::string_view, 10> skipped{
        "date",  "subject", "message-id", "content-length", "lines", "status", "x-status", "x-uid",
        "received", "delivered-to"};
    if (left_out_of_view(name)) return false;  // what the delivery path adds, and our own fields
    for (auto s : skipped) {
        if (iequals(name, s)) return false;
    }
    return true;
}

// The words of a Date field that name a period or a place: weekday, month,
// year and zone ("Mon, 2 Sep 2002 10:00:00 +0000" -> mon, sep, 2002, 0000);
// the day and the time of day are left out.
void date_facts(std::string_view value, FeatureBag& bag) {
    std::string folded;
    for_each_word(value, [&](std::string_view w) {
        const bool digits = std::all_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (digits ? w.size() != 4 : !std::all_of(w.begin(), w.end(), [](char c) { return ascii_alnum(c); })) return;
        fold_into(w, folded);
        bag.add("date:", folded);
    });
}

void header_facts(const mime::ParsedMessage& m, const Contacts* contacts, const Options& opt, FeatureBag& bag,
                  Extractor& ex) {
    std::string from;
    if (const auto* h = m.find("From")) from = address_in(h->value);
    if (!from.empty()) {
        bag.add("hdr:from:", from);
        bag.add("hdr:from_domain:", domain_of(from));
        if (contacts != nullptr) bag.add(contacts->contains(from) ? "hdr:sender_in_contacts" : "hdr:sender_not_in_contacts");
    } else {
        bag.add("hdr:no_from_address");
    }
    if (const auto* h = m.find("Reply-To")) {
        const std::string reply = address_in(h->value);
        if (!reply.empty() && !from.empty()) {
            bag.add(registrable_domain(domain_of(reply)) == registrable_domain(domain_of(from))
                        ? "hdr:reply_to_same_domain"
                        : "hdr:reply_to_other_domain");
        }
    }
    if (m.find("Date") == nullptr) bag.add("hdr:no_date");
    if (m.find("Message-ID") == nullptr) bag.add("hdr:no_message_id");
    const auto* mailer = m.find("X-Mailer");
    if (mailer == nullptr) mailer = m.find("User-Agent");
    if (mailer != nullptr) {
        std::string first;
        for_each_word(mailer->value, [&](std::string_view w) {
            if (first.empty()) fold_into(w, first);
        });
        if (!first.empty()) bag.add("hdr:mailer:", first);
    } else {
        bag.add("hdr:no_mailer");
    }

    // One namespace for all header words: list headers repeat the same tokens
    // (List-Post, List-Help, List-Unsubscribe, ...), and separate namespaces
    // made naive Bayes count that one fact many times (1-ROCA% 0.27 -> 0.08
    // at alpha 1, docs/accuracy.md).
    for (const auto& h : m.headers) {
        if (header_words_wanted(h.name)) {
            ex.words("h:", h.value, false, /*skip_numbers=*/true);
        } else if (opt.relay_path && (iequals(h.name, "received") || iequals(h.name, "delivered-to"))) {
            ex.words("rcvd:", h.value, false, /*skip_numbers=*/true);
        } else if (opt.dates && iequals(h.name, "date")) {
            date_facts(h.value, bag);
        }
    }
}

void mime_shape(const mime::ParsedMessage& m, FeatureBag& bag) {
    bool any_plain = false, any_html = false;
    for (const auto& t : m.texts) (t.kind == mime::TextKind::html ? any_html : any_plain) = true;
    if (any_html && !any_plain) bag.add("mime:html_only");
    if (any_html && any_plain) bag.add("mime:plain_and_html");
    if (m.texts.empty()) bag.add("mime:no_text");
    for (const auto& a : m.attachments) {
        // Both come from the sender's bytes: only printable ASCII makes a feature, so
        // every feature text stays valid UTF-8 (a cut multi-byte name would not be).
        bag.add("mime:attachment_type:", printable_ascii(a.content_type) ? std::string_view(a.content_type) : "invalid");
        if (auto dot = a.filename.rfind('.'); dot != std::string::npos && a.filename.size() - dot <= 6) {
            const std::string_view ext = std::string_view(a.filename).substr(dot + 1);
            if (printable_ascii(ext)) bag.add("mime:attachment_ext:", lower_ascii(ext));
        }
    }
    if (m.malformed) bag.add("mime:malformed");
    if (!m.limits_hit.empty()) bag.add("mime:limit_hit");
    if (m.part_count > 1) bag.add(m.part_count > 10 ? "mime:parts:>10" : "mime:parts:2-10");
}

void envelope_facts(const Envelope& e, FeatureBag& bag) {
    if (!e.helo.empty()) bag.add("env:helo:", lower_ascii(e.helo));
    if (e.client_name.empty() || iequals(e.client_name, "unknown")) {
        bag.add("env:client_unresolved");
    } else {
        bag.add("env:client_domain:", registrable_domain(lower_ascii(e.client_name)));
    }
    const std::string sender = lower_ascii(e.sender);
    if (sender.empty() || sender == "<>") {
        bag.add("env:null_sender");
    } else {
        bag.add("env:sender_domain:", domain_of(address_in(sender)));
    }
    if (!e.auth_user.empty()) bag.add("env:authenticated");
    bag.add(e.recipients.size() > 5 ? "env:recipients:>5" : "env:recipients:1-5");
}

}  // namespace

FeatureBag extract(const mime::ParsedMessage& message, const Envelope* envelope, const Contacts* contacts,
                   const Options& options) {
    FeatureBag bag;
    bag.set_capacity(options.max_features);
    Extractor ex(options, bag);

    if (options.subject) {
        if (const auto* s = message.find("Subject")) ex.words("s:", s->value, options.patterns);
    }
    for (const auto& part : message.texts) {
        if (options.words) ex.words("w:", part.text, options.patterns, false, options.word_pairs ? "w2:" : "");
        if (options.patterns || options.urls) ex.patterns(part.text);
    }
    if (options.patterns) ex.caps_share();
    if (options.urls) {
        for (const auto& link : message.links) {
            ex.url(link.target);
            ex.link_mismatch(link);
        }
        if (ex.url_count() > 0) bag.add(ex.url_count() > 10 ? "url:count:>10" : "url:count:1-10");
    }
    if (options.headers) header_facts(message, contacts, options, bag, ex);
    if (options.mime_shape) mime_shape(message, bag);
    if (options.envelope && envelope != nullptr) envelope_facts(*envelope, bag);
    return bag;
}

bool is_header_feature(std::string_view feature) {
    return feature.starts_with("h:") || feature.starts_with("hdr:") || feature.starts_with("env:") ||
           feature.starts_with("rcvd:") || feature.starts_with("date:");
}

}  // namespace mailsift::features
