// Raw RFC 822 / MIME bytes to ParsedMessage (mime::parse, ParsedMessage::find).
//
// Contract: parse() never throws for bad input (std::bad_alloc aside), never looks
// past Limits::max_message_bytes, and returns whatever it read before a limit or a
// break in the structure stopped it. Work is linear in the scanned bytes times at
// most max_depth, and no recursion is used, so hostile nesting cannot exhaust the
// stack.
//
// What mimetic does and does not do here: its ContentType, ContentTransferEncoding
// and ContentDisposition classes parse the Content-* field values, and its base64
// decoder decodes bodies (codec.cpp). Locating headers and splitting multiparts is
// done here, because mimetic's MimeEntity loader is not fit for hostile mail:
//  - it stops the header at an mbox "From " line, so every stored message loses all
//    of its headers;
//  - it drops the last header field when the header section is not terminated;
//  - it grows each field's buffer 128 bytes at a time with a full copy (quadratic);
//  - its random-access splitter finds boundaries in mid-line, and when an inner
//    multipart lacks its closing delimiter the later siblings of the outer one are
//    folded into the inner part (random-access loader) or lost altogether (stream
//    loader; the FIXME in itparser.h);
//  - it recurses once per nesting level with no bound, and builds every entity
//    before anyone could enforce max_parts;
//  - it re-serializes the Content-Type field once it has parsed it, so the header
//    value read back is no longer the one received.
#include "detail.hpp"

#include <mailsift/mime/message.hpp>

#include <mimetic/contentdisposition.h>
#include <mimetic/contenttransferencoding.h>
#include <mimetic/contenttype.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <new>
#include <utility>

