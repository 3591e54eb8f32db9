// Scan lines with the shape of mail, shared by the store and daemon tests.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace mailsift::testing {

// Features of the kinds the extractor writes, about 200 of them as in an average
// message: words drawn from a vocabulary of 3,000 syllable words, most of them
// rare, as in mail; headers and hosts that vary by sender.
inline std::string typical_scan(int seed) {
    static const char* const syllables[] = {"ka", "lo", "mi", "ne", "ru", "sta", "ber", "don", "fi", "gal",
                                            "ho", "jen", "tor", "vex", "quo", "pri", "zel", "am", "ost", "ul"};
    std::uint32_t x = 2654435761u * static_cast<std::uint32_t>(seed + 1);
    auto next = [&x] { return x = x * 1664525u + 1013904223u; };
    auto word = [&](std::uint32_t n) {
        std::string w;
        for (int k = 0; k < 3; ++k, n /= 20) w += syllables[n % 20];
        return w;
    };
    std::map<std::string, int> features;
    for (int i = 0; i < 170; ++i) {
        const std::uint32_t r = next() >> 8;
        ++features["w:" + word(r % 8 == 0 ? r % 3000 : r % 300)];  // a few common words, a long tail
    }
    for (int i = 0; i < 8; ++i) ++features["s:" + word((next() >> 8) % 300)];
    for (int i = 0; i < 6; ++i) ++features["url:host:www." + word((next() >> 8) % 500) + ".com"];
    const std::string sender = word(static_cast<std::uint32_t>(seed) % 400);
    ++features["hdr:from:" + sender + "@" + word(static_cast<std::uint32_t>(seed) % 40) + ".example"];
    ++features["hdr:sender_not_in_contacts"];
    features["pat:all_caps_word"] += seed % 7;
    std::string lines;
    for (const auto& [text, n] : features) {
        if (n > 0) lines += text + "\t" + std::to_string(n) + "\n";
    }
    return lines;
}

}  // namespace mailsift::testing
