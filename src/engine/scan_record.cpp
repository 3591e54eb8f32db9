// How a scan is recorded: feature, view and user lines (scan_record.hpp).
#include "mailsift/engine/scan_record.hpp"

#include <algorithm>

namespace mailsift::engine {

std::string feature_lines(const features::FeatureBag& bag) {
    std::string out;
    out.reserve(bag.size() * 16);
    for (const auto& e : bag.entries()) {
        out.append(bag.text(e));
        out.push_back('\t');
        out.append(std::to_string(e.count));
        out.push_back('\n');
    }
    return out;
}

namespace {
constexpr std::string_view view_key = "!view:";

// The value of the `key` line ("!view:", "!user:") of recorded feature lines,
// without its "<TAB>1"; nothing when the lines hold none.
std::optional<std::string_view> recorded_value(std::string_view lines, std::string_view key) {
    std::size_t at = 0;
    if (!lines.starts_with(key)) {
        at = lines.find(std::string("\n").append(key));
        if (at == std::string_view::npos) return std::nullopt;
        ++at;
    }
    std::string_view line = lines.substr(at + key.size());
    line = line.substr(0, line.find('\n'));
    if (const std::size_t tab = line.rfind('\t'); tab != std::string_view::npos) line = line.substr(0, tab);
    return line;
}

// Bytes the view line cannot carry raw: the separators of feature lines, the
// escape itself, and every other control byte, so that `mailsift tokens
// --signature` prints nothing a terminal would act on.
constexpr bool needs_escape(unsigned char c) { return c < 0x20 || c == 0x7f || c == '\\'; }
constexpr int hex_value(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}
}  // namespace

void append_view_line(std::string_view view, std::string& lines) {
    lines.reserve(lines.size() + view_key.size() + view.size() + view.size() / 16 + 3);
    lines.append(view_key);
    // Runs of plain bytes appended whole: this runs for every message the milter scores.
    std::size_t run = 0;
    for (std::size_t at = 0; at < view.size(); ++at) {
        const auto ch = static_cast<unsigned char>(view[at]);
        if (!needs_escape(ch)) continue;
        lines.append(view.substr(run, at - run));
        run = at + 1;
        lines.push_back('\\');
        if (ch == '\n') {
            lines.push_back('n');
        } else if (ch == '\t') {
            lines.push_back('t');
        } else if (ch == '\\') {
            lines.push_back('\\');
        } else {
            constexpr std::string_view digits = "0123456789abcdef";
            lines.push_back('x');
            lines.push_back(digits[ch >> 4]);
            lines.push_back(digits[ch & 0xf]);
        }
    }
    lines.append(view.substr(run));
    lines.append("\t1\n");
}

std::optional<std::string> recorded_view(std::string_view lines) {
    const auto value = recorded_value(lines, view_key);
    if (!value) return std::nullopt;
    const std::string_view line = *value;
    std::string view;
    view.reserve(line.size());
    for (std::size_t i = 0; i < line.size(); ++i) {
        if (line[i] != '\\' || i + 1 == line.size()) {
            view.push_back(line[i]);
            continue;
        }
        const char e = line[++i];
        if (e == 'x' && i + 2 < line.size() && hex_value(line[i + 1]) >= 0 && hex_value(line[i + 2]) >= 0) {
            view.push_back(static_cast<char>(hex_value(line[i + 1]) * 16 + hex_value(line[i + 2])));
            i += 2;
            continue;
        }
        view.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
    }
    return view;
}

namespace {
constexpr std::string_view user_key = "!user:";
}  // namespace

bool valid_user(std::string_view user) {
    if (user.empty() || user.size() > 255) return false;
    for (const char ch : user) {
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) return false;
    }
    return true;
}

void append_user_line(std::string_view user, std::string& lines) {
    if (!valid_user(user)) return;
    if (!lines.empty() && lines.back() != '\n') lines.push_back('\n');
    lines.append(user_key).append(user).append("\t1\n");
}

std::optional<std::string> recorded_user(std::string_view lines) {
    const auto user = recorded_value(lines, user_key);
    if (!user || !valid_user(*user)) return std::nullopt;
    return std::string(*user);
}

std::vector<std::pair<std::string, std::uint32_t>> parse_feature_lines(std::string_view lines) {
    std::vector<std::pair<std::string, std::uint32_t>> out;
    while (!lines.empty()) {
        const std::size_t nl = lines.find('\n');
        const std::string_view line = lines.substr(0, nl);
        lines.remove_prefix(nl == std::string_view::npos ? lines.size() : nl + 1);
        if (line.starts_with('!')) continue;  // the view, the user: no feature starts with '!'
        const std::size_t tab = line.rfind('\t');
        if (tab == std::string_view::npos || tab == 0) continue;
        std::uint32_t n = 0;
        for (char c : line.substr(tab + 1)) {
            if (c < '0' || c > '9') {
                n = 0;
                break;
            }
            n = n * 10 + static_cast<std::uint32_t>(c - '0');
        }
        if (n > 0) out.emplace_back(std::string(line.substr(0, tab)), n);
    }
    return out;
}

}  // namespace mailsift::engine