namespace mailsift::mime {
namespace {

using detail::iequals;
using detail::is_blank;
using detail::trim;
constexpr std::size_t npos = std::string_view::npos;

// End of the line starting at pos: the index of its '\n', or s.size().
std::size_t line_end(std::string_view s, std::size_t pos) noexcept {
    const void* nl = std::memchr(s.data() + pos, '\n', s.size() - pos);
    return nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - s.data()) : s.size();
}

std::size_t next_line(std::string_view s, std::size_t eol) noexcept {
    return eol < s.size() ? eol + 1 : s.size();
}

// `needle` is "\n--boundary": returns the start of the first line after `from`
// that begins with the delimiter, or npos.
std::size_t find_line_start(std::string_view s, std::string_view needle, std::size_t from) noexcept {
    if (from >= s.size()) return npos;
    const void* hit = memmem(s.data() + from, s.size() - from, needle.data(), needle.size());
    return hit ? static_cast<std::size_t>(static_cast<const char*>(hit) - s.data()) + 1 : npos;
}

constexpr bool is_field_name_char(char c) noexcept {
    const auto u = static_cast<unsigned char>(c);
    return u > 32 && u < 127 && c != ':';
}

struct HeaderScan {
    std::size_t body = 0;     // offset of the body within the entity
    bool terminated = false;  // an empty line ended the header section
};

// Walks the header section of `entity`, calling on_field(name, raw_value) for each
// field; raw_value still contains its folding line breaks. A line that is neither a
// field nor a continuation starts the body (a missing blank line is common in spam).
template <class OnField>
HeaderScan scan_header(std::string_view entity, bool message_start, OnField&& on_field) {
    HeaderScan scan;
    std::size_t pos = 0;
    if (message_start && entity.starts_with("From ")) pos = next_line(entity, line_end(entity, 0));

    std::string_view name;
    std::size_t value_begin = 0;
    std::size_t value_end = 0;
    bool open = false;
    const auto emit = [&] {
        if (open) on_field(name, entity.substr(value_begin, value_end - value_begin));
        open = false;
    };

    while (pos < entity.size()) {
        const std::size_t eol = line_end(entity, pos);
        std::size_t content_end = eol;
        if (content_end > pos && entity[content_end - 1] == '\r') --content_end;
        if (content_end == pos) {
            emit();
            scan.body = next_line(entity, eol);
            scan.terminated = true;
            return scan;
        }
        if (is_blank(entity[pos])) {
            if (open) value_end = content_end;  // a stray leading continuation is dropped
        } else {
            std::size_t k = pos;
            while (k < content_end && is_field_name_char(entity[k])) ++k;
            const std::size_t name_end = k;
            while (k < content_end && is_blank(entity[k])) ++k;
            if (name_end == pos || k == content_end || entity[k] != ':') {
                emit();
                scan.body = pos;
                return scan;
            }
            emit();
            name = entity.substr(pos, name_end - pos);
            value_begin = k + 1;
            value_end = content_end;
            open = true;
        }
        pos = next_line(entity, eol);
    }
    emit();
    scan.body = entity.size();
    return scan;
}

// Removes the folding line breaks and trims, keeping at most `cap` bytes (cut on a
// UTF-8 boundary). Sets `truncated` when something was cut.
std::string unfold(std::string_view raw, std::size_t cap, bool& truncated) {
    raw = trim(raw);
    std::string out;
    out.reserve(std::min(raw.size(), cap));
    for (std::size_t i = 0; i < raw.size();) {
        std::size_t stop = i;  // (find_first_of calls memchr once per character)
        while (stop < raw.size() && raw[stop] != '\r' && raw[stop] != '\n') ++stop;
        const std::size_t room = cap - out.size();
        if (stop - i > room) {
            std::size_t cut = i + room;
            for (int back = 0; back < 3 && cut > i && (static_cast<unsigned char>(raw[cut]) & 0xC0) == 0x80; ++back)
                --cut;
            out.append(raw.substr(i, cut - i));
            truncated = true;
            break;
        }
        out.append(raw.substr(i, stop - i));
        i = stop == raw.size() ? stop : stop + 1;
    }
    return out;
}

std::string unquote(std::string_view v) {
    v = trim(v);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    while (!v.empty() && v.front() == '"') v.remove_prefix(1);  // mimetic keeps an unmatched quote
    return std::string(v);
}

// mimetic splits parameters at every ';', even inside quotes; hide those first.
constexpr char hidden_semicolon = '\x1f';

std::string hide_quoted_semicolons(std::string_view v) {
    std::string out(v);
    bool quoted = false;
    for (char& c : out) {
        if (c == '"') quoted = !quoted;
        else if (c == ';' && quoted) c = hidden_semicolon;
    }
    return out;
}

struct Param {
    std::string name;  // lower-case
    std::string value;
};

template <class MimeticField>
std::vector<Param> params_of(const MimeticField& field) {
    std::vector<Param> out;
    for (const auto& p : field.paramList()) {
        std::string value = unquote(p.value());
        std::replace(value.begin(), value.end(), hidden_semicolon, ';');
        out.push_back({detail::to_lower(trim(p.name())), std::move(value)});
    }
    return out;
}

const std::string* find_param(const std::vector<Param>& params, std::string_view name) {
    for (const Param& p : params)
        if (p.name == name) return &p.value;
    return nullptr;
}

// Appends the bytes of an RFC 2231 percent-encoded value.
void percent_decode(std::string_view v, std::string& bytes) {
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '%' && i + 2 < v.size() && detail::hex_value(v[i + 1]) >= 0 &&
            detail::hex_value(v[i + 2]) >= 0) {
            bytes.push_back(static_cast<char>(detail::hex_value(v[i + 1]) * 16 + detail::hex_value(v[i + 2])));
            i += 2;
        } else {
            bytes.push_back(v[i]);
        }
    }
}

// Splits "charset'language'rest" into the charset and the rest.
std::string_view split_extended(std::string_view v, std::string_view& charset) noexcept {
    const std::size_t q1 = v.find('\'');
    const std::size_t q2 = q1 == npos ? npos : v.find('\'', q1 + 1);
    if (q2 == npos) return v;
    charset = v.substr(0, q1);
    return v.substr(q2 + 1);
}

