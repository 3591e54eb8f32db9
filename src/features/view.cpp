// The scorer's view of a message (view.hpp).
#include "mailsift/features/view.hpp"

#include <strings.h>

#include <array>

namespace mailsift::features {

namespace {

bool same_field_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

constexpr std::array<std::string_view, 7> trace_fields = {
    "Received", "Return-Path", "Delivered-To", "X-Original-To", "Envelope-To", "X-Envelope-From", "X-Envelope-To",
};

// One physical line of `text` from `at`: its bytes without the line end, and where the next starts.
std::string_view line_at(std::string_view text, std::size_t at, std::size_t& next) {
    const std::size_t nl = text.find('\n', at);
    const std::size_t end = nl == std::string_view::npos ? text.size() : nl;
    next = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string_view line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
}

}  // namespace

bool left_out_of_view(std::string_view name) {
    if (name.size() >= 11 && same_field_name(name.substr(0, 11), "X-Mailsift-")) return true;
    for (const auto f : trace_fields) {
        if (same_field_name(name, f)) return true;
    }
    return false;
}

void message_view(std::string_view raw, std::size_t max_bytes, std::string& out) {
    out.clear();
    if (max_bytes == 0) return;
    // An mbox "From " line is not part of the message.
    if (raw.starts_with("From ")) {
        const std::size_t nl = raw.find('\n');
        raw = nl == std::string_view::npos ? std::string_view() : raw.substr(nl + 1);
    }
    auto full = [&] { return out.size() >= max_bytes; };
    auto put = [&](std::string_view s) { out.append(s.substr(0, max_bytes - out.size())); };
    std::size_t at = 0;
    bool keep = false;     // the field being read is in the view
    bool field = false;    // a field has been started
    while (at < raw.size() && !full()) {
        std::size_t next = 0;
        const std::string_view line = line_at(raw, at, next);
        if (line.empty()) {  // the end of the header block
            at = next;
            break;
        }
        if ((line.front() == ' ' || line.front() == '\t') && field) {
            if (keep) put(line);  // folding undone: the line break goes, its white space stays
            at = next;
            continue;
        }
        if (field && keep) put("\n");
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) {
            // Not a field (broken mail, or the body began without a blank line): body from here.
            field = false;
            break;
        }
        std::string_view name = line.substr(0, colon);
        while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
        field = true;
        keep = !left_out_of_view(name);
        if (keep) {
            put(name);
            put(":");
            put(value);
        }
        at = next;
    }
    if (field && keep) put("\n");
    if (full()) return;
    if (at > 0) put("\n");  // the end of a header block (none: all of it is body)
    // The body, CRLF as LF.
    while (at < raw.size() && !full()) {
        std::size_t next = 0;
        const std::string_view line = line_at(raw, at, next);
        put(line);
        if (next > at + line.size() && raw[next - 1] == '\n') put("\n");
        at = next;
    }
}

}  // namespace mailsift::features
