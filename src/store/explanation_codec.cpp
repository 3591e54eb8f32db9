// How a history line's explanation (engine::encode(ScoreParts), about 900
// bytes of tab-separated text) is kept on disk: compressed with zstd, and read
// back into the same text, so that nothing above the store sees the change.
//
// Why: an explanation was three fifths of a history line (issue 41: a line and
// its signature within 2 KB). Its numbers keep nine digits (the parts must
// still add up to the score shown) and its words are the message's own, so
// the text stays as it is and is compressed: 912 B become about 550 on the
// SpamAssassin corpus (level 3; level 19 saves 15 B more at many times the
// time, on the recorder's thread).
//
// Forms read: a zstd frame (its magic number first; written since schema 15 /
// PostgreSQL schema 10) or the text itself (every line written before: it
// starts with "mailsift-parts", never with the frame's magic).
#include <zstd.h>

#include <memory>
#include <stdexcept>

#include "codec.hpp"

namespace mailsift::store {

namespace {

constexpr int explanation_level = 3;
// An explanation is a few kilobytes at most; a larger size means the row is damaged.
constexpr unsigned long long max_explanation_bytes = 1ull << 20;

bool is_zstd_frame(std::string_view s) {
    return s.size() >= 4 && static_cast<unsigned char>(s[0]) == 0x28 && static_cast<unsigned char>(s[1]) == 0xB5 &&
           static_cast<unsigned char>(s[2]) == 0x2F && static_cast<unsigned char>(s[3]) == 0xFD;
}

}  // namespace

std::string pack_explanation(std::string_view text) {
    if (text.empty()) return {};  // none kept (a site that keeps no Subject lines)
    struct Context {
        ZSTD_CCtx* cctx = ZSTD_createCCtx();
        ~Context() { ZSTD_freeCCtx(cctx); }
    };
    thread_local Context context;  // setting one up costs more than an explanation
    if (!context.cctx) throw std::runtime_error("cannot compress an explanation: out of memory");
    ZSTD_CCtx_reset(context.cctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(context.cctx, ZSTD_c_compressionLevel, explanation_level);
    std::string out(ZSTD_compressBound(text.size()), '\0');
    const std::size_t n = ZSTD_compress2(context.cctx, out.data(), out.size(), text.data(), text.size());
    if (ZSTD_isError(n)) throw std::runtime_error(std::string("cannot compress an explanation: ") + ZSTD_getErrorName(n));
    out.resize(n);
    return out;
}

std::string unpack_explanation(std::string_view stored) {
    if (!is_zstd_frame(stored)) return std::string(stored);  // the text form of earlier lines
    const unsigned long long size = ZSTD_getFrameContentSize(stored.data(), stored.size());
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > max_explanation_bytes) return {};
    std::string text(static_cast<std::size_t>(size), '\0');
    const std::size_t n = ZSTD_decompress(text.data(), text.size(), stored.data(), stored.size());
    // A damaged one reads as none: the console says the line has no explanation.
    if (ZSTD_isError(n) || n != text.size()) return {};
    return text;
}

}  // namespace mailsift::store
