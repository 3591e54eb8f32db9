// fuzz_milter.cpp's reference reading of the MTA -> filter wire format: the frame
// and command layouts of protocol.hpp read without the Decoder (reference_command,
// reference_decode: what the decoder must report for a whole stream, and where each
// event is decided), the canonical text of a command (dump) to compare the two, and
// the field reader (Fields) that the reply checks reuse.
//
// Part of the fuzz_milter harness only, not a library: fuzz_milter.cpp is its one
// translation unit (see the map in its top comment).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "mailsift/milter/protocol.hpp"

namespace fuzz_milter {

namespace milter = mailsift::milter;

// ---- reference reading of the MTA -> filter wire format ----

inline std::uint32_t load_u32(std::string_view s) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[i]);
    return v;
}

inline std::string cut_at_nul(std::string_view s) { return std::string(s.substr(0, s.find('\0'))); }

inline bool known_letter(char c) {
    return std::string_view("ABCDEHKLMNOQRTU").find(c) != std::string_view::npos;
}

// Canonical text of a command, to compare the decoder with the reference.
struct Dump {
    std::string out;
    void str(std::string_view s) {
        out += '|';
        out += std::to_string(s.size());
        out += ':';
        out.append(s);
    }
    void num(std::uint64_t v) {
        out += '|';
        out += std::to_string(v);
    }
};

inline std::string dump(const milter::Command& command) {
    Dump d;
    std::visit(
        [&d](const auto& c) {
            using T = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<T, milter::Negotiate>) {
                d.out = "O";
                d.num(c.version);
                d.num(c.actions);
                d.num(c.steps);
            } else if constexpr (std::is_same_v<T, milter::Macros>) {
                d.out = "D";
                d.str(std::string_view(&c.stage, 1));
                for (const auto& [name, value] : c.values) {
                    d.str(name);
                    d.str(value);
                }
            } else if constexpr (std::is_same_v<T, milter::Connect>) {
                d.out = "C";
                d.str(c.hostname);
                d.str(std::string_view(&c.family, 1));
                d.num(c.port);
                d.str(c.address);
            } else if constexpr (std::is_same_v<T, milter::Helo>) {
                d.out = "H";
                d.str(c.name);
            } else if constexpr (std::is_same_v<T, milter::Mail>) {
                d.out = "M";
                for (const auto& a : c.args) d.str(a);
            } else if constexpr (std::is_same_v<T, milter::Rcpt>) {
                d.out = "R";
                for (const auto& a : c.args) d.str(a);
            } else if constexpr (std::is_same_v<T, milter::Data>) {
                d.out = "T";
            } else if constexpr (std::is_same_v<T, milter::Unknown>) {
                d.out = "U";
                d.str(c.command);
            } else if constexpr (std::is_same_v<T, milter::Header>) {
                d.out = "L";
                d.str(c.name);
                d.str(c.value);
            } else if constexpr (std::is_same_v<T, milter::EndOfHeaders>) {
                d.out = "N";
            } else if constexpr (std::is_same_v<T, milter::Body>) {
                d.out = "B";
                d.str(c.chunk);
            } else if constexpr (std::is_same_v<T, milter::EndOfBody>) {
                d.out = "E";
                d.str(c.chunk);
            } else if constexpr (std::is_same_v<T, milter::Abort>) {
                d.out = "A";
            } else if constexpr (std::is_same_v<T, milter::Quit>) {
                d.out = "Q";
            } else if constexpr (std::is_same_v<T, milter::QuitNewConnection>) {
                d.out = "K";
            }
        },
        command);
    return d.out;
}

// Reads fields of one frame's data the way the protocol lays them out.
class Fields {
public:
    explicit Fields(std::string_view data) : data_(data) {}
    bool done() const { return data_.empty(); }
    bool byte(char& c) {
        if (data_.empty()) return false;
        c = data_.front();
        data_.remove_prefix(1);
        return true;
    }
    bool u16(std::uint16_t& v) {
        if (data_.size() < 2) return false;
        v = static_cast<std::uint16_t>(static_cast<unsigned char>(data_[0]) * 256u + static_cast<unsigned char>(data_[1]));
        data_.remove_prefix(2);
        return true;
    }
    bool u32(std::uint32_t& v) {
        if (data_.size() < 4) return false;
        v = load_u32(data_);
        data_.remove_prefix(4);
        return true;
    }
    bool cstr(std::string& s) {
        const std::size_t nul = data_.find('\0');
        if (nul == std::string_view::npos) return false;
        s.assign(data_.substr(0, nul));
        data_.remove_prefix(nul + 1);
        return true;
    }
    std::string_view rest() const { return data_; }

private:
    std::string_view data_;
};

