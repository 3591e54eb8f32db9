// What a message is known by: digest, signature, verdict word (signature.hpp).
#include "mailsift/engine/signature.hpp"

#include <strings.h>

#include <algorithm>
#include <cstring>

#include "mailsift/features/feature_hash.hpp"

namespace mailsift::engine {

std::optional<store::Digest> message_signature(const std::vector<mime::Header>& headers) {
    std::optional<store::Digest> found;
    for (const auto& h : headers) {
        if (strcasecmp(h.name.c_str(), "X-Mailsift-Signature") != 0) continue;
        if (auto d = parse_signature(h.value)) found = d;
    }
    return found;
}

std::optional<store::Digest> message_signature(std::string_view raw) { return message_signature(mime::parse_header(raw)); }

store::Digest message_identity(std::string_view raw) {
    if (auto signature = message_signature(raw)) return *signature;
    return message_digest(raw);
}

const char* verdict_word(model::Verdict v) {
    switch (v) {
        case model::Verdict::spam: return "Yes";
        case model::Verdict::ham: return "No";
        case model::Verdict::unsure: return "Unsure";
    }
    return "Unsure";
}

std::optional<model::Verdict> verdict_of_status(std::string_view status) {
    const std::string_view word = status.substr(0, status.find_first_of(", \t"));
    for (const auto v : {model::Verdict::spam, model::Verdict::ham, model::Verdict::unsure}) {
        if (word == verdict_word(v)) return v;
    }
    return std::nullopt;
}

namespace {

store::Digest digest_of(std::string_view canonical) {
    const std::uint64_t a = features::hash64(canonical, 0x9e3779b97f4a7c15ULL);
    const std::uint64_t b = features::hash64(canonical, 0xc2b2ae3d27d4eb4fULL);
    store::Digest d{};
    for (int k = 0; k < 8; ++k) {
        d[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(a >> (8 * k));
        d[static_cast<std::size_t>(8 + k)] = static_cast<std::uint8_t>(b >> (8 * k));
    }
    return d;
}

bool is_own_field(std::string_view line) { return line.size() >= 11 && strncasecmp(line.data(), "x-mailsift-", 11) == 0; }

// The message as the digest reads it (message_digest()); `changed` says
// whether that differs from what the earlier digest read (message_digests()).
std::string canonical_message(std::string_view raw, bool& changed) {
    std::string out;
    out.reserve(raw.size());
    changed = false;
    std::size_t i = 0;
    if (raw.starts_with("From ")) {  // an mbox envelope line: no header field, no part of what an MTA passes on
        const std::size_t nl = raw.find('\n');
        i = nl == std::string_view::npos ? raw.size() : nl + 1;
        changed = true;
    }
    // Lines end in LF, whatever ended them ("\r\n" on the wire, "\n" in a mailbox).
    const auto append_lines = [&](std::string_view text) {
        for (std::size_t at = 0; at < text.size();) {
            const std::size_t crlf = text.find("\r\n", at);
            if (crlf == std::string_view::npos) {
                out.append(text.substr(at));
                break;
            }
            out.append(text.substr(at, crlf - at)).push_back('\n');
            changed = true;
            at = crlf + 2;
        }
    };
    bool skipping = false;
    while (i < raw.size()) {
        const std::size_t nl = raw.find('\n', i);
        const std::size_t end = nl == std::string_view::npos ? raw.size() : nl + 1;
        const std::string_view line = raw.substr(i, end - i);
        if (line == "\n" || line == "\r\n") {  // the header section ends: the body as it is
            append_lines(raw.substr(i));
            return out;
        }
        if (line.front() == ' ' || line.front() == '\t') {  // a folded line of the field before
            if (!skipping) append_lines(line);
        } else if ((skipping = is_own_field(line))) {
        } else if (const std::size_t colon = line.find(':'); colon != std::string_view::npos) {
            // "Name: value": one space after the colon, as mailsiftd rebuilds a
            // field from the name and value the MTA passes (Postfix drops the
            // space, Sendmail keeps it).
            std::size_t v = colon + 1;
            while (v < line.size() && (line[v] == ' ' || line[v] == '\t')) ++v;
            if (v != colon + 2 || line[colon + 1] != ' ') changed = true;
            out.append(line.substr(0, colon + 1)).push_back(' ');
            append_lines(line.substr(v));
        } else {
            append_lines(line);
        }
        i = end;
    }
    return out;  // no body: nothing more
}

}  // namespace

store::Digest message_digest(std::string_view raw) {
    bool changed = false;
    return digest_of(canonical_message(raw, changed));
}

MessageDigests message_digests(std::string_view raw) {
    bool changed = false;
    MessageDigests out{digest_of(canonical_message(raw, changed)), std::nullopt};
    // Unchanged, the earlier digest read the same text. Changed (a CR, an mbox
    // line or a field's spacing dropped), the texts differ, and so do the digests.
    if (!changed) return out;
    // The raw bytes without our own fields (and their folded lines), as digests were read before.
    std::string kept;
    kept.reserve(raw.size());
    std::size_t i = 0;
    bool skipping = false;
    while (i < raw.size()) {
        const std::size_t nl = raw.find('\n', i);
        const std::size_t end = nl == std::string_view::npos ? raw.size() : nl + 1;
        const std::string_view line = raw.substr(i, end - i);
        if (line == "\n" || line == "\r\n") {
            kept.append(raw.substr(i));
            break;
        }
        if (line.front() != ' ' && line.front() != '\t') skipping = is_own_field(line);
        if (!skipping) kept.append(line);
        i = end;
    }
    out.earlier = digest_of(kept);
    return out;
}

std::string signature_text(const store::Digest& d) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(d.size() * 2);
    for (const auto b : d) {
        out.push_back(hex[b >> 4]);
        out.push_back(hex[b & 15]);
    }
    return out;
}

std::optional<store::Digest> parse_signature(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
    store::Digest d{};
    if (text.size() != d.size() * 2) return std::nullopt;
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    for (std::size_t i = 0; i < d.size(); ++i) {
        const int hi = nibble(text[2 * i]), lo = nibble(text[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        d[i] = static_cast<std::uint8_t>(hi * 16 + lo);
    }
    return d;
}

}  // namespace mailsift::engine
