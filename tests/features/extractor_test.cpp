#include "mailsift/features/extractor.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>

#include "../support/paths.hpp"
#include "mailsift/features/feature_hash.hpp"
#include "mailsift/features/text.hpp"

using namespace mailsift;
using features::FeatureBag;

namespace {

mime::ParsedMessage message(std::vector<mime::Header> headers, std::string body,
                            mime::TextKind kind = mime::TextKind::plain) {
    mime::ParsedMessage m;
    m.headers = std::move(headers);
    m.texts.push_back({kind, std::move(body), ""});
    m.part_count = 1;
    return m;
}

FeatureBag extract(const mime::ParsedMessage& m, const features::Contacts* contacts = nullptr) {
    return features::extract(m, nullptr, contacts, features::Options{});
}

struct ListContacts final : features::Contacts {
    std::vector<std::string> known;
    bool contains(std::string_view a) const override {
        return std::find(known.begin(), known.end(), a) != known.end();
    }
};

}  // namespace

TEST_CASE("Body words are case-folded and counted", "[features]") {
    const auto bag = extract(message({}, "Free FREE free offer"));
    REQUIRE(bag.count("w:free") == 3);
    REQUIRE(bag.count("w:offer") == 1);
    REQUIRE(bag.count("w:FREE") == 0);
}

TEST_CASE("Words keep internal apostrophes, hyphens and dots", "[features]") {
    std::vector<std::string> words;
    features::for_each_word("don't e-mail me at 3.14, ok... -- end.", [&](std::string_view w) { words.emplace_back(w); });
    REQUIRE(words == std::vector<std::string>{"don't", "e-mail", "me", "at", "3.14", "ok", "end"});
}

TEST_CASE("Chinese and Japanese text becomes character bigrams", "[features]") {
    std::vector<std::string> words;
    features::for_each_word("免费发票abc垃圾邮件。好 テスト한국어", [&](std::string_view w) { words.emplace_back(w); });
    REQUIRE(words == std::vector<std::string>{"免费", "费发", "发票", "abc", "垃圾", "圾邮", "邮件", "好", "テス", "スト",
                                              "한국어"});
    features::Options on;
    on.cjk_bigrams = true;
    const auto bag = features::extract(message({{"Subject", "代开发票"}}, "优惠代开发票，优惠"), nullptr, nullptr, on);
    REQUIRE(bag.count("w:发票") == 1);
    REQUIRE(bag.count("w:优惠") == 2);
    REQUIRE(bag.count("s:代开") == 1);
    REQUIRE(bag.count("w:优惠代开发票") == 0);
    // Off (the default), a run up to the punctuation is one word.
    std::vector<std::string> runs;
    features::for_each_word("垃圾邮件。好", [&](std::string_view w) { runs.emplace_back(w); }, false);
    REQUIRE(runs == std::vector<std::string>{"垃圾邮件", "好"});
    // Full-width punctuation beyond U+FF0F separates words too (：；？［］｛｝～).
    runs.clear();
    features::for_each_word("您好：谢谢？［好］", [&](std::string_view w) { runs.emplace_back(w); }, false);
    REQUIRE(runs == std::vector<std::string>{"您好", "谢谢", "好"});
    REQUIRE(extract(message({}, "优惠代开发票，优惠")).count("w:优惠代开发票") == 1);
}

TEST_CASE("UTF-8 words are folded beyond ASCII", "[features]") {
    std::string folded;
    features::fold_into("ÉCOLE Ωmega ПРИВЕТ", folded);
    REQUIRE(folded == "école ωmega привет");
    const auto bag = extract(message({}, "Résumé RÉSUMÉ — «naïve»"));
    REQUIRE(bag.count("w:résumé") == 2);
    REQUIRE(bag.count("w:naïve") == 1);
}

TEST_CASE("Subject words have their own namespace", "[features]") {
    const auto bag = extract(message({{"Subject", "Cheap Pills"}}, "hello there"));
    REQUIRE(bag.count("s:cheap") == 1);
    REQUIRE(bag.count("s:pills") == 1);
    REQUIRE(bag.count("w:cheap") == 0);
}