// A filename-like parameter ("filename" or "name") in any of its RFC 2231 forms:
// name*=, name*0= / name*0*= continuations, or the plain name= (which mailers
// commonly fill with RFC 2047 encoded words). One pass over the parameters, since
// a hostile field can carry tens of thousands of them.
std::string file_param(const std::vector<Param>& params, std::string_view base) {
    struct Segment {
        unsigned index;
        bool extended;
        const std::string* value;
    };
    const std::string* plain = nullptr;
    const std::string* star = nullptr;
    std::vector<Segment> segments;
    for (const Param& p : params) {
        std::string_view n = p.name;
        if (!n.starts_with(base)) continue;
        n.remove_prefix(base.size());
        if (n.empty()) {
            if (!plain) plain = &p.value;
        } else if (n == "*") {
            if (!star) star = &p.value;
        } else if (n[0] == '*' && n.size() <= 5) {
            n.remove_prefix(1);
            const bool extended = n.back() == '*';
            if (extended) n.remove_suffix(1);
            unsigned index = 0;
            bool digits = !n.empty();
            for (const char c : n) {
                if (c < '0' || c > '9') digits = false;
                else index = index * 10 + static_cast<unsigned>(c - '0');
            }
            if (digits && index < 64) segments.push_back({index, extended, &p.value});
        }
    }
    if (star) {
        std::string_view charset;
        std::string bytes;
        percent_decode(split_extended(*star, charset), bytes);
        return to_utf8(bytes, charset);
    }
    if (!segments.empty()) {
        // Joined as bytes in index order: a character may span two segments, and
        // only segment 0 names the charset.
        std::stable_sort(segments.begin(), segments.end(),
                         [](const Segment& a, const Segment& b) { return a.index < b.index; });
        std::string bytes;
        std::string_view charset;
        bool any_extended = false;
        unsigned expected = 0;
        for (const Segment& seg : segments) {
            if (seg.index != expected) break;  // duplicates or a gap end the value
            ++expected;
            if (seg.extended) {
                any_extended = true;
                percent_decode(seg.index == 0 ? split_extended(*seg.value, charset) : std::string_view(*seg.value),
                               bytes);
            } else {
                bytes += *seg.value;
            }
        }
        if (!bytes.empty()) return any_extended ? to_utf8(bytes, charset) : decode_header_value(bytes);
    }
    if (plain) return decode_header_value(*plain);
    return {};
}

// Attachment::content_type: "type/subtype" when both are lower-case printable
// ASCII (no blanks, controls or bytes above 0x7E), else invalid_content_type, so
// that raw bytes of a hostile message never leave the module as a type.
std::string attachment_type(std::string_view type, std::string_view subtype) {
    const auto printable = [](std::string_view s) {
        return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) {
            const auto u = static_cast<unsigned char>(ch);
            return u > 0x20 && u < 0x7f && !(ch >= 'A' && ch <= 'Z');
        });
    };
    if (!printable(type) || !printable(subtype)) return std::string(invalid_content_type);
    std::string out;
    out.reserve(type.size() + 1 + subtype.size());
    out.append(type).push_back('/');
    out.append(subtype);
    return out;
}

// A top-level field as ParsedMessage::headers keeps it: unfolded (cut at
// max_header_bytes, `truncated` then set), encoded words decoded, edges trimmed.
Header top_header(std::string_view name, std::string_view raw, const Limits& limits, bool& truncated) {
    std::string decoded = decode_header_value(unfold(raw, limits.max_header_bytes, truncated));
    const std::string_view kept = trim(decoded);  // encoded words may carry edge blanks
    if (kept.size() != decoded.size()) decoded = std::string(kept);
    return {std::string(name), std::move(decoded)};
}

void add_limit(ParsedMessage& m, LimitHit hit) {
    if (std::find(m.limits_hit.begin(), m.limits_hit.end(), hit) == m.limits_hit.end())
        m.limits_hit.push_back(hit);
}

struct Content {
    std::string type = "text";      // lower-case
    std::string subtype = "plain";  // lower-case
    std::string charset;            // canonical, "" when undeclared
    std::string boundary;
    std::string encoding;           // lower-case transfer encoding, "" when none
    bool attachment = false;        // Content-Disposition: attachment
    bool inline_ = false;           // Content-Disposition: inline
    std::string filename;           // UTF-8, "" when none
};

