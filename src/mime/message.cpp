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
#include "header.hpp"

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

using namespace detail;  // the module's private helpers: detail.hpp, header.hpp

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
