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
// Scripts written without spaces between words: Han ideographs, Hiragana and
// Katakana (Hangul is written with spaces and stays in ordinary words).
constexpr bool is_cjk(char32_t cp) {
    return (cp >= 0x3040 && cp <= 0x30FF) || (cp >= 0x31F0 && cp <= 0x31FF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFF66 && cp <= 0xFF9F) ||
           (cp >= 0x20000 && cp <= 0x3134F);
}

// Calls f(std::string_view word) for every word: maximal runs of word code points,
// joined across single internal '.', '-', '\'' or '_' (e.g. "don't", "e-mail", "3.5").
// Text without spaces between words (is_cjk) has no words to find: each run of
// it gives its overlapping character bigrams instead ("垃圾邮件" -> 垃圾, 圾邮,
// 邮件), a run of one character that character, the usual tokenization of
// Chinese and Japanese for text classification.
// With `cjk_bigrams` false, such a run is one word like any other.
template <typename F>
void for_each_word(std::string_view text, F&& f, bool cjk_bigrams = true) {
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
        if (byte < 0x80) {  // ASCII but not a letter or digit: it ends a word, or joins two
            ++i;
            const bool joiner = byte == '.' || byte == '-' || byte == '\'' || byte == '_';
            if (start == std::string_view::npos) continue;
            if (joiner && last_end == at && i < text.size()) {
                std::size_t peek = i;
                if (is_word_code_point(next_code_point(text, peek))) continue;
            }
            f(text.substr(start, last_end - start));
            start = std::string_view::npos;
            continue;
        }
        const char32_t cp = next_code_point(text, i);
        if (cjk_bigrams && is_cjk(cp)) {
            if (start != std::string_view::npos) {
                f(text.substr(start, last_end - start));
                start = std::string_view::npos;
            }
            std::size_t first = at, second = i;  // the pair's two code points start here
            bool pairs = false;
            while (second < text.size()) {
                std::size_t end = second;
                if (!is_cjk(next_code_point(text, end))) break;
                f(text.substr(first, end - first));
                pairs = true;
                first = second;
                second = end;
            }
            if (!pairs) f(text.substr(at, i - at));
            i = second;
            continue;
        }
        if (is_word_code_point(cp)) {
            if (start == std::string_view::npos) start = at;
            last_end = i;
            continue;
        }
        if (start != std::string_view::npos) {  // (the joiners are all ASCII)
            f(text.substr(start, last_end - start));
            start = std::string_view::npos;
        }
    }
    if (start != std::string_view::npos) f(text.substr(start, last_end - start));
}

// Case-folded copy of a UTF-8 word.
void fold_into(std::string_view word, std::string& out);

// The letters of a word (is_letter) and how many of them are capitals (is_upper).
struct LetterCounts {
    std::size_t letters = 0;
    std::size_t upper = 0;
};
// Appends the case-folded word to `out` (what fold_into writes) and counts its
// letters on the way: one pass over the word for both.
LetterCounts fold_append(std::string_view word, std::string& out);

}  // namespace mailsift::features