TEST_CASE("Text patterns are recognised", "[features]") {
    SECTION("all-caps words and the share of capitals") {
        const auto bag = extract(message({}, "ACT NOW to WIN big. THIS IS YOUR CHANCE TO GET RICH AND FAMOUS TODAY OK"));
        REQUIRE(bag.count("pat:all_caps_word") >= 10);
        REQUIRE(bag.count("pat:caps_share:>50%") == 1);
    }
    SECTION("money amounts in several notations") {
        const auto bag = extract(message({}, "only $99 or $ 1,000.00 or €50 or 200 USD or £5"));
        REQUIRE(bag.count("pat:money") == 5);
        REQUIRE(bag.count("pat:money_large") == 1);
    }
    SECTION("runs of exclamation marks and dollar signs") {
        const auto bag = extract(message({}, "wow!!! cash $$$$ now! fine!!"));
        REQUIRE(bag.count("pat:run_of_!") == 1);
        REQUIRE(bag.count("pat:run_of_$") == 1);
    }
    SECTION("phone-like numbers but not short numbers") {
        const auto bag = extract(message({}, "call 1-800-555-0199 or (212) 555-0100; room 42, year 2002"));
        REQUIRE(bag.count("pat:phone_number") == 2);
    }
}

TEST_CASE("URLs give host, registrable domain and IP facts", "[features]") {
    auto m = message({}, "see http://www.shop.example.co.uk/buy?x=1 and https://192.0.2.7/login");
    m.links.push_back({"http://evil.example/x", "http://www.paypal.example/"});
    const auto bag = extract(m);
    REQUIRE(bag.count("url:host:www.shop.example.co.uk") == 1);
    REQUIRE(bag.count("url:domain:example.co.uk") == 1);
    REQUIRE(bag.count("url:ip_host") == 1);
    REQUIRE(bag.count("url:text_names_other_host") == 1);
    REQUIRE(bag.count("url:domain:evil.example") == 1);
}

TEST_CASE("Registrable domains follow the two-label heuristic", "[features]") {
    REQUIRE(features::registrable_domain("a.b.example.com") == "example.com");
    REQUIRE(features::registrable_domain("www.bbc.co.uk") == "bbc.co.uk");
    REQUIRE(features::registrable_domain("example.com") == "example.com");
    REQUIRE(features::registrable_domain("10.0.0.1") == "10.0.0.1");
}

TEST_CASE("Header facts: sender, contacts, Reply-To, missing fields, mailer", "[features]") {
    ListContacts contacts;
    contacts.known = {"alice@example.org"};
    SECTION("a known sender with the same Reply-To domain") {
        const auto bag = extract(message({{"From", "Alice <Alice@Example.ORG>"},
                                          {"Reply-To", "alice@lists.example.org"},
                                          {"Date", "Mon, 2 Sep 2002 10:00:00 +0000"},
                                          {"Message-ID", "<1@example.org>"},
                                          {"X-Mailer", "Mutt/1.4i"}},
                                         "hi"),
                                 &contacts);
        REQUIRE(bag.count("hdr:from:alice@example.org") == 1);
        REQUIRE(bag.count("hdr:from_domain:example.org") == 1);
        REQUIRE(bag.count("hdr:sender_in_contacts") == 1);
        REQUIRE(bag.count("hdr:reply_to_same_domain") == 1);
        REQUIRE(bag.count("hdr:no_date") == 0);
        REQUIRE(bag.count("hdr:mailer:mutt") == 1);
    }
    SECTION("an unknown sender with Reply-To elsewhere and no Date or Message-ID") {
        const auto bag = extract(message({{"From", "x@spam.example"}, {"Reply-To", "y@other.example"}}, "hi"), &contacts);
        REQUIRE(bag.count("hdr:sender_not_in_contacts") == 1);
        REQUIRE(bag.count("hdr:reply_to_other_domain") == 1);
        REQUIRE(bag.count("hdr:no_date") == 1);
        REQUIRE(bag.count("hdr:no_message_id") == 1);
    }
}

