// libFuzzer harness: mime::parse then features::extract on arbitrary bytes,
// with the default limits and options and a small contact list.
//
// Invariants (message.hpp, extractor.hpp, feature_bag.hpp):
//  parse
//   - never throws (std::bad_alloc aside, which ASan's allocator reports);
//   - part_count is at least 1 and at most limits.max_parts; at most
//     limits.max_headers top-level headers; each limit is listed once;
//   - everything documented as UTF-8 is valid UTF-8: header values, texts,
//     link targets and texts, attachment file names;
//   - header names are field-name characters (printable ASCII but ':');
//     attachment content types are lower-case "type/subtype"; charsets lower-case;
//  extract
//   - at most options.max_features distinct features, full() exactly when
//     features were dropped at the cap;
//   - every feature text starts with a known namespace and is valid UTF-8
//     (check id "feature-utf8:KIND", e.g. feature-utf8:mime:attachment_type);
//     every count is at least 1 and the bag finds each text with its count;
//   - contacts are asked only about lower-case addresses;
//  determinism: parsing and extracting the same bytes again gives the same features.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "mailsift/features/extractor.hpp"
#include "mailsift/features/feature_bag.hpp"
#include "mailsift/mime/message.hpp"

namespace mime = mailsift::mime;
namespace features = mailsift::features;
using mailsift::fuzz::printable;
using mailsift::fuzz::valid_utf8;

