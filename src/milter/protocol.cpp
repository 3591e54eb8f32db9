// The milter codec. Contract:
//  - Decoder: frames are [uint32 BE length][letter][data]. The length is judged
//    as soon as its 4 bytes are buffered (before the frame is waited for or
//    stored), and the letter as soon as it arrives. Any error is final: the
//    buffer is freed and further input dropped.
//  - Data layouts are strict where they carry strings: a missing NUL, a missing
//    field, an unknown address family, a macro name without a value, or bytes
//    after the last field make the frame malformed. Commands without data
//    (T N A Q K) ignore any data, and O ignores bytes after its three numbers,
//    as libmilter does.
//  - encode: one frame per reply; strings go out up to their first NUL so a
//    reply can never corrupt the framing.
//  - format_smtp_reply: see protocol.hpp; the rules are listed at each check.
#include "mailsift/milter/protocol.hpp"

#include <algorithm>
#include <array>

namespace mailsift::milter {

namespace {

constexpr std::size_t length_bytes = 4;
// What an emptied decoder keeps of its buffer: a few ordinary frames (the
// connection's commands and headers); a body chunk's buffer is given back, so
// that a connection waiting for its verdict, or idle, holds little.
constexpr std::size_t retained_buffer_bytes = 4 * 1024;

std::uint32_t load_u32(std::string_view bytes) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
    return v;
}

void put_u32(std::string& out, std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void put_string(std::string& out, std::string_view s) {
    out.append(s.substr(0, s.find('\0')));
    out.push_back('\0');
}

// ---- decoding ----

// Reads a command's data field by field; each read fails cleanly at the end.
class Reader {
public:
    explicit Reader(std::string_view data) : data_(data) {}
    bool done() const { return data_.empty(); }

    bool byte(char& out) {
        if (data_.empty()) return false;
        out = data_.front();
        data_.remove_prefix(1);
        return true;
    }
    bool u16(std::uint16_t& out) {
        if (data_.size() < 2) return false;
        out = static_cast<std::uint16_t>((static_cast<unsigned char>(data_[0]) << 8) |
                                         static_cast<unsigned char>(data_[1]));
        data_.remove_prefix(2);
        return true;
    }
    bool u32(std::uint32_t& out) {
        if (data_.size() < 4) return false;
        out = load_u32(data_);
        data_.remove_prefix(4);
        return true;
    }
    // A NUL-terminated string; fails when the NUL is missing.
    bool string(std::string& out) {
        const auto nul = data_.find('\0');
        if (nul == std::string_view::npos) return false;
        out.assign(data_.substr(0, nul));
        data_.remove_prefix(nul + 1);
        return true;
    }
    std::string rest() {
        std::string out(data_);
        data_ = {};
        return out;
    }

private:
    std::string_view data_;
};

using Parsed = std::optional<Command>;

Parsed parse_negotiate(Reader r) {
    Negotiate n;
    // Three numbers are required; later bytes are ignored, as libmilter does.
    if (!r.u32(n.version) || !r.u32(n.actions) || !r.u32(n.steps)) return std::nullopt;
    return n;
}

Parsed parse_macros(Reader r) {
    Macros m;
    // The stage letter is required.
    if (!r.byte(m.stage)) return std::nullopt;
    // Then whole name/value pairs only: a name without its value is malformed.
    while (!r.done()) {
        auto& [name, value] = m.values.emplace_back();
        if (!r.string(name) || !r.string(value)) return std::nullopt;
    }
    return m;
}

Parsed parse_connect(Reader r) {
    Connect c;
    if (!r.string(c.hostname) || !r.byte(c.family)) return std::nullopt;
    // An unknown family carries nothing more (Postfix and Sendmail send no port or address).
    if (c.family == 'U') return r.done() ? Parsed{c} : std::nullopt;
    // Only inet, inet6 and unix ('L': port 0, then the socket path) are known.
    if (c.family != '4' && c.family != '6' && c.family != 'L') return std::nullopt;
    if (!r.u16(c.port) || !r.string(c.address) || !r.done()) return std::nullopt;
    return c;
}

Parsed parse_helo(Reader r) {
    Helo h;
    if (!r.string(h.name) || !r.done()) return std::nullopt;
    return h;
}

// One or more NUL-terminated arguments and nothing else.
bool read_args(Reader& r, std::vector<std::string>& args) {
    do {
        if (!r.string(args.emplace_back())) return false;
    } while (!r.done());
    return true;
}

Parsed parse_mail(Reader r) {
    Mail m;
    if (!read_args(r, m.args)) return std::nullopt;
    return m;
}

Parsed parse_rcpt(Reader r) {
    Rcpt m;
    if (!read_args(r, m.args)) return std::nullopt;
    return m;
}

Parsed parse_unknown(Reader r) {
    Unknown u;
    if (!r.string(u.command) || !r.done()) return std::nullopt;
    return u;
}

Parsed parse_header(Reader r) {
    Header h;
    if (!r.string(h.name) || !r.string(h.value) || !r.done()) return std::nullopt;
    return h;
}

Parsed parse_body(Reader r) { return Body{r.rest()}; }
Parsed parse_end_of_body(Reader r) { return EndOfBody{r.rest()}; }

// Commands without data: any data is ignored.
template <class T>
Parsed parse_empty(Reader) {
    return T{};
}

struct Parser {
    CommandLetter letter;
    Parsed (*parse)(Reader);
};

constexpr std::array parsers{
    Parser{CommandLetter::abort, parse_empty<Abort>},
    Parser{CommandLetter::body, parse_body},
    Parser{CommandLetter::connect, parse_connect},
    Parser{CommandLetter::macros, parse_macros},
    Parser{CommandLetter::end_of_body, parse_end_of_body},
    Parser{CommandLetter::helo, parse_helo},
    Parser{CommandLetter::quit_new_connection, parse_empty<QuitNewConnection>},
    Parser{CommandLetter::header, parse_header},
    Parser{CommandLetter::mail, parse_mail},
    Parser{CommandLetter::end_of_headers, parse_empty<EndOfHeaders>},
    Parser{CommandLetter::negotiate, parse_negotiate},
    Parser{CommandLetter::quit, parse_empty<Quit>},
    Parser{CommandLetter::rcpt, parse_rcpt},
    Parser{CommandLetter::data, parse_empty<Data>},
    Parser{CommandLetter::unknown, parse_unknown},
};

const Parser* find_parser(char letter) {
    const auto it = std::find_if(parsers.begin(), parsers.end(),
                                 [letter](const Parser& p) { return static_cast<char>(p.letter) == letter; });
    return it == parsers.end() ? nullptr : &*it;
}

// ---- encoding ----

struct Encoder {
    std::string& out;

    void frame(ReplyLetter letter, std::string_view data = {}) {
        put_u32(out, static_cast<std::uint32_t>(data.size() + 1));
        out.push_back(static_cast<char>(letter));
        out.append(data);
    }
    void strings(ReplyLetter letter, std::string data, std::string_view a, std::string_view b) {
        put_string(data, a);
        put_string(data, b);
        frame(letter, data);
    }

    void operator()(const NegotiateReply& r) {
        std::string data;
        put_u32(data, r.version);
        put_u32(data, r.actions);
        put_u32(data, r.steps);
        frame(ReplyLetter::negotiate, data);
    }
    void operator()(const Continue&) { frame(ReplyLetter::continue_); }
    void operator()(const Accept&) { frame(ReplyLetter::accept); }
    void operator()(const Reject&) { frame(ReplyLetter::reject); }
    void operator()(const Tempfail&) { frame(ReplyLetter::tempfail); }
    void operator()(const Discard&) { frame(ReplyLetter::discard); }
    void operator()(const Progress&) { frame(ReplyLetter::progress); }
    void operator()(const ReplyCode& r) {
        std::string data;
        put_string(data, r.text);
        frame(ReplyLetter::reply_code, data);
    }
    void operator()(const AddHeader& r) { strings(ReplyLetter::add_header, {}, r.name, r.value); }
    void operator()(const InsertHeader& r) {
        std::string data;
        put_u32(data, r.index);
        strings(ReplyLetter::insert_header, std::move(data), r.name, r.value);
    }
    void operator()(const ChangeHeader& r) {
        std::string data;
        put_u32(data, r.index);
        strings(ReplyLetter::change_header, std::move(data), r.name, r.value);
    }
    void operator()(const Quarantine& r) {
        std::string data;
        put_string(data, r.reason);
        frame(ReplyLetter::quarantine, data);
    }
};

// ---- SMTP replies ----

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Skips 1 to 3 digits; false when there are none.
bool skip_digits(std::string_view& s) {
    std::size_t n = 0;
    while (n < s.size() && n < 3 && is_digit(s[n])) ++n;
    s.remove_prefix(n);
    return n > 0;
}

bool valid_enhanced(std::string_view s, char class_digit) {
    // "x.y.z": x is the reply code's class, y and z have 1 to 3 digits.
    if (s.size() < 2 || s[0] != class_digit || s[1] != '.') return false;
    s.remove_prefix(2);
    if (!skip_digits(s) || s.empty() || s.front() != '.') return false;
    s.remove_prefix(1);
    return skip_digits(s) && s.empty();
}

}  // namespace

const char* describe(DecodeError e) {
    switch (e) {
        case DecodeError::none: return "no error";
        case DecodeError::frame_too_large: return "frame exceeds the size limit";
        case DecodeError::empty_frame: return "frame of length 0";
        case DecodeError::unknown_command: return "unknown command letter";
        case DecodeError::malformed: return "command data does not fit its layout";
    }
    return "unknown decode error";
}

void Decoder::feed(std::string_view bytes) {
    // A failed decoder keeps nothing: the connection is being closed.
    if (error_ != DecodeError::none) return;
    buffer_.erase(0, consumed_);
    consumed_ = 0;
    buffer_.append(bytes);
}

void Decoder::release_if_empty() {
    if (consumed_ == buffer_.size()) {
        std::string().swap(buffer_);
        consumed_ = 0;
    }
}

Decoder::Status Decoder::next(Command& out) {
    const auto fail = [this](DecodeError e) {
        error_ = e;
        std::string().swap(buffer_);
        consumed_ = 0;
        return Status::error;
    };
    if (error_ != DecodeError::none) return Status::error;

    const std::string_view pending = std::string_view(buffer_).substr(consumed_);
    if (pending.size() < length_bytes) return Status::need_more;
    const std::uint32_t length = load_u32(pending);
    // The announced length is judged before the frame is waited for or stored.
    if (length > max_frame_bytes_) return fail(DecodeError::frame_too_large);
    // A frame holds at least its command letter.
    if (length == 0) return fail(DecodeError::empty_frame);
    if (pending.size() == length_bytes) return Status::need_more;
    // The letter is judged as soon as it arrives.
    const Parser* parser = find_parser(pending[length_bytes]);
    if (parser == nullptr) return fail(DecodeError::unknown_command);
    if (pending.size() - length_bytes < length) return Status::need_more;

    Parsed command = parser->parse(Reader(pending.substr(length_bytes + 1, length - 1)));
    if (!command) return fail(DecodeError::malformed);
    consumed_ += length_bytes + length;
    if (consumed_ == buffer_.size()) {
        // Emptied: a buffer grown by a large frame (body chunks are up to 64 KiB) is
        // given back, or every idle connection of a busy MTA would keep one.
        if (buffer_.capacity() > retained_buffer_bytes) {
            std::string().swap(buffer_);
        } else {
            buffer_.clear();
        }
        consumed_ = 0;
    }
    out = std::move(*command);
    return Status::command;
}

void encode(const Reply& reply, std::string& out) { std::visit(Encoder{out}, reply); }

std::optional<std::string> format_smtp_reply(std::string_view code, std::string_view enhanced, std::string_view text) {
    // The code is three digits and a 4xx or 5xx: a milter reply only refuses.
    if (code.size() != 3 || (code[0] != '4' && code[0] != '5') || !is_digit(code[1]) || !is_digit(code[2]))
        return std::nullopt;
    if (!valid_enhanced(enhanced, code[0])) return std::nullopt;
    // Text has no CR, NUL, TAB, DEL or other control bytes; only "\n" separates lines.
    const bool clean = std::none_of(text.begin(), text.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return c != '\n' && (u < 0x20 || u == 0x7f);
    });
    if (!clean) return std::nullopt;
    // A single trailing "\n" ends the last line rather than starting an empty one.
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);

    // "550-5.7.1 first\r\n550 5.7.1 last", as libmilter's smfi_setmlreply joins lines.
    std::string reply;
    for (;;) {
        const auto end = text.find('\n');
        const std::string_view line = text.substr(0, end);
        const bool last = end == std::string_view::npos;
        reply.append(code).push_back(last ? ' ' : '-');
        reply.append(enhanced);
        if (!line.empty()) reply.push_back(' ');
        for (char c : line) {
            // The MTA may use the text as a format string: '%' is doubled.
            if (c == '%') reply.push_back('%');
            reply.push_back(c);
        }
        if (last) break;
        reply.append("\r\n");
        text.remove_prefix(end + 1);
    }
    return reply;
}

}  // namespace mailsift::milter