TEST_CASE("Timestamps and our own verdict headers never become features", "[features]") {
    const auto bag = extract(message({{"Date", "Mon, 2 Sep 2002 10:00:00 +0000"},
                                      {"Received", "from mx.example.net (mx.example.net [192.0.2.1]) by relay.example; Mon, 2 Sep 2002 10:00:00 +0000"},
                                      {"X-Mailsift-Status", "Yes, score=0.99"}},
                                     "body"));
    for (const auto& f : bag.sorted()) {
        const std::string& text = f.text;
        INFO(text);
        REQUIRE(text.find("2002") == std::string::npos);
        REQUIRE(text.find("sep") == std::string::npos);
        REQUIRE(text.find("mailsift") == std::string::npos);
        REQUIRE(text.find("yes") == std::string::npos);
    }
    // The relay path is no feature by default: it tells where mail was collected.
    REQUIRE(bag.count("h:mx.example.net") == 0);
    REQUIRE(bag.count("h:relay.example") == 0);
    REQUIRE(bag.count("rcvd:mx.example.net") == 0);
    REQUIRE(bag.count("date:2002") == 0);
}

TEST_CASE("The relay path and the date are families of their own, off by default", "[features]") {
    features::Options on;
    on.relay_path = true;
    on.dates = true;
    const auto bag = features::extract(
        message({{"Date", "Mon, 2 Sep 2002 10:00:00 +0000"},
                 {"Received", "from mx.example.net (mx.example.net [192.0.2.1]) by relay.example; Mon, 2 Sep 2002"},
                 {"Delivered-To", "user@example.org"}},
                "body"),
        nullptr, nullptr, on);
    REQUIRE(bag.count("rcvd:mx.example.net") == 2);  // a count, like any word
    REQUIRE(bag.count("rcvd:relay.example") == 1);
    REQUIRE(bag.count("rcvd:user") == 1);
    REQUIRE(bag.count("rcvd:192.0.2.1") == 0);  // numbers stay out, as in every header
    REQUIRE(bag.count("h:mx.example.net") == 0);  // not mixed into the header words
    // Weekday, month, year and zone; not the day or the time of day.
    REQUIRE(bag.count("date:mon") == 1);
    REQUIRE(bag.count("date:sep") == 1);
    REQUIRE(bag.count("date:2002") == 1);
    REQUIRE(bag.count("date:0000") == 1);
    REQUIRE(bag.count("date:2") == 0);
    REQUIRE(bag.count("date:10") == 0);
}

TEST_CASE("MIME shape facts", "[features]") {
    auto m = message({}, "buy now", mime::TextKind::html);
    m.attachments.push_back({"invoice.PDF.exe", "application/octet-stream", 1234});
    const auto bag = extract(m);
    REQUIRE(bag.count("mime:html_only") == 1);
    REQUIRE(bag.count("mime:attachment_type:application/octet-stream") == 1);
    REQUIRE(bag.count("mime:attachment_ext:exe") == 1);
}

TEST_CASE("Envelope facts appear only when an envelope is given", "[features]") {
    features::Envelope env;
    env.helo = "Mail.Example.NET";
    env.client_name = "unknown";
    env.sender = "<bounce@lists.example.org>";
    env.recipients = {"a@example.org"};
    const auto m = message({}, "x");
    const auto with = features::extract(m, &env, nullptr, features::Options{});
    REQUIRE(with.count("env:helo:mail.example.net") == 1);
    REQUIRE(with.count("env:client_unresolved") == 1);
    REQUIRE(with.count("env:sender_domain:lists.example.org") == 1);
    const auto without = extract(m);
    REQUIRE(without.count("env:client_unresolved") == 0);
}

TEST_CASE("Each feature kind can be switched off", "[features]") {
    features::Options opt;
    opt.words = false;
    opt.patterns = false;
    const auto bag = features::extract(message({{"Subject", "hi"}}, "FREE $99!!!"), nullptr, nullptr, opt);
    REQUIRE(bag.count("w:free") == 0);
    REQUIRE(bag.count("pat:money") == 0);
    REQUIRE(bag.count("s:hi") == 1);
}

