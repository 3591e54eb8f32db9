// The linear scorer's view of a message: 4-grams of the leading bytes and the
// bag's features, in 2^bits slots, each once.
#include "mailsift/features/slots.hpp"

#include <catch2/catch.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "mailsift/features/feature_bag.hpp"

using namespace mailsift::features;

TEST_CASE("slots are the distinct 4-grams of the leading bytes", "[slots]") {
    SlotOptions o;
    o.bits = 20;
    o.bag = false;
    o.ngram_bytes = 3000;
    FeatureBag bag;
    std::vector<std::uint32_t> out;
    message_slots("abcdabcd", bag, o, out);
    // abcd bcda cdab dabc abcd: four distinct 4-grams.
    REQUIRE(out.size() == 4);
    CHECK(out[0] == ngram_slot(0x61626364u, 20));  // "abcd", first met
    std::vector<std::uint32_t> sorted = out;
    std::sort(sorted.begin(), sorted.end());
    CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
    for (auto s : out) CHECK(s < (1u << 20));

    // Nothing of one call leaks into the next (the bitmap is cleared).
    message_slots("abcdabcd", bag, o, out);
    CHECK(out.size() == 4);
    message_slots("abc", bag, o, out);
    CHECK(out.empty());  // shorter than one 4-gram

    // Only the first ngram_bytes bytes count.
    o.ngram_bytes = 5;
    message_slots("abcdefghij", bag, o, out);
    CHECK(out.size() == 2);  // abcd bcde
}

TEST_CASE("the bag's features join the 4-grams when asked", "[slots]") {
    SlotOptions o;
    o.bits = 16;
    o.ngram_bytes = 0;
    FeatureBag bag;
    bag.add("w:viagra", 3);
    bag.add("s:free");
    std::vector<std::uint32_t> out;
    message_slots("Subject: free viagra", bag, o, out);
    REQUIRE(out.size() == 2);  // counts do not matter: presence
    o.bag = false;
    message_slots("Subject: free viagra", bag, o, out);
    CHECK(out.empty());
    // Deterministic across calls and builds: a fixed function of the id.
    CHECK(feature_slot(0x0123456789abcdefULL, 16) == feature_slot(0x0123456789abcdefULL, 16));
    CHECK(feature_slot(0x0123456789abcdefULL, 16) < (1u << 16));
}

TEST_CASE("an explanation's 4-gram says where it starts and shows the bytes around it", "[slots]") {
    SlotOptions o;
    o.bits = 20;
    o.bag = false;
    o.ngram_bytes = 3000;
    FeatureBag bag;
    const std::string view = "Visit http://www.domain.org/free \"now\"\n";
    const std::uint32_t slot = ngram_slot(0x6e2e6f72u, 20);  // "n.or"
    const auto sources = slot_sources(view, bag, o, std::vector<std::uint32_t>{slot});
    REQUIRE(sources.size() == 1);
    // Where it starts (byte 22 of the view), six bytes each side, the gram in brackets.
    CHECK(sources[0] == "\"n.or\" at 22: .domai[n.or]g/free");
    // Near the start and the end, what there is; a quote, a newline as \xHH.
    const auto first = slot_sources(view, bag, o, std::vector<std::uint32_t>{ngram_slot(0x56697369u, 20)});  // "Visi"
    CHECK(first[0] == "\"Visi\" at 0: [Visi]t http");
    const auto last = slot_sources(view, bag, o, std::vector<std::uint32_t>{ngram_slot(0x6f77220au, 20)});  // ow"\n
    CHECK(last[0] == "\"ow\\x22\\x0a\" at 35: ree \\x22n[ow\\x22\\x0a]");
    // A 4-gram met twice is listed once, at its first place.
    const auto twice = slot_sources("abcd-abcd", bag, o, std::vector<std::uint32_t>{ngram_slot(0x61626364u, 20)});
    CHECK(twice[0] == "\"abcd\" at 0: [abcd]-abcd");
}