struct Entity {
    std::string_view data;
    std::size_t depth = 0;          // containers above this entity
    bool message_start = false;     // a whole message (top level or message/rfc822)
    bool digest_child = false;      // default type message/rfc822
};

class Walker {
public:
    Walker(const Limits& limits, ParsedMessage& out) noexcept : limits_(limits), out_(out) {}

    void run(std::string_view raw) {
        out_.part_count = 1;
        stack_.push_back({raw, 0, true, false});
        bool top = true;
        while (!stack_.empty()) {
            const Entity e = stack_.back();
            stack_.pop_back();
            process(e, top);
            top = false;
        }
    }

    // A multipart's closing delimiter never came.
    bool unterminated() const { return unterminated_; }

private:
    void process(const Entity& e, bool top) {
        std::string_view ct_raw, cte_raw, cd_raw;
        bool have_ct = false, have_cte = false, have_cd = false;
        std::size_t fields = 0;
        const HeaderScan scan = scan_header(e.data, e.message_start, [&](std::string_view name, std::string_view raw) {
            if (++fields > limits_.max_headers) {
                add_limit(out_, LimitHit::headers);
                return;
            }
            if (top) {
                bool truncated = false;
                out_.headers.push_back(top_header(name, raw, limits_, truncated));
                if (truncated) add_limit(out_, LimitHit::header_bytes);
            }
            if (!have_ct && iequals(name, "content-type")) {
                ct_raw = raw;
                have_ct = true;
            } else if (!have_cte && iequals(name, "content-transfer-encoding")) {
                cte_raw = raw;
                have_cte = true;
            } else if (!have_cd && iequals(name, "content-disposition")) {
                cd_raw = raw;
                have_cd = true;
            }
        });
        if (!scan.terminated) out_.malformed = true;

        Content c;
        if (!have_ct && e.digest_child) {
            c.type = "message";
            c.subtype = "rfc822";
        }
        try {
            describe(c, have_ct ? content_field(ct_raw) : std::string(),
                     have_cte ? content_field(cte_raw) : std::string(),
                     have_cd ? content_field(cd_raw) : std::string());
        } catch (const std::bad_alloc&) {
            throw;
        } catch (...) {
            // Whatever mimetic choked on, the part is still worth reading as text.
            out_.malformed = true;
            c = Content{};
        }

        const std::string_view body = e.data.substr(scan.body);
        if (c.type == "multipart") {
            if (!split(e, c, body)) leaf(c, body, /*as_text=*/true);
        } else if (c.type == "message" && c.subtype == "rfc822") {
            message(e, c, body);
        } else {
            leaf(c, body, false);
        }
    }

    std::string content_field(std::string_view raw) {
        bool truncated = false;
        std::string v = unfold(raw, limits_.max_header_bytes, truncated);
        if (truncated) add_limit(out_, LimitHit::header_bytes);
        return v;
    }

    // Fills `c` from the Content-* field values using mimetic's field parsers.
    static void describe(Content& c, const std::string& ct, const std::string& cte, const std::string& cd) {
        std::vector<Param> params;
        if (!ct.empty()) {
            const mimetic::ContentType type(hide_quoted_semicolons(ct));
            std::string t = detail::to_lower(trim(type.type()));
            std::string s = detail::to_lower(trim(type.subtype()));
            // RFC 2045 5.2: an unusable Content-Type means text/plain.
            if (!t.empty() && !s.empty()) {
                c.type = std::move(t);
                c.subtype = std::move(s);
            } else {
                c.type = "text";
                c.subtype = "plain";
            }
            params = params_of(type);
            if (const std::string* v = find_param(params, "charset")) c.charset = detail::canonical_charset(*v);
            if (const std::string* v = find_param(params, "boundary")) c.boundary = *v;
        }
        if (!cte.empty()) {
            const mimetic::ContentTransferEncoding enc(cte);
            c.encoding = detail::to_lower(trim(enc.mechanism()));
        }
        if (!cd.empty()) {
            const mimetic::ContentDisposition disp(hide_quoted_semicolons(cd));
            c.attachment = iequals(trim(disp.type()), "attachment");
            c.inline_ = iequals(trim(disp.type()), "inline");
            const std::vector<Param> dparams = params_of(disp);
            c.filename = file_param(dparams, "filename");
        }
        if (c.filename.empty()) c.filename = file_param(params, "name");
    }