TEST_CASE("Token length and feature count limits hold", "[features]") {
    features::Options opt;
    opt.max_token_bytes = 10;
    opt.max_features = 5;
    const auto bag = features::extract(message({}, "a bb supercalifragilistic one two three four five six seven"),
                                       nullptr, nullptr, opt);
    REQUIRE(bag.size() == 5);
    REQUIRE(bag.full());
    REQUIRE(bag.count("w:a") == 0);  // shorter than min_token_bytes
}

TEST_CASE("Addresses are found in header values", "[features]") {
    REQUIRE(features::address_in("\"Doe, John\" <John.Doe@Example.com>") == "john.doe@example.com");
    REQUIRE(features::address_in("jane@example.com (Jane)") == "jane@example.com");
    REQUIRE(features::address_in("no address here").empty());
    REQUIRE(features::domain_of("a@b.example") == "b.example");
}

TEST_CASE("Feature ids are stable across builds", "[features]") {
    // Stored in databases: a change here would orphan every trained model.
    REQUIRE(features::feature_id("w:free") == features::feature_id(std::string("w:") + "free"));
    REQUIRE(features::hash64("", 0) == 0);
    REQUIRE(features::hash64("abc", 1) != features::hash64("abc", 2));
    REQUIRE(features::feature_id("w:free") == 0x8c739c90842d4a35ULL);  // recorded golden value
    REQUIRE(features::hash64("abc", 0) == 0x9cc9c33498a95efbULL);
}

TEST_CASE("Invalid UTF-8 decodes to replacement characters without reading past the end", "[features]") {
    const std::string bad = "ok \xC3 \xFF\xFE end \xE2\x82";
    std::size_t i = 3;
    REQUIRE(features::next_code_point(bad, i) == 0xFFFD);
    REQUIRE(i == 4);
    const auto bag = extract(message({}, bad));
    REQUIRE(bag.count("w:ok") == 1);
    REQUIRE(bag.count("w:end") == 1);
}

TEST_CASE("Header, header-fact and envelope features form the header view", "[features]") {
    REQUIRE(features::is_header_feature("h:example.com"));
    REQUIRE(features::is_header_feature("hdr:no_date"));
    REQUIRE(features::is_header_feature("env:authenticated"));
    REQUIRE_FALSE(features::is_header_feature("w:hello"));
    REQUIRE_FALSE(features::is_header_feature("s:offer"));
    REQUIRE_FALSE(features::is_header_feature("url:host:example.com"));
    REQUIRE_FALSE(features::is_header_feature("hello:world"));
}

namespace {
bool valid_utf8(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        const std::size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (std::size_t k = 1; k < n; ++k) {
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
        }
        i += n;
    }
    return true;
}
}  // namespace

TEST_CASE("Bug attachment_type_not_utf8: attachment types and names from raw bytes stay valid UTF-8", "[features]") {
    // Found by fuzz_mime_features: a Content-Type of raw high bytes became the text of a feature.
    std::ifstream in(std::string(MAILSIFT_TEST_DATA) + "/fuzz/attachment_type_not_utf8.eml", std::ios::binary);
    REQUIRE(in);
    const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const FeatureBag from_file = extract(mime::parse(raw));
    for (const auto& e : from_file.entries()) {
        INFO(from_file.text(e));
        REQUIRE(valid_utf8(from_file.text(e)));
    }

    mime::ParsedMessage m = message({{"From", "a@example.org"}}, "see attached");
    m.attachments.push_back({"report.p\xC3\xA9", "\x9e/-", 10});  // a type of raw high bytes, a non-ASCII extension
    m.attachments.push_back({"x.\xA9\xC3", "application/pdf", 10});  // a name cut inside a UTF-8 sequence
    const FeatureBag bag = extract(m);
    for (const auto& e : bag.entries()) {
        INFO(bag.text(e));
        REQUIRE(valid_utf8(bag.text(e)));
    }
    REQUIRE(bag.count("mime:attachment_type:invalid") == 1);
    REQUIRE(bag.count("mime:attachment_type:application/pdf") == 1);
    REQUIRE(bag.count("mime:attachment_ext:pdf") == 0);
}