namespace {

// A fixed address book; records that it was only asked about lower-case addresses.
class StandInContacts final : public features::Contacts {
public:
    bool contains(std::string_view address) const override {
        FUZZ_CHECK("contacts-lower-case",
                   std::none_of(address.begin(), address.end(), [](char c) { return c >= 'A' && c <= 'Z'; }),
                   "asked about " + printable(address));
        static constexpr std::array<std::string_view, 3> known{"alice@example.org", "bob@example.com",
                                                               "winner@lucky-prizes.example"};
        return std::find(known.begin(), known.end(), address) != known.end();
    }
};

// The namespaces of extractor.hpp (w2: is the optional word pairs).
bool known_namespace(std::string_view text) {
    static constexpr std::array<std::string_view, 9> prefixes{"w:", "w2:", "s:", "h:", "hdr:", "pat:", "url:", "mime:", "env:"};
    return std::any_of(prefixes.begin(), prefixes.end(), [text](std::string_view p) { return text.starts_with(p); });
}

// "mime:attachment_type" for "mime:attachment_type:x/y", "w" for "w:word": the
// part of a feature's text that names what kind of fact it is, for check ids.
std::string feature_kind(std::string_view text) {
    std::size_t end = text.find(':');
    const std::size_t second = end == std::string_view::npos ? end : text.find(':', end + 1);
    if (second != std::string_view::npos &&
        std::all_of(text.begin() + static_cast<std::ptrdiff_t>(end) + 1, text.begin() + static_cast<std::ptrdiff_t>(second),
                    [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; })) {
        end = second;
    }
    return std::string(text.substr(0, end));
}

void check_utf8(std::string_view id, std::string_view what, std::string_view s) {
    const std::size_t bad = mailsift::fuzz::invalid_utf8_at(s);
    FUZZ_CHECK(id, bad == std::string_view::npos,
               std::string(what) + " is not UTF-8 at byte " + std::to_string(bad) + ": " + printable(s));
}

bool lower_ascii_only(std::string_view s) {
    return std::none_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

void check_parsed(const mime::ParsedMessage& m, const mime::Limits& limits) {
    FUZZ_CHECK("parse-part-count", m.part_count >= 1 && m.part_count <= limits.max_parts,
               "part_count " + std::to_string(m.part_count));
    FUZZ_CHECK("parse-header-count", m.headers.size() <= limits.max_headers,
               std::to_string(m.headers.size()) + " headers");
    for (std::size_t i = 0; i < m.limits_hit.size(); ++i) {
        FUZZ_CHECK("parse-limits-once",
                   std::count(m.limits_hit.begin(), m.limits_hit.end(), m.limits_hit[i]) == 1, "a limit listed twice");
    }
    for (const auto& h : m.headers) {
        FUZZ_CHECK("parse-header-name",
                   !h.name.empty() && std::all_of(h.name.begin(), h.name.end(),
                                                  [](char c) {
                                                      const auto u = static_cast<unsigned char>(c);
                                                      return u > 32 && u < 127 && c != ':';
                                                  }),
                   "header name " + printable(h.name));
        check_utf8("parse-utf8-header", "header value", h.value);
    }
    for (const auto& t : m.texts) {
        check_utf8("parse-utf8-text", "text part", t.text);
        FUZZ_CHECK("parse-charset-lower", lower_ascii_only(t.charset), "charset " + printable(t.charset));
    }
    for (const auto& l : m.links) {
        check_utf8("parse-utf8-link", "link target", l.target);
        check_utf8("parse-utf8-link", "link text", l.text);
    }
    for (const auto& a : m.attachments) {
        check_utf8("parse-utf8-filename", "attachment file name", a.filename);
        const std::size_t slash = a.content_type.find('/');
        // type/subtype in lower-case printable ASCII, or the placeholder for anything else.
        FUZZ_CHECK("parse-content-type",
                   a.content_type == mime::invalid_content_type ||
                       (slash != std::string::npos && slash > 0 && slash + 1 < a.content_type.size() &&
                        lower_ascii_only(a.content_type)),
                   "content type " + printable(a.content_type));
    }
}

std::vector<features::Feature> run(std::string_view raw, const mime::Limits& limits, const features::Options& options,
                                   bool check) {
    const mime::ParsedMessage parsed = mime::parse(raw, limits);
    if (check) check_parsed(parsed, limits);
    const StandInContacts contacts;
    const features::FeatureBag bag = features::extract(parsed, nullptr, &contacts, options);
    if (check) {
        FUZZ_CHECK("bag-cap", bag.size() <= options.max_features,
                   std::to_string(bag.size()) + " features, cap " + std::to_string(options.max_features));
        FUZZ_CHECK("bag-full", !bag.full() || bag.size() == options.max_features,
                   "full() with " + std::to_string(bag.size()) + " features");
        for (const auto& e : bag.entries()) {
            const std::string_view text = bag.text(e);
            FUZZ_CHECK("feature-namespace", known_namespace(text), "feature " + printable(text));
            if (!valid_utf8(text)) {
                // One id per kind of feature, so that a known bug in one can be tolerated (MAILSIFT_FUZZ_ALLOW).
                check_utf8("feature-utf8:" + feature_kind(text), "feature", text);
            }
            FUZZ_CHECK("feature-count", e.count >= 1 && bag.count(text) == e.count,
                       "feature " + printable(text) + " count " + std::to_string(e.count) + ", lookup " +
                           std::to_string(bag.count(text)));
        }
    }
    auto sorted = bag.sorted();
    if (check) {
        FUZZ_CHECK("bag-sorted-size", sorted.size() == bag.size(), "sorted() lost features");
    }
    return sorted;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view raw(reinterpret_cast<const char*>(data), size);
    const mime::Limits limits;
    const features::Options options;
    const auto first = run(raw, limits, options, true);
    const auto second = run(raw, limits, options, false);
    std::size_t diff = 0;
    while (diff < first.size() && diff < second.size() && first[diff].text == second[diff].text &&
           first[diff].count == second[diff].count) {
        ++diff;
    }
    const bool same = first.size() == second.size() && diff == first.size();
    FUZZ_CHECK("deterministic", same,
               "second run differs at feature " + std::to_string(diff) + " (" + std::to_string(first.size()) + " vs " +
                   std::to_string(second.size()) + " features)");
    return 0;
}