    // Splits a multipart body and queues its parts; false when no delimiter exists,
    // in which case the caller reads the body as plain text.
    bool split(const Entity& e, const Content& c, std::string_view body) {
        if (c.boundary.empty()) {
            out_.malformed = true;
            return false;
        }
        if (e.depth + 1 > limits_.max_depth) {
            add_limit(out_, LimitHit::depth);
            return true;
        }
        // Delimiters are found with memmem (glibc's is linear in the worst case, and
        // a hostile boundary may be 64 KB of one repeated character).
        const std::string needle = "\n--" + c.boundary;
        const std::string_view delimiter = std::string_view(needle).substr(1);
        std::vector<std::string_view> parts;
        bool found = false;
        bool closed = false;
        bool budget = true;
        std::size_t part_begin = npos;
        std::size_t line = body.starts_with(delimiter) ? 0 : find_line_start(body, needle, 0);
        while (line != npos && !closed && budget) {
            const std::size_t eol = line_end(body, line);
            std::size_t k = line + delimiter.size();
            bool close = false;
            if (k + 2 <= eol && body[k] == '-' && body[k + 1] == '-') {
                close = true;
                k += 2;
            }
            while (k < eol && (is_blank(body[k]) || body[k] == '\r')) ++k;
            if (k != eol) {  // "--boundaryX": a longer boundary or text, not ours
                line = find_line_start(body, needle, line);
                continue;
            }
            if (found) {
                // The line break before a delimiter belongs to the delimiter.
                std::size_t end = line;
                if (end > part_begin && body[end - 1] == '\n') --end;
                if (end > part_begin && body[end - 1] == '\r') --end;
                budget = add_part(parts, body.substr(part_begin, end - part_begin));
            }
            found = true;
            closed = close;
            part_begin = next_line(body, eol);
            line = find_line_start(body, needle, eol);
        }
        if (!found) {
            out_.malformed = true;
            return false;
        }
        if (!closed && budget) {
            out_.malformed = true;  // no closing delimiter: the last part runs to the end
            unterminated_ = true;
            add_part(parts, body.substr(part_begin));
        }
        const bool digest = c.subtype == "digest";
        for (auto it = parts.rbegin(); it != parts.rend(); ++it)
            stack_.push_back({*it, e.depth + 1, false, digest});
        return true;
    }

    bool add_part(std::vector<std::string_view>& parts, std::string_view part) {
        if (!take_part()) return false;
        parts.push_back(part);
        return true;
    }

    // Counts one more entity, or records the parts limit when none is left.
    bool take_part() {
        if (out_.part_count >= limits_.max_parts) {
            add_limit(out_, LimitHit::parts);
            return false;
        }
        ++out_.part_count;
        return true;
    }

    void message(const Entity& e, const Content& c, std::string_view body) {
        std::string_view inner = body;
        if (c.encoding == "base64" || c.encoding == "quoted-printable") {
            std::string& decoded = owned_.emplace_back();
            decode(c, body, decoded);
            inner = decoded;
        }
        if (c.attachment || !c.filename.empty())
            out_.attachments.push_back({c.filename, attachment_type(c.type, c.subtype), inner.size()});
        if (e.depth + 1 > limits_.max_depth) {
            add_limit(out_, LimitHit::depth);
            return;
        }
        if (take_part()) stack_.push_back({inner, e.depth + 1, true, false});
    }

    // Removes the transfer encoding into `out`.
    void decode(const Content& c, std::string_view body, std::string& out) {
        if (c.encoding == "base64") {
            if (!detail::decode_base64(body, out)) out_.malformed = true;
        } else if (c.encoding == "quoted-printable") {
            detail::decode_quoted_printable(body, out);
        } else {
            out.assign(body);
        }
    }

