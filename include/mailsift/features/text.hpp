// mailsift::features text primitives: UTF-8 word splitting and case folding.
// Used by the extractor; public so that tests and tools can see the lexer alone.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mailsift::features {

// Decodes one UTF-8 code point at s[i], advancing i; invalid bytes yield U+FFFD and advance one.
char32_t next_code_point(std::string_view s, std::size_t& i);

// Simple case folding for Latin, Greek and Cyrillic letters.
char32_t fold_case(char32_t cp);
bool is_word_code_point(char32_t cp);
bool is_upper(char32_t cp);
bool is_letter(char32_t cp);

// Calls f(std::string_view word) for every word: maximal runs of word code points,
// joined across single internal '.', '-', '\'' or '_' (e.g. "don't", "e-mail", "3.5").
template <typename F>
void for_each_word(std::string_view text, F&& f) {
    std::size_t i = 0;
    std::size_t start = std::string_view::npos;
    std::size_t last_end = 0;  // end of the last word code point
    while (i < text.size()) {
        const std::size_t at = i;
        const auto byte = static_cast<unsigned char>(text[i]);
        // ASCII letters and digits are most of any text: no decoding needed.
        if (static_cast<unsigned>((byte | 0x20) - 'a') < 26u || static_cast<unsigned>(byte - '0') < 10u) {
            if (start == std::string_view::npos) start = at;
            last_end = ++i;
            continue;
        }
        const char32_t cp = byte < 0x80 ? (++i, char32_t{byte}) : next_code_point(text, i);
        if (is_word_code_point(cp)) {
            if (start == std::string_view::npos) start = at;
            last_end = i;
            continue;
        }
        const bool joiner = cp == U'.' || cp == U'-' || cp == U'\'' || cp == U'_';
        if (start != std::string_view::npos && joiner && last_end == at && i < text.size()) {
            std::size_t peek = i;
            if (is_word_code_point(next_code_point(text, peek))) continue;
        }
        if (start != std::string_view::npos) {
            f(text.substr(start, last_end - start));
            start = std::string_view::npos;
        }
    }
    if (start != std::string_view::npos) f(text.substr(start, last_end - start));
}

// Case-folded copy of a UTF-8 word.
void fold_into(std::string_view word, std::string& out);

}  // namespace mailsift::features
