// UTF-8 decoding, word classes and case folding for the tokenizer. No locale:
// the same bytes give the same tokens on every machine.
#include "mailsift/features/text.hpp"

#include "mailsift/mime/message.hpp"

namespace mailsift::features {

char32_t next_code_point(std::string_view s, std::size_t& i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
        ++i;
        return b0;
    }
    int len = 0;
    char32_t cp = 0;
    if ((b0 & 0xE0) == 0xC0) { len = 2; cp = b0 & 0x1F; }
    else if ((b0 & 0xF0) == 0xE0) { len = 3; cp = b0 & 0x0F; }
    else if ((b0 & 0xF8) == 0xF0) { len = 4; cp = b0 & 0x07; }
    else { ++i; return 0xFFFD; }
    if (i + static_cast<std::size_t>(len) > s.size()) { ++i; return 0xFFFD; }
    for (int k = 1; k < len; ++k) {
        const auto b = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
        if ((b & 0xC0) != 0x80) { ++i; return 0xFFFD; }
        cp = (cp << 6) | (b & 0x3F);
    }
    // Overlong forms and surrogates are invalid.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
        ++i;
        return 0xFFFD;
    }
    i += static_cast<std::size_t>(len);
    return cp;
}

bool is_upper(char32_t cp) {
    return (cp >= U'A' && cp <= U'Z') || (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) ||
           (cp >= 0x391 && cp <= 0x3A9) || (cp >= 0x400 && cp <= 0x42F) ||
           (cp >= 0x100 && cp <= 0x17F && (cp % 2 == 0));
}

char32_t fold_case(char32_t cp) {
    if (cp < 0x80) return (cp >= U'A' && cp <= U'Z') ? cp + 32 : cp;
    if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
    if (cp >= 0x100 && cp <= 0x17F && cp % 2 == 0 && cp != 0x130) return cp + 1;  // Latin Extended-A pairs
    if (cp >= 0x391 && cp <= 0x3A9) return cp + 32;                                // Greek
    if (cp >= 0x410 && cp <= 0x42F) return cp + 32;                                // Cyrillic
    if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
    return cp;
}

bool is_letter(char32_t cp) {
    if (cp < 0x80) return (cp >= U'a' && cp <= U'z') || (cp >= U'A' && cp <= U'Z');
    return is_word_code_point(cp);
}

bool is_word_code_point(char32_t cp) {
    if (cp < 0x80) return (cp >= U'a' && cp <= U'z') || (cp >= U'A' && cp <= U'Z') || (cp >= U'0' && cp <= U'9');
    // Punctuation and symbol blocks separate words; everything else non-ASCII
    // (letters of any script, CJK, ...) belongs to words.
    if (cp <= 0xBF || cp == 0xD7 || cp == 0xF7) return false;  // Latin-1 punctuation, NBSP, ×, ÷
    if (cp >= 0x2000 && cp <= 0x2BFF) return false;            // general punctuation, symbols, arrows
    if (cp >= 0x3000 && cp <= 0x303F) return false;            // CJK punctuation
    if (cp >= 0xFE00 && cp <= 0xFE6F) return false;            // variation selectors, small forms
    if (cp >= 0xFF00 && cp <= 0xFF0F) return false;            // full-width punctuation: ！＂＃ ... ／
    if (cp >= 0xFF1A && cp <= 0xFF20) return false;            //   ：；＜＝＞？＠
    if (cp >= 0xFF3B && cp <= 0xFF40) return false;            //   ［＼］＾＿｀
    if (cp >= 0xFF5B && cp <= 0xFF65) return false;            //   ｛｜｝～ and half-width CJK punctuation
    if (cp >= 0xFFF0) return false;                             // specials, U+FFFD
    if (cp >= 0x1F000 && cp <= 0x1FAFF) return false;          // emoji and pictographs
    return true;
}

LetterCounts fold_append(std::string_view word, std::string& out) {
    LetterCounts counts;
    // Fast path: ASCII folds byte for byte in place, once copied (append copies;
    // a resize would first fill the room with zeros).
    const std::size_t base = out.size();
    out.append(word);
    char* const to = out.data() + base;
    std::size_t i = 0;
    for (; i < word.size(); ++i) {
        const auto b = static_cast<unsigned char>(word[i]);
        if (b >= 0x80) break;
        const bool letter = static_cast<unsigned>((b | 0x20) - 'a') < 26u;
        const bool upper = letter && b <= 'Z';
        counts.letters += letter;
        counts.upper += upper;
        to[i] = static_cast<char>(upper ? b + 32 : b);
    }
    if (i == word.size()) return counts;
    out.resize(base + i);
    while (i < word.size()) {
        const auto b = static_cast<unsigned char>(word[i]);
        if (b < 0x80) {
            const bool letter = static_cast<unsigned>((b | 0x20) - 'a') < 26u;
            const bool upper = letter && b <= 'Z';
            counts.letters += letter;
            counts.upper += upper;
            out.push_back(static_cast<char>(upper ? b + 32 : b));
            ++i;
            continue;
        }
        const char32_t cp = next_code_point(word, i);
        if (is_letter(cp)) {
            ++counts.letters;
            if (is_upper(cp)) ++counts.upper;
        }
        mime::append_utf8(out, fold_case(cp));
    }
    return counts;
}

void fold_into(std::string_view word, std::string& out) {
    out.clear();
    fold_append(word, out);
}

}  // namespace mailsift::features