    void leaf(const Content& c, std::string_view body, bool as_text) {
        const bool is_text = as_text || c.type == "text";
        // A text part with a filename is an attachment unless it says it is inline.
        const bool named_attachment = c.attachment || (!c.filename.empty() && !c.inline_);
        if (!is_text || (!as_text && named_attachment)) {
            std::size_t size = body.size();
            if (c.encoding == "base64" || c.encoding == "quoted-printable") {
                scratch_.clear();
                decode(c, body, scratch_);
                size = scratch_.size();
            }
            out_.attachments.push_back({c.filename, attachment_type(c.type, c.subtype), size});
            return;
        }
        std::string_view bytes = body;
        if (c.encoding == "base64" || c.encoding == "quoted-printable") {
            scratch_.clear();
            decode(c, body, scratch_);
            bytes = scratch_;
        }
        std::string text = to_utf8(bytes, c.charset);
        if (!as_text && c.subtype == "html") {
            HtmlText html = reduce_html(text);
            out_.texts.push_back({TextKind::html, std::move(html.text), c.charset});
            out_.links.insert(out_.links.end(), std::make_move_iterator(html.links.begin()),
                              std::make_move_iterator(html.links.end()));
        } else {
            out_.texts.push_back({TextKind::plain, std::move(text), c.charset});
        }
    }

    const Limits& limits_;
    ParsedMessage& out_;
    std::vector<Entity> stack_;
    std::deque<std::string> owned_;  // decoded message/rfc822 bodies the stack points into
    std::string scratch_;            // reused decode buffer
    bool unterminated_ = false;
};

}  // namespace

const Header* ParsedMessage::find(std::string_view name) const {
    for (const Header& h : headers)
        if (iequals(h.name, name)) return &h;
    return nullptr;
}

namespace {

// Mail whose lines end in a bare CR (old Mac clients, some gateways) would
// otherwise be one header line: when there is no LF at all, CR ends a line.
// Returns `raw`, or its copy in `storage` with every CR made LF.
std::string_view with_line_feeds(std::string_view raw, std::string& storage) {
    if (std::memchr(raw.data(), '\n', raw.size()) != nullptr || std::memchr(raw.data(), '\r', raw.size()) == nullptr) {
        return raw;
    }
    storage.assign(raw);
    std::replace(storage.begin(), storage.end(), '\r', '\n');
    return storage;
}

}  // namespace

bool has_header_field(std::string_view raw) {
    std::string cr_lines;
    raw = with_line_feeds(raw, cr_lines);
    bool found = false;
    // Not message_start: a leading "From " line is no mbox separator here (the
    // CLI removes those before), it has to be a field like any other line.
    scan_header(raw, /*message_start=*/false, [&](std::string_view, std::string_view) { found = true; });
    return found;
}

std::vector<Header> parse_header(std::string_view raw, const Limits& limits) {
    std::string cr_lines;
    raw = with_line_feeds(raw, cr_lines);
    std::vector<Header> headers;
    scan_header(raw, /*message_start=*/true, [&](std::string_view name, std::string_view value) {
        bool truncated = false;
        if (headers.size() < limits.max_headers) headers.push_back(top_header(name, value, limits, truncated));
    });
    return headers;
}

ParsedMessage parse(std::string_view raw, const Limits& limits) {
    ParsedMessage out;
    if (raw.size() > limits.max_message_bytes) {
        raw = raw.substr(0, limits.max_message_bytes);
        add_limit(out, LimitHit::message_bytes);
    }
    std::string cr_lines;
    raw = with_line_feeds(raw, cr_lines);
    Walker walker(limits, out);
    walker.run(raw);
    // Many senders omit the closing delimiter of a complete message; input cut off
    // in transfer also ends mid-line. Only both together count as truncated, and
    // not when we cut the input ourselves.
    const bool cut_by_limit = !out.limits_hit.empty() && out.limits_hit.front() == LimitHit::message_bytes;
    out.truncated = walker.unterminated() && !cut_by_limit && !raw.empty() && raw.back() != '\n';
    return out;
}

}  // namespace mailsift::mime