// The command a complete frame holds by the documented layouts, or nothing
// when the layout is broken (DecodeError::malformed).
inline std::optional<milter::Command> reference_command(char letter, std::string_view data) {
    Fields f(data);
    switch (letter) {
        case 'O': {
            milter::Negotiate n;
            if (!f.u32(n.version) || !f.u32(n.actions) || !f.u32(n.steps)) return std::nullopt;
            return n;  // bytes after the three numbers are ignored
        }
        case 'D': {
            milter::Macros m;
            if (!f.byte(m.stage)) return std::nullopt;
            while (!f.done()) {
                std::string name, value;
                if (!f.cstr(name) || !f.cstr(value)) return std::nullopt;
                m.values.emplace_back(std::move(name), std::move(value));
            }
            return m;
        }
        case 'C': {
            milter::Connect c;
            if (!f.cstr(c.hostname) || !f.byte(c.family)) return std::nullopt;
            if (c.family == 'U') {
                if (!f.done()) return std::nullopt;
                return c;
            }
            if (c.family != '4' && c.family != '6' && c.family != 'L') return std::nullopt;
            if (!f.u16(c.port) || !f.cstr(c.address) || !f.done()) return std::nullopt;
            return c;
        }
        case 'H': {
            milter::Helo h;
            if (!f.cstr(h.name) || !f.done()) return std::nullopt;
            return h;
        }
        case 'M':
        case 'R': {
            std::vector<std::string> args;
            do {
                std::string a;
                if (!f.cstr(a)) return std::nullopt;
                args.push_back(std::move(a));
            } while (!f.done());
            if (letter == 'M') return milter::Mail{std::move(args)};
            return milter::Rcpt{std::move(args)};
        }
        case 'U': {
            milter::Unknown u;
            if (!f.cstr(u.command) || !f.done()) return std::nullopt;
            return u;
        }
        case 'L': {
            milter::Header h;
            if (!f.cstr(h.name) || !f.cstr(h.value) || !f.done()) return std::nullopt;
            return h;
        }
        case 'B': return milter::Body{std::string(data)};
        case 'E': return milter::EndOfBody{std::string(data)};
        case 'T': return milter::Data{};
        case 'N': return milter::EndOfHeaders{};
        case 'A': return milter::Abort{};
        case 'Q': return milter::Quit{};
        case 'K': return milter::QuitNewConnection{};
        default: return std::nullopt;
    }
}

// What the decoder must report, in order, for a whole stream.
struct Expected {
    struct Event {
        bool command = false;             // else the final error
        std::string dump;                 // command
        milter::DecodeError error{};      // error
        std::size_t decided_at = 0;       // stream offset after which the event is known
    };
    std::vector<Event> events;            // commands, then at most one error
    std::size_t tail = 0;                 // bytes of an incomplete frame when no error
};

inline Expected reference_decode(std::string_view s, std::size_t cap) {
    Expected e;
    std::size_t pos = 0;
    auto error = [&](milter::DecodeError err, std::size_t at) {
        e.events.push_back({false, {}, err, at});
        e.tail = 0;
    };
    for (;;) {
        const std::size_t left = s.size() - pos;
        if (left < 4) {
            e.tail = left;
            return e;
        }
        const std::uint32_t length = load_u32(s.substr(pos));
        if (length > cap) {
            error(milter::DecodeError::frame_too_large, pos + 4);
            return e;
        }
        if (length == 0) {
            error(milter::DecodeError::empty_frame, pos + 4);
            return e;
        }
        if (left == 4) {
            e.tail = left;
            return e;
        }
        const char letter = s[pos + 4];
        if (!known_letter(letter)) {
            error(milter::DecodeError::unknown_command, pos + 5);
            return e;
        }
        if (left - 4 < length) {
            e.tail = left;
            return e;
        }
        const std::size_t end = pos + 4 + length;
        const auto command = reference_command(letter, s.substr(pos + 5, length - 1));
        if (!command) {
            error(milter::DecodeError::malformed, end);
            return e;
        }
        e.events.push_back({true, dump(*command), {}, end});
        pos = end;
    }
}

}  // namespace fuzz_milter
