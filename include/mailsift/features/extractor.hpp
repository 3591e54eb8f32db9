// mailsift::features — a ParsedMessage (plus envelope and contacts) becomes a
// bag of namespaced features with counts.
//
// Owns: tokenization (UTF-8 aware, case-folded), text patterns, URL facts,
// header and envelope facts, MIME shape. Knows nothing about SQLite, sockets
// or scoring. Contacts are seen only through the small Contacts interface.
//
// Feature namespaces (the text before the first ':'):
//   w:   body word                    s:   subject word
//   h:   header word (all headers but those below share it)
//   hdr: header facts (sender, contacts, Reply-To, missing fields, mailer)
//   pat: text patterns (caps, money, !!!, $$$, phone)
//   url: URL facts (host, registrable domain, IP host, text/target mismatch)
//   mime: MIME shape (HTML-only, attachment types, malformed, limits)
//   env: envelope facts (HELO, client, sender domain, authentication)
//   rcvd: relay-path words (Received, Delivered-To)    only with relay_path
//   date: weekday, month, year and zone of Date        only with dates
// Never features: per-message ids and X-Mailsift-* (our own verdict). The relay
// path and the date say where and when a corpus was collected rather than what
// a message is; they are switchable families, off by default (docs/accuracy.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mailsift/features/feature_bag.hpp"
#include "mailsift/mime/message.hpp"

namespace mailsift::features {

// Is this address (lower-case addr-spec) one the user corresponds with?
class Contacts {
public:
    virtual ~Contacts() = default;
    virtual bool contains(std::string_view address) const = 0;
};

// What the MTA told us about the SMTP transaction; empty fields are unknown.
struct Envelope {
    std::string client_address;  // IP literal
    std::string client_name;     // reverse DNS name, "unknown" when none
    std::string helo;
    std::string sender;          // MAIL FROM addr-spec
    std::vector<std::string> recipients;
    std::string auth_user;       // {auth_authen}; non-empty = authenticated
};

struct Options {
    bool words = true;      // w:
    bool word_pairs = false;  // w2: adjacent body words, "a_b"
    bool cjk_bigrams = false; // Chinese and Japanese text as overlapping character pairs (text.hpp); docs/accuracy.md
    bool relay_path = false;  // rcvd: words of Received and Delivered-To: where a corpus was collected
    bool dates = false;       // date: weekday, month, year, zone of Date: when it was collected
    bool subject = true;    // s:
    bool headers = true;    // h: and hdr:
    bool patterns = true;   // pat:
    bool urls = true;       // url:
    bool mime_shape = true; // mime:
    bool envelope = true;   // env:
    std::size_t min_token_bytes = 2;
    std::size_t max_token_bytes = 40;   // longer tokens become pat:long_token
    std::size_t max_features = 20000;   // distinct features kept per message
};

FeatureBag extract(const mime::ParsedMessage& message, const Envelope* envelope, const Contacts* contacts,
                   const Options& options);

// True for features drawn from the header and envelope (h:, hdr:, env:, rcvd:, date:), the
// view the model may normalise apart from the content (model::Term::header).
bool is_header_feature(std::string_view feature);

// The lower-case addr-spec in a header value such as "Name <User@Example.COM>", or "".
std::string address_in(std::string_view header_value);
// The part after '@', or "".
std::string_view domain_of(std::string_view address);
// A host's registrable domain by a small heuristic (no public-suffix list):
// the last two labels, or three under a two-letter country code with a
// generic second level ("example.co.uk"). IP literals are returned unchanged.
std::string registrable_domain(std::string_view host);

}  // namespace mailsift::features
